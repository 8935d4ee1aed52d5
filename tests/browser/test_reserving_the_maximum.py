"""Step 4 live in headless Chromium: the reservation calculator recomputes like CPython, the contiguous run plays."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, chart_traces, figure_traces, fill_in, open_live,
                                   output_text, play_to_done, recompute, reject, wait_for_output)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/04-reserving-the-maximum/"
CALC = '[data-widget="reserving_the_maximum.reservation"]'
SIM = '[data-kind="simulation"]'


def test_calculator_and_simulation_go_live_like_cpython(visit):
    page = open_live(visit, PAGE, CALC)

    # The calculator: a longer max length, recomputed in the worker, equals CPython's view.
    expected = recompute(page, CALC, "contiguous_requests", max_model_len="32768")
    assert_outputs(page, CALC, expected)
    assert chart_traces(page, CALC, "cache", "x") == figure_traces(expected, "cache", "x")

    # A max length shorter than the request: calc's message, then recovery.
    reject(page, CALC, max_model_len="1024")
    fill_in(page, CALC, "max_model_len", "8192")
    wait_for_output(page, CALC, "contiguous_requests", "48")

    # The break-it simulation: contiguous allocation plays to the end with CPython's numbers.
    assert page.input_value(f'{SIM} select[name="allocation"]') == "contiguous"
    play_to_done(page, SIM)
    expected = calc_final_view("simulation.replica", preset="step04-reserve-max", rate_per_s=6, allocation="contiguous")
    assert_outputs(page, SIM, expected, ("running_max", "queue_depth_max", "ttft_p99_s", "kv_token_share"))
    assert output_text(page, SIM, "running_max") == "48 requests"
    assert visit.console_errors == []
