"""Step 2 live in headless Chromium: it boots, recomputes like CPython, survives navigation, shows errors."""

import time

import pytest

from tests.browser.helpers import (assert_outputs, calc_drill, calc_view, chart_traces, check_answer, choose,
                                   figure_traces, fill_in, new_question, open_live, output_text, recompute,
                                   wait_for_any_error, wait_for_output, wait_until_live, wait_until_ready)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
DRILL = '[data-widget="kv_cache_arithmetic.kv_bytes_drill"]'


def test_widget_goes_live_and_recomputes_like_cpython(visit):
    page = visit.page
    started = time.perf_counter()
    page.goto(visit.url(PAGE))
    wait_until_ready(page)
    print(f"cold load to data-pyodide=ready: {time.perf_counter() - started:.2f} s")
    wait_until_live(page, WIDGET)

    expected = recompute(page, WIDGET, "kv_bytes_per_token", model="llama-3.1-70b", kv_dtype="fp8")
    assert_outputs(page, WIDGET, expected, ["kv_bytes_per_request"])
    # The chart holds the figure CPython computes for the same inputs.
    assert chart_traces(page, WIDGET, "kv_vs_context", "y") == figure_traces(expected, "kv_vs_context", "y")
    assert visit.console_errors == []


def test_bad_input_shows_a_clear_message_and_the_page_keeps_working(visit):
    page = open_live(visit, PAGE)
    choose(page, WIDGET, "model", "custom")
    fill_in(page, WIDGET, "layers", "-5")
    error = page.locator(f"{WIDGET} [data-error]")
    error.wait_for(state="visible")
    assert wait_for_any_error(page, WIDGET) == "Layers (layers) must be a whole number between 1 and 1,000; got '-5'"
    assert page.get_attribute(WIDGET, "data-state") == "error"
    # A good value clears the message and recomputes.
    fill_in(page, WIDGET, "layers", "64")
    expected = calc_view("kv_cache_arithmetic.kv_per_token", model="custom", layers=64)
    wait_for_output(page, WIDGET, "kv_bytes_per_token", expected["outputs"]["kv_bytes_per_token"]["text"])
    assert error.inner_text() == ""


def test_worker_survives_instant_navigation(visit):
    page = open_live(visit, PAGE)
    page.evaluate("() => { window.__sameDocument = true; }")
    page.wait_for_load_state("networkidle")
    page.click("a.md-footer__link--next")
    page.wait_for_url("**/03-drill-kv-bytes/")
    page.go_back()
    page.wait_for_url(f"**/{PAGE}")
    wait_until_live(page, WIDGET)
    started = time.perf_counter()
    choose(page, WIDGET, "model", "mistral-7b")
    expected = calc_view("kv_cache_arithmetic.kv_per_token", model="mistral-7b")
    wait_for_output(page, WIDGET, "kv_bytes_per_token", expected["outputs"]["kv_bytes_per_token"]["text"])
    print(f"after navigation, first live recompute: {time.perf_counter() - started:.3f} s")
    assert page.evaluate("() => window.__sameDocument === true"), "navigation reloaded the page"
    assert page.evaluate("() => window.calcRuntime.boots") == 1, "the worker was restarted"


def test_drill_checks_answers_in_any_byte_unit_and_makes_new_numbers(visit):
    page = open_live(visit, PAGE, DRILL)
    for answer in ("128 KiB", "131072", "0.125 MiB"):
        correct, text = check_answer(page, DRILL, answer)
        assert correct and text.startswith("Right"), answer
    assert not check_answer(page, DRILL, "64 KiB")[0]
    assert page.locator(f"{DRILL} [data-explanation]").is_visible()

    seed = new_question(page, DRILL)
    expected = calc_drill("kv_cache_arithmetic.kv_bytes_drill", seed)
    assert output_text(page, DRILL, "question") == expected["question"]
