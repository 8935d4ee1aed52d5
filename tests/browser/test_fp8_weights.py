"""Step 7 live in headless Chromium: both widgets recompute like CPython, and the fp8 replay of step 6 plays to the end."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/07-fp8-weights/"
MEMORY = '[data-widget="fp8_weights.memory_before_after"]'
STEP = '[data-widget="fp8_weights.step_before_after"]'
SIM = '[data-widget="fp8_weights.twice_the_traffic"]'


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
    for widget in (MEMORY, STEP, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("fp8_weights.memory_before_after", {"weights": "int4"})
    page.select_option(f'{MEMORY} select[name="weights"]', "int4")
    wait_text(page, f'{MEMORY} [data-output="kv_tokens_after"]', expected["outputs"]["kv_tokens_after"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{MEMORY} [data-output="{key}"]').inner_text() == item["text"], key

    expected = framework.call("fp8_weights.step_before_after", {"batch": "256"})
    page.fill(f'{STEP} input[name="batch"]', "256")
    wait_text(page, f'{STEP} [data-output="step_before"]', expected["outputs"]["step_before"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{STEP} [data-output="{key}"]').inner_text() == item["text"], key
    curve = page.evaluate(f"() => document.querySelector('{STEP} [data-chart=vs_batch]').data[1].y")
    assert curve == expected["figures"]["vs_batch"]["data"][1]["y"]

    # The simulation: back to bf16 weights (step 6's queue), played at 8x to the end.
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.select_option(f'{SIM} select[name="weights"]', "bf16")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("fp8_weights.twice_the_traffic", {"weights": "bf16"})
    for key in ("requests_completed", "ttft_p99_s", "queue_depth_max"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
