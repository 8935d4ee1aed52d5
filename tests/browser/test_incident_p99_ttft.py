"""Step 19 live in headless Chromium: the incident dashboard replays another seed as CPython runs it; the drills check."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/19-incident-p99-ttft/"
SIM = '[data-kind="simulation"][data-widget="incident_p99_ttft.dashboard"]'
READY_TIMEOUT_MS = 90_000
RUN_TIMEOUT_MS = 120_000


def final_view(args):
    entry, bound = framework.bind("incident_p99_ttft.dashboard", args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_dashboard_replays_another_seed_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f"{SIM}[data-state=live]")
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.fill(f'{SIM} input[name="seed"]', "5")
    page.dispatch_event(f'{SIM} input[name="seed"]', "change")  # a changed control reruns the scenario
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=RUN_TIMEOUT_MS)

    expected = final_view({"seed": 5})
    for key in ("ttft_p99_s", "queue_depth_max", "kv_use_peak", "preemptions", "prompt_tokens_mean"):
        shown = page.locator(f'{SIM} [data-output="{key}"]').inner_text()
        assert shown == expected["outputs"][key]["text"], key
    tokens = page.evaluate(f"() => document.querySelector('{SIM} [data-chart=prompt]').data[0].y")
    assert tokens == expected["figures"]["prompt"]["data"][0]["y"]
    assert visit.console_errors == []


def test_drills_check_the_incidents_numbers(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    for name, answer, right in (("documents_per_minute_drill", "88", True), ("prefill_load_drill", "2.5", True),
                                ("prefill_load_drill", "3.5", False)):
        drill = f'[data-widget="incident_p99_ttft.{name}"]'
        page.wait_for_selector(f"{drill}[data-state=live]")
        page.evaluate(f"() => delete document.querySelector('{drill} [data-output=verdict]').dataset.correct")
        page.fill(f'{drill} input[name="answer"]', answer)
        page.click(f'{drill} [data-action="check"]')
        page.wait_for_function(f"() => 'correct' in document.querySelector('{drill} [data-output=verdict]').dataset")
        assert page.get_attribute(f"{drill} [data-output=verdict]", "data-correct") == str(right).lower(), name
    drill = '[data-widget="incident_p99_ttft.documents_per_minute_drill"]'
    before = page.locator(f"{drill} [data-output=question]").inner_text()
    page.click(f'{drill} [data-action="new"]')
    page.wait_for_function(f"([sel, old]) => document.querySelector(sel + ' [data-output=question]').textContent !== old",
                           arg=[drill, before])
    seed = int(page.get_attribute(drill, "data-seed"))
    expected = framework.REGISTRY["incident_p99_ttft.documents_per_minute_drill"].function(seed=seed)
    assert page.locator(f"{drill} [data-output=question]").inner_text() == expected["question"]
    assert visit.console_errors == []
