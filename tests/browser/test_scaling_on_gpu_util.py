"""Step 14 live in headless Chromium: GPU-Util against load recomputes like CPython; the GPU-Util fleet plays."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, open_live, play_to_done, recompute,
                                   set_value_silently)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/14-scaling-on-gpu-util/"
WIDGET = '[data-widget="scaling_on_gpu_util.gpu_util_vs_load"]'
SIM = '[data-widget="scaling_on_gpu_util.gpu_util_autoscaler"]'


def test_gpu_util_widget_and_fleet_go_live(visit):
    page = open_live(visit, PAGE, WIDGET)

    expected = recompute(page, WIDGET, "gpu_util", rate_per_s="0.2", change=True)
    assert_outputs(page, WIDGET, expected)

    # The fleet: play it to the end at 8x and compare with CPython's run of the same stream.
    # Fewer, longer frames keep the run short on a loaded machine; the numbers at the end are the same run's.
    set_value_silently(page, SIM, "frame_interval_s", "30")
    final = calc_final_view("scaling_on_gpu_util.gpu_util_autoscaler", frame_interval_s="30")
    play_to_done(page, SIM)
    assert_outputs(page, SIM, final, ("replicas", "scale_changes", "ttft_p99_s", "replica_hours"))
    assert final["outputs"]["scale_changes"]["text"] == "3 / 0"
    assert visit.console_errors == []
