"""Long contexts: 100K against 78 conversations, linear KV, faster-than-linear prefill, FlashAttention's stake."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import MODELS
from calc.context import context_cost, context_cost_curve, prefill_flops, requests_displaced, unfused_attention_scores_bytes
from calc.errors import CalcError
from calc.memory import kv_bytes_per_token


def test_one_100k_request_holds_78_conversations():
    # Step 13 (docs/lesson/13-long-context.md): one 100K-token request holds the KV of about eighty (78) 1,280-token conversations.
    for key in ("llama-3.1-70b", "llama-3.1-8b", "qwen2.5-72b", "deepseek-v3"):
        r = requests_displaced(key, long_tokens=100_000, short_tokens=1280)
        assert r["conversations"] == 78 and math.isclose(r["ratio"], 78.125)
    r = requests_displaced("llama-3.1-70b")
    assert r["long_kv_bytes"] == 100_000 * kv_bytes_per_token(MODELS["llama-3.1-70b"])


def test_a_sliding_window_caps_the_long_request():
    assert requests_displaced("mistral-7b")["conversations"] == 3  # 4,096 / 1,280


def test_kv_linear_prefill_faster_than_linear():
    rows = context_cost_curve("llama-3.1-70b", "h100-sxm-80gb", [10_000, 100_000], tp=4)
    assert math.isclose(rows[1]["kv_bytes"], 10 * rows[0]["kv_bytes"])
    assert rows[1]["prefill_s"] > 10 * rows[0]["prefill_s"]
    assert rows[1]["prefill_flops"] > 10 * rows[0]["prefill_flops"]
    assert rows[1]["decode_step_s"] > rows[0]["decode_step_s"]


def test_a_100k_request_takes_a_quarter_of_the_lesson_replica():
    r = context_cost("llama-3.1-70b", "h100-sxm-80gb", 100_000, tp=4)
    assert round(r["kv_share"], 2) == 0.25 and r["fits"]
    assert not context_cost("llama-3.1-70b", "h100-sxm-80gb", 500_000, tp=4)["fits"]


def test_without_flashattention_the_score_matrix_would_not_fit():
    r = unfused_attention_scores_bytes("llama-3.1-70b", 100_000)
    assert r["matrix_bytes_per_layer"] == 64 * 100_000 ** 2 * 2
    assert r["matrix_bytes_per_layer"] > 80e9


@settings(max_examples=50, deadline=None)
@given(n=st.integers(1, 200_000), extra=st.integers(1, 100_000))
def test_attention_share_grows_with_the_prompt(n, extra):
    a, b = prefill_flops("llama-3.1-8b", n), prefill_flops("llama-3.1-8b", n + extra)
    assert b["attention_share"] > a["attention_share"]
    assert b["total_flops"] / a["total_flops"] >= (n + extra) / n


@pytest.mark.parametrize("call, field", [
    (lambda: requests_displaced("llama-3.1-8b", long_tokens=0), "long_tokens"),
    (lambda: requests_displaced("llama-3.1-8b", short_tokens=-3), "short_tokens"),
    (lambda: requests_displaced("llama-3.1-8b", kv_dtype="int2"), "kv_dtype"),
    (lambda: requests_displaced("gpt-5"), "model"),
    (lambda: prefill_flops("llama-3.1-8b", 0), "prompt_tokens"),
    (lambda: context_cost("llama-3.1-8b", "h100-sxm-80gb", 1.5), "context_tokens"),
    (lambda: context_cost_curve("llama-3.1-8b", "h100-sxm-80gb", []), "contexts"),
    (lambda: unfused_attention_scores_bytes("llama-3.1-8b", 10, bytes_per_score=0), "bytes_per_score"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field
