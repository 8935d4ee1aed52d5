"""Widgets and facts of step 1, "A 70B assistant on four GPUs" (docs/lesson/01-a-70b-assistant.md).

The memory of one replica, per GPU, the way vLLM carves it up
(``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``; the terms come
from :func:`calc.memory.kv_capacity`):

    requested = GPU memory x gpu_memory_utilization
    KV cache  = requested - weights / TP - activation workspace - non-torch overhead
    tokens    = KV cache // KV bytes per token per GPU

The lesson's figures (Llama 3.1 70B, bf16, TP 4, four H100s counted as 80e9 bytes):

>>> cap = replica_capacity()
>>> round(cap.weights_bytes / 1e9, 1), round(cap.kv_cache_bytes / 1e9, 1), cap.kv_cache_tokens_raw
(35.3, 32.7, 399169)
>>> replica_capacity(parameter_count="exact").kv_cache_tokens_raw
399452
>>> memory_view()["outputs"]["kv_cache_tokens"]["text"]
'399,169 tokens'
"""

from __future__ import annotations

from typing import Annotated

from calc import lesson
from calc.allocation import contiguous_max_concurrency
from calc.catalog import GPUS, MEMORY_BASES, MODELS, get_gpu, get_model
from calc.lesson import (
    ANSWER_TOKENS, LESSON_PARAM_DIGITS, MAX_MODEL_LEN, PROMPT_TOKENS, replica_capacity, vllm_maximum_concurrency,
)
from calc.memory import kv_bytes_per_request, kv_heads_per_gpu
from calc.units import GB, GiB, KiB, MiB, format_bytes, format_number, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, TensorParallel, Weights
from calc.widgets.framework import Choice, FloatRange, IntRange, output, view, widget
from calc.widgets.views import replica_memory_view

__all__ = ["memory_view", "tokens_in_flight", "facts"]


_LESSON_MODEL = get_model(lesson.REPLICA["model"])
_PARAM_LABELS = (
    ("lesson", f"Rounded, as the lesson "
               f"({format_number(round_sig(_LESSON_MODEL.total_params, LESSON_PARAM_DIGITS) / 1e9)} B for the 70B)"),
    ("exact", "Exact, from the model's shape"),
)
_BASIS_LABELS = (
    ("marketed", "Datasheet: GB × 10⁹ (the lesson)"),
    ("runtime", "nvidia-smi: MiB × 2²⁰"),
)
LENGTH_POINTS = (256, 512, 1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536, 131_072)



def _gb(n_bytes: float) -> str:
    return format_number(n_bytes / GB)


def _gib(n_bytes: float) -> str:
    return format_number(n_bytes / GiB)


@widget
def memory_view(
    model: Model = lesson.REPLICA["model"],
    gpu: Gpu = lesson.REPLICA["gpu"],
    tp: TensorParallel = lesson.REPLICA["tp"],
    weights: Weights = lesson.REPLICA["weights"],
    kv_dtype: KvDtype = lesson.REPLICA["kv_dtype"],
    gpu_memory_utilization: Annotated[float, FloatRange(0.01, 1.0, 0.01, label="Memory utilization",
                                                        help="vLLM's gpu_memory_utilization")]
    = lesson.REPLICA["gpu_memory_utilization"],
    memory_basis: Annotated[str, Choice(_BASIS_LABELS, label="GPU memory counted as")] = lesson.REPLICA["memory_basis"],
    parameter_count: Annotated[str, Choice(_PARAM_LABELS, label="Parameter count")] = "lesson",
    request_tokens: Annotated[int, IntRange(1, 10_000_000, 1, "tokens", label="Request length",
                                            help="prompt + answer")] = PROMPT_TOKENS + ANSWER_TOKENS,
):
    """The memory of one replica per GPU: weights, workspace, overhead, KV cache, and what is left unclaimed.

    The view is :func:`calc.widgets.views.replica_memory_view` (the playground shows it too).

    >>> out = memory_view(weights="fp8")["outputs"]
    >>> out["weights_bytes_per_gpu"]["text"], out["kv_cache_tokens"]["text"], out["max_requests"]["value"]
    ('18.2 GB', '608,266 tokens', 475)
    """
    return replica_memory_view(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                               gpu_memory_utilization=gpu_memory_utilization, memory_basis=memory_basis,
                               parameter_count=parameter_count, request_tokens=request_tokens)


