"""Read a Hugging Face ``config.json`` (a dict, pasted JSON text, or a file path) into a :class:`Model`.

Keys understood, as the ``transformers`` config classes name them (LlamaConfig,
MistralConfig, Qwen2Config, MixtralConfig, DeepseekV3Config):

* shape: ``num_hidden_layers``, ``hidden_size``, ``num_attention_heads``,
  ``intermediate_size``, ``vocab_size``, ``head_dim`` (absent or null means
  hidden_size / num_attention_heads);
* attention: ``num_key_value_heads`` (absent means MHA, 1 means MQA, fewer
  than the heads means GQA), ``kv_lora_rank`` (present means MLA, with
  ``qk_rope_head_dim``, ``qk_nope_head_dim``, ``v_head_dim``, ``q_lora_rank``),
  ``sliding_window`` (ignored when ``use_sliding_window`` is false, as Qwen2 sets it);
* experts: ``num_local_experts`` / ``n_routed_experts`` / ``num_experts``,
  ``num_experts_per_tok``, ``n_shared_experts``, ``first_k_dense_replace``,
  ``moe_intermediate_size`` (Mixtral's experts use ``intermediate_size``);
* ``tie_word_embeddings``: absent means the default of the ``model_type``'s transformers config class
  (false for Llama, Mistral, Qwen2 and most; true for Gemma, Cohere 2, StarCoder2 and the others listed in
  ``calc/data/hf_tied_embeddings.json``, written by ``scripts/hf_tied_defaults.py``);
  ``attention_bias`` or ``model_type`` "qwen2" for q/k/v biases;
* a sliding window on some layers only (``layer_types`` mixing "sliding_attention" and
  "full_attention", ``sliding_window_pattern``, or a family that interleaves them: Gemma 2 and 3,
  Cohere 2, gpt-oss) is refused by name: calc prices a window on every layer or on none;
* a nested ``text_config`` (multimodal checkpoints) is read when the top level has no layers.

Anything malformed raises :class:`calc.errors.CalcError` naming the key.

>>> m = model_from_config('{"num_hidden_layers": 32, "hidden_size": 4096, "num_attention_heads": 32,'
...     ' "num_key_value_heads": 8, "intermediate_size": 14336, "vocab_size": 128256}')
>>> m.attention, m.head_dim, m.total_params
('gqa', 128, 8030261248)
"""

from __future__ import annotations

import functools
import json
import math
import os

from calc.catalog.model import Model
from calc.errors import CalcError

__all__ = ["model_from_config", "load_config", "tied_by_default"]

_MAX_SIZE = 10**9

_TIED_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "hf_tied_embeddings.json")

#: Families whose config classes put the window on some layers only, when config.json does not list
#: ``layer_types`` (transformers: Gemma2Config alternates sliding and full layers; Gemma3TextConfig keeps one
#: full layer in ``sliding_window_pattern`` 6; Cohere2Config one in 4; GptOssConfig alternates).
INTERLEAVED_WINDOW_TYPES = ("gemma2", "gemma3", "gemma3_text", "cohere2", "gpt_oss")


@functools.cache
def _tied_types() -> frozenset:
    with open(_TIED_PATH, encoding="utf-8") as handle:
        return frozenset(json.load(handle)["model_types"])


def tied_by_default(model_type) -> bool:
    """Whether ``model_type``'s transformers config class ties the embeddings when config.json does not say.

    >>> tied_by_default("gemma2"), tied_by_default("llama"), tied_by_default(None)
    (True, False, False)
    """
    return isinstance(model_type, str) and model_type in _tied_types()


def _windowed_layers(cfg: dict) -> tuple[int, int] | None:
    """(layers with a sliding window, layers) as ``layer_types`` names them, or None when it does not."""
    kinds = cfg.get("layer_types")
    if not (isinstance(kinds, list) and kinds):
        return None
    return sum(1 for k in kinds if isinstance(k, str) and "sliding" in k), len(kinds)


def _interleaved_window(cfg: dict) -> str | None:
    """Why the config's sliding window covers some layers only, or None (every layer, or none)."""
    named = _windowed_layers(cfg)
    if named is not None:
        sliding, total = named
        return f"layer_types puts it on {sliding} of {total} layers" if 0 < sliding < total else None
    pattern = cfg.get("sliding_window_pattern")
    if isinstance(pattern, int) and not isinstance(pattern, bool) and pattern > 1:
        return f"sliding_window_pattern {pattern} keeps one layer in {pattern} at full attention"
    if cfg.get("model_type") in INTERLEAVED_WINDOW_TYPES:
        return f"model_type {cfg['model_type']} interleaves windowed and full-attention layers"
    return None


