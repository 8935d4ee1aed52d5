"""calc.sim.speculation: speculative decoding inside the engine, and where it stops paying.

The drafter is calc.speculative.EAGLE_LIKE (SGLang's EAGLE example shape: 3 draft steps, 16
candidates verified per sequence; the EAGLE head's cost derived from its shape on the roofline;
acceptance fitted to the published 1.40x at batch 2). Published: on one H100 with Llama 3.1 8B,
EAGLE's speed-up falls below 1x from batch 24 (EAGLE-3 paper, SGLang). The engine must put
its crossing between batch 16 and 48.
"""

import pytest

from calc.catalog import get_gpu, get_model
from calc.roofline import step_coefficients
from calc.sim import Scenario, simulate
from calc.sim.scheduler import TICKS
from calc.sim.hardware import replica_hardware
from calc.sim.speculation import advance_ticks, bound_speculation, speculative_step_time_s, tokens_per_decode
from calc.speculative import EAGLE3_LIKE, EAGLE_LIKE, SpeculationConfig, speedup_at_batch

PROMPT, ANSWER = 512, 256


def decode_seconds(batch: int, speculation) -> float:
    """Mean decode time of a request (end-to-end minus first token) at a fixed batch on 8B / one H100."""
    s = simulate(Scenario.from_dict({
        "model": "llama-3.1-8b", "tp": 1, "max_num_seqs": batch, "speculation": speculation,
        "max_num_batched_tokens": max(8192, batch * 16),
        "workload": {"arrival": "all-at-once", "requests": batch, "prompt_tokens": PROMPT, "output_tokens": ANSWER},
    })).summary
    return s["e2e_mean_s"] - s["ttft_mean_s"]


@pytest.fixture(scope="module")
def speedups():
    return {b: decode_seconds(b, None) / decode_seconds(b, "eagle-like") for b in (1, 8, 16, 24, 32, 48, 64)}


def test_speculation_pays_at_small_batch_and_costs_past_saturation(speedups):
    assert speedups[1] > 1.3
    assert speedups[16] > 1.0
    assert speedups[48] < 1.0
    crossing = min(b for b, s in speedups.items() if s < 1.0)
    assert 16 < crossing <= 48


def test_speedup_falls_as_the_batch_grows(speedups):
    values = [speedups[b] for b in sorted(speedups)]
    # Nearly flat while the verify step is memory-bound; from batch 1 to 8 it may rise a little, as a speculative step
    # pays the engine's per-sequence cost once for ~tokens_per_step tokens (1.43 -> 1.47 with vLLM's 138 us), then falls.
    assert values[1] == pytest.approx(values[0], rel=0.05)
    assert all(a >= b - 0.01 for a, b in zip(values[1:], values[2:]))
    assert values[0] > values[-1] + 0.5


def test_engine_agrees_with_the_closed_form_accounting(speedups):
    # The simulator's own step prices: the roofline plus the default engine's terms.
    from calc.engine_profiles import engine_coefficients

    coef = engine_coefficients("llama-3.1-8b", "h100-sxm-80gb", tp=1)
    for batch in (8, 32):
        closed = speedup_at_batch(coef, batch=batch, context_tokens=PROMPT + ANSWER // 2, config=EAGLE_LIKE)["speedup"]
        assert speedups[batch] == pytest.approx(closed, rel=0.05)


def test_tokens_per_step_and_verify_width():
    assert advance_ticks(None) == TICKS
    assert advance_ticks(EAGLE_LIKE) / TICKS == pytest.approx(EAGLE_LIKE.tokens_per_step, abs=1 / TICKS)
    assert tokens_per_decode(EAGLE_LIKE) == EAGLE_LIKE.verify_tokens
    chain = SpeculationConfig(0.8, 4, 0.05, "chain")
    assert tokens_per_decode(chain) == 5


def test_draft_cost_scales_with_k_and_the_plain_step():
    step = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.01 + 1e-6 * kv_tokens_read  # noqa: E731
    cfg = SpeculationConfig(0.7, 4, 0.25, "test")
    t = speculative_step_time_s(step, cfg, decode_seqs=10, decode_kv_tokens=5000, new_tokens=50,
                                kv_tokens_read=5000, attention_token_pairs=0)
    verify = 0.01 + 1e-6 * (5000 + 10 * 4)
    plain = 0.01 + 1e-6 * 5000
    assert t == pytest.approx(verify + 4 * 0.25 * plain)


def test_answers_are_the_same_length_with_and_without_speculation():
    base = {"model": "llama-3.1-8b", "tp": 1, "workload": {"requests": 50, "rate_per_s": 2, "lengths": "chat"}}
    plain = simulate(Scenario.from_dict(base)).summary
    spec = simulate(Scenario.from_dict({**base, "speculation": "eagle-like"})).summary
    assert spec["output_tokens"] == plain["output_tokens"]
    assert spec["itl_p50_s"] < plain["itl_p50_s"]


@pytest.mark.parametrize("preset", ["eagle-like", "eagle3-like", "draft-1b"])
def test_the_engine_prices_the_same_derived_draft_cost(preset):
    # The simulator's speculative step (verify + k draft steps) equals calc.speculative's cycle for a pure decode step.
    scenario = Scenario.from_dict({"speculation": preset})
    hardware = replica_hardware(scenario)
    config = bound_speculation(scenario.speculation, hardware)
    coef = hardware.coefficients
    batch, context, v = 64, 1152, config.verify_tokens
    seconds = speculative_step_time_s(
        coef.step_time_s, config, decode_seqs=batch, decode_kv_tokens=batch * context, new_tokens=batch * v,
        kv_tokens_read=batch * context, attention_token_pairs=batch * (v * context + v * (v - 1) // 2), sequences=batch)
    cycle = speedup_at_batch(coef, batch=batch, context_tokens=context, config=scenario.speculation)
    assert seconds == pytest.approx(cycle["verify_step_s"] + cycle["draft_steps_s"], rel=1e-9)


def test_scenario_speculation_round_trips_and_keeps_the_override():
    for value in ("eagle-like", "eagle3-like", {"k": 2, "acceptance": 0.6, "draft": "eagle3"},
                  {"k": 3, "acceptance": 0.7, "draft_cost_ratio": 0.2}):
        s = Scenario.from_dict({"speculation": value})
        assert Scenario.from_dict(s.to_dict()) == s
    assert Scenario.from_dict(Scenario.from_dict({"speculation": "eagle-like"}).to_dict()).speculation is EAGLE_LIKE
    fixed = bound_speculation(Scenario.from_dict({"speculation": {"draft_cost_ratio": 0.2}}).speculation, None)
    assert fixed.draft_cost_ratio == 0.2 and fixed.draft_coefficients is None


def test_eagle3_keeps_its_gain_in_the_engine_where_eagle_loses_it():
    eagle3 = decode_seconds(48, None) / decode_seconds(48, "eagle3-like")
    assert eagle3 > 1.2
