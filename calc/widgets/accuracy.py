"""Widgets and facts of the page "How accurate are these numbers?" (docs/accuracy.md).

Everything here comes from :mod:`calc.accuracy`: the published measurements, calc's
prediction for each (made by the same functions the lesson's pages call), the
relative error, and per kind the median and worst error over the validation set.

>>> facts()["n_measurements"] == str(len(evaluate()))
True
>>> your_measurement()["outputs"]["predicted"]["text"]
'474,416 tokens'
"""

from __future__ import annotations

from typing import Annotated

from calc.accuracy import (
    KIND_LABELS, KINDS, USER_KINDS, evaluate, kind_summary, load_measurements, median, predict_user, relative_error,
)
from calc.catalog import GPUS, MODELS
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.units import format_number
from calc.widgets.charts import scatter_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, output, table, view, widget

__all__ = ["accuracy_overview", "your_measurement", "facts", "measurement_table", "measurement_tables", "percent",
           "signed_percent", "latency_facts", "latency_table", "latency_summary_table", "MISS_MECHANISMS"]

KIND_CHOICES = (("all", "All kinds"),) + tuple((kind, KIND_LABELS[kind]) for kind in KINDS)
USER_KIND_CHOICES = tuple((kind, text) for kind, text in USER_KINDS.items())
MODEL_CHOICES = tuple((key, model.name) for key, model in MODELS.items())
GPU_CHOICES = tuple((key, gpu.name) for key, gpu in GPUS.items())
#: The example filled in for the reader: vLLM 0.19 logged 476,000 tokens of KV cache for Llama 3.1 8B
#: in bf16 on one H100 at gpu_memory_utilization 0.95 (the llm-d planner sweep, in measurements.json).
EXAMPLE_ID = "vllm-llama-3.1-8b-bf16-h100-tp1"
#: Single measurements the page's prose discusses, by the fact-name prefix it uses for them.
QUOTED = {
    "paged": "vllm-paper-fig2-paged",
    "max": "vllm-paper-fig2-max",
    "pow2": "vllm-paper-fig2-pow2",
    "break_even": "eagle3-paper-eagle-break-even-batch",
    "eagle_b64": "eagle3-paper-eagle-batch64",
    "prefix_hit": "vllm-pr9668-prefix-hit-rate",
    "prefix_speedup": "vllm-pr9668-prefix-speedup",
    "sglang_decode": "sglang-llama-3.1-8b-bf16-h100-batch1-decode",
}


def percent(fraction: float) -> str:
    """An absolute error as a percentage with one decimal ("under 0.1%" below that).

    >>> percent(0.07513), percent(0.00007)
    ('7.5%', 'under 0.1%')
    """
    value = abs(fraction) * 100
    return "under 0.1%" if value < 0.05 else f"{value:.1f}%"


def signed_percent(fraction: float) -> str:
    """A signed relative error as a percentage with one decimal.

    >>> signed_percent(-0.0123), signed_percent(0.5)
    ('-1.2%', '+50.0%')
    """
    return f"{fraction * 100:+.1f}%"


def _value(value: float, unit: str) -> str:
    if unit == "tokens" or (unit.endswith("tokens/s") and value >= 1000):
        return f"{round(value):,} {unit}"
    if unit == "batch":
        return f"batch {round(value):,}"
    if unit == "x":
        return f"{format_number(value)}x"
    if unit == "%":
        return f"{format_number(value)}%"
    return f"{format_number(value)} {unit}".strip()


def _cell(text: str) -> str:
    return str(text).replace("|", "/").replace("\n", " ")


#: The unit each kind's table states in its header, and how a figure in that unit is written.
TABLE_UNITS = {
    "kv_capacity": "tokens of KV cache",
    "throughput": "output tokens/s",
    "paged_utilization": "% of KV memory holding tokens",
    "speculative": "speed-up, or the batch where it falls below 1x",
    "prefix_caching": "hit rate, or speed-up",
}


def _compact(value: float, unit: str) -> str:
    if unit in ("tokens", "output tokens/s"):
        return f"{round(value):,}" if value >= 1000 else format_number(value)
    return _value(value, unit)


