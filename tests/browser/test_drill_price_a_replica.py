"""Step 17 live in headless Chromium: sustained tokens/s and the price recompute like CPython; the drills check and renew."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/17-drill-price-a-replica/"
TARGET = '[data-widget="drill_price_a_replica.sustained_at_target"]'
PRICE = '[data-widget="drill_price_a_replica.price_from_measurements"]'
DRILLS = ["price_drill", "latency_table_drill", "monthly_bill_drill"]


def sel(name):
    return f'[data-widget="drill_price_a_replica.{name}"]'


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def check(page, name, answer):
    drill = sel(name)
    page.evaluate(f"() => delete document.querySelector('{drill} [data-output=verdict]').dataset.correct")
    page.fill(f'{drill} input[name="answer"]', answer)
    page.click(f'{drill} [data-action="check"]')
    page.wait_for_function(f"() => 'correct' in document.querySelector('{drill} [data-output=verdict]').dataset")
    return page.get_attribute(f'{drill} [data-output="verdict"]', "data-correct") == "true"


def test_widgets_and_drills_go_live(visit):
    page = visit.page
    page.set_default_timeout(60_000)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=90_000)
    for widget in (TARGET, PRICE) + tuple(sel(n) for n in DRILLS):
        page.wait_for_selector(f'{widget}[data-state="live"]')

    expected = framework.call("drill_price_a_replica.sustained_at_target", {"itl_target_ms": "20"})
    page.fill(f'{TARGET} input[name="itl_target_ms"]', "20")
    page.dispatch_event(f'{TARGET} input[name="itl_target_ms"]', "change")
    wait_text(page, f'{TARGET} [data-output="prefill_tokens_per_s"]', expected["outputs"]["prefill_tokens_per_s"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{TARGET} [data-output="{key}"]').inner_text() == item["text"], key

    expected = framework.call("drill_price_a_replica.price_from_measurements",
                              {"usd_per_gpu_hour": "3.95", "sustained_tokens_per_s": "3000"})
    page.fill(f'{PRICE} input[name="usd_per_gpu_hour"]', "3.95")
    page.fill(f'{PRICE} input[name="sustained_tokens_per_s"]', "3000")
    page.dispatch_event(f'{PRICE} input[name="sustained_tokens_per_s"]', "change")
    wait_text(page, f'{PRICE} [data-output="usd_per_million_tokens"]',
              expected["outputs"]["usd_per_million_tokens"]["text"])

    assert check(page, "price_drill", "1.85")
    assert not check(page, "price_drill", "0.51")
    assert check(page, "latency_table_drill", "1.93 USD")
    assert check(page, "monthly_bill_drill", "22k")

    drill = sel("latency_table_drill")
    old_seed = page.get_attribute(drill, "data-seed")
    page.click(f'{drill} [data-action="new"]')
    page.wait_for_function("([sel, old]) => document.querySelector(sel).dataset.seed !== old", arg=[drill, old_seed])
    seed = int(page.get_attribute(drill, "data-seed"))
    question = framework.REGISTRY["drill_price_a_replica.latency_table_drill"].function(seed=seed)
    assert page.locator(f'{drill} [data-output="question"]').inner_text() == question["question"]
    assert check(page, "latency_table_drill", f"{question['answer']:.4f}")
    assert visit.console_errors == []
