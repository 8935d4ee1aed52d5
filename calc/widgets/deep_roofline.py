"""Widgets and facts of the deep dive "The roofline" (docs/deep-dives/roofline.md).

A kernel's time is bounded by two roofs: its FLOPs over the GPU's FLOP/s and
its bytes over the memory bandwidth (Williams, Waterman and Patterson,
"Roofline", CACM 2009). Arithmetic intensity (FLOPs per byte) says which one
binds: below the GPU's ridge point a kernel waits on memory. Prefill computes a
whole prompt per read of the weights and sits far right of the ridge; a decode
step computes one token per sequence and sits far left: the bandwidth wall
(the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah): "decode is bottlenecked by how fast weights move").

Step times come from :mod:`calc.roofline` (per kernel ``max(compute, memory)``
with efficiency factors fitted on one published row, :data:`calc.roofline.CALIBRATED`).

>>> p = roofline_points("mistral-7b", "h100-sxm-80gb", batch=1, prompt_tokens=1024, context_tokens=1152)
>>> p["decode"]["bound"], round(p["decode"]["intensity_flops_per_byte"], 2), p["prefill"]["bound"]
('memory', 1.03, 'compute')
>>> facts()["wall_ms"]
'4.25 ms'
"""

from __future__ import annotations

from typing import Annotated

from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.errors import CalcError
from calc.lesson import DECODE_CONTEXT_TOKENS, PROMPT_TOKENS
from calc.lesson import MODEL as LESSON_MODEL
from calc.lesson import TP as LESSON_TP
from calc.memory import check_tp
from calc.roofline import CALIBRATED, first_compute_bound_batch, step_coefficients, ttft_s
from calc.units import format_bytes, format_number, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import Gpu, Model, TpChoice, weight_format
from calc.widgets.framework import IntRange, output, view, widget
from calc.roofline import bandwidth_wall_s, batch_sweep, roofline_points
from calc.roofline import max_kv_batch as max_batch

__all__ = ["roofline",
           "latency", "facts"]

MS = 1_000  # milliseconds per second, for display
WORKSHOP_MODEL, GPU = "mistral-7b", "h100-sxm-80gb"
#: The running example's request, mid-answer (1,152 tokens of context): :data:`calc.lesson.DECODE_CONTEXT_TOKENS`.
CONTEXT_TOKENS = DECODE_CONTEXT_TOKENS
BATCH_POINTS = (1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)
PROMPT_POINTS = (128, 256, 512, 1_024, 2_048, 4_096, 8_192, 16_384, 32_768)
INTENSITY_RANGE = (0.1, 100_000.0)
EXAMPLE_BATCH = 64



def _coefficients(model, gpu, tp: int, weights: str):
    model = get_model(model)
    return step_coefficients(model, gpu, tp=check_tp(model, tp), weights=weights)


def _tp_of(model: str, tp: str) -> int:
    return check_tp(get_model(model), int(tp))


