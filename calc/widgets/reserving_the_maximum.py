"""Widgets and facts of step 4, "Break it: reserving the maximum" (docs/lesson/04-reserving-the-maximum.md).

A contiguous KV allocator cannot grow a request's slab in place, so it reserves
the most the request might ever need, ``max_model_len`` tokens, when the request
is admitted. The replica then runs at most

    requests at once = KV cache tokens // max_model_len

and each slab holds real tokens only in proportion (prompt + answer so far) /
max_model_len. Source: the vLLM paper (Kwon et al., SOSP 2023, section 3 and
Fig. 2: "Orca (Max)"); the lesson's figure 399,169 / 8,192 = 48.

>>> out = reservation()["outputs"]
>>> out["contiguous_requests"]["value"], out["paged_requests"]["value"]
(48, 311)
>>> facts()["contiguous_requests"]
'48'
"""

from __future__ import annotations

from typing import Annotated

from calc import lesson
from calc.accuracy import published_token_share
from calc.allocation import compare_allocation, concurrency, contiguous_max_concurrency
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS
from calc.sim import presets
from calc.units import format_number, round_sig
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.framework import IntRange, output, view, widget
from calc.sim_views import preset_summary

__all__ = ["reservation", "facts",
           "LLAMA_31_CONTEXT_TOKENS", "BREAK_PRESET",
           "FIX_PRESET"]

#: Llama 3.1's context window: ``max_position_embeddings`` = 131072 in config.json of
#: meta-llama/Llama-3.1-70B (https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json).
LLAMA_31_CONTEXT_TOKENS = 131_072
LLAMA_31_CONTEXT_SOURCE = "max_position_embeddings in config.json of meta-llama/Llama-3.1-70B"
#: Tokens per KV block in vLLM (its default ``block_size``), for the paged comparison.
BLOCK_SIZE = 16
BREAK_PRESET = "step04-reserve-max"
FIX_PRESET = "step05-paged"
#: An arrival rate the contiguous replica still absorbs (Try this on the page).
CALM_RATE_PER_S = 3
LENGTH_POINTS = (1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536, 131_072)
_FREE_COLOUR = "#9e9e9e"


_LESSON_TOKENS = lesson.KV_CAPACITY_TOKENS_LESSON_GB


def _check_lengths(max_model_len: int, prompt_tokens: int, answer_tokens: int) -> int:
    length = prompt_tokens + answer_tokens
    if length > max_model_len:
        raise CalcError(
            f"max_model_len must be at least the request's prompt + answer ({length:,} tokens); got {max_model_len:,}",
            "max_model_len")
    return length


def _pct(fraction: float) -> str:
    return f"{format_number(fraction * 100)}%"


