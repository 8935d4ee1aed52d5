"""Widgets and facts of step 5, "Paged attention" (docs/lesson/05-paged-attention.md).

PagedAttention stores a sequence's KV cache in fixed blocks of ``block_size``
tokens, found through a block table, and takes a new block only when the last
one is full. A sequence then holds

    blocks = ceil((prompt + tokens generated so far) / block_size)

and wastes at most ``block_size - 1`` token slots, in its last block. Source:
Kwon et al., "Efficient Memory Management for Large Language Model Serving with
PagedAttention", SOSP 2023, section 4 (arXiv 2309.06180).

>>> allocation_shares()["outputs"]["paged_share"]["text"]
'98.5% (measured 96.3%)'
>>> facts()["paged_requests"], facts()["waste_bound_tokens"]
('311', '15')
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.accuracy import published_token_share, token_state_percent
from calc.allocation import (
    POLICIES, blocks_for, compare_allocation, concurrency, contiguous_max_concurrency, contiguous_promise_tokens,
    paged_reservation, paged_waste_bound_tokens, requests_in_flight, reserved_tokens, waste_percent,
)
from calc.catalog import get_model
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS, REQUEST_TOKENS
from calc.memory import kv_bytes_per_request, kv_bytes_per_token
from calc.sim import presets
from calc.sim.fleet import Fleet, simulate_fleet
from calc.sim.live import MAX_EVENTS_PER_FRAME, block_map
from calc.sim_views import BREAK_PRESET, FIX_PRESET, SIDES, side_by_side_scenarios
from calc.sim_views import preset_summary, scenario_for
from calc.units import NS_PER_S, format_bytes, format_number, ratio, round_sig
from calc.widgets.charts import PALETTE, bar_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.views import share_text

__all__ = ["allocation_shares", "side_by_side", "side_by_side_scenarios", "facts", "POLICY_LABELS",
           "SATURATION_PRESET"]

#: The policies of the vLLM paper's Fig. 2, in calc's names (calc.allocation.POLICIES).
POLICY_LABELS = {
    "max": "Reserve the maximum (Orca Max)",
    "pow2": "Reserve a power of two (Orca Pow2)",
    "oracle": "Reserve the true length (Orca Oracle)",
    "paged": "Paged blocks (vLLM)",
}
#: The measurement of each policy in calc/data/measurements.json (vLLM paper, Fig. 2).
PUBLISHED_IDS = {p: f"vllm-paper-fig2-{p}" for p in POLICIES}
#: The paper's ShareGPT request means (Fig. 11), as recorded with the Fig. 2 measurements.
SHAREGPT_PROMPT_TOKENS = 161.31
SHAREGPT_OUTPUT_TOKENS = 337.99
#: Requests in the ShareGPT-like sample (as in :func:`calc.accuracy.token_state_percent`).
SHAREGPT_REQUESTS = 2000
#: Short chart labels (two lines each), so the four groups fit side by side on a phone.
TICK_LABELS = {"max": "Orca<br>Max", "pow2": "Orca<br>Pow2", "oracle": "Orca<br>Oracle", "paged": "vLLM<br>paged"}
WORKLOADS = (("sharegpt", "ShareGPT-like, as in the paper"), ("lesson", "The running example (1,024 + 256)"))
SATURATION_PRESET = "step06-twice-the-traffic"
#: Values the page's "Try this" asks the reader to enter.
BIG_BLOCK = 256
LONG_MAX_LEN = 32_768
_LESSON_TOKENS = lesson.KV_CAPACITY_TOKENS_LESSON_GB


def _pct(fraction: float) -> str:
    return f"{format_number(fraction * 100)}%"


def _workload_requests(workload: str, max_model_len: int):
    if workload == "lesson":
        if PROMPT_TOKENS + ANSWER_TOKENS > max_model_len:
            raise CalcError(f"max_model_len must hold the running example's {PROMPT_TOKENS + ANSWER_TOKENS:,} tokens; "
                            f"got {max_model_len:,}", "max_model_len")
        return [(PROMPT_TOKENS, ANSWER_TOKENS)]
    return list(_sharegpt_requests(max_model_len))


@functools.lru_cache(maxsize=8)
def _sharegpt_requests(max_model_len: int) -> tuple:
    """The paper-like sample once per maximum length (the widget recomputes on every control change)."""
    from calc.allocation import sharegpt_like_requests

    return tuple(sharegpt_like_requests(SHAREGPT_REQUESTS, seed=0, mean_prompt_tokens=SHAREGPT_PROMPT_TOKENS,
                                        mean_output_tokens=SHAREGPT_OUTPUT_TOKENS, max_model_len=max_model_len))


@widget
def allocation_shares(
    workload: Annotated[str, Choice(WORKLOADS, label="Requests")] = "sharegpt",
    max_model_len: Annotated[int, IntRange(512, 131_072, 512, "tokens", label="Max length",
                                           help="what contiguous allocation reserves")] = 2_048,
    block_size: Annotated[int, IntRange(1, 256, 1, "tokens", label="Block size", help="vLLM's default is 16")] = 16,
):
    """Share of reserved KV memory holding token states per allocation policy: calc against the vLLM paper.

    calc: :func:`calc.allocation.token_state_fraction` averaged over each request's
    life (reservation and the last block's slack; no external fragmentation, so
    its contiguous shares are upper bounds). Published: the vLLM paper's Fig. 2,
    read from ``calc/data/measurements.json``. Requests at once: the lesson's
    KV cache over each policy's mean peak reservation (as :func:`calc.allocation.concurrency`).
    Every policy comes from one :func:`calc.allocation.compare_allocation` over the
    same requests, and the ShareGPT-like sample is drawn once per maximum length.

    >>> out = allocation_shares(workload="lesson", max_model_len=8192)["outputs"]
    >>> out["max_share"]["text"], out["paged_share"]["text"], out["paged_requests"]["value"]
    ('14.1% (measured 20.4%)', '99.4% (measured 96.3%)', 311)
    """
    requests = _workload_requests(workload, max_model_len)
    # One pass per policy over the checked requests: shares over each request's life and mean peak reservations.
    results = compare_allocation(requests, max_model_len=max_model_len, block_size=block_size)
    shares = {p: results[p].token_state_fraction for p in POLICIES}
    published = {p: published_token_share(PUBLISHED_IDS[p])[0] / 100 for p in POLICIES}
    fits = {p: int(_LESSON_TOKENS // results[p].peak_reserved_tokens_per_request) for p in POLICIES}
    cite = published_token_share(PUBLISHED_IDS["paged"])[1]
    paper_len = published_token_share(PUBLISHED_IDS["paged"])[2]
    labels = [TICK_LABELS[p] for p in POLICIES]
    figure = bar_chart(
        "KV memory holding tokens", labels, "share of reserved memory",
        {"calc, these requests": [shares[p] for p in POLICIES],
         f"measured ({cite})": [published[p] for p in POLICIES]},
        summary=(f"Measured on ShareGPT with a {paper_len:,}-token maximum. calc for these requests: " + ", ".join(f"{POLICY_LABELS[p]} {_pct(shares[p])}" for p in POLICIES)
                 + f". Measured in the {cite}: " + ", ".join(f"{_pct(published[p])}" for p in POLICIES) + "."),
    )
    layout = figure["layout"]
    layout["barmode"] = "group"
    layout["yaxis"]["tickformat"] = ".0%"
    layout["yaxis"]["range"] = [0, 1.05]
    layout["xaxis"]["tickangle"] = 0
    layout["legend"] = {"orientation": "h", "yanchor": "top", "y": -0.3, "x": 0}
    layout["margin"] = {"l": 60, "r": 20, "t": 50, "b": 60}
    layout["height"] = 420
    figure["data"][1]["marker"]["color"] = PALETTE[7]
    for trace in figure["data"]:
        trace["hovertemplate"] = "%{y:.1%}<extra>" + trace["name"] + "</extra>"
    per_token = kv_bytes_per_token(get_model(lesson.REPLICA["model"]), lesson.REPLICA["kv_dtype"])
    bound = paged_waste_bound_tokens(block_size)
    outs = [
        output("paged_share", "Paged: memory holding tokens", shares["paged"], "",
               text=f"{_pct(shares['paged'])} (measured {_pct(published['paged'])})"),
        output("max_share", "Reserve the maximum: holding tokens", shares["max"], "",
               text=f"{_pct(shares['max'])} (measured {_pct(published['max'])})"),
        output("paged_requests", f"Paged: requests at once in {_LESSON_TOKENS:,} tokens", fits["paged"], "requests",
               text=f"{fits['paged']:,}"),
        output("max_requests", "Reserve the maximum: requests at once", fits["max"], "requests",
               text=f"{fits['max']:,}"),
        output("waste_bound", "Most a sequence wastes, paged", bound, "tokens",
               text=f"{bound:,} tokens ({format_bytes(bound * per_token)} on the 70B)"),
    ]
    rows = [[POLICY_LABELS[p], _pct(shares[p]), _pct(published[p]), f"{fits[p]:,}"] for p in POLICIES]
    policies = table(["Allocation", "Holding tokens (calc)", f"Measured ({cite})",
                      f"Requests at once in {_LESSON_TOKENS:,} tokens"], rows,
                     caption="Every policy for these requests. The true length is a bound, not a policy: nobody "
                             "knows an answer's length before it is generated.")
    return view(outputs=outs, figures={"shares": figure}, tables={"policies": policies})


# --- both allocations in one live run --------------------------------------------------------------------

SHORT = {"c": "reserve max", "p": "paged"}
_CHARTS = (
    ("queue", "Requests waiting in the queue", "requests", None, [("queue_depth", "")]),
    ("running", "Requests running (the batch)", "requests", None, [("running", "")]),
    ("kv", "KV cache: reserved and holding tokens", "share of the whole KV cache", ".0%",
     [("kv_use_fraction", "reserved"), ("kv_token_fraction", "holding")]),
    ("ttft", "TTFT p99 (trailing window)", "seconds", None, [("ttft_p99_s", "")]),
)
_PANEL = (
    ("requests_completed", "Requests done"),
    ("running_max", "Largest batch"),
    ("queue_depth_max", "Longest queue"),
    ("ttft_p99_s", "TTFT p99"),
    ("kv_token_share", "Reserved KV memory holding tokens"),  # of the reserved blocks, not of the whole cache
    ("throughput_output_tokens_per_s", "Output tokens/s"),
    ("compute_utilization", "Compute utilization"),
)
# Per side; the two maps sit side by side with a gap of GAP_COLS. Few columns keep each cell at 3 px or more
# on a phone, where the canvas draws reserved cells hollow.
BLOCKMAP_COLS = 40
BLOCKMAP_ROWS = 48
GAP_COLS = 2


def _figures() -> dict:
    figures = {}
    for key, title, y_title, tick_format, traces in _CHARTS:
        data = []
        for side_index, (prefix, _, side_label) in enumerate(SIDES):
            for trace_index, (series, suffix) in enumerate(traces):
                data.append({
                    "type": "scatter", "mode": "lines",
                    "name": f"{SHORT[prefix]}: {suffix}" if suffix else side_label,
                    "meta": f"{prefix}_{series}", "x": [], "y": [],
                    "line": {"color": PALETTE[1] if prefix == "c" else PALETTE[0], "width": 2,
                             "dash": "dot" if trace_index else "solid"},
                })
        yaxis = {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"}
        if tick_format:
            yaxis["tickformat"] = tick_format
        figures[key] = {
            "data": data,
            "layout": {"title": {"text": title, "font": {"size": 14}},
                       "xaxis": {"title": {"text": "simulated time (s)"}, "automargin": True},
                       "yaxis": yaxis, "legend": {"orientation": "h", "y": -0.4, "yanchor": "top", "x": 0},
                       "margin": {"l": 60, "r": 20, "t": 40, "b": 50}, "height": 320},
            "x_series": "t_s",
            "summary": f"{title} against simulated time: reserve the maximum (orange) and paged blocks (blue), "
                       f"the same requests.",
        }
    return figures


def _metric_text(key: str, value) -> str:
    if value is None:
        return "n/a"
    if key in ("kv_token_share",):
        return f"{value * 100:.1f}%"
    if key == "compute_utilization":
        return f"{value * 100:.0f}%"
    if key == "ttft_p99_s":
        return f"{format_number(value)} s"
    if key == "throughput_output_tokens_per_s":
        return f"{format_number(value)} tokens/s"
    return f"{value:,}"


def _panel(summaries: dict) -> list[dict]:
    panel = []
    for key, label in _PANEL:
        for prefix, allocation, side_label in SIDES:
            summary = summaries[allocation]
            value = summary.get(key)
            text = _metric_text(key, value)
            if key == "requests_completed":
                text = f"{summary.get('requests_completed', 0):,} of {summary.get('requests_total', 0):,}"
            panel.append(output(f"{prefix}_{key}", f"{label}, {side_label}", value if value is not None else 0,
                                "", text=text))
    return panel


def _paired_map(maps: dict) -> dict:
    left, right = maps["contiguous"], maps["paged"]
    rows = max(left["rows"], right["rows"])
    width = BLOCKMAP_COLS
    lines = []
    for r in range(rows):
        a = left["cells"][r * width:(r + 1) * width].ljust(width, ".")
        b = right["cells"][r * width:(r + 1) * width].ljust(width, ".")
        lines.append(a + " " * GAP_COLS + b)
    summary = f"Left, reserve the maximum: {left['summary']}. Right, paged blocks: {right['summary']}."
    return {"cols": 2 * width + GAP_COLS, "rows": rows, "cells": "".join(lines),
            "blocks_total": left["blocks_total"] + right["blocks_total"], "blocks_per_cell": left["blocks_per_cell"],
            "used_blocks": left["used_blocks"] + right["used_blocks"],
            "reserved_unused_blocks": left["reserved_unused_blocks"] + right["reserved_unused_blocks"],
            "summary": summary}


def _lockstep_frames(scenarios: dict, frame_interval_s: float, max_events: int = MAX_EVENTS_PER_FRAME):
    """Run both scenarios in step, frame by frame, with their series on one time axis.

    Both runs share their arrivals (same workload and seed), so their sample
    grids are the same; a run that has finished contributes an idle replica
    (nothing queued, running or held) until the other one finishes.
    """
    fleets = {name: Fleet(data) for name, data in scenarios.items()}
    intervals = {f.interval_ns for f in fleets.values()}
    if len(intervals) != 1:  # pragma: no cover - same arrivals give the same grid
        raise CalcError("both allocations must sample on the same time grid; got different intervals", "scenario")
    frame_ns = round(frame_interval_s * NS_PER_S)
    target = frame_ns
    sent = 0
    per_run = max(1, max_events // len(fleets))
    while True:
        reached = True
        for fleet in fleets.values():
            if fleet.done:
                continue
            fleet.advance(max_events=per_run, until_ns=target)
            if fleet.done:
                continue
            nxt = fleet.next_event_ns()
            if nxt is not None and nxt >= target:
                fleet.sample_until(target)
            else:
                reached = False
        done = all(f.done for f in fleets.values())
        running = [f for f in fleets.values() if not f.done]
        lengths = {name: len(f.series["t_s"]) for name, f in fleets.items()}
        upto = min(len(f.series["t_s"]) for f in running) if running else max(lengths.values())
        longest = max(fleets.values(), key=lambda f: len(f.series["t_s"]))
        points = {"t_s": longest.series["t_s"][sent:upto]}
        for prefix, allocation, _ in SIDES:
            series = fleets[allocation].series
            have = lengths[allocation]
            for key in ("queue_depth", "running", "kv_use_fraction", "ttft_p99_s"):
                values = series[key][sent:min(upto, have)]
                idle = None if key == "ttft_p99_s" else 0
                points[f"{prefix}_{key}"] = values + [idle] * (upto - max(sent, min(upto, have)))
            use = series["kv_use_fraction"][sent:min(upto, have)]
            waste = series["kv_waste_fraction"][sent:min(upto, have)]
            # the series' waste is a share of the reserved slots; tokens held as a share of the whole cache:
            held = [round_sig(u * (1.0 - w), 4) for u, w in zip(use, waste)]
            points[f"{prefix}_kv_token_fraction"] = held + [0] * (upto - max(sent, min(upto, have)))
        sent = max(sent, upto)
        if reached:
            t_ns = target
            target += frame_ns
        else:
            t_ns = min(f.now_ns for f in running) if running else max(f.now_ns for f in fleets.values())
        if done:
            t_ns = max(f.now_ns for f in fleets.values())
        summaries = {name: f.summary() for name, f in fleets.items()}
        maps = {name: block_map(f.members[0].rep, BLOCKMAP_COLS, BLOCKMAP_ROWS) for name, f in fleets.items()}
        yield {"t_s": round(t_ns / NS_PER_S, 6), "done": done, "points": points, "summaries": summaries,
               "blockmap": _paired_map(maps)}
        if done:
            return


@stream(budget_s=4.0)
def side_by_side(
    rate_per_s: Annotated[float, FloatRange(0.5, 64, 0.5, "requests/s", label="Arrival rate")] = 6,
    max_model_len: Annotated[int, IntRange(2_048, 131_072, 1_024, "tokens", label="Max length",
                                           help="what contiguous allocation reserves")] = MAX_MODEL_LEN,
    block_size: Annotated[int, IntRange(1, 256, 1, "tokens", label="Block size")] = 16,
    max_num_seqs: Annotated[int, IntRange(1, 1_024, 1, "requests", label="Max running requests",
                                          help="vLLM's max_num_seqs")] = 256,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The same traffic on two copies of the replica: contiguous reservation against paged blocks, live.

    Charts put both runs on one time axis; the block map shows the two KV caches
    side by side (left: reserve the maximum, right: paged). Source: :mod:`calc.sim`
    (the step-05 preset), :func:`calc.sim.live.block_map`.

    >>> frames = list(side_by_side(frame_interval_s=60))
    >>> frames[-1]["done"], frames[-1]["outputs"]["c_running_max"]["value"], frames[-1]["outputs"]["p_running_max"]["value"]
    (True, 48, 115)
    """
    scenarios = side_by_side_scenarios(rate_per_s, max_model_len, block_size, max_num_seqs)
    first = True
    for frame in _lockstep_frames(scenarios, frame_interval_s):
        extra = {"figures": _figures()} if first else {}
        first = False
        yield view(outputs=_panel(frame["summaries"]), series=frame["points"], blockmap=frame["blockmap"],
                   t_s=frame["t_s"], done=frame["done"], **extra)


