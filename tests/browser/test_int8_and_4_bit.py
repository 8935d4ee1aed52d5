"""Step 8 live in headless Chromium: the formats table, the accuracy table and the KV formats recompute like CPython."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/08-int8-and-4-bit/"
FORMATS = '[data-widget="int8_and_4_bit.formats"]'
ACC = '[data-widget="int8_and_4_bit.published_accuracy"]'
KV = '[data-widget="int8_and_4_bit.kv_formats"]'
SIM = '[data-widget="fp8_weights.twice_the_traffic"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def table_rows(page, widget, key):
    return page.evaluate(f"""() => [...document.querySelectorAll('{widget} [data-table="{key}"] tbody tr')]
                                    .map(r => [...r.children].map(c => c.textContent))""")


def test_widgets_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (FORMATS, ACC, KV, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    args = {"replica": "llama-3.1-8b", "batch": "256"}
    expected = framework.call("int8_and_4_bit.formats", args)
    page.select_option(f'{FORMATS} select[name="replica"]', "llama-3.1-8b")
    page.fill(f'{FORMATS} input[name="batch"]', "256")
    wait_text(page, f'{FORMATS} [data-output="speedup_int4"]', expected["outputs"]["speedup_int4"]["text"])
    assert table_rows(page, FORMATS, "formats") == expected["tables"]["formats"]["rows"]

    expected = framework.call("int8_and_4_bit.published_accuracy", {"model": "llama-3.1-8b"})
    page.select_option(f'{ACC} select[name="model"]', "llama-3.1-8b")
    page.wait_for_function(f"() => document.querySelectorAll('{ACC} [data-table=cards] tbody tr').length === 2")
    assert table_rows(page, ACC, "cards") == expected["tables"]["cards"]["rows"]

    expected = framework.call("int8_and_4_bit.kv_formats", {"weights": "fp8"})
    page.select_option(f'{KV} select[name="weights"]', "fp8")
    wait_text(page, f'{KV} [data-output="kv_tokens_fp8"]', expected["outputs"]["kv_tokens_fp8"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{KV} [data-output="{key}"]').inner_text() == item["text"], key

    # A context no sequence can have: calc's message, then recovery.
    with pytest.raises(CalcError) as caught:
        framework.call("int8_and_4_bit.kv_formats", {"context_tokens": "0"})
    page.fill(f'{KV} input[name="context_tokens"]', "0")
    wait_text(page, f"{KV} [data-error]", str(caught.value))
    page.fill(f'{KV} input[name="context_tokens"]', "4096")
    wait_text(page, f"{KV} [data-error]", "")
    assert visit.console_errors == []
