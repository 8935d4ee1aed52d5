"""Widgets and facts of the page "How accurate are these numbers?" (docs/accuracy.md).

Everything here comes from :mod:`calc.accuracy`: the published measurements, calc's
prediction for each (made by the same functions the lesson's pages call), the
relative error, and per kind the median and worst error over the validation set.

>>> facts()["n_measurements"] == str(len(evaluate()))
True
>>> your_measurement()["outputs"]["predicted"]["text"]
'474,768 tokens'
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc.accuracy import (
    KIND_LABELS, KINDS, USER_KINDS, evaluate, kind_summary, kv_log_gpus_phrase, kv_logs_within_target,
    load_measurements, median, pair_terms_gib, predict_user, relative_error,
)
from calc.errors import CalcError
from calc.latency_accuracy import METRICS as LATENCY_METRICS
from calc.units import format_number, s_to_ms
from calc.widgets import controls
from calc.widgets.charts import scatter_chart
from calc.widgets.framework import (
    Choice, FloatRange, IntRange, fact, fact_from, fact_group, facts_of, output, table, view, widget,
)

__all__ = ["accuracy_overview", "your_measurement", "facts", "measurement_table", "measurement_tables", "percent",
           "signed_percent", "latency_facts", "latency_table", "latency_summary_table", "MISS_MECHANISMS",
           "ENGINE_MISS_MECHANISMS", "decision_facts"]

KIND_CHOICES = (("all", "All kinds"),) + tuple((kind, KIND_LABELS[kind]) for kind in KINDS)
USER_KIND_CHOICES = tuple((kind, text) for kind, text in USER_KINDS.items())
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
    if unit == "GiB":  # a log's memory figure, printed to hundredths
        return f"{value:.2f} GiB"
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
    return _by_id()[EXAMPLE_ID].to_dict()


@widget
def your_measurement(
    kind: Annotated[str, Choice(USER_KIND_CHOICES, label="What you measured")] = "kv_capacity",
    model: controls.Model = "llama-3.1-8b",
    gpu: controls.Gpu = "h100-sxm-80gb",
    tp: controls.TensorParallel = 1,
    weights: controls.Weights = "bf16",
    kv_dtype: controls.KvDtype = "bf16",
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

#: What keeps a latency metric above its leave-one-source-out target, named on the page when (and only when) it
#: misses (issue 33's targets, :data:`calc.latency_accuracy.LOSO_TARGETS`), over all engines.
MISS_MECHANISMS = {
    "ttft": ("the engines with one source each are predicted, with that source left out, on vLLM's terms fitted on "
             "vLLM's own two sources (see the engines below); DeepSeek-V3 on SGLang 0.4 (one run) comes out far "
             "short (see sglang-0.4 below); NIM's closed-loop rows at 5 and 25 clients come out "
             "long, where the simulated clients (fixed lengths, all started at once) stay in lock-step and each "
             "resent prompt queues behind the one before; vLLM's all-at-once run on Azure comes out short; and so does "
             "vLLM V1 on 0.5-0.6B models at low load, where a fixed time on the request's path beyond calc's request "
             "cost is most of the first token, and on 500 prompts at once, where they queue at its API server (see "
             "vllm-v1 below)"),
    "tpot_itl": ("time per token is short where an engine is priced on another engine's terms (see the engines below)"),
    "e2e": ("end-to-end latency adds up the TTFT and TPOT misses above and the answer lengths calc draws"),
    "throughput": ("a run of 200 prompts sent at once lasts as long as its longest answer, one draw of ShareGPT's "
                   "lengths, not the benchmarks' seeded sample; and the engines below"),
}
#: Per engine and metric, why its leave-one-source-out median is above the target, shown on the page for every
#: engine that misses one (a miss without an entry here fails the build: :func:`latency_facts`). Numbers in
#: braces are filled in from the profiles and the generated file.
ENGINE_MISS_MECHANISMS = {
    ("vllm", "e2e"): (
        "with its nightly benchmark left out, vLLM is refitted on the Azure run alone, whose rows all run on eight "
        "GPUs: they cannot tell the one-GPU step cost from the per-GPU one, so the refit's step cost takes the sum "
        "({nightly_fold_step_ms} ms, the per-GPU cost kept at the fit's seed) and the nightly batch-8 runs on one "
        "to four GPUs come out slow"),
    ("vllm", "throughput"): (
        "the same refit (see end to end) prices the nightly offline runs slow; the Azure rows, predicted from the "
        "nightly benchmark alone, come out within about a tenth; Lambda's vLLM 0.5.4 runs come out at "
        "{lambda_throughput} in throughput and {lambda_tpot} in time per token (median, signed): vLLM 0.5.x spent "
        "a third of its time in the HTTP API server and 29% in scheduling on Llama 3 8B on one H100, which 0.6.0 "
        "moved off the GPU's path (blog.vllm.ai/2024/09/05/perf-update.html, 'Performance Diagnosis'), and 0.5.4 "
        "runs on the current vLLM's terms, with no second source of 0.5 to fit a profile of its own on"),
    ("vllm-0.6-multistep", "ttft"): (
        "its only source (SGLang's comparison, vLLM v0.6.0 on an A100 and four H100s) is left out, so it is priced "
        "on the nightly vLLM's fitted terms, whose step cost ({vllm_step_ms} ms) is below the {own_step_ms} ms its "
        "own rows imply: an older version's per-step cost is not the current one's, and no second source of v0.6.0 "
        "is in the data"),
    ("vllm-0.6-multistep", "tpot_itl"): (
        "the same: priced on the current vLLM's step cost, its multi-step windows come out too fast"),
    ("vllm-0.6-multistep", "e2e"): ("the same: its TTFT and time per token are both short"),
    ("sglang-0.3", "ttft"): (
        "its only source is left out, so it is priced on vLLM's terms, whose per-GPU step cost ({vllm_tp_ms} ms) is "
        "below the {own_tp_ms} ms SGLang's own four-GPU row implies (SGLang 0.3 runs a scheduler in every rank and "
        "broadcasts each loop's new requests to them): its four-GPU runs come out short"),
    ("sglang-0.4", "ttft"): (
        "its only priced rows (SGLang pull request 4918: DeepSeek-V3 at TP 8, one run of ShareGPT prompts at "
        "{dsv3_sent_rate}) describe a server that finished {dsv3_done_rate}, with about {dsv3_in_flight} requests in "
        "flight and {dsv3_ms_per_token} ms a token (mean end to end less mean TTFT, over the mean answer), where calc "
        "serves the rate with no queue at {dsv3_calc_itl_ms} ms a token (its simulated median ITL). The source names "
        "no GPU for its serving run (read as H200 from the same description's accuracy section) and no MoE kernel "
        "configuration; no mechanism read explains a step several times calc's, so nothing is changed for it"),
    ("vllm-v1", "ttft"): (
        "its TTFT rows are three runs, all priced with a request cost of {v1_request_ms} ms inherited from the "
        "nightly vLLM's fit on V0 servers. On the two small models the first token at low load takes far longer "
        "than calc's while their decode steps do not: {l4_ttft_c1_ms} ms at one client on a 0.5B model on one L4 "
        "(vLLM 0.23.0, a node of 4 vCPUs; calc {l4_calc_ttft_c1_ms} ms, and a decode step of {l4_itl_c1_ms} ms "
        "against calc's {l4_calc_itl_c1_ms}; at two clients {l4_ttft_c2_ms} ms, where calc prefills both prompts in "
        "one step of the same cost) and {kv_r16_ttft_ms} ms at 16 req/s on Qwen3 0.6B on one H100 (vLLM 0.19.0; calc "
        "{kv_calc_r16_ttft_ms} ms, and a time per token of {kv_r16_tpot_ms} ms against calc's {kv_calc_r16_tpot_ms}). "
        "On Qwen2.5 72B on four H100s (vLLM 0.22.1, a host of 64 CPUs) the first token at one client took "
        "{ib_ttft_c1_ms} ms where calc gives {ib_calc_ttft_c1_ms} ms ({ib_ttft_c1_error}, about what its decode "
        "step is long there, see end to end). So V1's first token costs a fixed time beyond calc's request cost "
        "that a 72B model's prefill hides and a 0.6B model's does not: V1 carries each request through two "
        "processes, the API server (HTTP, tokenizing, streaming) and the engine core (vLLM's architecture "
        "overview). The 500-prompts-at-once run's median TTFT, {kv_inf_ttft_ms} ms against calc's "
        "{kv_calc_inf_ttft_ms} ms, is the API server's queue instead (see time per token). No source in the data "
        "splits that fixed time into its parts, so nothing is changed for it"),
    ("vllm-v1", "tpot_itl"): (
        "Qwen3 0.6B's 500 prompts sent at once to one H100 (vLLM 0.19.0) took {kv_inf_tpot_ms} ms a token where "
        "calc takes {kv_calc_inf_tpot_ms} ms: calc charges each running sequence the per-sequence serving cost "
        "fitted on V0 servers ({vllm_seq_us} us, where detokenizing and streaming ran in the engine's own loop) "
        "inside every step, with {kv_calc_running} sequences running on average. V1 does that work in its API "
        "server process, beside the engine (vLLM's architecture overview), so it does not lengthen a step; it "
        "caps the server's output instead: one API server at {vllm_seq_us} us a token streams at most "
        "{api_cap_tok_s} tokens a second, and the run streamed {kv_inf_tok_s} ({kv_inf_vs_cap} of that cap), about "
        "{kv_in_flight} requests in flight at a time (output rate times time per token) while the rest waited. "
        "calc's simulator has no API server process of its own yet, so nothing is changed for it"),
    ("vllm-v1", "throughput"): (
        "the same run: calc's steps of {kv_calc_running} sequences, each charged the per-sequence cost, stream "
        "{kv_calc_tok_s} tokens a second where the API server streamed {kv_inf_tok_s}"),
    ("vllm-v1", "e2e"): (
        "an answer of 128 tokens is mostly decode steps, and calc's V1 step is long: on the four H100s its median "
        "time per token comes out {ib_tpot_error} at one to 16 clients ({ib_calc_tpot_c1_ms} ms against "
        "{ib_tpot_c1_ms} ms at one), on the L4 its inter-token latency comes out {l4_itl_errors}. calc adds the "
        "step costs fitted on V0 servers ({vllm_step_ms} ms a step, {vllm_tp_ms} ms more for each GPU beyond the first, and the "
        "per-sequence cost V1 pays in its API server instead, see time per token) to the GPU's time, where vLLM 0.14 "
        "and later schedule the next step while the GPU runs the current one (async scheduling, on by default since "
        "0.14.0, its release notes: 'overlaps engine core scheduling with GPU execution'). How much of those costs "
        "the overlap hides is not in the data: no V1 row is calibration, and the V1 runs at 0.14 or later "
        "disagree (with those costs fully hidden, calc's step at one client would come out {ib_hidden_error} on "
        "the four H100s and {l4_hidden_error} on the L4), so nothing is fitted for it"),
    ("sglang-0.4", "e2e"): ("the same run: its time per token is several times calc's"),
    ("sglang-0.4", "throughput"): ("the same run: the server finished fewer requests a second than were sent, calc "
                                   "all of them"),
    ("sglang-0.3", "throughput"): (
        "its 5,000-prompt runs at rate infinity are charged a per-sequence serving cost at a few hundred running "
        "sequences, where SGLang detokenizes and streams in processes of its own beside the GPU's work (with its own "
        "fitted terms they are {in_sample_errors} in-sample too)"),
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
    '| Figure | Metric | Engine | Role | calc | Measured | Error | Error, source left out | Source |'
    """
    from calc import latency_accuracy

    results = _latency_results() if results is None else results
    rows_by_id = {r["id"]: r for r in latency_accuracy.load_rows()}
    loso = {r["id"]: r for r in _loso_data()["rows"]}
    rows = ["| Figure | Metric | Engine | Role | calc | Measured | Error | Error, source left out | Source |",
            "| --- | --- | --- | --- | ---: | ---: | ---: | ---: | --- |"]
    for r in results:
        row = rows_by_id[r.id]
        where = _cell(r.source_where).replace('"', "'")
        link = f'[{_cell(r.source_cite)}]({row["source"]["url"]} "{_cell(row["source"]["name"])}: {where}")'
        rows.append(f"| {_cell(r.label)} | {latency_accuracy.METRIC_LABELS[r.metric]} | "
                    f"`{row['inputs'].get('engine_profile', 'vllm')}` | {r.role} | {_latency_value(r.predicted, r.unit)} | "
                    f"{_latency_value(r.measured, r.unit)} | {signed_percent(r.error)} | "
                    f"{signed_percent(loso[r.id]['loso_error']) if r.id in loso else '-'} | {link} |")
    return "\n".join(rows)


