"""Consumer cards in the catalog (issue #33): RTX 4090 and RTX 5090, at the tensor rate the engines compute in.

PyTorch's 16-bit GEMMs and FlashAttention accumulate in FP32, which GeForce cards run at half their FP16-accumulate
rate (NVIDIA Ada whitepaper v2.02, Appendix A: RTX 4090 165.2 against 330.3 TFLOPS dense); the catalog keeps the
FP32-accumulate figure, as it does for the RTX 3090 (GA102 whitepaper: 71 against 142).
"""

import pytest

from calc.catalog import get_gpu
from calc.catalog.interconnect import INTERCONNECTS
from calc.cli.step import kv_capacity_for
from calc.memory import kv_capacity
from calc.roofline import prefill_chunk, step_coefficients
from calc.units import GiB, MiB


def test_rtx_4090_figures_as_the_whitepaper_and_driver_give_them():
    g = get_gpu("rtx-4090")
    assert g.flops("bf16") == g.flops("fp16") == pytest.approx(165.2e12)
    assert g.flops("fp8") == pytest.approx(2 * g.flops("bf16"), rel=1e-3)  # FP8 with FP32 accumulate: 330.3
    assert g.flops("int8") == pytest.approx(4 * g.flops("bf16"), rel=1e-3)  # INT32 accumulate runs at full rate
    assert g.hbm_bytes_per_s == 1.008e12
    assert g.memory_bytes("runtime") == 24_564 * MiB and g.memory_bytes("marketed") == 24_000_000_000
    link = INTERCONNECTS[g.interconnect]
    assert (link.kind, link.full_mesh, link.bytes_per_s) == ("pcie", False, 32e9)
    assert "165.2" in g.source and "FP32 accumulate" in g.source


def test_rtx_5090_engine_capacity_is_the_logs():
    g = get_gpu("rtx-5090")
    assert g.flops("bf16") == pytest.approx(209.5e12) and "fp8" not in g.flops_per_s
    assert round(g.memory_bytes("engine") / GiB, 2) == 31.37
    assert g.memory_bytes("engine") < g.memory_bytes("runtime") == 32_607 * MiB
    assert INTERCONNECTS[g.interconnect].key == "pcie5-x16"


def test_a_4090_prefill_is_priced_at_its_fp32_accumulate_rate():
    chunk = 4096  # compute-bound on both cards: the time scales with the tensor rate
    t3090, t4090 = (prefill_chunk(step_coefficients("llama-3.1-8b", g), chunk_tokens=chunk) for g in ("rtx-3090", "rtx-4090"))
    assert t3090["bound"] == t4090["bound"] == "compute"
    rate_ratio = get_gpu("rtx-4090").flops("bf16") / get_gpu("rtx-3090").flops("bf16")
    assert t3090["compute_s"] / t4090["compute_s"] == pytest.approx(rate_ratio, rel=1e-9)
    # fp8 weights use the 4090's FP8 tensor cores (twice the 16-bit rate), the 3090 computes them in 16 bits.
    fp8 = step_coefficients("llama-3.1-8b", "rtx-4090", weights="fp8")
    assert fp8.compute_dtype == "fp8" and fp8.linear_flops_per_s == pytest.approx(330.3e12)


def test_engine_basis_kv_on_a_4090_against_the_lessons_basis():
    # Llama 3.1 8B bf16 at vLLM V1's defaults for a < 70 GiB card (2,048-token budget, 256 sequences): the engine
    # basis counts CUDA's total (nvidia-smi less the driver's reserve) and the profiled peak; the lesson's basis
    # counts 24e9 bytes less a round 4 GB and comes out far smaller (the "about half", and less).
    coef = step_coefficients("llama-3.1-8b", "rtx-4090")
    engine = kv_capacity_for(coef, "vllm-v1", None)
    assert engine["memory_basis"] == "engine" and engine["kv_sizing"]["max_num_batched_tokens"] == 2048
    lesson = kv_capacity("llama-3.1-8b", "rtx-4090", memory_basis="marketed").kv_cache_tokens
    assert engine["kv_cache_tokens"] > 2 * lesson
    # Against the 3090's logged capacity (23.58 GiB, same KV maths): the 4090's assumed total is 23.55 GiB.
    r3090 = kv_capacity_for(step_coefficients("llama-3.1-8b", "rtx-3090"), "vllm-v1", None)["kv_cache_tokens"]
    assert engine["kv_cache_tokens"] == pytest.approx(r3090, rel=0.01)