def _cache_figure(capacity: int, length: int, contiguous: int, paged: int, max_model_len: int) -> dict:
    paged_slab = -(-length // BLOCK_SIZE) * BLOCK_SIZE  # whole blocks: the last one may be part empty
    rows = {
        f"reserve {max_model_len:,}<br>({contiguous:,} requests)": (
            contiguous * length, contiguous * (max_model_len - length), capacity - contiguous * max_model_len),
        f"blocks of {BLOCK_SIZE}<br>({paged:,} requests)": (
            paged * length, paged * (paged_slab - length), capacity - paged * paged_slab),
    }
    names = list(rows)
    stacks = {
        "holding tokens": [rows[n][0] / 1000 for n in names],
        "reserved, empty (promises)": [rows[n][1] / 1000 for n in names],
        "free": [rows[n][2] / 1000 for n in names],
    }
    c_held, c_promised, c_free = rows[names[0]]
    summary = (f"The KV cache holds {capacity:,} tokens. Reserving {max_model_len:,} per request admits {contiguous:,} "
               f"requests; at their fullest they hold {c_held:,} tokens, {c_promised:,} are promised and empty, "
               f"{c_free:,} free. Blocks as needed fit {paged:,} requests of {length:,} tokens.")
    figure = bar_chart("KV cache, requests at their fullest",
                       list(reversed(names)), "thousand tokens",
                       {k: list(reversed(v)) for k, v in stacks.items()}, horizontal=True, summary=summary)
    colours = {"holding tokens": PALETTE[0], "reserved, empty (promises)": PALETTE[1], "free": _FREE_COLOUR}
    for trace in figure["data"]:
        trace["marker"]["color"] = colours[trace["name"]]
        trace["hovertemplate"] = "%{x:,.4~r} thousand tokens<extra>" + trace["name"] + "</extra>"
    layout = figure["layout"]
    layout["height"] = 250
    layout["xaxis"]["range"] = [0, round_sig(capacity / 1000 * 1.01, 4)]
    layout["xaxis"]["title"] = {"text": ""}  # the tick suffix names the unit; an axis title would sit on the legend
    layout["xaxis"]["ticksuffix"] = "k"
    layout["legend"] = {"orientation": "h", "yanchor": "top", "y": -0.25, "x": 0, "traceorder": "normal"}
    layout["margin"] = {"l": 60, "r": 20, "t": 50, "b": 40}
    return figure


def _length_figure(capacity: int, length: int, max_model_len: int, paged: int) -> dict:
    xs = sorted(set(LENGTH_POINTS) | {max_model_len})
    xs = [x for x in xs if x >= length]
    contiguous = [contiguous_max_concurrency(capacity, x) for x in xs]
    figure = line_chart(
        "Requests at once vs length reserved", "max_model_len (tokens)",
        "requests at once", {"reserve the maximum": (xs, contiguous),
                             "blocks as needed": (xs, [paged] * len(xs))},
        log_x=True, log_y=True, markers=True,
        summary=("Reserving the maximum: " + ", ".join(f"{c:,} requests at {x:,}" for x, c in zip(xs, contiguous))
                 + f". Blocks as needed: {paged:,} whatever the maximum."),
    )
    figure["data"].append({
        "type": "scatter", "mode": "markers", "name": f"yours: {contiguous_max_concurrency(capacity, max_model_len):,} at once",
        "x": [max_model_len], "y": [contiguous_max_concurrency(capacity, max_model_len)],
        "marker": {"color": PALETTE[5], "size": 13, "symbol": "diamond"},
    })
    layout = figure["layout"]
    ticks = [x for x in (2_048, 8_192, 32_768, 131_072, 524_288) if xs[0] <= x <= xs[-1]] or [xs[0]]
    layout["xaxis"]["tickvals"] = ticks  # every fourfold step, short labels: they fit a phone's width
    layout["xaxis"]["ticktext"] = [f"{x // 1024:,}K" for x in ticks]
    layout["yaxis"]["dtick"] = 1
    layout["legend"] = {"orientation": "h", "y": -0.3, "yanchor": "top", "x": 0}
    return figure


@widget
def reservation(
    max_model_len: Annotated[int, IntRange(256, 1_048_576, 256, "tokens", label="Max length (reserved per request)",
                                           help="vLLM's max_model_len")] = MAX_MODEL_LEN,
    prompt_tokens: Annotated[int, IntRange(0, 1_048_576, 1, "tokens", label="Average prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, 1_048_576, 1, "tokens", label="Average answer")] = ANSWER_TOKENS,
    kv_cache_tokens: Annotated[int, IntRange(1, 100_000_000, 1, "tokens", label="KV cache of the replica",
                                             help="step 1's figure by default")] = _LESSON_TOKENS,
):
    """Contiguous allocation: every request reserves ``max_model_len``; how many fit, and how much is promises.

    Requests at once = KV tokens // max length (:func:`calc.allocation.contiguous_max_concurrency`);
    share of a slab holding tokens over the request's life, and what paged blocks would fit
    (:func:`calc.allocation.compare_allocation`, :func:`calc.allocation.concurrency`).
    Source: vLLM paper (Kwon et al. 2023), section 3.

    >>> out = reservation(max_model_len=32_768)["outputs"]
    >>> out["contiguous_requests"]["value"], out["share_at_end"]["text"]
    (12, '3.91%')
    """
    length = _check_lengths(max_model_len, prompt_tokens, answer_tokens)
    capacity = kv_cache_tokens
    contiguous = contiguous_max_concurrency(capacity, max_model_len)
    request = [(prompt_tokens, answer_tokens)]
    shares = compare_allocation(request, max_model_len=max_model_len, block_size=BLOCK_SIZE)
    paged = concurrency(capacity, request, "paged", max_model_len=max_model_len, block_size=BLOCK_SIZE)
    if contiguous == 0:
        raise CalcError(f"max_model_len must fit in the KV cache ({capacity:,} tokens) for one request to run; "
                        f"got {max_model_len:,}", "max_model_len")
    promised = contiguous * (max_model_len - length)
    return view(
        outputs=[
            output("contiguous_requests", "Requests at once, reserving the maximum", contiguous, "requests",
                   text=f"{contiguous:,}"),
            output("formula", "Formula", f"{capacity:,} // {max_model_len:,}",
                   text=f"{capacity:,} tokens // {max_model_len:,} = {contiguous:,}"),
            output("request_tokens", "A request at its fullest", length, "tokens", text=f"{length:,} tokens"),
            output("share_at_end", "Share of its slab holding tokens, at the end", length / max_model_len, "",
                   text=_pct(length / max_model_len)),
            output("share_lifetime", "... averaged over its life", shares["max"].token_state_fraction, "",
                   text=_pct(shares["max"].token_state_fraction)),
            output("promised_tokens", "Reserved but empty, all slabs at their fullest", promised, "tokens",
                   text=f"{promised:,} tokens ({_pct(promised / capacity)} of the cache)"),
            output("paged_requests", f"Requests at once with blocks of {BLOCK_SIZE} as needed", paged, "requests",
                   text=f"{paged:,} ({format_number(paged / contiguous)}x)"),
        ],
        figures={
            "cache": _cache_figure(capacity, length, contiguous, paged, max_model_len),
            "by_length": _length_figure(capacity, length, max_model_len, paged),
        },
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, computed from calc (and the step-04/05 simulator runs).

    >>> f = facts()
    >>> f["kv_tokens"], f["max_model_len"], f["contiguous_requests"], f["paged_requests"]
    ('399,169', '8,192', '48', '311')
    """
    capacity = _LESSON_TOKENS
    length = PROMPT_TOKENS + ANSWER_TOKENS
    contiguous = contiguous_max_concurrency(capacity, MAX_MODEL_LEN)
    request = [(PROMPT_TOKENS, ANSWER_TOKENS)]
    shares = compare_allocation(request, max_model_len=MAX_MODEL_LEN, block_size=BLOCK_SIZE)
    paged = concurrency(capacity, request, "paged", max_model_len=MAX_MODEL_LEN, block_size=BLOCK_SIZE)
    promised = contiguous * (MAX_MODEL_LEN - length)
    broken, fixed = preset_summary(BREAK_PRESET), preset_summary(FIX_PRESET)
    calm = preset_summary(BREAK_PRESET, CALM_RATE_PER_S)
    orca_max, cite, paper_max_len = published_token_share("vllm-paper-fig2-max")
    quiz_len = 32_768
    sim_tokens = broken["kv_cache_tokens"]
    return {
        "kv_tokens": f"{capacity:,}",
        "prompt_tokens": f"{PROMPT_TOKENS:,}",
        "answer_tokens": f"{ANSWER_TOKENS:,}",
        "request_tokens": f"{length:,}",
        "max_model_len": f"{MAX_MODEL_LEN:,}",
        "contiguous_requests": f"{contiguous:,}",
        "reserved_tokens": f"{contiguous * MAX_MODEL_LEN:,}",
        "held_tokens": f"{contiguous * length:,}",
        "promised_tokens": f"{promised:,}",
        "promised_pct": _pct(promised / capacity),
        "share_at_end": _pct(length / MAX_MODEL_LEN),
        "share_lifetime": _pct(shares["max"].token_state_fraction),
        "paged_requests": f"{paged:,}",
        "paged_gain": format_number(paged / contiguous),
        "context_window": f"{LLAMA_31_CONTEXT_TOKENS:,}",
        "requests_at_context_window": f"{contiguous_max_concurrency(capacity, LLAMA_31_CONTEXT_TOKENS):,}",
        "quiz_max_model_len": f"{quiz_len:,}",
        "quiz_requests": f"{contiguous_max_concurrency(capacity, quiz_len):,}",
        "quiz_share": _pct(length / quiz_len),
        "sim_kv_tokens": f"{sim_tokens:,}",
        "sim_contiguous_requests": f"{contiguous_max_concurrency(sim_tokens, MAX_MODEL_LEN):,}",
        "sim_rate": format_number(presets.load_data(BREAK_PRESET)["workload"]["rate_per_s"]),
        "sim_requests": f"{broken['requests_total']:,}",
        "sim_running_max": f"{broken['running_max']:,}",
        "sim_queue_max": f"{broken['queue_depth_max']:,}",
        "sim_ttft_p50": f"{format_number(broken['ttft_p50_s'])} s",
        "sim_ttft_p99": f"{format_number(broken['ttft_p99_s'])} s",
        "sim_kv_use_peak": _pct(broken["kv_use_peak"]),
        "sim_token_share": f"{broken['kv_token_share'] * 100:.1f}%",
        "sim_gpu_util": f"{broken['gpu_util_reported'] * 100:.0f}%",
        "sim_compute_util": f"{broken['compute_utilization'] * 100:.0f}%",  # as the metrics panel shows it
        "sim_throughput": f"{format_number(broken['throughput_output_tokens_per_s'])} tokens/s",
        "sim_duration": f"{format_number(broken['duration_s'])} s",
        "fix_ttft_p99": f"{format_number(fixed['ttft_p99_s'])} s",
        "fix_running_max": f"{fixed['running_max']:,}",
        "fix_queue_max": f"{fixed['queue_depth_max']:,}",
        "calm_rate": format_number(CALM_RATE_PER_S),
        "calm_queue_max": f"{calm['queue_depth_max']:,}",
        "calm_ttft_p99": f"{format_number(calm['ttft_p99_s'])} s",
        "orca_max_pct": f"{format_number(orca_max)}%",
        "orca_max_cite": cite,
        "paper_max_len": f"{paper_max_len:,}",
        "context_window_plain": str(LLAMA_31_CONTEXT_TOKENS),
        "max_model_len_plain": str(MAX_MODEL_LEN),
        "full_prompt_plain": str(MAX_MODEL_LEN - ANSWER_TOKENS),
    }
