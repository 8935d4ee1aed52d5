"""Step 15 live in headless Chromium: scale-up delay and warm headroom recompute like CPython; the queue fleet plays."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, open_live, play_to_done, recompute, reject,
                                   set_value_silently, wait_until_live)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/15-scale-on-the-queue/"
DELAY = '[data-widget="scale_on_the_queue.scale_up_delay"]'
HEADROOM = '[data-widget="scale_on_the_queue.warm_headroom_view"]'
SIM = '[data-widget="scale_on_the_queue.queue_autoscaler"]'


def test_widgets_and_the_queue_fleet_go_live(visit):
    page = open_live(visit, PAGE, DELAY, HEADROOM, SIM)

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


def test_three_arms_show_what_each_autoscaler_fixes(visit):
    """The primary chart: GPU-Util, the queue and the queue with warm headroom on one chart, switched in the worker."""
    arms = '[data-widget="scale_on_the_queue.three_arms"]'
    page = open_live(visit, PAGE, arms)
    expected = recompute(page, arms, "headroom_ttft_p99_s", metric="replicas", change=True)
    assert_outputs(page, arms, expected, ["queue_replica_hours", "gpu_replica_hours", "headroom_ttft_p99_s"])
    # the chart now draws the replicas each autoscaler paid for, as CPython computed them
    want = [t["y"][-1] for t in expected["figures"]["arms"]["data"]]
    page.wait_for_function("""([sel, want]) => { const gd = document.querySelector(sel + ' [data-chart="arms"]');
        return gd && gd.data && gd.data.length === 3 && gd.data.every((t, i) => t.y[t.y.length - 1] === want[i]); }""",
                           arg=[arms, want])
    assert visit.console_errors == []
