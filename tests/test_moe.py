"""MoE steps (issue #33): distinct experts per step, tensor versus expert parallelism, named refusals."""

import random

import pytest

from calc import moe
from calc.catalog import get_model
from calc.errors import CalcError
from calc.roofline import step_coefficients


def _draw_distinct(rng, tokens, experts, top_k):
    touched = set()
    for _ in range(tokens):
        touched.update(rng.sample(range(experts), top_k))
    return touched


def test_expected_distinct_experts_matches_a_seeded_draw():
    rng = random.Random(0)
    for tokens in (1, 8, 64, 512):
        mean = sum(len(_draw_distinct(rng, tokens, 256, 8)) for _ in range(400)) / 400
        assert moe.expected_distinct_experts(tokens, 256, 8) == pytest.approx(mean, rel=0.02)


def test_busiest_expert_parallel_gpu_matches_a_seeded_draw():
    rng = random.Random(1)
    for tokens in (1, 4, 32):
        draws = []
        for _ in range(600):
            touched = _draw_distinct(rng, tokens, 256, 8)
            draws.append(max(sum(1 for e in touched if e // 32 == g) for g in range(8)))
        assert moe.expected_max_local_experts(tokens, 256, 8, 8) == pytest.approx(sum(draws) / len(draws), rel=0.08)


def test_decode_reads_only_the_touched_experts_and_prefill_all_of_them():
    c = step_coefficients("deepseek-v3", "h200", tp=8, weights="fp8")
    one, batch, chunk = c.weight_bytes_read(1), c.weight_bytes_read(64), c.weight_bytes_read(8192)
    assert one < batch < chunk
    assert chunk == pytest.approx(c.dense_weight_bytes + c.expert_weight_bytes, rel=1e-9)
    share = moe.expected_distinct_experts(64, 256, 8) / 256
    assert batch == pytest.approx(c.dense_weight_bytes + c.expert_weight_bytes * share, rel=1e-12)
    # the shared expert is read every step, with the dense weights (fp8: one byte a weight, split over 8 GPUs)
    m = get_model("deepseek-v3")
    shared_bytes = m.moe_layers * 3 * m.hidden_size * m.moe_intermediate_size * m.shared_experts / 8
    assert c.dense_weight_bytes > shared_bytes > 0
    assert one - c.dense_weight_bytes == pytest.approx(c.expert_weight_bytes * 8 / 256, rel=1e-12)


def test_expert_parallel_small_batch_decode_is_slower_than_tensor_parallel():
    args = dict(new_tokens=1, kv_tokens_read=2000, attention_token_pairs=2000, sequences=1)
    tp = step_coefficients("deepseek-v3", "h200", tp=8, weights="fp8")
    ep = step_coefficients("deepseek-v3", "h200", tp=8, weights="fp8", expert_parallel=True)
    assert ep.step_time_s(**args) > 1.3 * tp.step_time_s(**args)
    big = dict(new_tokens=8192, kv_tokens_read=8192, attention_token_pairs=8192 * 4096, sequences=2)
    assert ep.step_time_s(**big) == pytest.approx(tp.step_time_s(**big), rel=1e-9)
    assert ep.comm_s(1) == tp.comm_s(1)  # the same all-reduce combines the experts' outputs


def test_what_is_not_modelled_is_refused_by_name():
    with pytest.raises(CalcError, match="not modelled: data-parallel attention"):
        step_coefficients("deepseek-v3", "h200", tp=8, dp_attention=True)
    with pytest.raises(CalcError, match="expert_parallel needs a mixture-of-experts model"):
        step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4, expert_parallel=True)


def test_mla_keeps_one_latent_per_gpu_and_prices_absorbed_attention():
    m = get_model("deepseek-v3")
    c = step_coefficients(m, "h200", tp=8)
    assert c.kv_bytes_per_token == m.layers * (m.kv_lora_rank + m.qk_rope_head_dim) * 2
    per_pair = m.layers * (2 * m.attention_heads * (m.kv_lora_rank + m.qk_rope_head_dim)
                           + 2 * m.attention_heads * m.kv_lora_rank) / 8
    assert c.attention_flops_per_pair == pytest.approx(per_pair)
