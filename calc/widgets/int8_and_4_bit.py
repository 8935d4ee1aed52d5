"""Widgets and facts of step 8, "int8, 4-bit and the accuracy trade" (docs/lesson/08-int8-and-4-bit.md).

Every weight format side by side on one replica (:func:`calc.quantization.weight_formats_table`):
bytes per weight, the decode step on the roofline, the KV cache left over, and
the published accuracy of quantized Llama 3.1 checkpoints against their base
(:data:`calc.quantization.ACCURACY`, Neural Magic / Red Hat model cards; the
large study arXiv 2411.02355). KV-cache quantization is the other lever
(:func:`calc.quantization.kv_formats_table`).

The workshop's Mistral 7B: 14.5 GB of bf16 weights, 3.6 GB "at INT4" when every
parameter takes 4 bits; the real checkpoint adds its group scales and the 16-bit
embeddings and head.

>>> f = facts()
>>> f["mistral_bf16"], f["mistral_int4_nominal"], f["mistral_int4_total"]
('14.5 GB', '3.62 GB', '4.15 GB')
"""

from __future__ import annotations

from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.lesson import DECODE_CONTEXT_TOKENS
from calc.lesson import kv_tokens
from calc.memory import KV_DTYPES, WEIGHT_FORMATS, weight_bytes
from calc.quantization import (
    ACCURACY, FORMAT_NOTES, STUDY_SOURCE, STUDY_SUMMARY, accuracy_deltas, kv_formats_table, weight_formats_table,
)
from calc.roofline import decode_step, step_coefficients
from calc.sim_views import preset_summary
from calc.units import GB, format_number
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.controls import weight_format
from calc.widgets.framework import Choice, IntRange, output, table, view, widget

__all__ = ["REPLICAS", "kv_tokens", "formats", "published_accuracy", "kv_formats", "facts"]

GPU = lesson.REPLICA["gpu"]
#: The replicas the formats table can describe: (model, tensor parallel, label).
REPLICAS = {
    "llama-3.1-70b": (lesson.REPLICA["model"], lesson.REPLICA["tp"], "70B on 4 × H100 (running example)"),
    "llama-3.1-8b": ("llama-3.1-8b", 1, "Llama 3.1 8B on 1 × H100"),
    "mistral-7b": ("mistral-7b", 1, "Mistral 7B on 1 × H100 (workshop)"),
}
REPLICA_CHOICES = tuple((key, label) for key, (_, _, label) in REPLICAS.items())
#: The formats drawn against batch (int8 computes like fp8 on an H100, nf4 like int4).
CURVE_FORMATS = ("bf16", "fp8", "int4")
BATCH_POINTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)
#: vLLM's default cap on running sequences (``max_num_seqs``): the batch of a saturated replica.
SATURATED_BATCH = 256
#: Step 6's saturated replica, replayed in each weight format (step 7 replays it in fp8).
SIM_PRESET = "step06-twice-the-traffic"
#: A long-context, many-sequence decode batch where KV reads matter (KV formats).
KV_BATCH, KV_CONTEXT_TOKENS = 64, 4_096
_MODEL_NAMES = {"llama-3.1-70b": "Llama 3.1 70B", "llama-3.1-8b": "Llama 3.1 8B"}
ACCURACY_MODELS = (("all", "Both models"),) + tuple(_MODEL_NAMES.items())


def _gb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / GB)} GB"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _accuracy_cell(row: dict) -> str:
    if row["weights"] in ("bf16", "fp16"):
        return "reference"
    if row["accuracy"]:
        return f"{row['accuracy'][0]['delta_points']:+.2f} points"
    summary = row["study_summary"]
    if not summary:
        return "not published here"
    return summary if "study" in summary else f"study: {summary}"  # "not covered by the study: ..." reads alone