def measurement_table(kind: str) -> str:
    """The measurements of one kind as a Markdown table: label, role, calc, measured, error, source link.

    The link's title (shown on hover) says where in the source the figure is.

    >>> lines = measurement_table("paged_utilization").splitlines()
    >>> lines[0], lines[2].split(" | ")[2:5]
    ('| Measurement | Role | calc | Measured | Error | Source |', ['24.1%', '20.4%', '+18.1%'])
    """
    rows = ["| Measurement | Role | calc | Measured | Error | Source |",
            "| --- | --- | ---: | ---: | ---: | --- |"]
    for r in evaluate():
        if r.kind != kind:
            continue
        where = _cell(r.source_where).replace('"', "'")
        link = f'[{_cell(r.source_cite)}]({r.source_url} "{_cell(r.source_name)}: {where}")'
        rows.append(f"| {_cell(r.label)} | {r.role} | {_compact(r.predicted, r.unit)} | "
                    f"{_compact(r.measured, r.unit)} | {signed_percent(r.error)} | {link} |")
    return "\n".join(rows)


def measurement_tables() -> str:
    """Every measurement, one Markdown table per kind under its own heading, with the unit stated.

    >>> text = measurement_tables()
    >>> text.count("### "), sum(line.startswith("| ") for line in text.splitlines()) == len(evaluate()) + 2 * len(KINDS)
    (5, True)
    """
    parts = []
    for kind in KINDS:
        parts.append(f"### {KIND_LABELS[kind]}\n\nFigures in {TABLE_UNITS[kind]}.\n\n{measurement_table(kind)}")
    return "\n\n".join(parts)


def _summary_rows():
    summary = kind_summary()
    results = evaluate()
    labels = {r.id: r.label for r in results}
    for kind in KINDS:
        s = summary[kind]
        yield [KIND_LABELS[kind], str(s["n"]), str(s["n_calibration"]), percent(s["median_abs_error"]),
               percent(s["worst_abs_error"]), labels[s["worst_id"]]]


@widget
def accuracy_overview(kind: Annotated[str, Choice(KIND_CHOICES, label="Kind of measurement")] = "all"):
    """Predicted against measured on log-log axes, with the median and worst error of the validation set.

    Only the chosen kind's measurements are evaluated, once per process (:func:`calc.accuracy.evaluate`
    keeps them), so changing the kind costs a filter after the first time.
    """
    results = evaluate(kind=None if kind == "all" else kind)
    valid = [r for r in results if r.role == "validation"]
    calibration = [r for r in results if r.role == "calibration"]
    errors = sorted(abs(r.error) for r in valid)
    mid = len(errors) // 2
    median_error = errors[mid] if len(errors) % 2 else (errors[mid - 1] + errors[mid]) / 2
    worst = max(valid, key=lambda r: (abs(r.error), r.id))
    series = {}
    for k in KINDS:
        points = [r for r in valid if r.kind == k]
        if points:
            series[KIND_LABELS[k]] = {"x": [r.measured for r in points], "y": [r.predicted for r in points],
                                      "text": [f"{r.label} ({r.unit})" for r in points]}
    if calibration:
        series["Calibration (fitted)"] = {"x": [r.measured for r in calibration],
                                          "y": [r.predicted for r in calibration],
                                          "text": [f"{r.label} ({r.unit})" for r in calibration],
                                          "symbol": "diamond-open"}
    scope = "all kinds" if kind == "all" else KIND_LABELS[kind].lower()
    figure = scatter_chart(
        f"calc against published measurements: {scope}", "measured (each point in its own unit)",
        "predicted by calc", series, log_x=True, log_y=True, diagonal=True,
        summary=(f"{len(valid)} validation measurements ({scope}): median error {percent(median_error)}, worst "
                 f"{percent(worst.error)} ({worst.label}). Points on the dashed line are predicted exactly; "
                 f"above it calc over-predicts. {len(calibration)} calibration points drawn as open diamonds."),
    )
    if kind == "all":
        detail = table(["Kind", "Validation", "Calibration", "Median error", "Worst error", "Worst case"],
                       list(_summary_rows()), caption="Errors over the validation measurements of each kind")
    else:
        detail = table(["Measurement", "Role", "calc", "Measured", "Error"],
                       [[r.label, r.role, _value(r.predicted, r.unit), _value(r.measured, r.unit),
                         signed_percent(r.error)] for r in results],
                       caption=f"{KIND_LABELS[kind]}: every measurement")
    return view(
        outputs=[
            output("n_validation", "Validation measurements", len(valid)),
            output("median_abs_error", "Median error", median_error, text=percent(median_error)),
            output("worst_abs_error", "Worst error", abs(worst.error),
                   text=f"{percent(worst.error)} ({worst.label})"),
            output("n_calibration", "Calibration points (not counted)", len(calibration)),
        ],
        figures={"predicted_vs_measured": figure},
        tables={"detail": detail},
    )


