"""Step 13 live in headless Chromium: the three widgets recompute like CPython; a context beyond the window
gets calc's message."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/13-long-context/"
GROWTH = '[data-widget="long_context.context_growth"]'
DISPLACED = '[data-widget="long_context.long_vs_short"]'
FLASH = '[data-widget="long_context.flash_attention"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def check_outputs(page, widget, expected):
    for key, item in expected["outputs"].items():
        assert page.locator(f'{widget} [data-output="{key}"]').inner_text() == item["text"], key


def test_widgets_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    assert page.locator(f'{DISPLACED} [data-output="conversations"]').inner_text() == "78 (78.1×)"
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (GROWTH, DISPLACED, FLASH):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("long_context.context_growth", {"context_tokens": "32768"})
    page.fill(f'{GROWTH} input[name="context_tokens"]', "32768")
    wait_text(page, f'{GROWTH} [data-output="prefill_s"]', expected["outputs"]["prefill_s"]["text"])
    check_outputs(page, GROWTH, expected)

    expected = framework.call("long_context.long_vs_short", {"kv_dtype": "fp8", "long_tokens": "131072"})
    page.select_option(f'{DISPLACED} select[name="kv_dtype"]', "fp8")
    page.fill(f'{DISPLACED} input[name="long_tokens"]', "131072")
    wait_text(page, f'{DISPLACED} [data-output="fit"]', expected["outputs"]["fit"]["text"])
    check_outputs(page, DISPLACED, expected)
    bars = page.evaluate(f"() => document.querySelector('{DISPLACED} [data-chart=cache]').data.map(t => t.x)")
    assert bars == [trace["x"] for trace in expected["figures"]["cache"]["data"]]

    expected = framework.call("long_context.flash_attention", {"context_tokens": "50176"})
    page.fill(f'{FLASH} input[name="context_tokens"]', "50176")
    wait_text(page, f'{FLASH} [data-output="scores_bytes"]', expected["outputs"]["scores_bytes"]["text"])
    check_outputs(page, FLASH, expected)

    with pytest.raises(CalcError) as err:
        framework.call("long_context.flash_attention", {"context_tokens": "200000"})
    page.fill(f'{FLASH} input[name="context_tokens"]', "200000")
    wait_text(page, f"{FLASH} [data-error]", str(err.value))
    assert visit.console_errors == []
