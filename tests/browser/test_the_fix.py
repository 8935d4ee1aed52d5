"""Step 20 live in headless Chromium: the shared pool and the three pools replay as CPython runs them."""

import pytest

from tests.browser.helpers import assert_outputs, calc_final_view, open_live, play_to_done
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/20-the-fix/"
SIMS = '[data-kind="simulation"][data-widget="the_fix.fleet"]'


def test_before_and_after_replay_like_cpython(visit):
    page = open_live(visit, PAGE)
    before, after = page.locator(SIMS).nth(0), page.locator(SIMS).nth(1)
    assert before.get_attribute("data-state") in ("static", "live")
    # Before: the shared pool, given one more replica (a changed control reruns it).
    play_to_done(page, before, "shared_replicas", "4")
    expected = calc_final_view("the_fix.fleet", layout="shared", shared_replicas=4)
    assert_outputs(page, before, expected, ("ttft_p99_s", "chat_ttft_p99_s", "replica_hours", "cost_usd",
                                            "preemptions"))
    # After: the three pools as the preset has them.
    play_to_done(page, after)
    expected = calc_final_view("the_fix.fleet")
    assert_outputs(page, after, expected, ("ttft_p99_s", "chat_ttft_p99_s", "document_ttft_p99_s", "itl_p99_s",
                                           "replicas", "cost_usd"))
    assert visit.console_errors == []
