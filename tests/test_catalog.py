"""The catalog: shapes give the published parameter counts; GPU figures carry their sources."""

import math

import pytest

from calc.catalog import GPU, GPUS, MODELS, Model, get_gpu, get_model
from calc.errors import CalcError
from calc.units import GB, MiB

MODEL_KEYS = ["llama-3.1-8b", "llama-3.1-70b", "llama-3.1-405b", "llama-3.2-1b", "llama-3.2-3b", "llama-3.3-70b",
              "llama-2-7b", "mistral-7b", "mixtral-8x7b", "qwen2.5-7b", "qwen2.5-72b", "deepseek-v3"]
GPU_KEYS = ["h100-sxm-80gb", "h200", "a100-80gb", "a100-40gb", "h100-pcie-80gb", "a100-pcie-80gb", "l40s", "l4",
            "rtx-3090", "rtx-4090", "rtx-5090", "b200", "mi300x"]


def test_catalog_has_the_issue_keys():
    assert sorted(MODELS) == sorted(MODEL_KEYS)
    assert sorted(GPUS) == sorted(GPU_KEYS)


@pytest.mark.parametrize("key", MODEL_KEYS)
def test_total_params_within_half_a_percent_of_published(key):
    m = MODELS[key]
    assert m.published_params
    assert abs(m.total_params / m.published_params - 1) < 0.005, (key, m.total_params)
    assert m.source and "config.json" in m.source


@pytest.mark.parametrize("key,exact", [
    ("llama-3.1-8b", 8_030_261_248), ("llama-3.1-70b", 70_553_706_496), ("mistral-7b", 7_241_732_096),
    ("llama-3.3-70b", 70_553_706_496), ("llama-2-7b", 6_738_415_616)])
def test_exact_counts_where_published_exactly(key, exact):
    assert MODELS[key].total_params == exact


def test_llama_2_7b_is_the_published_6_74_billion_with_full_multi_head_attention():
    m = MODELS["llama-2-7b"]
    assert abs(m.total_params / 6.74e9 - 1) < 0.005
    assert (m.layers, m.hidden_size, m.attention_heads, m.kv_heads, m.intermediate_size, m.vocab_size) == \
        (32, 4096, 32, 32, 11008, 32_000)
    assert m.attention == "mha" and m.head_dim == 128 and not m.tied_embeddings
    # MHA keeps every head's K and V: 2 x 32 layers x 32 heads x 128 x 2 bytes = 512 KiB per token in fp16.
    assert m.kv_values_per_token_per_layer * m.layers * 2 == 512 * 1024
    assert "Llama-2-7b-hf" in m.source and "max_position_embeddings 4096" in m.source


def test_llama_3_3_70b_has_llama_3_1_70b_shape_and_a_128k_window():
    new, old = MODELS["llama-3.3-70b"], MODELS["llama-3.1-70b"]
    shape = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size",
             "tied_embeddings", "attention")
    assert [getattr(new, f) for f in shape] == [getattr(old, f) for f in shape]
    assert new.total_params == old.total_params and new.name == "Llama 3.3 70B"
    assert "Llama-3.3-70B-Instruct" in new.source and "131,072" in new.source


def test_mixtral_total_and_active():
    m = MODELS["mixtral-8x7b"]
    assert abs(m.total_params / 46.7e9 - 1) < 0.005
    assert abs(m.active_params / 12.9e9 - 1) < 0.005


def test_deepseek_v3_total_and_active():
    m = MODELS["deepseek-v3"]
    assert abs(m.total_params / 671e9 - 1) < 0.005
    # DeepSeek publish "37B activated" to two digits without the counting rule; every
    # non-expert weight plus 8 routed and 1 shared expert per MoE layer gives 37.55 B.
    assert 37.0e9 < m.active_params < 37.6e9
    assert m.moe_layers == 58 and m.kv_values_per_token_per_layer == 576


def test_dense_models_are_fully_active():
    for key in MODEL_KEYS:
        m = MODELS[key]
        assert (m.active_params == m.total_params) == (not m.is_moe)
        assert m.active_params <= m.total_params


