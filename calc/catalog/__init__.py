"""Models and GPUs: a sourced catalog, and models from a Hugging Face ``config.json``.

>>> get_model("llama-3.1-70b").total_params
70553706496
>>> get_gpu("h100-sxm-80gb").memory_bytes_marketed
80000000000
>>> get_model("llama-3.1-9b")
Traceback (most recent call last):
...
calc.errors.CalcError: model must be one of deepseek-v3, llama-2-7b, llama-3.1-405b, llama-3.1-70b, llama-3.1-8b, llama-3.2-1b, llama-3.2-3b, llama-3.3-70b, mistral-7b, mixtral-8x7b, qwen2.5-72b, qwen2.5-7b, a path to a config.json, or config.json text; got 'llama-3.1-9b'
"""

from __future__ import annotations

import dataclasses
import os

from calc.catalog.gpu import FLOP_DTYPES, GPU, MEMORY_BASES
from calc.catalog.gpus import GPUS
from calc.catalog.hf_config import load_config, model_from_config
from calc.catalog.model import ATTENTION_KINDS, Linear, Model
from calc.catalog.models import MODELS
from calc.errors import CalcError

__all__ = [
    "Model", "GPU", "Linear", "MODELS", "GPUS", "get_model", "get_gpu", "model_from_config", "load_config",
    "ATTENTION_KINDS", "MEMORY_BASES", "FLOP_DTYPES",
]


#: Models built from a config.json in this process, by key: what a step's coefficients, a plan or a view that
#: carries only ``model.key`` finds again (the catalog's keys come first; an imported model never takes one).
_IMPORTED: dict[str, Model] = {}


#: Model fields that are bookkeeping, not shape: a config with the catalog's shape under its key is that model.
_NOT_SHAPE = ("name", "source", "published_params", "published_active_params", "tokenizer", "tokenizer_source")


def _same_shape(a: Model, b: Model) -> bool:
    return all(getattr(a, f.name) == getattr(b, f.name) for f in dataclasses.fields(Model) if f.name not in _NOT_SHAPE)


def _remember(model: Model) -> Model:
    """Keep an imported model findable by its key; under a catalog key only with the catalog's shape, else
    renamed ``<key>-config`` (so a lookup by key never swaps one model for another)."""
    if model.key in MODELS:
        if _same_shape(model, MODELS[model.key]):
            return model
        model = dataclasses.replace(model, key=f"{model.key}-config")
    _IMPORTED[model.key] = model
    return model


def get_model(key_or_path_or_config_text) -> Model:
    """A model by catalog key, by the path of a ``config.json``, or from pasted config text (or a dict).

    A :class:`Model` passes through unchanged, so callers can accept either. A model built from a config is
    found again by its key afterwards (a step's coefficients carry only the key).

    >>> get_model("mistral-7b").sliding_window
    4096
    >>> tiny = get_model('{"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,'
    ...                  ' "intermediate_size": 128, "vocab_size": 100}')
    >>> tiny.attention, tiny.key, get_model("custom") is tiny
    ('mha', 'custom', True)
    """
    value = key_or_path_or_config_text
    if isinstance(value, Model):
        return value
    if isinstance(value, dict):
        return _remember(model_from_config(value))
    if isinstance(value, str):
        text = value.strip()
        if text in MODELS:
            return MODELS[text]
        lowered = text.lower()
        if lowered in MODELS:
            return MODELS[lowered]
        if text in _IMPORTED:
            return _IMPORTED[text]
        if text.startswith("{"):
            return _remember(model_from_config(text))
        if text and "\n" not in text and len(text) < 4096 and os.path.isfile(text):
            stem = os.path.splitext(os.path.basename(text))[0]
            parent = os.path.basename(os.path.dirname(os.path.abspath(text)))
            return _remember(model_from_config(text, key=parent if stem == "config" and parent else stem))
    raise CalcError(
        f"model must be one of {', '.join(sorted(MODELS))}, a path to a config.json, or config.json text; "
        f"got {value!r}", "model")


def get_gpu(key) -> GPU:
    """A GPU from the catalog by key (a :class:`GPU` passes through unchanged).

    >>> get_gpu("mi300x").hbm_bytes_per_s
    5300000000000.0
    >>> get_gpu("rtx-2080")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: gpu must be one of a100-40gb, a100-80gb, a100-pcie-80gb, b200, h100-pcie-80gb, h100-sxm-80gb, h200, l4, l40s, mi300x, rtx-3090, rtx-4090, rtx-5090; got 'rtx-2080'
    """
    if isinstance(key, GPU):
        return key
    if isinstance(key, str) and key.strip().lower() in GPUS:
        return GPUS[key.strip().lower()]
    raise CalcError(f"gpu must be one of {', '.join(sorted(GPUS))}; got {key!r}", "gpu")
