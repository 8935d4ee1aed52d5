"""Step 16: cost per million tokens against the batch, the lesson's 9.74x, where batching stops paying, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import get_gpu
from calc.cost import H100_LISTINGS, usd_per_million_tokens
from calc.errors import CalcError
from calc.widgets import cost_per_million_tokens as step
from calc.widgets import framework

WIDGET = "cost_per_million_tokens.cost_by_batch"


def outputs(**args):
    return framework.call(WIDGET, args)["outputs"]


def test_ten_times_the_batch_is_nearly_ten_times_cheaper():
    """Step 16: 70B on 4 H100, decode memory-bound, about 9.7x from batch 1 to 10 (9.74 in calc)."""
    out = outputs()
    assert out["discount_1_to_10"]["value"] == pytest.approx(9.74, abs=0.005)
    assert out["discount_1_to_10"]["text"] == "9.74 times cheaper"
    assert out["usd_per_million_tokens"]["text"] == "$6.60 per million output tokens at batch 10"
    assert out["itl_s"]["text"] == "15.7 ms at batch 10 (memory-bound)"
    assert out["replica_usd_per_hour"]["text"] == "$15.12 per hour (4 × $3.78)"


def test_where_it_stops():
    out = outputs()
    assert out["batching_limit"]["value"] == 38
    assert out["compute_bound_from"]["value"] == 199
    assert out["kv_limit"]["value"] == 311  # 399,169 tokens / 1,280
    assert out["floor_usd"]["text"] == "$0.503 per million output tokens at batch 311"
    assert step.facts()["discount_10_100"] == "7.92"  # well short of 10


def test_the_formula_by_hand():
    row = step.decode_rows(batches=(1,))[0]
    assert row["usd_per_million_tokens"] == pytest.approx(15.12 / (row["tokens_per_s"] * 3600) * 1e6)
    assert usd_per_million_tokens(15.12, row["tokens_per_s"]) == pytest.approx(64.24, abs=0.005)


def test_prefill_makes_the_floor_higher_and_the_end_earlier():
    out = outputs(include_prefill=True)
    assert out["discount_1_to_10"]["text"] == "9.55 times cheaper"
    assert out["compute_bound_from"]["value"] == 40
    assert out["floor_usd"]["text"] == "$1.81 per million output tokens at batch 311"
    assert step.facts()["prefill_over_decode"] == "3.6"


def test_price_is_dated_and_sourced():
    gpu = get_gpu("h100-sxm-80gb")
    assert (gpu.price_usd_per_hour, gpu.price_date) == (3.78, "2026-05-07")
    assert H100_LISTINGS[0] == ("Lambda", gpu.price_usd_per_hour)
    assert "listed 2026-05-07" in outputs()["price_note"]["text"]
    assert "as entered" in outputs(usd_per_gpu_hour=2.5)["price_note"]["text"]


@settings(max_examples=25, deadline=None)
@given(st.sampled_from([1, 2, 4, 8, 16, 32, 64, 128, 256]), st.floats(min_value=0.5, max_value=20))
def test_cost_scales_with_price_and_falls_with_batch(batch, price):
    base = outputs(batch=batch, usd_per_gpu_hour=price)["usd_per_million_tokens"]["value"]
    double = outputs(batch=batch, usd_per_gpu_hour=2 * price)["usd_per_million_tokens"]["value"]
    assert double == pytest.approx(2 * base, rel=1e-6)
    if batch > 1:
        assert base < outputs(batch=batch // 2, usd_per_gpu_hour=price)["usd_per_million_tokens"]["value"]


@pytest.mark.parametrize("args, field", [
    ({"tp": "3"}, "tp"),
    ({"batch": "0"}, "batch"),
    ({"usd_per_gpu_hour": "-1"}, "usd_per_gpu_hour"),
    ({"model": "llama-3.1-405b", "tp": "1"}, "tp"),
    ({"prompt_tokens": "100000", "answer_tokens": "32000", "model": "llama-3.1-70b", "tp": "2"}, None),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(WIDGET, args)
    if field:
        assert caught.value.field == field


def test_facts():
    f = {key: value.replace("&#36;", "$") for key, value in step.facts().items()}
    assert (f["usd_1"], f["usd_10"], f["discount"]) == ("$64.24", "$6.60", "9.74")
    assert (f["step_1"], f["step_10"], f["step_100"]) == ("15.3 ms", "15.7 ms", "19.8 ms")
    assert (f["limit"], f["compute_from"], f["kv_limit"]) == ("38", "199", "311")
    # The cheapest batch is the KV cache's 311 capped at vLLM's max_num_seqs, as step 17 prices it.
    assert (f["floor_batch"], f["max_num_seqs"]) == ("256", "256")
    assert (f["price"], f["price_date"], f["price_seller"]) == ("$3.78", "2026-05-07", "Lambda on-demand")
    assert f["price_others"] == "Modal $3.95 and Replicate $5.49"
    assert (f["fp8_usd_1"], f["fp8_usd_10"]) == ("$36.02", "$3.78")


def test_labels_name_no_input_and_texts_name_the_batch():
    """The page rewrites an output's text, never its label: a label that named the batch went stale."""
    base, other = outputs(), outputs(batch=100, include_prefill=True, prompt_tokens=2048)
    assert {k: o["label"] for k, o in base.items()} == {k: o["label"] for k, o in other.items()}
    for key in ("itl_s", "tokens_per_s", "usd_per_million_tokens"):
        assert "at batch 100" in other[key]["text"] and "at batch 10" in base[key]["text"]
