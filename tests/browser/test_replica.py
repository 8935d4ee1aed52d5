"""Issue 20's "Done when": the reader's replica carried through the lesson, in headless Chromium.

Play on step 1; follow a link to step 4 (instant navigation: no reload, the same worker) and apply its
change: the clock carries on, data-applied reads "4", the allocation is contiguous and at most 48 sequences
run. Go to step 5 by a full load and apply its change: "4,5", paged, more than 48 run. Reload: the clock does
not go back, "4,5" stays and the panel says it is paused until Play. Screenshots at 1280 and 390 px go to
build/screenshots/replica-*.png.

Issue 32: an Apply button reads "Applied · Undo" once its change is in force, a second click never applies it
twice, and a click on "Applied · Undo" takes it off; the opened panel leaves the footer's links clickable; the
panel names per-token latency ITL, as the pages do.
"""

import os

import pytest

from tests.browser.helpers import ROOT, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

STEP_1 = "lesson/01-a-70b-assistant/"
STEP_4 = "04-reserving-the-maximum/"
STEP_5 = "lesson/05-paged-attention/"
PANEL = "[data-replica]"
SHOTS = os.path.join(ROOT, "build", "screenshots")


def sim_time(page) -> float:
    return float(page.get_attribute(PANEL, "data-sim-time-s"))


def wait_for_time_past(page, t_s: float) -> None:
    page.wait_for_function("(t) => Number(document.querySelector('[data-replica]').dataset.simTimeS) > t", arg=t_s)


def applied_and_running(page, applied: str):
    page.wait_for_function("(want) => document.querySelector('[data-replica]').dataset.applied === want", arg=applied)


def button_reads(page, selector: str, text: str) -> None:
    page.wait_for_function("([sel, text]) => document.querySelector(sel).textContent === text", arg=[selector, text])


def saved_history(page) -> list[dict]:
    return page.evaluate("() => JSON.parse(localStorage.getItem('calc-replica')).history")


def status_text(page) -> str:
    return page.locator(f"{PANEL} .calc-replica__status").inner_text()


