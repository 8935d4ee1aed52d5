"""Step 17 live in headless Chromium: sustained tokens/s and the price recompute like CPython; the drills check and renew."""

import pytest

from tests.browser.helpers import (assert_outputs, calc_drill, calc_view, check_answer, fill_in, new_seed, open_live,
                                   output_text, recompute, wait_for_output, widget_selector)
from tests.browser.folds import open_live  # opens the folds holding the widgets first

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/17-drill-price-a-replica/"
TARGET = '[data-widget="drill_price_a_replica.sustained_at_target"]'
PRICE = '[data-widget="drill_price_a_replica.price_from_measurements"]'
DRILLS = ["price_drill", "latency_table_drill", "monthly_bill_drill"]


def sel(name):
    return widget_selector(f"drill_price_a_replica.{name}")


def check(page, name, answer):
    return check_answer(page, sel(name), answer)[0]


def test_widgets_and_drills_go_live(visit):
    page = open_live(visit, PAGE, TARGET, PRICE, *(sel(n) for n in DRILLS))

    expected = recompute(page, TARGET, "prefill_tokens_per_s", itl_target_ms="20", change=True)
    assert_outputs(page, TARGET, expected)

    expected = calc_view("drill_price_a_replica.price_from_measurements", usd_per_gpu_hour="3.95",
                         sustained_tokens_per_s="3000")
    fill_in(page, PRICE, "usd_per_gpu_hour", "3.95")
    fill_in(page, PRICE, "sustained_tokens_per_s", "3000", change=True)
    wait_for_output(page, PRICE, "usd_per_million_tokens", expected["outputs"]["usd_per_million_tokens"]["text"])

    assert check(page, "price_drill", "1.85")
    assert not check(page, "price_drill", "0.51")
    assert check(page, "latency_table_drill", "1.93 USD")
    assert check(page, "monthly_bill_drill", "22k")

    seed = new_seed(page, sel("latency_table_drill"))
    question = calc_drill("drill_price_a_replica.latency_table_drill", seed)
    assert output_text(page, sel("latency_table_drill"), "question") == question["question"]
    assert check(page, "latency_table_drill", f"{question['answer']:.4f}")
    assert visit.console_errors == []
