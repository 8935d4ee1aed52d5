"""Step 3 live in headless Chromium: every drill checks answers in the page and makes new numbers in the worker."""

import pytest

from tests.browser.helpers import (calc_drill, check_answer, new_seed, open_live, output_text, wait_for_any_error,
                                   widget_selector)
from tests.browser.folds import open_folds, open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/03-drill-kv-bytes/"
DRILLS = ["bytes_per_token_drill", "conversation_drill", "conversations_fit_drill", "per_gpu_drill",
          "fp8_capacity_drill"]


def sel(name):
    return widget_selector(f"drill_kv_bytes.{name}")


def open_drills(visit):
    return open_live(visit, PAGE, *(sel(name) for name in DRILLS))


@pytest.fixture(scope="module")
def drills(module_visit):
    """The step's page with every drill live, booted once for the module: each test drives drills the tests before
    it left as it needs them (the seed-0 questions are answered before the tests that press "new numbers")."""
    open_drills(module_visit)
    return module_visit


def check(page, name, answer):
    """Type an answer, press Check, and return (correct, verdict text)."""
    return check_answer(page, sel(name), answer)


def test_the_worked_cases_are_on_the_page_before_python_runs(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    open_folds(page, *(sel(name) for name in DRILLS))
    for name in DRILLS:
        expected = calc_drill(f"drill_kv_bytes.{name}", 0)
        assert output_text(page, sel(name), "question") == expected["question"]
        # The working stays hidden until the reader has tried.
        assert not page.locator(f"{sel(name)} [data-explanation]").is_visible()


def test_answers_in_any_byte_unit_and_plain_counts(drills):
    visit, page = drills, drills.page
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
    explanation = output_text(page, sel("conversations_fit_drill"), "explanation")
    assert explanation == calc_drill("drill_kv_bytes.conversations_fit_drill", 0)["explanation"]
    assert visit.console_errors == []


def test_a_typo_is_an_input_error_not_a_verdict(drills):
    page = drills.page
    drill = sel("bytes_per_token_drill")
    page.fill(f'{drill} input[name="answer"]', "lots")
    page.click(f'{drill} [data-action="check"]')
    assert "answer must be a number" in wait_for_any_error(page, drill)


def test_an_unreadable_answer_clears_the_last_verdict(drills):
    """After "Right" for one answer, an answer calc cannot read shows its error alone, not beside the old verdict."""
    visit, page = drills, drills.page
    drill = sel("conversation_drill")
    correct, text = check(page, "conversation_drill", "0.5 GB")  # step 2's "about half a gigabyte"
    assert correct and text.startswith("Right")
    page.fill(f'{drill} input[name="answer"]', "half a gig")
    page.click(f'{drill} [data-action="check"]')
    assert "answer must be a number" in wait_for_any_error(page, drill)
    assert output_text(page, drill, "verdict") == ""
    assert page.locator(f"{drill} [data-output=verdict]").get_attribute("data-correct") is None
    correct, text = check(page, "conversation_drill", "0.4 GB")  # a wrong answer after the error: a verdict again
    assert not correct and "524,288,000" in text
    assert visit.console_errors == []


@pytest.mark.parametrize("name", DRILLS)
def test_new_numbers_come_from_calc_in_the_worker(drills, name):
    visit, page = drills, drills.page
    drill = sel(name)
    question = output_text(page, drill, "question")
    for _ in range(3):  # a fresh seed can land on the same question; try a few
        seed = new_seed(page, drill)
        if output_text(page, drill, "question") != question:
            break
    expected = calc_drill(f"drill_kv_bytes.{name}", seed)
    assert output_text(page, drill, "question") == expected["question"]
    assert check(page, name, expected["answer_text"])[0]
    assert visit.console_errors == []