@widget
def roofline(
    model: Model = WORKSHOP_MODEL,
    gpu: Gpu = GPU,
    tp: TpChoice = "1",
    weights: weight_format("Weights") = "bf16",
    batch: Annotated[int, IntRange(1, 4096, 1, "sequences", label="Decode batch")] = 1,
    prompt_tokens: Annotated[int, IntRange(1, 1_000_000, 128, "tokens", label="Prompt")] = PROMPT_TOKENS,
    context_tokens: Annotated[int, IntRange(1, 1_000_000, 128, "tokens", label="Context while decoding")]
    = CONTEXT_TOKENS,
):
    """Prefill and a decode step on the GPU's roofline: intensity, the bound, and the time each takes."""
    p = roofline_points(model, gpu, tp=_tp_of(model, tp), weights=weights, batch=batch, prompt_tokens=prompt_tokens,
                        context_tokens=context_tokens)
    peak, bw, ridge = p["peak_flops_per_s"], p["hbm_bytes_per_s"], p["ridge_flops_per_byte"]
    low, high = INTENSITY_RANGE
    xs = sorted({low, ridge, high} | {10.0 ** k for k in range(-1, 6)})
    tflops = lambda f: f / 1e12  # noqa: E731
    series = {
        "datasheet roof": (xs, [tflops(min(peak, x * bw)) for x in xs]),
        "achievable roof (calibrated)": (xs, [tflops(min(peak * CALIBRATED.compute, x * bw * CALIBRATED.memory))
                                             for x in xs]),
    }
    d, f = p["decode"], p["prefill"]
    figure = line_chart(
        f"Roofline, one {get_gpu(gpu).name} ({p['compute_dtype']})", "arithmetic intensity (FLOPs per byte)",
        "TFLOP/s", series, log_x=True, log_y=True,
        summary=(f"The roof rises with intensity until the ridge at {format_number(ridge)} FLOPs per byte, then "
                 f"stays flat at {format_number(tflops(peak))} TFLOP/s. The decode step sits at "
                 f"{format_number(d['intensity_flops_per_byte'])} FLOPs per byte ({d['bound']}-bound), the "
                 f"prefill of {prompt_tokens:,} tokens at {format_number(f['intensity_flops_per_byte'])} "
                 f"({f['bound']}-bound)."))
    figure["data"][1]["line"] = {"color": PALETTE[0], "width": 1.5, "dash": "dot"}
    points = ((f"decode step, batch {batch:,}", d), (f"prefill, {prompt_tokens:,} tokens", f))
    for index, (name, step) in enumerate(points):
        figure["data"].append({
            "type": "scatter", "mode": "markers", "name": name,
            "x": [round_sig(step["intensity_flops_per_byte"])], "y": [round_sig(tflops(step["attained_flops_per_s"]))],
            "marker": {"size": 13, "color": PALETTE[5 if index == 0 else 2], "symbol": "diamond" if index else "circle",
                       "line": {"width": 1}},
        })
    figure["layout"]["shapes"] = [{"type": "line", "x0": ridge, "x1": ridge, "yref": "paper", "y0": 0, "y1": 1,
                                   "line": {"dash": "dash", "width": 1, "color": "#9e9e9e"}}]
    ms = lambda s: f"{format_number(s * MS)} ms"  # noqa: E731
    limit = max_batch(model, gpu, tp=_tp_of(model, tp), weights=weights, context_tokens=context_tokens)
    room = (f"yes: the KV cache holds {limit:,} such sequences" if batch <= limit
            else f"no: the KV cache holds {limit:,} such sequences, not {batch:,}")
    return view(
        outputs=[
            output("ridge", "Ridge point", ridge, "FLOP/B", text=f"{format_number(ridge)} FLOPs per byte"),
            output("decode_intensity", f"Decode intensity, batch {batch:,}", d["intensity_flops_per_byte"], "FLOP/B",
                   text=f"{format_number(d['intensity_flops_per_byte'])} FLOPs per byte: {d['bound']}-bound"),
            output("prefill_intensity", f"Prefill intensity, {prompt_tokens:,} tokens", f["intensity_flops_per_byte"],
                   "FLOP/B", text=f"{format_number(f['intensity_flops_per_byte'])} FLOPs per byte: {f['bound']}-bound"),
            output("itl_s", "Decode step = ITL", d["time_s"], "s", text=ms(d["time_s"])),
            output("ttft_s", "Prefill = TTFT on an idle GPU", f["time_s"], "s", text=ms(f["time_s"])),
            output("weights_per_step", "Weights streamed per decode step, per GPU", p["weight_bytes_per_gpu"], "B",
                   text=format_bytes(p["weight_bytes_per_gpu"])),
            output("fits", f"Does a batch of {batch:,} × {context_tokens:,} tokens fit?", limit, "sequences",
                   text=room),
        ],
        figures={"roofline": figure},
    )