def _loso_data() -> dict:
    from calc import latency_loso

    return latency_loso.stored()


def latency_summary_table(loso=None) -> str:
    """Per metric and engine: validation rows and sources, median |error| in-sample beside leave-one-source-out.

    The generated leave-one-source-out file (:mod:`calc.latency_loso`) rendered by its own table function.

    >>> latency_summary_table().splitlines()[0].split(" | ")[4]
    'In-sample, median abs. error'
    """
    from calc import latency_loso

    return latency_loso.summary_table(_loso_data() if loso is None else loso)


def _engine_terms_table() -> str:
    from calc.engine_profiles import ENGINES, get_profile

    from calc.latency_fit import stored
    from calc.latency_loso import term_spread

    fits, spread = stored(), term_spread(_loso_data())
    rows = ["| Engine profile | Term | Value | Standard error | Source left out: range | Role | Source |",
            "| --- | --- | ---: | ---: | ---: | --- | --- |"]
    for key in ENGINES:  # the fitted profiles, then the current engines' (their terms inherited: no fit of their own)
        for term, value, role, source in get_profile(key).term_rows():
            se = fits[key][term]["standard_error_s"] if key in fits else None
            values = spread.get(key, {}).get(term)
            span = f"{format_number(min(values) * 1000)}-{format_number(max(values) * 1000)} ms" if values else "-"
            rows.append(f"| `{key}` | `{term}` | {format_number(value * 1000)} ms | "
                        f"{'-' if se is None else format_number(se * 1000) + ' ms'} | {span} | {role} | {_cell(source)} |")
    return "\n".join(rows)


