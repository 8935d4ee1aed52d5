"""The search dimensions: a registry whose entries define the space, their scenario keys and their vLLM flags."""

from __future__ import annotations

import math

from calc.catalog import get_model
from calc.memory import allowed_tp
from calc.plan import space
from calc.plan.inputs import PlanRequest
from calc.sim.workload import RequestClass


def test_space_is_the_product_of_the_registry():
    req = PlanRequest(gpus=("h100-sxm-80gb",))
    cands = list(space.candidates(req))
    per_dim = {d.name: len(set(dict(c)[d.name] for c in cands)) for d in space.DIMENSIONS}
    assert per_dim["tp"] == len(allowed_tp(get_model(req.model), space.GPUS_PER_SERVER))
    assert per_dim["prefix_caching"] == 1  # no shared prefix in the traffic: caching is not searched
    assert len(cands) == math.prod(per_dim.values())
    assert len({space.key(c) for c in cands}) == len(cands)


def test_prefix_caching_is_searched_only_with_a_shared_prefix():
    shared = PlanRequest(gpus=("h100-sxm-80gb",), classes=(RequestClass(prompt_tokens=500, prefix_tokens=1500),))
    assert {dict(c)["prefix_caching"] for c in space.candidates(shared)} == {False, True}


def test_unpriced_gpus_are_left_out_with_their_reason():
    req = PlanRequest(gpus=("h100-sxm-80gb", "h200"))
    assert {dict(c)["gpu"] for c in space.candidates(req)} == {"h100-sxm-80gb"}
    assert space.unpriced_gpus(req) == ("h200",)
    priced = PlanRequest(gpus=("h100-sxm-80gb", "h200"), prices_usd_per_gpu_hour=(("h200", 1.0),))
    assert {dict(c)["gpu"] for c in space.candidates(priced)} == {"h100-sxm-80gb", "h200"}


def test_pipeline_stages_only_where_one_server_cannot_hold_the_weights():
    big = PlanRequest(model="llama-3.1-405b", gpus=("h100-sxm-80gb",), weights=("bf16",))
    assert {dict(c)["pp"] for c in space.candidates(big)} == {2, 4}
    assert {dict(c)["pp"] for c in space.candidates(PlanRequest(gpus=("h100-sxm-80gb",)))} == {1}


def test_every_dimension_spells_its_vllm_flags():
    c = (("gpu", "h100-sxm-80gb"), ("tp", 2), ("pp", 1), ("weights", "fp8"), ("kv_dtype", "fp8"),
         ("max_num_seqs", 128), ("max_num_batched_tokens", 2048), ("speculation", "eagle"), ("prefix_caching", True),
         ("layout", "aggregated"))
    flags = [f for name, value in c for f in space.BY_NAME[name].vllm(value)]
    assert flags[:2] == ["--tensor-parallel-size", "2"]
    for expected in ("--quantization", "--kv-cache-dtype", "--max-num-seqs", "--max-num-batched-tokens",
                     "--speculative-config", "--enable-prefix-caching"):
        assert expected in flags


def test_a_model_whose_heads_do_not_divide_by_eight_is_searched_at_the_tp_its_heads_allow():
    # Qwen2.5 7B has 28 attention heads: TP 8 is not a layout of it, so the widest TP in a server is 4
    # (the pipeline check once priced the weights at TP 8 and the whole plan failed on check_tp).
    req = PlanRequest(model="qwen2.5-7b", gpus=("h100-sxm-80gb", "l4"))
    cands = [dict(c) for c in space.candidates(req)]
    assert {c["tp"] for c in cands} == {1, 2, 4}
    assert {c["pp"] for c in cands} == {1}  # 7B fits one server whatever the GPU
