"""Step 21 live: the widget recomputes like CPython, and the sheet prints on one page (A4 and US Letter)."""

import re

import pytest

from tests.browser.helpers import (assert_outputs, fill_in, recompute, wait_for_any_error, wait_until_live,
                                   wait_until_ready)

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/21-cheat-sheet/"
WIDGET = '[data-widget="cheat_sheet.your_replica"]'
# A browser's "default" print margins are about 10 mm; the sheet must fit inside them on either paper.
MARGIN = {side: "10mm" for side in ("top", "bottom", "left", "right")}


def pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf))


def test_the_sheet_prints_on_one_page_and_its_widget_recomputes_like_cpython(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector(".katex", state="attached")  # the formulas are typeset before printing (in folds on screen)
    for paper in ("A4", "Letter"):
        assert pdf_pages(page.pdf(format=paper, margin=MARGIN)) == 1, paper
    # Printed, the sheet keeps its formulas and numbers and leaves out the interactive parts.
    page.emulate_media(media="print")
    assert page.locator(WIDGET).is_hidden()
    assert page.locator(".calc-sheet table >> text=399,169").first.is_visible()  # the sheet prints
    assert page.locator("details.calc-print").first.is_visible()  # and the folds marked for print print open
    page.emulate_media(media="screen")
    # On screen the sheet is one table, open: every rule a row, none in a fold (issue 32).
    rows = page.locator(".calc-sheet table tbody tr")
    assert rows.count() >= 20 and rows.first.is_visible()
    assert page.locator("details .calc-sheet").count() == 0
    page.emulate_media(media="screen")

    wait_until_ready(page)
    wait_until_live(page, WIDGET)
    expected = recompute(page, WIDGET, "kv_tokens", weights="fp8", kv_dtype="fp8")
    assert_outputs(page, WIDGET, expected)
    # calc's message for a replica that cannot run, in the widget.
    fill_in(page, WIDGET, "tp", "3")
    assert "tp must divide the 64 attention heads" in wait_for_any_error(page, WIDGET)
    assert visit.console_errors == []
