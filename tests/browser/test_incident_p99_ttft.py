"""Step 19 live in headless Chromium: the incident dashboard replays another seed as CPython runs it; the drills check."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_drill, calc_final_view, chart_traces, check_answer,
                                   figure_traces, new_question, open_live, output_text, play_to_done, wait_until_live,
                                   widget_selector)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/19-incident-p99-ttft/"
SIM = '[data-kind="simulation"][data-widget="incident_p99_ttft.dashboard"]'


@pytest.fixture(scope="module")
def live(module_visit):
    """The step's page booted once for the dashboard's and the drills' tests (they drive different blocks)."""
    open_live(module_visit, PAGE, SIM)
    return module_visit


def test_dashboard_replays_another_seed_like_cpython(live):
    visit, page = live, live.page
    play_to_done(page, SIM, "seed", "5")  # a changed control reruns the scenario
    expected = calc_final_view("incident_p99_ttft.dashboard", seed=5)
    assert_outputs(page, SIM, expected, ("ttft_p99_s", "queue_depth_max", "kv_use_peak", "preemptions",
                                         "prompt_tokens_mean"))
    assert chart_traces(page, SIM, "prompt", "y")[0] == figure_traces(expected, "prompt", "y")[0]
    assert visit.console_errors == []


def test_drills_check_the_incidents_numbers(live):
    visit, page = live, live.page
    for name, answer, right in (("documents_per_minute_drill", "69", True), ("prefill_load_drill", "2.2", True),
                                ("prefill_load_drill", "3.5", False)):
        drill = widget_selector(f"incident_p99_ttft.{name}")
        wait_until_live(page, drill)
        assert check_answer(page, drill, answer)[0] == right, name
    drill = widget_selector("incident_p99_ttft.documents_per_minute_drill")
    seed = new_question(page, drill)
    expected = calc_drill("incident_p99_ttft.documents_per_minute_drill", seed)
    assert output_text(page, drill, "question") == expected["question"]
    assert visit.console_errors == []


def test_on_a_phone_the_panels_stay_side_by_side_and_share_one_crosshair(browser, site_server):
    """At 390 px the eight panels are two to a row (not eight stacked charts), and a moment hovered in one panel is
    shown in every other, so the metrics can still be read side by side in time."""
    from tests.browser.conftest import Visit

    phone = Visit(browser, site_server, viewport={"width": 390, "height": 844})
    try:
        page = open_live(phone, PAGE, SIM)
        charts = page.locator(f"{SIM} [data-chart] .main-svg").first
        charts.wait_for()
        boxes = page.eval_on_selector_all(f"{SIM} .calc-chart", "els => els.map(e => e.getBoundingClientRect())"
                                          ".map(r => [Math.round(r.left), Math.round(r.top), Math.round(r.width)])")
        assert len(boxes) == 8
        rows = {}
        for left, top, width in boxes:
            rows.setdefault(top, []).append((left, width))
        assert len(rows) == 4 and all(len(r) == 2 for r in rows.values()), boxes  # two to a row
        assert all(w < 195 for _, _, w in boxes)
        assert page.evaluate("document.documentElement.scrollWidth") <= 390  # nothing wider than the phone
        # Hover the middle of the queue panel: every other panel shows the same moment.
        queue = page.locator(f'{SIM} [data-chart="queue"] .nsewdrag').first
        queue.scroll_into_view_if_needed()
        box = queue.bounding_box()
        page.mouse.move(box["x"] + box["width"] * 0.5, box["y"] + box["height"] * 0.5)
        page.wait_for_function(f"""() => [...document.querySelectorAll('{SIM} [data-chart]')]
            .filter(gd => gd.querySelector('.hoverlayer') && gd.querySelector('.hoverlayer').childElementCount > 0)
            .length >= 6""")
        assert phone.console_errors == []
    finally:
        phone.close()
