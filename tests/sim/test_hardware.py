"""calc.sim.hardware: the simulator takes its KV cache, step prices and price from calc's models."""

import pytest

from calc.catalog import get_gpu
from calc import memory
from calc.lesson import KV_CAPACITY_TOKENS, KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS
from calc.lesson import kv_capacity as lesson_kv_capacity
from calc.sim import Scenario, simulate
from calc.sim.hardware import replica_hardware


def test_the_lesson_replica_uses_calc_memory_and_the_catalog_price():
    hw = replica_hardware(Scenario())
    # The simulator weighs every tensor (calc.memory.kv_capacity): the lesson's exact-parameter blocks, 399,440
    # tokens, within 0.1% of the capacity every page quotes (calc.lesson.KV_CAPACITY_TOKENS, 399,169).
    exact = memory.kv_capacity("llama-3.1-70b", "h100-sxm-80gb", tp=4, weights="bf16", gpu_memory_utilization=0.9)
    assert exact == lesson_kv_capacity(rounded_params=False)
    assert (hw.kv_cache_blocks, hw.kv_cache_tokens) == (exact.kv_cache_blocks, exact.kv_cache_tokens)
    assert hw.kv_cache_tokens == KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS
    assert abs(hw.kv_cache_tokens / KV_CAPACITY_TOKENS - 1) < 0.001
    assert hw.price_usd_per_gpu_hour == get_gpu("h100-sxm-80gb").price_usd_per_hour
    assert hw.gpus == 4


def test_step_time_is_the_roofline_and_fp8_is_faster_at_decode():
    bf16 = replica_hardware(Scenario())
    fp8 = replica_hardware(Scenario.from_dict({"weights": "fp8"}))
    args = dict(new_tokens=32, kv_tokens_read=32_000, attention_token_pairs=32_000)
    assert bf16.step_time_s(**args) == bf16.coefficients.step_time_s(**args)
    assert fp8.step_time_s(**args) < 0.7 * bf16.step_time_s(**args)
    assert fp8.kv_cache_blocks > bf16.kv_cache_blocks  # freed weight memory becomes KV cache


def test_overrides_and_missing_prices():
    hw = replica_hardware(Scenario.from_dict({"kv_cache_tokens": 1000, "block_size": 16}))
    assert (hw.kv_cache_blocks, hw.kv_cache_tokens) == (62, 992)
    l4 = Scenario.from_dict({"model": "llama-3.1-8b", "gpu": "h200", "tp": 1, "weights": "fp8",
                             "workload": {"requests": 5, "prompt_tokens": 100, "output_tokens": 20}})
    summary = simulate(l4).summary
    assert summary["gpu_price_usd_per_hour"] is None and summary["cost_usd_per_million_output_tokens"] is None
    priced = simulate(l4.replace(gpu_price_usd_per_hour=0.8)).summary
    assert priced["cost_usd_per_million_output_tokens"] == pytest.approx(
        0.8 / (priced["throughput_output_tokens_per_s"] * 3600) * 1e6, rel=1e-4)


# ------------------------------------------------------------------ the simulator's fast step price
from hypothesis import given, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from calc.catalog import GPUS, MODELS, get_model  # noqa: E402
from calc.errors import CalcError  # noqa: E402
from calc.memory import allowed_tp  # noqa: E402
from calc.roofline import step_coefficients  # noqa: E402
from calc.sim.hardware import step_pricer  # noqa: E402


def _replicas():
    """Every catalog model on every catalog GPU, at TP 1 and its largest TP up to 8, in bf16 and fp8 (and int4)."""
    out = []
    for mkey in sorted(MODELS):
        tps = [t for t in allowed_tp(get_model(mkey), 8) if t <= 8]
        for gkey in sorted(GPUS):
            for tp in sorted({tps[0], tps[-1]}):
                for weights in ("bf16", "fp8", "int4"):
                    out.append(step_coefficients(mkey, gkey, tp=tp, weights=weights))
    return out


REPLICAS = _replicas()


@settings(max_examples=300, deadline=None)
@given(i=st.integers(0, len(REPLICAS) - 1), new=st.integers(0, 70_000), kv=st.integers(0, 5_000_000),
       pairs=st.integers(0, 10**10), again=st.booleans())
def test_step_pricer_is_the_roofline_bit_for_bit(i, new, kv, pairs, again):
    assert_pricer_is_the_roofline(REPLICAS[i], new, kv, pairs, again)


