"""Quantization: fewer bytes per weight (and per cached value), what that buys, and what it may cost.

Decode is memory-bound, so halving the bytes per weight nearly halves the time of
a small-batch decode step, and the memory the weights free becomes KV cache: more
sequences in flight. The price is accuracy, which must be measured on your own
tasks; published deltas for Llama 3.1 are listed with their sources
(:data:`ACCURACY`). The weight bytes come from :func:`calc.memory.weight_bytes`,
the step times from :mod:`calc.roofline`, the KV room from
:func:`calc.memory.kv_capacity`.

Mistral-7B (the workshop's example): 14.5 GB of 16-bit weights; 3.6 GB "at INT4"
(every parameter at 4 bits), of which the linear layers' 4-bit payload is 3.49 GB,
with group scales and 16-bit embeddings as separate terms.

>>> rows = {r["weights"]: r for r in weight_formats_table("mistral-7b", "h100-sxm-80gb")}
>>> round(rows["bf16"]["total_bytes"] / 1e9, 1), round(rows["int4"]["nominal_bytes"] / 1e9, 1)
(14.5, 3.6)
"""

from __future__ import annotations

from calc import memory
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_choice, check_range
from calc.roofline import itl_s, step_coefficients

__all__ = [
    "FORMAT_NOTES",
    "KV_FORMAT_NOTES",
    "ACCURACY",
    "STUDY_SUMMARY",
    "STUDY_SOURCE",
    "accuracy_deltas",
    "weight_formats_table",
    "kv_formats_table",
]

#: What each weight format is, in a line, with where it runs.
FORMAT_NOTES = {
    "bf16": "16-bit brain float: the checkpoint as trained, the reference for every comparison",
    "fp16": "16-bit IEEE half: same bytes as bf16, narrower range",
    "fp8": "8-bit float (E4M3) weights and activations (W8A8-FP8); FP8 tensor cores on Hopper, Ada and later",
    "int8": "8-bit integer weights and activations (W8A8-INT8, SmoothQuant-style); INT8 tensor cores",
    "int4": "4-bit integer weights with 16-bit activations (W4A16: GPTQ, AWQ); dequantized to compute in 16 bits",
    "nf4": "4-bit NormalFloat weights (bitsandbytes, QLoRA); dequantized to compute in 16 bits",
}

#: KV cache formats. Source for fp8: vLLM docs, "FP8 E4M3 KV Cache" / "Quantized KV Cache".
KV_FORMAT_NOTES = {
    "bf16": "16-bit KV, the default",
    "fp16": "16-bit KV",
    "fp8": "8-bit float KV (E4M3 with a scale): half the bytes per token; vLLM docs: 'studies have shown that "
    "FP8 E4M3 quantization typically only minimally degrades inference accuracy'",
}

_NM = "Neural Magic / Red Hat model card on Hugging Face, OpenLLM v1 average, quantized vs base on the same card"
_CARDS_FP8 = "RedHatAI/Meta-Llama-3.1-{}-Instruct-FP8"
_CARDS_W4 = "RedHatAI/Meta-Llama-3.1-{}-Instruct-quantized.w4a16"
_KURTIC = ("Kurtic et al., '\"Give Me BF16 or Give Me Death\"? Accuracy-Performance Trade-Offs in LLM "
           "Quantization', arXiv 2411.02355 (500,000+ evaluations on Llama 3.1)")

#: Published accuracy of quantized checkpoints against their 16-bit base (reference/published.md).
ACCURACY = (
    {"model": "llama-3.1-70b", "weights": "fp8", "metric": "OpenLLM v1 average", "base": 84.40, "quantized": 84.29,
     "source": f"{_NM}: {_CARDS_FP8.format('70B')}"},
    {"model": "llama-3.1-70b", "weights": "int4", "metric": "OpenLLM v1 average", "base": 78.67, "quantized": 78.54,
     "source": f"{_NM}: {_CARDS_W4.format('70B')} (W4A16)"},
    {"model": "llama-3.1-8b", "weights": "fp8", "metric": "OpenLLM v1 average", "base": 73.79, "quantized": 73.44,
     "source": f"{_NM}: {_CARDS_FP8.format('8B')}"},
    {"model": "llama-3.1-8b", "weights": "int4", "metric": "OpenLLM v1 average", "base": 69.32, "quantized": 67.57,
     "source": f"{_NM}: {_CARDS_W4.format('8B')} (W4A16)"},
)