@functools.lru_cache(maxsize=1)
def _side_by_side_final() -> dict:
    from calc.widgets.framework import check_view, collect_stream

    return collect_stream(check_view(v) for v in side_by_side())


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ paged_attention:name }} elsewhere: 6 uses); the presets'
# runs are cached (calc.sim_views.preset_summary).
QUIZ_PROMPT_TOKENS, QUIZ_GENERATED_TOKENS, QUIZ_BLOCK_SIZE = 1_000, 37, 16


def _model():
    return get_model(lesson.REPLICA["model"])


def _per_token() -> int:
    return kv_bytes_per_token(_model(), lesson.REPLICA["kv_dtype"])


def _kv_bytes(tokens: int) -> int:
    return kv_bytes_per_request(_model(), tokens, lesson.REPLICA["kv_dtype"])


@functools.cache
def _paged() -> int:
    return concurrency(_LESSON_TOKENS, [(PROMPT_TOKENS, ANSWER_TOKENS)], "paged", max_model_len=MAX_MODEL_LEN)


def _contiguous() -> int:
    return contiguous_max_concurrency(_LESSON_TOKENS, MAX_MODEL_LEN)


def _published(policy: str) -> float:
    return published_token_share(PUBLISHED_IDS[policy])[0]


@functools.cache
def _ours(policy: str) -> float:
    return token_state_percent(policy, mean_prompt_tokens=SHAREGPT_PROMPT_TOKENS,
                               mean_output_tokens=SHAREGPT_OUTPUT_TOKENS)


