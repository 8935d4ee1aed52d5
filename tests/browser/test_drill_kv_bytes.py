"""Step 3 live in headless Chromium: every drill checks answers in the page and makes new numbers in the worker."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/03-drill-kv-bytes/"
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000  # one recompute; generous because CI machines run several browsers at once
DRILLS = ["bytes_per_token_drill", "conversation_drill", "conversations_fit_drill", "per_gpu_drill",
          "fp8_capacity_drill"]


def sel(name):
    return f'[data-widget="drill_kv_bytes.{name}"]'


def open_live(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    for name in DRILLS:
        page.wait_for_selector(f'{sel(name)}[data-state="live"]')
    return page


def check(page, name, answer):
    """Type an answer, press Check, and return (correct, verdict text)."""
    drill = sel(name)
    page.evaluate(f"() => delete document.querySelector('{drill} [data-output=verdict]').dataset.correct")
    page.fill(f'{drill} input[name="answer"]', answer)
    page.click(f'{drill} [data-action="check"]')
    page.wait_for_function(f"() => 'correct' in document.querySelector('{drill} [data-output=verdict]').dataset")
    verdict = page.locator(f'{drill} [data-output="verdict"]')
    return verdict.get_attribute("data-correct") == "true", verdict.inner_text()


def test_the_worked_cases_are_on_the_page_before_python_runs(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    for name in DRILLS:
        expected = framework.REGISTRY[f"drill_kv_bytes.{name}"].function(seed=0)
        assert page.locator(f'{sel(name)} [data-output="question"]').inner_text() == expected["question"]
        # The working stays hidden until the reader has tried.
        assert not page.locator(f"{sel(name)} [data-explanation]").is_visible()


def test_answers_in_any_byte_unit_and_plain_counts(visit):
    page = open_live(visit)
    for answer in ("128 KiB", "131072", "0.125 MiB"):
        correct, text = check(page, "bytes_per_token_drill", answer)
        assert correct and text.startswith("Right"), answer
    assert check(page, "conversation_drill", "500 MiB")[0]
    assert check(page, "conversations_fit_drill", "76")[0]
    assert check(page, "per_gpu_drill", "80 KiB")[0]
    assert check(page, "fp8_capacity_drill", "798,339")[0]
    correct, text = check(page, "conversations_fit_drill", "81")
    assert not correct and "76 conversations" in text
    assert page.locator(f'{sel("conversations_fit_drill")} [data-explanation]').is_visible()
    explanation = page.locator(f'{sel("conversations_fit_drill")} [data-output="explanation"]').inner_text()
    assert explanation == framework.REGISTRY["drill_kv_bytes.conversations_fit_drill"].function(seed=0)["explanation"]
    assert visit.console_errors == []


def test_a_typo_is_an_input_error_not_a_verdict(visit):
    page = open_live(visit)
    drill = sel("bytes_per_token_drill")
    page.fill(f'{drill} input[name="answer"]', "lots")
    page.click(f'{drill} [data-action="check"]')
    page.wait_for_function(f"() => document.querySelector('{drill} [data-error]').textContent.length > 0")
    assert "answer must be a number" in page.locator(f"{drill} [data-error]").inner_text()


@pytest.mark.parametrize("name", DRILLS)
def test_new_numbers_come_from_calc_in_the_worker(visit, name):
    page = open_live(visit)
    drill = sel(name)
    question = page.locator(f'{drill} [data-output="question"]').inner_text()
    for _ in range(3):  # a fresh seed can land on the same question; try a few
        old_seed = page.get_attribute(drill, "data-seed")
        page.click(f'{drill} [data-action="new"]')
        page.wait_for_function("([sel, old]) => document.querySelector(sel).dataset.seed !== old", arg=[drill, old_seed])
        if page.locator(f'{drill} [data-output="question"]').inner_text() != question:
            break
    seed = int(page.get_attribute(drill, "data-seed"))
    expected = framework.REGISTRY[f"drill_kv_bytes.{name}"].function(seed=seed)
    assert page.locator(f'{drill} [data-output="question"]').inner_text() == expected["question"]
    assert check(page, name, expected["answer_text"])[0]
    assert visit.console_errors == []
