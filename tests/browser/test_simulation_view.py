"""The live simulation view: plays, pauses, resets and reruns, drawing the block map, while the page stays responsive."""

import pytest

from tests.browser.helpers import (assert_outputs, blockmap_colours, calc_final_view, chart_traces, choose,
                                   figure_traces, fill_in, open_live, play_to_done, wait_for_any_error)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/22-playground/"
SIM = '[data-widget="simulation.replica"]'


def frames(page):
    return page.evaluate(f"() => document.querySelector('{SIM}').simulation.frames()")


def test_simulation_plays_pauses_resets_and_reruns(visit):
    page = open_live(visit, PAGE, SIM)
    assert blockmap_colours(page, SIM, 97) > 1, "the build's block map is drawn before any run"
    # Live, the panel no longer tells the reader to serve the site: it says what Play does.
    assert page.locator(f"{SIM} [data-status]").inner_text().startswith("Live: press Play")

    # Long tasks on the main thread while the simulation runs (the worker does the work): printed, not asserted.
    page.evaluate("""() => { window.__longTasks = [];
        new PerformanceObserver(list => list.getEntries().forEach(e => window.__longTasks.push(e.duration)))
          .observe({type: 'longtask', buffered: false}); }""")
    choose(page, SIM, "preset", "step04-reserve-max")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'playing'")
    page.click(f'{SIM} [data-action="pause"]')
    assert page.get_attribute(SIM, "data-sim-state") == "paused"
    frames_paused = frames(page)
    page.wait_for_timeout(600)
    assert frames(page) == frames_paused
    play_to_done(page, SIM)

    expected = calc_final_view("simulation.replica", preset="step04-reserve-max")
    assert_outputs(page, SIM, expected, ("requests_completed", "ttft_p99_s", "running_max", "kv_token_share"))
    # The queue chart holds every point of the run, as CPython computes them.
    assert chart_traces(page, SIM, "load", "y")[0] == figure_traces(expected, "load", "y")[0]
    # Long tasks are a speed figure: `make bench` measures them; here they are only printed.
    print(f"long tasks during the run (ms): {sorted(page.evaluate('() => window.__longTasks'))[-5:]}")

    # Reset empties the run at once and starts it again. Clicked and read in one task: read later, a loaded
    # machine may have played a few frames of the new run already.
    frames_at_reset = page.evaluate(f"""() => {{ const widget = document.querySelector('{SIM}');
        widget.querySelector('[data-action="reset"]').click(); return widget.simulation.frames(); }}""")
    assert frames_at_reset == 0
    assert page.get_attribute(SIM, "data-sim-state") == "playing"
    page.wait_for_function(f"() => document.querySelector('{SIM}').simulation.frames() > 0")
    assert visit.console_errors == []


def test_a_scenario_that_cannot_run_says_why(visit):
    page = open_live(visit, PAGE)
    choose(page, SIM, "preset", "step14-scale-on-gpu-util")
    fill_in(page, SIM, "rate_per_s", "3", change=True)
    assert "rate_per_s cannot change step14-scale-on-gpu-util" in wait_for_any_error(page, SIM)