def _paged_run() -> dict:
    return preset_summary(FIX_PRESET)


def _broken() -> dict:
    return preset_summary(BREAK_PRESET)


def _saturated() -> dict:
    return preset_summary(SATURATION_PRESET)


@functools.cache
def _final_outputs() -> dict:
    return _side_by_side_final()["outputs"]


@functools.cache
def _quiz() -> dict:
    return paged_reservation(QUIZ_PROMPT_TOKENS, QUIZ_GENERATED_TOKENS, output_tokens=ANSWER_TOKENS,
                             max_model_len=MAX_MODEL_LEN, block_size=QUIZ_BLOCK_SIZE)


@functools.cache
def _capped() -> dict:
    return simulate_fleet(scenario_for(FIX_PRESET, max_num_seqs=_contiguous())).summary


@functools.cache
def _shares(block_size: int | None = None) -> dict:
    return (allocation_shares() if block_size is None else allocation_shares(block_size=block_size))["outputs"]


def _percent(value: float) -> str:
    return f"{format_number(value)}%"


@fact
def kv_tokens():
    return f"{_LESSON_TOKENS:,}"


@fact
def request_tokens():
    return f"{REQUEST_TOKENS:,}"


@fact
def max_model_len():
    return f"{MAX_MODEL_LEN:,}"