def _count(n: int, noun: str) -> str:
    """``n`` and the noun, plural unless one.

    >>> _count(1, "source"), _count(2, "source")
    ('1 source', '2 sources')
    """
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _added_sources_facts() -> dict[str, str]:
    """The before/after section's figures: the added sources, the trtllm-bench batch, the simulator's default cap."""
    from calc import latency_accuracy, roofline
    from calc.latency_loso import ADDED_SOURCES
    from calc.sim import Scenario

    batch, _ = latency_accuracy.trtllm_bench_settings("llama-3.1-405b", "h200", tp=8, weights="fp8", kv_dtype="bf16",
                                                      input_tokens=128, output_tokens=128)
    return {"lat_n_added_sources": str(len(ADDED_SOURCES)), "lat_added_sources": "; ".join(ADDED_SOURCES),
            "lat_trtllm_bench_batch": f"{batch:,}", "lat_sim_default_cap": f"{Scenario().max_num_seqs:,}",
            "lat_n_roofline_calibration": str(len(roofline.CALIBRATION_ROW)),
            "lat_readings": "\n".join(f"- `{key}`: {text}." for key, text in latency_accuracy.READINGS.items())}


def _step_with_costs_hidden(held_out: dict, row: dict) -> float:
    """A one-client decode row's simulated step (ms, its held-out figure ``held_out["loso"]``) less the engine's
    step costs for one sequence on the row's replica (:meth:`calc.roofline.StepCoefficients.overhead_s`, as the
    simulator prices the row's steps): the step if the CPU's work hid entirely behind the GPU's.

    >>> from calc import latency_accuracy
    >>> from calc.sim import Scenario
    >>> from calc.sim.hardware import replica_hardware
    >>> row = next(r for r in latency_accuracy.load_rows() if r["id"].startswith("inferencebench-"))
    >>> coefficients = replica_hardware(Scenario.from_dict(latency_accuracy.scenario_for(row))).coefficients
    >>> costs_ms = 1000 * coefficients.overhead_s(1)
    >>> round(_step_with_costs_hidden({"loso": 20.0}, row) - (20.0 - costs_ms), 9), round(costs_ms, 2)
    (0.0, 4.25)
    """
    from calc.latency_accuracy import scenario_for
    from calc.sim import Scenario
    from calc.sim.hardware import replica_hardware

    coefficients = replica_hardware(Scenario.from_dict(scenario_for(row))).coefficients
    return held_out["loso"] - s_to_ms(coefficients.overhead_s(1))


