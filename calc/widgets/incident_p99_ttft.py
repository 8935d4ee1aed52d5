"""Widgets, drills and facts of step 19, "Incident: TTFT p99 at 36 seconds" (docs/lesson/19-incident-p99-ttft.md).

The incident is the simulator's preset ``step19-incident-p99``: three replicas of
the running example behind a least-outstanding router, 15 requests/s of chat
and a trickle of batch jobs, and for one minute a tenth of the requests are long
documents at the same request rate. The page shows it as an on-call dashboard
(:func:`dashboard`): request rate and GPU-Util stay flat while the prompt tokens
per request, the queue and the KV cache tell the story.

The dashboard adds one panel the fleet's time series does not carry: the mean
prompt length of the requests that arrived in each sample interval
(:func:`prompt_tokens_per_sample`), taken from the same request list the fleet
serves (:func:`calc.sim.fleet.fleet_requests`).

>>> scenario = incident_scenario(seed=3)
>>> scenario["fleet"]["replicas"], scenario["fleet"]["traffic"][1]["shares"]["document"]
(3, 0.1)
>>> round(prefill_tokens_per_s(), -2)
12500.0
"""

from __future__ import annotations

import bisect
import copy
import functools
import random
import statistics
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.errors import check_range
from calc.roofline import step_coefficients, ttft_s
from calc.sim import presets
from calc.sim.fleet import FleetScenario, fleet_requests, simulate_fleet
from calc.sim.live import live_frames
from calc.units import NS_PER_S, format_number, round_sig
from calc.widgets.charts import PALETTE
from calc.widgets.framework import FloatRange, IntRange, drill, output, stream, view

__all__ = [
    "PRESET", "PANELS", "FLEET_PANELS", "incident_scenario", "prompt_tokens_per_sample", "dashboard_figures", "dashboard_outputs",
    "dashboard_views", "dashboard", "incident_run", "phase_windows", "seed_sweep", "prefill_tokens_per_s",
    "documents_per_minute_drill", "prefill_load_drill", "facts",
]

PRESET = "step19-incident-p99"
SURGE_PHASE = 1  # the preset's traffic: calm (0), the surge of long documents (1), after (2)
SWEEP_SEEDS = tuple(range(16))
# Alert thresholds the page reads the run against (illustrative on-call rules, not recommendations).
QUEUE_ALERT = 10  # requests waiting, fleet-wide
KV_ALERT = 0.9  # share of the KV cache in use
TTFT_ALERT_S = 5.0  # TTFT p99 over the trailing window
LOW_SHARE, HIGH_SHARE = 0.05, 0.2  # the page's "try this": half and twice the incident's share of documents
DOCUMENT_SHARE_MAX = 0.5

DOCUMENT_SHARE = FloatRange(0.0, DOCUMENT_SHARE_MAX, 0.01, label="Long documents during the surge",
                            help="share of the requests in the surge minute; the request rate stays the same")
SEED = IntRange(0, 2**31 - 1, label="Seed", help="another draw of the same traffic")
FRAME = FloatRange(1, 60, 1, "s", label="Simulated seconds per frame")


# --------------------------------------------------------------------------------------- the scenario
def _class(data: dict, name: str) -> dict:
    return next(c for c in data["workload"]["classes"] if c["name"] == name)


def incident_scenario(*, seed: int | None = None, document_share: float | None = None,
                      replicas: int | None = None, preset: str = PRESET) -> dict:
    """The incident's scenario as a dict: the preset, with another seed, surge mix or replica count.

    During the surge, ``document_share`` of the requests are long documents and
    chat gives up the same share (batch jobs keep theirs); the request rate does
    not change. ``None`` keeps the preset's value. Source: the preset
    ``calc/sim/presets/step19-incident-p99.json`` (the lesson's step 19).

    >>> s = incident_scenario(document_share=0.2, replicas=4)
    >>> s["fleet"]["traffic"][1]["shares"], s["fleet"]["replicas"]
    ({'chat': 0.78, 'document': 0.2, 'batch': 0.02}, 4)
    >>> incident_scenario(document_share=0.9)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: document_share must be between 0 and 0.5; got 0.9
    """
    data = copy.deepcopy(presets.load_data(preset))
    for meta_key in ("lesson_step", "title"):
        data.pop(meta_key, None)
    if seed is not None:
        data["seed"] = check_range("seed", seed, 0, 2**31 - 1, integer=True)
    if document_share is not None:
        share = check_range("document_share", document_share, 0.0, DOCUMENT_SHARE_MAX)
        surge = data["fleet"]["traffic"][SURGE_PHASE]
        batch = surge["shares"]["batch"]
        surge["shares"] = {"chat": round_sig(1.0 - batch - share, 9), "document": round_sig(share, 9),
                           "batch": batch}
    if replicas is not None:
        data["fleet"]["replicas"] = check_range("replicas", replicas, 1, 16, integer=True)
    return data


