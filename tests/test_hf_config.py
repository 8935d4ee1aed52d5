"""Importing a Hugging Face config.json: every family's keys, and every malformed input as CalcError."""

import json
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import MODELS, get_model, model_from_config
from calc.errors import CalcError

CONFIGS = Path(__file__).parent / "data" / "configs"
SHAPE = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size",
         "tied_embeddings", "attention", "kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "qk_nope_head_dim",
         "v_head_dim", "sliding_window", "experts", "experts_per_token", "shared_experts",
         "moe_intermediate_size", "dense_layers", "qkv_bias")


@pytest.mark.parametrize("key", ["llama-3.1-8b", "llama-3.2-3b", "mistral-7b", "qwen2.5-7b", "mixtral-8x7b",
                                 "deepseek-v3"])
def test_fixture_configs_import_to_the_catalog_shape(key):
    path = CONFIGS / f"{key}.json"
    imported = model_from_config(str(path), key=key)
    catalog = MODELS[key]
    for field in SHAPE:
        assert getattr(imported, field) == getattr(catalog, field), field
    assert imported.total_params == catalog.total_params
    assert imported.active_params == catalog.active_params
    # same through get_model, from a path and from pasted text
    assert get_model(str(path)).total_params == catalog.total_params
    assert get_model(path.read_text()).total_params == catalog.total_params


def test_get_model_from_path_names_it_after_the_file():
    assert get_model(str(CONFIGS / "mistral-7b.json")).key == "mistral-7b"


def test_mha_mqa_gqa_from_kv_heads():
    base = {"num_hidden_layers": 2, "hidden_size": 256, "num_attention_heads": 8, "intermediate_size": 512,
            "vocab_size": 1000}
    assert model_from_config(base).attention == "mha"
    assert model_from_config({**base, "num_key_value_heads": 8}).attention == "mha"
    assert model_from_config({**base, "num_key_value_heads": 1}).attention == "mqa"
    assert model_from_config({**base, "num_key_value_heads": 2}).attention == "gqa"
    assert model_from_config({**base, "head_dim": 64}).head_dim == 64
    assert model_from_config(base).head_dim == 32


def test_sliding_window_and_its_switch():
    assert model_from_config(str(CONFIGS / "mistral-7b.json")).sliding_window == 4096
    assert model_from_config(str(CONFIGS / "qwen2.5-7b.json")).sliding_window is None  # use_sliding_window false
    assert model_from_config(str(CONFIGS / "mixtral-8x7b.json")).sliding_window is None  # null


def test_nested_text_config():
    m = model_from_config(str(CONFIGS / "llava-style-nested.json"))
    assert (m.layers, m.hidden_size, m.tied_embeddings) == (16, 2048, True)
    assert m.total_params == MODELS["llama-3.2-1b"].total_params


def test_deepseek_mla_and_moe_fields():
    m = model_from_config(str(CONFIGS / "deepseek-v3.json"))
    assert m.attention == "mla" and (m.kv_lora_rank, m.qk_rope_head_dim) == (512, 64)
    assert (m.experts, m.shared_experts, m.dense_layers, m.moe_intermediate_size) == (256, 1, 3, 2048)


GOOD = json.loads((CONFIGS / "llama-3.1-8b.json").read_text())


@pytest.mark.parametrize("key", ["num_hidden_layers", "hidden_size", "num_attention_heads", "vocab_size",
                                 "intermediate_size"])
def test_missing_key_is_named(key):
    cfg = {k: v for k, v in GOOD.items() if k != key}
    with pytest.raises(CalcError) as err:
        model_from_config(cfg)
    assert err.value.field == key and key in str(err.value)


@pytest.mark.parametrize("key,value", [
    ("num_hidden_layers", 0), ("hidden_size", -4096), ("num_attention_heads", "32"), ("vocab_size", 1.5),
    ("num_key_value_heads", 5), ("num_key_value_heads", 0), ("head_dim", True), ("intermediate_size", float("nan")),
    ("tie_word_embeddings", "yes"), ("sliding_window", -1), ("num_hidden_layers", 10**12)])
def test_bad_values_are_named(key, value):
    with pytest.raises(CalcError) as err:
        model_from_config({**GOOD, key: value})
    assert err.value.field == key


def test_moe_inconsistencies():
    mixtral = json.loads((CONFIGS / "mixtral-8x7b.json").read_text())
    with pytest.raises(CalcError) as err:
        model_from_config({**mixtral, "num_experts_per_tok": 9})
    assert err.value.field == "num_experts_per_tok"
    with pytest.raises(CalcError) as err:
        model_from_config({k: v for k, v in mixtral.items() if k != "num_experts_per_tok"})
    assert err.value.field == "num_experts_per_tok"
    ds = json.loads((CONFIGS / "deepseek-v3.json").read_text())
    with pytest.raises(CalcError) as err:
        model_from_config({**ds, "first_k_dense_replace": 61})
    assert err.value.field == "first_k_dense_replace"
    with pytest.raises(CalcError) as err:
        model_from_config({k: v for k, v in ds.items() if k != "qk_rope_head_dim"})
    assert err.value.field == "qk_rope_head_dim"