def _example() -> dict:
    return next(r for r in evaluate() if r.id == EXAMPLE_ID).to_dict()


@widget
def your_measurement(
    kind: Annotated[str, Choice(USER_KIND_CHOICES, label="What you measured")] = "kv_capacity",
    model: Annotated[str, Choice(MODEL_CHOICES, label="Model")] = "llama-3.1-8b",
    gpu: Annotated[str, Choice(GPU_CHOICES, label="GPU")] = "h100-sxm-80gb",
    tp: Annotated[int, IntRange(1, 64, 1, "GPUs", label="Tensor parallel")] = 1,
    weights: Annotated[str, Choice(WEIGHT_FORMATS, label="Weight precision")] = "bf16",
    kv_dtype: Annotated[str, Choice(KV_DTYPES, label="KV cache dtype")] = "bf16",
    input_tokens: Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Prompt length",
                                          help="throughput, decode and speculation")] = 1024,
    output_tokens: Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Answer length",
                                           help="throughput, decode and speculation")] = 256,
    gpu_memory_utilization: Annotated[float, FloatRange(0.01, 1.0, 0.01, label="Memory utilization",
                                                        help="vLLM's gpu_memory_utilization (KV cache)")] = 0.95,
    batch: Annotated[int, IntRange(1, 4096, 1, "requests", label="Batch",
                                   help="requests decoding together (decode and speculation)")] = 1,
    your_figure: Annotated[float, FloatRange(0.0001, 1e12, 0.01, label="Your figure",
                                             help="in the unit shown under 'calc predicts'")] = 476_000,
):
    """A reader's own measurement against calc's prediction for the same set-up, and the error."""
    result = predict_user(kind, model=model, gpu=gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                          input_tokens=input_tokens, output_tokens=output_tokens,
                          gpu_memory_utilization=gpu_memory_utilization, batch=batch)
    unit = result["unit"]
    error = relative_error(result["predicted"], your_figure)
    verdict = ("calc over-predicts" if error > 0 else "calc under-predicts") if abs(error) >= 0.0005 else "a match"
    return view(
        outputs=[
            output("predicted", "calc predicts", result["predicted"], unit, text=_value(result["predicted"], unit)),
            output("measured", "Your figure", your_figure, unit, text=_value(your_figure, unit)),
            output("error", "Error (calc − yours) / yours", error, text=f"{signed_percent(error)}: {verdict}"),
            output("assumed", "calc assumed", result["how"]),
        ],
    )


# --------------------------------------------------------------------------- latency (issue 18)

#: What keeps a latency metric above its target, named on the page when (and only when) it misses.
MISS_MECHANISMS = {
    "ttft": ("the four-GPU runs come out short, vLLM 0.6's by 25-29% and SGLang's by 9-10% (with its own fitted "
             "per-GPU step cost), although their prefill all-reduces are priced at the measured bandwidth of the "
             "two-stage custom all-reduce, the decode steps a new request waits for carry the per-sequence cost, "
             "and vLLM 0.6's ten-step windows are simulated (a new request is admitted only when the running window "
             "ends, each step priced at its batch); vLLM 0.6's 70B TPOT (11% short at 8 requests/s) "
             "and end to end are short too, and it has no per-sequence term; on NIM's closed-loop rows (fixed lengths) the "
             "simulated clients stay in lock-step: requests whose first tokens came one prefill apart finish one "
             "decode step apart, so each resent prompt queues behind the one before, where the measured runs mostly "
             "met no queue (the client read in sources fixes both lengths and starts its N clients at once, so "
             "nothing sourced splits them); at 100 clients calc's TensorRT-LLM cache holds 90 requests where "
             "NIM's plateau says 86-87, so fewer clients wait"),
    "tpot_itl": ("time per token grows with load through a per-sequence step cost (seq_overhead_s: input "
                 "preparation, sampling and output processing per scheduled sequence on a Python engine's CPU), fitted "
                 "on Azure's vLLM run at 16 requests/s (SGLang 0.3 has its own, fitted on its 8B run at 8 requests/s); "
                 "what is left: NIM's C++ runtime (no per-sequence term) comes out 7-9% slow at 100-250 clients, "
                 "SGLang's 70B ITL at 8 requests/s 11% slow, vLLM 0.6's 70B TPOT there 11% fast, and vLLM's "
                 "all-at-once TPOT 16% slow, where one linear term charges 200 sequences at once in full"),
    "e2e": ("end-to-end latency adds up the TTFT and TPOT misses above and the answer lengths calc draws"),
    "throughput": ("a run of 200 prompts sent at once lasts as long as its longest answer, one draw: calc draws "
                   "ShareGPT's own lengths (measured on the dataset: answer p99.5 894 tokens, longest 1,857) but "
                   "not the benchmarks' seeded sample (vLLM's offline runs, benchmark_throughput with no API server "
                   "and so without the per-sequence serving cost, land from 19% slow to 7% fast on Llama; the "
                   "Mixtral rows, counted in Mixtral's own tokenizer, within 4% on the A100 and H100 but 38% fast on "
                   "the H200, which measured fewer requests/s than the H100 on a faster part, in another nightly "
                   "build); and SGLang 0.3's 5,000-prompt runs at rate infinity, served through its API server and "
                   "charged its own fitted per-sequence cost, come out 28-35% slow: at a few hundred running "
                   "sequences one linear term overcharges a serving path that detokenizes and streams in processes "
                   "of its own, beside the GPU's work (a term of 0 fixes these rows but makes its served rows at "
                   "8 requests/s 13-21% fast); vLLM 0.6's 70B run there is 15% fast"),
}