def load_config(config: dict | str) -> dict:
    """Return the config as a dict: ``config`` may be a dict, JSON text or a path to a file.

    >>> load_config('{"hidden_size": 64}')
    {'hidden_size': 64}
    >>> load_config("{not json")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: config is not valid JSON (line 1, column 2: Expecting property name enclosed in double quotes)
    """
    if isinstance(config, dict):
        data = config
    elif isinstance(config, (str, bytes)):
        text = config.decode("utf-8", "replace") if isinstance(config, bytes) else config
        stripped = text.strip()
        if not stripped.startswith("{") and len(stripped) < 4096 and "\n" not in stripped:
            try:
                is_file = os.path.isfile(stripped)
            except (OSError, ValueError):
                is_file = False
            if not is_file:
                raise CalcError(
                    f"config must be JSON text starting with '{{' or the path of a config.json file; "
                    f"got {stripped[:80]!r} (no such file)", "config")
            try:
                with open(stripped, encoding="utf-8") as handle:
                    text = handle.read()
            except (OSError, UnicodeDecodeError) as exc:
                raise CalcError(f"config file {stripped!r} cannot be read: {exc}", "config") from None
        try:
            data = json.loads(text)
        except json.JSONDecodeError as exc:
            raise CalcError(
                f"config is not valid JSON (line {exc.lineno}, column {exc.colno}: {exc.msg})", "config"
            ) from None
        except RecursionError:
            raise CalcError("config is not valid JSON (nested too deeply)", "config") from None
    else:
        raise CalcError(f"config must be a dict, JSON text or a file path; got {type(config).__name__}", "config")
    if not isinstance(data, dict):
        raise CalcError(f"config must be a JSON object {{...}}; got {type(data).__name__}", "config")
    return data


def _int(cfg: dict, key: str, *, required: bool = True, default=None, low: int = 1):
    value = cfg.get(key)
    if value is None:
        if required:
            raise CalcError(f"config key {key} is missing: it must be a whole number of at least {low}", key)
        return default
    if isinstance(value, bool) or not isinstance(value, (int, float)) or (
            isinstance(value, float) and (not math.isfinite(value) or value != int(value))):
        raise CalcError(f"config key {key} must be a whole number of at least {low}; got {value!r}", key)
    value = int(value)
    if not low <= value <= _MAX_SIZE:
        raise CalcError(f"config key {key} must be a whole number between {low} and {_MAX_SIZE:,}; got {value}", key)
    return value


def _bool(cfg: dict, key: str, default: bool) -> bool:
    value = cfg.get(key, default)
    if value is None:
        return default
    if not isinstance(value, bool):
        raise CalcError(f"config key {key} must be true or false; got {value!r}", key)
    return value


def _first(cfg: dict, keys: tuple[str, ...]) -> str | None:
    for key in keys:
        if cfg.get(key) is not None:
            return key
    return None


