"""Autoscaling an LLM service: how long a new replica takes, and how much warm headroom covers it.

A new replica serves nothing until its pod is up and its weights are in GPU
memory, so the scale-up delay is ``pod start + weight bytes / load bandwidth``
(the lesson's step 15). Traffic that grows during that window must be absorbed
by replicas already running: that is the warm headroom.

>>> delay = scale_up_delay_s(pod_start_s=60, weights_bytes=141e9, load_bytes_per_s=2e9)
>>> delay
130.5
>>> headroom = warm_headroom(load_rps=10, growth_per_min=0.05, delay_s=delay, replica_capacity_rps=2)
>>> headroom["replicas_now"], headroom["replicas_at_end"], headroom["headroom_replicas"]
(5, 6, 1)
"""

from __future__ import annotations

import math

from calc.errors import CalcError, check_positive, check_range

__all__ = ["scale_up_delay_s", "warm_headroom", "load_after_s", "replicas_needed", "ramp_headroom", "steepest_ramp",
           "rate_at_s", "first_scale_up", "headroom_comparison"]

MAX_S = 30 * 24 * 3600
#: The largest request rate a growth is followed to (req/s): far past any service, and far below a float's
#: overflow, which compounding reaches first otherwise.
MAX_RPS = 1e100


def scale_up_delay_s(*, pod_start_s: float, weights_bytes: float, load_bytes_per_s: float) -> float:
    """Seconds from "scale up" to the new replica serving: pod start + weights / load bandwidth.

    ``pod_start_s`` covers scheduling, pulling the image and starting the engine;
    ``weights_bytes`` is what the replica must read (all its GPUs together, or one
    GPU's share with that GPU's bandwidth); ``load_bytes_per_s`` is the rate it
    reads them (object storage, local NVMe or a peer). CUDA graph capture and
    warm-up belong in ``pod_start_s``.
    Source: the lesson's step 15 (seed ``000_783e2c6cc1bfcb77.txt``: "the scale-up
    delay is pod start plus weights / bandwidth").

    >>> scale_up_delay_s(pod_start_s=45, weights_bytes=16.06e9, load_bytes_per_s=1e9)
    61.06
    """
    pod = check_range("pod_start_s", pod_start_s, 0, MAX_S)
    weights = check_positive("weights_bytes", weights_bytes)
    bandwidth = check_positive("load_bytes_per_s", load_bytes_per_s)
    return pod + weights / bandwidth


def load_after_s(load_rps: float, growth_per_min: float, seconds: float) -> float:
    """Request rate after ``seconds`` of growth compounding at ``growth_per_min`` (0.05 = 5 %/min).

    ``load x (1 + growth) ** (seconds / 60)``. Source: compound growth; the
    rate is the reader's assumption about their traffic.

    >>> round(load_after_s(10, 0.05, 120), 3)
    11.025

    A growth that would pass :data:`MAX_RPS` within the window is refused by name, not overflowed:

    >>> load_after_s(10, 1.0, 20_000)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: growth_per_min 1 over 20000 s takes 10 req/s past 1e+100 req/s; lower growth_per_min or shorten the window (pod start, weights and load bandwidth set it)
    """
    load = check_positive("load_rps", load_rps, allow_zero=True)
    growth = check_range("growth_per_min", growth_per_min, 0.0, 10.0)
    seconds = check_range("seconds", seconds, 0, MAX_S)
    # In logs first: (1 + growth) ** minutes overflows a float long before the window's limit.
    if load > 0 and math.log(load) + math.log1p(growth) * seconds / 60.0 > math.log(MAX_RPS):
        raise CalcError(f"growth_per_min {growth:g} over {seconds:g} s takes {load:g} req/s past {MAX_RPS:g} req/s; "
                        "lower growth_per_min or shorten the window (pod start, weights and load bandwidth set it)",
                        "growth_per_min")
    return load * (1.0 + growth) ** (seconds / 60.0)


def replicas_needed(load_rps: float, replica_capacity_rps: float, *, target_utilization: float = 1.0) -> int:
    """Replicas to serve ``load_rps`` when each sustains ``replica_capacity_rps`` at the latency target.

    ``ceil(load / (capacity x target utilization))``, at least 1.
    Source: capacity planning by division; the capacity is a measured number (or
    the simulator's).

    >>> replicas_needed(11.0, 2.0)
    6
    >>> replicas_needed(11.0, 2.0, target_utilization=0.8)
    7
    """
    load = check_positive("load_rps", load_rps, allow_zero=True)
    capacity = check_positive("replica_capacity_rps", replica_capacity_rps)
    utilization = check_range("target_utilization", target_utilization, 0.05, 1.0)
    # Round away float noise before the ceiling, so that 10 / 2 is exactly 5 replicas.
    return max(1, math.ceil(round(load / (capacity * utilization), 9)))


