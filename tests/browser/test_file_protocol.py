"""Opened from a file, a page still shows its pre-rendered numbers and charts, and says how to go live."""

import os

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site")), "lesson", "02-kv-cache-arithmetic", "index.html")
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'


def test_page_from_file_shows_prerendered_numbers_charts_and_how_to_serve(visit):
    page = visit.page
    page.goto(f"file://{PAGE}")
    page.wait_for_selector("html[data-pyodide=error]")
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {})
    shown = page.locator(f'{WIDGET} [data-output="kv_bytes_per_token"]').inner_text()
    assert shown == expected["outputs"]["kv_bytes_per_token"]["text"]
    page.wait_for_selector(f'{WIDGET} [data-chart="kv_vs_context"] .main-svg')  # Plotly drew the build's figure
    note = page.locator(f"{WIDGET} [data-status]").inner_text()
    assert "make serve" in note and "http://127.0.0.1:8000" in note
    assert page.get_attribute(WIDGET, "data-state") == "static"
