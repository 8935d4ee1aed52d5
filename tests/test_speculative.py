"""Speculative decoding: Leviathan's Eq. 1, the speed-up, its collapse at large batch, the published crossing."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.roofline import step_coefficients
from calc.speculative import (
    EAGLE_LIKE, SpeculationConfig, break_even_batch, expected_tokens_per_step, speedup, speedup_at_batch,
    speedup_curve, speedup_when_compute_bound,
)

C8 = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")  # bf16, as SGLang served it


# ---- step 9 (docs/lesson/09-speculative-decoding.md): expected tokens per target step (Leviathan et al. 2023, Eq. 1) ------------

@pytest.mark.parametrize("a, k", [(0.6, 1), (0.7, 3), (0.8, 4), (0.9, 7), (0.5, 10)])
def test_eq_1_is_the_geometric_sum(a, k):
    assert math.isclose(expected_tokens_per_step(a, k), sum(a ** i for i in range(k + 1)))
    assert math.isclose(expected_tokens_per_step(a, k), (1 - a ** (k + 1)) / (1 - a))


def test_eq_1_limits():
    assert expected_tokens_per_step(0.0, 5) == 1.0
    assert expected_tokens_per_step(1.0, 5) == 6.0
    assert round(expected_tokens_per_step(0.8, 4), 4) == 3.3616


def test_walltime_speedup():
    assert math.isclose(speedup(0.8, 4, 0.05), 3.3616 / 1.2)
    assert speedup(0.8, 4, 0.0) == expected_tokens_per_step(0.8, 4)


# ---- the lesson's step 10: the gain lost at saturation -----------------------------------

def test_published_break_even_batch_is_reproduced():
    # Published (EAGLE-3 paper, SGLang, 1x H100, Llama 3.1 8B): EAGLE below 1x from batch 24 (24-32).
    # The EAGLE-like draft cost was set from the batch-2 speed-up only; the crossing is a prediction.
    for context in (256, 512, 1024):
        assert 20 <= break_even_batch(C8, context_tokens=context) <= 32


def test_small_batch_speedup_matches_the_published_batch_2_figure():
    assert round(speedup_at_batch(C8, batch=2, context_tokens=512)["speedup"], 1) == 1.4


def test_plain_decode_at_batch_1_is_near_sglangs_published_baseline():
    # SGLang without speculation, 1x H100, Llama 3.1 8B, MT-bench: 158.34 tokens/s (docs.sglang.io, EAGLE-3 paper).
    tokens_per_s = speedup_at_batch(C8, batch=1, context_tokens=512)["plain_tokens_per_s"]
    assert 0.85 <= tokens_per_s / 158.34 <= 1.25


def test_speedup_falls_with_batch():
    curve = speedup_curve(C8, batches=[1, 8, 16, 24, 32, 64, 128, 256], context_tokens=512)
    speeds = [row["speedup"] for row in curve]
    assert all(a >= b - 1e-12 for a, b in zip(speeds, speeds[1:]))
    assert speeds[0] > 1.3 and speeds[-1] < 0.5


def test_long_contexts_keep_speculation_alive_longer():
    # KV reads do not grow with the verified tokens, so a KV-heavy step stays memory-bound longer.
    assert break_even_batch(C8, context_tokens=8192) > break_even_batch(C8, context_tokens=512)


@settings(max_examples=200, deadline=None)
@given(a=st.floats(0, 0.999), k=st.integers(1, 16), c=st.floats(0, 2), extra=st.integers(0, 32))
def test_speedup_below_one_when_compute_bound(a, k, c, extra):
    assert speedup_when_compute_bound(a, k, c, verify_tokens=k + 1 + extra) < 1


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.0, 0.95), k=st.integers(1, 8), c=st.floats(0.0, 0.5), batch=st.integers(0, 2048),
       context=st.integers(1, 8))
def test_speedup_below_one_when_the_plain_step_is_compute_bound(a, k, c, batch, context):
    # Past batch 2,048 a decode step with next to no KV is held by the compute roof of its matmuls:
    # every verified token then costs full price and the speed-up is below 1.
    config = SpeculationConfig(a, k, c, "test")
    big = 2048 + batch
    plain = C8.breakdown(new_tokens=big, kv_tokens_read=big * context, attention_token_pairs=big * context)
    assert plain["bound"] == "compute" and plain["gemm_s"] > 0.95 * plain["time_s"]
    assert speedup_at_batch(C8, batch=big, context_tokens=context, config=config)["speedup"] < 1


@settings(max_examples=100, deadline=None)
@given(a=st.floats(0, 1), k=st.integers(1, 16), c=st.floats(0, 1))
def test_memory_bound_speedup_is_bounded(a, k, c):
    s = speedup(a, k, c)
    assert 1 / (1 + k * c) - 1e-12 <= s <= (k + 1) / (1 + k * c) + 1e-12


# ---- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("call, field", [
    (lambda: expected_tokens_per_step(1.2, 4), "acceptance"),
    (lambda: expected_tokens_per_step(0.5, 0), "k"),
    (lambda: speedup(0.5, 4, -0.1), "draft_cost_ratio"),
    (lambda: speedup_when_compute_bound(0.5, 4, 0.1, verify_tokens=3), "verify_tokens"),
    (lambda: SpeculationConfig(0.7, 2.5, 0.1, "x"), "k"),
    (lambda: speedup_at_batch(C8, batch=0, context_tokens=10), "batch"),
    (lambda: speedup_curve(C8, batches=[], context_tokens=10), "batches"),
    (lambda: break_even_batch(C8, context_tokens=0), "context_tokens"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field


def test_eagle_like_is_sourced():
    assert EAGLE_LIKE.verify_tokens == 16 and "SGLang" in EAGLE_LIKE.source
