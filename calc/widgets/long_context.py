"""Widgets and facts of step 13, "What a long context costs" (docs/lesson/13-long-context.md).

A request's KV cache grows linearly with its context; its prefill grows faster,
because each prompt token attends to every token before it (quadratic attention
on top of the linear matmuls). On the running example (Llama 3.1 70B, bf16, TP 4
on H100s) one 100,000-token request holds the KV of 78 ordinary 1,280-token
conversations (:func:`calc.context.requests_displaced`). FlashAttention keeps the
attention scores in on-chip SRAM instead of HBM; it changes neither the KV cache
nor the FLOPs.

>>> long_vs_short()["outputs"]["conversations"]["value"]
78
>>> out = context_growth()["outputs"]
>>> out["kv_bytes"]["text"], out["prefill_s"]["text"]
("32.8 GB (25.1% of the replica's KV cache)", '14.3 s on an idle replica')
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.context import (
    context_cost, cost_growth, prefill_flops, replica_context_fit, requests_displaced, scores_against_gpu,
    unfused_attention_scores_bytes,
)
from calc.lesson import replica_kv_tokens
from calc.memory import kv_bytes_per_request, kv_bytes_per_token_per_gpu, query_heads_per_gpu
from calc.units import GB, TB, format_bytes, format_number
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.controls import KvDtype
from calc.widgets.framework import IntRange, fact, facts_of, output, table, view, widget
from calc.widgets.views import share_text

__all__ = ["LONG_TOKENS", "SHORT_TOKENS", "MAX_CONTEXT_TOKENS", "replica_kv_tokens", "context_growth",
           "long_vs_short", "flash_attention", "facts"]

MODEL = lesson.REPLICA["model"]
GPU = lesson.REPLICA["gpu"]
TP = lesson.REPLICA["tp"]
#: The lesson's long request and its ordinary conversation (a 1,024-token prompt and a 256-token answer).
LONG_TOKENS = 100_000
SHORT_TOKENS = 1_280
#: Llama 3.1's context window (max_position_embeddings in its config.json).
MAX_CONTEXT_TOKENS = 131_072
#: Context lengths of the charts: powers of two from 1,024 to the window.
CHART_CONTEXTS = tuple(2 ** k for k in range(10, 18))
#: A tenth of the long request: the page compares the two to show growth faster than linear.
TEN_K_TOKENS = LONG_TOKENS // 10
#: The reference length of the growth chart: a typical prompt.
BASE_TOKENS = 1_024


def _cost(n: int) -> dict:
    return context_cost(MODEL, GPU, n, tp=TP)


@widget
def context_growth(
    context_tokens: Annotated[int, IntRange(1, MAX_CONTEXT_TOKENS, 1_024, "tokens",
                                            label="Context of one request")] = LONG_TOKENS,
):
    """KV memory grows linearly with the context, prefill faster: one request on the running example."""
    cost = _cost(context_tokens)
    base = _cost(BASE_TOKENS)
    capacity = replica_kv_tokens()
    share = cost["kv_tokens"] / capacity
    kv_growth = cost["kv_bytes"] / base["kv_bytes"]
    prefill_growth = cost["prefill_s"] / base["prefill_s"]
    flops_growth = cost["prefill_flops"] / base["prefill_flops"]

    xs = list(CHART_CONTEXTS)
    rows = [_cost(n) for n in xs]
    growth = line_chart(
        f"Growth against a {BASE_TOKENS:,}-token request", "context (tokens)", f"× the {BASE_TOKENS:,}-token cost",
        {"KV cache (linear)": (xs, [r["kv_bytes"] / base["kv_bytes"] for r in rows]),
         "prefill FLOPs": (xs, [r["prefill_flops"] / base["prefill_flops"] for r in rows]),
         "prefill time": (xs, [r["prefill_s"] / base["prefill_s"] for r in rows])},
        log_x=True, log_y=True, markers=True,
        summary=(f"From {xs[0]:,} to {xs[-1]:,} tokens the KV cache grows {rows[-1]['kv_bytes'] / base['kv_bytes']:,.0f}×, "
                 f"the prefill FLOPs {rows[-1]['prefill_flops'] / base['prefill_flops']:,.0f}× and the prefill time "
                 f"{rows[-1]['prefill_s'] / base['prefill_s']:,.0f}×."),
    )
    _context_ticks(growth)
    labels = [f"{n // 1024}K" for n in xs]
    split = [prefill_flops(MODEL, n) for n in xs]
    flops = bar_chart(
        "Prefill FLOPs: matmuls against attention", labels, "share of the prefill's FLOPs",
        {"matmuls (linear in the prompt)": [s["linear_flops"] / s["total_flops"] for s in split],
         "attention (quadratic)": [s["attention_flops"] / s["total_flops"] for s in split]},
        summary="Attention's share of the prefill FLOPs: " + ", ".join(
            f"{label} {s['attention_share'] * 100:.0f}%" for label, s in zip(labels, split)) + ".",
    )
    flops["layout"]["yaxis"]["tickformat"] = ".0%"
    flops["layout"]["xaxis"]["title"] = {"text": "context (tokens)"}
    _legend_below(flops, height=400)
    return view(
        outputs=[
            output("kv_bytes", "KV cache of the request", cost["kv_bytes"], "B",
                   text=f"{format_bytes(cost['kv_bytes'])} ({share * 100:.1f}% of the replica's KV cache)"),
            output("prefill_s", "Prefill (time to first token)", cost["prefill_s"], "s",
                   text=f"{format_number(cost['prefill_s'])} s on an idle replica"),
            output("growth", f"Against {BASE_TOKENS:,} tokens", prefill_growth, "",
                   text=(f"context {context_tokens / BASE_TOKENS:,.3g}×, KV {kv_growth:,.3g}×, "
                         f"prefill FLOPs {flops_growth:,.3g}×, prefill time {prefill_growth:,.3g}×")),
            output("attention_share", "Attention's share of the prefill FLOPs", cost["attention_share"], "",
                   text=f"{cost['attention_share'] * 100:.0f}%"),
            output("decode_step_ms", "One decode step of this request alone", cost["decode_step_s"] * 1000, "ms",
                   text=f"{cost['decode_step_s'] * 1000:.1f} ms (at {BASE_TOKENS:,} tokens: "
                        f"{base['decode_step_s'] * 1000:.1f} ms)"),
        ],
        figures={"growth": growth, "flops": flops},
    )


@widget
def long_vs_short(
    long_tokens: Annotated[int, IntRange(1_024, MAX_CONTEXT_TOKENS, 1_024, "tokens",
                                         label="Long request")] = LONG_TOKENS,
    short_tokens: Annotated[int, IntRange(64, 32_768, 64, "tokens", label="Ordinary conversation")] = SHORT_TOKENS,
    kv_dtype: KvDtype = "bf16",
):
    """How many ordinary conversations one long request displaces from the replica's KV cache."""
    model = get_model(MODEL)
    r = requests_displaced(model, long_tokens=long_tokens, short_tokens=short_tokens, kv_dtype=kv_dtype)
    capacity = replica_kv_tokens(kv_dtype)
    if long_tokens > capacity:
        long_fit = 0
    else:
        long_fit = capacity // long_tokens
    short_only = capacity // short_tokens
    beside_long = max(0, capacity - long_tokens) // short_tokens if long_tokens <= capacity else 0
    placed_long = long_tokens if long_tokens <= capacity else 0
    figure = bar_chart(
        "The replica's KV cache, in tokens", ["ordinary only", "one long request"], "tokens",
        {"the long request": [0, placed_long],
         f"{short_tokens:,}-token conversations": [short_only * short_tokens, beside_long * short_tokens],
         "free": [capacity - short_only * short_tokens, capacity - placed_long - beside_long * short_tokens]},
        horizontal=True,
        summary=(f"{capacity:,} tokens hold {short_only:,} conversations of {short_tokens:,} tokens, or one "
                 f"{long_tokens:,}-token request and {beside_long:,} conversations."),
    )
    for trace, colour in zip(figure["data"], (PALETTE[5], PALETTE[0], "#bdbdbd")):
        trace["marker"]["color"] = colour
    _legend_below(figure, height=300)
    _no_value_title(figure, "xaxis")
    figure["layout"]["yaxis"]["autorange"] = "reversed"  # the bars top to bottom in the order named
    return view(
        outputs=[
            output("conversations", "Conversations one long request displaces", r["conversations"], "",
                   text=f"{r['conversations']:,} ({format_number(r['ratio'])}×)"),
            output("long_kv_bytes", "KV of the long request", r["long_kv_bytes"], "B",
                   text=format_bytes(r["long_kv_bytes"])),
            output("short_kv_bytes", "KV of one conversation", r["short_kv_bytes"], "B",
                   text=format_bytes(r["short_kv_bytes"])),
            output("long_share", "Share of the replica's KV cache", long_tokens / capacity, "",
                   text=f"{long_tokens / capacity * 100:.1f}% of {capacity:,} tokens"),
            output("fit", "At once on the replica", long_fit, "",
                   text=f"{long_fit:,} long requests, or {short_only:,} conversations"),
        ],
        figures={"cache": figure},
    )


