"""Memory: step 1's table (docs/lesson/01-a-70b-assistant.md), the vLLM log of issue #10517, properties, and bad inputs."""

import dataclasses
import math

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.catalog import GPUS, MODELS, Model, get_model
from calc.errors import CalcError
from calc.memory import (
    KV_DTYPES, WEIGHT_FORMATS, allowed_tp, check_tp, default_activation_bytes, default_non_torch_bytes, kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_by_attention, kv_bytes_per_token_per_gpu, kv_capacity, kv_heads_per_gpu, kv_tokens_per_request, weight_bytes, weights_bytes_per_gpu,
)
from calc.units import GB, GiB, KiB, MiB

L70, L8, M7 = MODELS["llama-3.1-70b"], MODELS["llama-3.1-8b"], MODELS["mistral-7b"]


# ---- step 1's table ------------------------------------------------------------------

def test_35_gb_of_weights_per_gpu():
    assert round(weights_bytes_per_gpu(L70, tp=4) / GB, 1) == 35.3
    assert round(L70.total_params / 1e9, 1) == 70.6


def test_vllm_takes_90_percent_of_80_gb_and_leaves_32_7_gb():
    cap = lesson.kv_capacity()
    assert cap.total_bytes == 80e9 and cap.requested_bytes == 72e9 and cap.unclaimed_bytes == 8e9
    assert cap.activation_bytes + cap.non_torch_bytes == 4e9
    assert (cap.activation_bytes, cap.non_torch_bytes) == (default_activation_bytes(), default_non_torch_bytes(4))
    assert round(cap.kv_cache_bytes / GB, 1) == 32.7
    terms = [cap.weights_bytes, cap.activation_bytes, cap.non_torch_bytes, cap.cuda_graph_bytes, cap.kv_cache_bytes]
    assert math.isclose(math.fsum(terms), cap.requested_bytes)


def test_399169_tokens_for_the_replica():
    # The running example's one capacity: the lesson's count of the bf16 weights (70.6e9 x 2 B / 4 = 35.3 GB).
    cap = lesson.kv_capacity()
    assert cap.kv_cache_tokens_raw == 399_169 == lesson.KV_CAPACITY_TOKENS
    assert cap.weights_bytes == 35.3e9
    assert cap.kv_cache_tokens == cap.kv_cache_blocks * 16 == 399_168 == lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS
    assert lesson.kv_capacity(rounded_params=True) == cap  # bf16: the default is the lesson's count
    # Every tensor weighed (calc.memory.kv_capacity): its own named quantity, within 0.1%.
    exact = lesson.kv_capacity(rounded_params=False)
    assert exact == kv_capacity(L70, "h100-sxm-80gb", tp=4, weights="bf16", gpu_memory_utilization=0.9)
    assert exact.kv_cache_tokens_raw == 399_452 == lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS
    assert exact.kv_cache_tokens == 399_440 == lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS
    assert abs(exact.kv_cache_tokens / 399_169 - 1) < 0.001
    assert cap.kv_bytes_per_token_per_gpu == exact.kv_bytes_per_token_per_gpu == 81_920
    assert cap.kv_bytes_per_token == 320 * KiB


def test_runtime_basis_gives_about_15_percent_more():
    runtime = lesson.kv_capacity(memory_basis="runtime")
    assert runtime.total_bytes == 81_559 * MiB
    assert round(runtime.total_bytes / GB, 1) == 85.5
    assert 0.14 < runtime.kv_cache_tokens / lesson.kv_capacity().kv_cache_tokens - 1 < 0.16


def test_kv_bytes_per_token_formula_and_drill():
    assert kv_bytes_per_token(L8) == 2 * 32 * 8 * 128 * 2 == 131_072 == 128 * KiB
    assert kv_bytes_per_token(L8, "fp8") == 65_536
    assert kv_bytes_per_request(L8, 4000) == 524_288_000  # about half a gigabyte
    assert round(kv_bytes_per_request(L8, 4000) / 1e6) == 524


def test_mistral_workshop_figures():
    assert round(weight_bytes(M7).total_bytes / GB, 1) == 14.5
    assert round(kv_bytes_per_token(M7) / 1e3) == 131
    int4 = weight_bytes(M7, "int4")
    assert round(int4.nominal_bytes / GB, 1) == 3.6  # the workshop's "3.6 GB at INT4"
    assert round(weight_bytes(M7, "int4", quantize_embeddings=True).payload_bytes / GB, 1) == 3.6
    assert int4.payload_bytes < int4.nominal_bytes < int4.total_bytes
    assert int4.scale_bytes > 0 and int4.unquantized_bytes == 2 * (2 * 32000 * 4096 + 65 * 4096)


