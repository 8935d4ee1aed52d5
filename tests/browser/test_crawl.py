"""A crawl of every page of the built site in headless Chromium.

Every page loads with no request leaving 127.0.0.1 and no console error, fits a
phone's width, has no serious or critical accessibility violation (axe-core from
npm), and search works offline. Pages added later are crawled without new code.
"""

from __future__ import annotations

import os

import pytest

from tests.browser.helpers import ROOT, SITE

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

AXE = os.path.join(ROOT, "node_modules", "axe-core", "axe.min.js")
PHONE = {"width": 390, "height": 844}


def all_pages() -> list[str]:
    pages = []
    for folder, _, files in os.walk(SITE):
        if "index.html" in files:
            relative = os.path.relpath(folder, SITE).replace(os.sep, "/")
            pages.append("" if relative == "." else relative + "/")
    return sorted(pages)


def test_every_page_loads_offline_without_console_errors_and_fits_a_phone(visit):
    page = visit.page
    failures = []
    for path in all_pages():
        visit.console_errors.clear()
        page.set_viewport_size({"width": 1280, "height": 900})
        response = page.goto(visit.url(path))
        page.wait_for_load_state("load")
        if not response.ok:
            failures.append(f"{path}: HTTP {response.status}")
        page.set_viewport_size(PHONE)
        page.wait_for_timeout(150)
        width = page.evaluate("() => document.documentElement.scrollWidth")
        if width > PHONE["width"] + 2:
            failures.append(f"{path}: {width}px wide at a phone's {PHONE['width']}px")
        if visit.console_errors:
            failures.append(f"{path}: {visit.console_errors[:2]}")
    assert failures == []
    # the visit fixture then asserts that no request left 127.0.0.1


def test_no_serious_accessibility_violations(browser, site_server):
    context = browser.new_context(bypass_csp=True)  # axe is injected as a script of the test's own
    page = context.new_page()
    found = []
    try:
        for path in all_pages():
            page.goto(site_server.url + path)
            page.wait_for_load_state("load")
            page.add_script_tag(path=AXE)
            violations = page.evaluate("""async () => {
                const result = await axe.run(document, {resultTypes: ['violations']});
                return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical')
                    .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 2).map(n => n.target.join(' ')).join(', '));
            }""")
            found += [f"{path}: {v}" for v in violations]
    finally:
        context.close()
    assert found == []


def test_search_works_offline(visit):
    page = visit.page
    page.goto(visit.url(""))
    page.wait_for_load_state("networkidle")
    page.keyboard.press("/")  # Material's shortcut opens the search
    page.locator("input.md-search__input").press_sequentially("paged attention", delay=30)
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    assert page.locator(".md-search-result__item").count() > 0
