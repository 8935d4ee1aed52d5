"""Step 22 live: a knob keeps one value across the page and in the URL, a shared link reopens the same numbers,
and the downloaded scenario reruns in the CLI to the numbers the page shows."""

import json
import subprocess
import sys
import urllib.parse

import pytest

from calc.widgets import framework
from calc.widgets.simulation import metrics
from tests.browser.helpers import (calc_final_view, calc_view, choose, fill_in, open_live, output_text, output_texts,
                                   wait_for_output, wait_until_done, wait_until_live, wait_until_ready)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/22-playground/"
REPLICA = '[data-widget="playground.replica"]'
SIM = '[data-widget="playground.simulation"]'
COST = '[data-widget="playground.speed_and_cost"]'
FILE = '[data-widget="playground.scenario_file"]'
WIDGETS = {"playground.replica": REPLICA, "playground.speed_and_cost": COST, "playground.scenario_file": FILE}
RUN_TIMEOUT_MS = 90_000
METRICS = ("requests_completed", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "throughput_output_tokens_per_s",
           "running_max", "queue_depth_max", "kv_token_share", "cost_usd_per_million_output_tokens")


def knob_values(page, widget):
    return page.evaluate("""(sel) => Object.fromEntries(Array.from(document.querySelector(sel).querySelector('form').elements)
        .filter(e => e.name && !e.name.startsWith('__')).map(e => [e.name, e.value]))""", widget)


PLAYGROUND_DEBOUNCE_MS = 250  # calc-playground.js: edits reach the other widgets this long after the last one
QUIET = """() => document.querySelector('[data-widget="playground.simulation"]').dataset.simState === 'done'
    && !document.querySelector('[data-widget^="playground."][aria-busy="true"]')"""


def settle(page, expected_sim):
    """Wait until the simulation has rerun to the expected end, every widget is live again, and the page has
    gone quiet. A run that a simulation knob started can end, with the same figures, before the rerun the
    playground makes 250 ms after the last edit (on a loaded machine the test's own steps are that slow), so
    the page must still be done after that delay; else wait for the rerun."""
    for _ in range(5):
        wait_until_done(page, SIM, RUN_TIMEOUT_MS)
        wait_for_output(page, SIM, "ttft_p99_s", expected_sim["outputs"]["ttft_p99_s"]["text"], RUN_TIMEOUT_MS)
        wait_for_output(page, SIM, "requests_completed", expected_sim["outputs"]["requests_completed"]["text"],
                        RUN_TIMEOUT_MS)
        wait_until_live(page, *WIDGETS.values(), timeout_ms=RUN_TIMEOUT_MS)
        page.wait_for_timeout(3 * PLAYGROUND_DEBOUNCE_MS)
        if page.evaluate(QUIET):
            return
    raise AssertionError("the playground kept rerunning its simulation after the last edit")


def test_knobs_follow_each_other_a_shared_link_reopens_the_same_numbers_and_the_file_reruns_in_the_cli(visit, tmp_path):
    page = open_live(visit, PAGE, REPLICA)
    choose(page, SIM, "__speed", "8")
    # One knob in each widget: the others take it (their hidden copies) and recompute.
    choose(page, REPLICA, "weights", "fp8")
    for name, value in (("rate_per_s", "12"), ("requests", "300")):
        fill_in(page, SIM, name, value, change=True)
    fill_in(page, COST, "gpu_price_usd_per_hour", "2.5", change=True)
    knobs = {"weights": "fp8", "rate_per_s": "12", "requests": "300", "gpu_price_usd_per_hour": "2.5"}
    expected_sim = calc_final_view("playground.simulation", **knobs)
    settle(page, expected_sim)

    query = urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query)
    assert {k: v[0] for k, v in query.items()} == knobs, page.url
    assert page.input_value("[data-share-link]") == page.url
    for name, selector in WIDGETS.items():
        controls = {c["name"] for c in framework.describe(name)["controls"]}
        expected = calc_view(name, **{k: v for k, v in knobs.items() if k in controls})
        for key, item in expected["outputs"].items():
            assert output_text(page, selector, key) == item["text"], (name, key)
    assert json.loads(output_text(page, FILE, "scenario_json"))["weights"] == "fp8"
    shown = output_texts(page, SIM, METRICS)
    assert shown == {key: expected_sim["outputs"][key]["text"] for key in METRICS}
    before = {selector: knob_values(page, selector) for selector in (REPLICA, SIM, COST, FILE)}
    outputs_before = {selector: output_texts(page, selector, calc_view(name)["outputs"])
                      for name, selector in WIDGETS.items()}

    # The lesson scenarios below are not playground knobs: changing them leaves the URL alone.
    lesson = '[data-widget="simulation.replica"]'
    assert page.locator(f'{lesson} select[name="preset"] option').count() >= 10
    choose(page, lesson, "allocation", "contiguous")
    page.wait_for_timeout(400)
    assert page.url == page.input_value("[data-share-link]")
    assert {k: v[0] for k, v in urllib.parse.parse_qs(urllib.parse.urlparse(page.url).query).items()} == knobs

    # The link, opened afresh: the same knobs everywhere, and the page recomputes to the same numbers.
    link = page.url
    page.close()
    fresh = visit.context.new_page()
    fresh.goto(link)
    wait_until_ready(fresh)
    choose(fresh, SIM, "__speed", "8")
    settle(fresh, expected_sim)
    assert {selector: knob_values(fresh, selector) for selector in (REPLICA, SIM, COST, FILE)} == before
    assert output_texts(fresh, SIM, METRICS) == shown
    assert {selector: output_texts(fresh, selector, keys)
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
        assert output_text(fresh, SIM, item["key"]) == item["text"], item["key"]
    assert visit.console_errors == []
