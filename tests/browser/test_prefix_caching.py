"""Step 12 live in headless Chromium: the prompt-layout and before/after widgets recompute like CPython,
and the live simulation with the question first plays to the end with CPython's metrics."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, chart_traces, figure_traces, open_live,
                                   play_to_done, recompute)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/12-prefix-caching/"
LAYOUT = '[data-widget="prefix_caching.prompt_layout"]'
COMPARE = '[data-widget="prefix_caching.before_after"]'
SIM = '[data-widget="prefix_caching.replica"]'


def test_widgets_and_simulation_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, LAYOUT, COMPARE, SIM)

    expected = recompute(page, LAYOUT, "hit_rate", block_size_tokens="64", layout="timestamp-first")
    assert_outputs(page, LAYOUT, expected)
    assert chart_traces(page, LAYOUT, "layouts", "x") == figure_traces(expected, "layouts", "x")

    # Both runs simulated again in the worker.
    expected = recompute(page, COMPARE, "ttft_p99_before_s", rate_per_s="6")
    assert_outputs(page, COMPARE, expected)

    # The question first: the cache is on and nothing hits.
    play_to_done(page, SIM, "layout", "variable-first")
    expected = calc_final_view("prefix_caching.replica", layout="variable-first")
    assert expected["outputs"]["prefix_cache_hit_rate"]["text"] == "0%"
    assert_outputs(page, SIM, expected, ("requests_completed", "ttft_p99_s", "prefix_cache_hit_rate",
                                         "queue_depth_max"))
    assert visit.console_errors == []
