"""Step 10 live in headless Chromium: the speed-up against batch recomputes like CPython; the broken replica is fixed
by turning speculation off in the simulation."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_error, calc_final_view, chart_traces, figure_traces, fill_in,
                                   open_live, play_to_done, recompute, wait_for_error)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/10-speculation-at-saturation/"
CURVE = '[data-widget="speculation_at_saturation.speedup_vs_batch"]'
SIM = '[data-widget="speculation_at_saturation.saturated"]'


def test_curve_and_simulation_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, CURVE, SIM)

    expected = recompute(page, CURVE, "break_even_8b", verify_tokens="4")
    assert_outputs(page, CURVE, expected)
    assert chart_traces(page, CURVE, "vs_batch", "y")[0] == figure_traces(expected, "vs_batch", "y")[0]

    message = calc_error("speculation_at_saturation.speedup_vs_batch", verify_tokens="4", k="5")
    fill_in(page, CURVE, "k", "5")
    wait_for_error(page, CURVE, message)

    # Fix the broken replica: speculation off, played at 8x to the end.
    play_to_done(page, SIM, "speculation", "off")
    expected = calc_final_view("speculation_at_saturation.saturated", speculation="off")
    assert_outputs(page, SIM, expected, ("requests_completed", "throughput_output_tokens_per_s", "ttft_p99_s"))
    assert visit.console_errors == []
