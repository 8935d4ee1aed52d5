"""A crawl of every page of the built site in headless Chromium.

Every page loads with no request leaving 127.0.0.1 and no console error, fits a
phone's width, has no serious or critical accessibility violation (axe-core from
npm), and search works offline. Pages added later are crawled without new code.
One visit per page serves the load, phone and accessibility checks (the ``crawl`` fixture).

The crawl does not boot Python: its worker script is answered with an empty module, so each page shows its
pre-rendered figures, as a reader sees them before Python is ready. A boot per page cost ~5 CPU s (about a sixth
of the browser tier) and proved nothing page-specific (the crawl moves on before the worker is ready); the boot is
checked by the runtime's own tests (test_first_visit, test_pyodide_snapshot, test_offline_and_csp) and every
widget page by its own test, which boots it. Nor does it run the service worker (blocked, as in every test not
marked ``service_worker``): each page comes from the server, and the offline reading it gives is test_first_visit's.
"""

from __future__ import annotations

import json
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


# Runs axe in the page (injected by Playwright, so the page's Content-Security-Policy stays on for the crawl)
# and returns its serious and critical violations, and those of the moderate rules the site is held to as well
# (HELD_MODERATE). Only the rules axe runs by default that can report one: each rule's violations take that
# rule's own impact (axe-core's _finalizeRuleResult), so a rule rated minor or moderate never reports serious;
# leaving the others of those 28 of 96 out takes a fifth off axe's time, with the same findings.
HELD_MODERATE = ["landmark-unique"]  # a screen reader lists landmarks by name: two alike cannot be told apart
AXE_RULES = """() => axe._audit.rules.filter(r => r.enabled && (r.impact !== 'minor' && r.impact !== 'moderate'
    || """ + json.dumps(HELD_MODERATE) + """.includes(r.id))).map(r => r.id)"""
AXE_RUN = """async () => {
    const rules = (""" + AXE_RULES + """)();
    const result = await axe.run(document, {runOnly: {type: 'rule', values: rules}, resultTypes: ['violations']});
    return result.violations.filter(v => v.impact === 'serious' || v.impact === 'critical'
                                         || """ + json.dumps(HELD_MODERATE) + """.includes(v.id))
        .map(v => v.id + ' (' + v.impact + '): ' + v.nodes.slice(0, 2).map(n => n.target.join(' ')).join(', '));
}"""


@pytest.fixture(scope="module")
def crawl(browser, site_server):
    """One visit of every page, shared by the tests that need every page: each page is loaded once (a
    reader's viewport, its CSP on, no request allowed off 127.0.0.1), checked by axe as loaded, then resized
    to a phone. Returns {path: findings} and the requests that tried to leave 127.0.0.1."""
    from tests.browser.conftest import Visit

    with open(AXE, encoding="utf-8") as handle:
        axe_source = handle.read()
    visit = Visit(browser, site_server)
    page = visit.page
    page.route("**/assets/runtime/worker.mjs", lambda route: route.fulfill(
        status=200, content_type="text/javascript", body="// the crawl does not boot Python (module docstring)\n"))
    found, rules_run = {}, []
    try:
        for path in all_pages():
            visit.console_errors.clear()
            page.set_viewport_size({"width": 1280, "height": 900})
            response = page.goto(visit.url(path))
            page.wait_for_load_state("load")
            errors_on_load = list(visit.console_errors)  # before axe runs: its own work is not the page's
            page.evaluate(axe_source)
            rules_run = rules_run or page.evaluate(AXE_RULES)
            violations = page.evaluate(AXE_RUN)
            page.set_viewport_size(PHONE)
            page.wait_for_timeout(150)
            found[path] = {"status": response.status, "ok": response.ok, "violations": violations,
                           "phone_width": page.evaluate("() => document.documentElement.scrollWidth"),
                           "console_errors": errors_on_load + visit.console_errors[len(errors_on_load):]}
    finally:
        visit.close()
    return found, visit.external_requests, rules_run


def test_every_page_loads_offline_without_console_errors_and_fits_a_phone(crawl):
    pages, external_requests, _ = crawl
    assert len(pages) == len(all_pages()) > 30
    failures = []
    for path, page in pages.items():
        if not page["ok"]:
            failures.append(f"{path}: HTTP {page['status']}")
        if page["phone_width"] > PHONE["width"] + 2:
            failures.append(f"{path}: {page['phone_width']}px wide at a phone's {PHONE['width']}px")
        if page["console_errors"]:
            failures.append(f"{path}: {page['console_errors'][:2]}")
    assert failures == []
    assert external_requests == [], f"requests left 127.0.0.1: {external_requests}"


def test_no_serious_accessibility_violations(crawl):
    pages, _, rules_run = crawl
    assert len(pages) == len(all_pages()) > 30
    # Every default rule that can report serious or critical ran (axe-core 4.14: 68), contrast and names among them.
    assert len(rules_run) >= 60 and {"color-contrast", "image-alt", "button-name", "link-name"} <= set(rules_run)
    assert "region" not in rules_run  # moderate: it can never report what is looked for here
    assert set(HELD_MODERATE) <= set(rules_run)
    assert [f"{path}: {v}" for path, page in pages.items() for v in page["violations"]] == []


@pytest.mark.search
def test_search_works_offline(visit):
    page = visit.page
    page.goto(visit.url(""))
    page.wait_for_load_state("networkidle")
    page.keyboard.press("/")  # Material's shortcut opens the search
    page.locator("input.md-search__input").press_sequentially("paged attention", delay=30)
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    assert page.locator(".md-search-result__item").count() > 0