@fact
def blocks_per_request():
    return f"{blocks_for(REQUEST_TOKENS, 16):,}"


@fact
def paged_requests():
    """>>> paged_requests(), contiguous_requests()
    ('311', '48')
    """
    return f"{_paged():,}"


@fact
def contiguous_requests():
    return f"{_contiguous():,}"


@fact
def paged_gain():
    return format_number(ratio(_paged(), _contiguous()))


@fact
def sim_gain():
    final = _final_outputs()
    return format_number(ratio(final["p_running_max"]["value"], final["c_running_max"]["value"]), 2)


@fact
def waste_bound_tokens():
    return f"{paged_waste_bound_tokens(16):,}"


@fact
def waste_bound_bytes():
    return format_bytes(_kv_bytes(paged_waste_bound_tokens(16)))


@fact
def contiguous_promise_bytes():
    return format_bytes(_kv_bytes(contiguous_promise_tokens(REQUEST_TOKENS, MAX_MODEL_LEN)))


@fact
def kv_per_token():
    return f"{_per_token():,} bytes"


@fact
def max_share_published():
    return _percent(_published("max"))


@fact
def pow2_share_published():
    return _percent(_published("pow2"))


@fact
def oracle_share_published():
    return _percent(_published("oracle"))


@fact
def paged_share_published():
    """>>> paged_share_published(), waste_published()
    ('96.3%', '3.7%')
    """
    return _percent(_published("paged"))