def _miss_figures(loso: dict) -> dict[str, str]:
    """Figures the engine-miss texts quote, computed from the rows and the generated file."""
    from calc import latency_accuracy
    from calc.engine_profiles import get_profile
    from calc.latency_loso import ADDED_SOURCES

    rows = {r["id"]: r for r in latency_accuracy.load_rows()}
    by_id = {r["id"]: r for r in loso["rows"]}
    lambda_rows = [r for r in loso["rows"] if r["source"] == ADDED_SOURCES[0] and r["role"] == "validation"]
    out = {"lambda_throughput": "-", "lambda_tpot": "-", "dsv3_sent_rate": "-", "dsv3_done_rate": "-", "dsv3_in_flight": "-",
           "dsv3_ms_per_token": "-", "dsv3_calc_itl_ms": "-"}
    if lambda_rows:
        out["lambda_throughput"] = signed_percent(median([r["loso_error"] for r in lambda_rows
                                                          if r["metric"] == "throughput"]))
        out["lambda_tpot"] = signed_percent(median([r["loso_error"] for r in lambda_rows if r["metric"] == "tpot_itl"]))
    run = "sglang-pr4918-deepseek-v3-fp8-h200-tp8-sharegpt-rps4-"
    if run + "e2e-mean" in by_id:
        done = rows[run + "throughput-req"]["figure"]["value"]
        e2e_s, ttft_s = rows[run + "e2e-mean"]["figure"]["value"] / 1000, rows[run + "ttft-mean"]["figure"]["value"] / 1000
        answer = rows[run + "e2e-mean"]["inputs"]["lengths"]["mean_output_tokens"]
        summary, _, _ = latency_accuracy.simulate_row(rows[run + "e2e-mean"])
        sent = rows[run + "e2e-mean"]["inputs"]["client"]["rate_per_s"]
        out.update(dsv3_sent_rate=f"{format_number(sent)} req/s", dsv3_done_rate=f"{format_number(done)} req/s", dsv3_in_flight=f"{done * e2e_s:.0f}",
                   dsv3_ms_per_token=f"{(e2e_s - ttft_s) / (answer - 1) * 1000:.0f}",
                   dsv3_calc_itl_ms=format_number(summary["itl_p50_s"] * 1000))
    l4 = "wmx-vllm-0.23.0-qwen2.5-0.5b-bf16-l4-tp1-256-128-c"
    ib = "inferencebench-vllm-0.22.1-qwen2.5-72b-bf16-h100-tp4-chat-40-128-c"
    out.update(l4_ttft_c1_ms="-", l4_calc_ttft_c1_ms="-", l4_itl_c1_ms="-", l4_calc_itl_c1_ms="-", l4_ttft_c2_ms="-",
               l4_itl_errors="-", ib_ttft_c1_ms="-", ib_calc_ttft_c1_ms="-", ib_ttft_c1_error="-", ib_tpot_error="-",
               ib_calc_tpot_c1_ms="-", ib_tpot_c1_ms="-", ib_hidden_error="-", l4_hidden_error="-",
               kv_r16_ttft_ms="-", kv_calc_r16_ttft_ms="-", kv_r16_tpot_ms="-", kv_calc_r16_tpot_ms="-",
               kv_inf_ttft_ms="-", kv_calc_inf_ttft_ms="-", kv_inf_tpot_ms="-", kv_calc_inf_tpot_ms="-",
               kv_calc_running="-", api_cap_tok_s="-", kv_inf_tok_s="-", kv_inf_vs_cap="-", kv_in_flight="-",
               kv_calc_tok_s="-", vllm_seq_us=format_number(get_profile("vllm").seq_overhead_s * 1e6),
               v1_request_ms=format_number(s_to_ms(get_profile("vllm-v1").request_overhead_s)))
    if l4 + "1-ttft-p50" in by_id:
        ttft, itl = by_id[l4 + "1-ttft-p50"], by_id[l4 + "1-itl-p50"]
        out.update(l4_ttft_c1_ms=format_number(ttft["measured"]), l4_calc_ttft_c1_ms=format_number(ttft["loso"]),
                   l4_itl_c1_ms=format_number(itl["measured"]), l4_calc_itl_c1_ms=format_number(itl["loso"]),
                   l4_ttft_c2_ms=format_number(by_id[l4 + "2-ttft-p50"]["measured"]))
        l4_itl = sorted(by_id[f"{l4}{c}-itl-p50"]["loso_error"] for c in (1, 2, 4, 8, 16, 32))
        out["l4_itl_errors"] = f"{signed_percent(l4_itl[0])} to {signed_percent(l4_itl[-1])} at one to 32 clients"
        out["l4_hidden_error"] = signed_percent(_step_with_costs_hidden(itl, rows[itl["id"]]) / itl["measured"] - 1)
    if ib + "1-ttft-p50" in by_id:
        ttft, tpot = by_id[ib + "1-ttft-p50"], by_id[ib + "1-tpot-p50"]
        tpots = sorted(by_id[f"{ib}{c}-tpot-p50"]["loso_error"] for c in (1, 4, 16))
        out.update(ib_ttft_c1_ms=format_number(ttft["measured"]), ib_calc_ttft_c1_ms=format_number(ttft["loso"]),
                   ib_ttft_c1_error=signed_percent(ttft["loso_error"]),
                   ib_tpot_error=(f"{signed_percent(tpots[0])} to {signed_percent(tpots[-1])}" if tpots[0] != tpots[-1]
                                  else signed_percent(tpots[0])),
                   ib_calc_tpot_c1_ms=format_number(tpot["loso"]), ib_tpot_c1_ms=format_number(tpot["measured"]),
                   ib_hidden_error=signed_percent(_step_with_costs_hidden(tpot, rows[tpot["id"]]) / tpot["measured"] - 1))
    kv = "kvcached-vllm-0.19.0-qwen3-0.6b-bf16-h100-tp1-512-128-"
    if kv + "inf-throughput" in by_id:
        r16_ttft, r16_tpot = by_id[kv + "rps16-ttft-p50"], by_id[kv + "rps16-tpot-p50"]
        inf_ttft, inf_tpot, inf_out = by_id[kv + "inf-ttft-p50"], by_id[kv + "inf-tpot-p50"], by_id[kv + "inf-throughput"]
        summary, _, _ = latency_accuracy.simulate_row(rows[kv + "inf-throughput"])
        cap_tok_s = 1 / get_profile("vllm").seq_overhead_s  # one API server process, one token's serving cost each
        out.update(kv_r16_ttft_ms=format_number(r16_ttft["measured"]), kv_calc_r16_ttft_ms=format_number(r16_ttft["loso"]),
                   kv_r16_tpot_ms=format_number(r16_tpot["measured"]), kv_calc_r16_tpot_ms=format_number(r16_tpot["loso"]),
                   kv_inf_ttft_ms=f"{inf_ttft['measured']:,.0f}", kv_calc_inf_ttft_ms=f"{inf_ttft['loso']:,.0f}",
                   kv_inf_tpot_ms=format_number(inf_tpot["measured"]), kv_calc_inf_tpot_ms=format_number(inf_tpot["loso"]),
                   kv_calc_running=f"{summary['running_mean']:.0f}", api_cap_tok_s=f"{cap_tok_s:,.0f}",
                   kv_inf_tok_s=f"{inf_out['measured']:,.0f}", kv_inf_vs_cap=percent(inf_out["measured"] / cap_tok_s),
                   kv_in_flight=f"{inf_out['measured'] * inf_tpot['measured'] / 1000:.0f}",
                   kv_calc_tok_s=f"{inf_out['loso']:,.0f}")
    return out


