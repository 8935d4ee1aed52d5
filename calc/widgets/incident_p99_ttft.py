"""Widgets, drills and facts of step 19, "Incident: TTFT p99 at 36 seconds" (docs/lesson/19-incident-p99-ttft.md).

The title's figure is computed: the TTFT panel's peak (:func:`calc.incident.alert_page`),
which the preset is tuned to reach (:data:`calc.incident.TUNING_KNOB`).

The incident is the simulator's preset ``step19-incident-p99``: three replicas of
the running example behind a least-outstanding router, 15 requests/s of chat
and a trickle of batch jobs, and for one minute 8% of the requests are long
documents at the same request rate. The page shows it as an on-call dashboard
(:func:`dashboard`): request rate and GPU-Util stay flat while the prompt tokens
per request, the queue and the KV cache tell the story.

The dashboard (:func:`calc.widgets.views.dashboard_views`) adds one panel the
fleet's time series does not carry: the mean prompt length of the requests that
arrived in each sample interval (:func:`calc.incident.prompt_tokens_per_sample`).
The scenario, its runs and its request logs are :mod:`calc.incident`.

>>> scenario = incident_scenario(seed=3)
>>> scenario["fleet"]["replicas"], scenario["fleet"]["traffic"][1]["shares"]["document"]
(3, 0.08)
>>> round(prefill_tokens_per_s(), -2)
12500.0
"""

from __future__ import annotations

import random
import statistics
from typing import Annotated

from calc import lesson
from calc.incident import (
    HIGH_SHARE, LOW_SHARE, PRESET, TTFT_ALERT_FOR_S, TTFT_ALERT_S, SURGE_PHASE, alert_page, crossing_lead_s,
    first_crossing_s, incident_run, incident_scenario, prefill_tokens_per_s, prompt_statistics, request_class,
    request_sizes, seed_sweep, surge_load, values_in_phase,
)
from calc.units import format_number, round_sig
from calc.widgets.framework import Choice, IntRange, drill, fact, facts_of, output, stream
from calc.widgets.views import FRAME, SEED, dashboard_views, seconds_text, share_text

__all__ = ["PRESET", "dashboard", "documents_per_minute_drill", "prefill_load_drill", "facts"]

# Alert thresholds the page reads the run against (illustrative on-call rules, not recommendations).
QUEUE_ALERT = 10  # requests waiting, fleet-wide
KV_ALERT = 0.9  # share of the KV cache in use



#: Step 19's traffic under neutral names, so the controls do not give the diagnosis away before the reader has
#: read the dashboard (the quiz's answer reveals them): key -> (label, share of long documents in the surge minute;
#: None keeps the incident's own mix). B has no documents, C half the incident's share, D twice it
#: (:data:`calc.incident.LOW_SHARE`, :data:`calc.incident.HIGH_SHARE`).
SCENARIOS = {
    "a": ("Scenario A (the alert)", None),
    "b": ("Scenario B", 0.0),
    "c": ("Scenario C", LOW_SHARE),
    "d": ("Scenario D", HIGH_SHARE),
}
SCENARIO = Choice(tuple((key, label) for key, (label, _) in SCENARIOS.items()), label="Traffic",
                  help="the same request rate in every scenario; what else differs is for the dashboard to show")


@stream(budget_s=4.0)
def dashboard(
    seed: Annotated[int, SEED] = 3,
    scenario: Annotated[str, SCENARIO] = "a",
    replicas: Annotated[int, IntRange(1, 8, label="Replicas", help="each the running example: 4 GPUs")] = 3,
    frame_interval_s: Annotated[float, FRAME] = 5.0,
):
    """The incident as an on-call dashboard: rate, GPU-Util, TTFT, tokens per request, queue, KV, preemptions.

    The TTFT panel draws the alert's threshold (:data:`calc.incident.TTFT_ALERT_S`) the p99 crosses. Two TTFT p99
    tiles, each named for what it measures: the panel's peak so far (the 10 s window, the figure the title
    quotes) and the p99 over all requests of the run so far.
    """
    share = SCENARIOS[scenario][1]
    views = dashboard_views(incident_scenario(seed=seed, document_share=share, replicas=replicas), frame_interval_s)
    peak = None
    for v in views:
        for figure in (v.get("figures") or {}).values():
            # The dashboard's crosshair hovers the other panels at the reader's time alone (no y): in Plotly's
            # default "closest" mode a panel answers that only where its line passes mid-height, so hover by x.
            figure["layout"]["hovermode"] = "x"
        if "ttft" in (v.get("figures") or {}):
            _draw_alert(v["figures"]["ttft"]["layout"])
        window = [x for x in (v.get("series") or {}).get("ttft_p99_s", ()) if x is not None]
        peak = max([peak] + window if peak is not None else window, default=None)
        v["outputs"] = _ttft_tiles(v["outputs"], peak)
        yield v


