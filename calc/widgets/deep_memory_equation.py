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

import math
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_model
from calc.memory import DEFAULT_OVERHEAD_BYTES, UTILIZATION, memory_budget, memory_curve
from calc.memory import kv_bytes_per_token, weight_bytes
from calc.units import GB, format_bytes, format_number
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, weight_format
from calc.widgets.framework import FloatRange, IntRange, Toggle, output, view, widget

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


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose (the notebook prints the same, computed on its own).

    >>> f = facts()
    >>> f["kv_per_token"], f["users_small_gpu"], f["users_big_gpu"]
    ('131,072 bytes', '7', '101')
    """
    model = get_model(WORKSHOP_MODEL)
    w = weight_bytes(model, "bf16").total_bytes
    per_token = kv_bytes_per_token(model, "bf16")
    small = memory_budget(model, SMALL_GPU, users=EXAMPLE_USERS, context_tokens=EXAMPLE_CONTEXT)
    big = memory_budget(model, BIG_GPU, users=EXAMPLE_USERS, context_tokens=EXAMPLE_CONTEXT)
    quiz = memory_budget(model, BIG_GPU, users=1, context_tokens=QUIZ_CONTEXT)
    long_kv = CURVE_CONTEXTS[-1] * per_token
    return {
        "model_name": model.name,
        "params_b": format_number(model.total_params / 1e9),
        "weights_bf16": format_bytes(w),
        "layers": str(model.layers),
        "kv_heads": str(model.kv_heads),
        "head_dim": str(model.head_dim),
        "kv_per_token": f"{per_token:,} bytes",
        "kv_per_token_kb": format_bytes(per_token),
        "overhead": format_bytes(DEFAULT_OVERHEAD_BYTES),
        "example_users": f"{EXAMPLE_USERS:,}",
        "example_context": f"{EXAMPLE_CONTEXT:,}",
        "kv_per_user": format_bytes(small["kv_bytes_per_user"]),
        "example_kv": format_bytes(small["kv_bytes"]),
        "example_total": format_bytes(small["total_bytes"]),
        "small_gpu": small["gpu"],
        "small_gpu_memory": format_bytes(small["gpu_bytes"]),
        "utilization": f"{UTILIZATION:.0%}",
        "small_gpu_usable": format_bytes(small["usable_bytes"]),
        "small_gpu_short": format_bytes(-small["free_bytes"]) if not small["fits"] else "0 B",
        "users_small_gpu": f"{small['max_users']:,}",
        "big_gpu": big["gpu"],
        "users_big_gpu": f"{big['max_users']:,}",
        "kv_equals_weights_tokens": f"{small['kv_equals_weights_tokens']:,}",
        "kv_equals_weights_users": f"{math.ceil(small['kv_equals_weights_tokens'] / EXAMPLE_CONTEXT):,}",
        "long_context": f"{CURVE_CONTEXTS[-1]:,}",
        "long_kv": format_bytes(long_kv),
        "long_kv_share": f"{long_kv / w:.0%}",
        "window": f"{model.sliding_window:,}",
        "quiz_context": f"{QUIZ_CONTEXT:,}",
        "quiz_room": format_bytes(quiz["kv_room_bytes"]),
        "quiz_kv_per_user": format_bytes(quiz["kv_bytes_per_user"]),
        "quiz_users": f"{quiz['max_users']:,}",
    }
