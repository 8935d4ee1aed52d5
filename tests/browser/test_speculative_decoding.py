"""Step 9 live in headless Chromium: acceptance and k recompute like CPython; the light-traffic simulation plays."""

import pytest

from tests.browser.helpers import assert_outputs, calc_final_view, open_live, output_text, play_to_done, recompute
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/09-speculative-decoding/"
GAIN = '[data-widget="speculative_decoding.gain"]'
DIST = '[data-widget="speculative_decoding.same_distribution"]'
SIM = '[data-widget="speculative_decoding.light_traffic"]'


def test_widgets_and_simulation_recompute_like_cpython(visit):
    page = open_live(visit, PAGE, GAIN, DIST, SIM)

    expected = recompute(page, GAIN, "tokens_per_step", acceptance="0.9", k="8")
    assert_outputs(page, GAIN, expected)

    recompute(page, DIST, "acceptance", mismatch="0.9")
    assert output_text(page, DIST, "max_difference") == "0"

    play_to_done(page, SIM, "speculation", "off")
    expected = calc_final_view("speculative_decoding.light_traffic", speculation="off")
    assert_outputs(page, SIM, expected, ("requests_completed", "itl_p50_s", "compute_utilization"))
    assert visit.console_errors == []