def test_contiguous_concurrency_cap_from_capacity():
    assert lesson.kv_capacity().kv_cache_tokens_raw // 8192 == 48
    # vLLM's "maximum concurrency": the block-rounded KV tokens over max_model_len (48.73x at 8,192).
    assert lesson.kv_capacity(max_model_len=8192).max_concurrency == pytest.approx(399_168 / 8192)
    assert lesson.kv_capacity(rounded_params=False, max_model_len=8192).max_concurrency == pytest.approx(399_440 / 8192)


# ---- the vLLM log (issue #10517) ----------------------------------------------------------

def test_vllm_issue_10517_log():
    cap = kv_capacity(L8, None, tp=1, gpu_memory_utilization=0.90, gpu_memory_bytes=23.58 * GiB,
                      weights_bytes=14.9888 * GiB, activation_bytes=2.07 * GiB, non_torch_bytes=0.35 * GiB,
                      max_model_len=20_000, block_size=16)
    assert cap.kv_cache_bytes / GiB == pytest.approx(3.81, rel=0.01)
    assert cap.kv_cache_blocks == pytest.approx(1952, rel=0.01)
    assert cap.kv_cache_blocks == 1952
    assert cap.max_concurrency == pytest.approx(1.56, rel=0.01)
    assert cap.memory_basis == "given" and cap.gpu_key is None


def test_kv_cache_given_directly():
    cap = kv_capacity(L8, "h100-sxm-80gb", kv_cache_bytes=3.81 * GiB, max_model_len=20_000)
    assert cap.kv_cache_bytes == 3.81 * GiB and cap.kv_cache_blocks == 1950


def test_cuda_graph_pool_is_subtracted():
    base = lesson.kv_capacity()
    graphs = lesson.kv_capacity(cuda_graph_bytes=1e9)
    assert base.kv_cache_bytes - graphs.kv_cache_bytes == pytest.approx(1e9)


# ---- tensor parallelism ------------------------------------------------------------------

def test_kv_heads_split_and_replicate():
    assert [kv_heads_per_gpu(L70, tp) for tp in (1, 2, 4, 8, 16, 32, 64)] == [8, 4, 2, 1, 1, 1, 1]
    assert kv_bytes_per_token_per_gpu(L70, 16) == kv_bytes_per_token_per_gpu(L70, 8)


def test_mla_latent_not_split():
    ds = MODELS["deepseek-v3"]
    assert kv_bytes_per_token(ds) == 61 * 576 * 2
    for tp in (1, 2, 8, 16):
        assert kv_bytes_per_token_per_gpu(ds, tp) == kv_bytes_per_token(ds)


@pytest.mark.parametrize("tp", [3, 5, 6, 7, 12, 0, -1, 2.5, 128])
def test_bad_tp_names_tp_and_allowed_values(tp):
    with pytest.raises(CalcError) as err:
        check_tp(L70, tp)
    assert err.value.field == "tp"


def test_bad_tp_message_lists_allowed():
    with pytest.raises(CalcError) as err:
        kv_capacity(L70, "h100-sxm-80gb", tp=3)
    assert "1, 2, 4, 8, 16, 32, 64" in str(err.value) and "got 3" in str(err.value)


def test_tp_must_fit_kv_heads():
    qwen = MODELS["qwen2.5-7b"]  # 28 heads, 4 KV heads
    assert allowed_tp(qwen) == [1, 2, 4, 28]
    with pytest.raises(CalcError):
        check_tp(qwen, 7)


# ---- sliding window, attention kinds ---------------------------------------------------------

def test_sliding_window_caps_a_request():
    assert kv_tokens_per_request(M7, 100_000) == 4096
    assert kv_bytes_per_request(M7, 100_000) == 4096 * 131_072
    assert kv_tokens_per_request(L8, 100_000) == 100_000


def test_attention_kinds_side_by_side():
    by = kv_bytes_per_token_by_attention(L70)
    assert by["gqa"] == kv_bytes_per_token(L70)
    assert by["mha"] == 8 * by["gqa"] and by["mqa"] * 8 == by["gqa"]
    assert by["mla"] < by["gqa"]
    assert kv_bytes_per_token_by_attention(MODELS["deepseek-v3"])["mla"] == kv_bytes_per_token(MODELS["deepseek-v3"])