def _legend_below(figure: dict, *, height: int) -> None:
    """Put a bar chart's legend under its axis title (bar_chart's default sits on it), left-aligned."""
    figure["layout"]["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.22, "yanchor": "top"}
    figure["layout"]["margin"].update(l=20, b=110)
    figure["layout"]["height"] = height


def _context_ticks(figure: dict) -> None:
    """Label a log context axis at the chart's own points (1K, 2K, ... 128K) instead of Plotly's minor ticks."""
    ticks = CHART_CONTEXTS[::2]  # every other point: four labels fit a phone's width
    figure["layout"]["xaxis"].update(tickvals=list(ticks), ticktext=[f"{n // 1024}K" for n in ticks])


def _no_value_title(figure: dict, axis: str) -> None:
    """Drop a short bar chart's value-axis title (its unit is in the chart's title), which the legend would hit."""
    figure["layout"][axis]["title"] = {"text": ""}
    figure["layout"]["legend"]["y"] = -0.16
    figure["layout"]["margin"]["b"] = 60


def _scores_per_gpu(n: int) -> dict:
    scores = unfused_attention_scores_bytes(MODEL, n)
    return {"matrix_bytes_per_layer": scores["matrix_bytes_per_layer"] / TP,
            "hbm_traffic_bytes": scores["hbm_traffic_bytes"] / TP}


def _io_bytes_per_gpu(n: int) -> float:
    """Q, K, V read and the output written once per layer, per GPU: the least any attention moves."""
    model = get_model(MODEL)
    heads = model.attention_heads // TP
    kv_per_token = kv_bytes_per_token_per_gpu(model, TP) // model.layers  # K and V of one layer, this GPU's heads
    q_and_o = 2 * heads * model.head_dim * 2  # bf16 activations
    return float(n * (q_and_o + kv_per_token) * model.layers)


@widget
def flash_attention(
    context_tokens: Annotated[int, IntRange(1_024, MAX_CONTEXT_TOKENS, 1_024, "tokens",
                                            label="Prompt")] = LONG_TOKENS,
):
    """What FlashAttention changes (the scores' trips through HBM) and what it does not (KV cache, FLOPs)."""
    model = get_model(MODEL)
    gpu = get_gpu(GPU)
    n = context_tokens
    scores = _scores_per_gpu(n)
    io = _io_bytes_per_gpu(n)
    kv_gpu = kv_bytes_per_request(model, n) / TP
    attention_flops = prefill_flops(model, n)["attention_flops"] / TP
    bandwidth = gpu.hbm_bytes_per_s
    move_s = scores["hbm_traffic_bytes"] / bandwidth
    prefill_s = _cost(n)["prefill_s"]
    memory = gpu.memory_bytes_marketed

    xs = list(CHART_CONTEXTS)
    figure = line_chart(
        "Per GPU: the score matrix against the KV cache", "prompt (tokens)", "GB",
        {"scores of one layer, if written to HBM": (xs, [_scores_per_gpu(x)["matrix_bytes_per_layer"] / GB for x in xs]),
         "KV cache of the request (all layers)": (xs, [kv_bytes_per_request(model, x) / TP / GB for x in xs]),
         f"GPU memory ({format_number(memory / GB)} GB)": (xs, [memory / GB] * len(xs))},
        log_x=True, log_y=True, markers=True,
        summary=(f"One layer's attention scores grow with the square of the prompt: "
                 f"{format_bytes(_scores_per_gpu(xs[0])['matrix_bytes_per_layer'])} at {xs[0]:,} tokens, "
                 f"{format_bytes(_scores_per_gpu(xs[-1])['matrix_bytes_per_layer'])} at {xs[-1]:,}; the KV cache "
                 f"grows linearly, to {format_bytes(kv_bytes_per_request(model, xs[-1]) / TP)} per GPU."),
    )
    figure["data"][2]["line"].update(dash="dash", color="#999999")
    figure["data"][2]["mode"] = "lines"
    _context_ticks(figure)
    rows = [
        ["Attention FLOPs of the prefill", f"{attention_flops / 1e15:,.3g} PFLOP", "the same", "no"],
        ["KV cache of the request", format_bytes(kv_gpu), "the same", "no"],
        ["Score matrix of one layer in HBM", format_bytes(scores["matrix_bytes_per_layer"]),
         "none: tiles in on-chip SRAM", "yes"],
        ["HBM traffic of the scores", _tb(scores["hbm_traffic_bytes"]), "none", "yes"],
        ["Q, K, V in and output out (at least)", format_bytes(io), "the same", "no"],
    ]
    return view(
        outputs=[
            output("scores_bytes", "Scores of one layer, if materialised", scores["matrix_bytes_per_layer"], "B",
                   text=(f"{format_bytes(scores['matrix_bytes_per_layer'])} per GPU "
                         f"({scores['matrix_bytes_per_layer'] / memory:,.3g}× its memory)")),
            output("scores_traffic_bytes", "Their HBM traffic over the prefill", scores["hbm_traffic_bytes"], "B",
                   text=f"{_tb(scores['hbm_traffic_bytes'])} per GPU, {format_number(move_s)} s at "
                        f"{format_number(bandwidth / 1e12)} TB/s"),
            output("prefill_s", "The whole prefill with FlashAttention", prefill_s, "s",
                   text=f"{format_number(prefill_s)} s"),
            output("kv_bytes", "KV cache (unchanged)", kv_gpu, "B", text=f"{format_bytes(kv_gpu)} per GPU"),
            output("attention_flops", "Attention FLOPs (unchanged)", attention_flops, "FLOP",
                   text=f"{attention_flops / 1e15:,.3g} PFLOP per GPU"),
        ],
        figures={"scores": figure},
        tables={"compare": table(["Per GPU, one prefill", "Attention that writes its scores", "FlashAttention",
                                  "Changes?"], rows, caption=f"A {n:,}-token prompt on the running example")},
    )


def _tb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / TB)} TB"


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ long_context:name }} elsewhere: 11 uses).
@functools.cache
def _fact_cost(n: int) -> dict:
    return _cost(n)


