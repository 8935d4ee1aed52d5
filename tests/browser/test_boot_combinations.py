"""The boot's combinations that other browser tests do not reach (docs/assets/runtime/head.js's header lists them
all; CONTRIBUTING.md, "The boot", maps each to its test): the worker started by calc-runtime.js after instant
navigation from a page without the head script, boot facts the worker cannot read, no Worker at all, and
Material's search worker held back by the head script's stand-in, then started, with what Material posted to it,
by Python's ready, by a focus on the search box, or after 15 s."""

from __future__ import annotations

import pytest

from tests.browser.helpers import recompute, wait_until_live, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
FIRST_STEP = "lesson/01-a-70b-assistant/"
FIRST_STEP_WIDGET = '[data-widget="a_70b_assistant.memory_view"]'
RESTORED = "restored from the site's snapshot"
# Every worker the page really starts, with when (ms since navigation): an init script runs before the head
# script, so the head script's "real" Worker is this recorder.
RECORD_WORKERS = """(() => {
  const Real = window.Worker;
  window.startedWorkers = [];
  window.Worker = function (url, options) {
    window.startedWorkers.push({ url: String(url), name: (options && options.name) || null, at: performance.now() });
    return new Real(url, options);
  };
  window.Worker.prototype = Real.prototype;
})();"""
SEARCH_STARTS = "() => window.startedWorkers.filter((w) => /\\/workers\\/search\\./.test(w.url))"
SEARCH_STARTED = "() => window.startedWorkers.some((w) => /\\/workers\\/search\\./.test(w.url))"
PYTHON_STARTS = "() => window.startedWorkers.filter((w) => /\\/runtime\\/(worker|boot-inflate-worker)\\.mjs$/.test(w.url))"


def _live_answer(page) -> None:
    """A model the page does not show at first: the answer comes from the worker, not the build."""
    wait_until_live(page, WIDGET)
    recompute(page, WIDGET, "kv_bytes_per_token", model="qwen2.5-72b")


def test_after_instant_navigation_from_a_page_without_widgets_calc_runtime_starts_the_worker(visit):
    page = visit.page
    page.add_init_script(RECORD_WORKERS)
    page.goto(visit.url(""))  # the home page: no widget, so no head script
    assert page.locator("script[data-calc-worker]").count() == 0
    page.evaluate("() => { window.fullLoadMarker = 1; }")  # gone if the click makes a full load
    page.locator(f'.md-content a[href$="{FIRST_STEP}"]').first.click()  # the home page's "start here"
    page.wait_for_url(f"**/{FIRST_STEP}")
    wait_until_ready(page)
    wait_until_live(page, FIRST_STEP_WIDGET)
    boot = page.evaluate("() => ({marker: window.fullLoadMarker, detail: calcRuntime.detail, boots: calcRuntime.boots})")
    assert boot["marker"] == 1, "the click made a full page load: instant navigation was off"
    # calc-runtime.js's own start: worker.mjs alone and unnamed (no head script, so no helpers from the page);
    # the worker read the manifest and restored the snapshot it names.
    started = page.evaluate(PYTHON_STARTS)
    assert [(w["url"].rsplit("/", 1)[-1], w["name"]) for w in started] == [("worker.mjs", None)], started
    assert RESTORED in boot["detail"] and boot["boots"] == 1


def test_boot_facts_the_worker_cannot_read_mean_a_boot_from_the_manifest_without_helpers(visit):
    page = visit.page
    page.add_init_script(RECORD_WORKERS)

    def damaged(route):
        response = route.fetch()
        body = response.text()
        assert 'data-calc-boot="{' in body
        route.fulfill(response=response, body=body.replace('data-calc-boot="{', 'data-calc-boot="{damaged', 1))

    visit.context.route(f"**/{PAGE}", damaged)
    page.goto(visit.url(PAGE))
    wait_until_ready(page)
    _live_answer(page)
    # The head script started the Python worker alone (no helpers), named by the attribute's text, which
    # worker.mjs cannot read: it asked the manifest, and restored the snapshot that names.
    started = page.evaluate(PYTHON_STARTS)
    assert [w["url"].rsplit("/", 1)[-1] for w in started] == ["worker.mjs"], started
    assert started[0]["name"].startswith("{damaged")
    assert RESTORED in page.evaluate("() => calcRuntime.detail")


def test_without_worker_the_page_keeps_its_built_numbers_and_says_why(visit):
    page = visit.page
    page.add_init_script("delete window.Worker;")
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=error]")
    assert page.evaluate("() => window.calcEarlyWorker === undefined && window.calcSearchRelease === undefined")
    assert "cannot run Web Workers" in page.evaluate("() => calcRuntime.detail")
    assert page.get_attribute(WIDGET, "data-state") == "static"


@pytest.mark.search
def test_the_search_worker_waits_for_python_and_then_answers_what_material_asked(visit):
    page = visit.page
    page.add_init_script(RECORD_WORKERS)
    page.goto(visit.url(PAGE))
    wait_until_ready(page)
    page.wait_for_function(SEARCH_STARTED)
    (search,) = page.evaluate(SEARCH_STARTS)
    ready_at = page.evaluate("() => calcRuntime.readyAt")
    assert search["at"] >= ready_at, (search, ready_at)  # started by calcSearchRelease, not before
    # What Material posted to the stand-in (the index to build) reached the real worker: a search answers.
    page.keyboard.press("/")
    page.locator("input.md-search__input").press_sequentially("paged attention", delay=30)
    page.wait_for_selector(".md-search-result__item", timeout=30_000)
    assert page.locator(".md-search-result__item").count() > 0


def _python_held(visit) -> None:
    """Python never gets ready: worker.mjs is never answered."""
    visit.context.route("**/assets/runtime/worker.mjs", lambda route: None)


@pytest.mark.search
def test_a_focus_on_the_search_box_starts_the_search_worker_before_python_is_ready(visit):
    page = visit.page
    _python_held(visit)
    page.add_init_script(RECORD_WORKERS)
    page.goto(visit.url(PAGE))
    page.wait_for_load_state("load")
    assert page.evaluate(SEARCH_STARTS) == []  # held back
    page.keyboard.press("/")  # Material's shortcut focuses the search box
    page.wait_for_function(SEARCH_STARTED, timeout=5_000)
    assert page.evaluate("() => calcRuntime.state") == "loading"
    page.locator("input.md-search__input").press_sequentially("paged attention", delay=30)
    page.wait_for_selector(".md-search-result__item", timeout=30_000)


def test_without_python_or_a_focus_the_search_worker_starts_after_15_s(visit):
    page = visit.page
    _python_held(visit)
    page.add_init_script(RECORD_WORKERS)
    page.goto(visit.url(PAGE))
    page.wait_for_function(SEARCH_STARTED, timeout=40_000)
    (search,) = page.evaluate(SEARCH_STARTS)
    assert 15_000 <= search["at"] < 30_000, search
    assert page.evaluate("() => calcRuntime.state") == "loading"
