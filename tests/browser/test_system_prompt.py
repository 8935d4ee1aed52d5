"""Step 11 live in headless Chromium: the prefill-load widget recomputes like CPython and shows calc's
message for a bad value; the live simulation plays to the end with the same metrics as CPython."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/11-system-prompt/"
LOAD = '[data-widget="system_prompt.prefill_load"]'
SIM = '[data-widget="system_prompt.replica"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_widget_and_simulation_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (LOAD, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("system_prompt.prefill_load", {"system_prompt_tokens": "1000"})
    page.fill(f'{LOAD} input[name="system_prompt_tokens"]', "1000")
    wait_text(page, f'{LOAD} [data-output="prefill_s"]', expected["outputs"]["prefill_s"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{LOAD} [data-output="{key}"]').inner_text() == item["text"], key
    curve = page.evaluate(f"() => document.querySelector('{LOAD} [data-chart=ceiling]').data.map(t => t.y)")
    assert curve == [trace["y"] for trace in expected["figures"]["ceiling"]["data"]]

    # A prompt too long for the engine: calc's own message, naming the field.
    with pytest.raises(CalcError) as err:
        framework.call("system_prompt.prefill_load", {"system_prompt_tokens": "6000", "question_tokens": "4000"})
    page.fill(f'{LOAD} input[name="question_tokens"]', "4000")
    page.fill(f'{LOAD} input[name="system_prompt_tokens"]', "6000")
    wait_text(page, f"{LOAD} [data-error]", str(err.value))

    # The fix, live: prefix caching on, played at 8x to the end.
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.select_option(f'{SIM} select[name="prefix_caching"]', "on")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("system_prompt.replica", {"prefix_caching": "on"})
    for key in ("requests_completed", "ttft_p99_s", "throughput_output_tokens_per_s", "prefix_cache_hit_rate"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