@functools.cache
def _displaced() -> dict:
    return requests_displaced(get_model(MODEL), long_tokens=LONG_TOKENS, short_tokens=SHORT_TOKENS)


@functools.cache
def _fit() -> dict:
    return replica_context_fit(replica_kv_tokens(), long_tokens=LONG_TOKENS, short_tokens=SHORT_TOKENS,
                               window_tokens=MAX_CONTEXT_TOKENS)


def _growth_10x() -> dict:
    return cost_growth(_fact_cost(TEN_K_TOKENS), _fact_cost(LONG_TOKENS))


def _scores_on_gpu() -> dict:
    scores = _scores_per_gpu(LONG_TOKENS)
    return scores_against_gpu(scores["matrix_bytes_per_layer"], scores["hbm_traffic_bytes"], get_gpu(GPU))


def _ms(seconds: float, decimals: int) -> str:
    return f"{seconds * 1000:,.{decimals}f} ms"


@fact
def long_tokens():
    return f"{LONG_TOKENS:,}"


@fact
def short_tokens():
    return f"{SHORT_TOKENS:,}"


@fact
def window_tokens():
    return f"{MAX_CONTEXT_TOKENS:,}"


@fact
def ten_k_tokens():
    return f"{TEN_K_TOKENS:,}"


@fact
def conversations():
    """One long request holds the KV of this many ordinary conversations.

    >>> conversations(), long_share_pct()
    ('78', '25.1%')
    """
    return f"{_displaced()['conversations']}"