def _ttft_tiles(outputs: dict, peak_s: float | None) -> dict:
    """The outputs with the run's TTFT p99 labelled as such and the panel's peak beside it."""
    out = {}
    for key, o in outputs.items():
        if key == "ttft_p99_s":
            out["ttft_p99_peak_s"] = output("ttft_p99_peak_s", "TTFT p99 at the peak (10 s window)", peak_s or 0, "s",
                                            text=seconds_text(peak_s))
            o = {**o, "label": "TTFT p99 over the run"}
        out[key] = o
    return out


def _draw_alert(layout: dict) -> None:
    """The alert's threshold as a dashed line across the TTFT panel, labelled with its rule."""
    layout["shapes"] = [{"type": "line", "xref": "paper", "x0": 0, "x1": 1, "y0": TTFT_ALERT_S, "y1": TTFT_ALERT_S,
                         "line": {"dash": "dash", "width": 1.5, "color": "#c62828"}}]
    layout["annotations"] = [{"xref": "paper", "x": 1, "xanchor": "right", "y": TTFT_ALERT_S, "yanchor": "bottom",
                              "showarrow": False, "text": f"alert {seconds_text(TTFT_ALERT_S)}",
                              "font": {"size": 11, "color": "#c62828"}}]


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
    ('documents', 0.05, 69, 66)
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
    ('replicas', '2.31 replicas')
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
# Each fact is computed alone when a page names it ({{ name }} here, {{ incident_p99_ttft:name }} elsewhere); the
# runs they share are cached in calc.incident (incident_run, prompt_statistics, surge_load).
def _tokens(value: float) -> str:
    return format_number(round(value))


def _summary() -> dict:
    return incident_run().summary


def _series() -> dict:
    return incident_run().time_series


def _class_summary(name: str) -> dict:
    return next(c for c in _summary()["classes"] if c["name"] == name)


def _class(name: str) -> dict:
    return request_class(incident_scenario(), name)


def _mean_in_phase(key: str, phase: int) -> float:
    return statistics.fmean(values_in_phase(_series(), key, phase))


def _max_in_phase(key: str, phase: int):
    return max(values_in_phase(_series(), key, phase))


def _share_run(share: float) -> dict:
    return incident_run(document_share=share).summary


@fact
def low_share():
    return format_number(LOW_SHARE)


@fact
def high_share():
    return format_number(HIGH_SHARE)


@fact
def low_share_pct():
    """>>> low_share_pct(), high_share_pct()
    ('4%', '16%')
    """
    return share_text(LOW_SHARE)


@fact
def high_share_pct():
    return share_text(HIGH_SHARE)


@fact
def quiet_ttft_p99():
    return seconds_text(_share_run(0.0)["ttft_p99_s"])


@fact
def low_ttft_p99():
    return seconds_text(_share_run(LOW_SHARE)["ttft_p99_s"])


@fact
def low_queue_max():
    return format_number(_share_run(LOW_SHARE)["queue_depth_max"])


@fact
def high_ttft_p99():
    return seconds_text(_share_run(HIGH_SHARE)["ttft_p99_s"])


@fact
def high_queue_max():
    return format_number(_share_run(HIGH_SHARE)["queue_depth_max"])


@fact
def high_run_s():
    return format_number(round(_share_run(HIGH_SHARE)["duration_s"]))


@fact
def more_replicas():
    return str(surge_load()["more_replicas"])


def _more_replicas_run() -> dict:
    return incident_run(replicas=surge_load()["more_replicas"]).summary


@fact
def more_ttft_p99():
    return seconds_text(_more_replicas_run()["ttft_p99_s"])


@fact
def more_queue_max():
    return format_number(_more_replicas_run()["queue_depth_max"])


@fact
def doc_tokens():
    return f"{request_sizes()['document_tokens']:,}"


