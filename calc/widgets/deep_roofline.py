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

import functools
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.errors import CalcError
from calc.lesson import DECODE_CONTEXT_TOKENS, PROMPT_TOKENS
from calc.lesson import MODEL as LESSON_MODEL
from calc.lesson import TP as LESSON_TP
from calc.memory import check_tp
from calc.roofline import CALIBRATED, first_compute_bound_batch, step_coefficients, ttft_s
from calc.saturation import batching_gain
from calc.units import format_bytes, format_number, per_second, ratio, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import Gpu, Model, TpChoice, weight_format
from calc.widgets.framework import IntRange, fact, facts_of, output, view, widget
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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ deep_roofline:name }} elsewhere: 1 use).
@functools.cache
def _points(model: str = WORKSHOP_MODEL, tp: int = 1, batch: int = 1) -> dict:
    return roofline_points(model, GPU, tp=tp, batch=batch, prompt_tokens=PROMPT_TOKENS, context_tokens=CONTEXT_TOKENS)


@functools.cache
def _wall_s(model: str = WORKSHOP_MODEL, tp: int = 1) -> float:
    return bandwidth_wall_s(model, GPU, tp=tp)


@functools.cache
def _sweep() -> list:
    return batch_sweep(WORKSHOP_MODEL, GPU, context_tokens=CONTEXT_TOKENS)


def _big() -> dict:
    return _points(batch=EXAMPLE_BATCH)


def _lesson() -> dict:
    return _points(LESSON_MODEL, LESSON_TP)


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * MS)} ms"


def _tera(value: float) -> str:
    return format_number(value / 1e12)


@fact
def model_name():
    return get_model(WORKSHOP_MODEL).name


@fact
def gpu_name():
    return get_gpu(GPU).name


@fact
def peak_tflops():
    return _tera(get_gpu(GPU).flops("bf16"))


@fact
def bandwidth_tb_s():
    return _tera(get_gpu(GPU).hbm_bytes_per_s)


@fact
def ridge():
    """>>> ridge(), decode_intensity(), lesson_itl_ms()
    ('295', '1.03', '15.3 ms')
    """
    return format_number(_points()["ridge_flops_per_byte"])


@fact
def ridge_fp8():
    return format_number(get_gpu(GPU).ridge_point_flops_per_byte("fp8"))


@fact
def weights_read():
    return format_bytes(_points()["weight_bytes_per_gpu"])


@fact
def wall_ms():
    return _ms(_wall_s())


@fact
def wall_tokens_per_s():
    return format_number(per_second(_wall_s()))


@fact
def memory_efficiency():
    return f"{CALIBRATED.memory:.0%}"


@fact
def compute_efficiency():
    return f"{CALIBRATED.compute:.0%}"


@fact
def prompt_tokens():
    return f"{PROMPT_TOKENS:,}"


@fact
def context_tokens():
    return f"{CONTEXT_TOKENS:,}"


@fact
def decode_intensity():
    return format_number(_points()["decode"]["intensity_flops_per_byte"])


@fact
def prefill_intensity():
    return format_number(_points()["prefill"]["intensity_flops_per_byte"])


@fact
def itl_ms():
    return _ms(_points()["decode"]["time_s"])


@fact
def itl_tokens_per_s():
    return format_number(per_second(_points()["decode"]["time_s"]))


@fact
def ttft_ms():
    return _ms(_points()["prefill"]["time_s"])


@fact
def example_batch():
    return f"{EXAMPLE_BATCH:,}"


@fact
def batch_itl_ms():
    return _ms(_big()["decode"]["time_s"])


@fact
def batch_tokens_per_s():
    return format_number(ratio(EXAMPLE_BATCH, _big()["decode"]["time_s"]))


@fact
def batch_intensity():
    return format_number(_big()["decode"]["intensity_flops_per_byte"])


@fact
def batch_speedup():
    return format_number(batching_gain(_points()["decode"]["time_s"], _big()["decode"]["time_s"], EXAMPLE_BATCH))


@fact
def plateau_tokens_per_s():
    return format_number(_sweep()[-1]["tokens_per_s"])


@fact
def plateau_batch():
    return f"{_sweep()[-1]['batch']:,}"


@fact
def short_context_compute_batch():
    short = first_compute_bound_batch(_coefficients(WORKSHOP_MODEL, GPU, 1, "bf16"), context_tokens=16)
    return f"{short:,}" if short else "never"


@fact
def lesson_weights_per_gpu():
    return format_bytes(_lesson()["weight_bytes_per_gpu"])


@fact
def lesson_wall_ms():
    return _ms(_wall_s(LESSON_MODEL, LESSON_TP))


@fact
def lesson_itl_ms():
    return _ms(_lesson()["decode"]["time_s"])


@fact
def lesson_ttft_ms():
    return _ms(_lesson()["prefill"]["time_s"])


facts = facts_of(__name__)