def latency_facts(results=None, loso=None) -> dict[str, str]:
    """The latency section's facts: per metric n, leave-one-source-out and in-sample medians, verdicts, tables.

    The headline medians are leave-one-source-out (:mod:`calc.latency_loso`, the generated file), over
    validation rows; a verdict against issue 33's targets (:data:`calc.latency_accuracy.LOSO_TARGETS`) that
    misses names its mechanism (:data:`MISS_MECHANISMS`) and the metric's worst figure.

    >>> f = latency_facts()
    >>> f["lat_target_throughput"], f["lat_verdict_e2e"].split(":")[0] in ("meets the target", "misses the target")
    ('12.0%', True)
    """
    from calc import latency_accuracy, latency_loso

    results = _latency_results() if results is None else results
    loso = _loso_data() if loso is None else loso
    s = latency_loso.summary(loso)
    labels = {r["id"]: r["label"] for r in latency_accuracy.load_rows()}
    out = {
        "lat_n_figures": str(len(results)),
        "lat_n_calibration": str(sum(r.role == "calibration" for r in results)),
        "lat_n_validation": str(sum(r.role == "validation" for r in results)),
        "lat_n_sources": str(len({r["source"] for r in loso["rows"]})),
        "latency_summary_table": latency_summary_table(loso),
        "latency_table": latency_table(results),
        # The same table inside a collapsible note: every line after the first indented four spaces.
        "latency_table_in_note": "\n    ".join(latency_table(results).splitlines()),
        "engine_terms_table": _engine_terms_table(),
        "lat_source_table": latency_loso.source_table(loso),
        "lat_before_after_table": latency_loso.before_after_table(loso),
        "lat_refused_list": latency_loso.refused_list(loso),
        "lat_n_refused": str(len(loso["refused"])),
        "lat_refused_sources": _count(len({r["source"] for r in loso["refused"]}), "source"),
        "lat_n_rows_all": str(len([*results, *loso["refused"]])),
        **_added_sources_facts(),
    }
    missed = []
    for m in latency_accuracy.METRICS:
        cell = s[m]["all"]
        v, inside = cell["loso"], cell["in_sample"]
        target = latency_accuracy.LOSO_TARGETS[m]
        out[f"lat_n_{m}"] = str(v["n"])
        out[f"lat_median_{m}"] = percent(v["median_abs_error"])
        out[f"lat_in_sample_{m}"] = percent(inside["median_abs_error"])
        out[f"lat_bias_{m}"] = signed_percent(v["median_error"])
        out[f"lat_target_{m}"] = percent(target)
        chosen = [r for r in loso["rows"] if r["role"] == "validation" and r["metric"] == m]
        worst = max(chosen, key=lambda r: abs(r["loso_error"]))
        if v["median_abs_error"] <= target:
            out[f"lat_verdict_{m}"] = f"meets the target: {percent(v['median_abs_error'])} against {percent(target)}"
        else:
            missed.append(latency_accuracy.METRIC_LABELS[m])
            out[f"lat_verdict_{m}"] = (f"misses the target: {percent(v['median_abs_error'])} against {percent(target)}. "
                                       f"Why: {MISS_MECHANISMS[m]}. Worst figure: {labels[worst['id']]}, "
                                       f"{signed_percent(worst['loso_error'])}")
    out["lat_missed"] = ("every target is met" if not missed else
                         "missed for " + ", ".join(missed) + " (each miss is explained below)")
    engine_misses = []
    for m in latency_accuracy.METRICS:
        for key, cell in s[m].items():
            v = cell["loso"]
            if key == "all" or not v["n"] or v["median_abs_error"] <= latency_accuracy.LOSO_TARGETS[m]:
                continue
            if (key, m) not in ENGINE_MISS_MECHANISMS:
                raise CalcError(f"engine {key} misses the {m} target leave-one-source-out "
                                f"({percent(v['median_abs_error'])}) and ENGINE_MISS_MECHANISMS does not say why", "engine")
            from calc.engine_profiles import get_profile

            inside = sorted(r["in_sample_error"] for r in loso["rows"]
                            if r["role"] == "validation" and r["engine"] == key and r["metric"] == m)
            why = ENGINE_MISS_MECHANISMS[(key, m)].format(
                vllm_step_ms=format_number(s_to_ms(get_profile("vllm").step_overhead_s)),
                own_step_ms=format_number(s_to_ms(get_profile(key).step_overhead_s)),
                vllm_tp_ms=format_number(s_to_ms(get_profile("vllm").tp_step_overhead_s)),
                own_tp_ms=format_number(s_to_ms(get_profile(key).tp_step_overhead_s)),
                nightly_fold_step_ms=format_number(s_to_ms(
                    loso["folds"].get("vLLM nightly benchmark", {}).get("vllm", {}).get("step_overhead_s", 0.0))),
                in_sample_errors=" and ".join(signed_percent(e) for e in inside), **_miss_figures(loso))
            engine_misses.append(f"- `{key}`, {latency_accuracy.METRIC_LABELS[m]}: {percent(v['median_abs_error'])} "
                                 f"({v['n']} figures, median signed {signed_percent(v['median_error'])}): {why}.")
    out["lat_engine_misses"] = "\n".join(engine_misses) if engine_misses else "- none: every engine meets every target."
    return out


