"""Step 8 live in headless Chromium: the formats table, the accuracy table and the KV formats recompute like CPython."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_view, choose, fill_in, open_live, recompute, reject, table_rows,
                                   wait_for_error)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/08-int8-and-4-bit/"
FORMATS = '[data-widget="int8_and_4_bit.formats"]'
ACC = '[data-widget="int8_and_4_bit.published_accuracy"]'
KV = '[data-widget="int8_and_4_bit.kv_formats"]'
SIM = '[data-widget="fp8_weights.twice_the_traffic"]'


def test_widgets_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, FORMATS, ACC, KV, SIM)

    expected = recompute(page, FORMATS, "speedup_int4", replica="llama-3.1-8b", batch="256")
    assert table_rows(page, FORMATS, "formats") == expected["tables"]["formats"]["rows"]

    expected = calc_view("int8_and_4_bit.published_accuracy", model="llama-3.1-8b")
    choose(page, ACC, "model", "llama-3.1-8b")
    page.wait_for_function(f"() => document.querySelectorAll('{ACC} [data-table=cards] tbody tr').length === 2")
    assert table_rows(page, ACC, "cards") == expected["tables"]["cards"]["rows"]

    expected = recompute(page, KV, "kv_tokens_fp8", weights="fp8")
    assert_outputs(page, KV, expected)

    # A context no sequence can have: calc's message, then recovery.
    reject(page, KV, context_tokens="0")
    fill_in(page, KV, "context_tokens", "4096")
    wait_for_error(page, KV, "")
    assert visit.console_errors == []
