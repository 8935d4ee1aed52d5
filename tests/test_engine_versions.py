"""Engine versions (issue #33): current engines' profiles beside the historical ones, with their defaults."""

import pytest

from calc import engine_profiles, engine_versions
from calc.errors import CalcError


def test_current_profiles_exist_and_inherit_named_fitted_terms():
    for key, parent in (("vllm-v1", "vllm"), ("sglang-0.4", "sglang-0.3"), ("trtllm-serve", "nim-trtllm")):
        p = engine_profiles.get_profile(key)
        q = engine_profiles.get_profile(parent)
        assert p.inherits == parent
        assert [getattr(p, t) for t in engine_profiles.TERMS] == [getattr(q, t) for t in engine_profiles.TERMS]
        assert all(role == "assumption" for _, role in p.roles)
    assert engine_profiles.FITTED_ENGINES == ("vllm", "vllm-0.6-multistep", "sglang-0.3", "nim-trtllm")


def test_each_version_brings_its_own_defaults():
    v1 = engine_versions.engine_defaults("vllm-v1", "h100-sxm-80gb", tp=1)
    assert (v1["max_num_seqs"], v1["max_num_batched_tokens"], v1["gpu_memory_utilization"]) == (1024, 8192, 0.9)
    assert engine_versions.engine_defaults("vllm-v1", "h100-sxm-80gb", offline=True)["max_num_batched_tokens"] == 16384
    assert engine_versions.engine_defaults("vllm-v1", "a100-80gb")["max_num_seqs"] == 256  # the A100 exception
    fractions = [engine_versions.engine_defaults("sglang-0.4", "h100-sxm-80gb", tp=t)["gpu_memory_utilization"]
                 for t in (1, 2, 4, 8)]
    assert fractions == [0.88, 0.87, 0.85, 0.81]
    assert engine_versions.engine_defaults("sglang-0.4", "rtx-3090")["max_num_batched_tokens"] == 2048
    trt = engine_versions.engine_defaults("trtllm-serve", "h100-sxm-80gb")
    assert (trt["max_num_seqs"], trt["max_num_batched_tokens"], trt["memory_model"]) == (2048, 8192, "trtllm")


def test_versions_map_to_the_covering_profile_or_the_nearest_and_say_so():
    assert engine_versions.resolve_engine("vllm", "0.11.0")[0] == "vllm-v1"
    assert engine_versions.resolve_engine("vllm", "0.6.3")[0] == "vllm-0.6-multistep"
    key, note = engine_versions.resolve_engine("vllm", "0.5.4")
    assert key == "vllm-0.6-multistep" and "nearest" in note
    assert engine_versions.resolve_engine("sglang", "0.5.0rc1".replace("rc1", ""))[0] == "sglang-0.4"
    with pytest.raises(CalcError, match="engine version"):
        engine_versions.resolve_engine("vllm", "next")


def test_current_vllm_maps_to_model_runner_v2_for_dense_models():
    """vLLM 0.25+ runs Model Runner V2 by default for dense models, 0.29+ for all (engine_versions.MRV2_SOURCE)."""
    assert engine_versions.resolve_engine("vllm", "0.24.1")[0] == "vllm-v1"
    key, note = engine_versions.resolve_engine("vllm", "0.25.0")
    assert key == "vllm-mrv2" and "nearest" not in note
    assert engine_profiles.get_profile("vllm-mrv2").memory_model == "vllm-v1-mrv2"
    assert engine_profiles.get_profile("vllm-mrv2").inherits == "vllm"
    moe_key, moe_note = engine_versions.resolve_engine("vllm", "0.27.0", moe=True)
    assert moe_key == "vllm-v1" and "dense models only" in moe_note
    assert engine_versions.resolve_engine("vllm", "0.29.0", moe=True)[0] == "vllm-mrv2"
    d = engine_versions.engine_defaults("vllm-mrv2", "h100-sxm-80gb")
    assert (d["max_num_seqs"], d["max_num_batched_tokens"], d["memory_model"]) == (1024, 8192, "vllm-v1-mrv2")