@widget
def formats(
    replica: Annotated[str, Choice(REPLICA_CHOICES, label="Replica")] = lesson.REPLICA["model"],
    batch: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Decode batch")] = 1,
    context_tokens: Annotated[int, IntRange(1, 131_072, 64, "tokens", label="Context per sequence")] = DECODE_CONTEXT_TOKENS,
):
    """Every weight format on one replica: bytes, decode step, KV room and published accuracy.

    Rows from :func:`calc.quantization.weight_formats_table` (weights from
    :func:`calc.memory.weight_bytes`, step times from :mod:`calc.roofline`, accuracy
    from the Neural Magic / Red Hat model cards and arXiv 2411.02355).

    >>> out = formats()["outputs"]
    >>> out["weights_int4"]["text"], out["speedup_int4"]["text"], out["kv_tokens_int4"]["text"]
    ('9.94 GB', '2.86x', '708,716')
    """
    model_key, tp, label = REPLICAS[replica]
    model = get_model(model_key)
    rows = weight_formats_table(model, GPU, tp=tp, batch=batch, context_tokens=context_tokens)
    by_format = {r["weights"]: r for r in rows}
    tokens = {fmt: kv_tokens(model_key, tp, fmt) for fmt in WEIGHT_FORMATS}
    base_tokens = tokens["bf16"]
    cells = []
    for r in rows:
        fmt = r["weights"]
        t = tokens[fmt]
        cells.append([
            fmt,
            f"{r['bits_per_weight']} / {format_number(r['effective_bits_per_weight'])}",
            _gb(r["weights_bytes_per_gpu"]),
            f"{_ms(r['decode_step_s'])} ({format_number(r['decode_speedup'])}x)",
            "does not fit" if t is None else f"{t:,}" + ("" if fmt == "bf16" or not base_tokens else
                                                           f" ({(t / base_tokens - 1) * 100:+.0f}%)"),
            _accuracy_cell(r),
        ])
    grid = table(
        ["Format", "Bits: payload / all in", "Weights per GPU", "Decode step (vs bf16)", "KV cache, tokens",
         "Accuracy vs bf16"],
        cells, caption=f"{label}: batch {batch:,} at {context_tokens:,} tokens of context",
    )
    xs = sorted(set(BATCH_POINTS) | {batch})
    series = {}
    for fmt in CURVE_FORMATS:
        coef = step_coefficients(model, GPU, tp=tp, weights=fmt)
        series[fmt] = (xs, [decode_step(coef, batch=x, context_tokens=context_tokens)["time_s"] * 1000 for x in xs])
    last = {name: ys[-1] for name, (_, ys) in series.items()}
    curve = line_chart(
        f"Decode step against batch, {model.name}", "sequences in the batch", "ms per step", series, log_x=True,
        markers=True,
        summary=(f"At batch {xs[0]:,}: " + ", ".join(f"{n} {format_number(ys[0])} ms" for n, (_, ys) in series.items())
                 + f". At batch {xs[-1]:,}: " + ", ".join(f"{n} {format_number(v)} ms" for n, v in last.items())
                 + ". int8 runs like fp8 on this GPU, nf4 like int4."),
    )
    curve["layout"]["xaxis"]["dtick"] = 1
    curve["layout"]["yaxis"]["rangemode"] = "tozero"
    out = []
    for fmt in ("bf16", "fp8", "int4"):
        r = by_format[fmt]
        out.append(output(f"weights_{fmt}", f"Weights per GPU, {fmt}", round(r["weights_bytes_per_gpu"]), "B",
                          text=_gb(r["weights_bytes_per_gpu"])))
    for fmt in ("fp8", "int4"):
        r = by_format[fmt]
        out.append(output(f"speedup_{fmt}", f"Decode step, bf16 / {fmt}", r["decode_speedup"], "",
                          text=f"{format_number(r['decode_speedup'])}x"))
    for fmt in ("bf16", "fp8", "int4"):
        t = tokens[fmt]
        out.append(output(f"kv_tokens_{fmt}", f"KV cache, {fmt} weights", t or 0, "tokens",
                          text="does not fit" if t is None else f"{t:,}"))
    notes = table(["Format", "What it is"], [[fmt, FORMAT_NOTES[fmt]] for fmt in WEIGHT_FORMATS],
                  caption="The formats")
    return view(outputs=out, figures={"vs_batch": curve}, tables={"formats": grid, "notes": notes})


