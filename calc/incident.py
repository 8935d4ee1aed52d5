"""The incident of step 19 as data: the preset's traffic with another seed or surge mix, its runs and request logs.

The incident is the simulator's preset ``step19-incident-p99`` (``calc/sim/presets/``):
three replicas of the running example behind a least-outstanding router,
15 requests/s of chat and a trickle of batch jobs, and for one minute 8% of
the requests are long documents at the same request rate. Steps 19 and 20 read
it; ``python -m calc simulate --preset step19-incident-p99`` runs it.

The scenario's tuning knob is one preset value, :data:`TUNING_KNOB`: the long
documents' mean prompt (``prompt_tokens`` of the ``document`` class). It sets
how hard the surge hits, and it is set so that the TTFT panel's peak (p99 over
the trailing 10 s window, what the on-call reads) is the lesson's 36 s on the
preset's seed. The peak is the worst window of a p99, so it moves by several
seconds for a change of a few dozen tokens (:func:`peak_scan`); a re-tune after
a change of the engine's constants is: ``python scripts/tune_incident.py``,
then one line in ``calc/sim/presets/step19-incident-p99.json`` (the tests name
the copies that must follow it: step 20's preset and the two pages' replica changes).

>>> scenario = incident_scenario(seed=3)
>>> scenario["fleet"]["replicas"], scenario["fleet"]["traffic"][1]["shares"]["document"]
(3, 0.08)
>>> round(prefill_tokens_per_s(), -2)
12500.0
"""

from __future__ import annotations

import bisect
import copy
import functools

from calc import lesson
from calc.errors import check_range
from calc.roofline import ttft_s
from calc.sim import presets
from calc.sim.fleet import FleetScenario, fleet_requests, simulate_fleet
from calc.units import NS_PER_S, round_sig

__all__ = [
    "PRESET", "SURGE_PHASE", "SWEEP_SEEDS", "LOW_SHARE", "HIGH_SHARE", "TTFT_ALERT_S", "DOCUMENT_SHARE_MAX", "incident_scenario",
    "prompt_tokens_per_sample", "incident_run", "phase_windows", "seed_sweep", "prefill_tokens_per_s",
    "prompt_statistics", "request_class", "values_in_phase", "alert_page", "TTFT_ALERT_FOR_S", "TUNING_KNOB",
    "TITLE_PEAK_S", "peak_scan", "surge_load", "request_sizes", "first_crossing_s", "crossing_lead_s",
]

PRESET = "step19-incident-p99"
SURGE_PHASE = 1  # the preset's traffic: calm (0), the surge of long documents (1), after (2)
SWEEP_SEEDS = tuple(range(16))
#: The pages' "try this": half and twice the incident's share of long documents during the surge.
_PRESET_SHARE = presets.load_data(PRESET)["fleet"]["traffic"][1]["shares"]["document"]
LOW_SHARE, HIGH_SHARE = round_sig(_PRESET_SHARE / 2, 9), round_sig(_PRESET_SHARE * 2, 9)
#: The on-call alert steps 19 and 20 read the runs against (illustrative): TTFT p99 over the trailing 10 s
#: window at or above TTFT_ALERT_S for TTFT_ALERT_FOR_S (a Prometheus rule's ``for:``, so one slow window
#: does not page anyone).
TTFT_ALERT_S = 5.0
TTFT_ALERT_FOR_S = 30.0
#: The lesson's incident: "TTFT p99 at 36 seconds" (seed 000_783e2c6cc1bfcb77.txt), the panel's peak the
#: preset is tuned to (rounded to a whole second).
TITLE_PEAK_S = 36
#: The preset value that tunes the incident's peak: (request class, field) in the workload.
TUNING_KNOB = ("document", "prompt_tokens")
#: The largest share of long documents the scenario takes during the surge.
DOCUMENT_SHARE_MAX = 0.5


# --------------------------------------------------------------------------------------- the scenario
def request_class(data: dict, name: str) -> dict:
    """The request class ``name`` of a scenario dict.

    >>> request_class(incident_scenario(), "document")["prompt_tokens"]
    19300
    """
    return next(c for c in data["workload"]["classes"] if c["name"] == name)