@widget
def latency(
    model: Model = WORKSHOP_MODEL,
    gpu: Gpu = GPU,
    tp: TpChoice = "1",
    weights: weight_format("Weights") = "bf16",
    context_tokens: Annotated[int, IntRange(1, 1_000_000, 128, "tokens", label="Context while decoding")]
    = CONTEXT_TOKENS,
    batch: Annotated[int, IntRange(1, 4096, 1, "sequences", label="Decode batch")] = EXAMPLE_BATCH,
    prompt_tokens: Annotated[int, IntRange(1, 1_000_000, 128, "tokens", label="Prompt")] = PROMPT_TOKENS,
):
    """ITL and tokens/s against the batch, TTFT against the prompt: the bandwidth wall and the compute roof."""
    tp_n = _tp_of(model, tp)
    rows = batch_sweep(model, gpu, tp=tp_n, weights=weights, context_tokens=context_tokens,
                       batches=sorted(set(BATCH_POINTS) | {batch}))
    wall = bandwidth_wall_s(model, gpu, tp=tp_n, weights=weights)
    coef = _coefficients(model, gpu, tp_n, weights)
    ttfts = [ttft_s(coef, prompt_tokens=n) for n in PROMPT_POINTS]
    batches = [r["batch"] for r in rows]
    itl = line_chart(
        "Inter-token latency against the batch", "decode batch (sequences)", "ms per token", {
            "ITL (decode step)": (batches, [r["itl_s"] * MS for r in rows]),
            "of which streaming the weights": (batches, [r["weights_s"] * MS for r in rows]),
            "bandwidth wall (datasheet)": (batches, [wall * MS] * len(rows)),
        }, log_x=True, markers=True,
        summary=(f"ITL stays near the weights' streaming time while the batch is small, then grows as the batch's "
                 f"KV reads add up. The dashed floor, {format_number(wall * MS)} ms, is the weights over the "
                 f"datasheet bandwidth."))
    itl["data"][2]["line"] = {"color": "#757575", "width": 1.5, "dash": "dash"}
    throughput = line_chart(
        "Output tokens per second against the batch", "decode batch (sequences)", "tokens/s (replica)",
        {"tokens/s": (batches, [r["tokens_per_s"] for r in rows])}, log_x=True, markers=True,
        summary=(f"Throughput rises almost in proportion to the batch while the weights dominate the step, then "
                 f"flattens near {format_number(rows[-1]['tokens_per_s'])} tokens/s when the KV reads do."))
    ttft = line_chart(
        "TTFT on an idle replica against the prompt", "prompt (tokens)", "ms", {
            "TTFT (prefill)": (list(PROMPT_POINTS), [t * MS for t in ttfts])}, log_x=True, log_y=True, markers=True,
        summary=(f"Prefill time grows with the prompt, faster than linearly once attention's quadratic work "
                 f"shows: {format_number(ttfts[0] * MS)} ms at {PROMPT_POINTS[0]:,} tokens, "
                 f"{format_number(ttfts[-1] * MS)} ms at {PROMPT_POINTS[-1]:,}."))
    chosen = next((r for r in rows if r["batch"] == batch), None)
    if chosen is None:  # the batch does not fit in the KV cache at this context
        raise CalcError(f"batch must be at most {rows[-1]['batch']:,} sequences here (the KV cache holds no more at "
                        f"this context); got {batch:,}", "batch")
    return view(
        outputs=[
            output("wall_ms", "Bandwidth wall (weights / datasheet bandwidth)", wall, "s",
                   text=f"{format_number(wall * MS)} ms"),
            output("itl_s", f"ITL at batch {batch:,}", chosen["itl_s"], "s",
                   text=f"{format_number(chosen['itl_s'] * MS)} ms"),
            output("tokens_per_s", f"Tokens/s at batch {batch:,}", chosen["tokens_per_s"], "tokens/s",
                   text=f"{format_number(chosen['tokens_per_s'])} tokens/s"),
            output("per_sequence", "Tokens/s one reader sees", 1 / chosen["itl_s"], "tokens/s",
                   text=f"{format_number(1 / chosen['itl_s'])} tokens/s"),
            output("ttft_s", f"TTFT, {prompt_tokens:,}-token prompt", ttft_s(coef, prompt_tokens=prompt_tokens), "s",
                   text=f"{format_number(ttft_s(coef, prompt_tokens=prompt_tokens) * MS)} ms"),
        ],
        figures={"itl": itl, "throughput": throughput, "ttft": ttft},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose (the notebook prints the same, computed on its own).

    >>> f = facts()
    >>> f["ridge"], f["decode_intensity"], f["lesson_itl_ms"]
    ('295', '1.03', '15.3 ms')
    """
    gpu = get_gpu(GPU)
    p = roofline_points(WORKSHOP_MODEL, GPU, batch=1, prompt_tokens=PROMPT_TOKENS, context_tokens=CONTEXT_TOKENS)
    big = roofline_points(WORKSHOP_MODEL, GPU, batch=EXAMPLE_BATCH, prompt_tokens=PROMPT_TOKENS,
                          context_tokens=CONTEXT_TOKENS)
    wall = bandwidth_wall_s(WORKSHOP_MODEL, GPU)
    sweep = batch_sweep(WORKSHOP_MODEL, GPU, context_tokens=CONTEXT_TOKENS)
    short = first_compute_bound_batch(_coefficients(WORKSHOP_MODEL, GPU, 1, "bf16"), context_tokens=16)
    lesson = roofline_points(LESSON_MODEL, GPU, tp=LESSON_TP, batch=1, prompt_tokens=PROMPT_TOKENS,
                             context_tokens=CONTEXT_TOKENS)
    lesson_wall = bandwidth_wall_s(LESSON_MODEL, GPU, tp=LESSON_TP)
    ms = lambda s: f"{format_number(s * MS)} ms"  # noqa: E731
    return {
        "model_name": get_model(WORKSHOP_MODEL).name,
        "gpu_name": gpu.name,
        "peak_tflops": format_number(gpu.flops("bf16") / 1e12),
        "bandwidth_tb_s": format_number(gpu.hbm_bytes_per_s / 1e12),
        "ridge": format_number(p["ridge_flops_per_byte"]),
        "ridge_fp8": format_number(gpu.ridge_point_flops_per_byte("fp8")),
        "weights_read": format_bytes(p["weight_bytes_per_gpu"]),
        "wall_ms": ms(wall),
        "wall_tokens_per_s": format_number(1 / wall),
        "memory_efficiency": f"{CALIBRATED.memory:.0%}",
        "compute_efficiency": f"{CALIBRATED.compute:.0%}",
        "prompt_tokens": f"{PROMPT_TOKENS:,}",
        "context_tokens": f"{CONTEXT_TOKENS:,}",
        "decode_intensity": format_number(p["decode"]["intensity_flops_per_byte"]),
        "prefill_intensity": format_number(p["prefill"]["intensity_flops_per_byte"]),
        "itl_ms": ms(p["decode"]["time_s"]),
        "itl_tokens_per_s": format_number(1 / p["decode"]["time_s"]),
        "ttft_ms": ms(p["prefill"]["time_s"]),
        "example_batch": f"{EXAMPLE_BATCH:,}",
        "batch_itl_ms": ms(big["decode"]["time_s"]),
        "batch_tokens_per_s": format_number(EXAMPLE_BATCH / big["decode"]["time_s"]),
        "batch_intensity": format_number(big["decode"]["intensity_flops_per_byte"]),
        "batch_speedup": format_number(EXAMPLE_BATCH / big["decode"]["time_s"] * p["decode"]["time_s"]),
        "plateau_tokens_per_s": format_number(sweep[-1]["tokens_per_s"]),
        "plateau_batch": f"{sweep[-1]['batch']:,}",
        "short_context_compute_batch": f"{short:,}" if short else "never",
        "lesson_weights_per_gpu": format_bytes(lesson["weight_bytes_per_gpu"]),
        "lesson_wall_ms": ms(lesson_wall),
        "lesson_itl_ms": ms(lesson["decode"]["time_s"]),
        "lesson_ttft_ms": ms(lesson["prefill"]["time_s"]),
    }
