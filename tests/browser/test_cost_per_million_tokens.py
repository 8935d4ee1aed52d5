"""Step 16 live in headless Chromium: cost against batch recomputes like CPython, with prefill and with bad input."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/16-cost-per-million-tokens/"
WIDGET = '[data-widget="cost_per_million_tokens.cost_by_batch"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def test_the_lessons_numbers_are_on_the_page_before_python_runs(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    assert page.locator(f'{WIDGET} [data-output="discount_1_to_10"]').inner_text() == "9.74 times cheaper"
    assert "$64.24 per million tokens" in page.locator("article").inner_text()
    assert "listed 2026-05-07" in page.locator(f'{WIDGET} [data-output="price_note"]').inner_text()


def test_cost_by_batch_recomputes_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')

    args = {"batch": "100", "include_prefill": True, "usd_per_gpu_hour": "5.49"}
    expected = framework.call("cost_per_million_tokens.cost_by_batch", args)
    page.fill(f'{WIDGET} input[name="usd_per_gpu_hour"]', "5.49")
    page.fill(f'{WIDGET} input[name="batch"]', "100")
    page.check(f'{WIDGET} input[name="include_prefill"]')
    wait_text(page, f'{WIDGET} [data-output="usd_per_million_tokens"]',
              expected["outputs"]["usd_per_million_tokens"]["text"])
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')
    for key, item in expected["outputs"].items():
        assert page.locator(f'{WIDGET} [data-output="{key}"]').inner_text() == item["text"], key
    cells = page.evaluate(f"""() => [...document.querySelectorAll('{WIDGET} [data-table="batches"] tbody tr')]
                                     .map(r => [...r.children].map(c => c.textContent))""")
    assert cells == expected["tables"]["batches"]["rows"]

    with pytest.raises(CalcError) as caught:
        framework.call("cost_per_million_tokens.cost_by_batch", {"tp": "3"})
    page.fill(f'{WIDGET} input[name="tp"]', "3")
    page.dispatch_event(f'{WIDGET} input[name="tp"]', "change")
    wait_text(page, f"{WIDGET} [data-error]", str(caught.value))
    assert visit.console_errors == []
