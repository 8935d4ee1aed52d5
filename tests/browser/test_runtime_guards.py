"""The runtime's guard rails in the browser: the time budget, the status badge, keyboard use."""

import pytest

from tests.browser.helpers import calc_view, open_live, recompute, wait_for_output, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'


def test_a_call_past_its_budget_is_cut_off_with_a_message_and_the_runtime_recovers(with_test_widgets, visit):
    page = open_live(visit, PAGE)
    assert page.locator("[data-runtime-status]").inner_text() == "Python: ready"
    answer = page.evaluate("() => window.calcRuntime.request('call', {fn: 'diagnostics.busy', args: {seconds: '5'}}, 1000)")
    assert answer["ok"] is False and answer["error"]["kind"] == "budget"
    assert "longer than its 1.0 s budget" in answer["error"]["message"]
    wait_until_ready(page)
    assert page.evaluate("() => window.calcRuntime.boots") == 2
    # The widgets work again on the new worker.
    recompute(page, WIDGET, "kv_bytes_per_token", model="qwen2.5-7b")


def test_a_call_off_the_allow_list_is_refused_in_the_browser(visit):
    page = open_live(visit, PAGE)
    for name in ("os.system", "builtins.eval", "calc.widgets.runtime.handle", "__import__"):
        answer = page.evaluate("(fn) => window.calcRuntime.request('call', {fn, args: {}}, 5000)", name)
        assert answer["ok"] is False and answer["error"]["field"] == "widget", name


def test_controls_work_from_the_keyboard(visit):
    page = open_live(visit, PAGE)
    page.focus(f'{WIDGET} input[name="context_tokens"]')
    page.keyboard.press("ArrowUp")  # a number input steps to its next valid value
    stepped = page.input_value(f'{WIDGET} input[name="context_tokens"]')
    assert stepped != "4000"
    expected = calc_view("kv_cache_arithmetic.kv_per_token", context_tokens=stepped)
    wait_for_output(page, WIDGET, "kv_bytes_per_request", expected["outputs"]["kv_bytes_per_request"]["text"])
    page.focus(f'{WIDGET} select[name="kv_dtype"]')
    page.keyboard.press("ArrowDown")
    page.wait_for_function(f"() => document.querySelector('{WIDGET}').dataset.state === 'live'")