# --- facts --------------------------------------------------------------------------------------
#
# Each fact is computed alone when the page names it; what several share (every prediction, the per-kind
# summary) is a cached function, run once per process.

@functools.cache
def _results() -> tuple:
    return tuple(evaluate())


@functools.cache
def _summary() -> dict:
    return kind_summary(list(_results()))


@functools.cache
def _by_id() -> dict:
    return {r.id: r for r in _results()}


@functools.cache
def _offline_throughput() -> tuple[list, list]:
    """The offline (maximum-throughput) validation figures: the 8B on one GPU, and the larger deployments."""
    inputs = {m["id"]: m["inputs"] for m in load_measurements()}
    offline = [r for r in _results() if r.kind == "throughput" and r.role == "validation"
               and inputs[r.id].get("mode") == "offline_max"]
    return ([r for r in offline if inputs[r.id]["model"] == "llama-3.1-8b"],
            [r for r in offline if inputs[r.id]["model"] != "llama-3.1-8b"])


@fact
def n_measurements() -> str:
    """>>> n_measurements() == str(len(evaluate()))
    True
    """
    return str(len(_results()))


@fact
def n_validation() -> str:
    return str(sum(r.role == "validation" for r in _results()))


@fact
def n_calibration() -> str:
    """>>> n_calibration(), n_kinds()
    ('6', '5')
    """
    return str(sum(r.role == "calibration" for r in _results()))


@fact
def n_kinds() -> str:
    return str(len(KINDS))


fact(measurement_tables)


@fact
def example_measured() -> str:
    return _value(_example()["measured"], _example()["unit"])


@fact
def example_predicted() -> str:
    return _value(_example()["predicted"], _example()["unit"])