def _latency_results():
    from calc import latency_accuracy

    return latency_accuracy.evaluate()


def _latency_value(value: float, unit: str) -> str:
    return f"{format_number(value)} {unit}"


def latency_table(results=None) -> str:
    """Every published online-serving figure beside calc's, as a Markdown table (engine, role, error, source).

    >>> lines = latency_table().splitlines()
    >>> lines[0]
    '| Figure | Metric | Engine | Role | calc | Measured | Error | Source |'
    """
    from calc import latency_accuracy

    results = _latency_results() if results is None else results
    rows_by_id = {r["id"]: r for r in latency_accuracy.load_rows()}
    rows = ["| Figure | Metric | Engine | Role | calc | Measured | Error | Source |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | --- |"]
    for r in results:
        row = rows_by_id[r.id]
        where = _cell(r.source_where).replace('"', "'")
        link = f'[{_cell(r.source_cite)}]({row["source"]["url"]} "{_cell(row["source"]["name"])}: {where}")'
        rows.append(f"| {_cell(r.label)} | {latency_accuracy.METRIC_LABELS[r.metric]} | "
                    f"`{row['inputs'].get('engine_profile', 'vllm')}` | {r.role} | {_latency_value(r.predicted, r.unit)} | "
                    f"{_latency_value(r.measured, r.unit)} | {signed_percent(r.error)} | {link} |")
    return "\n".join(rows)


def latency_summary_table(results=None) -> str:
    """Per metric: validation rows, median |error| against the target, median signed error, calibration rows.

    >>> latency_summary_table().splitlines()[0]
    '| Metric | Validation figures | Median abs. error | Target | Median signed error | Calibration figures |'
    """
    from calc import latency_accuracy

    results = _latency_results() if results is None else results
    s = latency_accuracy.summary(results)
    rows = ["| Metric | Validation figures | Median abs. error | Target | Median signed error | Calibration figures |",
            "| --- | ---: | ---: | ---: | ---: | ---: |"]
    for m in latency_accuracy.METRICS:
        v, c = s["validation"][m], s["calibration"][m]
        met = v["median_abs_error"] <= latency_accuracy.TARGETS[m]
        rows.append(f"| {latency_accuracy.METRIC_LABELS[m]} | {v['n']} | {percent(v['median_abs_error'])} | "
                    f"{percent(latency_accuracy.TARGETS[m])} ({'met' if met else 'missed'}) | "
                    f"{signed_percent(v['median_error'])} | {c['n']} |")
    return "\n".join(rows)


def _engine_terms_table() -> str:
    from calc.engine_profiles import ENGINES, get_profile

    rows = ["| Engine profile | Term | Value | Role | Source |", "| --- | --- | ---: | --- | --- |"]
    for key in ENGINES:
        for term, value, role, source in get_profile(key).term_rows():
            rows.append(f"| `{key}` | `{term}` | {format_number(value * 1000)} ms | {role} | {_cell(source)} |")
    return "\n".join(rows)


