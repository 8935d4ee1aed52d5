"""Step 15 live in headless Chromium: scale-up delay and warm headroom recompute like CPython; the queue fleet plays."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, calc_view, open_live, play_to_done, recompute, reject,
                                   set_value_silently, wait_until_live)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/15-scale-on-the-queue/"
DELAY = '[data-widget="scale_on_the_queue.scale_up_delay"]'
HEADROOM = '[data-widget="scale_on_the_queue.warm_headroom_view"]'
SIM = '[data-widget="scale_on_the_queue.queue_autoscaler"]'


ARMS = '[data-widget="scale_on_the_queue.three_arms"]'

# Every call the page sends its worker, from the page's first script on (see the last test).
RECORD_CALLS = """(() => { const post = Worker.prototype.postMessage;
    window.__calcCalls = [];
    Worker.prototype.postMessage = function (m) { try { const r = typeof m === 'string' ? JSON.parse(m) : m;
        if (r && r.fn) window.__calcCalls.push(r.fn); } catch (e) {} return post.apply(this, arguments); }; })()"""


@pytest.fixture(scope="module")
def live(module_visit):
    """The step's page booted once for the three tests below, recording every call it sends its worker: the
    charts are read first, then the widgets and the fleet are driven, then the calls are checked."""
    module_visit.page.add_init_script(RECORD_CALLS)
    open_live(module_visit, PAGE, DELAY, HEADROOM, SIM, ARMS)
    return module_visit


def test_three_arms_show_what_each_autoscaler_fixes(live):
    """The primary charts (GPU-Util, the queue, the queue with warm headroom) are the build's CPython view, drawn."""
    arms = ARMS
    visit, page = live, live.page
    expected = calc_view("scale_on_the_queue.three_arms")
    assert_outputs(page, arms, expected)
    for key in ("ttft", "replicas"):
        want = [t["name"] for t in expected["figures"][key]["data"]]
        page.wait_for_function("""([sel, key, want]) => { const gd = document.querySelector(sel + ` [data-chart="${key}"]`);
            return gd && gd.data && JSON.stringify(gd.data.map(t => t.name)) === JSON.stringify(want); }""",
                               arg=[arms, key, want])
    assert visit.console_errors == []


def test_widgets_and_the_queue_fleet_go_live(live):
    visit, page = live, live.page

    expected = recompute(page, DELAY, "delay_s", tp="8", load_gb_per_s="10", change=True)
    assert_outputs(page, DELAY, expected, ["weights_per_gpu"])

    reject(page, DELAY, tp="3", change=True)

    expected = recompute(page, HEADROOM, "headroom_replicas", growth_pct_per_min="60", change=True)
    assert_outputs(page, HEADROOM, expected, ["headroom_usd_per_hour"])

    wait_until_live(page, SIM)
    # Fewer, longer frames keep the run short on a loaded machine; the numbers at the end are the same run's.
    set_value_silently(page, SIM, "frame_interval_s", "30")
    final = calc_final_view("scale_on_the_queue.queue_autoscaler", frame_interval_s="30")
    play_to_done(page, SIM)
    assert_outputs(page, SIM, final, ("replicas", "scale_changes", "ttft_p99_s", "replica_hours"))
    assert final["outputs"]["replicas"]["text"] == "1 / 4 / 1"
    assert visit.console_errors == []


def test_a_widget_without_inputs_is_not_rerun_in_the_worker(live):
    """The three-arm charts have no controls: the page never asks the worker to run their fleets again, from its
    boot through the tests before (which drove every other widget on it) until the worker is idle."""
    page = live.page
    page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length")
    calls = page.evaluate("window.__calcCalls")
    assert "scale_on_the_queue.three_arms" not in calls, calls
    assert "scale_on_the_queue.scale_up_delay" in calls, calls  # the page's other widgets did call the worker
