"""Step 4 live in headless Chromium: the reservation calculator recomputes like CPython, the contiguous run plays."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/04-reserving-the-maximum/"
CALC = '[data-widget="reserving_the_maximum.reservation"]'
SIM = '[data-kind="simulation"]'
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_calculator_and_simulation_go_live_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f'{CALC}[data-state="live"]')

    # The calculator: a longer max length, recomputed in the worker, equals CPython's view.
    expected = framework.call("reserving_the_maximum.reservation", {"max_model_len": "32768"})
    page.fill(f'{CALC} input[name="max_model_len"]', "32768")
    wait_text(page, f'{CALC} [data-output="contiguous_requests"]', expected["outputs"]["contiguous_requests"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{CALC} [data-output="{key}"]').inner_text() == item["text"], key
    bars = page.evaluate(f"() => document.querySelector('{CALC} [data-chart=\"cache\"]').data.map(t => t.x)")
    assert bars == [trace["x"] for trace in expected["figures"]["cache"]["data"]]

    # A max length shorter than the request: calc's message, then recovery.
    with pytest.raises(CalcError) as caught:
        framework.call("reserving_the_maximum.reservation", {"max_model_len": "1024"})
    page.fill(f'{CALC} input[name="max_model_len"]', "1024")
    wait_text(page, f"{CALC} [data-error]", str(caught.value))
    page.fill(f'{CALC} input[name="max_model_len"]', "8192")
    wait_text(page, f'{CALC} [data-output="contiguous_requests"]', "48")

    # The break-it simulation: contiguous allocation plays to the end with CPython's numbers.
    form = {"preset": "step04-reserve-max", "rate_per_s": 8, "allocation": "contiguous"}
    assert page.input_value(f'{SIM} select[name="allocation"]') == "contiguous"
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.click(f'{SIM} [data-action="play"]')
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("simulation.replica", form)
    for key in ("running_max", "queue_depth_max", "ttft_p99_s", "kv_token_share"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert page.locator(f'{SIM} [data-output="running_max"]').inner_text() == "48 requests"
    assert visit.console_errors == []