def _short_source(source: str) -> str:
    return source.split(": ", 1)[-1]


@widget
def published_accuracy(
    model: Annotated[str, Choice(ACCURACY_MODELS, label="Model")] = "all",
):
    """Published accuracy of quantized Llama 3.1 Instruct checkpoints against their bf16 base, with sources.

    Source: :data:`calc.quantization.ACCURACY` (Neural Magic / Red Hat model cards,
    OpenLLM v1 average) and :data:`calc.quantization.STUDY_SUMMARY` (arXiv 2411.02355).

    >>> rows = published_accuracy()["tables"]["cards"]["rows"]
    >>> rows[0][:5]
    ['70B', 'fp8', '84.4', '84.29', '-0.11']
    """
    rows = accuracy_deltas(None if model == "all" else model)
    cards = table(
        ["Model", "Weights", "bf16 base", "Quantized", "Change", "Checkpoint (Hugging Face)"],
        [[_MODEL_NAMES[r["model"]].replace("Llama 3.1 ", ""), r["weights"], f"{r['base']:g}", f"{r['quantized']:g}",
          f"{r['delta_points']:+.2f}", _short_source(r["source"])] for r in rows],
        caption=f"{rows[0]['metric']} of Llama 3.1 Instruct, quantized and base on the same model card",
    )
    study = table(["Weights", "Finding"], [[fmt, text] for fmt, text in STUDY_SUMMARY.items()],
                  caption="Kurtic et al., arXiv 2411.02355 (500,000+ evaluations on Llama 3.1)")
    names = [f"{_MODEL_NAMES[r['model']]} {r['weights']}" for r in rows]
    figure = bar_chart(
        "Accuracy change against bf16 (points)", list(reversed(names)), "points",
        {"quantized − base": [r["delta_points"] for r in reversed(rows)]}, horizontal=True,
        summary="; ".join(f"{n}: {r['delta_points']:+.2f} points" for n, r in zip(names, rows)) + ".",
    )
    figure["data"][0]["marker"]["color"] = [PALETTE[5] if r["weights"] == "int4" else PALETTE[0] for r in reversed(rows)]
    figure["layout"].update(height=140 + 40 * len(rows), showlegend=False, margin={"l": 60, "r": 20, "t": 50, "b": 40})
    worst = min(rows, key=lambda r: r["delta_points"])
    return view(
        outputs=[output("largest_drop", "Largest drop", worst["delta_points"], "points",
                        text=f"{worst['delta_points']:+.2f} points ({_MODEL_NAMES[worst['model']]}, {worst['weights']})")],
        figures={"deltas": figure},
        tables={"cards": cards, "study": study},
    )