@fact
def ratio():
    return format_number(_displaced()["ratio"])


@fact
def long_kv():
    return format_bytes(_displaced()["long_kv_bytes"])


@fact
def short_kv():
    return format_bytes(_displaced()["short_kv_bytes"])


@fact
def replica_tokens():
    return f"{replica_kv_tokens():,}"


@fact
def long_share_pct():
    return format(_fit()['long_share'], '.1%')


@fact
def long_fit():
    return f"{_fit()['long_fit']}"


@fact
def window_fit():
    return f"{_fit()['window_fit']}"


@fact
def beside_window():
    return f"{_fit()['beside_window']}"


@fact
def short_fit():
    return f"{_fit()['short_fit']}"


@fact
def beside_long():
    return f"{_fit()['beside_long']}"


@fact
def prefill_short_ms():
    return _ms(_fact_cost(SHORT_TOKENS)["prefill_s"], 0)


@fact
def prefill_10k_s():
    return f"{format_number(_fact_cost(TEN_K_TOKENS)['prefill_s'])} s"


@fact
def prefill_long_s():
    """>>> prefill_long_s()
    '14.3 s'
    """
    return f"{format_number(_fact_cost(LONG_TOKENS)['prefill_s'])} s"


@fact
def prefill_window_s():
    return f"{format_number(_fact_cost(MAX_CONTEXT_TOKENS)['prefill_s'])} s"


