"""Step 5 live in headless Chromium: allocation shares recompute like CPython; both allocations play side by side."""

import pytest

from tests.browser.helpers import (assert_outputs, blockmap_colours, calc_final_view, chart_traces, figure_traces,
                                   open_live, play_to_done, recompute, table_rows, wait_until_live)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/05-paged-attention/"
SHARES = '[data-widget="paged_attention.allocation_shares"]'
SIM = '[data-widget="paged_attention.side_by_side"]'


def test_shares_and_side_by_side_simulation_go_live_like_cpython(visit):
    page = open_live(visit, PAGE, SHARES)

    expected = recompute(page, SHARES, "paged_share", block_size="256")
    assert_outputs(page, SHARES, expected)
    assert table_rows(page, SHARES, "policies") == expected["tables"]["policies"]["rows"]

    # Both allocations, one run: the panel ends on CPython's numbers, the charts hold its series.
    wait_until_live(page, SIM)
    assert blockmap_colours(page, SIM, 31) > 3, "the build's two block maps are drawn before any run"
    play_to_done(page, SIM)
    expected = calc_final_view("paged_attention.side_by_side")
    assert_outputs(page, SIM, expected, ("c_running_max", "p_running_max", "c_ttft_p99_s", "p_ttft_p99_s",
                                         "c_kv_token_share", "p_kv_token_share"))
    assert chart_traces(page, SIM, "queue", "y") == figure_traces(expected, "queue", "y")
    assert visit.console_errors == []
