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

import functools
from typing import Annotated

from calc import lesson
from calc.accuracy import published_token_share
from calc.allocation import (
    compare_allocation, concurrency, contiguous_max_concurrency, contiguous_reservation, longest_prompt_tokens,
)
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS, REQUEST_TOKENS
from calc.sim import presets
from calc.units import format_number, ratio, round_sig
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.framework import IntRange, fact, facts_of, output, view, widget
from calc.widgets.views import share_text
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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ reserving_the_maximum:name }} elsewhere: 4 uses); the
# presets' runs are cached (calc.sim_views.preset_summary).
QUIZ_MAX_MODEL_LEN = 32_768
_REQUEST = [(PROMPT_TOKENS, ANSWER_TOKENS)]


def _reservation(max_model_len: int = MAX_MODEL_LEN) -> dict:
    return contiguous_reservation(_LESSON_TOKENS, REQUEST_TOKENS, max_model_len)


@functools.cache
def _paged() -> int:
    return concurrency(_LESSON_TOKENS, _REQUEST, "paged", max_model_len=MAX_MODEL_LEN, block_size=BLOCK_SIZE)


def _broken() -> dict:
    return preset_summary(BREAK_PRESET)


def _fixed() -> dict:
    return preset_summary(FIX_PRESET)


def _calm() -> dict:
    return preset_summary(BREAK_PRESET, CALM_RATE_PER_S)


def _s(seconds: float) -> str:
    return f"{format_number(seconds)} s"


@fact
def kv_tokens():
    """>>> kv_tokens(), max_model_len(), contiguous_requests(), paged_requests()
    ('399,169', '8,192', '48', '311')
    """
    return f"{_LESSON_TOKENS:,}"


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
def max_model_len():
    return f"{MAX_MODEL_LEN:,}"


@fact
def contiguous_requests():
    return f"{_reservation()['requests']:,}"


@fact("reserved_tokens")
def _reserved_tokens():
    return f"{_reservation()['reserved_tokens']:,}"


@fact
def held_tokens():
    return f"{_reservation()['held_tokens']:,}"


@fact
def promised_tokens():
    return f"{_reservation()['promised_tokens']:,}"


@fact
def promised_pct():
    return _pct(_reservation()["promised_share"])


@fact
def share_at_end():
    return _pct(_reservation()["end_share"])


@fact
def share_lifetime():
    return _pct(compare_allocation(_REQUEST, max_model_len=MAX_MODEL_LEN, block_size=BLOCK_SIZE)["max"].token_state_fraction)


@fact
def paged_requests():
    return f"{_paged():,}"


@fact
def paged_gain():
    return format_number(ratio(_paged(), _reservation()["requests"]))


@fact
def context_window():
    return f"{LLAMA_31_CONTEXT_TOKENS:,}"


@fact
def requests_at_context_window():
    return f"{contiguous_max_concurrency(_LESSON_TOKENS, LLAMA_31_CONTEXT_TOKENS):,}"


@fact
def quiz_max_model_len():
    return f"{QUIZ_MAX_MODEL_LEN:,}"


@fact
def quiz_requests():
    return f"{contiguous_max_concurrency(_LESSON_TOKENS, QUIZ_MAX_MODEL_LEN):,}"


@fact
def quiz_share():
    return _pct(_reservation(QUIZ_MAX_MODEL_LEN)["end_share"])


@fact
def sim_kv_tokens():
    return f"{_broken()['kv_cache_tokens']:,}"


@fact
def sim_contiguous_requests():
    return f"{contiguous_max_concurrency(_broken()['kv_cache_tokens'], MAX_MODEL_LEN):,}"


@fact
def sim_rate():
    return format_number(presets.load_data(BREAK_PRESET)["workload"]["rate_per_s"])


@fact
def sim_requests():
    return f"{_broken()['requests_total']:,}"


@fact
def sim_running_max():
    return f"{_broken()['running_max']:,}"


@fact
def sim_queue_max():
    return f"{_broken()['queue_depth_max']:,}"


@fact
def sim_ttft_p50():
    return _s(_broken()["ttft_p50_s"])


@fact
def sim_ttft_p99():
    return _s(_broken()["ttft_p99_s"])


@fact
def sim_kv_use_peak():
    return _pct(_broken()["kv_use_peak"])


@fact
def sim_token_share():
    return format(_broken()["kv_token_share"], ".1%")


@fact
def sim_gpu_util():
    return share_text(_broken()["gpu_util_reported"])


@fact
def sim_compute_util():
    """As the metrics panel shows it: a whole percentage."""
    return share_text(_broken()["compute_utilization"])


@fact
def sim_throughput():
    return f"{format_number(_broken()['throughput_output_tokens_per_s'])} tokens/s"


@fact
def sim_duration():
    return _s(_broken()["duration_s"])


@fact
def fix_ttft_p99():
    return _s(_fixed()["ttft_p99_s"])


@fact
def fix_running_max():
    return f"{_fixed()['running_max']:,}"


@fact
def fix_queue_max():
    return f"{_fixed()['queue_depth_max']:,}"


@fact
def calm_rate():
    return format_number(CALM_RATE_PER_S)


@fact
def calm_queue_max():
    return f"{_calm()['queue_depth_max']:,}"


@fact
def calm_ttft_p99():
    return _s(_calm()["ttft_p99_s"])


@fact
def orca_max_pct():
    return f"{format_number(published_token_share('vllm-paper-fig2-max')[0])}%"


@fact
def orca_max_cite():
    return published_token_share("vllm-paper-fig2-max")[1]


@fact
def paper_max_len():
    return f"{published_token_share('vllm-paper-fig2-max')[2]:,}"


@fact
def context_window_plain():
    return str(LLAMA_31_CONTEXT_TOKENS)


@fact
def max_model_len_plain():
    return str(MAX_MODEL_LEN)


@fact
def full_prompt_plain():
    return str(longest_prompt_tokens(MAX_MODEL_LEN, ANSWER_TOKENS))


facts = facts_of(__name__)