def prompt_tokens_per_sample(requests, sample_times_s, interval_s: float) -> list:
    """Mean prompt tokens of the requests that arrived in each sample interval ``(t - interval, t]``.

    ``None`` where nothing arrived (the chart leaves a gap, as for TTFT). This is
    the dashboard's "tokens per request" panel; the fleet's own series have no
    such column. Source: the request list of :func:`calc.sim.fleet.fleet_requests`.

    >>> from calc.sim.workload import Request
    >>> reqs = [Request(0, 1 * NS_PER_S, 1000, 10), Request(1, 2 * NS_PER_S, 3000, 10), Request(2, 7 * NS_PER_S, 500, 10)]
    >>> prompt_tokens_per_sample(reqs, [5.0, 10.0, 15.0], 5.0)
    [2000.0, 500.0, None]
    """
    check_range("interval_s", interval_s, 1e-6, 1e6)
    arrivals = [r.arrival_ns for r in requests]
    cumulative = [0]
    for r in requests:
        cumulative.append(cumulative[-1] + r.prompt_tokens)  # integers: exact
    out = []
    for t in sample_times_s:
        hi = bisect.bisect_right(arrivals, round(t * NS_PER_S))
        lo = bisect.bisect_right(arrivals, round((t - interval_s) * NS_PER_S))
        out.append(round_sig((cumulative[hi] - cumulative[lo]) / (hi - lo), 6) if hi > lo else None)
    return out


# --------------------------------------------------------------------------------------- the dashboard
# (figure key, title, y-axis title, tick format, [(series key, trace name)])
PANELS = (
    ("requests", "Requests per second", "requests/s", None, [("requests_per_s", "arriving")]),
    ("gpu_util", "GPU-Util", "reported busy", ".0%", [("gpu_util_reported", "GPU-Util")]),
    ("ttft", "TTFT, 10 s window", "seconds", None,
     [("ttft_p99_s", "p99"), ("ttft_p50_s", "p50")]),
    ("prompt", "Prompt tokens per request", "tokens (mean)", None,
     [("prompt_tokens_per_request", "arriving requests")]),
    ("queue", "Queue depth", "requests waiting", None, [("queue_depth", "waiting")]),
    ("kv", "KV cache use", "share of the KV cache", ".0%", [("kv_use_fraction", "in use")]),
    ("running", "Requests running", "requests in the batches", None, [("running", "running")]),
    ("preemptions", "Preemptions", "requests evicted (total)", None, [("preemptions", "preempted so far")]),
)
REPLICAS_PANEL = ("replicas", "Replicas", "replicas", None, [("replicas", "serving or starting")])
#: Step 20's dashboard compares layouts on the same traffic: latency, queue, KV cache and replicas only.
FLEET_PANELS = tuple(p for p in PANELS if p[0] in ("ttft", "queue", "kv")) + (REPLICAS_PANEL,)


