"""Widgets and facts of the deep dive "Quantization" (docs/deep-dives/quantization.md).

Fewer bits per weight: FP16/BF16 (16), INT8 and FP8 (8), INT4 and NF4 (4). The
workshop's example (seeds/003): Mistral-7B from 14.5 GB in 16 bits to 3.6 GB at
INT4, every parameter at 4 bits. A real 4-bit checkpoint adds terms the nominal
figure leaves out: a scale (and zero point) per group of weights, and the
embeddings and norms kept in 16 bits (:func:`calc.memory.weight_bytes`). What
the bytes buy (decode speed, KV room) and what they may cost (published accuracy
deltas) come from :func:`calc.quantization.weight_formats_table`.

How 4 bits hold a weight: absmax integer quantization scales each group by its
largest magnitude onto the integers -7..7; NF4 (Dettmers et al., QLoRA, 2023)
uses 16 levels at quantiles of a normal distribution instead, which fit
normally distributed weights better (:func:`rounding_error`).

>>> rows = {r["weights"]: r for r in formats_rows("mistral-7b", "l4")}
>>> round(rows["bf16"]["total_bytes"] / 1e9, 1), round(rows["int4"]["nominal_bytes"] / 1e9, 1)
(14.5, 3.6)
>>> [round(v, 4) for v in nf4_levels()[:3]]
[-1.0, -0.6962, -0.5251]
"""

from __future__ import annotations

import math
import random
from statistics import NormalDist
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.errors import CalcError, check_choice, check_range
from calc.memory import WEIGHT_BITS, WEIGHT_FORMATS, check_tp, kv_capacity, kv_tokens_per_request
from calc.quantization import STUDY_SUMMARY, accuracy_deltas, weight_formats_table
from calc.units import format_bytes, format_number
from calc.widgets.charts import bar_chart
from calc.widgets.framework import Choice, IntRange, output, table, view, widget

__all__ = ["formats_rows", "users_per_format", "nf4_levels", "quantize_group", "rounding_error", "formats",
           "rounding", "facts", "NF4_OFFSET"]

WORKSHOP_MODEL, SMALL_GPU = "mistral-7b", "l4"
LESSON_MODEL, LESSON_GPU, LESSON_TP = "llama-3.1-70b", "h100-sxm-80gb", 4
CONTEXT_TOKENS = 4_096
#: The formats the workshop compares (FP16, INT8, INT4, NF4) plus bf16 and fp8, as calc.memory knows them.
FORMAT_ORDER = WEIGHT_FORMATS
#: bitsandbytes ``create_normal_map(offset=0.9677083)``: the NF4 code's outermost quantile (QLoRA, appendix).
NF4_OFFSET = 0.9677083
#: Group sizes offered: GPTQ/AWQ's common 128, bitsandbytes' NF4 block of 64, and others.
GROUP_SIZES = (32, 64, 128, 256)
ROUNDING_SCHEMES = ("int8", "int4", "nf4")

MODEL_CHOICES = tuple((key, model.name) for key, model in MODELS.items())
GPU_CHOICES = tuple((key, gpu.name) for key, gpu in GPUS.items())
TP_CHOICES = ("1", "2", "4", "8")


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
    normal = NormalDist()

    def points(n: int) -> list[float]:
        return [offset + (0.5 - offset) * i / (n - 1) for i in range(n)][:-1]

    positive = [normal.inv_cdf(p) for p in points(9)]
    negative = [-normal.inv_cdf(p) for p in points(8)]
    levels = sorted(positive + [0.0] + negative)
    top = max(levels)
    return [v / top for v in levels]


