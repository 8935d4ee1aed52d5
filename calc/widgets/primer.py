"""Widget and facts of the primer "How one request runs" (docs/primer.md).

One request on an idle replica, step by step, priced on the roofline of
:mod:`calc.roofline`:

* **prefill**: one engine step runs the whole prompt through the model at once
  and writes its KV cache; its last position gives the first answer token, so
  time to first token (TTFT) = the prefill step (:func:`calc.roofline.ttft_s`);
* **decode**: every further answer token is one more step of one new token that
  reads all the weights and the request's KV cache from HBM; the gap between
  two tokens is the inter-token latency (ITL, :func:`calc.roofline.itl_s`);
* end to end = TTFT + the sum of the ``answer - 1`` decode steps.

The decode step that produces answer token ``k + 1`` runs with the request
holding ``prompt + k`` tokens (the token just produced is its input).

The decode steps are not priced one by one: at batch 1 a step's time is linear
in the context between a few break points (:func:`decode_runs`), so the sum of
thousands of steps and the time of any token come in closed form.

>>> t = request_timeline_s()
>>> t["decode_steps"], round(t["itl_mean_s"] * 1000, 2)
(255, 15.3)
>>> abs(t["e2e_s"] - t["ttft_s"] - t["decode_s"]) < 1e-12
True
>>> request_timeline()["outputs"]["kv_held_bytes"]["text"]
'419 MB (400 MiB)'
"""

from __future__ import annotations

import math
from typing import Annotated

from calc import lesson
from calc import memory, roofline
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.errors import CalcError, check_range
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.units import GB, KiB, format_bytes, format_number
from calc.widgets.charts import PALETTE
from calc.widgets.framework import Choice, IntRange, output, table, view, widget

__all__ = ["request_timeline_s", "decode_runs", "elapsed_s", "request_timeline", "timeline_figure", "facts"]

#: The longest answer the widget prices (its steps are summed in closed form: :func:`decode_runs`).
MAX_ANSWER_TOKENS = 32_768
MAX_PROMPT_TOKENS = 131_072  # Llama 3.1's context window
#: The timeline chart draws at most this many points (the line is straight between them).
MAX_POINTS = 240
#: A busier moment for the same replica: this many requests decoding together (the prose's comparison).
BUSY_BATCH = 64
#: A long prompt for the prose's "try this" (32K tokens: a long document).
LONG_PROMPT_TOKENS = 32_768
#: The KV cache stays in bf16 here: the primer changes the weights, not the cache.
KV_DTYPE = "bf16"

MODEL_CHOICES = tuple((key, model.name) for key, model in MODELS.items())
GPU_CHOICES = tuple((key, gpu.name) for key, gpu in GPUS.items())
WEIGHT_CHOICES = tuple((w, w) for w in memory.WEIGHT_FORMATS)


def _fit(model, gpu, tp: int, weights: str) -> memory.KVCapacity:
    """The replica's KV capacity (the lesson's vLLM settings), or a CalcError on the tp control."""
    try:
        return memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=KV_DTYPE,
                                  gpu_memory_utilization=lesson.REPLICA["gpu_memory_utilization"],
                                  block_size=lesson.REPLICA["block_size"],
                                  memory_basis=lesson.REPLICA["memory_basis"])
    except CalcError as exc:
        if exc.field not in ("tp", "gpu_memory_utilization"):
            raise
        per_gpu = memory.weights_bytes_per_gpu(model, tp, weights)
        share = gpu.memory_bytes("marketed") * lesson.REPLICA["gpu_memory_utilization"]
        raise CalcError(
            f"{model.name} does not fit on {tp} x {gpu.name} in {weights}: {per_gpu / GB:.1f} GB of weights per GPU "
            f"leave no room for the KV cache in the {share / GB:.1f} GB vLLM takes of each GPU; allowed: more GPUs "
            f"(tp) or fewer bits per weight", "tp") from None