#: The large study's conclusion per format (qualitative; no single number). Source: :data:`STUDY_SOURCE`.
STUDY_SOURCE = _KURTIC
STUDY_SUMMARY = {
    "fp8": "effectively lossless",
    "int8": "tuned W8A8-INT8 loses 1-3%",
    "int4": "W4A16 competitive with 8-bit",
    "nf4": "not covered by the study: measure it",
}


def accuracy_deltas(model=None, weights: str | None = None) -> list[dict]:
    """Published accuracy deltas (quantized - base, in points and relative), optionally for one model or format.

    Source: :data:`ACCURACY` (Neural Magic / Red Hat model cards, as collected in
    reference/published.md).

    >>> [(r["model"], r["weights"], round(r["delta_points"], 2)) for r in accuracy_deltas("llama-3.1-8b")]
    [('llama-3.1-8b', 'fp8', -0.35), ('llama-3.1-8b', 'int4', -1.75)]
    >>> round(accuracy_deltas("llama-3.1-70b", "int4")[0]["recovery"], 4)
    0.9983
    """
    key = None if model is None else get_model(model).key
    if weights is not None:
        check_choice("weights", weights, memory.WEIGHT_FORMATS)
    out = []
    for row in ACCURACY:
        if key is not None and row["model"] != key:
            continue
        if weights is not None and row["weights"] != weights:
            continue
        out.append({**row, "delta_points": row["quantized"] - row["base"], "recovery": row["quantized"] / row["base"]})
    return out


def _coef(model, gpu, tp, weights, kv_dtype):
    return step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)


