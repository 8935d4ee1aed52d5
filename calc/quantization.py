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

import functools
import math
import random
from bisect import bisect_left
from statistics import NormalDist

from calc import memory
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_choice, check_range
from calc.memory import WEIGHT_BITS, check_tp, kv_capacity, kv_tokens_per_request
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
    "formats_rows",
    "users_per_format",
    "NF4_OFFSET",
    "nf4_levels",
    "quantize_group",
    "normal_sample",
    "rounding_errors",
    "rounding_error",
    "SAMPLE_GROUPS",
    "SAMPLE_WEIGHTS",
    "sample_groups",
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

#: Published accuracy of quantized checkpoints against their 16-bit base (each row names its model card).
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

    Source: :data:`ACCURACY` (the Neural Magic / Red Hat model cards on Hugging Face each row names).

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


# --- how 4 bits hold a weight: absmax integers and the NF4 code --------------------------------

#: Context per request in the formats table's "users" column.
CONTEXT_TOKENS = 4_096
#: The formats the workshop compares (FP16, INT8, INT4, NF4) plus bf16 and fp8, as calc.memory knows them.
FORMAT_ORDER = memory.WEIGHT_FORMATS
#: bitsandbytes ``create_normal_map(offset=0.9677083)``: the NF4 code's outermost quantile (QLoRA, appendix).
NF4_OFFSET = 0.9677083
#: Group sizes offered: GPTQ/AWQ's common 128, bitsandbytes' NF4 block of 64, and others.
GROUP_SIZES = (32, 64, 128, 256)
ROUNDING_SCHEMES = ("int8", "int4", "nf4")
#: Groups of weights a rounding-error sample draws by default.
SAMPLE_GROUPS = 200
#: Weights a sample of big groups is held to (200 groups of 64): see :func:`sample_groups`.
SAMPLE_WEIGHTS = 12_800
#: Index of the NF4 code's exact zero among its 16 levels (7 negative levels come first).
_NF4_ZERO = 7


