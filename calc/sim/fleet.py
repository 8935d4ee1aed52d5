"""The simulation engine: one event loop, one summary, one ``until`` rule, for a fleet and for a single replica.

A single replica is a fleet of one: :class:`calc.sim.run.Simulation` is a
:class:`Fleet` of one replica that keeps the replica's time series
(:class:`calc.sim.metrics.TimeSeries`) and the summary's shared keys only.
The scenario of a fleet is :mod:`calc.sim.fleet_scenario`'s
:class:`FleetScenario` (a replica's scenario plus replicas, router, pools,
autoscaler and traffic phases).

One heap of ``(time_ns, priority, seq, event)`` (:class:`calc.sim.events.EventQueue`)
runs every replica, in SimPy's style: one small loop pops the earliest event
and handles it. Events: an arrival (the next one is pushed as each is
handled; routed at once to a serving replica of the request's pool), the end
of a replica's engine step, autoscaler ticks and replicas becoming ready. At
one instant an arrival comes before a step end, a step end before a control
event, and events of one kind in the order they were pushed.

The ``until`` rule (SimPy's ``run(until=t)``): ``advance(until_ns=t)``
handles the events before ``t`` and none at ``t`` or later; the samples of the
time series due at or before ``t`` are then taken (nothing can change the
state before ``t`` any more). A request arrives (becomes schedulable) one
request overhead after it is sent (:mod:`calc.sim.arrivals`). So five requests
sent at ``t = 0`` arrive at ``t = o``, the overhead: ``advance(until_ns=o)``
handles no event; ``advance(until_ns=o + 1)`` handles the five arrivals.
``advance(max_events=n)`` stops after ``n`` events.

The fast paths (the fleet-of-one step chain, same-instant arrivals, fused
decode steps, counted block crossings) are fenced in :mod:`calc.sim.fast`,
each with its general twin and one switch.

Replicas are paid for from the moment they are requested (pod start) to the
moment they are gone (scale-down: they take no new requests, finish the ones
they hold, then go). Every figure comes from the replicas' own engine
(:class:`calc.sim.engine.Replica`), so a fleet of one replica gives exactly
the numbers of :func:`calc.sim.run.simulate` (tested).

>>> fs = FleetScenario.from_dict({"workload": {"requests": 60, "rate_per_s": 6},
...                               "fleet": {"replicas": 2, "router": "least-outstanding"}})
>>> r = simulate_fleet(fs)
>>> r.summary["requests_completed"], r.summary["replicas_max"], r.summary["replica_hours"]
(60, 2, 0.00823175)
>>> f = Fleet(Scenario.from_dict({"workload": {"requests": 5, "arrival": "all-at-once"}}))
>>> o = f.request_overhead_ns
>>> f.advance(until_ns=o), f.events, f.advance(until_ns=o + 1), f.events
(False, 0, False, 5)
"""

from __future__ import annotations

import bisect
import math
from dataclasses import dataclass

from calc.cost import replica_usd_per_hour, usd_per_million_tokens
from calc.errors import CalcError
from calc.sim.arrivals import ClosedLoopClients, OpenArrivals, closed_loop_horizon_ns, request_overhead_s
from calc.sim.autoscaler import Autoscaler, scale_up_delay_ns
from calc.sim.engine import Replica
from calc.sim.events import ARRIVAL, CONTROL, STEP_END, EventQueue
from calc.sim.fast import enabled as fast_path_enabled
from calc.sim.fleet_scenario import FleetConfig, FleetScenario, Phase, as_fleet_scenario, fleet_requests
from calc.sim.hardware import replica_hardware
from calc.sim.metrics import RankedInts, WindowSink, rank_value, ranked_stats, weighted_ranks
from calc.sim.router import class_routes, make_router
from calc.sim.scenario import Scenario
from calc.sim.scheduler import TICKS
from calc.sim.speculative_step import advance_ticks, bound_speculation
from calc.sim.static_batching import StaticReplica
from calc.units import NS_PER_S, SECONDS_PER_HOUR, round_sig

__all__ = ["Phase", "FleetConfig", "FleetScenario", "as_fleet_scenario", "fleet_requests", "Fleet", "Result",
           "FleetResult", "simulate_fleet", "summarize", "build_replica", "engine_scheduler_config",
           "SERIES_KEYS",
           # the ranked metrics, now in calc.sim.metrics, under their old address too
           "RankedInts", "WindowSink", "rank_value", "ranked_stats"]

SERIES_KEYS = ("t_s", "queue_depth", "running", "kv_use_fraction", "kv_waste_fraction", "ttft_p50_s", "ttft_p99_s",
               "itl_p50_s", "itl_p99_s", "output_tokens_per_s", "requests_per_s", "gpu_util_reported",
               "compute_utilization", "replicas", "preemptions", "prefix_hit_rate")

_weighted_ranks = weighted_ranks  # its old name


def _r(value, digits: int = 6):
    return None if value is None else round_sig(value, digits)


