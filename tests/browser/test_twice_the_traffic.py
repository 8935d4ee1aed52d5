"""Step 6 live in headless Chromium: the roofline points move with batch, the step cost recomputes, the run plays."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, chart_traces, figure_traces, open_live, output_text,
                                   play_to_done, recompute)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/06-twice-the-traffic/"
ROOF = '[data-widget="twice_the_traffic.roofline"]'
COST = '[data-widget="twice_the_traffic.step_cost"]'
SIM = '[data-kind="simulation"]'


def test_roofline_step_cost_and_simulation_go_live_like_cpython(visit):
    page = open_live(visit, PAGE, ROOF)

    # The roofline: batch 1 moves the decode points down the bandwidth slope, as CPython places them.
    expected = recompute(page, ROOF, "decode_intensity", batch="1")
    assert_outputs(page, ROOF, expected)
    assert chart_traces(page, ROOF, "roofline", "x", "y") == figure_traces(expected, "roofline", "x", "y")

    # The step cost with fp8 weights.
    expected = recompute(page, COST, "step_ms", weights="fp8")
    assert_outputs(page, COST, expected)

    # Twice the traffic, live, with a smaller cap on the batch (a control change reruns the scenario).
    play_to_done(page, SIM, "max_num_seqs", "64")
    expected = calc_final_view("simulation.replica", preset="step06-twice-the-traffic", rate_per_s=12, max_num_seqs=64)
    assert_outputs(page, SIM, expected, ("running_max", "queue_depth_max", "itl_p50_s",
                                         "throughput_output_tokens_per_s"))
    assert output_text(page, SIM, "running_max") == "64 requests"
    assert visit.console_errors == []
