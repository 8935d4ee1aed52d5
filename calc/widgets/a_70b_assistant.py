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

import functools
from typing import Annotated

from calc import lesson
from calc.allocation import contiguous_max_concurrency
from calc.catalog import GPUS, MEMORY_BASES, MODELS, get_gpu, get_model
from calc.lesson import (
    ANSWER_TOKENS, LESSON_PARAM_DIGITS, MAX_MODEL_LEN, PROMPT_TOKENS, REQUEST_TOKENS, replica_capacity,
    vllm_maximum_concurrency,
)
from calc.memory import kv_bytes_per_request, kv_heads_per_gpu
from calc.units import GB, GiB, KiB, MiB, format_bytes, format_number, relative_change, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, TensorParallel, Weights
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, view, widget
from calc.widgets.views import percent_text, replica_memory_view, signed_percent_text

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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ name }} here, {{ a_70b_assistant:name }} elsewhere: 25 uses).
@functools.cache
def _cap():
    """The running example's replica, sized for the lesson's request (prompt + answer)."""
    return replica_capacity(max_model_len=REQUEST_TOKENS)


@functools.cache
def _exact():
    return replica_capacity(parameter_count="exact")


@functools.cache
def _runtime():
    return replica_capacity(memory_basis="runtime")


def _model():
    return get_model(_cap().model_key)


def _gpu():
    return get_gpu(_cap().gpu_key)


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / MiB:,.0f}"


def _kib(n_bytes: float) -> str:
    return f"{n_bytes / KiB:g}"


def _billions(count: float) -> str:
    return format_number(count / 1e9)


@fact("model")
def _model_name():
    return _model().name


@fact("gpu")
def _gpu_name():
    return _gpu().name


@fact("tp")
def _tp():
    return str(_cap().tp)


@fact
def params_exact():
    return f"{_model().total_params:,}"


@fact
def params_rounded():
    return f"{_billions(round_sig(_model().total_params, LESSON_PARAM_DIGITS))} B"


@fact
def gpu_gb():
    return f"{_gb(_gpu().memory_bytes_marketed)} GB"


@fact
def gpu_gib():
    return f"{_gib(_gpu().memory_bytes_marketed)} GiB"


@fact
def gpu_runtime_mib():
    return f"{_mib(_gpu().memory_bytes_runtime)} MiB"


@fact
def gpu_runtime_gb():
    return f"{_gb(_gpu().memory_bytes_runtime)} GB"


@fact
def gpu_runtime_gib():
    return f"{_gib(_gpu().memory_bytes_runtime)} GiB"


@fact
def utilization_pct():
    """>>> utilization_pct(), unclaimed_pct()
    ('90%', '10%')
    """
    return percent_text(_cap().gpu_memory_utilization)


@fact
def unclaimed_pct():
    return percent_text(_cap().unclaimed_fraction)


@fact
def requested():
    return f"{_gb(_cap().requested_bytes)} GB"


@fact
def unclaimed():
    return f"{_gb(_cap().unclaimed_bytes)} GB"


@fact
def weights_per_gpu():
    """>>> weights_per_gpu(), weights_total()
    ('35.3 GB', '141 GB')
    """
    return f"{_gb(_cap().weights_bytes)} GB"


@fact
def weights_total():
    return f"{_gb(_cap().weights_bytes_replica)} GB"


@fact
def activation():
    return f"{_gb(_cap().activation_bytes)} GB"


@fact
def non_torch():
    return f"{_gb(_cap().non_torch_bytes)} GB"


@fact
def overhead_total():
    return f"{_gb(_cap().overhead_bytes)} GB"


@fact
def kv_per_gpu():
    """>>> kv_per_gpu(), kv_replica()
    ('32.7 GB', '131 GB')
    """
    return f"{_gb(_cap().kv_cache_bytes)} GB"


@fact
def kv_per_gpu_gib():
    return f"{_gib(_cap().kv_cache_bytes)} GiB"


@fact
def kv_replica():
    return f"{_gb(_cap().kv_cache_bytes_replica)} GB"


@fact
def kv_per_token():
    return f"{_cap().kv_bytes_per_token:,} bytes"


@fact
def kv_per_token_kib():
    return f"{_kib(_cap().kv_bytes_per_token)} KiB"


@fact
def kv_per_token_gpu():
    return f"{_cap().kv_bytes_per_token_per_gpu:,} bytes"


@fact
def kv_per_token_gpu_kib():
    return f"{_kib(_cap().kv_bytes_per_token_per_gpu)} KiB"


@fact
def kv_heads():
    return str(_model().kv_heads)


@fact("kv_heads_per_gpu")
def _kv_heads_per_gpu():
    return str(kv_heads_per_gpu(_model(), _cap().tp))


@fact
def gib_over_gb_pct():
    return percent_text(relative_change(GiB, GB), 2)


@fact
def kv_tokens():
    """The running example's KV cache in tokens (vLLM's raw figure, before whole blocks).

    >>> kv_tokens()
    '399,169'
    """
    return f"{_cap().kv_cache_tokens_raw:,}"


@fact
def kv_tokens_exact():
    return f"{_exact().kv_cache_tokens_raw:,}"


@fact
def kv_tokens_exact_change():
    return signed_percent_text(relative_change(_exact().kv_cache_tokens_raw, _cap().kv_cache_tokens_raw))


@fact
def weights_exact_per_gpu():
    return f"{_exact().weights_bytes:,.0f} bytes"


@fact
def vllm_blocks():
    return f"{_cap().kv_cache_blocks:,}"


@fact
def vllm_tokens():
    return f"{_cap().kv_cache_tokens:,}"


@fact
def block_size():
    return str(_cap().block_size)


@fact
def kv_tokens_runtime():
    return f"{_runtime().kv_cache_tokens_raw:,}"


@fact
def runtime_gain_pct():
    return percent_text(relative_change(_runtime().kv_cache_tokens_raw, _cap().kv_cache_tokens_raw), 2)


@fact
def prompt_tokens():
    return f"{PROMPT_TOKENS:,}"


@fact
def answer_tokens():
    return f"{ANSWER_TOKENS:,}"


@fact
def request_tokens():
    return f"{REQUEST_TOKENS:,}"


@fact
def kv_per_request():
    return format_bytes(kv_bytes_per_request(_model(), REQUEST_TOKENS, _cap().kv_dtype))


@fact
def requests_at_request_len():
    return f"{contiguous_max_concurrency(_cap().kv_cache_tokens_raw, REQUEST_TOKENS):,}"


@fact
def vllm_concurrency():
    return f"{vllm_maximum_concurrency(MAX_MODEL_LEN):,.2f}x"


@fact
def max_model_len():
    return f"{MAX_MODEL_LEN:,}"


@fact
def requests_at_max_len():
    """>>> requests_at_max_len()
    '48'
    """
    return f"{contiguous_max_concurrency(_cap().kv_cache_tokens_raw, MAX_MODEL_LEN):,}"


facts = facts_of(__name__)
