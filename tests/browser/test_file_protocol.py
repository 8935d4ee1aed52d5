"""Opened from a file, a page still shows its pre-rendered numbers and charts, and says how to go live."""

import os

import pytest

from tests.browser.helpers import SITE, assert_outputs, calc_view

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = os.path.join(SITE, "lesson", "02-kv-cache-arithmetic", "index.html")
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'


def test_page_from_file_shows_prerendered_numbers_charts_and_how_to_serve(visit):
    page = visit.page
    page.goto(f"file://{PAGE}")
    page.wait_for_selector("html[data-pyodide=error]")
    assert_outputs(page, WIDGET, calc_view("kv_cache_arithmetic.kv_per_token"), ["kv_bytes_per_token"])
    page.wait_for_selector(f'{WIDGET} [data-chart="kv_vs_context"] .main-svg')  # Plotly drew the build's figure
    note = page.locator(f"{WIDGET} [data-status]").inner_text()
    assert "make serve" in note and "http://127.0.0.1:8000" in note
    assert page.get_attribute(WIDGET, "data-state") == "static"
