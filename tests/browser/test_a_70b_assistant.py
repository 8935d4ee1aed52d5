"""Step 1 live in headless Chromium: the memory view recomputes like CPython and shows calc's messages."""

import pytest

from tests.browser.helpers import (assert_outputs, chart_traces, figure_traces, open_live, output_text, output_texts,
                                   recompute, reject, set_control, table_rows, wait_for_error, wait_for_output,
                                   wait_until_live)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/01-a-70b-assistant/"
VIEW = '[data-widget="a_70b_assistant.memory_view"]'
FLIGHT = '[data-widget="a_70b_assistant.tokens_in_flight"]'


def test_prerendered_numbers_are_the_lesson_figures(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    text = output_texts(page, VIEW, ("weights_bytes_per_gpu", "kv_cache_bytes_per_gpu", "kv_cache_tokens",
                                     "max_requests", "vllm_max_concurrency"))
    assert text == {"weights_bytes_per_gpu": "35.3 GB", "kv_cache_bytes_per_gpu": "32.7 GB",
                    "kv_cache_tokens": "399,169 tokens", "max_requests": "311", "vllm_max_concurrency": "48.73x"}


@pytest.fixture(scope="module")
def live(module_visit):
    """The step's page with both widgets live, booted once: the bad-configuration tests put the running example
    back, so they run first; then each widget is driven once (tokens in flight before the memory view, which
    leaves fp8 weights on 8 GPUs)."""
    open_live(module_visit, PAGE, VIEW, FLIGHT)
    return module_visit


@pytest.mark.parametrize("control, value, kind", [
    ("tp", "3", "input"),
    ("model", "deepseek-v3", "select"),
])
def test_a_bad_configuration_shows_calcs_message_then_recovers(live, control, value, kind):
    visit, page = live, live.page
    assert page.locator(f'{VIEW} {kind}[name="{control}"]').count() == 1
    reject(page, VIEW, **{control: value})
    assert page.get_attribute(VIEW, "data-state") == "error"
    # Back to the running example: the message clears and the numbers return.
    set_control(page, VIEW, control, "llama-3.1-70b" if kind == "select" else "4")
    wait_for_error(page, VIEW, "")
    wait_for_output(page, VIEW, "kv_cache_tokens", "399,169 tokens")
    assert visit.console_errors == []


def test_tokens_in_flight_recomputes_like_cpython(live):
    visit, page = live, live.page
    expected = recompute(page, FLIGHT, "waiting", prompt_tokens="7936", requests_in_flight="60")
    assert output_text(page, FLIGHT, "requests_that_fit") == "48"
    assert_outputs(page, FLIGHT, expected, ["kv_use"])
    assert visit.console_errors == []


def test_memory_view_recomputes_like_cpython(live):
    visit, page = live, live.page
    expected = recompute(page, VIEW, "kv_cache_tokens", weights="fp8", memory_basis="runtime", tp="8")
    wait_until_live(page, VIEW)
    assert_outputs(page, VIEW, expected)
    assert chart_traces(page, VIEW, "memory", "x") == figure_traces(expected, "memory", "x")
    assert table_rows(page, VIEW, "terms") == expected["tables"]["terms"]["rows"]
    assert visit.console_errors == []


@pytest.mark.parametrize("width", [1280, 390])
def test_the_memory_bars_come_before_the_controls_with_four_numbers_and_the_rest_folded(browser, site_server, width):
    """Picture first (issue 32): the memory bars open the widget, the four numbers the step teaches beside them
    (under them on a phone), then the nine controls; the other outputs sit in a closed "All numbers" fold."""
    from tests.browser.conftest import Visit

    visit = Visit(browser, site_server, viewport={"width": width, "height": 900})
    try:
        page = visit.page
        page.goto(visit.url(PAGE))
        chart = page.locator(f"{VIEW} .calc-picture [data-chart]").first.bounding_box()
        key = page.locator(f"{VIEW} .calc-outputs--key").bounding_box()
        first_control = page.locator(f"{VIEW} .calc-control").first.bounding_box()
        assert page.locator(f"{VIEW} .calc-control").count() == 9
        assert chart["y"] + chart["height"] <= first_control["y"] and key["y"] + key["height"] <= first_control["y"]
        if width >= 1000:
            assert key["x"] >= chart["x"] + chart["width"] - 1, (chart, key)
        keys = page.eval_on_selector_all(f"{VIEW} .calc-outputs--key [data-output]", "els => els.map(e => e.dataset.output)")
        assert keys == ["weights_bytes_per_gpu", "kv_cache_bytes_per_gpu", "kv_cache_tokens", "max_requests"]
        folded = page.eval_on_selector_all(f"{VIEW} details.calc-all-numbers:not([open]) [data-output]",
                                           "els => els.map(e => e.dataset.output)")
        assert len(folded) == 8 and "vllm_max_concurrency" in folded and not set(folded) & set(keys)
        assert visit.console_errors == []
    finally:
        visit.close()
