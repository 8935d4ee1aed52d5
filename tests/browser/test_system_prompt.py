"""Step 11 live in headless Chromium: the prefill-load widget recomputes like CPython and shows calc's
message for a bad value; the live simulation plays to the end with the same metrics as CPython."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, chart_traces, figure_traces, open_live,
                                   play_to_done, recompute, reject)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/11-system-prompt/"
LOAD = '[data-widget="system_prompt.prefill_load"]'
SIM = '[data-widget="system_prompt.replica"]'


def test_widget_and_simulation_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, LOAD, SIM)

    expected = recompute(page, LOAD, "prefill_s", system_prompt_tokens="1000")
    assert_outputs(page, LOAD, expected)
    assert chart_traces(page, LOAD, "ceiling", "y") == figure_traces(expected, "ceiling", "y")

    # A prompt too long for the engine: calc's own message, naming the field.
    reject(page, LOAD, question_tokens="4000", system_prompt_tokens="6000")

    # The fix, live: prefix caching on, played at 8x to the end.
    play_to_done(page, SIM, "prefix_caching", "on")
    expected = calc_final_view("system_prompt.replica", prefix_caching="on")
    assert_outputs(page, SIM, expected, ("requests_completed", "ttft_p99_s", "throughput_output_tokens_per_s",
                                         "prefix_cache_hit_rate"))
    assert visit.console_errors == []