def quantize_group(values, scheme: str) -> tuple[list[float], float]:
    """Quantize one group of weights and dequantize it back: (values as stored and read, the group's scale).

    ``int8``/``int4``: symmetric absmax, ``scale = max|w| / (2**(bits-1) - 1)``,
    ``q = round(w / scale)`` (Dettmers et al., LLM.int8(), 2022; the 4-bit case
    as in GPTQ/AWQ without zero points); ``nf4``: ``scale = max|w|``, each
    ``w / scale`` to the nearest level of :func:`nf4_levels` (QLoRA).

    >>> quantize_group([0.5, -1.0, 0.25], "int4")
    ([0.571429, -1.0, 0.285714], 0.142857143)
    """
    check_choice("scheme", scheme, ROUNDING_SCHEMES)
    values = [float(v) for v in values]
    if not values:
        raise CalcError("values must hold at least one weight; got none", "values")
    top = max(abs(v) for v in values)
    if top == 0:
        return [0.0] * len(values), 0.0
    if scheme == "nf4":
        levels = nf4_levels()
        out = [top * min(levels, key=lambda level: abs(level - v / top)) for v in values]
        return [round(v, 6) for v in out], top
    q_max = 2 ** (WEIGHT_BITS[scheme] - 1) - 1
    scale = top / q_max
    return [round(round(v / scale) * scale, 6) for v in values], round(scale, 9)


def rounding_error(scheme: str, *, group_size: int = 64, groups: int = 200, seed: int = 0) -> dict:
    """Relative RMS error of ``scheme`` on normally distributed weights, group by group.

    Weights are drawn from N(0, 1) with a seeded generator (trained weights are
    roughly normal per layer: the premise of NF4, QLoRA section 3). Returns the
    RMS error over the RMS weight, and the share of weights stored as exactly 0.
    Source: :func:`quantize_group`.

    >>> round(rounding_error("int4")["relative_rms_error"], 3), round(rounding_error("nf4")["relative_rms_error"], 3)
    (0.106, 0.09)
    """
    check_choice("scheme", scheme, ROUNDING_SCHEMES)
    group_size = check_range("group_size", group_size, 2, 4096, integer=True)
    groups = check_range("groups", groups, 1, 10_000, integer=True)
    rng = random.Random(seed)
    squared_error, squared_value, zeros, count = [], [], 0, 0
    for _ in range(groups):
        values = [rng.gauss(0.0, 1.0) for _ in range(group_size)]
        stored, _ = quantize_group(values, scheme)
        squared_error.extend((a - b) ** 2 for a, b in zip(values, stored))
        squared_value.extend(v * v for v in values)
        zeros += sum(1 for s in stored if s == 0)
        count += group_size
    return {"scheme": scheme, "group_size": group_size,
            "relative_rms_error": math.sqrt(math.fsum(squared_error) / math.fsum(squared_value)),
            "zero_share": zeros / count}


def _accuracy_text(row: dict) -> str:
    published = "; ".join(f"{r['delta_points']:+.2f} points" for r in row["accuracy"])
    if published:
        return published
    if row["weights"] in ("bf16", "fp16"):
        return "reference"
    return "not published for this model"