@widget
def kv_formats(
    weights: weight_format("Weights") = lesson.REPLICA["weights"],
    batch: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Decode batch")] = KV_BATCH,
    context_tokens: Annotated[int, IntRange(1, 131_072, 64, "tokens", label="Context per sequence")] = KV_CONTEXT_TOKENS,
):
    """The running example's KV cache in bf16 and in fp8: bytes per token, tokens that fit, and the decode step.

    Rows from :func:`calc.quantization.kv_formats_table` (fp8 E4M3 KV as in vLLM's
    "Quantized KV Cache" docs; attention kernels assumed to read fp8 directly).

    >>> out = kv_formats()["outputs"]
    >>> out["per_token_fp8"]["text"], out["kv_tokens_fp8"]["text"], out["speedup"]["text"]
    ('40,960 B', '798,339', '1.21x')
    """
    r = lesson.REPLICA
    rows = {row["kv_dtype"]: row for row in kv_formats_table(r["model"], GPU, tp=r["tp"], weights=weights,
                                                              batch=batch, context_tokens=context_tokens)}
    tokens = {dtype: kv_tokens(r["model"], r["tp"], weights, dtype) for dtype in KV_DTYPES}
    cells = [[f"{dtype} ({row['bytes_per_value']} B per value)", f"{row['kv_bytes_per_token']:,} B",
              f"{row['kv_bytes_per_token_per_gpu']:,} B", f"{tokens[dtype]:,}",
              f"{_ms(row['decode_step_s'])} ({format_number(row['decode_speedup'])}x)"] for dtype, row in rows.items()]
    fits = tokens["bf16"] // max(1, context_tokens)
    return view(
        outputs=[
            output("per_token_bf16", "KV per token per GPU, bf16", rows["bf16"]["kv_bytes_per_token_per_gpu"], "B",
                   text=f"{rows['bf16']['kv_bytes_per_token_per_gpu']:,} B"),
            output("per_token_fp8", "KV per token per GPU, fp8", rows["fp8"]["kv_bytes_per_token_per_gpu"], "B",
                   text=f"{rows['fp8']['kv_bytes_per_token_per_gpu']:,} B"),
            output("kv_tokens_bf16", "KV cache, bf16", tokens["bf16"], "tokens", text=f"{tokens['bf16']:,}"),
            output("kv_tokens_fp8", "KV cache, fp8", tokens["fp8"], "tokens", text=f"{tokens['fp8']:,}"),
            output("step_bf16", "Decode step, bf16 KV", rows["bf16"]["decode_step_s"], "s",
                   text=_ms(rows["bf16"]["decode_step_s"])),
            output("step_fp8", "Decode step, fp8 KV", rows["fp8"]["decode_step_s"], "s",
                   text=_ms(rows["fp8"]["decode_step_s"])),
            output("speedup", "Step, bf16 KV / fp8 KV", rows["fp8"]["decode_speedup"], "",
                   text=f"{format_number(rows['fp8']['decode_speedup'])}x"),
            output("batch_fits", f"Sequences of {context_tokens:,} tokens that fit, bf16 → fp8",
                   tokens["fp8"] // max(1, context_tokens), "sequences",
                   text=f"{fits:,} → {tokens['fp8'] // max(1, context_tokens):,}"),
        ],
        tables={"kv": table(["KV cache", "Per token, replica", "Per token, each GPU", "Tokens that fit",
                             "Decode step (vs bf16)"], cells,
                            caption=f"{get_model(r['model']).name}, {weights} weights, TP {r['tp']}: "
                                    f"batch {batch:,} at {context_tokens:,} tokens")},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, computed from calc.

    >>> f = facts()
    >>> f["acc_70b_fp8"], f["acc_8b_int4"], f["int4_sat_step"], f["bf16_sat_step"]
    ('-0.11', '-1.75', '31 ms', '31 ms')
    """
    r = lesson.REPLICA
    model = get_model(r["model"])
    rows = {row["weights"]: row for row in weight_formats_table(model, GPU, tp=r["tp"], batch=1,
                                                                 context_tokens=DECODE_CONTEXT_TOKENS)}
    tokens = {fmt: kv_tokens(r["model"], r["tp"], fmt) for fmt in WEIGHT_FORMATS}
    sat = {fmt: decode_step(step_coefficients(model, GPU, tp=r["tp"], weights=fmt), batch=SATURATED_BATCH,
                            context_tokens=DECODE_CONTEXT_TOKENS) for fmt in ("bf16", "fp8", "int4")}
    mistral = get_model("mistral-7b")
    m16, m4 = weight_bytes(mistral, "bf16"), weight_bytes(mistral, "int4")
    w4 = weight_bytes(model, "int4")
    kv = {row["kv_dtype"]: row for row in kv_formats_table(model, GPU, tp=r["tp"], batch=KV_BATCH,
                                                           context_tokens=KV_CONTEXT_TOKENS)}
    acc = {(a["model"], a["weights"]): a for a in accuracy_deltas()}
    out = {
        "model": model.name,
        "tp": str(r["tp"]),
        "gpu": get_gpu(GPU).name,
        "decode_context": f"{DECODE_CONTEXT_TOKENS:,}",
        "sat_batch": f"{SATURATED_BATCH:,}",
        "int4_effective_bits": format_number(rows["int4"]["effective_bits_per_weight"]),
        "nf4_effective_bits": format_number(rows["nf4"]["effective_bits_per_weight"]),
        "int4_group": str(w4.group_size),
        "int4_scales": _gb(w4.scale_bytes),
        "int4_unquantized": _gb(w4.unquantized_bytes),
        "int4_total": _gb(w4.total_bytes),
        "int4_nominal": _gb(w4.nominal_bytes),
        "bf16_sat_step": _ms(sat["bf16"]["time_s"]),
        "fp8_sat_step": _ms(sat["fp8"]["time_s"]),
        "int4_sat_step": _ms(sat["int4"]["time_s"]),
        "kv_batch": f"{KV_BATCH:,}",
        "kv_context": f"{KV_CONTEXT_TOKENS:,}",
        "kv_per_token_bf16": f"{kv['bf16']['kv_bytes_per_token']:,} bytes",
        "kv_per_token_fp8": f"{kv['fp8']['kv_bytes_per_token']:,} bytes",
        "kv_tokens_bf16": f"{tokens['bf16']:,}",
        "kv_tokens_fp8kv": f"{kv_tokens(r['model'], r['tp'], 'bf16', 'fp8'):,}",
        "kv_tokens_fp8_both": f"{kv_tokens(r['model'], r['tp'], 'fp8', 'fp8'):,}",
        "kv_step_speedup": f"{format_number(kv['fp8']['decode_speedup'])}x",
        "mistral_params": f"{mistral.total_params:,}",
        "mistral_bf16": _gb(m16.total_bytes),
        "mistral_int4_nominal": _gb(m4.nominal_bytes),
        "mistral_int4_nominal_rounded": f"{format_number(m4.nominal_bytes / GB, 2)} GB",
        "mistral_int4_payload": _gb(m4.payload_bytes),
        "mistral_int4_scales": _gb(m4.scale_bytes),
        "mistral_int4_unquantized": _gb(m4.unquantized_bytes),
        "mistral_int4_total": _gb(m4.total_bytes),
        "study_fp8": STUDY_SUMMARY["fp8"],
        "study_int8": STUDY_SUMMARY["int8"],
        "study_int4": STUDY_SUMMARY["int4"],
        "study_source": STUDY_SOURCE,
        "metric": ACCURACY[0]["metric"],
    }
    for fmt in ("bf16", "fp8", "int4"):
        run = preset_summary(SIM_PRESET, weights=fmt)
        out[f"sim_ttft_p99_{fmt}"] = f"{format_number(run['ttft_p99_s'])} s"
        out[f"sim_tokens_per_s_{fmt}"] = format_number(run["throughput_output_tokens_per_s"])
    for fmt in ("bf16", "fp8", "int8", "int4", "nf4"):
        out[f"weights_{fmt}"] = _gb(rows[fmt]["weights_bytes_per_gpu"])
        out[f"speedup_{fmt}"] = f"{format_number(rows[fmt]['decode_speedup'])}x"
        out[f"kv_tokens_{fmt}"] = f"{tokens[fmt]:,}"
        out[f"kv_gain_{fmt}"] = f"{(tokens[fmt] / tokens['bf16'] - 1) * 100:+.0f}%"
    for (m, fmt), a in acc.items():
        tag = "70b" if m == "llama-3.1-70b" else "8b"
        out[f"acc_{tag}_{fmt}"] = f"{a['delta_points']:+.2f}"
        out[f"acc_{tag}_{fmt}_base"] = f"{a['base']:g}"
        out[f"acc_{tag}_{fmt}_quantized"] = f"{a['quantized']:g}"
        out[f"acc_{tag}_{fmt}_recovery"] = f"{a['recovery'] * 100:.1f}%"
    return out
