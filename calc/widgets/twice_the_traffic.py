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
from calc.units import GB, format_number
from calc.widgets.charts import PALETTE, bar_chart, roofline_chart
from calc.widgets.controls import Gpu
from calc.widgets.framework import Choice, IntRange, output, view, widget

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


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, computed from calc and the step-06 simulator run.

    >>> f = facts()
    >>> f["ridge"], f["weights_floor_ms"], f["sim_running_max"]
    ('295', '13.6 ms', '256')
    """
    coef = replica_coefficients()
    gpu = get_gpu(lesson.REPLICA["gpu"])
    eff = CALIBRATED
    ridge = coef.linear_flops_per_s / coef.hbm_bytes_per_s
    achieved_bw = coef.hbm_bytes_per_s * eff.memory
    weights_s = coef.weight_bytes_read(1) / achieved_bw
    one = decode_step(coef, batch=1, context_tokens=DECODE_CONTEXT_TOKENS)
    full = decode_step(coef, batch=MAX_NUM_SEQS, context_tokens=DECODE_CONTEXT_TOKENS)
    prefill = prefill_chunk(coef, chunk_tokens=PROMPT_TOKENS)
    kernels = _kernels(coef, full)
    split = cost_split(coef, batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS, answer_tokens=ANSWER_TOKENS)
    fp8 = cost_split(replica_coefficients(weights="fp8"), batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS,
                     answer_tokens=ANSWER_TOKENS)
    kv_per_seq = DECODE_CONTEXT_TOKENS * coef.kv_bytes_per_token
    sat, calm = preset_summary(SATURATION_PRESET), preset_summary(FIX_PRESET)
    rate = presets.load_data(SATURATION_PRESET)["workload"]["rate_per_s"]
    calm_rate = presets.load_data(FIX_PRESET)["workload"]["rate_per_s"]
    needed = rate * ANSWER_TOKENS
    steady_tokens_per_s = MAX_NUM_SEQS / split["step"]
    # The simulated replica runs the default engine (vLLM): the same step plus its fixed and per-sequence costs
    # (calc.engine_profiles). The lesson's formula leaves them out; the simulation note sets the two side by side.
    engine_coef = engine_coefficients(lesson.MODEL, lesson.GPU, tp=lesson.TP, weights=lesson.WEIGHTS,
                                      kv_dtype=lesson.KV_DTYPE)
    engine_split = cost_split(engine_coef, batch=MAX_NUM_SEQS, prompt_tokens=PROMPT_TOKENS, answer_tokens=ANSWER_TOKENS)
    engine_tokens_per_s = MAX_NUM_SEQS / engine_split["step"]
    model = get_model(lesson.REPLICA["model"])
    long = decode_step(coef, batch=TRY_CONTEXT_BATCH, context_tokens=TRY_CONTEXT_TOKENS)
    capped = simulate_fleet(scenario_for(SATURATION_PRESET, max_num_seqs=TRY_MAX_NUM_SEQS)).summary
    return {
        "model": model.name,
        "gpu": gpu.name,
        "tp": str(lesson.REPLICA["tp"]),
        "peak_tflops": format_number(coef.linear_flops_per_s / 1e12),
        "peak_tbps": format_number(coef.hbm_bytes_per_s / 1e12),
        "ridge": format_number(ridge),
        "compute_eff": f"{format_number(eff.compute * 100)}%",
        "memory_eff": f"{format_number(eff.memory * 100)}%",
        "achieved_tbps": format_number(achieved_bw / 1e12),
        "achieved_ridge": format_number(coef.linear_flops_per_s * eff.compute / achieved_bw),
        "weights_read_gb": f"{format_number(coef.weight_bytes_read(1) / GB)} GB",
        "weights_floor_ms": _ms(weights_s),
        "max_tokens_per_s_per_request": format_number(1 / weights_s),
        "decode_context": f"{DECODE_CONTEXT_TOKENS:,}",
        "kv_per_seq_mb": f"{format_number(kv_per_seq / 1e6)} MB",
        "kv_per_token_gpu": f"{coef.kv_bytes_per_token:,.0f} bytes",
        "batch": f"{MAX_NUM_SEQS:,}",
        "batch_kv_gb": f"{format_number(kv_per_seq * MAX_NUM_SEQS / GB)} GB",
        "decode1_intensity": format_number(one["intensity_flops_per_byte"]),
        "decode1_ms": _ms(one["time_s"]),
        "decode_full_intensity": format_number(full["intensity_flops_per_byte"]),
        "decode_full_ms": _ms(full["time_s"]),
        # calc's roofline names the step's bound from its calibrated terms (the matmuls at achieved FLOP/s
        # against the weights' read), not from the whole step's average intensity against the peak ridge.
        "decode_full_bound": f"{full['bound']}-bound",
        "matmul_vs_achieved_ridge": ("above" if kernels["matmuls"][0] > coef.linear_flops_per_s * eff.compute
                                     / achieved_bw else "below"),
        "decode_full_gain": format_number((MAX_NUM_SEQS / full["time_s"]) / (1 / one["time_s"])),
        "matmul_intensity": format_number(kernels["matmuls"][0]),
        "attention_intensity": format_number(kernels["attention"][0]),
        "prefill_intensity": format_number(prefill["intensity_flops_per_byte"]),
        "prefill_ms": _ms(prefill["time_s"]),
        "prompt_tokens": f"{PROMPT_TOKENS:,}",
        "answer_tokens": f"{ANSWER_TOKENS:,}",
        "prefill_per_step": f"{format_number(MAX_NUM_SEQS * PROMPT_TOKENS / ANSWER_TOKENS)}",
        "finishing_per_step": format_number(MAX_NUM_SEQS / ANSWER_TOKENS),
        "prompt_over_answer": format_number(PROMPT_TOKENS / ANSWER_TOKENS),
        "split_weights": _ms(split["weights"]),
        "split_kv": _ms(split["kv"]),
        "split_prefill": _ms(split["prefill"]),
        "split_comm": _ms(split["comm"]),
        "split_step": _ms(split["step"]),
        "fp8_step": _ms(fp8["step"]),
        "fp8_weights": _ms(fp8["weights"]),
        "steady_tokens_per_s": f"{format_number(steady_tokens_per_s)} tokens/s",
        "engine_overhead_ms": _ms(engine_coef.overhead_s(MAX_NUM_SEQS)),
        "engine_seq_overhead_us": format_number(engine_coef.efficiency.seq_overhead_s * 1e6),
        "engine_split_step": _ms(engine_split["step"]),
        "engine_tokens_per_s": f"{format_number(engine_tokens_per_s)} tokens/s",
        "rate": format_number(rate),
        "calm_rate": format_number(calm_rate),
        "needed_tokens_per_s": f"{format_number(needed)} tokens/s",
        "sim_requests": f"{sat['requests_total']:,}",
        "sim_running_max": f"{sat['running_max']:,}",
        "sim_queue_max": f"{sat['queue_depth_max']:,}",
        "sim_ttft_p50": f"{format_number(sat['ttft_p50_s'])} s",
        "sim_ttft_p99": f"{format_number(sat['ttft_p99_s'])} s",
        "sim_itl_mean": _ms(sat["itl_mean_s"]),
        "sim_itl_p50": _ms(sat["itl_p50_s"]),
        "sim_itl_p99": _ms(sat["itl_p99_s"]),
        "sim_throughput": f"{format_number(sat['throughput_output_tokens_per_s'])} tokens/s",
        "sim_requests_per_s": format_number(sat["throughput_requests_per_s"]),
        "sim_kv_use_peak": f"{format_number(sat['kv_use_peak'] * 100)}%",
        "sim_compute_util": f"{sat['compute_utilization'] * 100:.0f}%",
        "sim_gpu_util": f"{sat['gpu_util_reported'] * 100:.0f}%",
        "calm_itl_mean": _ms(calm["itl_mean_s"]),
        "calm_ttft_p99": f"{format_number(calm['ttft_p99_s'])} s",
        "calm_throughput": f"{format_number(calm['throughput_output_tokens_per_s'])} tokens/s",
        "overflow_per_s": format_number(rate - sat["throughput_requests_per_s"]),
        "try_context": str(TRY_CONTEXT_TOKENS),
        "try_context_batch": str(TRY_CONTEXT_BATCH),
        "try_context_tokens": f"{TRY_CONTEXT_TOKENS * TRY_CONTEXT_BATCH:,}",
        "try_context_intensity": format_number(long["intensity_flops_per_byte"]),
        "try_context_ms": _ms(long["time_s"]),
        "try_max_num_seqs": str(TRY_MAX_NUM_SEQS),
        "capped_queue_max": f"{capped['queue_depth_max']:,}",
        "capped_itl_mean": _ms(capped["itl_mean_s"]),
        "capped_throughput": f"{format_number(capped['throughput_output_tokens_per_s'])} tokens/s",
    }