@fact
def waste_published():
    return _percent(waste_percent(_published("paged")))


@fact
def published_cite():
    return published_token_share(PUBLISHED_IDS["paged"])[1]


@fact
def max_share_calc():
    return _percent(_ours("max"))


@fact
def oracle_share_calc():
    return _percent(_ours("oracle"))


@fact
def paged_share_calc():
    return _percent(_ours("paged"))


@fact
def sim_rate():
    return format_number(presets.load_data(FIX_PRESET)["workload"]["rate_per_s"])


@fact
def sim_running_max():
    return f"{_paged_run()['running_max']:,}"


@fact
def sim_running_mean():
    return format_number(_paged_run()["running_mean"])


@fact
def sim_queue_max():
    return f"{_paged_run()['queue_depth_max']:,}"


@fact
def sim_ttft_p99():
    return f"{format_number(_paged_run()['ttft_p99_s'])} s"


@fact
def sim_token_share():
    return format(_paged_run()["kv_token_share"], ".1%")


@fact
def sim_kv_use_peak():
    return _pct(_paged_run()["kv_use_peak"])


@fact
def sim_compute_util():
    return share_text(_paged_run()["compute_utilization"])


@fact
def sim_throughput():
    return f"{format_number(_paged_run()['throughput_output_tokens_per_s'])} tokens/s"


