"""Interconnect per GPU model: PCIe and NVLink all-reduce by TP size (issue #33, mechanism 'interconnect')."""

import pytest

from calc import engine_profiles, parallel, roofline
from calc.catalog import GPUS, get_gpu
from calc.errors import CalcError


def test_every_gpu_names_its_interconnect_and_the_bandwidth_agrees():
    from calc.catalog.interconnect import INTERCONNECTS

    for gpu in GPUS.values():
        link = INTERCONNECTS[gpu.interconnect]
        assert link.bytes_per_s == gpu.interconnect_bytes_per_s, gpu.key
    assert get_gpu("h100-sxm-80gb").interconnect == "nvlink4"
    assert get_gpu("a100-pcie-80gb").interconnect == "pcie4-x16"
    assert INTERCONNECTS["nvlink4"].bytes_per_s == 450e9 and INTERCONNECTS["pcie4-x16"].bytes_per_s == 32e9


def test_the_algorithm_follows_the_engine_rules():
    # vLLM's custom all-reduce: any size up to 8 MiB on a full NVLink mesh (one-shot below the two-stage
    # threshold), only 2 GPUs over PCIe; otherwise NCCL's ring.
    assert parallel.allreduce_algorithm(16_384, 4, "nvlink4") == "one-shot"
    assert parallel.allreduce_algorithm(4 << 20, 4, "nvlink4") == "two-stage"
    assert parallel.allreduce_algorithm(64 << 20, 4, "nvlink4") == "ring"
    assert parallel.allreduce_algorithm(16_384, 2, "pcie4-x16") == "one-shot"
    assert parallel.allreduce_algorithm(16_384, 4, "pcie4-x16") == "ring"
    with pytest.raises(CalcError, match="interconnect"):
        parallel.allreduce_algorithm(16_384, 4, "carrier-pigeon")


def test_pcie_ring_latency_grows_with_the_ring_and_exceeds_nvlink():
    pcie = [parallel.interconnect_allreduce_latency_s("pcie4-x16", n) for n in (1, 2, 4, 8)]
    nvlink = [parallel.interconnect_allreduce_latency_s("nvlink4", n) for n in (1, 2, 4, 8)]
    assert pcie[0] == nvlink[0] == 0.0
    assert pcie[1] < pcie[2] < pcie[3]
    assert all(p > v for p, v in zip(pcie[1:], nvlink[1:]))
    # 8 GPUs over PCIe: the NCCL measurement the ring step comes from (42.14 us for 8 bytes, nccl#1530)
    assert pcie[3] == pytest.approx(42.14e-6, rel=0.01)
    # NVLink keeps the measured one-shot figures (the lesson's engine numbers do not move)
    assert nvlink[1:] == [parallel.allreduce_latency_s(n) for n in (2, 4, 8)]


def test_a100_pcie_tp4_decode_step_is_slower_than_when_priced_as_nvlink():
    # Before: the all-reduce over 4 A100 PCIe cards was priced with the NVLink one-shot latency (9.2 us).
    args = dict(new_tokens=32, kv_tokens_read=32 * 1500, attention_token_pairs=32 * 1500, sequences=32)
    engine = engine_profiles.engine_coefficients("llama-3.1-70b", "a100-pcie-80gb", tp=4)
    as_nvlink = roofline.step_coefficients("llama-3.1-70b", "a100-pcie-80gb", tp=4, efficiency=engine.efficiency,
                                           allreduce_latency_s=parallel.allreduce_latency_s(4))
    extra = engine.step_time_s(**args) - as_nvlink.step_time_s(**args)
    per_allreduce = parallel.interconnect_allreduce_latency_s("pcie4-x16", 4) - parallel.allreduce_latency_s(4)
    assert extra == pytest.approx(2 * 80 * per_allreduce, rel=1e-9)
    assert extra / as_nvlink.step_time_s(**args) > 0.04
    # the lesson's roofline on PCIe takes the PCIe ring too; on NVLink it keeps its round 10 us
    assert roofline.step_coefficients("llama-3.1-70b", "a100-pcie-80gb", tp=4).allreduce_latency_s == \
        parallel.interconnect_allreduce_latency_s("pcie4-x16", 4)
    assert roofline.step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4).allreduce_latency_s == 10e-6


def test_lesson_replica_all_reduce_unchanged():
    c = engine_profiles.engine_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    assert c.allreduce_latency_s == 9.2e-6
    assert round(roofline.step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4).comm_s(1) * 1000, 2) == 1.61
