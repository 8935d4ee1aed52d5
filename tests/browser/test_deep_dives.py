"""The deep dives live in headless Chromium: every widget recomputes like CPython, a simulation plays to the end.

One visit walks the seven pages with Material's footer links (instant navigation,
so Pyodide boots once), changes one control of every widget and waits for an
output to show what ``calc`` computes in CPython for the same inputs.
"""

import pytest

from tests.browser.helpers import (assert_outputs, calc_final_view, calc_view, open_live, output_text, play_to_done,
                                   set_control, wait_for_output, wait_until_live, widget_selector)

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

RECOMPUTE_TIMEOUT_MS = 45_000
RUN_TIMEOUT_MS = 90_000

# page: [(widget, control, value, output)] - one control change per widget, the output it must update.
PAGES = {
    "deep-dives/memory-equation/": [("deep_memory_equation.budget", "users", "8", "max_context_tokens")],
    "deep-dives/roofline/": [("deep_roofline.roofline", "batch", "64", "decode_intensity"),
                             ("deep_roofline.latency", "batch", "16", "itl_s")],
    "deep-dives/quantization/": [("deep_quantization.formats", "model", "llama-3.1-8b", "int4_total"),
                                 ("deep_quantization.rounding", "scheme", "nf4", "relative_rms_error")],
    "deep-dives/attention/": [("deep_attention.kv_per_kind", "kv_dtype", "fp8", "gqa_bytes"),
                              ("deep_attention.flash_attention", "prompt_tokens", "8192", "ratio")],
    "deep-dives/serving-engines/": [("deep_serving_engines.conversation", "turns", "5", "with")],
    "deep-dives/trade-off-triangle/": [("deep_trade_off_triangle.triangle", "itl_target_ms", "12", "best_bf16")],
    "deep-dives/economics/": [("deep_economics.inference_bill", "output_tokens", "512", "cents_per_query"),
                              ("deep_economics.search_claim", "output_tokens", "350", "bill"),
                              ("deep_economics.paged_claim", "max_model_len", "4096", "max")],
}


def test_every_deep_dive_widget_recomputes_like_cpython(visit):
    paths = list(PAGES)
    page = open_live(visit, paths[0])
    for index, path in enumerate(paths):
        if index:
            page.click("a.md-footer__link--next")
            page.wait_for_url(f"**/{path}")
        for widget, control, value, key in PAGES[path]:
            root = widget_selector(widget)
            wait_until_live(page, root, timeout_ms=RECOMPUTE_TIMEOUT_MS)
            expected = calc_view(widget, **{control: value})["outputs"][key]["text"]
            assert output_text(page, root, key) != expected, f"{widget}: the change must move {key}"
            set_control(page, root, control, value, change=True)
            wait_for_output(page, root, key, expected, RECOMPUTE_TIMEOUT_MS)
    assert page.evaluate("() => window.calcRuntime.boots") == 1, "navigation restarted the worker"
    assert visit.console_errors == []


def test_static_batching_simulation_plays_to_the_cpython_result(visit):
    page = open_live(visit, "deep-dives/serving-engines/")
    sims = page.locator('[data-kind="simulation"]')
    assert sims.count() == 2
    static = sims.nth(0)
    play_to_done(page, static, "requests", "60", timeout_ms=RUN_TIMEOUT_MS)
    final = calc_final_view("deep_serving_engines.engine", batching="static", requests="60", frame_interval_s="5")
    assert_outputs(page, static, final, ("requests_completed", "ttft_p50_s", "running_max", "kv_token_share"))
    assert visit.console_errors == []


def test_trade_off_operating_point_plays_to_the_cpython_result(visit):
    page = open_live(visit, "deep-dives/trade-off-triangle/")
    sim = page.locator('[data-widget="deep_trade_off_triangle.operating_point"]')
    play_to_done(page, sim, "weights", "fp8", timeout_ms=RUN_TIMEOUT_MS)
    final = calc_final_view("deep_trade_off_triangle.operating_point", weights="fp8")
    assert_outputs(page, sim, final, ("requests_completed", "ttft_p50_s", "itl_p50_s", "queue_depth_max"))
    assert visit.console_errors == []