@fact
def sim_requests_per_s():
    return format_number(_paged_run()["throughput_requests_per_s"])


@fact
def sim_e2e_mean():
    return f"{format_number(_paged_run()['e2e_mean_s'])} s"


@fact
def little_batch():
    return format_number(requests_in_flight(_paged_run()["throughput_requests_per_s"], _paged_run()["e2e_mean_s"]))


@fact
def broken_ttft_p99():
    return f"{format_number(_broken()['ttft_p99_s'])} s"


@fact
def broken_running_max():
    return f"{_broken()['running_max']:,}"


@fact
def broken_throughput():
    return f"{format_number(_broken()['throughput_output_tokens_per_s'])} tokens/s"


@fact
def broken_token_share():
    return format(_broken()["kv_token_share"], ".1%")


@fact
def broken_compute_util():
    return share_text(_broken()["compute_utilization"])


@fact
def side_c_ttft_p99():
    return _final_outputs()["c_ttft_p99_s"]["text"]


@fact
def side_p_ttft_p99():
    return _final_outputs()["p_ttft_p99_s"]["text"]


@fact
def saturated_rate():
    return format_number(presets.load_data(SATURATION_PRESET)["workload"]["rate_per_s"])


@fact
def saturated_running_max():
    return f"{_saturated()['running_max']:,}"


