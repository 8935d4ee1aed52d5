"""Step 2 live in headless Chromium: it boots, recomputes like CPython, survives navigation, shows errors."""

import time

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
DRILL = '[data-widget="kv_cache_arithmetic.kv_bytes_drill"]'
READY_TIMEOUT_MS = 90_000


def wait_ready(page):
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)


def output_text(page, key):
    return page.locator(f'{WIDGET} [data-output="{key}"]').inner_text()


def test_widget_goes_live_and_recomputes_like_cpython(visit):
    page = visit.page
    started = time.perf_counter()
    page.goto(visit.url(PAGE))
    wait_ready(page)
    print(f"cold load to data-pyodide=ready: {time.perf_counter() - started:.2f} s")
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')

    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "llama-3.1-70b", "kv_dtype": "fp8"})
    page.select_option(f'{WIDGET} select[name="model"]', "llama-3.1-70b")
    page.select_option(f'{WIDGET} select[name="kv_dtype"]', "fp8")
    want = expected["outputs"]["kv_bytes_per_token"]["text"]
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent === want",
        arg=[f'{WIDGET} [data-output="kv_bytes_per_token"]', want],
    )
    assert output_text(page, "kv_bytes_per_request") == expected["outputs"]["kv_bytes_per_request"]["text"]
    # The chart holds the figure CPython computes for the same inputs.
    chart_y = page.evaluate(f"""() => document.querySelector('{WIDGET} [data-chart="kv_vs_context"]').data.map(t => t.y)""")
    assert chart_y == [trace["y"] for trace in expected["figures"]["kv_vs_context"]["data"]]
    assert visit.console_errors == []


def test_bad_input_shows_a_clear_message_and_the_page_keeps_working(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    wait_ready(page)
    page.select_option(f'{WIDGET} select[name="model"]', "custom")
    page.fill(f'{WIDGET} input[name="layers"]', "-5")
    error = page.locator(f"{WIDGET} [data-error]")
    error.wait_for(state="visible")
    page.wait_for_function(f"() => document.querySelector('{WIDGET} [data-error]').textContent.length > 0")
    assert error.inner_text() == "Layers (layers) must be a whole number between 1 and 1,000; got '-5'"
    assert page.get_attribute(WIDGET, "data-state") == "error"
    # A good value clears the message and recomputes.
    page.fill(f'{WIDGET} input[name="layers"]', "64")
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "custom", "layers": 64})
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent === want",
        arg=[f'{WIDGET} [data-output="kv_bytes_per_token"]', expected["outputs"]["kv_bytes_per_token"]["text"]],
    )
    assert error.inner_text() == ""


def test_worker_survives_instant_navigation(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    wait_ready(page)
    page.evaluate("() => { window.__sameDocument = true; }")
    page.wait_for_load_state("networkidle")
    page.click("a.md-footer__link--next")
    page.wait_for_url("**/03-drill-kv-bytes/")
    page.go_back()
    page.wait_for_url(f"**/{PAGE}")
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')
    started = time.perf_counter()
    page.select_option(f'{WIDGET} select[name="model"]', "mistral-7b")
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "mistral-7b"})
    page.wait_for_function(
        "([sel, want]) => document.querySelector(sel).textContent === want",
        arg=[f'{WIDGET} [data-output="kv_bytes_per_token"]', expected["outputs"]["kv_bytes_per_token"]["text"]],
    )
    print(f"after navigation, first live recompute: {time.perf_counter() - started:.3f} s")
    assert page.evaluate("() => window.__sameDocument === true"), "navigation reloaded the page"
    assert page.evaluate("() => window.calcRuntime.boots") == 1, "the worker was restarted"


def test_drill_checks_answers_in_any_byte_unit_and_makes_new_numbers(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    wait_ready(page)
    page.wait_for_selector(f'{DRILL}[data-state="live"]')
    verdict = page.locator(f'{DRILL} [data-output="verdict"]')
    for answer in ("128 KiB", "131072", "0.125 MiB"):
        page.fill(f'{DRILL} input[name="answer"]', answer)
        page.click(f'{DRILL} [data-action="check"]')
        page.wait_for_function(f"() => document.querySelector('{DRILL} [data-output=verdict]').dataset.correct === 'true'")
        assert verdict.inner_text().startswith("Right")
        page.evaluate(f"() => delete document.querySelector('{DRILL} [data-output=verdict]').dataset.correct")
    page.fill(f'{DRILL} input[name="answer"]', "64 KiB")
    page.click(f'{DRILL} [data-action="check"]')
    page.wait_for_function(f"() => document.querySelector('{DRILL} [data-output=verdict]').dataset.correct === 'false'")
    assert page.locator(f"{DRILL} [data-explanation]").is_visible()

    question = page.locator(f'{DRILL} [data-output="question"]').inner_text()
    page.click(f'{DRILL} [data-action="new"]')
    page.wait_for_function(
        "([sel, old]) => document.querySelector(sel).textContent !== old",
        arg=[f'{DRILL} [data-output="question"]', question],
    )
    seed = int(page.get_attribute(DRILL, "data-seed"))
    expected = framework.REGISTRY["kv_cache_arithmetic.kv_bytes_drill"].function(seed=seed)
    assert page.locator(f'{DRILL} [data-output="question"]').inner_text() == expected["question"]