@fact
def max_model_len():
    return f"{incident_scenario()['max_model_len']:,}"


@fact
def queue_alert_lead_s():
    """The queue alert fires this long after the surge starts.

    >>> queue_alert_lead_s(), queue_alert_s()
    ('10', '70')
    """
    return format_number(crossing_lead_s(_series(), "queue_depth", QUEUE_ALERT))


@fact
def queue_alert():
    return str(QUEUE_ALERT)


@fact
def queue_alert_s():
    return format_number(first_crossing_s(_series(), "queue_depth", QUEUE_ALERT))


@fact
def kv_alert_pct():
    return share_text(KV_ALERT)


@fact
def kv_alert_s():
    return format_number(first_crossing_s(_series(), "kv_use_fraction", KV_ALERT))


@fact
def ttft_alert():
    return seconds_text(TTFT_ALERT_S)


@fact
def ttft_alert_s():
    return format_number(alert_page()["crossed_s"])


@fact
def ttft_alert_for():
    return seconds_text(TTFT_ALERT_FOR_S)


@fact
def ttft_alert_fired_s():
    """>>> ttft_alert(), ttft_alert_for(), ttft_alert_s(), ttft_alert_fired_s()
    ('5 s', '30 s', '80', '110')
    """
    return format_number(alert_page()["fired_s"])


@fact
def alert_peak_title():
    """The title quotes the panel's peak, the dashboard's "TTFT p99 at the peak" tile, to the whole second.

    >>> alert_peak_title(), alert_peak(), alert_peak_at_s()
    ('36 seconds', '36.3 s', '155')
    """
    return f"{round(alert_page()['peak_s'])} seconds"


@fact
def alert_peak():
    return seconds_text(alert_page()["peak_s"])


@fact
def alert_peak_at_s():
    return format_number(alert_page()["peak_at_s"])


@fact
def replicas():
    """>>> replicas(), gpus(), rate()
    ('3', '12', '15')
    """
    return str(surge_load()["replicas"])


@fact
def gpus():
    return str(surge_load()["gpus"])


@fact
def rate():
    return format_number(surge_load()["rate_per_s"])


@fact
def surge_start_s():
    return format_number(surge_load()["surge_start_s"])


@fact
def surge_end_s():
    return format_number(surge_load()["surge_end_s"])


@fact
def surge_duration_s():
    return format_number(surge_load()["surge_duration_s"])


@fact
def run_s():
    return format_number(round(_summary()["duration_s"]))


@fact
def chat_prompt():
    return _tokens(_class("chat")["prompt_tokens"])


@fact
def chat_output():
    return _tokens(_class("chat")["output_tokens"])


@fact
def doc_prompt():
    return _tokens(_class("document")["prompt_tokens"])


@fact
def doc_output():
    return _tokens(_class("document")["output_tokens"])


@fact
def batch_prompt():
    return _tokens(_class("batch")["prompt_tokens"])


@fact
def batch_output():
    return _tokens(_class("batch")["output_tokens"])


@fact
def batch_share_pct():
    return share_text(_class("batch")["share"])


@fact
def doc_share_pct():
    return share_text(incident_scenario()["fleet"]["traffic"][SURGE_PHASE]["shares"]["document"])


@fact
def docs_expected():
    return format_number(surge_load()["documents_expected"])


@fact
def docs_sent():
    return str(prompt_statistics()["documents_in_surge"])


@fact
def requests_total():
    return f"{_summary()['requests_total']:,}"


@fact
def ttft_p99():
    """The run's TTFT p99 over all its requests (the panel's peak is :func:`alert_peak`).

    >>> ttft_p99()
    '28.8 s'
    """
    return seconds_text(_summary()["ttft_p99_s"])


@fact
def ttft_p50():
    return seconds_text(_summary()["ttft_p50_s"])


@fact
def ttft_p90():
    return seconds_text(_summary()["ttft_p90_s"])


@fact
def ttft_p99_window_peak():
    return seconds_text(max(v for v in _series()["ttft_p99_s"] if v is not None))


@fact
def ttft_p99_before():
    return seconds_text(_max_in_phase("ttft_p99_s", 0))


@fact
def chat_ttft_p99():
    return seconds_text(_class_summary("chat")["ttft_p99_s"])


@fact
def doc_ttft_p99():
    return seconds_text(_class_summary("document")["ttft_p99_s"])


