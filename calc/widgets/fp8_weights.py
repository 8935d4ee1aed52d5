"""Widgets and facts of step 7, "Quantize the weights to fp8" (docs/lesson/07-fp8-weights.md).

Halving the bytes per weight does two things to the running example (Llama 3.1
70B on four H100s, TP 4):

* the weights of each GPU shrink, and vLLM hands the freed memory to the KV
  cache (``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``, via
  :func:`calc.lesson.kv_capacity`);
* a small-batch decode step, which is bound by reading the weights from HBM,
  takes nearly half the time (the roofline of :mod:`calc.roofline`).

The bf16 replica is step 1's (the lesson's 70.6 B parameters, 399,169 tokens); the
fp8 checkpoint is weighed tensor by tensor (:func:`calc.memory.weight_bytes`: it
keeps its embeddings and LM head in 16 bits and adds one scale per output channel),
as :func:`calc.lesson.kv_capacity` does for every format with scales.

>>> before, after = lesson.kv_capacity(weights="bf16"), lesson.kv_capacity(weights="fp8")
>>> before.kv_cache_tokens_raw, after.kv_cache_tokens_raw
(399169, 608266)
>>> round(lesson.decode_ms("bf16"), 1), round(lesson.decode_ms("fp8"), 1)
(15.3, 8.6)
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.allocation import contiguous_max_concurrency
from calc.memory import WEIGHT_BITS, WEIGHT_FORMATS, KVCapacity, bits_per_weight, freed_bytes, weight_bytes
from calc.roofline import decode_step, ttft_s
from calc.sim import presets
from calc.units import GB, format_number, ratio, round_sig
from calc.lesson import DECODE_CONTEXT_TOKENS, PROMPT_TOKENS, REQUEST_TOKENS
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.sim_views import preset_summary, scenario_for
from calc.widgets.simulation import simulation_views
from calc.widgets.views import percent_text

__all__ = ["memory_before_after", "step_before_after", "twice_the_traffic",
           "facts", "BEFORE", "AFTER", "SIM_PRESET"]

#: The running example's weights (bf16) and this step's change (fp8).
BEFORE = lesson.REPLICA["weights"]
AFTER = "fp8"
#: Step 6's saturated replica, the scenario this step replays with fewer bytes per weight.
SIM_PRESET = "step06-twice-the-traffic"
SIM_RATE_PER_S = float(presets.load_data(SIM_PRESET)["workload"]["rate_per_s"])
BATCH_POINTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512)

_NOTES = {"bf16": "the checkpoint as trained", "fp16": "16-bit, same bytes", "fp8": "8-bit float, W8A8",
          "int8": "8-bit integer, W8A8", "int4": "4-bit, W4A16", "nf4": "4-bit NormalFloat"}
FORMAT_CHOICES = tuple((fmt, f"{fmt} ({WEIGHT_BITS[fmt]} bits: {_NOTES[fmt]})") for fmt in WEIGHT_FORMATS)
_TERM_COLOURS = (("Weights", PALETTE[0]), ("Activation workspace", PALETTE[1]), ("Non-torch overhead", PALETTE[3]),
                 ("KV cache", PALETTE[2]), ("Unclaimed (1 − utilization)", "#9e9e9e"))


def _gb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / GB)} GB"


def _pct(ratio: float) -> str:
    return f"{ratio * 100 - 100:+.0f}%"


def _terms(cap: KVCapacity) -> list[float]:
    return [cap.weights_bytes, cap.activation_bytes, cap.non_torch_bytes, cap.kv_cache_bytes, cap.unclaimed_bytes]


@widget
def memory_before_after(
    weights: Annotated[str, Choice(FORMAT_CHOICES, label="Weights after")] = AFTER,
):
    """One GPU of the running example with bf16 weights and with ``weights``: where the freed memory goes.

    KV cache per GPU = 90% of 80 GB - weights - workspace - overhead; tokens = that /
    81,920 B per token per GPU (:func:`calc.memory.kv_capacity`, vLLM's sizing).

    >>> out = memory_before_after()["outputs"]
    >>> out["weights_after"]["text"], out["kv_tokens_after"]["text"], out["kv_gain"]["text"]
    ('18.2 GB (fp8)', '608,266 tokens (fp8)', '+52%')
    """
    before, after = lesson.kv_capacity(weights=BEFORE), lesson.kv_capacity(weights=weights)
    requests_before = before.kv_cache_tokens_raw // REQUEST_TOKENS
    requests_after = after.kv_cache_tokens_raw // REQUEST_TOKENS
    freed = before.weights_bytes - after.weights_bytes
    labels = [f"{weights} (after)", f"{BEFORE} (before)"]
    stacks = {name: [a / GB, b / GB] for (name, _), a, b in zip(_TERM_COLOURS, _terms(after), _terms(before))}
    figure = bar_chart(
        "One GPU of the replica, GB (10⁹ bytes)", labels, "", stacks, horizontal=True,
        summary=(f"Per GPU: {BEFORE} weights {_gb(before.weights_bytes)} leave {_gb(before.kv_cache_bytes)} of KV cache "
                 f"({before.kv_cache_tokens_raw:,} tokens for the replica); {weights} weights {_gb(after.weights_bytes)} "
                 f"leave {_gb(after.kv_cache_bytes)} ({after.kv_cache_tokens_raw:,} tokens)."),
    )
    for trace, (name, colour) in zip(figure["data"], _TERM_COLOURS):
        trace["marker"]["color"] = colour
        trace["hovertemplate"] = "%{x:.3~r} GB<extra>" + name + "</extra>"
    layout = figure["layout"]
    layout["height"] = 300
    layout["xaxis"] = {"automargin": True, "range": [0, round_sig(before.total_bytes / GB * 1.02, 4)]}
    layout["legend"] = {"orientation": "h", "yanchor": "top", "y": -0.15, "traceorder": "normal"}
    layout["margin"] = {"l": 60, "r": 20, "t": 50, "b": 30}
    rows = [[name, _gb(b), _gb(a), f"{(a - b) / GB:+.2f} GB"]
            for (name, _), b, a in zip(_TERM_COLOURS, _terms(before), _terms(after))]
    rows.append(["KV cache, replica", f"{before.kv_cache_tokens_raw:,} tokens", f"{after.kv_cache_tokens_raw:,} tokens",
                 _pct(after.kv_cache_tokens_raw / before.kv_cache_tokens_raw)])
    return view(
        outputs=[
            output("weights_before", f"Weights per GPU, {BEFORE}", round(before.weights_bytes), "B",
                   text=_gb(before.weights_bytes)),
            # "after" labels name no format: the page rewrites only an output's text, so the format is in it.
            output("weights_after", "Weights per GPU, after", round(after.weights_bytes), "B",
                   text=f"{_gb(after.weights_bytes)} ({weights})"),
            output("freed", "Freed per GPU", round(freed), "B", text=_gb(freed)),
            output("kv_tokens_before", f"KV cache, {BEFORE}", before.kv_cache_tokens_raw, "tokens",
                   text=f"{before.kv_cache_tokens_raw:,} tokens"),
            output("kv_tokens_after", "KV cache, after", after.kv_cache_tokens_raw, "tokens",
                   text=f"{after.kv_cache_tokens_raw:,} tokens ({weights})"),
            output("kv_gain", "More KV cache", after.kv_cache_tokens_raw / before.kv_cache_tokens_raw, "",
                   text=_pct(after.kv_cache_tokens_raw / before.kv_cache_tokens_raw)),
            output("requests_before", f"{REQUEST_TOKENS:,}-token requests at once, {BEFORE}", requests_before,
                   "requests", text=f"{requests_before:,}"),
            output("requests_after", f"{REQUEST_TOKENS:,}-token requests at once, after", requests_after,
                   "requests", text=f"{requests_after:,} ({weights})"),
        ],
        figures={"memory": figure},
        tables={"terms": table(["Per GPU", f"before ({BEFORE})", "after", "Change"], rows,
                               caption=f"Every term, {BEFORE} before and {weights} after")},
    )


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


@widget
def step_before_after(
    weights: Annotated[str, Choice(FORMAT_CHOICES, label="Weights after")] = AFTER,
    batch: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Decode batch")] = 1,
    context_tokens: Annotated[int, IntRange(1, 131_072, 64, "tokens", label="Context per sequence",
                                            help="1,152 = the prompt and half the answer")] = DECODE_CONTEXT_TOKENS,
):
    """One decode step of the running example before (bf16) and after (``weights``): what it reads and how long it takes.

    Step = max(matmul FLOPs, weight bytes) + max(attention FLOPs, KV bytes) +
    all-reduce, each against the achieved roof (:func:`calc.roofline.decode_step`,
    Williams et al., "Roofline", CACM 2009).

    >>> out = step_before_after()["outputs"]
    >>> out["step_before"]["text"], out["step_after"]["text"], out["speedup"]["text"]
    ('15.3 ms', '8.58 ms (fp8)', '1.78x')
    """
    b = decode_step(lesson.coefficients(BEFORE), batch=batch, context_tokens=context_tokens)
    a = decode_step(lesson.coefficients(weights), batch=batch, context_tokens=context_tokens)
    ttft_b = ttft_s(lesson.coefficients(BEFORE), prompt_tokens=PROMPT_TOKENS)
    ttft_a = ttft_s(lesson.coefficients(weights), prompt_tokens=PROMPT_TOKENS)
    parts = (("Weights: read and multiply", "gemm_s"), ("KV cache: attention", "attention_s"),
             ("All-reduce between the 4 GPUs", "comm_s"), ("Fixed step overhead", "overhead_s"))
    stacks = {name: [a[key] * 1000, b[key] * 1000] for name, key in parts if a[key] or b[key]}
    breakdown = bar_chart(
        f"One decode step, batch {batch:,}, ms", [f"{weights} (after)", f"{BEFORE} (before)"], "", stacks,
        horizontal=True,
        summary=(f"Batch {batch:,} at {context_tokens:,} tokens of context: {BEFORE} {_ms(b['time_s'])} "
                 f"({b['bound']}-bound), {weights} {_ms(a['time_s'])} ({a['bound']}-bound)."),
    )
    breakdown["layout"].update(height=260, margin={"l": 60, "r": 20, "t": 50, "b": 30},
                               legend={"orientation": "h", "yanchor": "top", "y": -0.2, "traceorder": "normal"})
    for trace in breakdown["data"]:
        trace["hovertemplate"] = "%{x:.3~r} ms<extra>" + trace["name"] + "</extra>"
    xs = sorted(set(BATCH_POINTS) | {batch})
    series = {f"{BEFORE} (before)": (xs, [lesson.decode_ms(BEFORE, x, context_tokens) for x in xs])}
    if weights != BEFORE:
        series[f"{weights} (after)"] = (xs, [lesson.decode_ms(weights, x, context_tokens) for x in xs])
    curve = line_chart(
        "Decode step time against batch", "sequences in the batch", "ms per step", series, log_x=True,
        summary=(f"At {context_tokens:,} tokens of context the {BEFORE} step grows from {_ms(series[f'{BEFORE} (before)'][1][0] / 1000)} "
                 f"at batch 1 to {_ms(series[f'{BEFORE} (before)'][1][-1] / 1000)} at batch {xs[-1]:,}."),
    )
    curve["data"].append({"type": "scatter", "mode": "markers", "name": f"batch {batch:,}",
                          "x": [batch, batch], "y": [round_sig(b["time_s"] * 1000), round_sig(a["time_s"] * 1000)],
                          "marker": {"color": PALETTE[5], "size": 10, "symbol": "diamond"}})
    curve["layout"]["xaxis"]["dtick"] = 1
    curve["layout"]["yaxis"]["rangemode"] = "tozero"
    speedup = b["time_s"] / a["time_s"]
    read_b, read_a = lesson.coefficients(BEFORE).weight_bytes_read(batch), lesson.coefficients(weights).weight_bytes_read(batch)
    return view(
        outputs=[
            output("step_before", f"Decode step, {BEFORE}", b["time_s"], "s", text=_ms(b["time_s"])),
            output("step_after", "Decode step, after", a["time_s"], "s", text=f"{_ms(a['time_s'])} ({weights})"),
            output("speedup", "Step time, before / after", speedup, "", text=f"{format_number(speedup)}x"),
            output("tokens_per_s_before", f"Output tokens/s, {BEFORE}", batch / b["time_s"], "tokens/s",
                   text=f"{format_number(batch / b['time_s'])} tokens/s"),
            output("tokens_per_s_after", "Output tokens/s, after", batch / a["time_s"], "tokens/s",
                   text=f"{format_number(batch / a['time_s'])} tokens/s ({weights})"),
            output("bound", "Bound by", f"{b['bound']} → {a['bound']}", ""),
            output("weights_read", "Weights read per step, each GPU", round(read_a), "B",
                   text=f"{_gb(read_b)} → {_gb(read_a)}"),
            output("ttft", f"Prefill of a {PROMPT_TOKENS:,}-token prompt", ttft_a, "s",
                   text=f"{_ms(ttft_b)} → {_ms(ttft_a)}"),
        ],
        figures={"breakdown": breakdown, "vs_batch": curve},
    )


@stream(budget_s=4.0)
def twice_the_traffic(
    weights: Annotated[str, Choice(FORMAT_CHOICES, label="Weights")] = AFTER,
    rate_per_s: Annotated[float, FloatRange(0.5, 100, 0.5, "requests/s", label="Arrival rate")] = SIM_RATE_PER_S,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """Step 6's saturated replica replayed with ``weights``: queue, batch, KV cache and latency, live.

    The scenario is the preset ``step06-twice-the-traffic`` (:mod:`calc.sim.presets`) with its
    weight format changed; the simulator prices every step on the roofline.
    """
    yield from simulation_views(_scenario(weights, rate_per_s), frame_interval_s)


def _scenario(weights: str, rate_per_s: float) -> dict:
    data = scenario_for(SIM_PRESET, rate_per_s=rate_per_s)
    data["weights"] = weights
    return data


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ fp8_weights:name }} elsewhere: 4 uses).
def _model():
    return get_model(lesson.REPLICA["model"])


@functools.cache
def _capacity(weights: str) -> KVCapacity:
    return lesson.kv_capacity(weights=weights)


def _weights(weights: str):
    return weight_bytes(_model(), weights)


@functools.cache
def _decode_one(weights: str) -> dict:
    return decode_step(lesson.coefficients(weights), batch=1, context_tokens=DECODE_CONTEXT_TOKENS)


def _sim(weights: str) -> dict:
    return preset_summary(SIM_PRESET, weights=weights)


def _saturated_batch() -> int:
    """Step 6's saturated batch: vLLM's cap on running sequences."""
    return _sim(BEFORE)["running_max"]


def _requests(weights: str) -> int:
    return contiguous_max_concurrency(_capacity(weights).kv_cache_tokens_raw, REQUEST_TOKENS)


def _ms(seconds: float, digits: int = 3) -> str:
    return f"{format_number(seconds * 1000, digits)} ms"


def _mb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / 1e6)} MB"


@fact("model")
def _model_name():
    return _model().name


@fact("gpu")
def _gpu_name():
    return get_gpu(lesson.REPLICA["gpu"]).name


@fact("tp")
def _tp():
    return str(lesson.REPLICA["tp"])


@fact
def params_exact():
    return f"{_model().total_params:,}"


@fact
def weights_before():
    """>>> weights_before(), weights_after(), kv_tokens_before(), kv_tokens_after(), step_after()
    ('35.3 GB', '18.2 GB', '399,169', '608,266', '8.58 ms')
    """
    return _gb(_capacity(BEFORE).weights_bytes)


@fact
def weights_after():
    return _gb(_capacity(AFTER).weights_bytes)


@fact
def weights_total_before():
    return _gb(_weights(BEFORE).total_bytes)


@fact
def weights_total_after():
    return _gb(_weights(AFTER).total_bytes)


@fact
def fp8_payload():
    return _gb(_weights(AFTER).payload_bytes)


@fact
def fp8_scales():
    return _mb(_weights(AFTER).scale_bytes)


@fact
def fp8_unquantized():
    return _gb(_weights(AFTER).unquantized_bytes)


@fact
def effective_bits_after():
    return format_number(bits_per_weight(_weights(AFTER).total_bytes, _model().total_params))


@fact
def weights_read_before():
    return _gb(lesson.coefficients(BEFORE).weight_bytes_read(1))


@fact
def freed_per_gpu():
    return _gb(freed_bytes(_capacity(BEFORE).weights_bytes, _capacity(AFTER).weights_bytes))


@fact
def kv_per_gpu_before():
    return _gb(_capacity(BEFORE).kv_cache_bytes)


@fact
def kv_per_gpu_after():
    return _gb(_capacity(AFTER).kv_cache_bytes)


@fact
def kv_tokens_before():
    return f"{_capacity(BEFORE).kv_cache_tokens_raw:,}"


@fact
def kv_tokens_after():
    return f"{_capacity(AFTER).kv_cache_tokens_raw:,}"


@fact
def kv_gain_pct():
    return _pct(ratio(_capacity(AFTER).kv_cache_tokens_raw, _capacity(BEFORE).kv_cache_tokens_raw))


@fact
def kv_per_token_gpu():
    return f"{_capacity(BEFORE).kv_bytes_per_token_per_gpu:,} bytes"


@fact
def request_tokens():
    return f"{REQUEST_TOKENS:,}"


@fact
def decode_context():
    return f"{DECODE_CONTEXT_TOKENS:,}"


@fact
def requests_before():
    return f"{_requests(BEFORE):,}"


@fact
def requests_after():
    return f"{_requests(AFTER):,}"


@fact
def step_before():
    return f"{format_number(lesson.decode_ms(BEFORE))} ms"


@fact
def step_after():
    return f"{format_number(lesson.decode_ms(AFTER))} ms"


@fact
def step_ratio():
    return f"{format_number(ratio(lesson.decode_ms(BEFORE), lesson.decode_ms(AFTER)))}x"


@fact
def step_share():
    return percent_text(ratio(lesson.decode_ms(AFTER), lesson.decode_ms(BEFORE)), 2)


@fact
def weights_s_before():
    return _ms(_decode_one(BEFORE)["weights_s"])


@fact
def weights_s_after():
    return _ms(_decode_one(AFTER)["weights_s"])


@fact
def comm_ms():
    return _ms(_decode_one(BEFORE)["comm_s"])


@fact
def kv_ms():
    return _ms(_decode_one(BEFORE)["kv_s"], 2)


@fact
def sat_batch():
    return f"{_saturated_batch():,}"


@fact
def step_sat_before():
    return f"{format_number(lesson.decode_ms(BEFORE, _saturated_batch()))} ms"


@fact
def sat_bound_before():
    step = decode_step(lesson.coefficients(BEFORE), batch=_saturated_batch(), context_tokens=DECODE_CONTEXT_TOKENS)
    return f"{step['bound']}-bound"


@fact
def step_sat_after():
    return f"{format_number(lesson.decode_ms(AFTER, _saturated_batch()))} ms"


@fact
def ttft_before():
    return _ms(ttft_s(lesson.coefficients(BEFORE), prompt_tokens=PROMPT_TOKENS))


@fact
def ttft_after():
    return _ms(ttft_s(lesson.coefficients(AFTER), prompt_tokens=PROMPT_TOKENS))


@fact
def sim_rate():
    return format_number(SIM_RATE_PER_S)


@fact
def sim_ttft_p99_before():
    return f"{format_number(_sim(BEFORE)['ttft_p99_s'])} s"


@fact
def sim_ttft_p99_after():
    return f"{format_number(_sim(AFTER)['ttft_p99_s'])} s"


@fact
def sim_queue_max_before():
    return f"{_sim(BEFORE)['queue_depth_max']:,}"


@fact
def sim_queue_max_after():
    return f"{_sim(AFTER)['queue_depth_max']:,}"


@fact
def sim_tokens_per_s_before():
    return f"{format_number(_sim(BEFORE)['throughput_output_tokens_per_s'])}"


@fact
def sim_tokens_per_s_after():
    return f"{format_number(_sim(AFTER)['throughput_output_tokens_per_s'])}"


@fact
def sim_kv_peak_after():
    return percent_text(_sim(AFTER)["kv_use_peak"], 2)


@fact
def sim_cost_before():
    return f"${_sim(BEFORE)['cost_usd_per_million_output_tokens']:,.2f}"


@fact
def sim_cost_after():
    return f"${_sim(AFTER)['cost_usd_per_million_output_tokens']:,.2f}"


facts = facts_of(__name__)
