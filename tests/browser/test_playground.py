"""Step 22 live: a knob keeps one value across the page and in the URL, a shared link reopens the same numbers,
and the downloaded scenario reruns in the CLI to the numbers the page shows."""

import json
import subprocess
import sys
import urllib.parse

import pytest

from calc.widgets import framework
from calc.widgets.simulation import metrics

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/22-playground/"
REPLICA = '[data-widget="playground.replica"]'
SIM = '[data-widget="playground.simulation"]'
COST = '[data-widget="playground.speed_and_cost"]'
FILE = '[data-widget="playground.scenario_file"]'
WIDGETS = {"playground.replica": REPLICA, "playground.speed_and_cost": COST, "playground.scenario_file": FILE}
READY_TIMEOUT_MS = 90_000
RUN_TIMEOUT_MS = 90_000
METRICS = ("requests_completed", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "throughput_output_tokens_per_s",
           "running_max", "queue_depth_max", "kv_token_share", "cost_usd_per_million_output_tokens")


def open_page(visit, path=PAGE):
    page = visit.page
    page.goto(visit.url(path))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    return page


def text(page, widget, key):
    return page.locator(f'{widget} [data-output="{key}"]').inner_text()


def wait_text(page, widget, key, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want",
                           arg=[f'{widget} [data-output="{key}"]', want], timeout=RUN_TIMEOUT_MS)


def sim_view(args):
    entry, bound = framework.bind("playground.simulation", args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def knob_values(page, widget):
    return page.evaluate("""(sel) => Object.fromEntries(Array.from(document.querySelector(sel).querySelector('form').elements)
        .filter(e => e.name && !e.name.startsWith('__')).map(e => [e.name, e.value]))""", widget)


def settle(page, expected_sim):
    """Wait until the simulation has rerun to the expected end and every widget is live again."""
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=RUN_TIMEOUT_MS)
    wait_text(page, SIM, "ttft_p99_s", expected_sim["outputs"]["ttft_p99_s"]["text"])
    for selector in WIDGETS.values():
        page.wait_for_selector(f"{selector}[data-state=live]", timeout=RUN_TIMEOUT_MS)


def test_knobs_follow_each_other_a_shared_link_reopens_the_same_numbers_and_the_file_reruns_in_the_cli(visit, tmp_path):
    page = open_page(visit)
    page.wait_for_selector(f"{REPLICA}[data-state=live]")
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    # One knob in each widget: the others take it (their hidden copies) and recompute.
    page.select_option(f'{REPLICA} select[name="weights"]', "fp8")
    for name, value in (("rate_per_s", "12"), ("requests", "300")):
        page.fill(f'{SIM} input[name="{name}"]', value)
        page.dispatch_event(f'{SIM} input[name="{name}"]', "change")
    page.fill(f'{COST} input[name="gpu_price_usd_per_hour"]', "2.5")
    page.dispatch_event(f'{COST} input[name="gpu_price_usd_per_hour"]', "change")
    knobs = {"weights": "fp8", "rate_per_s": "12", "requests": "300", "gpu_price_usd_per_hour": "2.5"}
    expected_sim = sim_view(knobs)
    settle(page, expected_sim)

    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert {k: v[0] for k, v in query.items()} == knobs, page.url
    assert page.input_value("[data-share-link]") == page.url
    for name, selector in WIDGETS.items():
        controls = {c["name"] for c in framework.describe(name)["controls"]}
        expected = framework.call(name, {k: v for k, v in knobs.items() if k in controls})
        for key, item in expected["outputs"].items():
            assert text(page, selector, key) == item["text"], (name, key)
    assert json.loads(text(page, FILE, "scenario_json"))["weights"] == "fp8"
    shown = {key: text(page, SIM, key) for key in METRICS}
    assert shown == {key: expected_sim["outputs"][key]["text"] for key in METRICS}
    before = {selector: knob_values(page, selector) for selector in (REPLICA, SIM, COST, FILE)}
    outputs_before = {selector: {key: text(page, selector, key) for key in framework.call(name, {})["outputs"]}
                      for name, selector in WIDGETS.items()}

    # The lesson scenarios below are not playground knobs: changing them leaves the URL alone.
    lesson = '[data-widget="simulation.replica"]'
    assert page.locator(f'{lesson} select[name="preset"] option').count() >= 10
    page.select_option(f'{lesson} select[name="allocation"]', "contiguous")
    page.wait_for_timeout(400)
    assert page.url == page.input_value("[data-share-link]")
    assert {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).items()} == knobs

    # The link, opened afresh: the same knobs everywhere, and the page recomputes to the same numbers.
    link = page.url
    page.close()
    fresh = visit.context.new_page()
    fresh.goto(link)
    fresh.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    fresh.select_option(f'{SIM} select[name="__speed"]', "8")
    settle(fresh, expected_sim)
    assert {selector: knob_values(fresh, selector) for selector in (REPLICA, SIM, COST, FILE)} == before
    assert {key: text(fresh, SIM, key) for key in METRICS} == shown
    assert {selector: {key: text(fresh, selector, key) for key in keys}
            for selector, keys in outputs_before.items()} == outputs_before
    assert fresh.url == link

    # The download: the file the CLI runs to the numbers this page shows.
    with fresh.expect_download() as download:
        fresh.click(f'{FILE} [data-action="download"]')
    assert download.value.suggested_filename == "scenario.json"
    path = tmp_path / "scenario.json"
    download.value.save_as(path)
    run = subprocess.run([sys.executable, "-m", "calc", "simulate", "--scenario", str(path), "--json"],
                         capture_output=True, text=True, timeout=120, check=True)
    summary = json.loads(run.stdout)
    assert summary["requests_completed"] == 300 and summary["gpu_price_usd_per_hour"] == 2.5
    for item in metrics(summary):
        assert text(fresh, SIM, item["key"]) == item["text"], item["key"]
    assert visit.console_errors == []
