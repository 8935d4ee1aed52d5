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

import functools
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
from calc.units import GB, format_number, relative_change
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.controls import weight_format
from calc.widgets.framework import Choice, IntRange, fact, fact_from, facts_of, output, table, view, widget

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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ int8_and_4_bit:name }} elsewhere: 1 use); the facts of one
# format (weights, speed-up, KV tokens; the preset's run; a published accuracy row) are registered in loops.
def _model():
    return get_model(lesson.REPLICA["model"])


@functools.cache
def _rows() -> dict:
    return {row["weights"]: row for row in weight_formats_table(_model(), GPU, tp=lesson.REPLICA["tp"], batch=1,
                                                                context_tokens=DECODE_CONTEXT_TOKENS)}


@functools.cache
def _tokens(weights: str, kv_dtype: str | None = None) -> int:
    r = lesson.REPLICA
    return kv_tokens(r["model"], r["tp"], weights) if kv_dtype is None else kv_tokens(r["model"], r["tp"], weights, kv_dtype)


@functools.cache
def _saturated_step_s(weights: str) -> float:
    coef = step_coefficients(_model(), GPU, tp=lesson.REPLICA["tp"], weights=weights)
    return decode_step(coef, batch=SATURATED_BATCH, context_tokens=DECODE_CONTEXT_TOKENS)["time_s"]


@functools.cache
def _kv_rows() -> dict:
    return {row["kv_dtype"]: row for row in kv_formats_table(_model(), GPU, tp=lesson.REPLICA["tp"], batch=KV_BATCH,
                                                              context_tokens=KV_CONTEXT_TOKENS)}


def _w4():
    return weight_bytes(_model(), "int4")


def _mistral(weights: str):
    return weight_bytes(get_model("mistral-7b"), weights)


def _gb_digits(n_bytes: float, digits: int) -> str:
    return f"{format_number(n_bytes / GB, digits)} GB"


def _signed_percent(fraction: float) -> str:
    return f"{fraction * 100:+.0f}%"


def _accuracy(model: str, weights: str) -> dict:
    return accuracy_deltas(model, weights)[0]


@fact("model")
def _model_name():
    return _model().name


@fact("tp")
def _tp():
    return str(lesson.REPLICA["tp"])


@fact("gpu")
def _gpu_name():
    return get_gpu(GPU).name


@fact
def decode_context():
    return f"{DECODE_CONTEXT_TOKENS:,}"


@fact
def sat_batch():
    return f"{SATURATED_BATCH:,}"


@fact
def int4_effective_bits():
    return format_number(_rows()["int4"]["effective_bits_per_weight"])


@fact
def nf4_effective_bits():
    return format_number(_rows()["nf4"]["effective_bits_per_weight"])


@fact
def int4_group():
    return str(_w4().group_size)


@fact
def int4_scales():
    return _gb(_w4().scale_bytes)


@fact
def int4_unquantized():
    return _gb(_w4().unquantized_bytes)


@fact
def int4_total():
    return _gb(_w4().total_bytes)


@fact
def int4_nominal():
    return _gb(_w4().nominal_bytes)


@fact
def bf16_sat_step():
    """>>> int4_sat_step(), bf16_sat_step()
    ('31 ms', '31 ms')
    """
    return _ms(_saturated_step_s("bf16"))


@fact
def fp8_sat_step():
    return _ms(_saturated_step_s("fp8"))


@fact
def int4_sat_step():
    return _ms(_saturated_step_s("int4"))


@fact
def kv_batch():
    return f"{KV_BATCH:,}"


@fact
def kv_context():
    return f"{KV_CONTEXT_TOKENS:,}"


@fact
def kv_per_token_bf16():
    return f"{_kv_rows()['bf16']['kv_bytes_per_token']:,} bytes"


@fact
def kv_per_token_fp8():
    return f"{_kv_rows()['fp8']['kv_bytes_per_token']:,} bytes"


@fact
def kv_tokens_fp8kv():
    return f"{_tokens('bf16', 'fp8'):,}"


@fact
def kv_tokens_fp8_both():
    return f"{_tokens('fp8', 'fp8'):,}"


@fact
def kv_step_speedup():
    return f"{format_number(_kv_rows()['fp8']['decode_speedup'])}x"


@fact
def mistral_params():
    return f"{get_model('mistral-7b').total_params:,}"


@fact
def mistral_bf16():
    return _gb(_mistral("bf16").total_bytes)


@fact
def mistral_int4_nominal():
    return _gb(_mistral("int4").nominal_bytes)


@fact
def mistral_int4_nominal_rounded():
    return _gb_digits(_mistral("int4").nominal_bytes, 2)


@fact
def mistral_int4_payload():
    return _gb(_mistral("int4").payload_bytes)


@fact
def mistral_int4_scales():
    return _gb(_mistral("int4").scale_bytes)


@fact
def mistral_int4_unquantized():
    return _gb(_mistral("int4").unquantized_bytes)


@fact
def mistral_int4_total():
    return _gb(_mistral("int4").total_bytes)


@fact
def study_fp8():
    return STUDY_SUMMARY["fp8"]


@fact
def study_int8():
    return STUDY_SUMMARY["int8"]


@fact
def study_int4():
    return STUDY_SUMMARY["int4"]


@fact
def study_source():
    return STUDY_SOURCE


@fact
def metric():
    return ACCURACY[0]["metric"]


for _fmt in ("bf16", "fp8", "int4"):
    fact_from(f"sim_ttft_p99_{_fmt}",
              lambda fmt=_fmt: f"{format_number(preset_summary(SIM_PRESET, weights=fmt)['ttft_p99_s'])} s")
    fact_from(f"sim_tokens_per_s_{_fmt}",
              lambda fmt=_fmt: format_number(preset_summary(SIM_PRESET, weights=fmt)["throughput_output_tokens_per_s"]))
for _fmt in ("bf16", "fp8", "int8", "int4", "nf4"):
    fact_from(f"weights_{_fmt}", lambda fmt=_fmt: _gb(_rows()[fmt]["weights_bytes_per_gpu"]))
    fact_from(f"speedup_{_fmt}", lambda fmt=_fmt: f"{format_number(_rows()[fmt]['decode_speedup'])}x")
    fact_from(f"kv_tokens_{_fmt}", lambda fmt=_fmt: f"{_tokens(fmt):,}")
    fact_from(f"kv_gain_{_fmt}", lambda fmt=_fmt: _signed_percent(relative_change(_tokens(fmt), _tokens("bf16"))))
for _row in ACCURACY:
    _tag = "70b" if _row["model"] == "llama-3.1-70b" else "8b"
    _key = (_row["model"], _row["weights"])
    fact_from(f"acc_{_tag}_{_row['weights']}", lambda key=_key: f"{_accuracy(*key)['delta_points']:+.2f}")
    fact_from(f"acc_{_tag}_{_row['weights']}_base", lambda key=_key: f"{_accuracy(*key)['base']:g}")
    fact_from(f"acc_{_tag}_{_row['weights']}_quantized", lambda key=_key: f"{_accuracy(*key)['quantized']:g}")
    fact_from(f"acc_{_tag}_{_row['weights']}_recovery", lambda key=_key: format(_accuracy(*key)["recovery"], ".1%"))


facts = facts_of(__name__)