@fact
def prefill_10x_ratio():
    return f"{_growth_10x()['prefill_ratio']:.1f}"


@fact
def kv_10x_ratio():
    return f"{_growth_10x()['kv_ratio']:.0f}"


@fact
def attention_share_short_pct():
    return share_text(_fact_cost(SHORT_TOKENS)["attention_share"])


@fact
def attention_share_long_pct():
    return share_text(_fact_cost(LONG_TOKENS)["attention_share"])


@fact
def decode_short_ms():
    return _ms(_fact_cost(SHORT_TOKENS)["decode_step_s"], 1)


@fact
def decode_long_ms():
    return _ms(_fact_cost(LONG_TOKENS)["decode_step_s"], 1)


@fact
def decode_added_ms():
    return _ms(cost_growth(_fact_cost(SHORT_TOKENS), _fact_cost(LONG_TOKENS))["decode_added_s"], 1)


@fact
def scores_layer_gpu():
    return format_bytes(_scores_per_gpu(LONG_TOKENS)["matrix_bytes_per_layer"])


@fact
def scores_over_memory():
    return f"{_scores_on_gpu()['memory_multiple']:.0f}"


@fact
def scores_traffic_gpu():
    return _tb(_scores_per_gpu(LONG_TOKENS)["hbm_traffic_bytes"])


@fact
def scores_move_s():
    return f"{format_number(_scores_on_gpu()['move_s'])} s"


@fact
def heads_per_gpu():
    return f"{query_heads_per_gpu(get_model(MODEL), TP)}"


@fact
def layers():
    return f"{get_model(MODEL).layers}"


facts = facts_of(__name__)