def test_tied_embeddings_count_once():
    m = MODELS["llama-3.2-1b"]
    assert m.tied_embeddings and m.other_params()["lm_head"] == 0
    untied = Model(**{**m.__dict__, "tied_embeddings": False})
    assert untied.total_params - m.total_params == m.vocab_size * m.hidden_size


def test_head_dim_not_hidden_over_heads():
    m = MODELS["llama-3.2-3b"]
    assert m.head_dim == 128 and m.hidden_size // m.attention_heads == 128  # 3072/24 = 128
    q = MODELS["qwen2.5-7b"]
    assert q.hidden_size / q.attention_heads == 128 and q.qkv_bias


def test_get_model_accepts_key_case_insensitively_and_passes_model_through():
    m = get_model("Llama-3.1-70B")
    assert m is MODELS["llama-3.1-70b"]
    assert get_model(m) is m


@pytest.mark.parametrize("bad", ["llama-9b", "", None, 3, "{broken"])
def test_get_model_rejects_unknown(bad):
    with pytest.raises(CalcError) as err:
        get_model(bad)
    assert err.value.field in ("model", "config")


@pytest.mark.parametrize("key", GPU_KEYS)
def test_gpu_figures_are_sane_and_sourced(key):
    g = GPUS[key]
    assert isinstance(g, GPU)
    assert g.memory_bytes_marketed % GB == 0
    assert 0.9 < g.memory_bytes_runtime / g.memory_bytes_marketed < 1.1
    assert g.memory_runtime_source and g.source
    assert g.hbm_bytes_per_s > 1e11 and g.interconnect_bytes_per_s > 1e10
    assert set(g.flops_per_s) <= {"bf16", "fp16", "fp8", "int8", "fp4"}
    assert all(math.isfinite(v) and v > 1e13 for v in g.flops_per_s.values())
    assert g.flops_per_s["bf16"] == g.flops_per_s["fp16"]
    if "fp8" in g.flops_per_s:
        assert round(g.flops_per_s["fp8"] / g.flops_per_s["bf16"], 1) in (2.0,)


def test_gpu_figures_from_published_md():
    h100 = GPUS["h100-sxm-80gb"]
    assert h100.memory_bytes_marketed == 80e9
    assert h100.memory_bytes_runtime == 81_559 * MiB
    assert round(h100.memory_bytes_runtime / 1e9, 1) == 85.5
    assert h100.hbm_bytes_per_s == 3.35e12 and h100.flops_per_s["bf16"] == 989e12
    assert GPUS["h200"].memory_bytes_runtime == 143_771 * MiB
    assert GPUS["a100-80gb"].memory_bytes_runtime == 81_920 * MiB
    assert GPUS["a100-40gb"].hbm_bytes_per_s == 1.555e12
    assert GPUS["b200"].flops_per_s["fp8"] == 4500e12
    assert round(GPUS["b200"].memory_bytes_runtime / 2**30) == 179  # "179 GB usable" is GiB
    assert GPUS["mi300x"].flops_per_s["bf16"] == 1307e12
    assert "fp8" not in GPUS["a100-80gb"].flops_per_s


def test_rtx_3090_from_the_ga102_whitepaper_and_nvidia_smi():
    g = GPUS["rtx-3090"]
    assert g.memory_bytes_marketed == 24e9 and g.memory_bytes_runtime == 24_576 * MiB == 24 * 2**30
    assert g.hbm_bytes_per_s == 936e9
    # Dense tensor throughput with FP32 accumulate (GeForce runs it at half the FP16-accumulate rate).
    assert g.flops_per_s == {"bf16": 71e12, "fp16": 71e12, "int8": 284e12}
    assert "fp8" not in g.flops_per_s and "GA102" in g.source and "FP32 accumulate" in g.source
    assert g.interconnect_bytes_per_s == 32e9 and "PCIe Gen4" in g.source
    assert round(g.ridge_point_flops_per_byte("bf16")) == 76
    assert "24,576 MiB" in g.memory_runtime_source and "23.58" in g.memory_runtime_source