def latency_facts(results=None) -> dict[str, str]:
    """The latency section's facts: per metric n, medians and the verdict against the target, tables.

    A verdict that misses names its mechanism (:data:`MISS_MECHANISMS`) and the metric's worst validation
    figure; one that meets says so.

    >>> f = latency_facts()
    >>> f["lat_target_throughput"], f["lat_verdict_e2e"].split(":")[0] in ("meets the target", "misses the target")
    ('8.0%', True)
    """
    from calc import latency_accuracy

    results = _latency_results() if results is None else results
    s = latency_accuracy.summary(results)
    out = {
        "lat_n_figures": str(len(results)),
        "lat_n_calibration": str(sum(r.role == "calibration" for r in results)),
        "lat_n_validation": str(sum(r.role == "validation" for r in results)),
        "latency_summary_table": latency_summary_table(results),
        "latency_table": latency_table(results),
        # The same table inside a collapsible note: every line after the first indented four spaces.
        "latency_table_in_note": "\n    ".join(latency_table(results).splitlines()),
        "engine_terms_table": _engine_terms_table(),
    }
    missed = []
    for m in latency_accuracy.METRICS:
        v = s["validation"][m]
        target = latency_accuracy.TARGETS[m]
        out[f"lat_n_{m}"] = str(v["n"])
        out[f"lat_median_{m}"] = percent(v["median_abs_error"])
        out[f"lat_bias_{m}"] = signed_percent(v["median_error"])
        out[f"lat_target_{m}"] = percent(target)
        chosen = [r for r in results if r.role == "validation" and r.metric == m]
        worst = max(chosen, key=lambda r: abs(r.error))
        if v["median_abs_error"] <= target:
            out[f"lat_verdict_{m}"] = f"meets the target: {percent(v['median_abs_error'])} against {percent(target)}"
        else:
            missed.append(latency_accuracy.METRIC_LABELS[m])
            out[f"lat_verdict_{m}"] = (f"misses the target: {percent(v['median_abs_error'])} against {percent(target)}. "
                                       f"Why: {MISS_MECHANISMS[m]}. Worst figure: {worst.label}, "
                                       f"{signed_percent(worst.error)}")
    out["lat_missed"] = ("every target is met" if not missed else
                         "missed for " + ", ".join(missed) + " (each miss is explained below)")
    return out


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose, all from :mod:`calc.accuracy`.

    >>> f = facts()
    >>> f["n_calibration"], f["n_kinds"]
    ('6', '5')
    """
    results = evaluate()
    summary = kind_summary(results)
    example = _example()
    out = {
        "n_measurements": str(len(results)),
        "n_validation": str(sum(r.role == "validation" for r in results)),
        "n_calibration": str(sum(r.role == "calibration" for r in results)),
        "n_kinds": str(len(KINDS)),
        "measurement_tables": measurement_tables(),
        "example_measured": _value(example["measured"], example["unit"]),
        "example_predicted": _value(example["predicted"], example["unit"]),
        "example_error": signed_percent(example["error"]),
    }
    labels = {r.id: r.label for r in results}
    for kind in KINDS:
        s = summary[kind]
        out[f"median_{kind}"] = percent(s["median_abs_error"])
        out[f"worst_{kind}"] = percent(s["worst_abs_error"])
        out[f"worst_{kind}_label"] = labels[s["worst_id"]]
        out[f"bias_{kind}"] = signed_percent(s["median_error"])
        out[f"n_{kind}"] = str(s["n"])
    kv = summary["kv_capacity"]
    out["median_kv_capacity_from_log"] = percent(kv["median_abs_error_from_log"])
    out["n_kv_capacity_from_log"] = str(kv["n_from_log"])
    by_id = {r.id: r for r in results}
    for name, mid in QUOTED.items():
        r = by_id[mid]
        out[f"{name}_error"] = signed_percent(r.error)
        out[f"{name}_predicted"] = _value(r.predicted, r.unit)
        out[f"{name}_measured"] = _value(r.measured, r.unit)
    inputs = {m["id"]: m["inputs"] for m in load_measurements()}
    offline = [r for r in results if r.kind == "throughput" and r.role == "validation"
               and inputs[r.id].get("mode") == "offline_max"]
    one_gpu_8b = [r for r in offline if inputs[r.id]["model"] == "llama-3.1-8b"]
    larger = [r for r in offline if inputs[r.id]["model"] != "llama-3.1-8b"]
    out["median_throughput_8b"] = percent(median([abs(r.error) for r in one_gpu_8b]))
    out["n_throughput_8b"] = str(len(one_gpu_8b))
    out["median_throughput_larger"] = percent(median([abs(r.error) for r in larger]))
    out["n_throughput_larger"] = str(len(larger))
    out.update(latency_facts())
    return out
