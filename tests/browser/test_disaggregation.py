"""Step 18 live in headless Chromium: pool sizing and the TP/PP split recompute as CPython does."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/18-disaggregation/"
SIZING = '[data-widget="disaggregation.pool_sizing"]'
SPLIT = '[data-widget="disaggregation.tp_or_pp"]'
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def test_both_widgets_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f'{SIZING}[data-state="live"]')
    page.wait_for_selector(f'{SPLIT}[data-state="live"]')

    args = {"rate_per_s": "37", "prompt_tokens": "3008", "output_tokens": "400"}
    expected = framework.call("disaggregation.pool_sizing", args)
    for name, value in args.items():
        page.fill(f'{SIZING} input[name="{name}"]', value)
    # Wait for the outputs that depend on the last field typed (the answer) and on the first (the rate).
    wait_text(page, f'{SIZING} [data-output="decode_batch"]', expected["outputs"]["decode_batch"]["text"])
    wait_text(page, f'{SIZING} [data-output="prefill_replicas"]', expected["outputs"]["prefill_replicas"]["text"])
    page.wait_for_selector(f'{SIZING}[data-state="live"]')
    for key, item in expected["outputs"].items():
        assert page.locator(f'{SIZING} [data-output="{key}"]').inner_text() == item["text"], key
    ys = page.evaluate(f"() => document.querySelector('{SIZING} [data-chart=stall]').data[0].y")
    assert ys == expected["figures"]["stall"]["data"][0]["y"]

    expected = framework.call("disaggregation.tp_or_pp", {"servers": "3"})
    page.fill(f'{SPLIT} input[name="servers"]', "3")
    wait_text(page, f'{SPLIT} [data-output="itl_pp_s"]', expected["outputs"]["itl_pp_s"]["text"])
    assert page.locator(f'{SPLIT} [data-output="note"]').inner_text() == expected["outputs"]["note"]["text"]
    assert page.locator(f'{SPLIT} [data-output="itl_tp_s"]').inner_text() == "not possible"
    assert page.locator(f'{SPLIT} [data-output="kv_pp"]').inner_text() == expected["outputs"]["kv_pp"]["text"]

    page.fill(f'{SPLIT} input[name="gpus_per_server"]', "3")
    page.wait_for_function(f"() => document.querySelector('{SPLIT} [data-error]').textContent.length > 0")
    assert "gpus_per_server" in page.locator(f"{SPLIT} [data-error]").inner_text()
    assert visit.console_errors == []