def request_timeline_s(model: str = "llama-3.1-70b", gpu: str = "h100-sxm-80gb", *, tp: int = 4,
                       weights: str = "bf16", prompt_tokens: int = PROMPT_TOKENS,
                       answer_tokens: int = ANSWER_TOKENS) -> dict:
    """Prefill, the decode steps and the end-to-end time of one request alone on a replica, in seconds.

    Returns ``ttft_s`` (the prefill step), ``decode_s`` (the ``answer_tokens - 1``
    decode steps together), ``itl_mean_s`` (their mean), ``e2e_s``, ``runs`` (the
    decode steps as :func:`decode_runs`, for :func:`elapsed_s`), the roofline
    breakdowns of the prefill and of the first and last decode steps, and the
    replica's KV capacity. Source: :func:`calc.roofline.ttft_s`,
    :func:`calc.roofline.itl_s` (roofline calibrated on the TensorRT-LLM row); the
    capacity check is :func:`calc.memory.kv_capacity` with the lesson's vLLM settings.

    >>> t = request_timeline_s(prompt_tokens=1024, answer_tokens=2)
    >>> t["decode_steps"], t["prefill"]["bound"], t["decode_first"]["bound"]
    (1, 'compute', 'memory')
    >>> t["decode_first"]["context_tokens"], t["decode_s"] == t["decode_first"]["time_s"]
    (1025, True)
    >>> request_timeline_s(prompt_tokens=500_000)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: prompt_tokens must be a whole number between 1 and 131072; got 500000
    """
    model_obj, gpu_obj = get_model(model), get_gpu(gpu)
    prompt = check_range("prompt_tokens", prompt_tokens, 1, MAX_PROMPT_TOKENS, integer=True)
    answer = check_range("answer_tokens", answer_tokens, 1, MAX_ANSWER_TOKENS, integer=True)
    tp = memory.check_tp(model_obj, tp)
    capacity = _fit(model_obj, gpu_obj, tp, weights)
    held = memory.kv_tokens_per_request(model_obj, prompt + answer)
    if held > capacity.kv_cache_tokens:
        raise CalcError(
            f"prompt_tokens + answer_tokens = {prompt + answer:,} tokens need more KV cache than this replica holds "
            f"({capacity.kv_cache_tokens:,} tokens); allowed: at most {capacity.kv_cache_tokens:,} together, "
            f"or more GPUs", "prompt_tokens")
    coefficients = roofline.step_coefficients(model_obj, gpu_obj, tp=tp, weights=weights, kv_dtype=KV_DTYPE)
    prefill = roofline.prefill_chunk(coefficients, chunk_tokens=prompt)
    ttft = roofline.ttft_s(coefficients, prompt_tokens=prompt)
    # Answer token k + 1 comes from a decode step over prompt + k tokens, k = 1 .. answer - 1.
    runs = decode_runs(coefficients, prompt + 1, prompt + answer - 1) if answer > 1 else []
    decode = _runs_sum_s(runs, prompt + answer - 1)
    decode_first = roofline.decode_step(coefficients, batch=1, context_tokens=prompt + 1) if answer > 1 else None
    decode_last = roofline.decode_step(coefficients, batch=1, context_tokens=prompt + answer - 1) if answer > 1 else None
    return {
        "model": model_obj, "gpu": gpu_obj, "tp": tp, "weights": weights,
        "prompt_tokens": prompt, "answer_tokens": answer, "decode_steps": answer - 1,
        "ttft_s": ttft, "decode_s": decode, "itl_mean_s": decode / (answer - 1) if answer > 1 else 0.0,
        "e2e_s": ttft + decode, "runs": runs,
        "prefill": prefill, "decode_first": decode_first, "decode_last": decode_last,
        "capacity": capacity, "kv_held_bytes": memory.kv_bytes_per_request(model_obj, prompt + answer, KV_DTYPE),
    }


def decode_runs(coefficients: roofline.StepCoefficients, first_context: int,
                last_context: int) -> list[tuple[int, int, float, float]]:
    """Decode steps of one sequence at contexts ``first .. last``, as runs on which a step's time is linear.

    Each run is ``(first context, last context, its step time, last step time)``.
    At batch 1 a decode step (:meth:`calc.roofline.StepCoefficients.breakdown`) is
    the weights' GEMMs, the all-reduces and the overhead, all fixed, plus
    attention: the larger of its FLOPs and its KV read, both linear in the
    attended context, which stops growing at a sliding window. So the time is
    linear between at most two break points: the window, and the context where
    attention turns from bandwidth- to compute-bound (found by bisection).
    Each run's steps sum to ``count x (first + last) / 2`` exactly, whatever
    their number: the price of a 32K-token answer is a handful of roofline calls.

    >>> c = roofline.step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> [(a, b, round(fa * 1000, 3), round(fb * 1000, 3)) for a, b, fa, fb in decode_runs(c, 1025, 1279)]
    [(1025, 1279, 15.291, 15.299)]
    >>> m = roofline.step_coefficients("mistral-7b", "h100-sxm-80gb")
    >>> [(a, b) for a, b, _, _ in decode_runs(m, 4000, 5000)]  # the window of 4,096 flattens the rest
    [(4000, 4096), (4097, 5000)]
    """
    first = check_range("first_context", first_context, 1, roofline.MAX_TOKENS, integer=True)
    last = check_range("last_context", last_context, first, roofline.MAX_TOKENS, integer=True)
    window = get_model(coefficients.model_key).sliding_window
    spans = [(first, last)]
    if window and first <= window < last:
        spans = [(first, window), (window + 1, last)]
    runs = []
    for a, b in spans:
        step_a, step_b = _decode(coefficients, a), _decode(coefficients, b)
        if _compute_held(step_a) != _compute_held(step_b):
            # The one switch of attention's roof inside: the last context on step_a's side.
            low, high = a, b
            while high - low > 1:
                mid = (low + high) // 2
                if _compute_held(_decode(coefficients, mid)) == _compute_held(step_a):
                    low = mid
                else:
                    high = mid
            runs.append((a, low, step_a["time_s"], _decode(coefficients, low)["time_s"]))
            a, step_a = high, _decode(coefficients, high)
        runs.append((a, b, step_a["time_s"], step_b["time_s"]))
    return runs


