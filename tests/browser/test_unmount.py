"""Widgets are released when their page goes away: the heap of a long visit does not grow with the pages seen.

The reader goes back and forth between steps 4 and 5 by Material's instant navigation (clicking the footer's
next and previous links, as a reader would: the document is never reloaded, so the worker and every script
stay, and each page's widgets are mounted from ``document$``). Each step holds a widget with charts and a live
simulation. After a forced garbage collection the page's JavaScript heap after 25 round trips must be within
1.2 times the heap after 5: a component that keeps a listener, a timer, an observer or a Plotly chart of a page
the reader has left keeps that whole page's DOM alive, and the heap grows with every visit.

What grew last (heap snapshots taken through CDP, compared object by object): Material 9.8.2's toc.follow
subscribed to viewport$ for every page and never let go (3 more subscribers a page, each holding its page's
elements), 1.16x; with toc.follow replaced by the runtime's own component and every departed page taken
apart, 1.07-1.11x. What still grows is mostly V8's optimized code (warm-up, smaller with every round trip).
"""

import pytest

from tests.browser.helpers import wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

STEP_4 = "lesson/04-reserving-the-maximum/"
STEP_4_WIDGETS = ('[data-widget="reserving_the_maximum.reservation"]', '[data-widget="simulation.replica"]')
STEP_5_WIDGETS = ('[data-widget="paged_attention.allocation_shares"]', '[data-widget="paged_attention.side_by_side"]')
FIRST_ROUND_TRIPS = 5
LAST_ROUND_TRIPS = 25
MAX_GROWTH = 1.2

# The page is settled when its widgets are live, no chart waits to be drawn and the worker has no request left.
# It is polled by a function that returns a boolean: a wait that returned an element (wait_for_selector)
# would leave Playwright holding a handle to it, and keep the page it belongs to alive.
SETTLED = """(widgets) => widgets.every(sel => document.querySelector(sel + '[data-state="live"]') !== null)
    && document.querySelector('[data-chart][data-pending]') === null
    && !calcRuntime.inFlight && calcRuntime.queue.length === 0"""


def _settle(page, widgets) -> None:
    page.wait_for_function(SETTLED, arg=list(widgets))


def _go(page, direction: str, widgets) -> None:
    """Click the footer's next or previous link (instant navigation) and wait until the new page has settled."""
    before = page.evaluate("() => location.pathname")
    page.click(f"a.md-footer__link--{direction}")
    page.wait_for_function("(before) => location.pathname !== before", arg=before)
    _settle(page, widgets)


GARBAGE_COLLECTIONS = 6


def _heap_bytes(cdp) -> int:
    """The JavaScript heap in use after forced garbage collections.

    Several: V8 drops the bytecode of a function that has not run for a few collections (it compiles it again
    if it runs), so after one collection the figure still holds the code of whatever ran last, Plotly's
    drawing of the last page included, and varies by a megabyte or two from one measurement to the next."""
    for _ in range(GARBAGE_COLLECTIONS):
        cdp.send("HeapProfiler.collectGarbage")
    return int(cdp.send("Runtime.getHeapUsage")["usedSize"])


def _round_trips(page, count: int) -> None:
    for _ in range(count):
        _go(page, "next", STEP_5_WIDGETS)
        _go(page, "prev", STEP_4_WIDGETS)


def test_the_heap_does_not_grow_with_the_pages_seen(visit):
    page = visit.page
    page.goto(visit.url(STEP_4))
    wait_until_ready(page)
    _settle(page, STEP_4_WIDGETS)
    page.evaluate("() => { window.__sameDocument = true; }")  # gone if a navigation reloads the document
    cdp = page.context.new_cdp_session(page)

    _round_trips(page, FIRST_ROUND_TRIPS)
    heap_after_first = _heap_bytes(cdp)
    _round_trips(page, LAST_ROUND_TRIPS - FIRST_ROUND_TRIPS)
    heap_after_last = _heap_bytes(cdp)

    # Every step was an instant navigation: one document, one worker boot for the whole visit.
    assert page.evaluate("() => window.__sameDocument === true")
    assert page.evaluate("() => performance.getEntriesByType('navigation').length") == 1
    assert page.evaluate("() => calcRuntime.boots") == 1
    growth = heap_after_last / heap_after_first
    print(f"JS heap after {FIRST_ROUND_TRIPS} round trips: {heap_after_first / 1e6:.1f} MB, "
          f"after {LAST_ROUND_TRIPS}: {heap_after_last / 1e6:.1f} MB ({growth:.2f}x)")
    assert growth <= MAX_GROWTH, (f"the heap grew {growth:.2f}x from {heap_after_first / 1e6:.1f} MB to "
                                  f"{heap_after_last / 1e6:.1f} MB: widgets of pages left behind are kept alive")
    # The runtime holds only this page's components: each of its widgets once, nothing of the pages left.
    mounted = page.evaluate("() => calcRuntime.mounted().map(c => [c.kind, c.element.isConnected])")
    assert all(connected for _, connected in mounted), mounted
    widget_kinds = sorted(kind for kind, _ in mounted if kind in ("widget", "drill", "simulation"))
    assert widget_kinds == sorted(page.evaluate("() => [...document.querySelectorAll('[data-widget]')].map(w => w.dataset.kind)"))
    assert visit.console_errors == []
