"""Start-up logs of KV capacity predicted on the engine basis: a measurement's inputs to calc's own figure.

A ``kv_capacity`` row of ``calc/data/measurements.json`` names the model, GPU, precisions, the engine as its
log states it and the flags it ran with; :func:`logged_kv_prediction` sizes the KV cache as that engine does
(:mod:`calc.engine_memory`, :func:`calc.memory.kv_capacity` with ``memory_basis="engine"``), from calc's
figures alone, and :func:`calc.accuracy.logged_kv_errors` sets the result beside every log (issue #33: within 3% of each).
"""

from __future__ import annotations

from calc import engine_memory, memory
from calc.catalog import get_gpu, get_model, model_from_config
from calc.errors import check_choice
from calc.units import GiB

__all__ = ["logged_kv_prediction", "logged_kv_capacity", "UNITS"]

#: The units a start-up log states its KV capacity in.
UNITS = ("tokens", "blocks", "GiB")


def logged_kv_prediction(inputs: dict, unit: str = "tokens") -> float:
    """A start-up log's KV capacity on the engine basis, from calc's own figures (no term of the log used).

    ``inputs`` as a ``kv_capacity`` measurement gives them: a catalog model key or ``{"config": ...}``, a
    catalog GPU key, ``tp``, ``weights``, ``kv_dtype``, ``gpu_memory_utilization``, ``block_size``,
    ``max_model_len``, the ``engine`` (:func:`calc.engine_memory.memory_model_for`) and its
    ``engine_settings``; ``gpu_p2p`` false when the log says the TP group's GPUs have no peer-to-peer access
    (:func:`calc.engine_memory.non_torch_bytes`). The token budget and sequence cap are the engine's defaults
    unless set: V1's (:func:`calc.engine_memory.vllm_v1_batch_defaults`), or V0's 2,048 tokens (a whole prompt when longer,
    :func:`calc.engine_memory.profile_tokens`) and 256 sequences. ``unit``: ``tokens`` or ``blocks`` (whole
    numbers), or ``GiB``: the memory the cache is given, as a log that prints no token count states it.

    >>> logged_kv_prediction({"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "tp": 1, "weights": "bf16",
    ...     "kv_dtype": "bf16", "gpu_memory_utilization": 0.95, "block_size": 16, "max_model_len": 8192,
    ...     "engine": "vLLM v0.19.0", "engine_settings": {"max_num_batched_tokens": 8192}})
    474768
    """
    check_choice("unit", unit, UNITS)
    cap = logged_kv_capacity(inputs)
    if unit == "GiB":
        return cap.kv_cache_bytes / GiB
    return cap.kv_cache_blocks if unit == "blocks" else cap.kv_cache_tokens


def logged_kv_capacity(inputs: dict) -> memory.KVCapacity:
    """:func:`logged_kv_prediction`'s whole sizing, term by term (:class:`calc.memory.KVCapacity`).

    >>> cap = logged_kv_capacity({"model": "qwen2.5-7b", "gpu": "a100-80gb", "tp": 1, "weights": "bf16",
    ...     "kv_dtype": "bf16", "gpu_memory_utilization": 0.5, "block_size": 16, "max_model_len": 16384,
    ...     "engine": "vLLM v0.10.1.1"})
    >>> round((cap.activation_bytes + cap.non_torch_bytes) / GiB, 2)   # what V1 subtracts beyond the weights
    0.87
    """
    memory_model = engine_memory.memory_model_for(inputs["engine"])
    gpu = get_gpu(inputs["gpu"])
    tokens, seqs = engine_memory.vllm_v1_batch_defaults(gpu)
    if memory_model == "vllm-v0":
        tokens, seqs = 2048, 256
    settings = inputs.get("engine_settings") or {}
    tokens = settings.get("max_num_batched_tokens", tokens)
    seqs = settings.get("max_num_seqs", seqs)
    spec = inputs["model"]
    model = model_from_config(spec["config"]) if isinstance(spec, dict) else get_model(spec)
    non_torch = engine_memory.non_torch_bytes(memory_model, inputs["tp"], p2p=inputs.get("gpu_p2p", True))
    return memory.kv_capacity(model, gpu, tp=inputs["tp"], weights=inputs["weights"], kv_dtype=inputs["kv_dtype"],
                              gpu_memory_utilization=inputs["gpu_memory_utilization"],
                              block_size=inputs["block_size"], max_model_len=inputs.get("max_model_len"),
                              memory_basis="engine", memory_model=memory_model, max_num_batched_tokens=tokens,
                              max_num_seqs=seqs, non_torch_bytes=non_torch)
