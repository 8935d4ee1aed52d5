"""Step 13 live in headless Chromium: the three widgets recompute like CPython; a context beyond the window
gets calc's message."""

import pytest

from tests.browser.helpers import (assert_outputs, chart_traces, figure_traces, output_text, recompute, reject,
                                   wait_until_live, wait_until_ready)
from tests.browser.folds import open_folds  # two of the three widgets are folded on the page

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/13-long-context/"
GROWTH = '[data-widget="long_context.context_growth"]'
DISPLACED = '[data-widget="long_context.long_vs_short"]'
FLASH = '[data-widget="long_context.flash_attention"]'


def test_widgets_recompute_like_cpython(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    open_folds(page, GROWTH, FLASH)
    assert output_text(page, DISPLACED, "conversations") == "78 (78.1×)"
    wait_until_ready(page)
    wait_until_live(page, GROWTH, DISPLACED, FLASH)

    expected = recompute(page, GROWTH, "prefill_s", context_tokens="32768")
    assert_outputs(page, GROWTH, expected)

    expected = recompute(page, DISPLACED, "fit", kv_dtype="fp8", long_tokens="131072")
    assert_outputs(page, DISPLACED, expected)
    assert chart_traces(page, DISPLACED, "cache", "x") == figure_traces(expected, "cache", "x")

    expected = recompute(page, FLASH, "scores_bytes", context_tokens="50176")
    assert_outputs(page, FLASH, expected)

    reject(page, FLASH, context_tokens="200000")
    assert visit.console_errors == []