def assert_pricer_is_the_roofline(coef, new, kv, pairs, again):
    """The fast pricer's step time equals the roofline's exactly, on first call and from its memo."""
    price = step_pricer(coef)
    args = dict(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs)
    if again:
        price(**args)  # the second call takes the memoized terms
    assert price(**args) == coef.step_time_s(**args)
    return price


def test_step_pricer_memo_gives_the_roofline_on_a_decode_run():
    coef = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    price = step_pricer(coef)
    for step in range(2_000):  # the same new_tokens again and again, as decode steps have
        n = 1 + step % 7
        args = dict(new_tokens=n, kv_tokens_read=1024 * n + step, attention_token_pairs=1024 * n + step)
        assert price(**args) == coef.step_time_s(**args)
    assert price(new_tokens=0, kv_tokens_read=0, attention_token_pairs=0) == coef.step_time_s(
        new_tokens=0, kv_tokens_read=0, attention_token_pairs=0)


@pytest.mark.parametrize("bad", [dict(new_tokens=-1), dict(kv_tokens_read=-5), dict(attention_token_pairs=1.5),
                                 dict(new_tokens=True), dict(kv_tokens_read=10**13), dict(new_tokens=2.5)])
def test_step_pricer_refuses_what_the_roofline_refuses(bad):
    price = step_pricer(step_coefficients("llama-3.1-8b", "h100-sxm-80gb"))
    args = dict(new_tokens=8, kv_tokens_read=100, attention_token_pairs=100)
    price(**args)
    args.update(bad)
    with pytest.raises(CalcError) as err:
        price(**args)
    assert next(iter(bad)) in str(err.value)


def test_replica_hardware_prices_steps_with_its_pricer():
    hw = replica_hardware(Scenario.from_dict({"model": "mixtral-8x7b", "tp": 2}))
    args = dict(new_tokens=48, kv_tokens_read=60_000, attention_token_pairs=61_000)
    assert hw.price_step is hw.price_step
    assert hw.step_time_s(**args) == hw.coefficients.step_time_s(**args)


# ------------------------------------------------------------------ the engine's terms in the fast step price
from calc.engine_profiles import ENGINES, engine_coefficients, get_profile  # noqa: E402

ENGINE_REPLICAS = [engine_coefficients(c.model_key, c.gpu_key, tp=c.tp, weights=c.weights,
                                       engine=ENGINES[i % len(ENGINES)]) for i, c in enumerate(REPLICAS)]


@settings(max_examples=300, deadline=None)
@given(i=st.integers(0, len(ENGINE_REPLICAS) - 1), new=st.integers(0, 70_000), kv=st.integers(0, 5_000_000),
       pairs=st.integers(0, 10**10), again=st.booleans())
def test_step_pricer_carries_the_engine_terms_bit_for_bit(i, new, kv, pairs, again):
    coef = ENGINE_REPLICAS[i]
    price = assert_pricer_is_the_roofline(coef, new, kv, pairs, again)
    if new:
        # A decode-only step of `new` sequences: it pays the engine's per-sequence cost for each.
        assert price.decode(new)(kv) == coef.step_time_s(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=kv,
                                                         sequences=new)


def test_the_engine_terms_are_in_the_simulators_price_and_the_request_cost_is_the_profiles():
    pure = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4, allreduce_latency_s=9.2e-6)
    hw = replica_hardware(Scenario())
    assert hw.coefficients.allreduce_latency_s == 9.2e-6  # measured, not the lesson roofline's round 10 us
    vllm = get_profile("vllm")
    args = dict(new_tokens=8, kv_tokens_read=8_000, attention_token_pairs=8_000)
    extra = hw.step_time_s(**args) - pure.step_time_s(**args)
    assert extra == pytest.approx(vllm.step_overhead_s + 3 * vllm.tp_step_overhead_s, rel=1e-9)
    assert hw.engine == "vllm" and hw.request_overhead_s == vllm.request_overhead_s > 0
    multi = replica_hardware(Scenario.from_dict({"model": "llama-3.1-8b", "gpu": "a100-80gb", "tp": 1,
                                                 "engine": "vllm-0.6-multistep"}))
    # Multi-step: the fixed cost only; the wait for the running window is simulated (calc.sim.scheduler).
    assert multi.request_overhead_s == get_profile("vllm-0.6-multistep").request_overhead_s > 0
    with pytest.raises(CalcError) as err:
        Scenario.from_dict({"engine": "tgi"})
    assert err.value.field == "engine"
