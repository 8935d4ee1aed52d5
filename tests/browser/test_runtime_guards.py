"""The runtime's guard rails in the browser: the time budget, the status badge, keyboard use."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'


def test_a_call_past_its_budget_is_cut_off_with_a_message_and_the_runtime_recovers(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    assert page.locator("[data-runtime-status]").inner_text() == "Python: ready"
    answer = page.evaluate("() => window.calcRuntime.request('call', {fn: 'diagnostics.busy', args: {seconds: '5'}}, 1000)")
    assert answer["ok"] is False and answer["error"]["kind"] == "budget"
    assert "longer than its 1.0 s budget" in answer["error"]["message"]
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    assert page.evaluate("() => window.calcRuntime.boots") == 2
    # The widgets work again on the new worker.
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "qwen2.5-7b"})
    page.select_option(f'{WIDGET} select[name="model"]', "qwen2.5-7b")
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent === want",
        arg=[f'{WIDGET} [data-output="kv_bytes_per_token"]', expected["outputs"]["kv_bytes_per_token"]["text"]],
    )


def test_a_call_off_the_allow_list_is_refused_in_the_browser(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for name in ("os.system", "builtins.eval", "calc.widgets.runtime.handle", "__import__"):
        answer = page.evaluate("(fn) => window.calcRuntime.request('call', {fn, args: {}}, 5000)", name)
        assert answer["ok"] is False and answer["error"]["field"] == "widget", name


def test_controls_work_from_the_keyboard(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    page.focus(f'{WIDGET} input[name="context_tokens"]')
    page.keyboard.press("ArrowUp")  # a number input steps to its next valid value
    stepped = page.input_value(f'{WIDGET} input[name="context_tokens"]')
    assert stepped != "4000"
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"context_tokens": stepped})
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent === want",
        arg=[f'{WIDGET} [data-output="kv_bytes_per_request"]', expected["outputs"]["kv_bytes_per_request"]["text"]],
    )
    page.focus(f'{WIDGET} select[name="kv_dtype"]')
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.state === 'live'")