@fact
def example_error() -> str:
    return signed_percent(_example()["error"])


for _kind in KINDS:
    fact_from(f"median_{_kind}", lambda kind=_kind: percent(_summary()[kind]["median_abs_error"]))
    fact_from(f"worst_{_kind}", lambda kind=_kind: percent(_summary()[kind]["worst_abs_error"]))
    fact_from(f"worst_{_kind}_label", lambda kind=_kind: _by_id()[_summary()[kind]["worst_id"]].label)
    fact_from(f"bias_{_kind}", lambda kind=_kind: signed_percent(_summary()[kind]["median_error"]))
    fact_from(f"n_{_kind}", lambda kind=_kind: str(_summary()[kind]["n"]))


@fact
def median_kv_capacity_from_log() -> str:
    return percent(_summary()["kv_capacity"]["median_abs_error_from_log"])


@fact
def n_kv_capacity_from_log() -> str:
    return str(_summary()["kv_capacity"]["n_from_log"])


@fact
def kv_within_target() -> str:
    return "{} of {}".format(*kv_logs_within_target())


#: Two logs of one server a quarter of the card apart (calc.accuracy.pair_terms_gib): the named KV miss's pair.
PAIR = ("vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.5", "vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.25")


@functools.cache
def _pair() -> dict:
    return pair_terms_gib(*PAIR)


for _term in ("total", "calc_total", "overhead", "calc_overhead"):
    fact_from(f"kv_pair_{_term}", lambda term=_term: f"{_pair()[term]:.2f} GiB")


@fact
def kv_log_gpu_models() -> str:
    return kv_log_gpus_phrase()


for _quoted, _id in QUOTED.items():
    fact_from(f"{_quoted}_error", lambda mid=_id: signed_percent(_by_id()[mid].error))
    fact_from(f"{_quoted}_predicted", lambda mid=_id: _value(_by_id()[mid].predicted, _by_id()[mid].unit))
    fact_from(f"{_quoted}_measured", lambda mid=_id: _value(_by_id()[mid].measured, _by_id()[mid].unit))


@fact
def median_throughput_8b() -> str:
    return percent(median([abs(r.error) for r in _offline_throughput()[0]]))


@fact
def n_throughput_8b() -> str:
    return str(len(_offline_throughput()[0]))


@fact
def median_throughput_larger() -> str:
    return percent(median([abs(r.error) for r in _offline_throughput()[1]]))


@fact
def n_throughput_larger() -> str:
    return str(len(_offline_throughput()[1]))


def _sides(bias: dict, labels: dict) -> str:
    """Which metrics the simulator puts below and above the runs' figures (a median error past 10% either way).

    >>> _sides({"a": -0.3, "b": 0.2, "c": 0.01}, {"a": "TTFT", "b": "TPOT", "c": "E2E"})
    "puts TTFT below the runs' figures and TPOT above them"
    """
    below = [labels[m] for m, e in bias.items() if e < -0.1]
    above = [labels[m] for m, e in bias.items() if e > 0.1]
    join = lambda xs: ", ".join(xs[:-1]) + " and " + xs[-1] if len(xs) > 1 else xs[0]
    parts = ([f"puts {join(below)} below the runs' figures"] if below else []) + (
        [f"{join(above)} above them" if below else f"puts {join(above)} above the runs' figures"] if above else [])
    return " and ".join(parts) if parts else "is within 10% of the runs' figures on every metric"


