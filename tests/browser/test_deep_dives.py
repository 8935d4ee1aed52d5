"""The deep dives live in headless Chromium: every widget recomputes like CPython, a simulation plays to the end.

One visit walks the seven pages with Material's footer links (instant navigation,
so Pyodide boots once), changes one control of every widget and waits for an
output to show what ``calc`` computes in CPython for the same inputs.
"""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

READY_TIMEOUT_MS = 90_000
RECOMPUTE_TIMEOUT_MS = 45_000

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


def set_control(page, widget, control, value):
    selector = f'[data-widget="{widget}"] [name="{control}"]'
    if page.eval_on_selector(selector, "e => e.tagName") == "SELECT":
        page.select_option(selector, value)
    else:
        page.fill(selector, value)
        page.dispatch_event(selector, "change")


def expect_output(page, widget, key, want):
    page.wait_for_function(
        "([sel, want]) => { const e = document.querySelector(sel); return e && e.textContent === want; }",
        arg=[f'[data-widget="{widget}"] [data-output="{key}"]', want], timeout=RECOMPUTE_TIMEOUT_MS)


def test_every_deep_dive_widget_recomputes_like_cpython(visit):
    page = visit.page
    paths = list(PAGES)
    page.goto(visit.url(paths[0]))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    for index, path in enumerate(paths):
        if index:
            page.click("a.md-footer__link--next")
            page.wait_for_url(f"**/{path}")
        for widget, control, value, key in PAGES[path]:
            page.wait_for_selector(f'[data-widget="{widget}"][data-state="live"]', timeout=RECOMPUTE_TIMEOUT_MS)
            expected = framework.call(widget, {control: value})["outputs"][key]["text"]
            assert page.locator(f'[data-widget="{widget}"] [data-output="{key}"]').inner_text() != expected, \
                f"{widget}: the change must move {key}"
            set_control(page, widget, control, value)
            expect_output(page, widget, key, expected)
    assert page.evaluate("() => window.calcRuntime.boots") == 1, "navigation restarted the worker"
    assert visit.console_errors == []


def test_static_batching_simulation_plays_to_the_cpython_result(visit):
    page = visit.page
    page.goto(visit.url("deep-dives/serving-engines/"))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    sims = page.locator('[data-kind="simulation"]')
    assert sims.count() == 2
    static = sims.nth(0)
    static.locator('select[name="__speed"]').select_option("8")
    args = {"batching": "static", "requests": "60", "frame_interval_s": "5"}
    static.locator('input[name="requests"]').fill("60")
    static.locator('input[name="requests"]').dispatch_event("change")
    page.wait_for_function("(el) => el.dataset.simState === 'done'", arg=static.element_handle(), timeout=90_000)
    entry, bound = framework.bind("deep_serving_engines.engine", args)
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    for key in ("requests_completed", "ttft_p50_s", "running_max", "kv_token_share"):
        assert static.locator(f'[data-output="{key}"]').inner_text() == final["outputs"][key]["text"], key
    assert visit.console_errors == []


def test_trade_off_operating_point_plays_to_the_cpython_result(visit):
    page = visit.page
    page.goto(visit.url("deep-dives/trade-off-triangle/"))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    sim = page.locator('[data-widget="deep_trade_off_triangle.operating_point"]')
    sim.locator('select[name="__speed"]').select_option("8")
    sim.locator('select[name="weights"]').select_option("fp8")
    page.wait_for_function("(el) => el.dataset.simState === 'done'", arg=sim.element_handle(), timeout=90_000)
    entry, bound = framework.bind("deep_trade_off_triangle.operating_point", {"weights": "fp8"})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    for key in ("requests_completed", "ttft_p50_s", "itl_p50_s", "queue_depth_max"):
        assert sim.locator(f'[data-output="{key}"]').inner_text() == final["outputs"][key]["text"], key
    assert visit.console_errors == []