@fact
def saturated_kv_use_peak():
    return _pct(_saturated()["kv_use_peak"])


@fact
def saturated_queue_max():
    return f"{_saturated()['queue_depth_max']:,}"


@fact
def quiz_prompt():
    return f"{QUIZ_PROMPT_TOKENS:,}"


@fact
def quiz_generated():
    return f"{QUIZ_GENERATED_TOKENS:,}"


@fact
def quiz_tokens():
    return f"{_quiz()['tokens']:,}"


@fact
def quiz_blocks():
    return f"{_quiz()['blocks']:,}"


@fact
def quiz_slots():
    return f"{_quiz()['slots']:,}"


@fact
def quiz_empty():
    return f"{_quiz()['empty_slots']:,}"


@fact
def quiz_block():
    return f"{QUIZ_BLOCK_SIZE}"


@fact
def capped_queue_max():
    return f"{_capped()['queue_depth_max']:,}"


@fact
def capped_ttft_p99():
    return f"{format_number(_capped()['ttft_p99_s'])} s"


@fact
def big_block():
    return f"{BIG_BLOCK}"


@fact
def big_block_bound():
    return f"{paged_waste_bound_tokens(BIG_BLOCK):,}"


@fact
def big_block_share():
    return _pct(_shares(BIG_BLOCK)["paged_share"]["value"])


@fact
def small_block_share():
    return _pct(_shares()["paged_share"]["value"])


@fact
def long_max_len():
    return f"{LONG_MAX_LEN}"


@fact
def long_max_len_slabs():
    return f"{contiguous_max_concurrency(_broken()['kv_cache_tokens'], LONG_MAX_LEN):,}"


facts = facts_of(__name__)
