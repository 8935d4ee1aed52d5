"""Step 9 live in headless Chromium: acceptance and k recompute like CPython; the light-traffic simulation plays."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/09-speculative-decoding/"
GAIN = '[data-widget="speculative_decoding.gain"]'
DIST = '[data-widget="speculative_decoding.same_distribution"]'
SIM = '[data-widget="speculative_decoding.light_traffic"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_widgets_and_simulation_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (GAIN, DIST, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("speculative_decoding.gain", {"acceptance": "0.9", "k": "8"})
    page.fill(f'{GAIN} input[name="acceptance"]', "0.9")
    page.fill(f'{GAIN} input[name="k"]', "8")
    wait_text(page, f'{GAIN} [data-output="tokens_per_step"]', expected["outputs"]["tokens_per_step"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{GAIN} [data-output="{key}"]').inner_text() == item["text"], key

    expected = framework.call("speculative_decoding.same_distribution", {"mismatch": "0.9"})
    page.fill(f'{DIST} input[name="mismatch"]', "0.9")
    wait_text(page, f'{DIST} [data-output="acceptance"]', expected["outputs"]["acceptance"]["text"])
    assert page.locator(f'{DIST} [data-output="max_difference"]').inner_text() == "0"

    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.select_option(f'{SIM} select[name="speculation"]', "off")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("speculative_decoding.light_traffic", {"speculation": "off"})
    for key in ("requests_completed", "itl_p50_s", "compute_utilization"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