def formats_rows(model, gpu, *, tp: int = 1, group_size: int = 128, context_tokens: int = CONTEXT_TOKENS) -> list[dict]:
    """:func:`calc.quantization.weight_formats_table` plus the requests of ``context_tokens`` each format fits.

    ``users`` = KV cache tokens (vLLM's sizing at 90% of each GPU) // tokens per
    request; None when the weights do not fit. Source: :mod:`calc.quantization`,
    :func:`calc.memory.kv_capacity`.

    >>> rows = {r["weights"]: r for r in formats_rows("mistral-7b", "l4")}
    >>> rows["bf16"]["users"], rows["int4"]["users"]
    (7, 26)
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    check_choice("group_size", group_size, GROUP_SIZES)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    per_request = kv_tokens_per_request(model, context_tokens)
    rows = weight_formats_table(model, gpu, tp=tp, group_size=group_size, context_tokens=context_tokens)
    for row in rows:
        row["users"] = None if row["kv_tokens"] is None else row["kv_tokens"] // per_request
    return rows


def users_per_format(model, gpu, *, tp: int = 1, context_tokens: int = CONTEXT_TOKENS) -> dict[str, int | None]:
    """Requests of ``context_tokens`` that fit per weight format (None: the weights do not fit).

    Source: :func:`calc.memory.kv_capacity`.

    >>> users_per_format("mistral-7b", "l4")["int4"]
    26
    """
    model = get_model(model)
    out = {}
    for fmt in FORMAT_ORDER:
        try:
            cap = kv_capacity(model, gpu, tp=tp, weights=fmt)
        except CalcError:
            out[fmt] = None
            continue
        out[fmt] = cap.kv_cache_tokens // kv_tokens_per_request(model, context_tokens)
    return out


def nf4_levels(offset: float = NF4_OFFSET) -> list[float]:
    """The 16 values of the NF4 code: normal quantiles, 7 below zero, zero, 8 above, scaled to [-1, 1].

    bitsandbytes ``create_normal_map``: the positive half is the normal
    quantile function at 8 points evenly from ``offset`` down to 0.5, the
    negative half at 7, plus an exact zero; all divided by the largest. The
    result matches QLoRA's published table (Dettmers et al. 2023, appendix E).

    >>> [round(v, 4) for v in nf4_levels()]  # doctest: +NORMALIZE_WHITESPACE
    [-1.0, -0.6962, -0.5251, -0.3949, -0.2844, -0.1848, -0.091, 0.0,
     0.0796, 0.1609, 0.2461, 0.3379, 0.4407, 0.5626, 0.723, 1.0]
    """
    return list(_nf4_code(float(offset))[0])


@functools.lru_cache(maxsize=4)
def _nf4_code(offset: float) -> tuple[tuple[float, ...], tuple[float, ...]]:
    """(levels, midpoints between neighbouring levels): computed once, looked up for every weight."""
    normal = NormalDist()

    def points(n: int) -> list[float]:
        return [offset + (0.5 - offset) * i / (n - 1) for i in range(n)][:-1]

    positive = [normal.inv_cdf(p) for p in points(9)]
    negative = [-normal.inv_cdf(p) for p in points(8)]
    levels = sorted(positive + [0.0] + negative)
    top = max(levels)
    levels = tuple(v / top for v in levels)
    return levels, tuple((a + b) / 2 for a, b in zip(levels, levels[1:]))


def _nf4_indices(scaled: list[float]) -> list[int]:
    """Index of the nearest NF4 level for each value in [-1, 1] (a tie goes to the lower level, as min() does).

    A binary search among the 15 midpoints instead of measuring the distance to all 16 levels.

    >>> _nf4_indices([-1.0, -0.05, -0.04, 0.0, 0.04, 1.0])
    [0, 6, 7, 7, 8, 15]
    """
    mids = _nf4_code(NF4_OFFSET)[1]
    return [bisect_left(mids, x) for x in scaled]


def quantize_group(values, scheme: str) -> tuple[list[float], float]:
    """Quantize one group of weights and dequantize it back: (values as stored and read, the group's scale).

    ``int8``/``int4``: symmetric absmax, ``scale = max|w| / (2**(bits-1) - 1)``,
    ``q = round(w / scale)`` (Dettmers et al., LLM.int8(), 2022; the 4-bit case
    as in GPTQ/AWQ without zero points); ``nf4``: ``scale = max|w|``, each
    ``w / scale`` to the nearest level of :func:`nf4_levels` (QLoRA).

    >>> quantize_group([0.5, -1.0, 0.25], "int4")
    ([0.571429, -1.0, 0.285714], 0.142857143)
    >>> quantize_group([5e-324], "int8")  # the smallest float: its scale underflows to 0
    ([0.0], 0.0)
    """
    check_choice("scheme", scheme, ROUNDING_SCHEMES)
    values = [float(v) for v in values]
    if not values:
        raise CalcError("values must hold at least one weight; got none", "values")
    top = max(abs(v) for v in values)
    if top == 0:
        return [0.0] * len(values), 0.0
    if scheme == "nf4":
        levels = _nf4_code(NF4_OFFSET)[0]
        out = [top * levels[i] for i in _nf4_indices([v / top for v in values])]
        return [round(v, 6) for v in out], top
    q_max = 2 ** (WEIGHT_BITS[scheme] - 1) - 1
    scale = top / q_max
    if scale == 0.0:  # a subnormal group: its scale underflows, and every weight rounds to 0 at 6 digits anyway
        return [0.0] * len(values), 0.0
    return [round(round(v / scale) * scale, 6) for v in values], round(scale, 9)


def normal_sample(count: int, seed: int = 0) -> list[float]:
    """``count`` draws from N(0, 1), seeded: the Box-Muller transform on ``random.Random(seed)``.

    Each pair of uniforms ``u1, u2`` gives ``cos(2 pi u1) r`` and ``sin(2 pi u1) r``
    with ``r = sqrt(-2 ln(1 - u2))`` (Box and Muller, Ann. Math. Statist. 29,
    1958): the same stream as ``random.Random(seed).gauss(0, 1)`` called
    ``count`` times, at a third of the cost, and fixed here rather than by the
    standard library's implementation.

    >>> [round(v, 4) for v in normal_sample(3, seed=0)]
    [0.9417, -1.3966, -0.6797]
    """
    count = check_range("count", count, 0, 10_000_000, integer=True)
    uniform = random.Random(seed).random
    cos, sin, sqrt, log, tau = math.cos, math.sin, math.sqrt, math.log, math.tau
    out = []
    for _ in range((count + 1) // 2):
        angle = uniform() * tau
        radius = sqrt(-2.0 * log(1.0 - uniform()))
        out.append(cos(angle) * radius)
        out.append(sin(angle) * radius)
    del out[count:]
    return out


def rounding_errors(*, group_size: int = 64, groups: int = SAMPLE_GROUPS, seed: int = 0,
                    schemes=ROUNDING_SCHEMES) -> dict[str, dict]:
    """:func:`rounding_error` for several schemes on one shared sample of weights (drawn once).

    ``groups x group_size`` weights from :func:`normal_sample`, cut into groups in
    order; each scheme quantizes every group by :func:`quantize_group`'s rules
    and reads it back (without the 6-decimal rounding it applies for display).
    Source: :func:`quantize_group` (absmax: Dettmers et al. 2022; NF4: QLoRA,
    Dettmers et al. 2023).

    >>> e = rounding_errors(group_size=64)
    >>> [round(e[s]["relative_rms_error"], 4) for s in ROUNDING_SCHEMES], round(e["int4"]["zero_share"], 3)
    ([0.0059, 0.1057, 0.0904], 0.145)
    """
    for scheme in schemes:
        check_choice("scheme", scheme, ROUNDING_SCHEMES)
    group_size = check_range("group_size", group_size, 2, 4096, integer=True)
    groups = check_range("groups", groups, 1, 10_000, integer=True)
    weights = normal_sample(groups * group_size, seed)
    squared_value = math.fsum([v * v for v in weights])
    # Each group's largest magnitude, repeated for each of its weights: the schemes then run over the whole
    # sample in one pass each instead of one pass per group.
    tops = []
    for start in range(0, len(weights), group_size):
        tops += [max(map(abs, weights[start:start + group_size]))] * group_size
    out = {}
    for scheme in schemes:
        errors, zeros = _sample_errors(weights, tops, scheme)
        out[scheme] = {"scheme": scheme, "group_size": group_size,
                       "relative_rms_error": math.sqrt(math.fsum(errors) / squared_value) if squared_value else 0.0,
                       "zero_share": zeros / len(weights)}
    return out


def _sample_errors(weights: list[float], tops: list[float], scheme: str) -> tuple[list[float], int]:
    """Squared error of every weight under ``scheme``, given its group's largest magnitude, and the count of zeros.

    The arithmetic of :func:`quantize_group` without the rounding it applies for display.

    >>> errors, zeros = _sample_errors([0.5, -1.0, 0.25, 0.0], [1.0, 1.0, 1.0, 0.0], "int4")
    >>> [round(e, 6) for e in errors], zeros  # scale 1/7: 0.5 is stored as 4/7; an all-zero group stays 0
    ([0.005102, 0.0, 0.001276, 0.0], 1)
    """
    if scheme == "nf4":
        levels = _nf4_code(NF4_OFFSET)[0]
        indices = _nf4_indices([v / top if top else 0.0 for v, top in zip(weights, tops)])
        return [(v - top * levels[i]) ** 2 for v, top, i in zip(weights, tops, indices)], indices.count(_NF4_ZERO)
    q_max = 2 ** (WEIGHT_BITS[scheme] - 1) - 1
    scales = [top / q_max for top in tops]
    steps = [round(v / scale) if scale else 0 for v, scale in zip(weights, scales)]
    return [(v - q * scale) ** 2 for v, q, scale in zip(weights, steps, scales)], steps.count(0)


def sample_groups(group_size: int) -> int:
    """Groups of ``group_size`` weights a rounding-error sample needs: :data:`SAMPLE_GROUPS`, fewer for big groups.

    200 groups of 64 are :data:`SAMPLE_WEIGHTS` (12,800) weights; larger groups
    take as many groups as that many weights need, so groups of 1,024 draw 13
    (13,312 weights) instead of 204,800: the same precision for the error (it
    is an average over weights, not over groups), one sixteenth of the work.
    The deep dive's rounding widget samples this way on every change of its control.

    >>> sample_groups(64), sample_groups(65), sample_groups(1024), sample_groups(2)
    (200, 197, 13, 200)
    >>> sample_groups(1)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: group_size must be a whole number between 2 and 4096; got 1
    """
    group_size = check_range("group_size", group_size, 2, 4096, integer=True)
    return max(1, min(SAMPLE_GROUPS, -(-SAMPLE_WEIGHTS // group_size)))


def rounding_error(scheme: str, *, group_size: int = 64, groups: int = SAMPLE_GROUPS, seed: int = 0) -> dict:
    """Relative RMS error of ``scheme`` on normally distributed weights, group by group.

    Weights are drawn from N(0, 1) with a seeded generator (trained weights are
    roughly normal per layer: the premise of NF4, QLoRA section 3). Returns the
    RMS error over the RMS weight, and the share of weights stored as exactly 0.
    Source: :func:`quantize_group`, through :func:`rounding_errors`.

    >>> round(rounding_error("int4")["relative_rms_error"], 3), round(rounding_error("nf4")["relative_rms_error"], 3)
    (0.106, 0.09)
    """
    check_choice("scheme", scheme, ROUNDING_SCHEMES)
    return rounding_errors(group_size=group_size, groups=groups, seed=seed, schemes=(scheme,))[scheme]