def build_replica(scenario, hardware, *, step_time_s=None, sink=None, name: int = 0):
    """A :class:`~calc.sim.engine.Replica` (or :class:`~calc.sim.static_batching.StaticReplica`) for ``scenario``.

    ``hardware`` is :func:`calc.sim.hardware.replica_hardware` of the scenario;
    ``step_time_s`` replaces the roofline's step price (tests use a simple one).

    >>> s = Scenario(); build_replica(s, replica_hardware(s)).total_blocks
    24965
    """
    step = step_time_s if step_time_s is not None else hardware.price_step
    if scenario.batching == "static":
        return StaticReplica(scenario.static_batch_size, hardware.kv_cache_tokens, step,
                             max_model_len=scenario.max_model_len, flops=hardware.flops,
                             peak_flops_per_s=hardware.peak_flops_per_s, sink=sink, name=name)
    return Replica(engine_scheduler_config(scenario), hardware.kv_cache_blocks, step,
                   speculation=bound_speculation(scenario.speculation, hardware),
                   flops=hardware.flops, peak_flops_per_s=hardware.peak_flops_per_s, sink=sink, name=name)


def engine_scheduler_config(scenario):
    """The scenario's :class:`~calc.sim.scheduler.SchedulerConfig` as its engine fills a step.

    The scenario gives the limits (``max_num_seqs``, the token budget, chunked prefill); the engine profile
    (:mod:`calc.engine_profiles`) says whether a prompt may be split across steps: TensorRT-LLM's
    in-flight batching (profile ``nim-trtllm``) admits a prompt only whole (``context_chunking`` off), and
    its capacity scheduler admits a request only when it fits to completion (``capacity_policy``); vLLM 0.6's
    multi-step scheduling decodes in windows of ``scheduler_steps`` steps, admitting only at their ends.

    >>> engine_scheduler_config(Scenario(engine="nim-trtllm")).context_chunking, engine_scheduler_config(Scenario()).context_chunking
    (False, True)
    >>> engine_scheduler_config(Scenario(engine="nim-trtllm")).capacity_policy
    'guaranteed-no-evict'
    >>> engine_scheduler_config(Scenario(engine="vllm-0.6-multistep")).scheduler_steps   # its multi-step windows
    10
    """
    from dataclasses import replace

    from calc.engine_profiles import get_profile

    config = scenario.scheduler_config()
    profile = get_profile(scenario.engine)
    if ((profile.context_chunking, profile.capacity_policy, profile.scheduler_steps)
            == (config.context_chunking, config.capacity_policy, config.scheduler_steps)):
        return config
    return replace(config, context_chunking=profile.context_chunking, capacity_policy=profile.capacity_policy,
                   scheduler_steps=profile.scheduler_steps)


@dataclass(frozen=True)
class Result:
    """A finished run: ``summary`` (flat JSON-ready dict, plus ``classes``), ``time_series`` and ``scenario``.

    A fleet's time series has the columns :data:`SERIES_KEYS`; a single
    replica's (:class:`calc.sim.run.Simulation`) those of :class:`calc.sim.metrics.TimeSeries`.

    >>> sorted(Result(summary={}, time_series={}, scenario={}).to_dict())
    ['scenario', 'summary', 'time_series']
    >>> r = simulate_fleet(Scenario.from_dict({"workload": {"requests": 10, "rate_per_s": 5}}))
    >>> type(r) is FleetResult, r.time_series["t_s"][:2]
    (True, [1.0, 2.0])
    """

    summary: dict
    time_series: dict
    scenario: dict

    def to_dict(self) -> dict:
        """Everything as JSON-ready data."""
        return {"summary": self.summary, "time_series": self.time_series, "scenario": self.scenario}


FleetResult = Result  # a fleet's result and a replica's are one class


class _Member:
    """A replica in the fleet, with its life times: requested, ready, removed (ns; None while not yet)."""

    __slots__ = ("id", "pool", "rep", "start_ns", "ready_ns", "removed_ns", "draining", "snap")

    def __init__(self, mid, pool, rep, start_ns, ready_ns):
        self.id = mid
        self.pool = pool
        self.rep = rep
        self.start_ns = start_ns
        self.ready_ns = ready_ns
        self.removed_ns = None
        self.draining = False
        self.snap = None  # autoscaler's last reading: (t_ns, busy_ns, queue integral, kv integral)

    @property
    def outstanding(self) -> int:
        """Requests in flight on this replica (for the least-outstanding router)."""
        return self.rep.outstanding


class _Pool:
    __slots__ = ("index", "spec", "scenario", "router", "scaler", "delay_ns", "serving", "starting", "members")

    def __init__(self, index, spec, scenario, delay_ns):
        self.index = index
        self.spec = spec
        self.scenario = scenario
        self.router = make_router(spec.router)
        self.scaler = Autoscaler(spec.autoscaler) if spec.autoscaler else None
        self.delay_ns = delay_ns
        self.serving: list[_Member] = []
        self.starting: list[_Member] = []
        self.members: list[_Member] = []


def _flops_done(rep) -> float | None:
    """FLOPs a replica has done (steps counted when they start), as its compute utilization counts them."""
    if rep.flops is None or not rep.peak_flops_per_s:
        return None
    done = rep.flops(rep.sum_new_tokens, rep.sum_pairs)
    spec = getattr(rep, "speculation", None)
    if spec is not None:
        done += spec.draft_cost_ratio * rep.flops(rep.sum_draft_tokens, 0)
    return done