def _decode(coefficients, context: int) -> dict:
    return roofline.decode_step(coefficients, batch=1, context_tokens=context)


def _compute_held(step: dict) -> bool:
    """Attention on its compute roof (its time is not the KV read's)."""
    return step["attention_s"] != step["kv_s"]


def _runs_sum_s(runs: list[tuple[int, int, float, float]], last_context: int) -> float:
    """Seconds of the decode steps in ``runs`` up to and including ``last_context``: sums of linear runs."""
    parts = []
    for a, b, fa, fb in runs:
        if last_context < a:
            break
        c = min(b, last_context)
        fc = fb if c == b else fa + (fb - fa) * (c - a) / (b - a)
        parts.append((c - a + 1) * (fa + fc) / 2)
    return math.fsum(parts)


def elapsed_s(t: dict, tokens_out: int) -> float:
    """Seconds from arrival until answer token ``tokens_out`` is out (0 for none): TTFT plus the decode steps before.

    >>> t = request_timeline_s(answer_tokens=3)
    >>> elapsed_s(t, 0), elapsed_s(t, 1) == t["ttft_s"], elapsed_s(t, 3) == t["e2e_s"]
    (0.0, True, True)
    """
    tokens_out = check_range("tokens_out", tokens_out, 0, t["answer_tokens"], integer=True)
    if tokens_out == 0:
        return 0.0
    if tokens_out == t["answer_tokens"]:
        return t["e2e_s"]
    return t["ttft_s"] + _runs_sum_s(t["runs"], t["prompt_tokens"] + tokens_out - 1)


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _time(seconds: float) -> str:
    return f"{format_number(seconds)} s" if seconds >= 1 else _ms(seconds)


def _sample(count: int, limit: int = MAX_POINTS) -> list[int]:
    """Indices ``0..count-1`` thinned to at most ``limit``, first and last kept.

    >>> _sample(5, 10), _sample(10, 4)
    ([0, 1, 2, 3, 4], [0, 3, 6, 9])
    """
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


def timeline_figure(t: dict) -> dict:
    """A Plotly figure of one request: answer tokens out against time, the prefill shaded.

    Built by hand (a step line plus a shaded band and two notes), from the
    output of :func:`request_timeline_s`.

    >>> fig = timeline_figure(request_timeline_s(answer_tokens=3))
    >>> fig["data"][0]["y"], fig["data"][0]["line"]["shape"]
    ([0, 1, 2, 3], 'hv')
    """
    # Token i (i >= 1) is out after the prefill and i - 1 decode steps; only the drawn points are priced.
    keep = _sample(t["answer_tokens"] + 1)
    xs = [round(elapsed_s(t, i), 6) for i in keep]
    ys = list(keep)
    ttft, e2e = t["ttft_s"], t["e2e_s"]
    summary = (f"One request on {t['model'].name}, {t['weights']}, {t['tp']} x {t['gpu'].name}: the prefill of "
               f"{t['prompt_tokens']:,} prompt tokens takes {_time(ttft)} and gives the first token; then "
               f"{t['decode_steps']:,} decode steps of about {_ms(t['itl_mean_s'])} each bring the answer to "
               f"{t['answer_tokens']:,} tokens at {_time(e2e)}.")
    if not t["decode_steps"]:
        summary = (f"One request on {t['model'].name}: the prefill of {t['prompt_tokens']:,} prompt tokens takes "
                   f"{_time(ttft)} and gives the only answer token.")
    return {
        "data": [{
            "type": "scatter", "mode": "lines", "name": "answer tokens out", "x": xs, "y": ys,
            "line": {"color": PALETTE[0], "width": 2, "shape": "hv"},
            "hovertemplate": "%{y} tokens at %{x:.3f} s<extra></extra>",
        }],
        "layout": {
            "title": {"text": "One request: prefill, then one decode step per token", "font": {"size": 15}},
            "xaxis": {"title": {"text": "time since the request arrived (s)"}, "automargin": True,
                      "range": [0, round(e2e * 1.02, 6)]},
            "yaxis": {"title": {"text": "answer tokens out"}, "automargin": True, "rangemode": "tozero"},
            "shapes": [{
                "type": "rect", "xref": "x", "yref": "paper", "x0": 0, "x1": round(ttft, 6), "y0": 0, "y1": 1,
                "fillcolor": PALETTE[1], "opacity": 0.35, "line": {"width": 0}, "layer": "below",
            }],
            "annotations": [
                {"x": round(ttft, 6), "y": 1, "xref": "x", "yref": "y", "text": f"first token: {_time(ttft)}",
                 "showarrow": True, "arrowhead": 2, "ax": 110, "ay": -8, "font": {"size": 12}},
                {"x": round(e2e, 6), "y": t["answer_tokens"], "xref": "x", "yref": "y",
                 "text": f"last token: {_time(e2e)}", "showarrow": True, "arrowhead": 2, "ax": -110, "ay": -6,
                 "font": {"size": 12}},
            ],
            "showlegend": False,
            "margin": {"l": 60, "r": 20, "t": 50, "b": 40},
            "height": 340,
        },
        "summary": summary,
    }


