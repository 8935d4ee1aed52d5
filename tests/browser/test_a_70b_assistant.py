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