#: In the page: scrolled to its end, whatever element takes the centre of each footer link ("" when the link does).
FOOTER_COVERED = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  window.scrollTo(0, document.documentElement.scrollHeight);
  await frame(); await frame();
  return [...document.querySelectorAll('.md-footer__link')].map((link) => {
    const box = link.getBoundingClientRect(), hit = document.elementFromPoint(box.left + box.width / 2, box.top + box.height / 2);
    return link.contains(hit) ? '' : `${link.className} under ${hit ? hit.className : 'nothing'}`;
  }).filter(Boolean);
}"""


def test_the_reader_carries_one_replica_from_step_1_through_steps_4_and_5(visit):
    page = visit.page
    page.goto(visit.url(STEP_1))
    wait_until_ready(page)
    panel = page.locator(PANEL)
    assert panel.get_attribute("data-applied") == "" and float(panel.get_attribute("data-sim-time-s")) == 0
    page.locator(PANEL).get_by_role("button", name="Play", exact=True).click()
    wait_for_time_past(page, 2)

    # Step 4 by a link, as a reader follows it: instant navigation keeps the document (and its marker).
    page.evaluate("() => { window.replicaVisitMarker = 1; }")
    page.locator(f'.md-nav a[href$="{STEP_4}"]').first.click()
    page.wait_for_function("(slug) => location.pathname.endsWith(slug)", arg=STEP_4)
    assert page.evaluate("() => window.replicaVisitMarker") == 1, "step 4 was a full load, not instant navigation"
    assert page.locator(PANEL).count() == 1
    before_apply = sim_time(page)
    wait_for_time_past(page, before_apply)  # the clock carries on across the navigation
    page.locator('[data-apply-step="4"]').click()
    applied_and_running(page, "4")
    at_apply = sim_time(page)
    wait_for_time_past(page, at_apply + 20)  # long enough for the contiguous cap to fill
    assert panel.get_attribute("data-allocation") == "contiguous"
    assert int(panel.get_attribute("data-running")) <= 48
    assert sim_time(page) >= before_apply
    os.makedirs(SHOTS, exist_ok=True)
    page.locator(PANEL).get_by_role("button", name="My replica", exact=True).click()
    page.screenshot(path=os.path.join(SHOTS, "replica-1280-step4-open.png"))
    page.locator(PANEL).get_by_role("button", name="My replica", exact=True).click()
    page.screenshot(path=os.path.join(SHOTS, "replica-1280-step4.png"))

    # Step 5 by a full load: the panel comes back from localStorage where it was, then step 5 is applied.
    left_at = sim_time(page)
    page.goto(visit.url(STEP_5))
    assert page.evaluate("() => window.replicaVisitMarker") is None
    assert page.get_attribute(PANEL, "data-applied") == "4"
    assert sim_time(page) >= left_at - 1  # the saved time (frames are saved as they are shown)
    wait_until_ready(page)
    page.locator('[data-apply-step="5"]').click()
    applied_and_running(page, "4,5")
    button_reads(page, '[data-apply-step="5"]', "Applied \u00b7 Undo")
    page.wait_for_function("() => Number(document.querySelector('[data-replica]').dataset.running) > 48")
    assert page.get_attribute(PANEL, "data-allocation") == "paged"
    assert sim_time(page) >= left_at - 1

    # Reload: the clock does not go back, "4,5" stays, and the panel says it waits for Play.
    before_reload = sim_time(page)
    page.reload()
    assert page.get_attribute(PANEL, "data-applied") == "4,5"
    assert sim_time(page) >= before_reload - 1
    assert page.locator(PANEL).get_by_role("button", name="Play", exact=True).is_enabled()
    assert status_text(page).startswith("Paused since you left"), status_text(page)
    assert page.locator('[data-apply-step="5"]').inner_text() == "Applied \u00b7 Undo"  # from the saved replica
    wait_until_ready(page)
    page.locator(PANEL).get_by_role("button", name="Play", exact=True).click()
    wait_for_time_past(page, before_reload)
    assert "Paused" not in status_text(page)
    assert page.get_attribute(PANEL, "data-applied") == "4,5"
    assert page.get_attribute(PANEL, "data-allocation") == "paged"
    assert visit.console_errors == []


def test_the_panel_is_out_of_the_way_at_1280_and_a_drawer_at_390_px(browser, site_server):
    from tests.browser.conftest import Visit

    for width, height in ((1280, 900), (390, 844)):
        visit = Visit(browser, site_server, viewport={"width": width, "height": height})
        try:
            page = visit.page
            page.goto(visit.url(STEP_5))
            wait_until_ready(page)
            panel = page.locator(PANEL)
            box = panel.bounding_box()
            article = page.locator("article.md-content__inner").bounding_box()
            if width == 1280:  # beside the text, in the table of contents' column
                assert box["x"] >= article["x"] + article["width"] - 1
            else:  # docked at the bottom, the page's end scrolls clear of it
                assert box["y"] + box["height"] >= height - 1 and box["height"] < 120
                padding = page.evaluate("() => parseFloat(getComputedStyle(document.body).paddingBottom)")
                assert padding >= box["height"] - 1
            # Keyboard: the toggle opens it, Escape closes it and gives the focus back.
            toggle = page.locator(PANEL).get_by_role("button", name="My replica", exact=True)
            toggle.focus()
            page.keyboard.press("Enter")
            assert toggle.get_attribute("aria-expanded") == "true"
            page.locator(PANEL).get_by_role("button", name="Play", exact=True).click()
            wait_for_time_past(page, 3)
            page.screenshot(path=os.path.join(SHOTS, f"replica-{width}-open.png"))
            # Open, it leaves the footer's links clickable at the page's end, and names per-token latency ITL.
            assert page.evaluate(FOOTER_COVERED) == []
            latency = page.locator('[data-replica-view="latency"]')
            assert latency.locator("figcaption").inner_text() == "TTFT and ITL"
            assert "ITL p50" in latency.inner_text() and "TPOT" not in page.locator(PANEL).inner_text()
            page.screenshot(path=os.path.join(SHOTS, f"replica-{width}-open-end.png"))
            page.keyboard.press("Escape")
            assert toggle.get_attribute("aria-expanded") == "false"
            assert page.evaluate(FOOTER_COVERED) == []
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=os.path.join(SHOTS, f"replica-{width}.png"))
            # Hidden tab: it pauses.
            page.evaluate("""() => { Object.defineProperty(document, 'hidden', {value: true, configurable: true});
                                     document.dispatchEvent(new Event('visibilitychange')); }""")
            assert page.locator(PANEL).get_by_role("button", name="Pause", exact=True).is_disabled()
            assert visit.console_errors == [] and visit.external_requests == []
        finally:
            visit.close()


def test_the_panel_plays_frame_by_frame_and_times_its_own_frames(visit):
    """The panel plays with its views drawn, one frame at a time, and times its own handling of each frame
    (``window.calcReplica``). How long a frame may take (50 ms) is a speed target: ``make bench`` measures it
    (bench/bench_site.py, "replica panel, slowest frame while playing"); here, on a machine shared with the other
    tests, only that the panel plays and its timing is there."""
    page = visit.page
    page.goto(visit.url(STEP_1))
    wait_until_ready(page)
    page.wait_for_function("() => !calcRuntime.inFlight && calcRuntime.queue.length === 0"
                           " && document.querySelector('[data-chart][data-pending]') === null")
    page.locator(PANEL).get_by_role("button", name="My replica", exact=True).click()  # the views drawn too
    page.locator(PANEL).get_by_role("button", name="Play", exact=True).click()
    wait_for_time_past(page, 12)
    panel = page.evaluate("() => window.calcReplica")
    print(f"replica panel: slowest frame handling {panel['slowestFrameMs']:.1f} ms over {panel['frames']} frames")
    assert panel["frames"] >= 10 and 0 < panel["slowestFrameMs"] < 10_000
    assert visit.console_errors == []


def test_apply_reads_applied_undo_applies_once_and_a_second_click_undoes(visit):
    page = visit.page
    page.goto(visit.url(STEP_5))
    wait_until_ready(page)
    apply = page.locator('[data-apply-step="5"]')
    assert apply.inner_text() == "Apply to my replica" and apply.is_enabled()
    apply.dblclick()  # the second click lands while the first is on its way to the worker
    applied_and_running(page, "5")
    button_reads(page, '[data-apply-step="5"]', "Applied \u00b7 Undo")
    wait_for_time_past(page, sim_time(page) + 2)
    assert [(e["kind"], e.get("step")) for e in saved_history(page)] == [("apply", 5)]
    assert page.get_attribute(PANEL, "data-applied") == "5"

    apply.click()  # "Applied · Undo": takes the change off
    applied_and_running(page, "")
    button_reads(page, '[data-apply-step="5"]', "Apply to my replica")
    assert [(e["kind"], e.get("step")) for e in saved_history(page)] == [("apply", 5), ("undo", None)]
    assert visit.console_errors == []


STEP_10 = "lesson/10-speculation-at-saturation/"


def test_reset_to_this_step_then_apply_shows_what_moved_and_step_10_switches_speculation_off(visit):
    """'Reset to step 10' puts the lesson's replica of step 10 (its changes 4 to 10); Undo takes step 10's off
    (speculation back on, at step 9's light traffic); Apply puts it back and says, beside the button, what to watch
    and before -> after for the figures that move, as calc.replica.change_effect computes them."""
    from calc.replica import LESSON_CHANGES, ReaderReplica, change_effect

    page = visit.page
    page.goto(visit.url(STEP_10))
    wait_until_ready(page)
    page.locator(PANEL).get_by_role("button", name="My replica", exact=True).click()
    reset = page.locator(f"{PANEL} .calc-replica__reset")
    assert reset.inner_text() == "Reset to step 10"
    reset.click()
    applied_and_running(page, "4,5,6,7,9,10")
    assert saved_history(page)[-1]["kind"] == "reset"
    button_reads(page, '[data-apply-step="10"]', "Applied \u00b7 Undo")
    page.locator('[data-apply-step="10"]').click()  # Undo: speculation on again
    applied_and_running(page, "4,5,6,7,9")
    button_reads(page, '[data-apply-step="10"]', "Apply to my replica")
    page.locator('[data-apply-step="10"]').click()  # speculation off, from the page
    applied_and_running(page, "4,5,6,7,9,10")
    # Right after the redeploy the latency view says it is settling, not a new steady state.
    page.wait_for_function("() => /Redeploying/.test(document.querySelector('[data-replica-view=\"latency\"]').textContent)")
    effect = page.locator(".calc-replica-change .calc-replica-effect")
    page.wait_for_function("() => /\u2192/.test((document.querySelector('.calc-replica-effect') || {}).textContent || '')",
                           timeout=90_000)
    replica = ReaderReplica()
    for index, step in enumerate(s for s in sorted(LESSON_CHANGES) if s <= 9):
        replica = replica.apply(step, LESSON_CHANGES[step]["delta"], float(index))
    expected = change_effect(replica, 10, LESSON_CHANGES[10]["delta"])["text"].replace(" -> ", " \u2192 ")
    assert effect.inner_text() == f"Watch: {expected}."
    assert "ITL p99" in effect.inner_text()
    page.screenshot(path=os.path.join(SHOTS, "replica-1280-step10-effect.png"))
    assert visit.console_errors == []
