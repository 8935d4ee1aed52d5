"""Widgets and facts of the deep dive "The GPU memory equation" (docs/deep-dives/memory-equation.md).

The GPU memory equation of the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah): what one GPU must hold is fixed weights,
a KV cache that grows with every user and every token of context, and some
overhead:

    GPU memory = weights + users x context x KV bytes per token + overhead

Mistral-7B in bf16 (the workshop's example): 14.5 GB of weights and 131 KB of
KV per token. Weights from :func:`calc.memory.weight_bytes`, KV per token from
:func:`calc.memory.kv_bytes_per_token`; the overhead defaults to the activation
workspace and non-PyTorch memory :mod:`calc.memory` assumes for one GPU.

>>> b = memory_budget("mistral-7b", "l4", users=16, context_tokens=4096)
>>> round(b["weights_bytes"] / 1e9, 1), b["kv_bytes_per_token"], b["max_users"]
(14.5, 131072, 7)
>>> facts()["weights_bf16"], facts()["kv_per_token_kb"]
('14.5 GB', '131 KB')
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_model
from calc.memory import DEFAULT_OVERHEAD_BYTES, UTILIZATION, memory_budget, memory_curve
from calc.memory import kv_bytes_full_attention, kv_bytes_per_token, weight_bytes
from calc.units import GB, format_bytes, format_number, ratio
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, weight_format
from calc.widgets.framework import FloatRange, IntRange, Toggle, fact, facts_of, output, view, widget

__all__ = ["budget", "facts", "WORKSHOP_MODEL"]

#: The workshop's model ("Mistral-7B with 16-bit precision takes 14.5 GB ... 131 KB per token").
WORKSHOP_MODEL = "mistral-7b"
#: Contexts drawn on the chart, tokens (a chat turn, the lesson's 4K conversation, 8K and a long document).
CURVE_CONTEXTS = (1_024, 4_096, 8_192, 32_768)
#: The example GPUs: a 24 GB inference card and the running example's 80 GB H100.
SMALL_GPU, BIG_GPU = "l4", "h100-sxm-80gb"
EXAMPLE_USERS, EXAMPLE_CONTEXT = 16, 4_096
QUIZ_CONTEXT = 8_192



def _users_axis(limit: int) -> list[int]:
    top = max(8, limit)
    step = max(1, math.ceil(top / 16))
    return list(range(0, top + step, step))


@widget
def budget(
    model: Model = WORKSHOP_MODEL,
    weights: weight_format("Weights") = "bf16",
    kv_dtype: KvDtype = "bf16",
    gpu: Gpu = SMALL_GPU,
    users: Annotated[int, IntRange(0, 100_000, 1, "requests", label="Concurrent users")] = EXAMPLE_USERS,
    context_tokens: Annotated[int, IntRange(1, 10_000_000, 256, "tokens", label="Context per user")] = EXAMPLE_CONTEXT,
    overhead_gb: Annotated[float, FloatRange(0, 100, 0.5, "GB", label="Overhead",
                                             help="activation workspace + CUDA context and libraries")]
    = DEFAULT_OVERHEAD_BYTES / GB,
    gpu_memory_utilization: Annotated[float, FloatRange(0.05, 1.0, 0.01, label="Share of the GPU the engine takes",
                                                        help="vLLM's gpu_memory_utilization; 1.0 is the whole card")]
    = UTILIZATION,
    honour_window: Annotated[bool, Toggle(label="Free KV outside a sliding window (Mistral: 4,096 tokens)")] = False,
):
    """The memory equation on one GPU: weights + users × context × KV per token + overhead."""
    b = memory_budget(model, gpu, users=users, context_tokens=context_tokens, weights=weights, kv_dtype=kv_dtype,
                      overhead_bytes=overhead_gb * GB, gpu_memory_utilization=gpu_memory_utilization,
                      honour_window=honour_window)
    gb = lambda n: n / GB  # noqa: E731 - chart values in decimal GB
    axis = _users_axis(2 * max(users, b["max_users"]))
    contexts = sorted(set(CURVE_CONTEXTS) | {context_tokens})
    curve = memory_curve(model, contexts=contexts, users_points=axis, weights=weights, kv_dtype=kv_dtype,
                         overhead_bytes=overhead_gb * GB, honour_window=honour_window)
    series = {f"{c:,} tokens each": (axis, [gb(v) for v in curve[c]]) for c in contexts}
    series[f"{b['gpu']}: {gpu_memory_utilization:.0%} of {format_bytes(b['gpu_bytes'])}"] = (
        axis, [gb(b["usable_bytes"])] * len(axis))
    growth = line_chart(
        f"{b['model']} on one {b['gpu']}: memory against users", "concurrent users", "GPU memory needed (GB)",
        series, summary=(f"Memory needed grows in a straight line with users, steeper for longer contexts; the "
                         f"flat line is the {format_bytes(b['usable_bytes'])} the engine may use. "
                         f"At {context_tokens:,} tokens "
                         f"each, {b['max_users']:,} users fit."))
    growth["data"][-1]["line"] = {"color": "#757575", "width": 2, "dash": "dash"}
    free = max(b["free_bytes"], 0.0)
    stacks = {"Weights": [gb(b["weights_bytes"])], "KV cache": [gb(b["kv_bytes"])],
              "Overhead": [gb(b["overhead_bytes"])], "Free": [gb(free)]}
    parts = bar_chart(f"{users:,} users × {context_tokens:,} tokens", ["this load"], "GB", stacks, horizontal=True,
                      summary=(f"Weights {format_bytes(b['weights_bytes'])}, KV cache {format_bytes(b['kv_bytes'])}, "
                               f"overhead {format_bytes(b['overhead_bytes'])} against "
                               f"{format_bytes(b['usable_bytes'])} the engine may use."))
    parts["data"][3]["marker"] = {"color": "#bdbdbd"}
    parts["layout"]["legend"] = {"orientation": "h", "y": -0.7, "yanchor": "top", "x": 0}
    parts["layout"]["margin"] = {"l": 60, "r": 20, "t": 40, "b": 90}
    parts["layout"]["height"] = 260
    usable = gb(b["usable_bytes"])
    parts["layout"]["shapes"] = [{"type": "line", "x0": usable, "x1": usable, "yref": "paper",
                                  "y0": 0, "y1": 1, "line": {"dash": "dot", "width": 2, "color": PALETTE[5]}}]
    verdict = (f"fits, {format_bytes(b['free_bytes'])} free" if b["fits"]
               else f"does not fit: {format_bytes(-b['free_bytes'])} short")
    return view(
        outputs=[
            output("weights_bytes", "Weights", b["weights_bytes"], "B", text=format_bytes(b["weights_bytes"])),
            output("kv_bytes_per_token", "KV per token", b["kv_bytes_per_token"], "B",
                   text=f"{b['kv_bytes_per_token']:,} B ({format_bytes(b['kv_bytes_per_token'])})"),
            output("kv_bytes", f"KV cache, {users:,} × {b['kv_tokens_per_user']:,} tokens", b["kv_bytes"], "B",
                   text=format_bytes(b["kv_bytes"])),
            output("total_bytes", "Needed", b["total_bytes"], "B", text=format_bytes(b["total_bytes"])),
            # The value is the margin: positive when it fits, negative when short (a margin, not a size).
            output("verdict", f"On one {b['gpu']} ({gpu_memory_utilization:.0%} of {format_bytes(b['gpu_bytes'])})",
                   b["free_bytes"], "B margin",
                   text=verdict),
            output("max_users", f"Users that fit at {context_tokens:,} tokens", b["max_users"], "users",
                   text=f"{b['max_users']:,}"),
            output("max_context_tokens", f"Context each of {users:,} users may reach", b["max_context_tokens"] or 0,
                   "tokens", text="any (no users)" if b["max_context_tokens"] is None
                   else f"{b['max_context_tokens']:,} tokens"),
            output("kv_equals_weights_tokens", "Tokens in flight at which KV outweighs the weights",
                   b["kv_equals_weights_tokens"], "tokens", text=f"{b['kv_equals_weights_tokens']:,} tokens"),
        ],
        figures={"growth": growth, "parts": parts},
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ deep_memory_equation:name }} elsewhere: 2 uses).
def _model():
    return get_model(WORKSHOP_MODEL)


def _weights_bytes() -> float:
    return weight_bytes(_model(), "bf16").total_bytes


def _per_token() -> int:
    return kv_bytes_per_token(_model(), "bf16")


@functools.cache
def _budget(gpu: str, users: int = EXAMPLE_USERS, context_tokens: int = EXAMPLE_CONTEXT) -> dict:
    return memory_budget(_model(), gpu, users=users, context_tokens=context_tokens)


def _small() -> dict:
    return _budget(SMALL_GPU)


def _quiz() -> dict:
    return _budget(BIG_GPU, 1, QUIZ_CONTEXT)


def _long_kv() -> int:
    return kv_bytes_full_attention(_model(), CURVE_CONTEXTS[-1], "bf16")


def _billions(count: float) -> str:
    return format_number(count / 1e9)


@fact
def model_name():
    return _model().name


@fact
def params_b():
    return _billions(_model().total_params)


@fact
def weights_bf16():
    return format_bytes(_weights_bytes())


@fact
def layers():
    return str(_model().layers)


@fact
def kv_heads():
    return str(_model().kv_heads)


@fact
def head_dim():
    return str(_model().head_dim)


@fact
def kv_per_token():
    """>>> kv_per_token(), users_small_gpu(), users_big_gpu()
    ('131,072 bytes', '7', '101')
    """
    return f"{_per_token():,} bytes"


@fact
def kv_per_token_kb():
    return format_bytes(_per_token())


@fact
def overhead():
    return format_bytes(DEFAULT_OVERHEAD_BYTES)


@fact
def example_users():
    return f"{EXAMPLE_USERS:,}"


@fact
def example_context():
    return f"{EXAMPLE_CONTEXT:,}"


@fact
def kv_per_user():
    return format_bytes(_small()["kv_bytes_per_user"])


@fact
def example_kv():
    return format_bytes(_small()["kv_bytes"])


@fact
def example_total():
    return format_bytes(_small()["total_bytes"])


@fact
def small_gpu():
    return _small()["gpu"]


@fact
def small_gpu_memory():
    return format_bytes(_small()["gpu_bytes"])


@fact
def utilization():
    return f"{UTILIZATION:.0%}"


@fact
def small_gpu_usable():
    return format_bytes(_small()["usable_bytes"])


@fact
def small_gpu_short():
    return format_bytes(-_small()["free_bytes"]) if not _small()["fits"] else "0 B"


@fact
def users_small_gpu():
    return f"{_small()['max_users']:,}"


@fact
def big_gpu():
    return _budget(BIG_GPU)["gpu"]


@fact
def users_big_gpu():
    return f"{_budget(BIG_GPU)['max_users']:,}"


@fact
def kv_equals_weights_tokens():
    return f"{_small()['kv_equals_weights_tokens']:,}"


@fact
def kv_equals_weights_users():
    return f"{math.ceil(ratio(_small()['kv_equals_weights_tokens'], EXAMPLE_CONTEXT)):,}"


@fact
def long_context():
    return f"{CURVE_CONTEXTS[-1]:,}"


@fact
def long_kv():
    return format_bytes(_long_kv())


@fact
def long_kv_share():
    return f"{ratio(_long_kv(), _weights_bytes()):.0%}"


@fact
def window():
    return f"{_model().sliding_window:,}"


@fact
def quiz_context():
    return f"{QUIZ_CONTEXT:,}"


@fact
def quiz_room():
    return format_bytes(_quiz()["kv_room_bytes"])


@fact
def quiz_kv_per_user():
    return format_bytes(_quiz()["kv_bytes_per_user"])


@fact
def quiz_users():
    return f"{_quiz()['max_users']:,}"


facts = facts_of(__name__)
