"""Step 1: the memory view of the running example, its facts, and bad configurations as calc's messages."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.errors import CalcError
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.units import GB, GiB
from calc.widgets import a_70b_assistant as step
from calc.widgets import framework
from calc.widgets.runtime import handle

VIEW = "a_70b_assistant.memory_view"
FLIGHT = "a_70b_assistant.tokens_in_flight"


def outputs(name=VIEW, **args):
    return framework.call(name, args)["outputs"]


def test_default_view_is_the_lesson_replica():
    out = outputs()
    assert out["weights_bytes_per_gpu"]["value"] == pytest.approx(35.3 * GB)
    assert out["weights_bytes_per_gpu"]["text"] == "35.3 GB"
    assert out["requested_bytes"]["value"] == pytest.approx(72 * GB)
    assert out["requested_bytes"]["text"] == "72 GB"
    assert out["kv_cache_bytes_per_gpu"]["value"] == pytest.approx(32.7 * GB)
    assert out["kv_cache_bytes_per_gpu"]["text"] == "32.7 GB"
    assert out["kv_bytes_per_token_per_gpu"]["value"] == 81_920
    assert out["kv_bytes_per_token"]["value"] == 327_680
    assert out["kv_bytes_per_token"]["text"] == "327,680 B (320 KiB)"
    assert out["kv_cache_tokens"]["value"] == 399_169
    assert out["other_count_tokens"]["value"] == 399_452
    assert out["other_count_tokens"]["text"] == "399,452 (+0.07%)"
    assert out["vllm_blocks"]["text"] == "24,948 blocks of 16 = 399,168"
    assert out["max_requests"]["value"] == 311  # 399,169 // 1,280
    assert out["gpu_memory"]["text"] == "80 GB = 74.5 GiB"
    assert out["overhead_bytes"]["value"] == pytest.approx(4 * GB)  # the lesson's 4 GB, split 2.5 + 1.5


def test_both_parameter_counts_agree_within_a_tenth_of_a_percent():
    lesson = outputs(parameter_count="lesson")["kv_cache_tokens"]["value"]
    exact = outputs(parameter_count="exact")["kv_cache_tokens"]["value"]
    assert (lesson, exact) == (399_169, 399_452)
    assert abs(exact - lesson) / lesson < 0.001
    # The exact view points back at the lesson's figure.
    assert outputs(parameter_count="exact")["other_count_tokens"]["text"] == "399,169 (-0.07%)"


def test_the_view_matches_calc_memory_directly():
    cap = lesson.kv_capacity(rounded_params=True, max_model_len=1280)
    out = outputs()
    assert out["kv_cache_bytes_per_gpu"]["value"] == pytest.approx(cap.kv_cache_bytes)
    assert out["kv_cache_tokens"]["value"] == cap.kv_cache_tokens_raw
    exact = lesson.kv_capacity(rounded_params=False)
    assert outputs(parameter_count="exact")["weights_bytes_per_gpu"]["value"] == exact.weights_bytes == 35_276_853_248


def test_runtime_basis_gives_about_15_percent_more_and_says_mib():
    out = outputs(memory_basis="runtime")
    assert out["gpu_memory"]["text"] == "85.5 GB = 81,559 MiB = 79.6 GiB"
    gain = out["kv_cache_tokens"]["value"] / 399_169 - 1
    assert 0.14 < gain < 0.16


def test_chart_stacks_to_the_gpu_and_has_one_bar_per_gpu():
    figure = framework.call(VIEW, {})["figures"]["memory"]
    assert [t["name"] for t in figure["data"]] == [
        "Weights", "Activation workspace", "Non-torch overhead", "KV cache", "Unclaimed (1 − utilization)"]
    assert all(len(t["x"]) == 4 for t in figure["data"])
    assert sum(t["x"][0] for t in figure["data"]) == pytest.approx(80.0)
    assert figure["data"][3]["x"][0] == pytest.approx(32.7)
    assert figure["layout"]["shapes"][0]["x0"] == pytest.approx(72.0)
    many = framework.call(VIEW, {"tp": 16})["figures"]["memory"]
    assert many["data"][0]["y"] == ["each of 16 GPUs"]


def test_terms_table_shows_gb_and_gib():
    rows = framework.call(VIEW, {})["tables"]["terms"]["rows"]
    by_name = {row[0]: row for row in rows}
    assert by_name["GPU memory"][1:4] == ["80,000,000,000", "80", "74.5"]
    assert by_name["= KV cache"][2:4] == ["32.7", "30.5"]
    assert by_name["unclaimed"][2] == "8"


def test_fp8_weights_free_memory_for_kv():
    bf16 = outputs()["kv_cache_tokens"]["value"]
    fp8 = outputs(weights="fp8")["kv_cache_tokens"]["value"]
    assert fp8 > 1.5 * bf16


@pytest.mark.parametrize("args, field, words", [
    ({"tp": 3}, "tp", "must divide the 64 attention heads"),
    ({"model": "deepseek-v3"}, "tp", "does not fit"),
    ({"tp": 2}, "gpu_memory_utilization", "no memory left for the KV cache"),
    ({"gpu": "l4", "tp": 1}, "tp", "does not fit"),
    ({"gpu_memory_utilization": 0.3}, "tp", "does not fit"),
    ({"model": "qwen2.5-7b", "tp": 8}, "tp", "one of 1, 2, 4, 28"),
])
def test_bad_configurations_raise_calc_errors_naming_the_field(args, field, words):
    with pytest.raises(CalcError) as caught:
        framework.call(VIEW, args)
    assert caught.value.field == field
    assert words in str(caught.value)
    # Through the worker protocol: an input error with the same message, never a crash.
    answer = json.loads(handle(json.dumps({"id": 1, "op": "call", "fn": VIEW, "args": args})))
    assert answer["ok"] is False and answer["error"]["kind"] == "input"
    assert answer["error"]["message"] == str(caught.value)


def test_tokens_in_flight_defaults():
    out = outputs(FLIGHT)
    assert out["request_tokens"]["value"] == 1_280
    assert out["requests_that_fit"]["value"] == 311
    assert out["tokens_in_flight"]["value"] == 256_000
    assert out["kv_use"]["text"] == "64.1%"
    assert out["waiting"]["value"] == 0
    assert out["kv_bytes_per_request"]["value"] == 1_280 * 327_680


def test_tokens_in_flight_over_capacity_queues_the_rest():
    out = outputs(FLIGHT, prompt_tokens=8_192 - 256, requests_in_flight=60)
    assert out["requests_that_fit"]["value"] == 48  # the lesson's 399,169 / 8,192
    assert out["waiting"]["value"] == 12
    assert out["kv_use"]["text"] == "100%, full"


def test_facts():
    f = step.facts()
    assert f["weights_per_gpu"] == "35.3 GB"
    assert f["requested"] == "72 GB"
    assert f["kv_per_gpu"] == "32.7 GB"
    assert f["kv_per_token_gpu"] == "81,920 bytes"
    assert f["kv_per_token_kib"] == "320 KiB"
    assert f["kv_tokens"] == "399,169"
    assert f["kv_tokens_exact"] == "399,452"
    assert f["kv_tokens_exact_change"] == "+0.07%"
    assert f["requests_at_max_len"] == "48"
    assert f["requests_at_request_len"] == "311"
    assert f["overhead_total"] == "4 GB"
    assert f["gpu_runtime_mib"] == "81,559 MiB"
    assert f["runtime_gain_pct"] == "15%"
    assert f["gpu_gib"] == "74.5 GiB"
    assert f["gib_over_gb_pct"] == "7.4%"
    assert f["kv_heads_per_gpu"] == "2"
    assert all(isinstance(v, str) and v for v in f.values())


@settings(max_examples=40, deadline=None)
@given(
    model=st.sampled_from(sorted(step.MODELS)),
    gpu=st.sampled_from(sorted(step.GPUS)),
    tp=st.sampled_from([1, 2, 3, 4, 8, 16, 64]),
    weights=st.sampled_from(WEIGHT_FORMATS),
    kv_dtype=st.sampled_from(KV_DTYPES),
    utilization=st.floats(0.01, 1.0),
    basis=st.sampled_from(["marketed", "runtime"]),
    count=st.sampled_from(lesson.PARAMETER_COUNTS),
    request=st.integers(1, 10_000_000),
)
def test_any_configuration_gives_a_consistent_view_or_a_calc_error(model, gpu, tp, weights, kv_dtype, utilization,
                                                                  basis, count, request):
    args = dict(model=model, gpu=gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, gpu_memory_utilization=utilization,
                memory_basis=basis, parameter_count=count, request_tokens=request)
    try:
        result = framework.call(VIEW, args)
    except CalcError as error:
        assert error.field in framework.REGISTRY[VIEW].controls
        return
    out = result["outputs"]
    stack = sum(trace["x"][0] for trace in result["figures"]["memory"]["data"])
    assert stack == pytest.approx(out["gpu_memory"]["value"] / GB, rel=1e-4)
    assert out["kv_cache_bytes_per_gpu"]["value"] > 0
    assert out["kv_cache_tokens"]["value"] >= 1
    assert out["max_requests"]["value"] == out["kv_cache_tokens"]["value"] // request
    cap = lesson.replica_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                                gpu_memory_utilization=utilization, memory_basis=basis, parameter_count=count)
    assert out["kv_cache_tokens"]["value"] == cap.kv_cache_tokens_raw == int(cap.kv_cache_bytes
                                                                             // cap.kv_bytes_per_token_per_gpu)
    json.dumps(result)


def test_gib_is_never_used_for_gb():
    out = outputs()
    assert out["gpu_memory"]["value"] == 80 * GB != 80 * GiB
