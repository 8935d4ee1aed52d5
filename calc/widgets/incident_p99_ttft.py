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
    HIGH_SHARE, LOW_SHARE, PRESET, TTFT_ALERT_FOR_S, TTFT_ALERT_S, SURGE_PHASE, alert_page, incident_run, incident_scenario, phase_windows, prefill_tokens_per_s,
    prompt_statistics, request_class, seed_sweep, values_in_phase,
)
from calc.units import format_number, round_sig
from calc.widgets.framework import Choice, IntRange, drill, output, stream
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
def _tokens(value: float) -> str:
    return format_number(round(value))


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose, from the incident run and calc (computed once per build).

    >>> f = facts()
    >>> f["replicas"], f["rate"], f["gpu_util_before"], f["kv_peak"]
    ('3', '15', '100%', '100%')
    >>> f["alert_peak_title"], f["alert_peak"], f["alert_peak_at_s"], f["ttft_p99"]
    ('36 seconds', '36.3 s', '155', '28.8 s')
    >>> f["ttft_alert"], f["ttft_alert_for"], f["ttft_alert_s"], f["ttft_alert_fired_s"]
    ('5 s', '30 s', '80', '110')
    """
    data = incident_scenario()
    result = incident_run()
    s, ts = result.summary, result.time_series
    windows = phase_windows()
    chat, doc, batch = request_class(data, "chat"), request_class(data, "document"), request_class(data, "batch")
    surge = data["fleet"]["traffic"][SURGE_PHASE]
    st = prompt_statistics()
    m0, m1, docs = round(st["before"]), round(st["during"]), st["documents_in_surge"]
    rate = surge["rate_per_s"]
    per_replica = prefill_tokens_per_s()
    per_replica_doc = prefill_tokens_per_s(prompt_tokens=doc["prompt_tokens"])
    replicas = data["fleet"]["replicas"]
    sweep = seed_sweep()
    kv_tokens = lesson.KV_CAPACITY_TOKENS  # the running example's capacity, as step 1 quotes it
    p99_window = [v for v in ts["ttft_p99_s"] if v is not None]
    before_p99 = values_in_phase(ts, "ttft_p99_s", 0)
    classes = {c["name"]: c for c in s["classes"]}
    doc_tokens = doc["prompt_tokens"] + doc["output_tokens"]
    chat_tokens = chat["prompt_tokens"] + chat["output_tokens"]
    queue_alert = next(t for t, q in zip(ts["t_s"], ts["queue_depth"]) if q >= QUEUE_ALERT)
    kv_alert = next(t for t, k in zip(ts["t_s"], ts["kv_use_fraction"]) if k >= KV_ALERT)
    quiet, low, high = (incident_run(document_share=x).summary for x in (0.0, LOW_SHARE, HIGH_SHARE))
    page = alert_page()
    more = incident_run(replicas=replicas + 1).summary
    return {
        "low_share": format_number(LOW_SHARE),
        "high_share": format_number(HIGH_SHARE),
        "low_share_pct": f"{format_number(LOW_SHARE * 100)}%",
        "high_share_pct": f"{format_number(HIGH_SHARE * 100)}%",
        "quiet_ttft_p99": seconds_text(quiet["ttft_p99_s"]),
        "low_ttft_p99": seconds_text(low["ttft_p99_s"]),
        "low_queue_max": format_number(low["queue_depth_max"]),
        "high_ttft_p99": seconds_text(high["ttft_p99_s"]),
        "high_queue_max": format_number(high["queue_depth_max"]),
        "high_run_s": format_number(round(high["duration_s"])),
        "more_replicas": str(replicas + 1),
        "more_ttft_p99": seconds_text(more["ttft_p99_s"]),
        "more_queue_max": format_number(more["queue_depth_max"]),
        "doc_tokens": f"{doc_tokens:,}",
        "max_model_len": f"{data['max_model_len']:,}",
        "queue_alert_lead_s": format_number(queue_alert - windows[SURGE_PHASE][0]),
        "queue_alert": str(QUEUE_ALERT),
        "queue_alert_s": format_number(queue_alert),
        "kv_alert_pct": share_text(KV_ALERT),
        "kv_alert_s": format_number(kv_alert),
        "ttft_alert": seconds_text(TTFT_ALERT_S),
        "ttft_alert_s": format_number(page["crossed_s"]),
        "ttft_alert_for": seconds_text(TTFT_ALERT_FOR_S),
        "ttft_alert_fired_s": format_number(page["fired_s"]),
        # The title quotes the panel's peak, the dashboard's "TTFT p99 at the peak" tile, to the whole second.
        "alert_peak_title": f"{round(page['peak_s'])} seconds",
        "alert_peak": seconds_text(page["peak_s"]),
        "alert_peak_at_s": format_number(page["peak_at_s"]),
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
        "ttft_p99": seconds_text(s["ttft_p99_s"]),
        "ttft_p50": seconds_text(s["ttft_p50_s"]),
        "ttft_p90": seconds_text(s["ttft_p90_s"]),
        "ttft_p99_window_peak": seconds_text(max(p99_window)),
        "ttft_p99_before": seconds_text(max(before_p99)),
        "chat_ttft_p99": seconds_text(classes["chat"]["ttft_p99_s"]),
        "doc_ttft_p99": seconds_text(classes["document"]["ttft_p99_s"]),
        "itl_p50": seconds_text(s["itl_p50_s"]),
        "itl_p99": seconds_text(s["itl_p99_s"]),
        "e2e_p99": seconds_text(s["e2e_p99_s"]),
        "rate_before": format_number(statistics.fmean(values_in_phase(ts, "requests_per_s", 0))),
        "rate_during": format_number(statistics.fmean(values_in_phase(ts, "requests_per_s", SURGE_PHASE))),
        "gpu_util_before": share_text(statistics.fmean(values_in_phase(ts, "gpu_util_reported", 0))),
        "gpu_util_during": share_text(statistics.fmean(values_in_phase(ts, "gpu_util_reported", SURGE_PHASE))),
        "gpu_util_run": share_text(s["gpu_util_reported"]),
        "compute_before": share_text(statistics.fmean(values_in_phase(ts, "compute_utilization", 0))),
        "compute_during": share_text(statistics.fmean(values_in_phase(ts, "compute_utilization", SURGE_PHASE))),
        "queue_before_max": format_number(max(values_in_phase(ts, "queue_depth", 0))),
        "queue_max": format_number(s["queue_depth_max"]),
        "kv_before_peak": share_text(max(values_in_phase(ts, "kv_use_fraction", 0))),
        "kv_peak": share_text(s["kv_use_peak"]),
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
        "kv_tokens": f"{kv_tokens:,}",
        "docs_fill_replica": str(kv_tokens // doc_tokens),
        "doc_over_chat": format_number(doc_tokens / chat_tokens, 2),
        "sweep_seeds": str(len(sweep)),
        "sweep_min": seconds_text(min(sweep)),
        "sweep_max": seconds_text(max(sweep)),
        "sweep_median": seconds_text(statistics.median(sweep)),
        "seed": str(data["seed"]),
        "cost_usd": f"${s['cost_usd']:,.2f}",
        "replica_hours": f"{format_number(s['replica_hours'])} h",
    }
