"""Deep dive "The roofline": ridge, intensities, the bandwidth wall, TTFT/ITL, and bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import deep_roofline as page
from calc.widgets import framework


def test_facts():
    f = page.facts()
    assert f["ridge"] == "295"                      # 989 TFLOP/s / 3.35 TB/s
    assert f["weights_read"] == "14.2 GB"           # 14.5 GB less the input embedding, looked up
    assert f["wall_ms"] == "4.25 ms"
    assert (f["decode_intensity"], f["prefill_intensity"]) == ("1.03", "1,024")
    assert (f["itl_ms"], f["ttft_ms"]) == ("5.65 ms", "29.4 ms")
    assert f["plateau_batch"] == "361"
    assert f["short_context_compute_batch"] == "199"
    assert (f["lesson_wall_ms"], f["lesson_itl_ms"], f["lesson_ttft_ms"]) == ("10.4 ms", "15.3 ms", "81.8 ms")


def test_roofline_widget_defaults():
    view = framework.call("deep_roofline.roofline", {})
    out = view["outputs"]
    assert out["decode_intensity"]["text"] == "1.03 FLOPs per byte: memory-bound"
    assert out["prefill_intensity"]["text"] == "1,024 FLOPs per byte: compute-bound"
    assert out["fits"]["value"] == 361
    traces = view["figures"]["roofline"]["data"]
    assert traces[0]["y"][-1] == pytest.approx(989)  # the flat roof, TFLOP/s
    assert traces[2]["x"] == [pytest.approx(1.03147, rel=1e-4)]


def test_latency_widget_stops_at_the_kv_cache():
    view = framework.call("deep_roofline.latency", {})
    xs = view["figures"]["itl"]["data"][0]["x"]
    assert xs[-1] == 361 and 512 not in xs
    assert view["outputs"]["itl_s"]["text"] == "9.38 ms"


def test_a_batch_that_does_not_fit_is_said_so():
    out = framework.call("deep_roofline.roofline", {"batch": "1000"})["outputs"]
    assert out["fits"]["text"] == "no: the KV cache holds 361 such sequences, not 1,000"


@pytest.mark.parametrize("args, field", [({"tp": "3"}, "tp"), ({"batch": "0"}, "batch"),
                                         ({"model": "llama-3.1-405b"}, "tp"),
                                         ({"prompt_tokens": "-5"}, "prompt_tokens")])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as error:
        framework.call("deep_roofline.roofline", args)
    assert error.value.field == field


def test_a_context_too_long_for_the_cache():
    with pytest.raises(CalcError) as error:
        framework.call("deep_roofline.latency", {"model": "llama-3.1-70b", "tp": "4", "context_tokens": "900000"})
    assert error.value.field == "context_tokens"


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 300))
def test_bigger_batches_never_lower_the_step_or_the_throughput(batch):
    a, b = page.batch_sweep("mistral-7b", "h100-sxm-80gb", context_tokens=1152, batches=[batch, batch + 1])
    assert b["itl_s"] >= a["itl_s"]
    assert b["tokens_per_s"] >= a["tokens_per_s"] * 0.999