def _row(name: str, d: dict) -> list[str]:
    flops = f"{format_number(d['flops'] / 1e12)} TFLOP" if d["flops"] >= 1e12 else f"{format_number(d['flops'] / 1e9)} GFLOP"
    return [name, f"{d['new_tokens']:,}", flops, format_bytes(d["bytes"]),
            f"{format_number(d['intensity_flops_per_byte'])}: {d['bound']}-bound", _ms(d["time_s"])]


@widget
def request_timeline(
    model: Annotated[str, Choice(MODEL_CHOICES, label="Model")] = "llama-3.1-70b",
    gpu: Annotated[str, Choice(GPU_CHOICES, label="GPU")] = "h100-sxm-80gb",
    tp: Annotated[int, IntRange(1, 64, label="GPUs (tensor parallel)")] = 4,
    weights: Annotated[str, Choice(WEIGHT_CHOICES, label="Weight precision")] = "bf16",
    prompt_tokens: Annotated[int, IntRange(1, MAX_PROMPT_TOKENS, 64, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, MAX_ANSWER_TOKENS, 16, "tokens", label="Answer")] = ANSWER_TOKENS,
):
    """One request alone on a replica: TTFT, each decode step (ITL) and the end-to-end time."""
    t = request_timeline_s(model, gpu, tp=tp, weights=weights, prompt_tokens=prompt_tokens,
                           answer_tokens=answer_tokens)
    prefill, first, last = t["prefill"], t["decode_first"], t["decode_last"]
    decode_total = t["decode_s"]
    mean_itl = t["itl_mean_s"]
    ridge = prefill["ridge_flops_per_byte"]
    rows = [_row("Prefill", prefill)]
    if first is not None:
        steps = t["decode_steps"]
        rows.append(_row(f"Decode step 1 of {steps:,}", first))
        if steps > 1:
            rows.append(_row(f"Decode step {steps:,} of {steps:,}", last))
    held = t["kv_held_bytes"]
    gpus = "one GPU" if t["tp"] == 1 else f"each of {t['tp']} GPUs"
    outputs = [
        output("ttft_s", "Time to first token (the prefill)", t["ttft_s"], "s", text=_time(t["ttft_s"])),
        output("itl_first_s", "First decode step (ITL)", first["time_s"] if first else 0.0, "s",
               text=_ms(first["time_s"]) if first else "none: one-token answer"),
        output("itl_last_s", "Last decode step", last["time_s"] if last else 0.0, "s",
               text=_ms(last["time_s"]) if last else "none"),
        output("e2e_s", "End to end (last token)", t["e2e_s"], "s", text=_time(t["e2e_s"])),
        output("decode_share", "Share of the time spent decoding", decode_total / t["e2e_s"], "",
               text=f"{format_number(100 * decode_total / t['e2e_s'])}%"),
        output("tokens_per_s", "Answer speed the user sees", 1 / mean_itl if mean_itl else 0.0, "tokens/s",
               text=f"{format_number(1 / mean_itl)} tokens/s" if mean_itl else "one token"),
        output("prefill_intensity", "Prefill: FLOP per byte read", prefill["intensity_flops_per_byte"], "FLOP/B",
               text=f"{format_number(prefill['intensity_flops_per_byte'])} (ridge {format_number(ridge)}): "
                    f"{prefill['bound']}-bound"),
        output("decode_intensity", "Decode: FLOP per byte read",
               first["intensity_flops_per_byte"] if first else 0.0, "FLOP/B",
               text=(f"{format_number(first['intensity_flops_per_byte'])} (ridge {format_number(ridge)}): "
                     f"{first['bound']}-bound") if first else "no decode step"),
        output("kv_held_bytes", f"KV cache held at the end ({t['prompt_tokens'] + t['answer_tokens']:,} tokens)",
               held, "B", text=f"{format_bytes(held)} ({format_bytes(held, binary=True)})"),
    ]
    return view(
        outputs=outputs,
        figures={"timeline": timeline_figure(t)},
        tables={"steps": table(
            ["step", "tokens computed", "FLOPs", "HBM bytes read", "FLOP per byte", "time"], rows,
            caption=f"Work per GPU ({gpus}); the ridge point of the {t['gpu'].name} is {format_number(ridge)} "
                    f"FLOP per byte.")},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the primer's prose, for the running example (Llama 3.1 70B, bf16, 4 x H100).

    >>> f = facts()
    >>> f["prompt_tokens"], f["answer_tokens"], f["decode_steps"], f["kv_per_token"]
    ('1,024', '256', '255', '327,680 bytes (320 KiB)')
    """
    t = request_timeline_s()
    model = t["model"]
    first = t["decode_first"]
    per_token = memory.kv_bytes_per_token(model, KV_DTYPE)
    weights_gpu = memory.weights_bytes_per_gpu(model, t["tp"], t["weights"])
    floor = weights_gpu / t["gpu"].hbm_bytes_per_s
    decode_total = t["decode_s"]
    coefficients = roofline.step_coefficients(model, t["gpu"], tp=t["tp"], weights=t["weights"], kv_dtype=KV_DTYPE)
    mid_context = t["prompt_tokens"] + t["answer_tokens"] // 2
    busy = roofline.itl_s(coefficients, batch=BUSY_BATCH, context_tokens=mid_context)
    alone = roofline.itl_s(coefficients, batch=1, context_tokens=mid_context)
    long_ttft = roofline.ttft_s(coefficients, prompt_tokens=LONG_PROMPT_TOKENS)
    return {
        "prompt_tokens": f"{t['prompt_tokens']:,}",
        "answer_tokens": f"{t['answer_tokens']:,}",
        "decode_steps": f"{t['decode_steps']:,}",
        "ttft": _time(t["ttft_s"]),
        "itl_first": _ms(first["time_s"]),
        "itl_mean": _ms(t["itl_mean_s"]),
        "e2e": _time(t["e2e_s"]),
        "decode_share": f"{format_number(100 * decode_total / t['e2e_s'])}%",
        "tokens_per_s": f"{format_number(1 / t['itl_mean_s'])}",
        "weights_per_gpu": format_bytes(weights_gpu),
        "hbm_bandwidth": f"{format_number(t['gpu'].hbm_bytes_per_s / 1e12)} TB/s",
        "weights_read_floor": _ms(floor),
        "kv_per_token": f"{per_token:,} bytes ({format_number(per_token / KiB)} KiB)",
        "kv_per_token_per_gpu": f"{memory.kv_bytes_per_token_per_gpu(model, t['tp'], KV_DTYPE):,} bytes",
        "request_tokens": f"{t['prompt_tokens'] + t['answer_tokens']:,}",
        "kv_held": format_bytes(t["kv_held_bytes"]),
        "prefill_intensity": format_number(t["prefill"]["intensity_flops_per_byte"]),
        "decode_intensity": format_number(first["intensity_flops_per_byte"]),
        "ridge": format_number(t["prefill"]["ridge_flops_per_byte"]),
        "replica_kv_tokens": f"{t['capacity'].kv_cache_tokens:,}",
        "busy_batch": f"{BUSY_BATCH}",
        "itl_alone_mid": _ms(alone),
        "itl_busy_mid": _ms(busy),
        "busy_tokens_per_s": format_number(BUSY_BATCH / busy),
        "busy_over_alone": f"{format_number(busy / alone)}",
        "long_prompt_tokens": f"{LONG_PROMPT_TOKENS:,}",
        "long_ttft": _time(long_ttft),
        "long_prompt_ratio": f"{LONG_PROMPT_TOKENS // t['prompt_tokens']}",
        "long_ttft_ratio": format_number(long_ttft / t["ttft_s"]),
    }