@pytest.mark.parametrize("text", ["", "   ", "{", "[1, 2]", "null", '{"a": 1', "not/a/file.json", "42",
                                  '"text"', "{}"])
def test_malformed_text(text):
    with pytest.raises(CalcError):
        model_from_config(text)


def test_unreadable_path(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_bytes(b"\xff\xfe{")
    with pytest.raises(CalcError) as err:
        model_from_config(str(bad))
    assert err.value.field == "config"


@settings(max_examples=200, deadline=None)
@given(st.one_of(st.text(max_size=200), st.dictionaries(st.text(max_size=20), st.one_of(
    st.integers(), st.floats(), st.text(max_size=5), st.booleans(), st.none()), max_size=8)))
def test_arbitrary_input_gives_a_model_or_calcerror(value):
    try:
        m = model_from_config(value)
    except CalcError:
        return
    assert m.total_params > 0


@settings(max_examples=200, deadline=None)
@given(st.fixed_dictionaries({
    "num_hidden_layers": st.one_of(st.integers(-3, 200), st.floats(allow_nan=True), st.none()),
    "hidden_size": st.sampled_from([0, 64, 4096, -1, 1.0, "x"]),
    "num_attention_heads": st.integers(-1, 64),
    "num_key_value_heads": st.one_of(st.none(), st.integers(-1, 64)),
    "intermediate_size": st.integers(-1, 20000),
    "vocab_size": st.integers(-1, 200000),
    "num_local_experts": st.one_of(st.none(), st.integers(0, 16)),
    "num_experts_per_tok": st.one_of(st.none(), st.integers(0, 16)),
}))
def test_fuzzed_configs_never_escape(cfg):
    try:
        m = model_from_config(cfg)
    except CalcError:
        return
    assert 0 < m.active_params <= m.total_params


# Gemma 2 9B's config.json as published (google/gemma-2-9b): no tie_word_embeddings key, a window on every other
# layer (Gemma2Config alternates sliding and full attention); its model page gives 9.24 B parameters.
GEMMA2_9B = {"architectures": ["Gemma2ForCausalLM"], "model_type": "gemma2", "num_hidden_layers": 42,
             "hidden_size": 3584, "num_attention_heads": 16, "num_key_value_heads": 8, "head_dim": 256,
             "intermediate_size": 14336, "vocab_size": 256000, "sliding_window": 4096,
             "max_position_embeddings": 8192}


def test_an_absent_tie_word_embeddings_takes_the_families_default():
    # Gemma ties its embeddings unless told otherwise; counting an untied output head would add 0.92 B.
    gemma = model_from_config({**GEMMA2_9B, "use_sliding_window": False}, key="gemma-2-9b")
    assert gemma.tied_embeddings is True
    assert gemma.total_params == pytest.approx(9.24e9, rel=1e-3)
    llama_like = {k: v for k, v in GEMMA2_9B.items() if k not in ("model_type", "sliding_window")}
    assert model_from_config({**llama_like, "model_type": "llama"}).tied_embeddings is False
    assert model_from_config({**llama_like, "model_type": "gemma2", "tie_word_embeddings": False}).tied_embeddings is False


@pytest.mark.parametrize("extra, why", [
    ({}, "model_type gemma2 interleaves"),
    ({"model_type": "mistral", "layer_types": ["sliding_attention", "full_attention"] * 21}, "21 of 42 layers"),
    ({"model_type": "gemma3_text", "sliding_window_pattern": 6}, "sliding_window_pattern 6"),
])
def test_a_window_on_some_layers_only_is_refused_by_name(extra, why):
    with pytest.raises(CalcError, match=why) as caught:
        model_from_config({**GEMMA2_9B, **extra})
    assert caught.value.field == "sliding_window" and "use_sliding_window" in str(caught.value)


def test_a_window_on_every_layer_is_kept():
    every = {**GEMMA2_9B, "model_type": "mistral", "layer_types": ["sliding_attention"] * 42}
    assert model_from_config(every).sliding_window == 4096
    assert model_from_config({**GEMMA2_9B, "use_sliding_window": False}).sliding_window is None
    # layer_types naming every layer full attention keeps no window, whatever sliding_window says
    full = {**GEMMA2_9B, "model_type": "qwen3", "layer_types": ["full_attention"] * 42}
    assert model_from_config(full).sliding_window is None


def test_a_model_built_from_a_config_is_found_again_by_its_key(tmp_path):
    # A step's coefficients carry only model.key: the roofline, the planner's screen and the speculative pages look
    # the model up again by it, so an imported model must resolve (plan --model config.json failed on that).
    path = tmp_path / "my-gqa-8b.json"
    path.write_text(json.dumps({k: v for k, v in GEMMA2_9B.items() if k != "sliding_window"} | {"model_type": "llama"}))
    model = get_model(str(path))
    assert model.key == "my-gqa-8b" and get_model("my-gqa-8b") is model
    # a config named like a catalog model never takes the catalog's key
    clash = tmp_path / "llama-3.1-8b.json"
    clash.write_text(path.read_text())
    imported = get_model(str(clash))
    assert imported.key == "llama-3.1-8b-config" and get_model("llama-3.1-8b") is MODELS["llama-3.1-8b"]