def incident_scenario(*, seed: int | None = None, document_share: float | None = None,
                      replicas: int | None = None, document_prompt_tokens: int | None = None,
                      preset: str = PRESET) -> dict:
    """The incident's scenario as a dict: the preset, with another seed, surge mix, replica count or tuning knob.

    During the surge, ``document_share`` of the requests are long documents and
    chat gives up the same share (batch jobs keep theirs); the request rate does
    not change. ``document_prompt_tokens`` is the tuning knob (:data:`TUNING_KNOB`).
    ``None`` keeps the preset's value. Source: the preset
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
    if document_prompt_tokens is not None:
        name, field = TUNING_KNOB
        request_class(data, name)[field] = check_range("document_prompt_tokens", document_prompt_tokens,
                                                       1000, 30000, integer=True)
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


# --------------------------------------------------------------------------------------- the run, for prose
def incident_run(seed: int | None = None, document_share: float | None = None, replicas: int | None = None):
    """The incident run to its end: a :class:`~calc.sim.fleet.FleetResult` (cached; ``None`` is the preset's value).

    >>> round(incident_run().summary["ttft_p99_s"])
    29
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


def values_in_phase(series: dict, key: str, phase: int) -> list:
    """The samples of ``series[key]`` taken during traffic phase ``phase`` of the incident (gaps left out).

    >>> values_in_phase({"t_s": [30.0, 90.0, 100.0], "q": [1, None, 7]}, "q", 1)
    [7]
    """
    start, end = phase_windows()[phase]
    return [v for t, v in zip(series["t_s"], series[key]) if start < t <= end and v is not None]


def seed_sweep(seeds=SWEEP_SEEDS) -> list[float]:
    """TTFT p99 (s) of the incident for each seed: the same traffic, other random draws.

    >>> seed_sweep((3,))
    [28.8454]
    """
    return [incident_run(seed=s).summary["ttft_p99_s"] for s in seeds]


def alert_page(seed: int | None = None, threshold_s: float = TTFT_ALERT_S, for_s: float = TTFT_ALERT_FOR_S) -> dict:
    """What the on-call's TTFT alert shows for the incident: when the panel crossed the threshold, when the
    alert fired, and the panel's peak.

    The alert watches the dashboard's TTFT p99 over the trailing 10 s window (the
    fleet's ``ttft_p99_s`` series). ``crossed_s`` is the first sample at or above
    ``threshold_s``; the alert fires once the samples have stayed at or above it
    for ``for_s`` (Prometheus's ``for:``: pending from the first sample of an
    unbroken run, firing when the run is ``for_s`` old). ``peak_s`` is the panel's
    highest reading, the figure the step's title quotes; None where the panel
    never crosses or never holds. Source: the incident run (:func:`incident_run`);
    TTFT p99 over a window as vLLM's ``vllm:time_to_first_token_seconds``
    histogram gives it to a dashboard; the ``for`` clause as Prometheus's alerting
    rules define it (https://prometheus.io/docs/prometheus/latest/configuration/alerting_rules/).

    >>> page = alert_page()
    >>> page["threshold_s"], page["for_s"], page["crossed_s"], page["fired_s"], page["peak_s"], page["peak_at_s"]
    (5.0, 30.0, 80.0, 110.0, 36.3195, 155.0)
    """
    check_range("for_s", for_s, 0.0, 3600.0)
    series = incident_run(seed=seed).time_series
    samples = list(zip(series["t_s"], series["ttft_p99_s"]))
    points = [(t, v) for t, v in samples if v is not None]
    crossed = next((t for t, v in points if v >= threshold_s), None)
    fired, pending_since = None, None
    for t, v in samples:
        if v is None or v < threshold_s:
            pending_since = None  # the run of samples above the line is broken
            continue
        if pending_since is None:
            pending_since = t
        if t - pending_since >= for_s:
            fired = t
            break
    peak_at, peak = max(points, key=lambda p: (p[1], -p[0]))
    return {"threshold_s": threshold_s, "for_s": for_s, "crossed_s": crossed, "fired_s": fired,
            "peak_s": peak, "peak_at_s": peak_at}


def peak_scan(document_prompt_tokens, seed: int | None = None) -> list[tuple[int, float]]:
    """The TTFT panel's peak (s) for each value of the tuning knob, the documents' mean prompt: what a re-tune reads.

    Each value runs the whole incident (about a second of CPython), so the lead
    can pick the value whose peak rounds to :data:`TITLE_PEAK_S` and write it into
    the preset. Source: :func:`incident_scenario`, the panel's series as
    :func:`alert_page` reads it.

    >>> peak_scan([19300])
    [(19300, 36.3195)]
    """
    out = []
    for tokens in document_prompt_tokens:
        data = incident_scenario(seed=seed, document_prompt_tokens=tokens)
        series = simulate_fleet(FleetScenario.from_dict(data)).time_series
        out.append((tokens, max(v for v in series["ttft_p99_s"] if v is not None)))
    return out


# --------------------------------------------------------------------------------------- prefill capacity
def prefill_tokens_per_s(model: str = lesson.MODEL, gpu: str = lesson.GPU, *, tp: int = lesson.TP,
                         weights: str = lesson.WEIGHTS, prompt_tokens: int = lesson.PROMPT_TOKENS) -> float:
    """Prompt tokens one replica can prefill per second, one prompt after another: prompt / prefill time.

    The roofline of a prefill (:func:`calc.roofline.ttft_s`, chunks of 8,192
    tokens as vLLM schedules them): compute-bound, so this is close to the most
    the replica can prefill whatever else it does. Longer prompts are slower per
    token (attention grows with the square of the prompt).

    >>> round(prefill_tokens_per_s()), round(prefill_tokens_per_s(prompt_tokens=16000))
    (12521, 11334)
    """
    coef = lesson.coefficients(weights, model=model, gpu=gpu, tp=tp)
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 10_000_000, integer=True)
    return prompt / ttft_s(coef, prompt_tokens=prompt, chunk_tokens=8192)


