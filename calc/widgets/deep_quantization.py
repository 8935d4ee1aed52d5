"""Widgets and facts of the deep dive "Quantization" (docs/deep-dives/quantization.md).

Fewer bits per weight: FP16/BF16 (16), INT8 and FP8 (8), INT4 and NF4 (4). The
workshop's example (the AI Engineer workshop "Deep dive on LLM Inference at Scale"): Mistral-7B from 14.5 GB in 16 bits to 3.6 GB at
INT4, every parameter at 4 bits. A real 4-bit checkpoint adds terms the nominal
figure leaves out: a scale (and zero point) per group of weights, and the
embeddings and norms kept in 16 bits (:func:`calc.memory.weight_bytes`). What
the bytes buy (decode speed, KV room) and what they may cost (published accuracy
deltas) come from :func:`calc.quantization.weight_formats_table`.

How 4 bits hold a weight: absmax integer quantization scales each group by its
largest magnitude onto the integers -7..7; NF4 (Dettmers et al., QLoRA, 2023)
uses 16 levels at quantiles of a normal distribution instead, which fit
normally distributed weights better (:func:`calc.quantization.rounding_error`).

>>> rows = {r["weights"]: r for r in formats_rows("mistral-7b", "l4")}
>>> round(rows["bf16"]["total_bytes"] / 1e9, 1), round(rows["int4"]["nominal_bytes"] / 1e9, 1)
(14.5, 3.6)
>>> [round(v, 4) for v in nf4_levels()[:3]]
[-1.0, -0.6962, -0.5251]
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.memory import WEIGHT_BITS
from calc.quantization import (
    CONTEXT_TOKENS, GROUP_SIZES, ROUNDING_SCHEMES, SAMPLE_GROUPS, SAMPLE_WEIGHTS, STUDY_SUMMARY, accuracy_deltas,
    formats_rows, nf4_levels, normal_sample, quantize_group, rounding_errors, sample_groups, weight_formats_table,
)
from calc.units import format_bytes, format_number, ratio
from calc.widgets.charts import bar_chart
from calc.widgets.controls import Gpu, Model, TpChoice
from calc.widgets.framework import Choice, IntRange, fact, facts_of, output, table, view, widget

__all__ = ["formats", "rounding", "facts"]

WORKSHOP_MODEL, SMALL_GPU = "mistral-7b", "l4"



def _accuracy_text(row: dict) -> str:
    published = "; ".join(f"{r['delta_points']:+.2f} points" for r in row["accuracy"])
    if published:
        return published
    if row["weights"] in ("bf16", "fp16"):
        return "reference"
    return "not published for this model"


@widget
def formats(
    model: Model = WORKSHOP_MODEL,
    gpu: Gpu = SMALL_GPU,
    tp: TpChoice = "1",
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
    """How 8 and 4 bits store a weight: one group quantized and read back, and the error over many groups.

    The errors of all three schemes come from one sample (:func:`rounding_errors`,
    :func:`calc.quantization.sample_groups`), kept for the last few group sizes and seeds: changing
    only the scheme recomputes nothing.
    """
    sample = normal_sample(min(group_size, 16), seed)
    stored, scale = quantize_group(sample, scheme)
    errors = _widget_errors(group_size, seed)
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


@functools.lru_cache(maxsize=8)
def _widget_errors(group_size: int, seed: int) -> dict[str, dict]:
    return rounding_errors(group_size=group_size, groups=sample_groups(group_size), seed=seed)


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ deep_quantization:name }} elsewhere: 2 uses).
@functools.cache
def _rows(group_size: int = 128) -> dict:
    return {r["weights"]: r for r in formats_rows(WORKSHOP_MODEL, SMALL_GPU, group_size=group_size)}


@functools.cache
def _on_lesson() -> dict:
    return {r["weights"]: r for r in weight_formats_table(lesson.MODEL, lesson.GPU, tp=lesson.TP)}


def _delta(model: str, weights: str) -> dict:
    return accuracy_deltas(model, weights)[0]


@functools.cache
def _errors() -> dict:
    return rounding_errors()


def _gb_short(n_bytes: float) -> str:
    return format_number(round(n_bytes / 1e9, 1)) + " GB"


@fact
def model_name():
    return get_model(WORKSHOP_MODEL).name


@fact
def params():
    return f"{get_model(WORKSHOP_MODEL).total_params:,}"


@fact
def bf16():
    """>>> bf16(), int4_nominal(), int4_payload(), int4_total()
    ('14.5 GB', '3.62 GB', '3.49 GB', '4.15 GB')
    """
    return format_bytes(_rows()["bf16"]["total_bytes"])


@fact
def int8_nominal():
    return format_bytes(_rows()["int8"]["nominal_bytes"])


@fact
def int8_total():
    return format_bytes(_rows()["int8"]["total_bytes"])


@fact
def int4_nominal():
    return format_bytes(_rows()["int4"]["nominal_bytes"])


@fact
def int4_nominal_short():
    return _gb_short(_rows()["int4"]["nominal_bytes"])


@fact
def int4_payload():
    return format_bytes(_rows()["int4"]["payload_bytes"])


@fact
def int4_scales():
    return format_bytes(_rows()["int4"]["scale_bytes"])


@fact
def kept_16bit():
    return format_bytes(_rows()["int4"]["unquantized_bytes"])


@fact
def int4_total():
    return format_bytes(_rows()["int4"]["total_bytes"])


@fact
def int4_bits_all_in():
    return format_number(_rows()["int4"]["effective_bits_per_weight"])


@fact
def nf4_64_total():
    return format_bytes(_rows(64)["nf4"]["total_bytes"])


@fact
def shrink_int4():
    return format_number(ratio(_rows()["bf16"]["total_bytes"], _rows()["int4"]["total_bytes"]))


@fact
def small_gpu():
    return get_gpu(SMALL_GPU).name


@fact
def context():
    return f"{CONTEXT_TOKENS:,}"


@fact
def users_bf16():
    return format_number(_rows()["bf16"]["users"])


@fact
def users_int8():
    return format_number(_rows()["int8"]["users"])


@fact
def users_int4():
    return format_number(_rows()["int4"]["users"])


@fact
def int4_speedup():
    return format_number(_rows()["int4"]["decode_speedup"])


@fact
def int8_speedup():
    return format_number(_rows()["int8"]["decode_speedup"])


@fact
def lesson_fp8_speedup():
    return format_number(_on_lesson()["fp8"]["decode_speedup"])


@fact
def lesson_fp8_kv_gain():
    return format_number(_on_lesson()["fp8"]["kv_room_gain"])


@fact
def lesson_int4_speedup():
    return format_number(_on_lesson()["int4"]["decode_speedup"])


@fact
def fp8_70b_loss():
    return f"{-_delta(lesson.MODEL, 'fp8')['delta_points']:.2f}"


@fact
def int4_70b_loss():
    return f"{-_delta(lesson.MODEL, 'int4')['delta_points']:.2f}"


@fact
def int4_8b_loss():
    return f"{-_delta('llama-3.1-8b', 'int4')['delta_points']:.2f}"


@fact
def int4_8b_base():
    return f"{_delta('llama-3.1-8b', 'int4')['base']:g}"


@fact
def int4_8b_quantized():
    return f"{_delta('llama-3.1-8b', 'int4')['quantized']:g}"


@fact
def int8_study():
    return STUDY_SUMMARY["int8"]


@fact
def int4_error():
    return f"{_errors()['int4']['relative_rms_error']:.1%}"


@fact
def nf4_error():
    return f"{_errors()['nf4']['relative_rms_error']:.1%}"


@fact
def int8_error():
    return f"{_errors()['int8']['relative_rms_error']:.1%}"


@fact
def int4_zero_share():
    return f"{_errors()['int4']['zero_share']:.0%}"


@fact("sample_groups")
def _sample_groups():
    return f"{SAMPLE_GROUPS}"


@fact
def sample_weights():
    return f"{SAMPLE_WEIGHTS:,}"


@fact
def sample_group_size():
    return format_number(ratio(SAMPLE_WEIGHTS, SAMPLE_GROUPS))


facts = facts_of(__name__)
