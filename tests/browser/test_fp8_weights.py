"""Step 7 live in headless Chromium: both widgets recompute like CPython, and the fp8 replay of step 6 plays to the end."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, chart_traces, figure_traces, open_live,
                                   play_to_done, recompute)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/07-fp8-weights/"
MEMORY = '[data-widget="fp8_weights.memory_before_after"]'
STEP = '[data-widget="fp8_weights.step_before_after"]'
SIM = '[data-widget="fp8_weights.twice_the_traffic"]'


def test_widgets_and_simulation_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, MEMORY, STEP, SIM)

    expected = recompute(page, MEMORY, "kv_tokens_after", weights="int4")
    assert_outputs(page, MEMORY, expected)

    expected = recompute(page, STEP, "step_before", batch="256")
    assert_outputs(page, STEP, expected)
    assert chart_traces(page, STEP, "vs_batch", "y")[1] == figure_traces(expected, "vs_batch", "y")[1]

    # The simulation: back to bf16 weights (step 6's queue), played at 8x to the end.
    play_to_done(page, SIM, "weights", "bf16")
    expected = calc_final_view("fp8_weights.twice_the_traffic", weights="bf16")
    assert_outputs(page, SIM, expected, ("requests_completed", "ttft_p99_s", "queue_depth_max"))
    assert visit.console_errors == []
