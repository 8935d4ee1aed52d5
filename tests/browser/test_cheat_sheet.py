"""Step 21 live: the widget recomputes like CPython, and the sheet prints on one page (A4 and US Letter)."""

import re

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/21-cheat-sheet/"
WIDGET = '[data-widget="cheat_sheet.your_replica"]'
READY_TIMEOUT_MS = 90_000
# A browser's "default" print margins are about 10 mm; the sheet must fit inside them on either paper.
MARGIN = {side: "10mm" for side in ("top", "bottom", "left", "right")}


def pdf_pages(pdf: bytes) -> int:
    return len(re.findall(rb"/Type\s*/Page(?!s)", pdf))


def test_the_sheet_prints_on_one_page_and_its_widget_recomputes_like_cpython(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector(".katex")  # the formulas are typeset before printing
    for paper in ("A4", "Letter"):
        assert pdf_pages(page.pdf(format=paper, margin=MARGIN)) == 1, paper
    # Printed, the sheet keeps its formulas and numbers and leaves out the interactive parts.
    page.emulate_media(media="print")
    assert page.locator(WIDGET).is_hidden()
    assert page.locator("text=399,169").first.is_visible()
    page.emulate_media(media="screen")

    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f"{WIDGET}[data-state=live]")
    expected = framework.call("cheat_sheet.your_replica", {"weights": "fp8", "kv_dtype": "fp8"})["outputs"]
    page.select_option(f'{WIDGET} select[name="weights"]', "fp8")
    page.select_option(f'{WIDGET} select[name="kv_dtype"]', "fp8")
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want",
                           arg=[f'{WIDGET} [data-output="kv_tokens"]', expected["kv_tokens"]["text"]])
    for key, item in expected.items():
        assert page.locator(f'{WIDGET} [data-output="{key}"]').inner_text() == item["text"], key
    # calc's message for a replica that cannot run, in the widget.
    page.fill(f'{WIDGET} input[name="tp"]', "3")
    page.wait_for_function(f"() => document.querySelector('{WIDGET} [data-error]').textContent.length > 0")
    assert "tp must divide the 64 attention heads" in page.locator(f"{WIDGET} [data-error]").inner_text()
    assert visit.console_errors == []