@widget
def tokens_in_flight(
    prompt_tokens: Annotated[int, IntRange(0, 1_000_000, 1, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Answer")] = ANSWER_TOKENS,
    requests_in_flight: Annotated[int, IntRange(1, 100_000, 1, "requests", label="Requests in flight")] = 200,
    memory_basis: Annotated[str, Choice(_BASIS_LABELS, label="GPU memory counted as")] = lesson.REPLICA["memory_basis"],
):
    """Tokens in flight against the running example's KV cache: how many requests of a given length fit.

    Requests that fit = KV cache tokens // (prompt + answer) (step 1, docs/lesson/01-a-70b-assistant.md: the ratio is the concurrency).

    >>> out = tokens_in_flight(requests_in_flight=400)["outputs"]
    >>> out["requests_that_fit"]["value"], out["waiting"]["value"], out["kv_use"]["text"]
    (311, 89, '100%, full')
    """
    cap = replica_capacity(memory_basis=memory_basis)
    model = get_model(cap.model_key)
    capacity = cap.kv_cache_tokens_raw
    length = prompt_tokens + answer_tokens
    fits = contiguous_max_concurrency(capacity, length)
    in_flight = requests_in_flight * length
    use = in_flight / capacity
    waiting = max(0, requests_in_flight - fits)
    per_request = kv_bytes_per_request(model, length, cap.kv_dtype)
    xs = sorted(set(LENGTH_POINTS) | {length})
    figure = line_chart(
        f"Requests that fit in {capacity:,} tokens of KV cache", "tokens per request (prompt + answer)",
        "requests at once", {"requests that fit": (xs, [capacity / x for x in xs])}, log_x=True, log_y=True,
        summary=(f"The replica holds {capacity:,} tokens: {fits:,} requests of {length:,} tokens fit at once; "
                 + (f"{requests_in_flight:,} in flight hold {in_flight:,} tokens ({format_number(use * 100)}% of it)."
                    if waiting == 0 else
                    f"{requests_in_flight:,} in flight would need {in_flight:,} tokens, {format_number(use)} times "
                    f"what it holds, so {waiting:,} wait in the queue.")),
    )
    figure["data"].append({
        "type": "scatter", "mode": "lines", "name": f"{requests_in_flight:,} requests in flight",
        "x": [xs[0], xs[-1]], "y": [requests_in_flight, requests_in_flight],
        "line": {"color": PALETTE[5], "width": 1.5, "dash": "dash"},
    })
    figure["data"].append({
        "type": "scatter", "mode": "markers", "name": f"{length:,} tokens: {fits:,} fit",
        "x": [length], "y": [round_sig(capacity / length, 6)],
        "marker": {"color": PALETTE[1], "size": 11, "symbol": "diamond"},
    })
    layout = figure["layout"]
    layout["xaxis"]["dtick"] = 1  # one label per decade on the log axes
    layout["yaxis"]["dtick"] = 1
    # The curve falls from top left to bottom right: the bottom left corner is free for the legend.
    layout["legend"] = {"x": 0.01, "xanchor": "left", "y": 0.01, "yanchor": "bottom", "bgcolor": "rgba(0,0,0,0)"}
    layout["margin"] = {"l": 60, "r": 20, "t": 50, "b": 40}
    return view(
        outputs=[
            output("request_tokens", "Tokens per request", length, "tokens", text=f"{length:,} tokens"),
            output("kv_bytes_per_request", "KV per request (replica)", per_request, "B",
                   text=f"{format_bytes(per_request)} ({format_bytes(per_request, binary=True)})"),
            output("requests_that_fit", "Requests that fit at once", fits, "requests", text=f"{fits:,}"),
            output("tokens_in_flight", "Tokens in flight", in_flight, "tokens", text=f"{in_flight:,}"),
            output("kv_use", "KV cache in use", use, "",
                   text=f"{format_number(min(use, 1.0) * 100)}%" if waiting == 0 else "100%, full"),
            output("waiting", "Requests that must wait", waiting, "requests", text=f"{waiting:,}"),
        ],
        figures={"fit": figure},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, computed from calc.

    >>> f = facts()
    >>> f["weights_per_gpu"], f["kv_per_gpu"], f["kv_tokens"], f["requests_at_max_len"]
    ('35.3 GB', '32.7 GB', '399,169', '48')
    """
    cap = replica_capacity(max_model_len=PROMPT_TOKENS + ANSWER_TOKENS)
    exact = replica_capacity(parameter_count="exact")
    runtime = replica_capacity(memory_basis="runtime")
    model, gpu = get_model(cap.model_key), get_gpu(cap.gpu_key)
    tokens = cap.kv_cache_tokens_raw
    length = PROMPT_TOKENS + ANSWER_TOKENS
    overhead = cap.activation_bytes + cap.non_torch_bytes
    per_request = kv_bytes_per_request(model, length, cap.kv_dtype)
    return {
        "model": model.name,
        "gpu": gpu.name,
        "tp": str(cap.tp),
        "params_exact": f"{model.total_params:,}",
        "params_rounded": f"{format_number(round_sig(model.total_params, LESSON_PARAM_DIGITS) / 1e9)} B",
        "gpu_gb": f"{_gb(gpu.memory_bytes_marketed)} GB",
        "gpu_gib": f"{_gib(gpu.memory_bytes_marketed)} GiB",
        "gpu_runtime_mib": f"{gpu.memory_bytes_runtime / MiB:,.0f} MiB",
        "gpu_runtime_gb": f"{_gb(gpu.memory_bytes_runtime)} GB",
        "gpu_runtime_gib": f"{_gib(gpu.memory_bytes_runtime)} GiB",
        "utilization_pct": f"{format_number(cap.gpu_memory_utilization * 100)}%",
        "unclaimed_pct": f"{format_number((1 - cap.gpu_memory_utilization) * 100)}%",
        "requested": f"{_gb(cap.requested_bytes)} GB",
        "unclaimed": f"{_gb(cap.unclaimed_bytes)} GB",
        "weights_per_gpu": f"{_gb(cap.weights_bytes)} GB",
        "weights_total": f"{_gb(cap.weights_bytes * cap.tp)} GB",
        "activation": f"{_gb(cap.activation_bytes)} GB",
        "non_torch": f"{_gb(cap.non_torch_bytes)} GB",
        "overhead_total": f"{_gb(overhead)} GB",
        "kv_per_gpu": f"{_gb(cap.kv_cache_bytes)} GB",
        "kv_per_gpu_gib": f"{_gib(cap.kv_cache_bytes)} GiB",
        "kv_replica": f"{_gb(cap.kv_cache_bytes * cap.tp)} GB",
        "kv_per_token": f"{cap.kv_bytes_per_token:,} bytes",
        "kv_per_token_kib": f"{cap.kv_bytes_per_token / KiB:g} KiB",
        "kv_per_token_gpu": f"{cap.kv_bytes_per_token_per_gpu:,} bytes",
        "kv_per_token_gpu_kib": f"{cap.kv_bytes_per_token_per_gpu / KiB:g} KiB",
        "kv_heads": str(model.kv_heads),
        "kv_heads_per_gpu": str(kv_heads_per_gpu(model, cap.tp)),
        "gib_over_gb_pct": f"{format_number((GiB / GB - 1) * 100, 2)}%",
        "kv_tokens": f"{tokens:,}",
        "kv_tokens_exact": f"{exact.kv_cache_tokens_raw:,}",
        "kv_tokens_exact_change": f"{(exact.kv_cache_tokens_raw - tokens) / tokens * 100:+.2f}%",
        "weights_exact_per_gpu": f"{exact.weights_bytes:,.0f} bytes",
        "vllm_blocks": f"{cap.kv_cache_blocks:,}",
        "vllm_tokens": f"{cap.kv_cache_tokens:,}",
        "block_size": str(cap.block_size),
        "kv_tokens_runtime": f"{runtime.kv_cache_tokens_raw:,}",
        "runtime_gain_pct": f"{format_number((runtime.kv_cache_tokens_raw / tokens - 1) * 100, 2)}%",
        "prompt_tokens": f"{PROMPT_TOKENS:,}",
        "answer_tokens": f"{ANSWER_TOKENS:,}",
        "request_tokens": f"{length:,}",
        "kv_per_request": format_bytes(per_request),
        "requests_at_request_len": f"{contiguous_max_concurrency(tokens, length):,}",
        "vllm_concurrency": f"{vllm_maximum_concurrency(MAX_MODEL_LEN):,.2f}x",
        "max_model_len": f"{MAX_MODEL_LEN:,}",
        "requests_at_max_len": f"{contiguous_max_concurrency(tokens, MAX_MODEL_LEN):,}",
    }