def test_pcie_data_centre_parts_from_the_datasheets_pcie_columns():
    h100, a100 = GPUS["h100-pcie-80gb"], GPUS["a100-pcie-80gb"]
    # H100 PCIe: HBM2e at 2.0 TB/s, not the SXM part's HBM3 at 3.35; tensor cores at 756 dense (1,513 sparse).
    assert h100.hbm_bytes_per_s == 2.0e12 and h100.flops_per_s["bf16"] == 756e12
    assert h100.flops_per_s["fp8"] == h100.flops_per_s["int8"] == 1513e12
    assert h100.flops_per_s["bf16"] < GPUS["h100-sxm-80gb"].flops_per_s["bf16"]
    assert h100.memory_bytes_runtime == GPUS["h100-sxm-80gb"].memory_bytes_runtime == 81_559 * MiB
    # A100 PCIe 80GB: the same GA100 tensor cores as the SXM part, a slower HBM2e (1,935 against 2,039 GB/s).
    assert a100.hbm_bytes_per_s == 1.935e12 and a100.flops_per_s == GPUS["a100-80gb"].flops_per_s
    assert a100.memory_bytes_runtime == 81_920 * MiB and "fp8" not in a100.flops_per_s
    # GPU-to-GPU over PCIe one way: Gen5 x16 64 GB/s, Gen4 x16 32 GB/s; the optional NVLink bridge is named.
    assert h100.interconnect_bytes_per_s == 64e9 and "PCIe Gen5" in h100.source and "NVLink bridge" in h100.source
    assert a100.interconnect_bytes_per_s == 32e9 and "PCIe Gen4" in a100.source and "NVLink bridge" in a100.source
    assert "1,513" in h100.source and "1,935" in a100.source
    assert round(h100.ridge_point_flops_per_byte("bf16")) == 378
    for g in (h100, a100):
        assert "nvidia-smi" in g.memory_runtime_source
    assert "no price" in a100.source and h100.price_usd_per_hour is not None


def test_every_price_is_dated_and_sourced_and_the_rest_have_none():
    priced = {key for key, g in GPUS.items() if g.price_usd_per_hour is not None}
    assert priced == {"h100-sxm-80gb", "h100-pcie-80gb", "a100-40gb", "a100-80gb", "l40s", "l4"}
    for key, g in GPUS.items():
        if key in priced:
            assert g.price_usd_per_hour > 0 and g.price_date == "2026-05-07"
            assert g.price_source.split(" ")[0] in ("Lambda", "Modal")  # the seller, named first
            assert "lambda.ai" in g.price_source or "modal.com/pricing" in g.price_source
        else:
            assert g.price_date is None and g.price_source is None
    # the H100 stays the lesson's price; a bigger, faster GPU costs more an hour than a smaller one from one seller
    assert GPUS["h100-sxm-80gb"].price_usd_per_hour == 3.78
    assert GPUS["h100-sxm-80gb"].price_usd_per_hour > GPUS["h100-pcie-80gb"].price_usd_per_hour > \
        GPUS["a100-40gb"].price_usd_per_hour
    assert GPUS["a100-80gb"].price_usd_per_hour > GPUS["l40s"].price_usd_per_hour > GPUS["l4"].price_usd_per_hour


def test_get_gpu_and_bad_inputs():
    assert get_gpu("H100-SXM-80GB") is GPUS["h100-sxm-80gb"]
    with pytest.raises(CalcError) as err:
        get_gpu("rtx-2080")
    assert err.value.field == "gpu" and "h100-sxm-80gb" in str(err.value)
    with pytest.raises(CalcError):
        GPUS["h100-sxm-80gb"].memory_bytes("nominal")
    with pytest.raises(CalcError) as err:
        GPUS["a100-80gb"].flops("fp8")
    assert "bf16" in str(err.value)


@pytest.mark.parametrize("field,value", [
    ("layers", 0), ("hidden_size", -1), ("kv_heads", 3), ("attention", "sparse"), ("head_dim", 1.5),
    ("experts_per_token", 3)])
def test_model_validation_names_the_field(field, value):
    base = {**MODELS["llama-3.1-8b"].__dict__}
    if field == "experts_per_token":
        base.update(experts=2, moe_intermediate_size=128)
    base[field] = value
    with pytest.raises(CalcError) as err:
        Model(**base)
    assert err.value.field == field