def model_from_config(config: dict | str, key: str = "custom") -> Model:
    """Build a :class:`Model` from a Hugging Face ``config.json`` (dict, JSON text or file path).

    Mixtral's keys give a mixture of experts; DeepSeek-V3's give MLA with
    shared experts and dense first layers (``first_k_dense_replace``).

    >>> mixtral = {"model_type": "mixtral", "num_hidden_layers": 32, "hidden_size": 4096,
    ...     "num_attention_heads": 32, "num_key_value_heads": 8, "intermediate_size": 14336,
    ...     "vocab_size": 32000, "num_local_experts": 8, "num_experts_per_tok": 2}
    >>> m = model_from_config(mixtral, key="my-mixtral")
    >>> m.experts, m.experts_per_token, m.total_params, m.active_params
    (8, 2, 46702792704, 12879925248)
    >>> model_from_config({"hidden_size": 4096})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: config key num_hidden_layers is missing: it must be a whole number of at least 1
    """
    cfg = load_config(config)
    if cfg.get("num_hidden_layers") is None and isinstance(cfg.get("text_config"), dict):
        cfg = {**cfg, **cfg["text_config"]}
    if not isinstance(key, str) or not key.strip():
        raise CalcError(f"key must be a non-empty string; got {key!r}", "key")

    layers = _int(cfg, "num_hidden_layers")
    hidden = _int(cfg, "hidden_size")
    heads = _int(cfg, "num_attention_heads")
    vocab = _int(cfg, "vocab_size")
    kv_heads = _int(cfg, "num_key_value_heads", required=False, default=heads)
    if kv_heads > heads or heads % kv_heads:
        raise CalcError(
            f"config key num_key_value_heads must divide num_attention_heads ({heads}); got {kv_heads}",
            "num_key_value_heads")

    mla = cfg.get("kv_lora_rank") is not None
    head_dim = _int(cfg, "head_dim", required=False)
    mla_fields = {}
    if mla:
        mla_fields = {
            "kv_lora_rank": _int(cfg, "kv_lora_rank"),
            "qk_rope_head_dim": _int(cfg, "qk_rope_head_dim"),
            "qk_nope_head_dim": _int(cfg, "qk_nope_head_dim"),
            "v_head_dim": _int(cfg, "v_head_dim"),
            "q_lora_rank": _int(cfg, "q_lora_rank", required=False, default=0),
        }
        head_dim = mla_fields["qk_nope_head_dim"] + mla_fields["qk_rope_head_dim"]
        attention = "mla"
    else:
        if head_dim is None:
            if hidden % heads:
                raise CalcError(
                    f"config key head_dim is missing and hidden_size ({hidden}) is not a multiple of "
                    f"num_attention_heads ({heads}); give head_dim", "head_dim")
            head_dim = hidden // heads
        attention = "mha" if kv_heads == heads else ("mqa" if kv_heads == 1 else "gqa")

    expert_key = _first(cfg, ("num_local_experts", "n_routed_experts", "num_experts"))
    experts = _int(cfg, expert_key) if expert_key else 0
    moe = {}
    if experts:
        per_token = _int(cfg, "num_experts_per_tok")
        if per_token > experts:
            raise CalcError(
                f"config key num_experts_per_tok must be between 1 and {expert_key} ({experts}); got {per_token}",
                "num_experts_per_tok")
        dense_layers = _int(cfg, "first_k_dense_replace", required=False, default=0, low=0)
        if dense_layers >= layers:
            raise CalcError(
                f"config key first_k_dense_replace must be between 0 and {layers - 1}; got {dense_layers}",
                "first_k_dense_replace")
        moe = {
            "experts": experts,
            "experts_per_token": per_token,
            "shared_experts": _int(cfg, "n_shared_experts", required=False, default=0, low=0),
            "dense_layers": dense_layers,
        }
    intermediate = _int(cfg, "intermediate_size", required=not experts or "moe_intermediate_size" not in cfg)
    if experts:
        moe["moe_intermediate_size"] = _int(cfg, "moe_intermediate_size", required=False, default=intermediate)
        if moe["moe_intermediate_size"] is None:
            raise CalcError("config key moe_intermediate_size (or intermediate_size) is missing", "moe_intermediate_size")
    if intermediate is None:  # an MoE config with no dense MLP anywhere
        intermediate = moe["moe_intermediate_size"]

    sliding = None
    named = _windowed_layers(cfg)
    no_windowed_layer = named is not None and named[0] == 0  # layer_types names every layer full attention
    if cfg.get("sliding_window") is not None and _bool(cfg, "use_sliding_window", True) and not no_windowed_layer:
        sliding = _int(cfg, "sliding_window")
        why = _interleaved_window(cfg)
        if why:
            raise CalcError(
                f"config key sliding_window ({sliding}) applies to some layers only ({why}); calc prices a "
                f"window on every layer or on none: set use_sliding_window to false to price every layer at full "
                f"attention (an upper bound on the KV cache)", "sliding_window")

    model_type = cfg.get("model_type")
    qkv_bias = _bool(cfg, "attention_bias", False) or (isinstance(model_type, str) and model_type.startswith("qwen2"))
    name = cfg.get("_name_or_path") or (f"{model_type} ({key})" if isinstance(model_type, str) else key)
    return Model(
        key=key.strip(), name=str(name), layers=layers, hidden_size=hidden, attention_heads=heads,
        kv_heads=kv_heads, head_dim=head_dim, intermediate_size=intermediate, vocab_size=vocab,
        tied_embeddings=_bool(cfg, "tie_word_embeddings", tied_by_default(model_type)), attention=attention,
        sliding_window=sliding, qkv_bias=qkv_bias, published_params=None,
        source="Hugging Face config.json supplied by the user", **mla_fields, **moe,
    )
