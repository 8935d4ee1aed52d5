"""Step 6 live in headless Chromium: the roofline points move with batch, the step cost recomputes, the run plays."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/06-twice-the-traffic/"
ROOF = '[data-widget="twice_the_traffic.roofline"]'
COST = '[data-widget="twice_the_traffic.step_cost"]'
SIM = '[data-kind="simulation"]'
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_roofline_step_cost_and_simulation_go_live_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f'{ROOF}[data-state="live"]')

    # The roofline: batch 1 moves the decode points down the bandwidth slope, as CPython places them.
    expected = framework.call("twice_the_traffic.roofline", {"batch": "1"})
    page.fill(f'{ROOF} input[name="batch"]', "1")
    wait_text(page, f'{ROOF} [data-output="decode_intensity"]', expected["outputs"]["decode_intensity"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{ROOF} [data-output="{key}"]').inner_text() == item["text"], key
    points = page.evaluate(f"() => document.querySelector('{ROOF} [data-chart=\"roofline\"]').data.map(t => [t.x, t.y])")
    assert points == [[t["x"], t["y"]] for t in expected["figures"]["roofline"]["data"]]

    # The step cost with fp8 weights.
    expected = framework.call("twice_the_traffic.step_cost", {"weights": "fp8"})
    page.select_option(f'{COST} select[name="weights"]', "fp8")
    wait_text(page, f'{COST} [data-output="step_ms"]', expected["outputs"]["step_ms"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{COST} [data-output="{key}"]').inner_text() == item["text"], key

    # Twice the traffic, live, with a smaller cap on the batch (a control change reruns the scenario).
    form = {"preset": "step06-twice-the-traffic", "rate_per_s": 16, "max_num_seqs": 64}
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.fill(f'{SIM} input[name="max_num_seqs"]', "64")
    page.dispatch_event(f'{SIM} input[name="max_num_seqs"]', "change")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("simulation.replica", form)
    for key in ("running_max", "queue_depth_max", "itl_p50_s", "throughput_output_tokens_per_s"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert page.locator(f'{SIM} [data-output="running_max"]').inner_text() == "64 requests"
    assert visit.console_errors == []