def _nice_interval_ns(min_ns: int) -> int:
    """The smallest of 1, 2, 5 x 10^k ns that is at least ``min_ns``."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= min_ns:
                return m * step
        step *= 10


# --------------------------------------------------------------------------------------------------- fleet


class Fleet:
    """One run of a fleet scenario, advanced in slices (``advance``) or to the end.

    The time series is sampled every ``interval_ns`` (the scenario's
    ``sample_interval_s``, widened to a 1-2-5 step so that the run stays near
    ``max_time_series_points`` points; fixed before the run starts, never
    thinned, so that a live run can send each point once). ``time_series=False``
    skips the series (a caller that reads only the summary: it is the same).

    >>> f = Fleet(Scenario.from_dict({"workload": {"requests": 30}}))
    >>> f.advance(max_events=5), f.events
    (False, 5)
    >>> f.advance(), f.result().summary["requests_completed"]
    (True, 30)
    """

    def __init__(self, scenario, *, step_time_s=None, hardware=None, time_series: bool = True, sink=None,
                 requests=None):
        fs = as_fleet_scenario(scenario)
        sc = fs.scenario
        self.fleet_scenario = fs
        self.scenario = sc
        self.hardware = hardware if hardware is not None else replica_hardware(sc)
        self.step_time_s = step_time_s
        # The arrival source (calc.sim.arrivals): the drawn list (or the caller's), or a closed loop of clients.
        self.requests = fleet_requests(fs) if requests is None else requests
        wl = sc.workload
        self.request_overhead_ns = round(request_overhead_s(sc, self.hardware) * NS_PER_S)
        if wl.arrival == "closed-loop" and requests is None:
            stop_ns = None if wl.duration_s is None else round(wl.duration_s * NS_PER_S)
            self.arrivals = ClosedLoopClients(self.requests, wl.concurrency, round(wl.think_time_s * NS_PER_S),
                                              stop_ns)
        else:
            self.arrivals = OpenArrivals(self.requests)
        self._lengths = None  # (requests counted, prompt tokens, output tokens): the summary's means
        # The sink of latencies: a fleet's keeps their times too (for its windowed percentiles over time).
        self.sink = sink if sink is not None else WindowSink(TICKS, windows=time_series)
        self._sink_clock = hasattr(self.sink, "now_ns")  # the sink times inter-token gaps by its clock
        self.routes = class_routes([c.name for c in sc.workload.classes], [p.classes for p in fs.fleet.pools])
        self.queue = EventQueue()
        self.members: list[_Member] = []
        self.pools: list[_Pool] = []
        weights = self.hardware.weights_bytes_per_gpu
        for i, spec in enumerate(fs.fleet.pools):
            delay = scale_up_delay_ns(spec.autoscaler, weights) if spec.autoscaler else 0
            pool = _Pool(i, spec, spec.replica_scenario(sc), delay)
            self.pools.append(pool)
            for _ in range(spec.replicas):
                m = self._new_member(pool, 0, 0)
                pool.serving.append(m)
            if pool.scaler:
                self.queue.push(round(spec.autoscaler.interval_s * NS_PER_S), CONTROL, ("tick", pool))
        # One replica and no autoscaler: nothing but its step ends and the arrivals can happen.
        self.single = len(self.members) == 1 and not any(p.scaler for p in self.pools)
        self._fleet_of_one = self.single and fast_path_enabled("fleet_of_one")
        self._same_instant = fast_path_enabled("same_instant_arrivals")
        self.events = 0
        self.now_ns = 0
        self.in_flight = 0
        self.done = not self.requests
        self._next = 0
        self.queue_max = 0
        self.running_max = 0
        self.scale_ups = 0
        self.scale_downs = 0
        self.scale_events: list[dict] = []
        # time series
        if self.arrivals.closed:  # the send times come with the run: its length is estimated (spacing only)
            last_arrival = closed_loop_horizon_ns(
                wl, step_time_s if step_time_s is not None else self.hardware.price_step,
                replicas=len(self.members), max_num_seqs=sc.max_num_seqs, overhead_s=self.request_overhead_ns / NS_PER_S)
        else:
            last_arrival = self.arrivals.horizon_ns()
        want = round(sc.sample_interval_s * NS_PER_S)
        self.interval_ns = max(want, _nice_interval_ns(-(-2 * last_arrival // sc.max_time_series_points)))
        # Without a series no sample ever falls due (the summary reads none of it).
        self.next_sample_ns = self.interval_ns if time_series else float("inf")
        self.window_ns = max(self.interval_ns, round(fs.fleet.percentile_window_s * NS_PER_S))
        self.series = {k: [] for k in SERIES_KEYS}
        self._prev = None  # cumulative readings at the previous sample
        self._ttft_i = 0
        self._itl_i = 0
        self.start_arrivals()

    def start_arrivals(self) -> None:
        """Schedule the first arrivals of the source: an open list's first (each arrival pushes the next), or
        a closed loop's clients, all sending at time 0 (each later send is pushed as a client is freed)."""
        overhead = self.request_overhead_ns
        if self.arrivals.closed:
            self.sink.on_finish = self._client_free
            for i in self.arrivals.first():
                self.queue.push(overhead, ARRIVAL, i)
        elif self.requests:
            self.queue.push(self.requests[0].arrival_ns + overhead, ARRIVAL, None)

    def replace_requests(self, requests: list) -> None:
        """Serve ``requests`` (an open source, in arrival order, times on this fleet's clock) instead of the drawn
        ones: the pending arrival is dropped and the first of these scheduled; other events stay.

        >>> from calc.sim.workload import Request
        >>> f = Fleet(Scenario.from_dict({"workload": {"requests": 1, "arrival": "all-at-once"}}))
        >>> f.replace_requests([Request(0, 5_000, 100, 3), Request(1, 9_000, 100, 3)]); f.advance()
        True
        >>> f.result().summary["requests_completed"], f.result().summary["input_tokens"]
        (2, 200)
        """
        kept = []
        while len(self.queue):
            event = self.queue.pop()
            if event[1] != ARRIVAL:
                kept.append(event)
        for event in kept:
            self.queue.push(*event)
        self.requests = requests
        self.arrivals = OpenArrivals(requests)
        self.sink.on_finish = None
        self._next = 0
        self._lengths = None
        self.done = not requests and not self.in_flight
        self.start_arrivals()

    def _client_free(self, req, now_ns: int) -> None:
        """A closed loop's request finished (or was refused) at ``now_ns``: its client sends the next one."""
        i = self.arrivals.release(now_ns)
        if i is not None:
            self.queue.push(self.requests[i].arrival_ns + self.request_overhead_ns, ARRIVAL, i)
            self.sink.wake = True  # a replica stepping ahead of the heap stops: this event may come first

    # ------------------------------------------------------------------------------------ replicas
    def _new_member(self, pool: _Pool, start_ns: int, ready_ns: int) -> _Member:
        mid = len(self.members)
        rep = build_replica(pool.scenario, self.hardware, step_time_s=self.step_time_s, sink=self.sink, name=mid)
        m = _Member(mid, pool, rep, start_ns, ready_ns)
        pool.members.append(m)
        self.members.append(m)
        return m

    def _remove(self, m: _Member, now_ns: int) -> None:
        m.removed_ns = now_ns
        pool = m.pool
        if m in pool.serving:
            pool.serving.remove(m)
        if m in pool.starting:
            pool.starting.remove(m)

    def _scale(self, pool: _Pool, delta: int, now_ns: int, signal: float) -> None:
        before = len(pool.serving) + len(pool.starting)
        if delta > 0:
            for _ in range(delta):
                m = self._new_member(pool, now_ns, now_ns + pool.delay_ns)
                pool.starting.append(m)
                self.queue.push(m.ready_ns, CONTROL, ("ready", m))
            self.scale_ups += delta
        else:
            for _ in range(-delta):
                if pool.starting:
                    self._remove(pool.starting[-1], now_ns)  # a pod not yet serving is cancelled first
                else:
                    m = pool.serving[-1]
                    pool.serving.remove(m)
                    m.draining = True
                    if m.rep.plan is None and not m.rep.outstanding:
                        self._remove(m, now_ns)
            self.scale_downs += -delta
        self.scale_events.append({"t_s": _r(now_ns / NS_PER_S), "pool": pool.spec.name, "signal":
                                  pool.spec.autoscaler.signal, "value": _r(signal, 4), "from": before,
                                  "to": before + delta})

    def _signal(self, pool: _Pool, now_ns: int):
        """The pool's signal over the last interval: time-weighted mean over its serving replicas."""
        kind = pool.spec.autoscaler.signal
        num = 0
        den = 0
        for m in pool.serving:
            rep = m.rep
            busy = rep.busy_ns_until(now_ns)
            q, kv = rep.queue_and_kv_integrals_until(now_ns)
            # A replica that just became ready has done no work yet: its first interval starts from zero.
            snap = m.snap if m.snap is not None else (m.ready_ns, 0, 0, 0)
            m.snap = (now_ns, busy, q, kv)
            dt = now_ns - snap[0]
            if dt <= 0:
                continue
            if kind == "gpu_util":
                num += busy - snap[1]
                den += dt
            elif kind == "queue_depth":
                num += q - snap[2]
                den += dt
            else:
                num += kv - snap[3]
                den += dt * rep.total_blocks
        return num / den if den else None

    # ---------------------------------------------------------------------------------- sampling
    def _cumulative(self, t_ns: int) -> tuple:
        busy = exposure = emitted = preempt = hits = queries = 0
        flops = 0.0
        has_flops = True
        has_cache = False
        for m in self.members:
            rep = m.rep
            busy += rep.busy_ns_until(t_ns)
            if m.ready_ns <= t_ns:
                end = t_ns if m.removed_ns is None or m.removed_ns > t_ns else m.removed_ns
                if end > m.ready_ns:
                    exposure += end - m.ready_ns
            emitted += rep.emitted_tokens
            preempt += rep.preemptions
            f = _flops_done(rep)
            if f is None:
                has_flops = False
            else:
                flops += f
            sched = getattr(rep, "sched", None)
            cache = sched.cache if sched is not None else None
            if cache is not None:
                has_cache = True
                hits += cache.hit_tokens
                queries += cache.query_tokens
        return (t_ns, busy, exposure, emitted, self._next, flops if has_flops else None, preempt,
                (hits, queries) if has_cache else None)

    def _sample(self, t_ns: int) -> None:
        s = self.series
        cur = self._cumulative(t_ns)
        prev = self._prev if self._prev is not None else (0, 0, 0, 0, 0, 0.0, 0, None)
        self._prev = cur
        dt = t_ns - prev[0]
        queue = running = used = slots = states = total = 0
        live = 0
        for m in self.members:
            if m.removed_ns is not None:
                continue
            live += 1
            if m.ready_ns > t_ns:
                continue
            rep = m.rep
            q, r, u, st = rep.levels()
            queue += q
            running += r
            used += u
            states += st
            total += rep.total_blocks
            slots += u * (1 if self.scenario.batching == "static" else self.scenario.block_size)
        s["t_s"].append(_r(t_ns / NS_PER_S))
        s["queue_depth"].append(queue)
        s["running"].append(running)
        s["kv_use_fraction"].append(_r(used / total, 4) if total else 0.0)
        s["kv_waste_fraction"].append(_r(max(0.0, 1.0 - states / slots), 4) if slots else 0.0)
        lo = t_ns - self.window_ns
        sink = self.sink
        i = bisect.bisect_left(sink.ttft_t, lo, self._ttft_i)
        self._ttft_i = i
        window = sink.ttft_ns[i:]
        if window:
            window.sort()
            n = len(window)
            s["ttft_p50_s"].append(_r(window[max(1, math.ceil(0.5 * n)) - 1] / NS_PER_S))
            s["ttft_p99_s"].append(_r(window[max(1, math.ceil(0.99 * n)) - 1] / NS_PER_S))
        else:
            s["ttft_p50_s"].append(None)
            s["ttft_p99_s"].append(None)
        j = bisect.bisect_left(sink.itl_t, lo, self._itl_i)
        self._itl_i = j
        if j < len(sink.itl_v):
            p50, p99 = weighted_ranks(sink.itl_v[j:], sink.itl_w[j:], (50, 99))
            s["itl_p50_s"].append(_r(p50 / NS_PER_S))
            s["itl_p99_s"].append(_r(p99 / NS_PER_S))
        else:
            s["itl_p50_s"].append(None)
            s["itl_p99_s"].append(None)
        s["output_tokens_per_s"].append(_r(max(0, cur[3] - prev[3]) * NS_PER_S / dt) if dt else 0.0)
        s["requests_per_s"].append(_r((cur[4] - prev[4]) * NS_PER_S / dt) if dt else 0.0)
        dexp = cur[2] - prev[2]
        s["gpu_util_reported"].append(_r(min(1.0, (cur[1] - prev[1]) / dexp), 4) if dexp > 0 else 0.0)
        if cur[5] is None:
            s["compute_utilization"].append(None)
        else:
            peak = self.hardware.peak_flops_per_s
            s["compute_utilization"].append(
                _r(min(1.0, (cur[5] - prev[5]) / (peak * dexp / NS_PER_S)), 4) if dexp > 0 else 0.0)
        s["replicas"].append(live)
        s["preemptions"].append(cur[6])
        pc = cur[7]
        s["prefix_hit_rate"].append(None if pc is None else (_r(pc[0] / pc[1], 4) if pc[1] else 0.0))

    def sample_until(self, t_ns: int) -> None:
        """Take every sample due at or before ``t_ns`` (the state is that before any event at ``t_ns``)."""
        while self.next_sample_ns <= t_ns:
            self._sample(self.next_sample_ns)
            self.next_sample_ns += self.interval_ns

    # ------------------------------------------------------------------------------------- driving
    def next_event_ns(self):
        """Time of the next event (arrival or heap), or None when the run is over."""
        if self.done:
            return None
        return self.queue.peek_time()

    def advance(self, max_events: int | None = None, until_ns: int | None = None) -> bool:
        """Handle events (at most ``max_events``; none at or after ``until_ns``); True when the run is over.

        The run is over when every request has arrived and no replica has a
        step in flight (autoscaler ticks still pending are dropped). See the
        module docstring for the ``until`` rule.
        """
        if self.done:
            return True
        reqs = self.requests
        n_reqs = len(reqs)
        if self._next >= n_reqs and not self.in_flight:
            self.done = True
            return True
        overhead = self.request_overhead_ns
        queue = self.queue
        pop_before, push, peek = queue.pop_before, queue.push, queue.peek_time
        fleet_of_one, same_instant, sink_clock = self._fleet_of_one, self._same_instant, self._sink_clock
        only_member = self.members[0] if fleet_of_one else None
        only = only_member.rep if fleet_of_one else None
        run_steps = only.steps_runner() if fleet_of_one else None
        stop_ns = math.inf if until_ns is None else until_ns
        budget = -1 if max_events is None else max_events
        handled = 0
        while handled != budget:
            event = pop_before(stop_ns)
            if event is None:
                if until_ns is None:  # (cannot happen: the run ends when its last step or arrival is handled)
                    self.done = True
                else:  # nothing before until_ns: the state holds up to it, so its samples are final
                    self.sample_until(until_ns)
                break
            now, kind, payload = event
            if now >= self.next_sample_ns:
                self.sample_until(now)  # the state before any event at now (the pop changed nothing)
            handled += 1
            if kind == ARRIVAL and payload is not None:
                # A closed loop's request (calc.sim.arrivals): one per event, pushed as its client was freed.
                req = reqs[payload]
                if fleet_of_one:  # fast path (calc.sim.fast), as below
                    ok = self._submit_to_only(only_member, req, now, push)
                else:
                    ok = self._arrive(req, now)
                self._next += 1
                if not ok:  # refused at once: the client has its answer and sends the next
                    self._client_free(req, now)
                if not self.in_flight and self._next >= len(reqs):  # every request sent arrived and none runs
                    self.now_ns = now
                    self.done = True
                    break
            elif kind == ARRIVAL:
                nxt = self._next
                sent_ns = now - overhead  # the send time of the requests arriving now
                while True:
                    if fleet_of_one:
                        self._submit_to_only(only_member, reqs[nxt], now, push)
                    else:
                        self._arrive(reqs[nxt], now)
                    nxt += 1
                    # Fast path (calc.sim.fast): the arrivals at this same instant would come next off the heap
                    # (an arrival outranks every other event at its time); they are handled here, in order.
                    if not (same_instant and nxt < n_reqs and reqs[nxt].arrival_ns == sent_ns and handled != budget):
                        break
                    handled += 1
                self._next = nxt
                if nxt < n_reqs:
                    push(reqs[nxt].arrival_ns + overhead, ARRIVAL, None)
                elif not self.in_flight:  # the last request arrived and none runs (all rejected): the end
                    self.now_ns = now
                    self.done = True
                    break
            elif kind == STEP_END:
                m = payload
                rep = m.rep
                if fleet_of_one:
                    # Fast path (calc.sim.fast): one replica, no other kind of event. This step end and the ones
                    # before the next arrival, the next sample and the stop time follow one another off the heap.
                    limit = peek()
                    if limit is None or self.next_sample_ns < limit:
                        limit = self.next_sample_ns
                    if stop_ns < limit:
                        limit = stop_ns
                    end, now, steps = run_steps(now, limit, budget - handled + 1 if budget >= 0 else -1, sink_clock)
                    handled += steps - 1
                else:
                    if sink_clock:
                        self.sink.now_ns = now
                    rep.end_step(now)
                    end = rep.start_step(now)
                if end is not None:
                    push(end, STEP_END, m)
                    if not fleet_of_one:
                        self._note_running(rep)
                else:
                    self.in_flight -= 1
                    if m.draining and not rep.outstanding:
                        self._remove(m, now)
                    if not self.in_flight and self._next >= len(reqs):  # every request arrived and none runs
                        self.now_ns = now
                        self.done = True
                        break
            else:
                self._control(payload, now)
            self.now_ns = now
        self.events += handled
        return self.done

    def _submit_to_only(self, member, req, now: int, push) -> bool:
        """Fast path (calc.sim.fast): the only replica takes ``req``, no router (:meth:`_arrive` without it).

        Starts a step if the replica was idle and pushes its end; returns whether the replica accepted ``req``.
        """
        rep = member.rep
        ok = rep.submit(req, now)
        if rep.plan is None:
            end = rep.start_step(now)
            if end is not None:
                push(end, STEP_END, member)
                self.in_flight += 1
        return ok

    def _arrive(self, req, now: int) -> bool:
        """``req`` arrives: routed to a serving replica of its pool, which starts a step if it was idle.

        False when the replica refused it (it can never run there)."""
        pool = self.pools[self.routes[req.class_index]]
        m = pool.router.choose(pool.serving)
        rep = m.rep
        ok = rep.submit(req, now)
        q = 0
        for other in self.members:
            q += other.rep.queue_depth
        if q > self.queue_max:
            self.queue_max = q
        if rep.plan is None:
            end = rep.start_step(now)
            if end is not None:
                self.queue.push(end, STEP_END, m)
                self.in_flight += 1
                self._note_running(rep)
        return ok

    def maxima(self) -> tuple:
        """The fleet's largest queue and running batch so far (summed over replicas at each change)."""
        if self._fleet_of_one:  # the fast path keeps no fleet-wide maxima: the replica's are the fleet's
            rep = self.members[0].rep
            return rep.max_queue, rep.max_running
        return self.queue_max, self.running_max

    def _note_running(self, rep) -> None:
        """A step started on ``rep``: the fleet's largest running batch so far."""
        r = 0
        for other in self.members:
            r += other.rep.running
        if r > self.running_max:
            self.running_max = r

    def _control(self, payload, now: int) -> None:
        what, obj = payload
        if what == "ready":
            m = obj
            if m.removed_ns is not None:
                return  # cancelled while starting
            pool = m.pool
            pool.starting.remove(m)
            pool.serving.append(m)
            pool.serving.sort(key=lambda x: x.id)
            return
        pool = obj
        cfg = pool.spec.autoscaler
        signal = self._signal(pool, now)
        if signal is not None:
            delta = pool.scaler.decide(signal, now, len(pool.serving) + len(pool.starting))
            if delta:
                self._scale(pool, delta, now, signal)
        self.queue.push(now + round(cfg.interval_s * NS_PER_S), CONTROL, ("tick", pool))

    def run(self) -> Result:
        """Advance to the end and return the result."""
        self.advance()
        if any(m.rep.outstanding for m in self.members):
            raise CalcError("the fleet simulation ended with requests still queued; this is a bug in calc.sim",
                            "scenario")
        return self.result()

    # -------------------------------------------------------------------------------------- results
    def result(self) -> Result:
        """Summary and time series of the run so far."""
        return Result(summary=self.summary(), time_series={k: list(v) for k, v in self.series.items()},
                           scenario=self.fleet_scenario.to_dict())

    def summary(self) -> dict:
        """The run's figures: :func:`summarize`'s keys, fleet-wide, then the fleet's own (replicas, cost, pools)."""
        summary = summarize(self)
        sink, hw, price = self.sink, self.hardware, self.hardware.price_usd_per_gpu_hour
        end_ns = max(sink.last_finish_ns, 1) if sink.last_finish_ns else max(self.now_ns, 1)
        billed = 0
        for m in self.members:
            end = end_ns if m.removed_ns is None or m.removed_ns > end_ns else m.removed_ns
            billed += max(0, end - m.start_ns)
        n_requests = len(self.requests)
        # The fleet's own figures.
        if self.arrivals.closed:
            last_arrival = self.arrivals.last_send_ns()
        else:  # the list the fleet serves (a caller may have swapped it in)
            last_arrival = self.requests[-1].arrival_ns if self.requests else 0
        replica_hours = billed / NS_PER_S / SECONDS_PER_HOUR
        if self._lengths is None or self._lengths[0] != n_requests:  # the requests of a closed loop may be cut
            self._lengths = (n_requests, sum(r.prompt_tokens for r in self.requests),  # integers: exact
                             sum(r.output_tokens for r in self.requests))
        _, prompt_tokens, output_tokens = self._lengths
        summary.update({
            "arrival_rate_per_s": _r(n_requests * NS_PER_S / last_arrival) if last_arrival else None,
            "prompt_tokens_mean": _r(prompt_tokens / n_requests) if n_requests else None,
            "output_tokens_mean": _r(output_tokens / n_requests) if n_requests else None,
            "replicas_initial": sum(p.spec.replicas for p in self.pools),
            "replicas_max": self._replicas_max(end_ns),
            "replicas_final": sum(1 for m in self.members if m.removed_ns is None and m.ready_ns <= end_ns),
            "replica_hours": _r(replica_hours),
            "gpu_hours": _r(replica_hours * hw.gpus),
            "cost_usd": _r(replica_hours * replica_usd_per_hour(price, hw.gpus)) if price is not None else None,
            "scale_ups": self.scale_ups,
            "scale_downs": self.scale_downs,
            "scale_events": list(self.scale_events),
            "pools": [self._pool_summary(p, end_ns) for p in self.pools],
        })
        return summary

    def _replicas_max(self, end_ns: int) -> int:
        """Most replicas in existence (paid for) at once."""
        changes = []
        for m in self.members:
            changes.append((m.start_ns, 1))
            end = m.removed_ns if m.removed_ns is not None else end_ns + 1
            changes.append((end, -1))
        changes.sort()
        best = cur = 0
        for _, d in changes:
            cur += d
            best = max(best, cur)
        return best

    def _pool_summary(self, pool: _Pool, end_ns: int) -> dict:
        class_ids = [i for i, p in enumerate(self.routes) if p == pool.index]
        ttft = [self.sink.ttft_rank_by_class[i] for i in class_ids if i in self.sink.ttft_rank_by_class]
        e2e = [self.sink.e2e_rank_by_class[i] for i in class_ids if i in self.sink.e2e_rank_by_class]
        billed = busy = exposure = 0
        for m in pool.members:
            end = end_ns if m.removed_ns is None or m.removed_ns > end_ns else m.removed_ns
            billed += max(0, end - m.start_ns)
            exposure += max(0, end - m.ready_ns)
            busy += m.rep.busy_ns_until(end_ns)
        reps = [m.rep for m in pool.members]
        row = {
            "name": pool.spec.name,
            "classes": [self.scenario.workload.classes[i].name for i in class_ids],
            "replicas_initial": pool.spec.replicas,
            "replicas_final": sum(1 for m in pool.members if m.removed_ns is None and m.ready_ns <= end_ns),
            "replica_hours": _r(billed / NS_PER_S / SECONDS_PER_HOUR),
            "requests_completed": sum(r.finished for r in reps),
            "requests_rejected": sum(r.rejected for r in reps),
            "queue_depth_max": max(r.max_queue for r in reps),
            "kv_use_peak": _r(max(r.peak_used_blocks / r.total_blocks for r in reps)),
            "gpu_util_reported": _r(busy / exposure) if exposure else 0.0,
            "preemptions": sum(r.preemptions for r in reps),
        }
        row.update(ranked_stats(ttft, "ttft", mean=False))
        row.update(ranked_stats(e2e, "e2e", mean=False))
        return row