def decision_facts(scores: dict | None = None) -> dict[str, str]:
    """The section "How good are the planner's picks?": the stored decision test (:mod:`calc.plan.decisions`,
    ``calc/data/decision_scores.json``, equal to a fresh run by test) as tables and the numbers its prose quotes.

    >>> f = decision_facts()
    >>> f["dec_table"].splitlines()[0]
    '| Group | Source | Role | Configurations | Questions | Picks that meet them | Median regret (worst) |'
    >>> int(f["dec_questions_validation"]) > int(f["dec_questions_calibration"]) > 0
    True
    """
    from calc.plan.decisions import METRICS, SCORES_PATH

    if scores is None:
        import json

        with open(SCORES_PATH, encoding="utf-8") as handle:
            scores = json.load(handle)
    labels = {"ttft_p50_s": "median TTFT", "ttft_p99_s": "p99 TTFT", "tpot_p50_s": "median TPOT",
              "tpot_p99_s": "p99 TPOT", "e2e_p50_s": "median end to end", "duration_s": "the run's wall time"}
    pct = lambda x: "-" if x is None else f"{x:.0%}"
    rows = ["| Group | Source | Role | Configurations | Questions | Picks that meet them | Median regret (worst) |",
            "| --- | --- | --- | ---: | ---: | ---: | ---: |"]
    for g in scores["groups"]:
        served = sum("failed" not in c["measured"] for c in g["configurations"])
        failed = sum("failed" in c["measured"] for c in g["configurations"])
        extra = [text for text, shown in ((f"{failed} failed", failed),
                                          (f"{len(g['left_out'])} unpriced, left out", g["left_out"])) if shown]
        configs = f"{served}" + (f" ({', '.join(extra)})" if extra else "")
        regret = "-" if g["median_regret"] is None else (
            f"{g['median_regret']:.0%}" + (f" ({g['max_regret']:.0%})" if g["max_regret"] else ""))
        link = f'[{_cell(g["cite"])}]({g["configurations"][0]["source"]} "{_cell(g["source"]).replace(chr(34), chr(39))}")'
        rows.append(f"| `{g['id']}` | {link} | {g['role']} | {configs} | {g['questions']} | {pct(g['hit_rate'])} | "
                    f"{regret} |")
    v, c = scores["by_role"]["validation"], scores["by_role"]["calibration"]
    metric_rows = ["| Target on | Questions | Picks that meet them |", "| --- | ---: | ---: |"]
    for m in METRICS:
        if m in v["by_metric"]:
            s = v["by_metric"][m]
            metric_rows.append(f"| {labels[m]} | {s['scored']} | {pct(s['hit_rate'])} |")
    # The simulator's figure against the measured one, over the served validation configurations, per metric.
    errors = {}
    for g in scores["groups"]:
        if g["role"] != "validation":
            continue
        for cfg in g["configurations"]:
            for m, measured in cfg["measured"].items():
                if m in cfg["predicted"] and measured:
                    errors.setdefault(m, []).append(relative_error(cfg["predicted"][m], measured))
    bias = {m: median(errors[m]) for m in METRICS if m in errors}
    optimistic = sum(g["optimistic"] for g in scores["groups"] if g["role"] == "validation")
    pessimistic = sum(g["pessimistic"] for g in scores["groups"] if g["role"] == "validation")
    misses = sum(g[side] for g in scores["groups"] if g["role"] == "validation"
                 for side in ("optimistic", "pessimistic"))
    failed = [(g, cfg) for g in scores["groups"] for cfg in g["configurations"] if "failed" in cfg["measured"]]
    # The sweeps of more than two configurations (the validation ones): where most questions, and misses, are.
    large = [g for g in scores["groups"] if g["role"] == "validation" and len(g["configurations"]) > 2]
    worst = min((g for g in scores["groups"] if g["role"] == "validation" and g["hit_rate"] is not None),
                key=lambda g: (g["hit_rate"], g["id"]))
    return {
        "dec_table": "\n".join(rows),
        "dec_metric_table": "\n".join(metric_rows),
        "dec_n_groups": str(len(scores["groups"])),
        "dec_n_sources": str(len({g["cite"].split(",")[0] for g in scores["groups"]})),
        "dec_n_configurations": str(sum(len(g["configurations"]) for g in scores["groups"])),
        "dec_questions_validation": str(v["scored"]), "dec_hit_validation": pct(v["hit_rate"]),
        "dec_regret_validation": pct(v["median_regret"]), "dec_groups_validation": str(v["groups"]),
        "dec_questions_calibration": str(c["scored"]), "dec_hit_calibration": pct(c["hit_rate"]),
        "dec_groups_calibration": str(c["groups"]),
        "dec_misses_validation": str(misses), "dec_optimistic": str(optimistic),
        "dec_pessimistic": str(pessimistic),
        "dec_bias": "; ".join(f"{labels[m]} {signed_percent(bias[m])}" for m in METRICS if m in bias),
        "dec_bias_words": _sides(bias, labels),
        "dec_worst_group": f"`{worst['id']}` ({pct(worst['hit_rate'])} of {worst['questions']})",
        "dec_misses_large": str(sum(len(g["misses"]) for g in large)),
        "dec_questions_large": str(sum(g["questions"] for g in large)),
        "dec_n_large": str(len(large)),
        "dec_failed": str(len(failed)),
        "dec_failed_refused": str(sum("refused" in cfg["predicted"] for _, cfg in failed)),
    }


#: The names :func:`latency_facts` returns (the first run checks them: :func:`calc.widgets.framework.fact_group`).
LATENCY_FACT_NAMES = (
    "lat_n_figures", "lat_n_calibration", "lat_n_validation", "lat_n_sources", "latency_summary_table",
    "latency_table", "latency_table_in_note", "engine_terms_table", "lat_source_table", "lat_before_after_table",
    "lat_refused_list", "lat_n_refused", "lat_refused_sources", "lat_n_rows_all",
    "lat_n_added_sources", "lat_added_sources", "lat_trtllm_bench_batch", "lat_sim_default_cap",
    "lat_n_roofline_calibration", "lat_readings",
    *(f"lat_{part}_{metric}" for metric in LATENCY_METRICS
      for part in ("n", "median", "in_sample", "bias", "target", "verdict")),
    "lat_missed", "lat_engine_misses",
)
#: The names :func:`decision_facts` returns.
DECISION_FACT_NAMES = (
    "dec_table", "dec_metric_table", "dec_n_groups", "dec_n_sources", "dec_n_configurations",
    "dec_questions_validation", "dec_hit_validation", "dec_regret_validation", "dec_groups_validation",
    "dec_questions_calibration", "dec_hit_calibration", "dec_groups_calibration", "dec_misses_validation",
    "dec_optimistic", "dec_pessimistic", "dec_bias", "dec_bias_words", "dec_worst_group", "dec_misses_large",
    "dec_questions_large", "dec_n_large", "dec_failed", "dec_failed_refused",
)
fact_group(latency_facts, LATENCY_FACT_NAMES)
fact_group(decision_facts, DECISION_FACT_NAMES)
facts = facts_of(__name__)
