"""The site holds up: no Content-Security-Policy violation, and live widgets after the server is gone."""

import pytest

from tests.browser.helpers import open_live, recompute, wait_until_live, wait_until_ready
from tests.browser.test_first_visit import wait_until_offline_ready

# The service worker runs, as readers have it: its precache and the pages it serves must keep to the policy too.
pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser"), pytest.mark.service_worker]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
RECORD_VIOLATIONS = """
window.__cspViolations = [];
document.addEventListener("securitypolicyviolation", (e) => {
  window.__cspViolations.push(e.violatedDirective + " " + (e.blockedURI || "inline"));
});
"""


def test_pages_carry_a_policy_and_break_none_of_it(visit):
    page = visit.page
    page.add_init_script(RECORD_VIOLATIONS)
    response = page.goto(visit.url(PAGE))
    assert response.ok
    policy = page.get_attribute('meta[http-equiv="Content-Security-Policy"]', "content")
    assert "script-src 'self' 'wasm-unsafe-eval' 'sha256-" in policy and "unsafe-eval'" not in policy.replace("wasm-unsafe-eval", "")
    wait_until_ready(page)
    recompute(page, WIDGET, "kv_bytes_per_token", model="qwen2.5-72b")
    page.wait_for_load_state("networkidle")
    page.click("a.md-footer__link--next")
    page.wait_for_url("**/03-drill-kv-bytes/")
    page.go_back()
    wait_until_live(page, WIDGET)
    assert page.evaluate("() => window.__cspViolations") == []
    assert visit.console_errors == []


def test_live_widgets_survive_the_server_stopping(visit, site_server):
    page = open_live(visit, PAGE)
    # The service worker precaches the site once Python is ready and the page idle (calc-offline.js).
    wait_until_offline_ready(page)
    page.reload()
    page.wait_for_function("() => navigator.serviceWorker.controller !== null", timeout=60_000)
    wait_until_ready(page)
    site_server.stop()
    try:
        page.reload()
        wait_until_ready(page)
        recompute(page, WIDGET, "kv_bytes_per_token", model="mixtral-8x7b")
        # Instant navigation to a page this visit never opened, and back: both from the precache alone.
        page.click("a.md-footer__link--next")
        page.wait_for_url("**/03-drill-kv-bytes/")
        page.wait_for_selector('[data-kind="drill"][data-state="live"]')
        page.go_back()
        wait_until_live(page, WIDGET)
        recompute(page, WIDGET, "kv_bytes_per_token", model="llama-3.1-70b")
        # A page loaded again from the precache checks it again once idle ("waiting" until then; on a loaded
        # machine that is after the recompute): with the server gone, it must still end "ready".
        wait_until_offline_ready(page)
    finally:
        site_server.start()
