"""Widgets and facts of step 6, "Twice the traffic" (docs/lesson/06-twice-the-traffic.md).

At saturation every decode step of the replica reads all of its weights once,
reads the whole batch's KV cache, and carries the prefill work scheduled into it
(chunked prefill). Per GPU, with achieved bandwidth ``beta`` and FLOP/s ``F``:

    step time ~ max(weights / beta, 2 N B / F)          (the matmuls)
              + max(batch KV bytes / beta, attention FLOPs / F)
              + prefill work + tensor-parallel all-reduces

The roofline (Williams et al., CACM 2009) says which roof binds: a kernel of
arithmetic intensity ``I`` FLOP/byte reaches ``min(F, I x beta)``; below the
ridge point ``F / beta`` it is memory-bound. Every time here comes from
:mod:`calc.roofline` (:func:`~calc.roofline.decode_step`,
:func:`~calc.roofline.prefill_chunk`, :func:`~calc.roofline.steady_state_step`).

>>> out = step_cost()["outputs"]
>>> out["step_ms"]["text"], out["prefill_tokens"]["text"]
('111 ms', '1,024 tokens')
>>> roofline()["outputs"]["ridge"]["text"]
'295 FLOP/B'
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.catalog import GPUS, get_gpu, get_model
from calc.lesson import ANSWER_TOKENS, DECODE_CONTEXT_TOKENS, PROMPT_TOKENS
from calc.lesson import replica_coefficients
from calc.roofline import CALIBRATED, decode_step, prefill_chunk
from calc.roofline import cost_split
from calc.engine_profiles import engine_coefficients
from calc.sim import presets
from calc.sim.fleet import simulate_fleet
from calc.sim_views import FIX_PRESET, preset_summary, scenario_for
from calc.saturation import batch_kv, batching_gain, roofline_points, steady_mix, traffic_demand
from calc.units import GB, format_number
from calc.widgets.charts import PALETTE, bar_chart, roofline_chart
from calc.widgets.controls import Gpu
from calc.widgets.framework import Choice, IntRange, fact, facts_of, output, view, widget
from calc.widgets.views import percent_text, share_text

__all__ = ["roofline", "step_cost", "cost_split", "replica_coefficients", "facts", "SATURATION_PRESET",
           "MAX_NUM_SEQS"]

#: This step's saturated replica: step 5's paged one (:data:`calc.sim_views.FIX_PRESET`) at twice the traffic.
SATURATION_PRESET = "step06-twice-the-traffic"
#: Values the page's "Try this" asks the reader to enter.
TRY_CONTEXT_TOKENS, TRY_CONTEXT_BATCH = 32_768, 8
TRY_MAX_NUM_SEQS = 64
#: vLLM's default cap on running requests (``max_num_seqs``), the batch the replica saturates at.
MAX_NUM_SEQS = 256
FORMATS = (("bf16", "bf16 (the running example)"), ("fp8", "fp8 (step 7)"))
BATCH_POINTS = (1, 16, 64, 128, 256)
_COLOURS = {"weights": PALETTE[0], "kv": PALETTE[2], "prefill": PALETTE[1], "comm": "#9e9e9e"}


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _kernels(coef, d: dict) -> dict:
    """The two kernels of a step as roofline points: (intensity, achieved FLOP/s) each."""
    linear_flops = d["new_tokens"] * coef.linear_flops_per_token
    attention_flops = d["attention_token_pairs"] * coef.attention_flops_per_pair
    weight_bytes = coef.weight_bytes_read(d["new_tokens"])
    kv_bytes = (d["kv_tokens_read"] + d["new_tokens"]) * coef.kv_bytes_per_token
    return {
        "matmuls": (linear_flops / weight_bytes, linear_flops / d["gemm_s"]),
        "attention": (attention_flops / kv_bytes, attention_flops / d["attention_s"]),
    }


@widget
def roofline(
    gpu: Gpu = lesson.REPLICA["gpu"],
    weights: Annotated[str, Choice(FORMATS, label="Weights")] = lesson.REPLICA["weights"],
    batch: Annotated[int, IntRange(1, 4_096, 1, "sequences", label="Decode batch")] = MAX_NUM_SEQS,
    context_tokens: Annotated[int, IntRange(1, 131_072, 128, "tokens", label="Context per sequence",
                                            help="prompt + answer so far")] = DECODE_CONTEXT_TOKENS,
    chunk_tokens: Annotated[int, IntRange(1, 32_768, 256, "tokens", label="Prefill chunk")] = PROMPT_TOKENS,
):
    """The replica's decode step and a prefill chunk on the GPU's roofline (per GPU, 70B at TP 4).

    Intensity = FLOPs / HBM bytes of the step (:func:`calc.roofline.decode_step`,
    :func:`calc.roofline.prefill_chunk`); achieved FLOP/s = FLOPs / step time with
    calc's calibrated efficiencies (:data:`calc.roofline.CALIBRATED`). The ridge
    point is peak FLOP/s / peak bandwidth. Source: Williams et al., CACM 2009.

    >>> out = roofline(batch=1)["outputs"]
    >>> out["decode_intensity"]["text"], out["prefill_intensity"]["text"]
    ('1.02 FLOP/B', '1,029 FLOP/B')
    """
    coef = replica_coefficients(gpu, weights)
    card = get_gpu(gpu)
    peak = coef.linear_flops_per_s
    bandwidth = coef.hbm_bytes_per_s
    ridge = peak / bandwidth
    decode = decode_step(coef, batch=batch, context_tokens=context_tokens)
    prefill = prefill_chunk(coef, chunk_tokens=chunk_tokens)
    kernels = _kernels(coef, decode)
    eff = coef.efficiency
    achieved_ridge = peak * eff.compute / (bandwidth * eff.memory)
    points = [
        {"name": f"decode step, batch {batch:,}", "x": decode["intensity_flops_per_byte"],
         "y": decode["flops"] / decode["time_s"], "symbol": "circle"},
        {"name": "its matmuls (weights)", "x": kernels["matmuls"][0], "y": kernels["matmuls"][1],
         "symbol": "circle-open"},
        {"name": "its attention (KV cache)", "x": kernels["attention"][0], "y": kernels["attention"][1],
         "symbol": "square-open"},
        {"name": f"prefill chunk of {chunk_tokens:,}", "x": prefill["intensity_flops_per_byte"],
         "y": prefill["flops"] / prefill["time_s"], "symbol": "diamond"},
    ]
    side = "below" if decode["intensity_flops_per_byte"] < ridge else "above"
    summary = (f"{card.name}, {coef.compute_dtype}: roof {format_number(peak / 1e12)} TFLOP/s, "
               f"{format_number(bandwidth / 1e12)} TB/s, ridge {format_number(ridge)} FLOP/B. Decode step at batch "
               f"{batch:,}: {format_number(decode['intensity_flops_per_byte'])} FLOP/B ({side} the ridge), "
               f"{format_number(decode['flops'] / decode['time_s'] / 1e12)} TFLOP/s achieved. Prefill chunk of "
               f"{chunk_tokens:,}: {format_number(prefill['intensity_flops_per_byte'])} FLOP/B, "
               f"{format_number(prefill['flops'] / prefill['time_s'] / 1e12)} TFLOP/s.")
    figure = roofline_chart(f"Roofline of one {card.name} ({coef.compute_dtype})", peak, bandwidth, points,
                            achieved=(eff.compute, eff.memory), summary=summary)
    return view(
        outputs=[
            output("ridge", "Ridge point (datasheet)", ridge, "FLOP/B", text=f"{format_number(ridge)} FLOP/B"),
            output("achieved_ridge", "Ridge at achieved efficiency", achieved_ridge, "FLOP/B",
                   text=f"{format_number(achieved_ridge)} FLOP/B"),
            output("decode_intensity", "Decode step intensity", decode["intensity_flops_per_byte"], "FLOP/B",
                   text=f"{format_number(decode['intensity_flops_per_byte'])} FLOP/B"),
            output("matmul_intensity", "... its matmuls", kernels["matmuls"][0], "FLOP/B",
                   text=f"{format_number(kernels['matmuls'][0])} FLOP/B"),
            output("attention_intensity", "... its attention", kernels["attention"][0], "FLOP/B",
                   text=f"{format_number(kernels['attention'][0])} FLOP/B"),
            output("decode_ms", "Decode step time", decode["time_s"] * 1000, "ms", text=_ms(decode["time_s"])),
            output("prefill_intensity", "Prefill chunk intensity", prefill["intensity_flops_per_byte"], "FLOP/B",
                   text=f"{format_number(prefill['intensity_flops_per_byte'])} FLOP/B"),
            output("prefill_ms", "Prefill chunk time", prefill["time_s"] * 1000, "ms",
                   text=f"{_ms(prefill['time_s'])} ({prefill['bound']}-bound)"),
        ],
        figures={"roofline": figure},
    )


@widget
def step_cost(
    batch: Annotated[int, IntRange(1, 4_096, 1, "sequences", label="Running batch")] = MAX_NUM_SEQS,
    prompt_tokens: Annotated[int, IntRange(1, 131_072, 1, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, 131_072, 1, "tokens", label="Answer")] = ANSWER_TOKENS,
    weights: Annotated[str, Choice(FORMATS, label="Weights")] = lesson.REPLICA["weights"],
    kv_dtype: Annotated[str, Choice((("bf16", "bf16"), ("fp8", "fp8")), label="KV cache")] = lesson.REPLICA["kv_dtype"],
):
    """What one decode step of the saturated replica costs: weights + the batch's KV + prefill work.

    Steady state of a replica kept full (:func:`cost_split`, :func:`calc.roofline.steady_state_step`):
    ``batch`` sequences decode, and as ``batch / answer`` of them finish per step, as many new
    prompts are prefilled in the same steps. Source: :mod:`calc.roofline` (calibrated efficiencies).

    >>> out = step_cost(batch=1)["outputs"]
    >>> out["step_ms"]["text"], out["tokens_per_s"]["text"]
    ('15.3 ms', '65.2 tokens/s')
    """
    coef = replica_coefficients(weights=weights, kv_dtype=kv_dtype)
    split = cost_split(coef, batch=batch, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)
    step = split["step"]
    prefill_tokens = batch * prompt_tokens / answer_tokens
    names = {"weights": "weights (read, or their matmuls)", "kv": "the batch's KV cache (read)",
             "prefill": "prefill work in the step", "comm": "all-reduce + overhead"}
    points = sorted(set(BATCH_POINTS) | {batch})
    splits = [cost_split(coef, batch=b, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens) for b in points]
    figure = bar_chart(
        "A decode step at saturation",
        [f"{b:,}" for b in points], "milliseconds per step",
        {names[k]: [s[k] * 1000 for s in splits] for k in names},
        summary=f"{weights} weights, {kv_dtype} KV cache. Step time by batch: " + "; ".join(
            f"batch {b:,}: {_ms(s['step'])} (weights {_ms(s['weights'])}, KV {_ms(s['kv'])}, prefill "
            f"{_ms(s['prefill'])}, all-reduce {_ms(s['comm'])})" for b, s in zip(points, splits)) + ".",
    )
    for trace, key in zip(figure["data"], names):
        trace["marker"]["color"] = _COLOURS[key]
        trace["hovertemplate"] = "%{y:.3~r} ms<extra>" + trace["name"] + "</extra>"
    figure["layout"]["legend"] = {"orientation": "h", "yanchor": "top", "y": -0.38, "x": 0, "traceorder": "normal"}
    figure["layout"]["height"] = 400
    figure["layout"]["xaxis"]["title"] = {"text": "running batch (sequences)"}
    figure["layout"]["xaxis"]["type"] = "category"
    return view(
        outputs=[
            output("step_ms", "Step time (the ITL)", step * 1000, "ms", text=_ms(step)),
            output("weights_ms", "Weights", split["weights"] * 1000, "ms", text=_ms(split["weights"])),
            output("kv_ms", "The batch's KV cache", split["kv"] * 1000, "ms", text=_ms(split["kv"])),
            output("prefill_ms", "Prefill work", split["prefill"] * 1000, "ms", text=_ms(split["prefill"])),
            output("comm_ms", "All-reduce + overhead", split["comm"] * 1000, "ms", text=_ms(split["comm"])),
            output("prefill_tokens", "Prefill tokens per step (average)", prefill_tokens, "tokens",
                   text=f"{format_number(prefill_tokens)} tokens"),
            output("tokens_per_s", "Output tokens/s (replica)", batch / step, "tokens/s",
                   text=f"{format_number(batch / step)} tokens/s"),
            output("per_request_tokens_per_s", "Tokens/s each request sees", 1 / step, "tokens/s",
                   text=f"{format_number(1 / step)} tokens/s"),
        ],
        figures={"split": figure},
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ twice_the_traffic:name }} elsewhere: 10 uses); the steps and
# runs they share are cached here and in calc.sim_views.preset_summary.
@functools.cache
def _coef():
    return replica_coefficients()


@functools.cache
def _points() -> dict:
    return roofline_points(_coef(), CALIBRATED)


@functools.cache
def _decode(batch: int, context_tokens: int = DECODE_CONTEXT_TOKENS) -> dict:
    return decode_step(_coef(), batch=batch, context_tokens=context_tokens)


@functools.cache
def _split(weights: str = "bf16") -> dict:
    return cost_split(replica_coefficients(weights=weights), batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS,
                      answer_tokens=ANSWER_TOKENS)


@functools.cache
def _engine_coef():
    # The simulated replica runs the default engine (vLLM): the same step plus its fixed and per-sequence costs
    # (calc.engine_profiles). The lesson's formula leaves them out; the simulation note sets the two side by side.
    return engine_coefficients(lesson.MODEL, lesson.GPU, tp=lesson.TP, weights=lesson.WEIGHTS, kv_dtype=lesson.KV_DTYPE)


@functools.cache
def _engine_split() -> dict:
    return cost_split(_engine_coef(), batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS, answer_tokens=ANSWER_TOKENS)


def _mix(step_s: float) -> dict:
    return steady_mix(batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS, answer_tokens=ANSWER_TOKENS, step_s=step_s)


def _kv() -> dict:
    return batch_kv(_coef(), batch=MAX_NUM_SEQS, context_tokens=DECODE_CONTEXT_TOKENS)


def _sat() -> dict:
    return preset_summary(SATURATION_PRESET)


def _calm() -> dict:
    return preset_summary(FIX_PRESET)


def _rate() -> float:
    return presets.load_data(SATURATION_PRESET)["workload"]["rate_per_s"]


def _demand() -> dict:
    return traffic_demand(rate_per_s=_rate(), answer_tokens=ANSWER_TOKENS,
                          served_requests_per_s=_sat()["throughput_requests_per_s"])


@functools.cache
def _capped() -> dict:
    return simulate_fleet(scenario_for(SATURATION_PRESET, max_num_seqs=TRY_MAX_NUM_SEQS)).summary


def _tera(value: float) -> str:
    return format_number(value / 1e12)


def _gb(n_bytes: float) -> str:
    return format_number(n_bytes / GB)


def _mb(n_bytes: float) -> str:
    return format_number(n_bytes / 1e6)


def _us(seconds: float) -> str:
    return format_number(seconds * 1e6)


def _tokens_per_s(value: float) -> str:
    return f"{format_number(value)} tokens/s"


@fact("model")
def _model_name():
    return get_model(lesson.REPLICA["model"]).name


@fact("gpu")
def _gpu_name():
    return get_gpu(lesson.REPLICA["gpu"]).name


@fact("tp")
def _tp():
    return str(lesson.REPLICA["tp"])


@fact
def peak_tflops():
    return _tera(_coef().linear_flops_per_s)


@fact
def peak_tbps():
    return _tera(_coef().hbm_bytes_per_s)


@fact
def ridge():
    """The running example's ridge point, FLOPs per byte (peak FLOP/s over peak bandwidth).

    >>> ridge(), achieved_ridge()
    ('295', '198')
    """
    return format_number(_points()["ridge_flops_per_byte"])


@fact
def compute_eff():
    return percent_text(CALIBRATED.compute)


@fact
def memory_eff():
    return percent_text(CALIBRATED.memory)


@fact
def achieved_tbps():
    return _tera(_points()["achieved_bytes_per_s"])


@fact
def achieved_ridge():
    return format_number(_points()["achieved_ridge_flops_per_byte"])


@fact
def weights_read_gb():
    return f"{_gb(_points()['weights_read_bytes'])} GB"


@fact
def weights_floor_ms():
    """>>> weights_floor_ms()
    '13.6 ms'
    """
    return _ms(_points()["weights_floor_s"])


@fact
def max_tokens_per_s_per_request():
    return format_number(_points()["max_tokens_per_s_per_request"])


@fact
def decode_context():
    return f"{DECODE_CONTEXT_TOKENS:,}"


@fact
def kv_per_seq_mb():
    return f"{_mb(_kv()['per_sequence_bytes'])} MB"


@fact
def kv_per_token_gpu():
    return f"{_coef().kv_bytes_per_token:,.0f} bytes"


@fact
def batch():
    return f"{MAX_NUM_SEQS:,}"


@fact
def batch_kv_gb():
    return f"{_gb(_kv()['batch_bytes'])} GB"


@fact
def decode1_intensity():
    return format_number(_decode(1)["intensity_flops_per_byte"])


@fact
def decode1_ms():
    return _ms(_decode(1)["time_s"])


@fact
def decode_full_intensity():
    return format_number(_decode(MAX_NUM_SEQS)["intensity_flops_per_byte"])


@fact
def decode_full_ms():
    return _ms(_decode(MAX_NUM_SEQS)["time_s"])


@fact
def decode_full_bound():
    """calc's roofline names the step's bound from its calibrated terms (the matmuls at achieved FLOP/s against
    the weights' read), not from the whole step's average intensity against the peak ridge."""
    return f"{_decode(MAX_NUM_SEQS)['bound']}-bound"


@fact
def matmul_vs_achieved_ridge():
    matmuls = _kernels(_coef(), _decode(MAX_NUM_SEQS))["matmuls"][0]
    return "above" if matmuls > _points()["achieved_ridge_flops_per_byte"] else "below"


@fact
def decode_full_gain():
    return format_number(batching_gain(_decode(1)["time_s"], _decode(MAX_NUM_SEQS)["time_s"], MAX_NUM_SEQS))


@fact
def matmul_intensity():
    return format_number(_kernels(_coef(), _decode(MAX_NUM_SEQS))["matmuls"][0])


@fact
def attention_intensity():
    return format_number(_kernels(_coef(), _decode(MAX_NUM_SEQS))["attention"][0])


@fact
def prefill_intensity():
    return format_number(prefill_chunk(_coef(), chunk_tokens=PROMPT_TOKENS)["intensity_flops_per_byte"])


@fact
def prefill_ms():
    return _ms(prefill_chunk(_coef(), chunk_tokens=PROMPT_TOKENS)["time_s"])


@fact
def prompt_tokens():
    return f"{PROMPT_TOKENS:,}"


@fact
def answer_tokens():
    return f"{ANSWER_TOKENS:,}"


@fact
def prefill_per_step():
    return f"{format_number(_mix(_split()['step'])['prefill_tokens_per_step'])}"


@fact
def finishing_per_step():
    return format_number(_mix(_split()["step"])["finishing_per_step"])


@fact
def prompt_over_answer():
    return format_number(_mix(_split()["step"])["prompt_over_answer"])


@fact
def split_weights():
    return _ms(_split()["weights"])


@fact
def split_kv():
    return _ms(_split()["kv"])


@fact
def split_prefill():
    return _ms(_split()["prefill"])


@fact
def split_comm():
    return _ms(_split()["comm"])


@fact
def split_step():
    return _ms(_split()["step"])


@fact
def fp8_step():
    return _ms(_split("fp8")["step"])


@fact
def fp8_weights():
    return _ms(_split("fp8")["weights"])


@fact
def steady_tokens_per_s():
    return _tokens_per_s(_mix(_split()["step"])["tokens_per_s"])


@fact
def engine_overhead_ms():
    return _ms(_engine_coef().overhead_s(MAX_NUM_SEQS))


@fact
def engine_seq_overhead_us():
    return _us(_engine_coef().efficiency.seq_overhead_s)


@fact
def engine_split_step():
    return _ms(_engine_split()["step"])


@fact
def engine_tokens_per_s():
    return _tokens_per_s(_mix(_engine_split()["step"])["tokens_per_s"])


@fact
def rate():
    return format_number(_rate())


@fact
def calm_rate():
    return format_number(presets.load_data(FIX_PRESET)["workload"]["rate_per_s"])


@fact
def needed_tokens_per_s():
    return _tokens_per_s(_demand()["needed_tokens_per_s"])


@fact
def sim_requests():
    return f"{_sat()['requests_total']:,}"


@fact
def sim_running_max():
    """>>> sim_running_max()
    '256'
    """
    return f"{_sat()['running_max']:,}"


@fact
def sim_queue_max():
    return f"{_sat()['queue_depth_max']:,}"


@fact
def sim_ttft_p50():
    return f"{format_number(_sat()['ttft_p50_s'])} s"


@fact
def sim_ttft_p99():
    return f"{format_number(_sat()['ttft_p99_s'])} s"


@fact
def sim_itl_mean():
    return _ms(_sat()["itl_mean_s"])


@fact
def sim_itl_p50():
    return _ms(_sat()["itl_p50_s"])


@fact
def sim_itl_p99():
    return _ms(_sat()["itl_p99_s"])


@fact
def sim_throughput():
    return _tokens_per_s(_sat()["throughput_output_tokens_per_s"])


@fact
def sim_requests_per_s():
    return format_number(_sat()["throughput_requests_per_s"])


@fact
def sim_kv_use_peak():
    return percent_text(_sat()["kv_use_peak"])


@fact
def sim_compute_util():
    return share_text(_sat()["compute_utilization"])


@fact
def sim_gpu_util():
    return share_text(_sat()["gpu_util_reported"])


@fact
def calm_itl_mean():
    return _ms(_calm()["itl_mean_s"])


@fact
def calm_ttft_p99():
    return f"{format_number(_calm()['ttft_p99_s'])} s"


@fact
def calm_throughput():
    return _tokens_per_s(_calm()["throughput_output_tokens_per_s"])


@fact
def overflow_per_s():
    return format_number(_demand()["overflow_per_s"])


@fact
def try_context():
    return str(TRY_CONTEXT_TOKENS)


@fact
def try_context_batch():
    return str(TRY_CONTEXT_BATCH)


@fact
def try_context_tokens():
    return f"{batch_kv(_coef(), batch=TRY_CONTEXT_BATCH, context_tokens=TRY_CONTEXT_TOKENS)['batch_tokens']:,}"


@fact
def try_context_intensity():
    return format_number(_decode(TRY_CONTEXT_BATCH, TRY_CONTEXT_TOKENS)["intensity_flops_per_byte"])


@fact
def try_context_ms():
    return _ms(_decode(TRY_CONTEXT_BATCH, TRY_CONTEXT_TOKENS)["time_s"])


@fact
def try_max_num_seqs():
    return str(TRY_MAX_NUM_SEQS)


@fact
def capped_queue_max():
    return f"{_capped()['queue_depth_max']:,}"


@fact
def capped_itl_mean():
    return _ms(_capped()["itl_mean_s"])


@fact
def capped_throughput():
    return _tokens_per_s(_capped()["throughput_output_tokens_per_s"])


facts = facts_of(__name__)
