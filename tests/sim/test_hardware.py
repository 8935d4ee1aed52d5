"""calc.sim.hardware: the simulator takes its KV cache, step prices and price from calc's models."""

import pytest

from calc.catalog import get_gpu
from calc.memory import lesson_kv_capacity
from calc.sim import Scenario, simulate
from calc.sim.hardware import replica_hardware


def test_the_lesson_replica_uses_calc_memory_and_the_catalog_price():
    hw = replica_hardware(Scenario())
    assert hw.kv_cache_blocks == lesson_kv_capacity().kv_cache_blocks
    assert hw.kv_cache_tokens == lesson_kv_capacity().kv_cache_tokens
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
    l4 = Scenario.from_dict({"model": "llama-3.1-8b", "gpu": "l4", "tp": 1, "weights": "fp8",
                             "workload": {"requests": 5, "prompt_tokens": 100, "output_tokens": 20}})
    summary = simulate(l4).summary
    assert summary["gpu_price_usd_per_hour"] is None and summary["cost_usd_per_million_output_tokens"] is None
    priced = simulate(l4.replace(gpu_price_usd_per_hour=0.8)).summary
    assert priced["cost_usd_per_million_output_tokens"] == pytest.approx(
        0.8 / (priced["throughput_output_tokens_per_s"] * 3600) * 1e6, rel=1e-4)