@functools.lru_cache(maxsize=8)
def prompt_statistics(seed: int | None = None) -> dict:
    """What the request logs of the incident say: mean prompt tokens before and during the surge, per class,
    and how many documents arrived in the surge minute.

    The documents' lengths are drawn from a lognormal of the preset's mean (19,300 tokens), but
    a request longer than ``max_model_len`` (32,768 with its answer) is drawn
    again, so the documents that arrive are shorter on average. Source: the
    preset's request list (:func:`calc.sim.fleet.fleet_requests`).

    >>> st = prompt_statistics()
    >>> round(st["before"]), round(st["during"]), round(st["document"]), st["documents_in_surge"]
    (1029, 1926, 12733, 66)
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


# --------------------------------------------------------------------------------------- what the page derives
@functools.lru_cache(maxsize=8)
def surge_load(seed: int | None = None) -> dict:
    """The surge minute's prompt load against the fleet's prefill, from the request logs (step 19's diagnosis).

    Prompt tokens per second are the request rate times the mean prompt (rounded to whole tokens, as the
    dashboard's panel shows it); one replica prefills :func:`prefill_tokens_per_s`; so the prompts alone need
    ``rate x mean prompt / prefill per replica`` replicas' worth of compute, a share of the fleet's
    ``replicas x prefill per replica``. ``documents_expected`` is the surge's rate x document share x length
    (what a reader expects; ``prompt_statistics()["documents_in_surge"]`` is what the seed sent).
    Source: the preset (``calc/sim/presets/step19-incident-p99.json``) and the roofline of a prefill.

    >>> load = surge_load()
    >>> load["prompt_before"], load["prompt_during"], round(load["prefill_replicas_during"], 2)
    (1029, 1926, 2.31)
    >>> round(load["prefill_share_during"], 2), load["documents_expected"], load["gpus"]
    (0.77, 72, 12)
    """
    data = incident_scenario(seed=seed)
    surge = data["fleet"]["traffic"][SURGE_PHASE]
    rate, replicas = surge["rate_per_s"], data["fleet"]["replicas"]
    st = prompt_statistics(seed)
    m0, m1 = round(st["before"]), round(st["during"])
    per_replica = prefill_tokens_per_s()
    start, end = phase_windows()[SURGE_PHASE]
    return {
        "rate_per_s": rate, "replicas": replicas, "gpus": replicas * lesson.TP, "more_replicas": replicas + 1,
        "surge_start_s": start, "surge_end_s": end, "surge_duration_s": end - start,
        "documents_expected": round(rate * surge["shares"]["document"] * (end - start)),
        "prompt_before": m0, "prompt_during": m1, "prompt_ratio": m1 / m0,
        "prompt_tokens_per_s_before": rate * m0, "prompt_tokens_per_s_during": rate * m1,
        "prefill_per_replica": per_replica, "prefill_fleet": per_replica * replicas,
        "prefill_replicas_before": rate * m0 / per_replica, "prefill_replicas_during": rate * m1 / per_replica,
        "prefill_share_before": rate * m0 / (per_replica * replicas),
        "prefill_share_during": rate * m1 / (per_replica * replicas),
    }


def request_sizes(seed: int | None = None) -> dict:
    """The request classes' sizes (prompt + output tokens) and what they mean for one replica's KV cache: how
    many whole documents fill the running example's cache (step 1's tokens), and a document's size in chats.

    >>> sizes = request_sizes()
    >>> sizes["document_tokens"], sizes["documents_fill_replica"], round(sizes["document_over_chat"], 2)
    (19800, 20, 15.47)
    """
    from calc.allocation import contiguous_max_concurrency

    data = incident_scenario(seed=seed)
    chat, doc = request_class(data, "chat"), request_class(data, "document")
    doc_tokens = doc["prompt_tokens"] + doc["output_tokens"]
    chat_tokens = chat["prompt_tokens"] + chat["output_tokens"]
    return {"document_tokens": doc_tokens, "chat_tokens": chat_tokens,
            "documents_fill_replica": contiguous_max_concurrency(lesson.KV_CAPACITY_TOKENS, doc_tokens),
            "document_over_chat": doc_tokens / chat_tokens}


def first_crossing_s(series: dict, key: str, threshold: float) -> float:
    """The first sample time (s) at which ``series[key]`` is at or above ``threshold`` (a dashboard alert's
    first sample; None samples never cross).

    >>> first_crossing_s({"t_s": [5.0, 10.0, 15.0], "q": [2, None, 12]}, "q", 10)
    15.0
    """
    return next(t for t, v in zip(series["t_s"], series[key]) if v is not None and v >= threshold)


def crossing_lead_s(series: dict, key: str, threshold: float, phase: int = SURGE_PHASE) -> float:
    """Seconds from the start of traffic phase ``phase`` to :func:`first_crossing_s`.

    >>> crossing_lead_s({"t_s": [60.0, 75.0], "q": [2, 12]}, "q", 10)
    15.0
    """
    return first_crossing_s(series, key, threshold) - phase_windows()[phase][0]
