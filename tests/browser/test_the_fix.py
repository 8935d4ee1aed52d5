"""Step 20 live in headless Chromium: the shared pool and the three pools replay as CPython runs them."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/20-the-fix/"
SIMS = '[data-kind="simulation"][data-widget="the_fix.fleet"]'
READY_TIMEOUT_MS = 90_000
RUN_TIMEOUT_MS = 120_000


def final_view(args):
    entry, bound = framework.bind("the_fix.fleet", args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def sim_done(page, index):
    page.wait_for_function(f"() => document.querySelectorAll('{SIMS}')[{index}].dataset.simState === 'done'",
                           timeout=RUN_TIMEOUT_MS)


def test_before_and_after_replay_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    before, after = page.locator(SIMS).nth(0), page.locator(SIMS).nth(1)
    assert before.get_attribute("data-state") in ("static", "live")
    # Before: the shared pool, given one more replica (a changed control reruns it).
    before.locator('select[name="__speed"]').select_option("8")
    before.locator('input[name="shared_replicas"]').fill("4")
    before.locator('input[name="shared_replicas"]').dispatch_event("change")
    sim_done(page, 0)
    expected = final_view({"layout": "shared", "shared_replicas": 4})
    for key in ("ttft_p99_s", "chat_ttft_p99_s", "replica_hours", "cost_usd", "preemptions"):
        assert before.locator(f'[data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    # After: the three pools as the preset has them.
    after.locator('select[name="__speed"]').select_option("8")
    after.locator('[data-action="play"]').click()
    sim_done(page, 1)
    expected = final_view({})
    for key in ("ttft_p99_s", "chat_ttft_p99_s", "document_ttft_p99_s", "itl_p99_s", "replicas", "cost_usd"):
        assert after.locator(f'[data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