def simulate_fleet(scenario, *, step_time_s=None, time_series: bool = True) -> FleetResult:
    """Run a fleet scenario (or a plain :class:`Scenario`, as a fleet of one) to the end.

    ``time_series=False`` leaves the result's series empty and gives the same
    summary faster (no samples, no windowed percentiles), for callers that
    show only the summary. Source: the engine of :mod:`calc.sim` per replica;
    routing, pools and autoscaling as in :mod:`calc.sim.router`,
    :mod:`calc.sim.pools`, :mod:`calc.sim.autoscaler`.

    >>> r = simulate_fleet(Scenario.from_dict({"workload": {"requests": 20, "arrival": "all-at-once"}}))
    >>> r.summary["requests_completed"], r.summary["replica_hours"] > 0
    (20, True)
    >>> simulate_fleet(Scenario.from_dict({"workload": {"requests": 20}}), time_series=False).time_series["t_s"]
    []
    """
    return Fleet(scenario, step_time_s=step_time_s, time_series=time_series).run()


def summarize(engine) -> dict:
    """The run's figures (the same for a fleet and a replica), floats rounded to 6 significant digits.

    Levels (queue, running) are fleet totals; utilizations and KV use are
    over replica-time while serving; cost covers every replica from its
    request to its removal (for one replica: over the run). Throughputs are
    over the run's duration: from time 0 (the first arrival window) to the
    last completion, as vLLM's ``benchmark_serving`` measures. Cost per
    million tokens: price per hour / (tokens/s x 3,600) x 1e6
    (:func:`calc.cost.usd_per_million_tokens`); null without a price.

    >>> f = Fleet(Scenario.from_dict({"workload": {"requests": 3, "arrival": "all-at-once"}})); _ = f.advance()
    >>> s = summarize(f); s["requests_completed"], s["throughput_output_tokens_per_s"], s["kv_token_share"]
    (3, 145.52, 0.968991)
    """
    sc, sink, hw = engine.scenario, engine.sink, engine.hardware
    queue_max, running_max = engine.maxima()
    end_ns = max(sink.last_finish_ns, 1) if sink.last_finish_ns else max(engine.now_ns, 1)
    dur_s = end_ns / NS_PER_S
    reps = [m.rep for m in engine.members]
    completed = sum(r.finished for r in reps)
    rejected = sum(r.rejected for r in reps)
    out_tokens = sum(r.output_tokens for r in reps)
    in_tokens = sum(r.input_tokens for r in reps)
    out_tps = out_tokens / dur_s
    total_tps = (out_tokens + in_tokens) / dur_s
    block_tokens = 1 if sc.batching == "static" else sc.block_size
    int_used = sum(r.int_used_blocks for r in reps)
    slots = int_used * block_tokens
    exposure = busy = billed = 0
    kv_exposure = 0
    peak_used = 0.0
    flops = 0.0
    has_flops = True
    for m in engine.members:
        end = end_ns if m.removed_ns is None or m.removed_ns > end_ns else m.removed_ns
        billed += max(0, end - m.start_ns)
        served = max(0, end - m.ready_ns)
        exposure += served
        kv_exposure += served * m.rep.total_blocks
        busy += m.rep.busy_ns_until(end_ns)
        peak_used = max(peak_used, m.rep.peak_used_blocks / m.rep.total_blocks)
        f = _flops_done(m.rep)
        if f is None:
            has_flops = False
        else:
            flops += f
    n_requests = len(engine.requests)
    summary = {
        "model": hw.model_name,
        "gpu": hw.gpu_name,
        "gpus": hw.gpus,
        "batching": sc.batching,
        "allocation": sc.allocation if sc.batching == "continuous" else "static",
        "requests_total": n_requests,
        "requests_completed": completed,
        "requests_rejected": rejected,
        "requests_unfinished": n_requests - completed - rejected,
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
        "prefill_tokens_computed": sum(r.prefill_tokens_computed for r in reps),
        "duration_s": _r(dur_s),
        "throughput_requests_per_s": _r(completed / dur_s),
        "throughput_input_tokens_per_s": _r(in_tokens / dur_s),
        "throughput_output_tokens_per_s": _r(out_tps),
        "throughput_total_tokens_per_s": _r(total_tps),
    }
    summary.update(sink.latency_summary("ttft"))
    summary.update(sink.itl_stats())
    summary.update(sink.latency_summary("tpot"))
    summary.update(sink.latency_summary("e2e"))
    hit = query = 0
    has_cache = False
    for r in reps:
        cache = r.sched.cache if getattr(r, "sched", None) is not None else None
        if cache is not None:
            has_cache = True
            hit += cache.hit_tokens
            query += cache.query_tokens
    summary.update({
        "queue_depth_mean": _r(sum(r.int_queue for r in reps) / end_ns),
        "queue_depth_max": queue_max,
        "running_mean": _r(sum(r.int_running for r in reps) / end_ns),
        "running_max": running_max,
        "kv_cache_tokens": hw.kv_cache_tokens if sc.batching == "continuous" else reps[0].total_blocks,
        "kv_use_mean": _r(int_used / kv_exposure) if kv_exposure else 0.0,
        "kv_use_peak": _r(peak_used),
        "kv_token_share": _r(sum(r.int_token_states for r in reps) / slots) if slots else None,
        "kv_waste_share": _r(1 - sum(r.int_token_states for r in reps) / slots) if slots else None,
        "preemptions": sum(r.preemptions for r in reps),
        "prefix_cache_hit_rate": (_r(hit / query) if query else 0.0) if has_cache else None,
        "speculation_tokens_per_step": _r(advance_ticks(sc.speculation) / TICKS) if sc.speculation else None,
        "gpu_util_reported": _r(busy / exposure) if exposure else 0.0,
        "compute_utilization": _r(flops / (hw.peak_flops_per_s * exposure / NS_PER_S))
        if has_flops and exposure and hw.peak_flops_per_s else None,
        "steps": sum(r.steps for r in reps),
        "events": engine.events,
    })
    price = hw.price_usd_per_gpu_hour
    if price is not None and out_tokens:
        per_hour = replica_usd_per_hour(price, hw.gpus) * (billed / end_ns)
        summary["cost_usd_per_million_output_tokens"] = _r(usd_per_million_tokens(per_hour, out_tps))
        summary["cost_usd_per_million_tokens"] = _r(usd_per_million_tokens(per_hour, total_tps))
    else:
        summary["cost_usd_per_million_output_tokens"] = None
        summary["cost_usd_per_million_tokens"] = None
    summary["gpu_price_usd_per_hour"] = price
    summary["gpu_price_source"] = hw.price_source
    classes = []
    for i, cls in enumerate(sc.workload.classes):
        row = {"name": cls.name}
        row.update(sink.class_summary(i))
        classes.append(row)
    summary["classes"] = classes
    return summary