# ---- weights ----------------------------------------------------------------------------

def test_weight_terms_add_up_and_shrink_with_bits():
    for m in MODELS.values():
        sizes = {f: weight_bytes(m, f) for f in WEIGHT_FORMATS}
        for wb in sizes.values():
            assert wb.payload_bytes + wb.scale_bytes + wb.unquantized_bytes == wb.total_bytes
        assert sizes["bf16"].total_bytes == sizes["fp16"].total_bytes == 2 * m.total_params
        assert sizes["bf16"].scale_bytes == 0
        assert sizes["bf16"].total_bytes > sizes["fp8"].total_bytes > sizes["int4"].total_bytes
        assert sizes["fp8"].total_bytes == sizes["int8"].total_bytes


def test_fp8_weights_nearly_halve():
    ratio = weight_bytes(L70, "fp8").total_bytes / weight_bytes(L70).total_bytes
    assert 0.5 < ratio < 0.52


def test_group_size_changes_scales_only():
    small = weight_bytes(L8, "int4", group_size=32)
    big = weight_bytes(L8, "int4", group_size=128)
    assert small.payload_bytes == big.payload_bytes and small.scale_bytes == 4 * big.scale_bytes


# ---- bad inputs --------------------------------------------------------------------------

@pytest.mark.parametrize("kwargs,field", [
    ({"weights": "int3"}, "weights"), ({"kv_dtype": "int4"}, "kv_dtype"),
    ({"gpu_memory_utilization": 0}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"gpu_memory_utilization": float("nan")}, "gpu_memory_utilization"),
    ({"block_size": 0}, "block_size"), ({"block_size": 16.5}, "block_size"),
    ({"max_model_len": 0}, "max_model_len"), ({"memory_basis": "nominal"}, "memory_basis"),
    ({"gpu_memory_bytes": -1}, "gpu_memory_bytes"), ({"gpu_memory_bytes": 0}, "gpu_memory_bytes"),
    ({"weights_bytes": -5}, "weights_bytes"), ({"activation_bytes": float("inf")}, "activation_bytes"),
    ({"non_torch_bytes": -1}, "non_torch_bytes"), ({"cuda_graph_bytes": -1}, "cuda_graph_bytes"),
    ({"kv_cache_bytes": 0}, "kv_cache_bytes"), ({"tp": 3}, "tp"),
])
def test_bad_capacity_inputs(kwargs, field):
    with pytest.raises(CalcError) as err:
        lesson.kv_capacity(**kwargs)
    assert err.value.field == field


def test_model_that_does_not_fit():
    with pytest.raises(CalcError) as err:
        kv_capacity("llama-3.1-405b", "h100-sxm-80gb", tp=4)
    msg = str(err.value)
    assert err.value.field == "tp" and "does not fit" in msg and "tp one of 16" in msg


def test_no_room_left_for_kv():
    with pytest.raises(CalcError) as err:
        kv_capacity(L70, "h100-sxm-80gb", tp=2, gpu_memory_utilization=0.9)
    assert err.value.field == "gpu_memory_utilization"


def test_unknown_model_and_gpu():
    with pytest.raises(CalcError) as err:
        kv_capacity("gpt-5", "h100-sxm-80gb")
    assert err.value.field == "model"
    with pytest.raises(CalcError) as err:
        kv_capacity(L8, "rtx-2080")
    assert err.value.field == "gpu"
    with pytest.raises(CalcError) as err:
        kv_capacity(L8, None)
    assert err.value.field == "gpu"


def test_to_dict_has_the_keys_and_is_finite():
    d = lesson.kv_capacity(max_model_len=8192).to_dict()
    for key in ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "weights_bytes_per_gpu", "kv_cache_tokens",
                "kv_cache_tokens_raw", "kv_cache_blocks", "max_concurrency", "total_bytes", "requested_bytes",
                "activation_bytes", "non_torch_bytes", "cuda_graph_bytes", "kv_cache_bytes"):
        assert key in d
    for value in d.values():
        if isinstance(value, float):
            assert math.isfinite(value) and value >= 0
    assert d["kv_cache_tokens"] == 399_168 and d["weights_bytes_per_gpu"] == 35_300_000_000
    exact = lesson.kv_capacity(rounded_params=False, max_model_len=8192).to_dict()
    assert exact["kv_cache_tokens"] == 399_440 and exact["weights_bytes_per_gpu"] == 35_276_853_248