def warm_headroom(*, load_rps: float, growth_per_min: float, delay_s: float, replica_capacity_rps: float, target_utilization: float = 1.0) -> dict:
    """Replicas to keep running now so that traffic growing over the scale-up delay is still served.

    While a new replica starts, load climbs from ``load_rps`` to
    :func:`load_after_s`; the replicas running at the start must carry that peak.
    Headroom = replicas for the load at the end of the window - replicas for the
    load now; as a fraction of the current load it is ``(1 + g) ** (delay / 60) - 1``.
    Source: the lesson's step 15 ("keep enough warm headroom to cover that
    window"), with compound growth.

    >>> r = warm_headroom(load_rps=40, growth_per_min=0.10, delay_s=300, replica_capacity_rps=2.5)
    >>> r["replicas_now"], r["replicas_at_end"], r["headroom_replicas"], round(r["headroom_fraction"], 3)
    (16, 26, 10, 0.611)
    """
    delay = check_range("delay_s", delay_s, 0, MAX_S)
    end_load = load_after_s(load_rps, growth_per_min, delay)
    now = replicas_needed(load_rps, replica_capacity_rps, target_utilization=target_utilization)
    end = replicas_needed(end_load, replica_capacity_rps, target_utilization=target_utilization)
    return {
        "load_rps": load_rps,
        "load_at_end_rps": end_load,
        "delay_s": delay,
        "replicas_now": now,
        "replicas_at_end": end,
        "headroom_replicas": end - now,
        "headroom_fraction": end_load / load_rps - 1.0 if load_rps > 0 else 0.0,
    }


def ramp_headroom(*, start_rps: float, slope_rps_per_s: float, window_s: float, replica_capacity_rps: float) -> dict:
    """Warm headroom for a linear ramp: the replicas the traffic added during one scale-up window needs.

    A signal that rises only when a replica is full (the queue) asks for a replica
    once the fleet is full, and that replica serves one window later (an autoscaler
    interval plus the scale-up delay). Meanwhile a ramp of ``slope_rps_per_s`` adds
    ``slope x window`` requests/s that the replicas already serving must carry, so
    the fleet must keep ``ceil(slope x window / capacity)`` replicas beyond what the
    load needs: the warm headroom. ``warm_floor`` is the replicas the ramp's start
    needs plus that headroom, the ``min_replicas`` that covers the first window.
    Source: the lesson's step 15 ("keep enough warm headroom to cover that
    window"); :func:`replicas_needed` for the division.

    >>> r = ramp_headroom(start_rps=2, slope_rps_per_s=0.12, window_s=62.6, replica_capacity_rps=6.75)
    >>> round(r["growth_rps"], 2), round(r["growth_replicas"], 2), r["headroom_replicas"], r["warm_floor"]
    (7.51, 1.11, 2, 3)
    >>> ramp_headroom(start_rps=2, slope_rps_per_s=0, window_s=62.6, replica_capacity_rps=6.75)["headroom_replicas"]
    0
    """
    start = check_positive("start_rps", start_rps, allow_zero=True)
    slope = check_range("slope_rps_per_s", slope_rps_per_s, 0.0, 1e6)
    window = check_range("window_s", window_s, 0, MAX_S)
    capacity = check_positive("replica_capacity_rps", replica_capacity_rps)
    growth = slope * window
    # Round away float noise before the ceiling, as replicas_needed does.
    headroom = math.ceil(round(growth / capacity, 9))
    return {
        "slope_rps_per_s": slope,
        "window_s": window,
        "growth_rps": growth,
        "growth_replicas": growth / capacity,
        "headroom_replicas": headroom,
        "replicas_at_start": replicas_needed(start, capacity),
        "warm_floor": replicas_needed(start, capacity) + headroom,
    }