@fact
def itl_p50():
    return seconds_text(_summary()["itl_p50_s"])


@fact
def itl_p99():
    return seconds_text(_summary()["itl_p99_s"])


@fact
def e2e_p99():
    return seconds_text(_summary()["e2e_p99_s"])


@fact
def rate_before():
    return format_number(_mean_in_phase("requests_per_s", 0))


@fact
def rate_during():
    return format_number(_mean_in_phase("requests_per_s", SURGE_PHASE))


@fact
def gpu_util_before():
    """GPU-Util looks the same before and during the surge.

    >>> gpu_util_before(), gpu_util_during()
    ('100%', '100%')
    """
    return share_text(_mean_in_phase("gpu_util_reported", 0))


@fact
def gpu_util_during():
    return share_text(_mean_in_phase("gpu_util_reported", SURGE_PHASE))


@fact
def gpu_util_run():
    return share_text(_summary()["gpu_util_reported"])


@fact
def compute_before():
    return share_text(_mean_in_phase("compute_utilization", 0))


@fact
def compute_during():
    return share_text(_mean_in_phase("compute_utilization", SURGE_PHASE))


@fact
def queue_before_max():
    return format_number(_max_in_phase("queue_depth", 0))


@fact
def queue_max():
    return format_number(_summary()["queue_depth_max"])


@fact
def kv_before_peak():
    return share_text(_max_in_phase("kv_use_fraction", 0))


@fact
def kv_peak():
    return share_text(_summary()["kv_use_peak"])


@fact
def running_max():
    return format_number(_summary()["running_max"])


@fact
def preemptions():
    return format_number(_summary()["preemptions"])


@fact
def doc_prompt_measured():
    return _tokens(prompt_statistics()["document"])


@fact
def chat_prompt_measured():
    return _tokens(prompt_statistics()["chat"])


@fact
def prefill_share_during():
    """The share of the fleet's prefill compute the prompts alone take, during the surge and before it.

    >>> prefill_share_during(), prefill_share_before()
    ('77%', '41%')
    """
    return share_text(surge_load()["prefill_share_during"])


@fact
def prefill_share_before():
    return share_text(surge_load()["prefill_share_before"])


@fact
def prompt_before():
    return _tokens(surge_load()["prompt_before"])


@fact
def prompt_during():
    return _tokens(surge_load()["prompt_during"])


@fact
def prompt_ratio():
    return format_number(surge_load()["prompt_ratio"], 2)


@fact
def prompt_tokens_per_s_before():
    return _tokens(surge_load()["prompt_tokens_per_s_before"])


@fact
def prompt_tokens_per_s_during():
    return _tokens(surge_load()["prompt_tokens_per_s_during"])


@fact
def prefill_per_replica():
    return _tokens(surge_load()["prefill_per_replica"])


@fact
def prefill_per_replica_doc():
    return _tokens(prefill_tokens_per_s(prompt_tokens=_class("document")["prompt_tokens"]))


@fact
def prefill_fleet():
    return _tokens(surge_load()["prefill_fleet"])


@fact
def prefill_replicas_before():
    return format_number(surge_load()["prefill_replicas_before"])


@fact
def prefill_replicas_during():
    return format_number(surge_load()["prefill_replicas_during"])


@fact
def kv_tokens():
    """The running example's KV cache, as step 1 quotes it."""
    return f"{lesson.KV_CAPACITY_TOKENS:,}"


@fact
def docs_fill_replica():
    return str(request_sizes()["documents_fill_replica"])


@fact
def doc_over_chat():
    return format_number(request_sizes()["document_over_chat"], 2)


@fact
def sweep_seeds():
    return str(len(seed_sweep()))


@fact
def sweep_min():
    """The run's TTFT p99 over the seed sweep: the same traffic, other random draws.

    >>> sweep_min(), sweep_max(), sweep_median()
    ('17.2 s', '76.8 s', '45.6 s')
    """
    return seconds_text(min(seed_sweep()))


@fact
def sweep_max():
    return seconds_text(max(seed_sweep()))


@fact
def sweep_median():
    return seconds_text(statistics.median(seed_sweep()))


@fact
def seed():
    return str(incident_scenario()["seed"])


@fact
def cost_usd():
    return f"${_summary()['cost_usd']:,.2f}"


@fact
def replica_hours():
    return f"{format_number(_summary()['replica_hours'])} h"


facts = facts_of(__name__)
