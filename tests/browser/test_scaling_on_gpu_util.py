"""Step 14 live in headless Chromium: GPU-Util against load recomputes like CPython; the GPU-Util fleet plays."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/14-scaling-on-gpu-util/"
WIDGET = '[data-widget="scaling_on_gpu_util.gpu_util_vs_load"]'
SIM = '[data-widget="scaling_on_gpu_util.gpu_util_autoscaler"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def test_gpu_util_widget_and_fleet_go_live(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')

    expected = framework.call("scaling_on_gpu_util.gpu_util_vs_load", {"rate_per_s": "0.2"})
    page.fill(f'{WIDGET} input[name="rate_per_s"]', "0.2")
    page.dispatch_event(f'{WIDGET} input[name="rate_per_s"]', "change")
    wait_text(page, f'{WIDGET} [data-output="gpu_util"]', expected["outputs"]["gpu_util"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{WIDGET} [data-output="{key}"]').inner_text() == item["text"], key

    # The fleet: play it to the end at 8x and compare with CPython's run of the same stream.
    # Fewer, longer frames keep the run short on a loaded machine; the numbers at the end are the same run's.
    page.evaluate(f"() => {{ document.querySelector('{SIM} input[name=frame_interval_s]').value = '30'; }}")
    entry, bound = framework.bind("scaling_on_gpu_util.gpu_util_autoscaler", {"frame_interval_s": "30"})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.click(f'{SIM} [data-action="play"]')
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    for key in ("replicas", "scale_changes", "ttft_p99_s", "replica_hours"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == final["outputs"][key]["text"], key
    assert final["outputs"]["scale_changes"]["text"] == "3 / 0"
    assert visit.console_errors == []