def weight_formats_table(model, gpu, *, tp: int = 1, kv_dtype: str = "bf16", batch: int = 1, context_tokens: int = 1024,
                         gpu_memory_utilization: float = 0.9, memory_basis: str = "marketed", group_size: int = 128) -> list[dict]:
    """One row per weight format: bytes per weight, weight bytes, decode speed-up, KV room, published accuracy.

    * ``bits_per_weight``: the payload's width; ``effective_bits_per_weight``:
      all weight bytes x 8 / parameters (scales and 16-bit layers included);
    * ``decode_speedup``: bf16 decode step time / this format's, at ``batch`` and
      ``context_tokens`` on the roofline (nearly 2x for fp8 at batch 1);
    * ``kv_tokens`` and ``kv_room_gain``: vLLM KV capacity of the replica, and its
      ratio to bf16's (``None`` when the weights do not fit);
    * ``accuracy``: published deltas for this model and format, if any, and the
      large study's summary for the format.
    Source: :func:`calc.memory.weight_bytes`, :func:`calc.memory.kv_capacity`,
    :mod:`calc.roofline`, :data:`ACCURACY`, :data:`STUDY_SUMMARY` (arXiv 2411.02355).

    >>> rows = {r["weights"]: r for r in weight_formats_table("llama-3.1-70b", "h100-sxm-80gb", tp=4)}
    >>> round(rows["fp8"]["decode_speedup"], 2), round(rows["fp8"]["kv_room_gain"], 2)
    (1.78, 1.52)
    """
    model = get_model(model)
    gpu = get_gpu(gpu)
    batch = check_range("batch", batch, 1, 1_000_000, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    base_step = itl_s(_coef(model, gpu, tp, "bf16", kv_dtype), batch=batch, context_tokens=context_tokens)
    base_kv = None
    rows = []
    for fmt in memory.WEIGHT_FORMATS:
        wb = memory.weight_bytes(model, fmt, group_size=group_size)
        step = itl_s(_coef(model, gpu, tp, fmt, kv_dtype), batch=batch, context_tokens=context_tokens)
        try:
            kv_tokens = memory.kv_capacity(model, gpu, tp=tp, weights=fmt, kv_dtype=kv_dtype,
                                           gpu_memory_utilization=gpu_memory_utilization,
                                           memory_basis=memory_basis).kv_cache_tokens
        except CalcError:
            kv_tokens = None
        if fmt == "bf16":
            base_kv = kv_tokens
        published = accuracy_deltas(model, fmt)
        rows.append({
            "weights": fmt,
            "note": FORMAT_NOTES[fmt],
            "bits_per_weight": memory.WEIGHT_BITS[fmt],
            "effective_bits_per_weight": wb.total_bytes * 8 / model.total_params,
            "payload_bytes": wb.payload_bytes,
            "scale_bytes": wb.scale_bytes,
            "unquantized_bytes": wb.unquantized_bytes,
            "total_bytes": wb.total_bytes,
            "nominal_bytes": wb.nominal_bytes,
            "weights_bytes_per_gpu": wb.total_bytes / tp,
            "decode_step_s": step,
            "decode_speedup": base_step / step,
            "kv_tokens": kv_tokens,
            "kv_room_gain": (kv_tokens / base_kv) if kv_tokens and base_kv else None,
            "accuracy": [{"metric": r["metric"], "base": r["base"], "quantized": r["quantized"],
                          "delta_points": r["delta_points"], "source": r["source"]} for r in published],
            "study_summary": STUDY_SUMMARY.get(fmt),
            "study_source": STUDY_SOURCE if fmt in STUDY_SUMMARY else None,
        })
    return rows


def kv_formats_table(model, gpu, *, tp: int = 1, weights: str = "bf16", batch: int = 64, context_tokens: int = 4096,
                     gpu_memory_utilization: float = 0.9, memory_basis: str = "marketed") -> list[dict]:
    """One row per KV cache format: bytes per token, KV capacity, and the decode step at a KV-heavy batch.

    KV quantization leaves the weights alone: it doubles the tokens that fit
    (fp8 against 16-bit) and halves the KV bytes each decode step reads, which
    matters when the batch's KV outweighs the weights (long contexts, big
    batches). ``decode_speedup`` is against bf16 KV at ``batch`` and
    ``context_tokens`` (assuming attention kernels that read fp8 directly).
    Source: :func:`calc.memory.kv_bytes_per_token_per_gpu`,
    :func:`calc.memory.kv_capacity`, :mod:`calc.roofline`; :data:`KV_FORMAT_NOTES`.

    >>> rows = {r["kv_dtype"]: r for r in kv_formats_table("llama-3.1-8b", "h100-sxm-80gb")}
    >>> rows["fp8"]["kv_bytes_per_token"], round(rows["fp8"]["kv_room_gain"], 2), round(rows["fp8"]["decode_speedup"], 2)
    (65536, 2.0, 1.53)
    """
    model = get_model(model)
    gpu = get_gpu(gpu)
    batch = check_range("batch", batch, 1, 1_000_000, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    rows = []
    base_step = base_kv = None
    for dtype in memory.KV_DTYPES:
        step = itl_s(_coef(model, gpu, tp, weights, dtype), batch=batch, context_tokens=context_tokens)
        try:
            kv_tokens = memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=dtype,
                                           gpu_memory_utilization=gpu_memory_utilization,
                                           memory_basis=memory_basis).kv_cache_tokens
        except CalcError:
            kv_tokens = None
        if dtype == "bf16":
            base_step, base_kv = step, kv_tokens
        rows.append({
            "kv_dtype": dtype,
            "note": KV_FORMAT_NOTES[dtype],
            "bytes_per_value": memory.KV_DTYPE_BYTES[dtype],
            "kv_bytes_per_token": memory.kv_bytes_per_token(model, dtype),
            "kv_bytes_per_token_per_gpu": memory.kv_bytes_per_token_per_gpu(model, tp, dtype),
            "kv_tokens": kv_tokens,
            "kv_room_gain": (kv_tokens / base_kv) if kv_tokens and base_kv else None,
            "decode_step_s": step,
            "decode_speedup": base_step / step,
        })
    return rows
