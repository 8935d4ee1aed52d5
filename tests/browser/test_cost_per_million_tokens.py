"""Step 16 live in headless Chromium: cost against batch recomputes like CPython, with prefill and with bad input."""

import pytest

from tests.browser.helpers import assert_outputs, open_live, output_text, recompute, reject, table_rows, wait_until_live
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/16-cost-per-million-tokens/"
WIDGET = '[data-widget="cost_per_million_tokens.cost_by_batch"]'


def test_the_lessons_numbers_are_on_the_page_before_python_runs(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    assert output_text(page, WIDGET, "discount_1_to_10") == "9.74 times cheaper"
    assert "$64.24 per million tokens" in page.locator("article").inner_text()
    assert "listed 2026-05-07" in output_text(page, WIDGET, "price_note")


def test_cost_by_batch_recomputes_like_cpython(visit):
    page = open_live(visit, PAGE, WIDGET)
    expected = recompute(page, WIDGET, "usd_per_million_tokens", usd_per_gpu_hour="5.49", batch="100",
                         include_prefill=True)
    wait_until_live(page, WIDGET)
    assert_outputs(page, WIDGET, expected)
    assert table_rows(page, WIDGET, "batches") == expected["tables"]["batches"]["rows"]

    reject(page, WIDGET, tp="3", change=True)
    assert visit.console_errors == []
