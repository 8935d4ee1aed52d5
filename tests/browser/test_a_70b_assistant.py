"""Step 1 live in headless Chromium: the memory view recomputes like CPython and shows calc's messages."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/01-a-70b-assistant/"
VIEW = '[data-widget="a_70b_assistant.memory_view"]'
FLIGHT = '[data-widget="a_70b_assistant.tokens_in_flight"]'
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000  # one recompute; generous because CI machines run several browsers at once


def open_live(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f'{VIEW}[data-state="live"]')
    page.wait_for_selector(f'{FLIGHT}[data-state="live"]')
    return page


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def test_prerendered_numbers_are_the_lesson_figures(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    text = {key: page.locator(f'{VIEW} [data-output="{key}"]').inner_text()
            for key in ("weights_bytes_per_gpu", "kv_cache_bytes_per_gpu", "kv_cache_tokens", "max_requests")}
    assert text == {"weights_bytes_per_gpu": "35.3 GB", "kv_cache_bytes_per_gpu": "32.7 GB",
                    "kv_cache_tokens": "399,169 tokens", "max_requests": "311 (311.85x)"}


def test_memory_view_recomputes_like_cpython(visit):
    page = open_live(visit)
    args = {"weights": "fp8", "tp": "8", "memory_basis": "runtime"}
    expected = framework.call("a_70b_assistant.memory_view", args)
    page.select_option(f'{VIEW} select[name="weights"]', "fp8")
    page.select_option(f'{VIEW} select[name="memory_basis"]', "runtime")
    page.fill(f'{VIEW} input[name="tp"]', "8")
    wait_text(page, f'{VIEW} [data-output="kv_cache_tokens"]', expected["outputs"]["kv_cache_tokens"]["text"])
    page.wait_for_selector(f'{VIEW}[data-state="live"]')
    for key, item in expected["outputs"].items():
        assert page.locator(f'{VIEW} [data-output="{key}"]').inner_text() == item["text"], key
    bars = page.evaluate(f"""() => document.querySelector('{VIEW} [data-chart="memory"]').data.map(t => t.x)""")
    assert bars == [trace["x"] for trace in expected["figures"]["memory"]["data"]]
    cells = page.evaluate(f"""() => [...document.querySelectorAll('{VIEW} [data-table="terms"] tbody tr')]
                                     .map(r => [...r.children].map(c => c.textContent))""")
    assert cells == expected["tables"]["terms"]["rows"]
    assert visit.console_errors == []


@pytest.mark.parametrize("control, value, kind", [
    ("tp", "3", "input"),
    ("model", "deepseek-v3", "select"),
])
def test_a_bad_configuration_shows_calcs_message_then_recovers(visit, control, value, kind):
    page = open_live(visit)
    with pytest.raises(CalcError) as caught:
        framework.call("a_70b_assistant.memory_view", {control: value})
    if kind == "select":
        page.select_option(f'{VIEW} select[name="{control}"]', value)
    else:
        page.fill(f'{VIEW} input[name="{control}"]', value)
    wait_text(page, f"{VIEW} [data-error]", str(caught.value))
    assert page.get_attribute(VIEW, "data-state") == "error"
    # Back to the running example: the message clears and the numbers return.
    if kind == "select":
        page.select_option(f'{VIEW} select[name="{control}"]', "llama-3.1-70b")
    else:
        page.fill(f'{VIEW} input[name="{control}"]', "4")
    wait_text(page, f"{VIEW} [data-error]", "")
    wait_text(page, f'{VIEW} [data-output="kv_cache_tokens"]', "399,169 tokens")
    assert visit.console_errors == []


def test_tokens_in_flight_recomputes_like_cpython(visit):
    page = open_live(visit)
    expected = framework.call("a_70b_assistant.tokens_in_flight", {"prompt_tokens": "7936", "requests_in_flight": "60"})
    page.fill(f'{FLIGHT} input[name="prompt_tokens"]', "7936")
    page.fill(f'{FLIGHT} input[name="requests_in_flight"]', "60")
    wait_text(page, f'{FLIGHT} [data-output="waiting"]', expected["outputs"]["waiting"]["text"])
    assert page.locator(f'{FLIGHT} [data-output="requests_that_fit"]').inner_text() == "48"
    assert page.locator(f'{FLIGHT} [data-output="kv_use"]').inner_text() == expected["outputs"]["kv_use"]["text"]
    assert visit.console_errors == []