def steepest_ramp(phases: list) -> dict:
    """The steepest rising phase of a traffic profile (``duration_s``, ``rate_per_s``, optional ``end_rate_per_s``).

    Returns its start rate, end rate and slope in requests/s per second (slope 0
    and the first phase's rate when nothing rises). Source: the fleet scenario's
    traffic format (:mod:`calc.sim.fleet`).

    >>> steepest_ramp([{"duration_s": 30, "rate_per_s": 2},
    ...                {"duration_s": 150, "rate_per_s": 2, "end_rate_per_s": 20}])
    {'start_rps': 2, 'end_rps': 20, 'slope_rps_per_s': 0.12}
    """
    if not phases:
        raise CalcError("traffic must have at least one phase; got none", "traffic")
    best = {"start_rps": phases[0]["rate_per_s"], "end_rps": phases[0]["rate_per_s"], "slope_rps_per_s": 0.0}
    for phase in phases:
        start, end = phase["rate_per_s"], phase.get("end_rate_per_s", phase["rate_per_s"])
        slope = (end - start) / check_positive("traffic.duration_s", phase["duration_s"])
        if slope > best["slope_rps_per_s"]:
            best = {"start_rps": start, "end_rps": end, "slope_rps_per_s": slope}
    return best


def rate_at_s(phases: list, t_s: float) -> float:
    """A fleet scenario's arrival rate (requests/s) at ``t_s``: each traffic phase ramps linearly from its
    ``rate_per_s`` to its ``end_rate_per_s`` (or holds ``rate_per_s``); after the last phase, its end rate.

    >>> rate_at_s([{"duration_s": 60, "rate_per_s": 2}, {"duration_s": 120, "rate_per_s": 2, "end_rate_per_s": 8}], 120)
    5.0
    """
    start = 0.0
    for p in phases:
        end = start + p["duration_s"]
        if t_s <= end:
            stop = p.get("end_rate_per_s", p["rate_per_s"])
            return p["rate_per_s"] + (stop - p["rate_per_s"]) * (t_s - start) / p["duration_s"]
        start = end
    return phases[-1].get("end_rate_per_s", phases[-1]["rate_per_s"])


def first_scale_up(summary: dict, phases: list, *, delay_s: float, replica_capacity_rps: float) -> dict:
    """A fleet run's first scale-up: when the autoscaler decided (``up_s``, on which signal ``value``), when the
    new replica served (``ready_s``: ``delay_s`` later, :func:`scale_up_delay_s`), the traffic at both moments
    (:func:`rate_at_s`) and the traffic at ``ready_s`` in replicas' worth (``ready_multiple``).

    >>> run = {"scale_events": [{"t_s": 120.0, "value": 5.0}]}
    >>> phases = [{"duration_s": 60, "rate_per_s": 2}, {"duration_s": 120, "rate_per_s": 2, "end_rate_per_s": 8}]
    >>> first_scale_up(run, phases, delay_s=30, replica_capacity_rps=2.5)
    {'up_s': 120.0, 'value': 5.0, 'ready_s': 150.0, 'rate_at_up_rps': 5.0, 'rate_at_ready_rps': 6.5, 'ready_multiple': 2.6}
    """
    first = summary["scale_events"][0]
    ready = first["t_s"] + delay_s
    rate_at_ready = rate_at_s(phases, ready)
    return {"up_s": first["t_s"], "value": first["value"], "ready_s": ready,
            "rate_at_up_rps": rate_at_s(phases, first["t_s"]), "rate_at_ready_rps": rate_at_ready,
            "ready_multiple": rate_at_ready / replica_capacity_rps}


def headroom_comparison(warm: dict, queue: dict, gpu_util: dict) -> dict:
    """What warm headroom costs and buys against scaling on the queue alone and on GPU-Util (step 15): the
    extra replica-hours over the queue's run, the hours saved against GPU-Util's, and GPU-Util's TTFT p99 over
    the headroom's (each a run summary's ``replica_hours`` and ``ttft_p99_s``).

    >>> headroom_comparison({"replica_hours": 3, "ttft_p99_s": 0.5}, {"replica_hours": 2, "ttft_p99_s": 60},
    ...                     {"replica_hours": 4, "ttft_p99_s": 1.5})
    {'extra_hours_fraction': 0.5, 'hours_saving_fraction': 0.25, 'p99_ratio': 3.0}
    """
    return {"extra_hours_fraction": warm["replica_hours"] / queue["replica_hours"] - 1,
            "hours_saving_fraction": 1 - warm["replica_hours"] / gpu_util["replica_hours"],
            "p99_ratio": gpu_util["ttft_p99_s"] / warm["ttft_p99_s"]}