@widget
def formats(
    model: Annotated[str, Choice(MODEL_CHOICES, label="Model")] = WORKSHOP_MODEL,
    gpu: Annotated[str, Choice(GPU_CHOICES, label="GPU")] = SMALL_GPU,
    tp: Annotated[str, Choice(TP_CHOICES, label="GPUs (tensor parallel)")] = "1",
    group_size: Annotated[str, Choice(tuple((str(g), f"{g} weights") for g in GROUP_SIZES),
                                      label="4-bit group size")] = "128",
    context_tokens: Annotated[int, IntRange(1, 10_000_000, 256, "tokens", label="Context per user")] = CONTEXT_TOKENS,
):
    """Bytes per format (payload, scales, 16-bit layers), decode speed-up, users that fit, published accuracy."""
    rows = formats_rows(model, gpu, tp=int(tp), group_size=int(group_size), context_tokens=context_tokens)
    name = get_model(model).name
    gb = lambda n: n / 1e9  # noqa: E731
    labels = [r["weights"] for r in rows]
    bytes_chart = bar_chart(
        f"{name}: weight bytes by format", labels, "GB", {
            "quantized payload": [gb(r["payload_bytes"]) for r in rows],
            "scales and zero points": [gb(r["scale_bytes"]) for r in rows],
            "kept in 16 bits (embeddings, norms)": [gb(r["unquantized_bytes"]) for r in rows],
        }, summary="; ".join(f"{r['weights']}: {format_bytes(r['total_bytes'])} (every parameter at "
                             f"{r['bits_per_weight']} bits: {format_bytes(r['nominal_bytes'])})" for r in rows) + ".")
    users_chart = bar_chart(
        f"Users of {context_tokens:,} tokens that fit on {tp} × {get_gpu(gpu).name}", labels, "users",
        {"users": [r["users"] or 0 for r in rows]},
        summary="; ".join(f"{r['weights']}: {'does not fit' if r['users'] is None else format_number(r['users'])}"
                          for r in rows) + ".")
    rows_table = table(
        ["format", "checkpoint", "bits per weight, all in", "decode speed-up", "users", "published accuracy"],
        [[r["weights"], format_bytes(r["total_bytes"]), format_number(r["effective_bits_per_weight"]),
          f"{format_number(r['decode_speedup'])}×",
          "does not fit" if r["users"] is None else format_number(r["users"]),
          _accuracy_text(r)] for r in rows],
        caption=(f"Decode speed-up at batch 1 against bf16; users of {context_tokens:,} tokens from vLLM's KV sizing; "
                 f"accuracy on the OpenLLM v1 average where a model card publishes it."))
    by = {r["weights"]: r for r in rows}
    return view(
        outputs=[
            output("bf16_bytes", "bf16 checkpoint", by["bf16"]["total_bytes"], "B",
                   text=format_bytes(by["bf16"]["total_bytes"])),
            output("int4_nominal", "INT4, every parameter at 4 bits", by["int4"]["nominal_bytes"], "B",
                   text=format_bytes(by["int4"]["nominal_bytes"])),
            output("int4_total", f"INT4 checkpoint, groups of {group_size}", by["int4"]["total_bytes"], "B",
                   text=format_bytes(by["int4"]["total_bytes"])),
            output("nf4_total", f"NF4 checkpoint, blocks of {group_size}", by["nf4"]["total_bytes"], "B",
                   text=format_bytes(by["nf4"]["total_bytes"])),
            output("int4_speedup", "INT4 decode speed-up (batch 1)", by["int4"]["decode_speedup"], "x",
                   text=f"{format_number(by['int4']['decode_speedup'])}×"),
            output("users", f"Users at {context_tokens:,} tokens, bf16 → int4",
                   by["int4"]["users"] or 0, "users",
                   text=f"{'none' if by['bf16']['users'] is None else format_number(by['bf16']['users'])} → "
                        f"{'none' if by['int4']['users'] is None else format_number(by['int4']['users'])}"),
        ],
        figures={"bytes": bytes_chart, "users": users_chart},
        tables={"formats": rows_table},
    )


