"""Step 12 live in headless Chromium: the prompt-layout and before/after widgets recompute like CPython,
and the live simulation with the question first plays to the end with CPython's metrics."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/12-prefix-caching/"
LAYOUT = '[data-widget="prefix_caching.prompt_layout"]'
COMPARE = '[data-widget="prefix_caching.before_after"]'
SIM = '[data-widget="prefix_caching.replica"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_widgets_and_simulation_recompute_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (LAYOUT, COMPARE, SIM):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("prefix_caching.prompt_layout", {"layout": "timestamp-first", "block_size_tokens": "64"})
    page.select_option(f'{LAYOUT} select[name="block_size_tokens"]', "64")
    page.select_option(f'{LAYOUT} select[name="layout"]', "timestamp-first")
    wait_text(page, f'{LAYOUT} [data-output="hit_rate"]', expected["outputs"]["hit_rate"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{LAYOUT} [data-output="{key}"]').inner_text() == item["text"], key
    bars = page.evaluate(f"() => document.querySelector('{LAYOUT} [data-chart=layouts]').data.map(t => t.x)")
    assert bars == [trace["x"] for trace in expected["figures"]["layouts"]["data"]]

    # Both runs simulated again in the worker.
    expected = framework.call("prefix_caching.before_after", {"rate_per_s": "6"})
    page.fill(f'{COMPARE} input[name="rate_per_s"]', "6")
    wait_text(page, f'{COMPARE} [data-output="ttft_p99_before_s"]', expected["outputs"]["ttft_p99_before_s"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{COMPARE} [data-output="{key}"]').inner_text() == item["text"], key

    # The question first: the cache is on and nothing hits.
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.select_option(f'{SIM} select[name="layout"]', "variable-first")
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("prefix_caching.replica", {"layout": "variable-first"})
    assert expected["outputs"]["prefix_cache_hit_rate"]["text"] == "0%"
    for key in ("requests_completed", "ttft_p99_s", "prefix_cache_hit_rate", "queue_depth_max"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    assert visit.console_errors == []
