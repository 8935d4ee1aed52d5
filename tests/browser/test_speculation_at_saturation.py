"""Step 10 live in headless Chromium: the speed-up against batch recomputes like CPython; the broken replica is fixed
by turning speculation off in the simulation."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/10-speculation-at-saturation/"
CURVE = '[data-widget="speculation_at_saturation.speedup_vs_batch"]'
SIM = '[data-widget="speculation_at_saturation.saturated"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_curve_and_simulation_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (CURVE, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("speculation_at_saturation.speedup_vs_batch", {"verify_tokens": "4"})
    page.fill(f'{CURVE} input[name="verify_tokens"]', "4")
    wait_text(page, f'{CURVE} [data-output="break_even_8b"]', expected["outputs"]["break_even_8b"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{CURVE} [data-output="{key}"]').inner_text() == item["text"], key
    ys = page.evaluate(f"() => document.querySelector('{CURVE} [data-chart=vs_batch]').data[0].y")
    assert ys == expected["figures"]["vs_batch"]["data"][0]["y"]

    with pytest.raises(CalcError) as caught:
        framework.call("speculation_at_saturation.speedup_vs_batch", {"verify_tokens": "4", "k": "5"})
    page.fill(f'{CURVE} input[name="k"]', "5")
    wait_text(page, f"{CURVE} [data-error]", str(caught.value))

    # Fix the broken replica: speculation off, played at 8x to the end.
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.select_option(f'{SIM} select[name="speculation"]', "off")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("speculation_at_saturation.saturated", {"speculation": "off"})
    for key in ("requests_completed", "throughput_output_tokens_per_s", "ttft_p99_s"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
