"""Step 15 live in headless Chromium: scale-up delay and warm headroom recompute like CPython; the queue fleet plays."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/15-scale-on-the-queue/"
DELAY = '[data-widget="scale_on_the_queue.scale_up_delay"]'
HEADROOM = '[data-widget="scale_on_the_queue.warm_headroom_view"]'
SIM = '[data-widget="scale_on_the_queue.queue_autoscaler"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def set_input(page, widget, name, value):
    page.fill(f'{widget} input[name="{name}"]', value)
    page.dispatch_event(f'{widget} input[name="{name}"]', "change")


def test_widgets_and_the_queue_fleet_go_live(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    page.wait_for_selector(f'{DELAY}[data-state="live"]')
    page.wait_for_selector(f'{HEADROOM}[data-state="live"]')

    expected = framework.call("scale_on_the_queue.scale_up_delay", {"tp": "8", "load_gb_per_s": "10"})
    set_input(page, DELAY, "tp", "8")
    set_input(page, DELAY, "load_gb_per_s", "10")
    wait_text(page, f'{DELAY} [data-output="delay_s"]', expected["outputs"]["delay_s"]["text"])
    assert page.locator(f'{DELAY} [data-output="weights_per_gpu"]').inner_text() == \
        expected["outputs"]["weights_per_gpu"]["text"]

    with pytest.raises(CalcError) as caught:
        framework.call("scale_on_the_queue.scale_up_delay", {"tp": "3"})
    set_input(page, DELAY, "tp", "3")
    wait_text(page, f"{DELAY} [data-error]", str(caught.value))

    expected = framework.call("scale_on_the_queue.warm_headroom_view", {"growth_pct_per_min": "60"})
    set_input(page, HEADROOM, "growth_pct_per_min", "60")
    wait_text(page, f'{HEADROOM} [data-output="headroom_replicas"]', expected["outputs"]["headroom_replicas"]["text"])
    assert page.locator(f'{HEADROOM} [data-output="headroom_usd_per_hour"]').inner_text() == \
        expected["outputs"]["headroom_usd_per_hour"]["text"]

    page.wait_for_selector(f'{SIM}[data-state="live"]')
    # Fewer, longer frames keep the run short on a loaded machine; the numbers at the end are the same run's.
    page.evaluate(f"() => {{ document.querySelector('{SIM} input[name=frame_interval_s]').value = '30'; }}")
    entry, bound = framework.bind("scale_on_the_queue.queue_autoscaler", {"frame_interval_s": "30"})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.click(f'{SIM} [data-action="play"]')
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    for key in ("replicas", "scale_changes", "ttft_p99_s", "replica_hours"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == final["outputs"][key]["text"], key
    assert final["outputs"]["replicas"]["text"] == "1 / 4 / 1"
    assert visit.console_errors == []
