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
    # The run ends drained, yet the block map holds its fullest moment, the build's (issue 32: not an empty pool).
    page.wait_for_function("([sel, want]) => document.querySelector(sel + ' canvas[data-blockmap]')"
                           ".getAttribute('aria-label') === want", arg=[SIM, expected["blockmap"]["summary"]])
    assert expected["blockmap"]["used_blocks"] + expected["blockmap"]["reserved_unused_blocks"] > 20_000
    assert visit.console_errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_the_block_map_sits_under_play_with_the_steps_numbers_and_the_rest_folded(browser, site_server, width):
    """Picture first (issue 32): the block map right under the Play bar, the four numbers the step teaches beside
    it (under it on a phone), and the simulation's other numbers in a closed "All numbers" fold."""
    from tests.browser.conftest import Visit

    visit = Visit(browser, site_server, viewport={"width": width, "height": 900})
    try:
        page = visit.page
        page.goto(visit.url(PAGE))
        box = lambda selector: page.locator(selector).first.bounding_box()  # noqa: E731
        play, canvas = box(f'{SIM} [data-action="play"]'), box(f"{SIM} canvas[data-blockmap]")
        key = box(f"{SIM} .calc-outputs--key")
        assert 0 <= canvas["y"] - (play["y"] + play["height"]) < 80, (play, canvas)
        if width >= 1000:
            assert key["x"] >= canvas["x"] + canvas["width"] and abs(key["y"] - canvas["y"]) < 40, (canvas, key)
        else:
            assert key["y"] > canvas["y"] + canvas["height"], (canvas, key)
        keys = page.eval_on_selector_all(f"{SIM} .calc-outputs--key [data-output]", "els => els.map(e => e.dataset.output)")
        assert keys == ["running_max", "queue_depth_max", "kv_token_share", "ttft_p99_s"]
        folded = page.eval_on_selector_all(f"{SIM} details.calc-all-numbers:not([open]) [data-output]",
                                           "els => els.map(e => e.dataset.output)")
        expected = calc_final_view("simulation.replica", preset="step04-reserve-max", rate_per_s=6, allocation="contiguous")
        assert sorted(folded + keys) == sorted(expected["outputs"]) and not set(folded) & set(keys)
        assert visit.console_errors == []
    finally:
        visit.close()