@widget
def rounding(
    scheme: Annotated[str, Choice((("int8", "INT8 absmax"), ("int4", "INT4 absmax"), ("nf4", "NF4")),
                                  label="Scheme")] = "int4",
    group_size: Annotated[int, IntRange(2, 1024, 1, "weights", label="Group size")] = 64,
    seed: Annotated[int, IntRange(0, 1_000_000, 1, label="Seed of the sample weights")] = 0,
):
    """How 8 and 4 bits store a weight: one group quantized and read back, and the error over many groups."""
    rng = random.Random(seed)
    sample = [rng.gauss(0.0, 1.0) for _ in range(min(group_size, 16))]
    stored, scale = quantize_group(sample, scheme)
    errors = {s: rounding_error(s, group_size=group_size, seed=seed) for s in ROUNDING_SCHEMES}
    chosen = errors[scheme]
    chart = bar_chart(
        f"Relative RMS error on normal weights, groups of {group_size}", [s.upper() for s in ROUNDING_SCHEMES],
        "RMS error / RMS weight", {"error": [errors[s]["relative_rms_error"] for s in ROUNDING_SCHEMES]},
        summary="; ".join(f"{s.upper()}: {errors[s]['relative_rms_error']:.1%}" for s in ROUNDING_SCHEMES) + ".")
    chart["layout"]["yaxis"]["tickformat"] = ".0%"
    shown = table(["weight", "stored as", "error"],
                  [[f"{w:+.4f}", f"{s:+.4f}", f"{s - w:+.4f}"] for w, s in zip(sample, stored)],
                  caption=f"The first {len(sample)} weights of one group; the group's scale is {scale:.4g}.")
    return view(
        outputs=[
            output("levels", "Levels available", 2 ** WEIGHT_BITS[scheme] - (1 if scheme != "nf4" else 0), "",
                   text=f"{2 ** WEIGHT_BITS[scheme] - (1 if scheme != 'nf4' else 0)} "
                        f"({'symmetric integers' if scheme != 'nf4' else 'normal quantiles'})"),
            output("relative_rms_error", "Relative RMS error", chosen["relative_rms_error"], "",
                   text=f"{chosen['relative_rms_error']:.1%}"),
            output("zero_share", "Weights stored as exactly 0", chosen["zero_share"], "",
                   text=f"{chosen['zero_share']:.1%}"),
        ],
        figures={"error": chart},
        tables={"group": shown},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose (the notebook prints the same, computed on its own).

    >>> f = facts()
    >>> f["bf16"], f["int4_nominal"], f["int4_payload"], f["int4_total"]
    ('14.5 GB', '3.62 GB', '3.49 GB', '4.15 GB')
    """
    rows = {r["weights"]: r for r in formats_rows(WORKSHOP_MODEL, SMALL_GPU)}
    nf4_64 = {r["weights"]: r for r in formats_rows(WORKSHOP_MODEL, SMALL_GPU, group_size=64)}["nf4"]
    lesson = {r["weights"]: r for r in weight_formats_table(LESSON_MODEL, LESSON_GPU, tp=LESSON_TP)}
    fp8_70b = accuracy_deltas(LESSON_MODEL, "fp8")[0]
    int4_70b = accuracy_deltas(LESSON_MODEL, "int4")[0]
    int4_8b = accuracy_deltas("llama-3.1-8b", "int4")[0]
    errors = {s: rounding_error(s) for s in ROUNDING_SCHEMES}
    model = get_model(WORKSHOP_MODEL)
    return {
        "model_name": model.name,
        "params": f"{model.total_params:,}",
        "bf16": format_bytes(rows["bf16"]["total_bytes"]),
        "int8_nominal": format_bytes(rows["int8"]["nominal_bytes"]),
        "int8_total": format_bytes(rows["int8"]["total_bytes"]),
        "int4_nominal": format_bytes(rows["int4"]["nominal_bytes"]),
        "int4_nominal_short": format_number(round(rows["int4"]["nominal_bytes"] / 1e9, 1)) + " GB",
        "int4_payload": format_bytes(rows["int4"]["payload_bytes"]),
        "int4_scales": format_bytes(rows["int4"]["scale_bytes"]),
        "kept_16bit": format_bytes(rows["int4"]["unquantized_bytes"]),
        "int4_total": format_bytes(rows["int4"]["total_bytes"]),
        "int4_bits_all_in": format_number(rows["int4"]["effective_bits_per_weight"]),
        "nf4_64_total": format_bytes(nf4_64["total_bytes"]),
        "shrink_int4": format_number(rows["bf16"]["total_bytes"] / rows["int4"]["total_bytes"]),
        "small_gpu": get_gpu(SMALL_GPU).name,
        "context": f"{CONTEXT_TOKENS:,}",
        "users_bf16": format_number(rows["bf16"]["users"]),
        "users_int8": format_number(rows["int8"]["users"]),
        "users_int4": format_number(rows["int4"]["users"]),
        "int4_speedup": format_number(rows["int4"]["decode_speedup"]),
        "int8_speedup": format_number(rows["int8"]["decode_speedup"]),
        "lesson_fp8_speedup": format_number(lesson["fp8"]["decode_speedup"]),
        "lesson_fp8_kv_gain": format_number(lesson["fp8"]["kv_room_gain"]),
        "lesson_int4_speedup": format_number(lesson["int4"]["decode_speedup"]),
        "fp8_70b_loss": f"{-fp8_70b['delta_points']:.2f}",
        "int4_70b_loss": f"{-int4_70b['delta_points']:.2f}",
        "int4_8b_loss": f"{-int4_8b['delta_points']:.2f}",
        "int4_8b_base": f"{int4_8b['base']:g}",
        "int4_8b_quantized": f"{int4_8b['quantized']:g}",
        "int8_study": STUDY_SUMMARY["int8"],
        "int4_error": f"{errors['int4']['relative_rms_error']:.1%}",
        "nf4_error": f"{errors['nf4']['relative_rms_error']:.1%}",
        "int8_error": f"{errors['int8']['relative_rms_error']:.1%}",
        "int4_zero_share": f"{errors['int4']['zero_share']:.0%}",
    }