# ---- properties -------------------------------------------------------------------------

models = st.sampled_from(sorted(MODELS))
gpus = st.sampled_from(sorted(GPUS))


@settings(max_examples=150, deadline=None)
@given(models, gpus, st.sampled_from([1, 2, 4, 8]), st.sampled_from(WEIGHT_FORMATS), st.sampled_from(KV_DTYPES),
       st.floats(0.3, 0.98), st.floats(1.0, 1.5))
def test_more_memory_never_gives_fewer_tokens(key, gpu, tp, weights, kv_dtype, util, factor):
    model = MODELS[key]
    assume(tp in allowed_tp(model))
    mem = GPUS[gpu].memory_bytes_marketed
    try:
        small = kv_capacity(model, None, tp=tp, weights=weights, kv_dtype=kv_dtype, gpu_memory_utilization=util,
                            gpu_memory_bytes=mem)
    except CalcError:
        return
    big = kv_capacity(model, None, tp=tp, weights=weights, kv_dtype=kv_dtype, gpu_memory_utilization=util,
                      gpu_memory_bytes=mem * factor)
    assert big.kv_cache_tokens >= small.kv_cache_tokens
    assert big.kv_cache_tokens_raw >= small.kv_cache_tokens_raw
    higher = kv_capacity(model, None, tp=tp, weights=weights, kv_dtype=kv_dtype,
                         gpu_memory_utilization=min(1.0, util + 0.01), gpu_memory_bytes=mem)
    assert higher.kv_cache_tokens >= small.kv_cache_tokens


@settings(max_examples=100, deadline=None)
@given(models, st.integers(1, 200), st.sampled_from(KV_DTYPES))
def test_kv_per_token_linear_in_layers(key, layers, kv_dtype):
    base = MODELS[key]
    deeper = dataclasses.replace(base, layers=layers, dense_layers=min(base.dense_layers, layers - 1))
    one = dataclasses.replace(base, layers=1, dense_layers=0)
    assert kv_bytes_per_token(deeper, kv_dtype) == layers * kv_bytes_per_token(one, kv_dtype)


@settings(max_examples=100, deadline=None)
@given(models, st.sampled_from(WEIGHT_FORMATS), st.sampled_from([32, 64, 128, 256]))
def test_quantizing_never_grows_the_weights(key, fmt, group):
    m = MODELS[key]
    assert weight_bytes(m, fmt, group_size=group).total_bytes <= weight_bytes(m, "bf16").total_bytes
    assert weight_bytes(m, fmt, group_size=group).payload_bytes <= weight_bytes(m, "bf16").payload_bytes


@settings(max_examples=100, deadline=None)
@given(models, st.sampled_from([1, 2, 4, 8, 16, 32, 64]), st.sampled_from(KV_DTYPES))
def test_tp_never_changes_the_logical_kv_per_token(key, tp, kv_dtype):
    m = MODELS[key]
    assume(tp in allowed_tp(m))
    cap_kwargs = dict(tp=tp, kv_dtype=kv_dtype, kv_cache_bytes=1e10)
    assert kv_capacity(m, "h100-sxm-80gb", **cap_kwargs).kv_bytes_per_token == kv_bytes_per_token(m, kv_dtype)
    per_gpu = kv_bytes_per_token_per_gpu(m, tp, kv_dtype)
    assert per_gpu * tp >= kv_bytes_per_token(m, kv_dtype)  # replication only ever adds
    if m.attention != "mla" and tp <= m.kv_heads:
        assert per_gpu * tp == kv_bytes_per_token(m, kv_dtype)


@settings(max_examples=150, deadline=None)
@given(st.one_of(st.floats(-1e12, 1e12), st.floats(allow_nan=True, allow_infinity=True)),
       st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.integers(-10, 10**6)),
       st.one_of(st.none(), st.integers(-5, 10**7)))
def test_fuzzed_overrides_give_numbers_or_calcerror(mem, util, max_len):
    try:
        cap = kv_capacity(L8, None, gpu_memory_bytes=mem, gpu_memory_utilization=util, max_model_len=max_len)
    except CalcError:
        return
    d = cap.to_dict()
    for v in d.values():
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            assert math.isfinite(v) and v >= 0