def dashboard_figures(panels=PANELS) -> dict:
    """Empty dashboard charts whose traces name the series that fill them (``meta``).

    Compact panels (two to a row on a wide screen), each a Plotly figure dict
    like :mod:`calc.widgets.charts` makes; frames append points to them.

    >>> figures = dashboard_figures()
    >>> list(figures)[:3], figures["ttft"]["data"][0]["meta"]
    (['requests', 'gpu_util', 'ttft'], 'ttft_p99_s')
    """
    figures = {}
    for key, title, y_title, tick_format, traces in panels:
        yaxis = {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"}
        if tick_format:
            yaxis["tickformat"] = tick_format
        many = len(traces) > 1
        figures[key] = {
            "data": [{"type": "scatter", "mode": "lines", "name": name, "meta": series, "x": [], "y": [],
                      "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}}
                     for i, (series, name) in enumerate(traces)],
            "layout": {"title": {"text": title, "font": {"size": 13}},
                       "xaxis": {"title": {"text": "time (s)"}, "automargin": True},
                       "yaxis": yaxis, "showlegend": many,
                       "legend": {"orientation": "h", "y": 1.02, "yanchor": "bottom", "x": 1, "xanchor": "right"},
                       "margin": {"l": 55, "r": 10, "t": 50 if many else 36, "b": 40}, "height": 240},
            "x_series": "t_s",
            "summary": f"{title} against simulated time.",
        }
    return figures


def _seconds(value) -> str:
    return "n/a" if value is None else f"{format_number(value)} s"


def _share(value) -> str:
    return f"{(value or 0) * 100:.0f}%"


def dashboard_outputs(summary: dict, *, costs: bool = False) -> list[dict]:
    """The metrics under the dashboard, from a fleet run's summary (so far).

    With ``costs`` (step 20 compares layouts on these), the traffic's own
    numbers give way to each request class's TTFT p99, the replicas, the
    replica-hours and what they cost.

    >>> [o["text"] for o in dashboard_outputs({"arrival_rate_per_s": 15.2, "ttft_p99_s": 32.17})][:3]
    ['15.2 /s', '0%', 'n/a']
    """
    get = summary.get
    panel = [
        output("arrival_rate_per_s", "Requests arriving", get("arrival_rate_per_s") or 0, "/s",
               text=f"{format_number(get('arrival_rate_per_s') or 0)} /s"),
        output("gpu_util_reported", "GPU-Util (reported)", get("gpu_util_reported") or 0, "",
               text=_share(get("gpu_util_reported"))),
        output("ttft_p50_s", "TTFT p50", get("ttft_p50_s") or 0, "s", text=_seconds(get("ttft_p50_s"))),
        output("ttft_p99_s", "TTFT p99", get("ttft_p99_s") or 0, "s", text=_seconds(get("ttft_p99_s"))),
        output("itl_p99_s", "ITL p99", get("itl_p99_s") or 0, "s", text=_seconds(get("itl_p99_s"))),
        output("prompt_tokens_mean", "Prompt tokens per request", get("prompt_tokens_mean") or 0, "tokens",
               text=f"{format_number(round(get('prompt_tokens_mean') or 0))} tokens"),
        output("queue_depth_max", "Longest queue", get("queue_depth_max", 0), "requests"),
        output("kv_use_peak", "KV cache use, peak", get("kv_use_peak") or 0, "", text=_share(get("kv_use_peak"))),
        output("preemptions", "Preemptions", get("preemptions", 0), ""),
        output("requests_completed", "Requests done", get("requests_completed", 0), "",
               text=f"{get('requests_completed', 0):,} of {get('requests_total', 0):,}"),
    ]
    if costs:
        same_traffic = ("arrival_rate_per_s", "prompt_tokens_mean", "requests_completed", "gpu_util_reported")
        panel = [o for o in panel if o["key"] not in same_traffic]
        by_class = {c["name"]: c for c in get("classes") or []}
        for name, label in (("chat", "Chat TTFT p99"), ("document", "Documents TTFT p99"),
                            ("batch", "Batch jobs TTFT p99")):
            value = by_class.get(name, {}).get("ttft_p99_s")
            panel.append(output(f"{name}_ttft_p99_s", label, value or 0, "s", text=_seconds(value)))
        panel.append(output("replicas", "Replicas (start / peak / end)", get("replicas_max") or 0, "",
                            text=f"{get('replicas_initial', 0)} / {get('replicas_max', 0)} / {get('replicas_final', 0)}"))
        hours = get("replica_hours") or 0
        panel.append(output("replica_hours", "Replica-hours", hours, "h", text=f"{format_number(hours)} h"))
        cost = get("cost_usd")
        panel.append(output("cost_usd", "GPU cost of the run", cost or 0, "USD",
                            text="no GPU price" if cost is None else f"${cost:,.2f}"))
    return panel


def dashboard_views(scenario: dict, frame_interval_s: float, *, panels=PANELS, costs: bool = False):
    """Views of a live run of a fleet ``scenario``: the dashboard's charts first, then per frame its
    metrics, its new points (the fleet's series plus prompt tokens per request) and one replica's block map.

    Source: :func:`calc.sim.live.live_frames`; :func:`prompt_tokens_per_sample`.

    >>> views = list(dashboard_views(incident_scenario(seed=1), 60))
    >>> sorted(views[0]["figures"])[:2], views[-1]["done"]
    (['gpu_util', 'kv'], True)
    >>> tokens = [x for v in views for x in v["series"]["prompt_tokens_per_request"]]
    >>> len(tokens) == len([t for v in views for t in v["series"]["t_s"]]), tokens[0]
    (True, 1116.55)
    """
    requests = fleet_requests(FleetScenario.from_dict(scenario))
    interval_s = None
    first = True
    for frame in live_frames(scenario, frame_interval_s=frame_interval_s):
        points = dict(frame["points"])
        times = points["t_s"]
        if times and interval_s is None:
            interval_s = times[0]  # the first sample falls one sample interval after the start
        points["prompt_tokens_per_request"] = prompt_tokens_per_sample(requests, times, interval_s or 1.0)
        extra = {"figures": dashboard_figures(panels)} if first else {}
        first = False
        yield view(outputs=dashboard_outputs(frame["summary"], costs=costs), series=points,
                   blockmap=frame["blockmap"], t_s=frame["t_s"], done=frame["done"], **extra)


@stream(budget_s=4.0)
def dashboard(
    seed: Annotated[int, SEED] = 3,
    document_share: Annotated[float, DOCUMENT_SHARE] = 0.1,
    replicas: Annotated[int, IntRange(1, 8, label="Replicas", help="each the running example: 4 GPUs")] = 3,
    frame_interval_s: Annotated[float, FRAME] = 5.0,
):
    """The incident as an on-call dashboard: rate, GPU-Util, TTFT, tokens per request, queue, KV, preemptions."""
    yield from dashboard_views(incident_scenario(seed=seed, document_share=document_share, replicas=replicas),
                               frame_interval_s)


# --------------------------------------------------------------------------------------- the run, for prose
def incident_run(seed: int | None = None, document_share: float | None = None, replicas: int | None = None):
    """The incident run to its end: a :class:`~calc.sim.fleet.FleetResult` (cached; ``None`` is the preset's value).

    >>> round(incident_run().summary["ttft_p99_s"])
    32
    >>> incident_run(seed=3) is incident_run()
    True
    """
    data = incident_scenario(seed=seed, document_share=document_share, replicas=replicas)
    surge = data["fleet"]["traffic"][SURGE_PHASE]["shares"]
    return _run(data["seed"], surge["document"], data["fleet"]["replicas"])


@functools.lru_cache(maxsize=64)
def _run(seed: int, document_share: float, replicas: int):
    data = incident_scenario(seed=seed, document_share=document_share, replicas=replicas)
    return simulate_fleet(FleetScenario.from_dict(data))


def phase_windows(preset: str = PRESET) -> list[tuple[float, float]]:
    """(start, end) in seconds of each traffic phase of the preset.

    >>> phase_windows()
    [(0.0, 60.0), (60.0, 120.0), (120.0, 240.0)]
    """
    out, start = [], 0.0
    for phase in presets.load_data(preset)["fleet"]["traffic"]:
        out.append((start, start + float(phase["duration_s"])))
        start += float(phase["duration_s"])
    return out


def _in_phase(series: dict, key: str, phase: int) -> list:
    start, end = phase_windows()[phase]
    return [v for t, v in zip(series["t_s"], series[key]) if start < t <= end and v is not None]


def seed_sweep(seeds=SWEEP_SEEDS) -> list[float]:
    """TTFT p99 (s) of the incident for each seed: the same traffic, other random draws.

    >>> seed_sweep((3,))
    [32.1692]
    """
    return [incident_run(seed=s).summary["ttft_p99_s"] for s in seeds]


# --------------------------------------------------------------------------------------- prefill capacity
def prefill_tokens_per_s(model: str = "llama-3.1-70b", gpu: str = "h100-sxm-80gb", *, tp: int = 4,
                         weights: str = "bf16", prompt_tokens: int = 1024) -> float:
    """Prompt tokens one replica can prefill per second, one prompt after another: prompt / prefill time.

    The roofline of a prefill (:func:`calc.roofline.ttft_s`, chunks of 8,192
    tokens as vLLM schedules them): compute-bound, so this is close to the most
    the replica can prefill whatever else it does. Longer prompts are slower per
    token (attention grows with the square of the prompt).

    >>> round(prefill_tokens_per_s()), round(prefill_tokens_per_s(prompt_tokens=16000))
    (12521, 11334)
    """
    coef = step_coefficients(get_model(model), get_gpu(gpu), tp=tp, weights=weights)
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 10_000_000, integer=True)
    return prompt / ttft_s(coef, prompt_tokens=prompt, chunk_tokens=8192)


@functools.lru_cache(maxsize=8)
def prompt_statistics(seed: int | None = None) -> dict:
    """What the request logs of the incident say: mean prompt tokens before and during the surge, per class,
    and how many documents arrived in the surge minute.

    The documents' lengths are drawn from a lognormal of mean 16,000 tokens, but
    a request longer than ``max_model_len`` (32,768 with its answer) is drawn
    again, so the documents that arrive are shorter on average. Source: the
    preset's request list (:func:`calc.sim.fleet.fleet_requests`).

    >>> st = prompt_statistics()
    >>> round(st["before"]), round(st["during"]), round(st["document"]), st["documents_in_surge"]
    (1029, 2112, 12142, 85)
    """
    data = incident_scenario(seed=seed)
    requests = fleet_requests(FleetScenario.from_dict(data))
    (s0, e0), (s1, e1) = phase_windows()[:2]
    before = [r.prompt_tokens for r in requests if s0 * NS_PER_S <= r.arrival_ns < e0 * NS_PER_S]
    during = [r for r in requests if s1 * NS_PER_S <= r.arrival_ns < e1 * NS_PER_S]
    names = [c["name"] for c in data["workload"]["classes"]]
    out = {"before": sum(before) / len(before), "during": sum(r.prompt_tokens for r in during) / len(during),
           "documents_in_surge": sum(1 for r in during if r.class_index == names.index("document"))}
    for index, name in enumerate(names):
        lengths = [r.prompt_tokens for r in requests if r.class_index == index]
        out[name] = sum(lengths) / len(lengths) if lengths else 0.0
    return out


# --------------------------------------------------------------------------------------- drills
def _question(question, answer, unit, tolerance, answer_text, explanation, placeholder) -> dict:
    return {"question": question, "answer": answer, "unit": unit, "tolerance": tolerance,
            "answer_text": answer_text, "explanation": explanation, "placeholder": placeholder}


@drill
def documents_per_minute_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """How many long documents arrive per minute, read off the request-rate and tokens-per-request panels.

    If requests arrive at ``R`` per second and the mean prompt rises from ``m0``
    to ``m1`` while documents of ``D`` tokens replace chat of ``C`` tokens, the
    documents' share is ``(m1 - m0) / (D - C)`` and they arrive at
    ``60 R (m1 - m0) / (D - C)`` per minute (a mixture's mean is the
    share-weighted mean of its parts). Seed 0 reads the incident's own panels.

    >>> q = documents_per_minute_drill(0)
    >>> q["unit"], q["tolerance"], round(q["answer"]), prompt_statistics()["documents_in_surge"]
    ('documents', 0.05, 88, 85)
    """
    rng = random.Random(seed)
    if seed == 0:
        data = incident_scenario()
        rate = data["fleet"]["traffic"][SURGE_PHASE]["rate_per_s"]
        st = prompt_statistics()
        chat, doc, actual = round(st["chat"]), round(st["document"]), st["documents_in_surge"]
        m0, m1 = round(st["before"]), round(st["during"])
        where = (f"The incident's dashboard: requests arrive at {rate} per second before and during the surge; the "
                 f"mean prompt is {m0:,} tokens per request in the calm minute and {m1:,} in the surge minute. "
                 f"The request logs say chat prompts average {chat:,} tokens and the long documents {doc:,}.")
    else:
        rate = rng.choice((6, 8, 10, 12, 15, 20, 25, 30))
        chat = rng.choice((500, 800, 1024, 1500, 2000))
        doc = rng.choice((8000, 12000, 16000, 24000, 30000))
        share = rng.choice((0.02, 0.04, 0.05, 0.08, 0.1, 0.12, 0.15, 0.2))
        m0, m1, actual = chat, round((1 - share) * chat + share * doc), None
        where = (f"A chat service's dashboard: the request rate holds at {rate} per second, but the mean prompt "
                 f"goes from {m0:,} to {m1:,} tokens per request. Chat prompts average {chat:,} tokens and the new "
                 f"long documents {doc:,}.")
    answer = 60 * rate * (m1 - m0) / (doc - chat)
    explanation = (f"The mean of a mix is the share-weighted mean of its parts: each document that replaces a chat "
                   f"request adds {doc:,} − {chat:,} = {doc - chat:,} tokens, so the documents' share is "
                   f"({m1:,} − {m0:,}) / {doc - chat:,} = {format_number((m1 - m0) / (doc - chat))}; "
                   f"× {rate} requests/s × 60 s = {format_number(answer)} documents per minute.")
    if actual is not None:
        explanation += (f" The simulation actually sent {actual} documents in that minute: the estimate is as good as "
                        f"the means it starts from, and long documents vary a lot in length.")
    return _question(
        f"{where} How many documents arrive per minute?",
        round_sig(answer, 6), "documents", 0.05, f"{format_number(answer)} documents per minute", explanation,
        "a number, e.g. 40")


# The replicas the prefill drill draws from: (model, gpu, tp, weights, label); all fit at 90% (tested).
PREFILL_REPLICAS = (
    ("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", "Llama 3.1 70B in bf16 on 4 H100s"),
    ("llama-3.1-70b", "h100-sxm-80gb", 4, "fp8", "Llama 3.1 70B in fp8 on 4 H100s"),
    ("llama-3.1-70b", "h100-sxm-80gb", 8, "bf16", "Llama 3.1 70B in bf16 on 8 H100s"),
    ("llama-3.1-8b", "h100-sxm-80gb", 1, "bf16", "Llama 3.1 8B in bf16 on 1 H100"),
    ("llama-3.1-8b", "l40s", 1, "bf16", "Llama 3.1 8B in bf16 on 1 L40S"),
    ("qwen2.5-72b", "h200", 4, "bf16", "Qwen2.5 72B in bf16 on 4 H200s"),
)


@drill
def prefill_load_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """How many replicas' worth of prefill the traffic needs: prompt tokens per second / one replica's prefill rate.

    ``R x mean prompt / prefill tokens/s per replica``
    (:func:`prefill_tokens_per_s`). When that approaches the replica count, the
    prompts alone keep every GPU busy and the queue can only grow; request rate
    and GPU-Util say nothing of it. Seed 0 is the incident's surge minute.

    >>> q = prefill_load_drill(0)
    >>> q["unit"], q["answer_text"]
    ('replicas', '2.53 replicas')
    """
    rng = random.Random(seed)
    if seed == 0:
        data = incident_scenario()
        rate = data["fleet"]["traffic"][SURGE_PHASE]["rate_per_s"]
        replicas = data["fleet"]["replicas"]
        mean_prompt = round(prompt_statistics()["during"])
        model, gpu, tp, weights, label = PREFILL_REPLICAS[0]
        where = (f"The surge minute of the incident: {rate} requests/s averaging {mean_prompt:,} prompt tokens, "
                 f"served by {replicas} replicas of {label}.")
    else:
        model, gpu, tp, weights, label = rng.choice(PREFILL_REPLICAS)
        rate = rng.choice((5, 8, 10, 12, 15, 20, 30, 40))
        mean_prompt = rng.choice((800, 1200, 1800, 2500, 3200, 4000, 6000))
        replicas = rng.choice((2, 3, 4, 6, 8))
        where = (f"A fleet of {replicas} replicas of {label} gets {rate} requests/s averaging {mean_prompt:,} "
                 f"prompt tokens.")
    per_replica = prefill_tokens_per_s(model, gpu, tp=tp, weights=weights)
    demand = rate * mean_prompt
    answer = demand / per_replica
    verdict = ("more than the fleet has: the queue grows for as long as this lasts, however the GPUs look"
               if answer >= replicas else
               f"{format_number(answer / replicas * 100)}% of the fleet's prefill capacity before a single answer "
               f"token is decoded")
    explanation = (f"{rate} requests/s × {mean_prompt:,} tokens = {format_number(demand)} prompt tokens/s to prefill. "
                   f"One replica prefills about {format_number(round(per_replica))} tokens/s (1,024-token prompts, "
                   f"compute-bound; longer prompts are slower), so the prompts alone need "
                   f"{format_number(demand)} / {format_number(round(per_replica))} = {format_number(answer)} "
                   f"replicas' worth of compute: {verdict}.")
    return _question(
        f"{where} One replica prefills about {format_number(round(per_replica))} prompt tokens per second. "
        f"How many replicas' worth of prefill compute do the prompts alone need?",
        round_sig(answer, 6), "replicas", 0.05, f"{format_number(answer)} replicas", explanation,
        "a number, e.g. 1.5")


# --------------------------------------------------------------------------------------- facts
def _tokens(value: float) -> str:
    return format_number(round(value))


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose, from the incident run and calc (computed once per build).

    >>> f = facts()
    >>> f["replicas"], f["rate"], f["ttft_p99"], f["gpu_util_before"], f["kv_peak"]
    ('3', '15', '32.2 s', '100%', '100%')
    """
    data = incident_scenario()
    result = incident_run()
    s, ts = result.summary, result.time_series
    windows = phase_windows()
    chat, doc, batch = _class(data, "chat"), _class(data, "document"), _class(data, "batch")
    surge = data["fleet"]["traffic"][SURGE_PHASE]
    st = prompt_statistics()
    m0, m1, docs = round(st["before"]), round(st["during"]), st["documents_in_surge"]
    rate = surge["rate_per_s"]
    per_replica = prefill_tokens_per_s()
    per_replica_doc = prefill_tokens_per_s(prompt_tokens=doc["prompt_tokens"])
    replicas = data["fleet"]["replicas"]
    sweep = seed_sweep()
    cap = lesson.kv_capacity()
    p99_window = [v for v in ts["ttft_p99_s"] if v is not None]
    before_p99 = _in_phase(ts, "ttft_p99_s", 0)
    classes = {c["name"]: c for c in s["classes"]}
    doc_tokens = doc["prompt_tokens"] + doc["output_tokens"]
    chat_tokens = chat["prompt_tokens"] + chat["output_tokens"]
    queue_alert = next(t for t, q in zip(ts["t_s"], ts["queue_depth"]) if q >= QUEUE_ALERT)
    kv_alert = next(t for t, k in zip(ts["t_s"], ts["kv_use_fraction"]) if k >= KV_ALERT)
    ttft_alert = next(t for t, v in zip(ts["t_s"], ts["ttft_p99_s"]) if v is not None and v >= TTFT_ALERT_S)
    quiet, low, high = (incident_run(document_share=x).summary for x in (0.0, LOW_SHARE, HIGH_SHARE))
    more = incident_run(replicas=replicas + 1).summary
    return {
        "low_share": format_number(LOW_SHARE),
        "high_share": format_number(HIGH_SHARE),
        "quiet_ttft_p99": _seconds(quiet["ttft_p99_s"]),
        "low_ttft_p99": _seconds(low["ttft_p99_s"]),
        "low_queue_max": format_number(low["queue_depth_max"]),
        "high_ttft_p99": _seconds(high["ttft_p99_s"]),
        "high_queue_max": format_number(high["queue_depth_max"]),
        "high_run_s": format_number(round(high["duration_s"])),
        "more_replicas": str(replicas + 1),
        "more_ttft_p99": _seconds(more["ttft_p99_s"]),
        "more_queue_max": format_number(more["queue_depth_max"]),
        "doc_tokens": f"{doc_tokens:,}",
        "max_model_len": f"{data['max_model_len']:,}",
        "queue_alert_lead_s": format_number(queue_alert - windows[SURGE_PHASE][0]),
        "queue_alert": str(QUEUE_ALERT),
        "queue_alert_s": format_number(queue_alert),
        "kv_alert_pct": _share(KV_ALERT),
        "kv_alert_s": format_number(kv_alert),
        "ttft_alert": _seconds(TTFT_ALERT_S),
        "ttft_alert_s": format_number(ttft_alert),
        "replicas": str(replicas),
        "gpus": str(replicas * 4),
        "rate": format_number(rate),
        "surge_start_s": format_number(windows[SURGE_PHASE][0]),
        "surge_end_s": format_number(windows[SURGE_PHASE][1]),
        "surge_duration_s": format_number(windows[SURGE_PHASE][1] - windows[SURGE_PHASE][0]),
        "run_s": format_number(round(s["duration_s"])),
        "chat_prompt": _tokens(chat["prompt_tokens"]),
        "chat_output": _tokens(chat["output_tokens"]),
        "doc_prompt": _tokens(doc["prompt_tokens"]),
        "doc_output": _tokens(doc["output_tokens"]),
        "batch_prompt": _tokens(batch["prompt_tokens"]),
        "batch_output": _tokens(batch["output_tokens"]),
        "batch_share_pct": f"{batch['share'] * 100:.0f}%",
        "doc_share_pct": f"{surge['shares']['document'] * 100:.0f}%",
        "docs_expected": format_number(round(rate * surge["shares"]["document"] * (windows[1][1] - windows[1][0]))),
        "docs_sent": str(docs),
        "requests_total": f"{s['requests_total']:,}",
        "ttft_p99": _seconds(s["ttft_p99_s"]),
        "ttft_p50": _seconds(s["ttft_p50_s"]),
        "ttft_p90": _seconds(s["ttft_p90_s"]),
        "ttft_p99_window_peak": _seconds(max(p99_window)),
        "ttft_p99_before": _seconds(max(before_p99)),
        "chat_ttft_p99": _seconds(classes["chat"]["ttft_p99_s"]),
        "doc_ttft_p99": _seconds(classes["document"]["ttft_p99_s"]),
        "itl_p50": _seconds(s["itl_p50_s"]),
        "itl_p99": _seconds(s["itl_p99_s"]),
        "e2e_p99": _seconds(s["e2e_p99_s"]),
        "rate_before": format_number(statistics.fmean(_in_phase(ts, "requests_per_s", 0))),
        "rate_during": format_number(statistics.fmean(_in_phase(ts, "requests_per_s", SURGE_PHASE))),
        "gpu_util_before": _share(statistics.fmean(_in_phase(ts, "gpu_util_reported", 0))),
        "gpu_util_during": _share(statistics.fmean(_in_phase(ts, "gpu_util_reported", SURGE_PHASE))),
        "gpu_util_run": _share(s["gpu_util_reported"]),
        "compute_before": _share(statistics.fmean(_in_phase(ts, "compute_utilization", 0))),
        "compute_during": _share(statistics.fmean(_in_phase(ts, "compute_utilization", SURGE_PHASE))),
        "queue_before_max": format_number(max(_in_phase(ts, "queue_depth", 0))),
        "queue_max": format_number(s["queue_depth_max"]),
        "kv_before_peak": _share(max(_in_phase(ts, "kv_use_fraction", 0))),
        "kv_peak": _share(s["kv_use_peak"]),
        "running_max": format_number(s["running_max"]),
        "preemptions": format_number(s["preemptions"]),
        "doc_prompt_measured": _tokens(st["document"]),
        "chat_prompt_measured": _tokens(st["chat"]),
        "prefill_share_during": f"{rate * m1 / (per_replica * replicas) * 100:.0f}%",
        "prefill_share_before": f"{rate * m0 / (per_replica * replicas) * 100:.0f}%",
        "prompt_before": _tokens(m0),
        "prompt_during": _tokens(m1),
        "prompt_ratio": format_number(m1 / m0, 2),
        "prompt_tokens_per_s_before": _tokens(rate * m0),
        "prompt_tokens_per_s_during": _tokens(rate * m1),
        "prefill_per_replica": _tokens(per_replica),
        "prefill_per_replica_doc": _tokens(per_replica_doc),
        "prefill_fleet": _tokens(per_replica * replicas),
        "prefill_replicas_before": format_number(rate * m0 / per_replica),
        "prefill_replicas_during": format_number(rate * m1 / per_replica),
        "kv_tokens": f"{cap.kv_cache_tokens:,}",
        "docs_fill_replica": str(cap.kv_cache_tokens // doc_tokens),
        "doc_over_chat": format_number(doc_tokens / chat_tokens, 2),
        "sweep_seeds": str(len(sweep)),
        "sweep_min": _seconds(min(sweep)),
        "sweep_max": _seconds(max(sweep)),
        "sweep_median": _seconds(statistics.median(sweep)),
        "seed": str(data["seed"]),
        "cost_usd": f"${s['cost_usd']:,.2f}",
        "replica_hours": f"{format_number(s['replica_hours'])} h",
    }
