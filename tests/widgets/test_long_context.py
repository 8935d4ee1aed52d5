"""Step 13: KV linear and prefill faster than linear, the 78 conversations, FlashAttention, and bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.context import context_cost, requests_displaced
from calc.errors import CalcError
from calc.widgets import framework
from calc.widgets import long_context as step

GROWTH = "long_context.context_growth"
DISPLACED = "long_context.long_vs_short"
FLASH = "long_context.flash_attention"


def test_one_long_request_holds_78_conversations():
    # Step 13: one 100K-token request holds the KV of about eighty (78) 1,280-token conversations.
    out = framework.call(DISPLACED, {})["outputs"]
    assert out["conversations"]["value"] == 78
    assert out["conversations"]["text"] == "78 (78.1×)"
    assert out["long_kv_bytes"]["value"] == 100_000 * 327_680
    assert out["short_kv_bytes"]["text"] == "419 MB"
    assert out["long_share"]["text"] == "25.1% of 399,169 tokens"
    assert out["fit"]["text"] == "3 long requests, or 311 conversations"
    assert requests_displaced("llama-3.1-70b")["conversations"] == 78


def test_fp8_cache_doubles_the_room_but_not_the_ratio():
    out = framework.call(DISPLACED, {"kv_dtype": "fp8"})["outputs"]
    assert out["conversations"]["value"] == 78
    assert out["fit"]["text"] == "7 long requests, or 623 conversations"


def test_cache_chart_adds_up_to_the_replica():
    figure = framework.call(DISPLACED, {})["figures"]["cache"]
    totals = [sum(trace["x"][i] for trace in figure["data"]) for i in range(2)]
    assert totals == [399_169, 399_169]
    assert figure["data"][0]["x"] == [0, 100_000]
    assert figure["data"][1]["x"] == [311 * 1_280, 233 * 1_280]


def test_growth_defaults_and_shape():
    view = framework.call(GROWTH, {})
    out = view["outputs"]
    assert out["kv_bytes"]["text"] == "32.8 GB (25.1% of the replica's KV cache)"
    assert out["prefill_s"]["value"] == pytest.approx(context_cost("llama-3.1-70b", "h100-sxm-80gb", 100_000, tp=4)["prefill_s"])
    assert out["prefill_s"]["text"] == "14.3 s on an idle replica"
    assert out["attention_share"]["text"] == "49%"
    growth = {t["name"]: t["y"] for t in view["figures"]["growth"]["data"]}
    assert growth["KV cache (linear)"] == [float(2 ** k) for k in range(8)]
    # Faster than linear: from 2K on, prefill more than doubles at every doubling, and ever more so.
    prefill = growth["prefill time"]
    steps = [b / a for a, b in zip(prefill[1:], prefill[2:])]
    assert all(s > 2 for s in steps) and steps == sorted(steps)
    assert prefill[-1] > 250


@settings(max_examples=20, deadline=None)
@given(st.integers(2_048, 65_536))
def test_doubling_the_context_doubles_kv_and_more_than_doubles_prefill(n):
    one, two = step._cost(n), step._cost(2 * n)
    assert two["kv_bytes"] == 2 * one["kv_bytes"]
    assert two["prefill_flops"] > 2 * one["prefill_flops"]
    assert two["prefill_s"] > 2 * one["prefill_s"]


def test_flash_attention_changes_the_scores_not_the_kv_or_flops():
    view = framework.call(FLASH, {})
    out = view["outputs"]
    assert out["scores_bytes"]["value"] == 16 * 100_000 ** 2 * 2  # 16 heads per GPU, bf16 scores
    assert out["scores_bytes"]["text"] == "320 GB per GPU (4× its memory)"
    assert out["scores_traffic_bytes"]["text"] == "76.8 TB per GPU, 22.9 s at 3.35 TB/s"
    assert out["kv_bytes"]["value"] == 100_000 * 81_920
    rows = {row[0]: row for row in view["tables"]["compare"]["rows"]}
    assert rows["KV cache of the request"][2:] == ["the same", "no"]
    assert rows["Attention FLOPs of the prefill"][2:] == ["the same", "no"]
    assert rows["HBM traffic of the scores"][2:] == ["none", "yes"]
    scores = view["figures"]["scores"]["data"][0]["y"]
    assert scores[1] == pytest.approx(4 * scores[0], rel=1e-5)  # quadratic: twice the prompt, four times the scores


def test_bad_input_names_the_field():
    with pytest.raises(CalcError) as err:
        framework.call(GROWTH, {"context_tokens": "200000"})
    assert err.value.field == "context_tokens"
    with pytest.raises(CalcError) as err:
        framework.call(DISPLACED, {"short_tokens": "10"})
    assert err.value.field == "short_tokens"
    with pytest.raises(CalcError) as err:
        framework.call(DISPLACED, {"kv_dtype": "int3"})
    assert err.value.field == "kv_dtype"
    with pytest.raises(CalcError) as err:
        framework.call(FLASH, {"context_tokens": ""})
    assert err.value.field == "context_tokens"


def test_facts():
    f = step.facts()
    assert (f["conversations"], f["ratio"], f["long_kv"], f["short_kv"]) == ("78", "78.1", "32.8 GB", "419 MB")
    assert (f["replica_tokens"], f["long_share_pct"], f["long_fit"], f["window_fit"]) == ("399,169", "25.1%", "3", "3")
    assert f["beside_window"] == "4"  # (399,169 - 3 x 131,072) // 1,280
    assert (f["prefill_short_ms"], f["prefill_long_s"], f["prefill_window_s"]) == ("102 ms", "14.3 s", "21.4 s")
    assert f["kv_10x_ratio"] == "10" and float(f["prefill_10x_ratio"]) > 10
    assert (f["attention_share_short_pct"], f["attention_share_long_pct"]) == ("1%", "49%")
    assert (f["scores_layer_gpu"], f["scores_over_memory"], f["scores_traffic_gpu"]) == ("320 GB", "4", "76.8 TB")
