"""Step 18 live in headless Chromium: pool sizing and the TP/PP split recompute as CPython does."""

import pytest

from tests.browser.helpers import (assert_outputs, chart_traces, figure_traces, fill_in, open_live, output_text,
                                   recompute, wait_for_any_error, wait_for_output, wait_until_live)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/18-disaggregation/"
SIZING = '[data-widget="disaggregation.pool_sizing"]'
SPLIT = '[data-widget="disaggregation.tp_or_pp"]'


def test_both_widgets_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, SIZING, SPLIT)

    # Wait for the outputs that depend on the last field typed (the answer) and on the first (the rate).
    expected = recompute(page, SIZING, "decode_batch", rate_per_s="37", prompt_tokens="3008", output_tokens="400")
    wait_for_output(page, SIZING, "prefill_replicas", expected["outputs"]["prefill_replicas"]["text"])
    wait_until_live(page, SIZING)
    assert_outputs(page, SIZING, expected)
    assert chart_traces(page, SIZING, "stall", "y")[0] == figure_traces(expected, "stall", "y")[0]

    expected = recompute(page, SPLIT, "itl_pp_s", servers="3")
    assert_outputs(page, SPLIT, expected, ["note"])
    assert output_text(page, SPLIT, "itl_tp_s") == "not possible"
    assert_outputs(page, SPLIT, expected, ["kv_pp"])

    fill_in(page, SPLIT, "gpus_per_server", "3")
    assert "gpus_per_server" in wait_for_any_error(page, SPLIT)
    assert visit.console_errors == []
