"""Run a scenario: requests arrive, the replica steps, metrics come out.

:func:`simulate` runs a :class:`~calc.sim.scenario.Scenario` to the end and
returns a :class:`Result` (a summary dict, a time series for charts, the
scenario itself). :class:`Simulation` is the same run in slices
(``advance(max_events=...)``), for a caller that wants frames as it goes or
to stop early. The loop is the standard next-event one over
:class:`~calc.sim.events.EventQueue`: arrivals are pushed one at a time as
the previous one is handled, and step ends as the replica starts each step.

>>> from calc.sim.scenario import Scenario
>>> s = Scenario.from_dict({"workload": {"requests": 40, "rate_per_s": 4}})
>>> r = simulate(s)
>>> r.summary["requests_completed"], r.summary["output_tokens"], r.summary["ttft_p50_s"]
(40, 10240, 0.0986678)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc.cost import replica_usd_per_hour, usd_per_million_tokens
from calc.errors import CalcError
from calc.sim.engine import Replica
from calc.sim.events import ARRIVAL, STEP_END, EventQueue
from calc.sim.hardware import replica_hardware
from calc.sim.metrics import LatencySink, TimeSeries, latency_stats
from calc.sim.scheduler import TICKS
from calc.sim.speculation import advance_ticks
from calc.sim.static_batching import StaticReplica
from calc.sim.workload import generate_requests
from calc.units import NS_PER_S, round_sig

__all__ = ["Result", "Simulation", "build_replica", "simulate"]


def build_replica(scenario, hardware, *, step_time_s=None, sink=None, name: int = 0):
    """A :class:`~calc.sim.engine.Replica` (or :class:`~calc.sim.static_batching.StaticReplica`) for ``scenario``.

    ``hardware`` is :func:`calc.sim.hardware.replica_hardware` of the scenario;
    ``step_time_s`` replaces the roofline's step price (tests use a simple one).

    >>> from calc.sim.scenario import Scenario
    >>> from calc.sim.hardware import replica_hardware
    >>> s = Scenario(); build_replica(s, replica_hardware(s)).total_blocks
    24965
    """
    step = step_time_s if step_time_s is not None else hardware.price_step
    if scenario.batching == "static":
        return StaticReplica(scenario.static_batch_size, hardware.kv_cache_tokens, step,
                             max_model_len=scenario.max_model_len, flops=hardware.flops,
                             peak_flops_per_s=hardware.peak_flops_per_s, sink=sink, name=name)
    return Replica(scenario.scheduler_config(), hardware.kv_cache_blocks, step, speculation=scenario.speculation,
                   flops=hardware.flops, peak_flops_per_s=hardware.peak_flops_per_s, sink=sink, name=name)


@dataclass(frozen=True)
class Result:
    """A finished run: ``summary`` (flat JSON-ready dict, plus ``classes``), ``time_series`` and ``scenario``.

    >>> sorted(Result(summary={}, time_series={}, scenario={}).to_dict())
    ['scenario', 'summary', 'time_series']
    """

    summary: dict
    time_series: dict
    scenario: dict

    def to_dict(self) -> dict:
        """Everything as JSON-ready data."""
        return {"summary": self.summary, "time_series": self.time_series, "scenario": self.scenario}


class Simulation:
    """One run of a scenario, advanced in slices or to the end.

    >>> from calc.sim.scenario import Scenario
    >>> sim = Simulation(Scenario.from_dict({"workload": {"requests": 20}}))
    >>> sim.advance(max_events=10), sim.events
    (False, 10)
    >>> sim.advance(), sim.result().summary["requests_completed"]
    (True, 20)
    """

    def __init__(self, scenario, *, step_time_s=None, hardware=None):
        self.scenario = scenario
        self.hardware = hardware if hardware is not None else replica_hardware(scenario)
        self.requests = generate_requests(scenario.workload, scenario.seed, scenario.max_model_len)
        self.sink = LatencySink(TICKS)
        self.replica = build_replica(scenario, self.hardware, step_time_s=step_time_s, sink=self.sink)
        self.series = TimeSeries(scenario.sample_interval_s, scenario.max_time_series_points)
        self.queue = EventQueue()
        self.events = 0
        self.now_ns = 0
        self._next = 0
        if self.requests:
            self.queue.push(self.requests[0].arrival_ns, ARRIVAL, None)

    @property
    def done(self) -> bool:
        """True when every event has been handled."""
        return not len(self.queue)

    def advance(self, max_events: int | None = None, until_ns: int | None = None) -> bool:
        """Handle events (at most ``max_events``, none after ``until_ns``); True when the run is over."""
        queue, rep, series, reqs = self.queue, self.replica, self.series, self.requests
        pop, push, peek = queue.pop, queue.push, queue.peek_time
        n_reqs = len(reqs)
        budget = -1 if max_events is None else max_events
        handled = 0
        while len(queue) and handled != budget:
            if until_ns is not None and peek() > until_ns:
                # Nothing happens before until_ns: the state holds, so the series can be sampled up to it.
                if until_ns >= series.next_ns:
                    series.advance_to(until_ns, rep.state_at)
                break
            now, kind, _ = pop()
            handled += 1
            if now >= series.next_ns:
                series.advance_to(now, rep.state_at)
            if kind == ARRIVAL:
                nxt = self._next
                rep.submit(reqs[nxt], now)
                end = rep.start_step(now) if rep.plan is None else None
                nxt += 1
                # Arrivals at this same instant come next (an arrival outranks a step end at the same time):
                # they are handled here, in order, without going through the heap.
                while nxt < n_reqs and reqs[nxt].arrival_ns == now and handled != budget:
                    handled += 1
                    rep.submit(reqs[nxt], now)
                    nxt += 1
                    if end is None and rep.plan is None:
                        end = rep.start_step(now)
                self._next = nxt
                if nxt < n_reqs:
                    push(reqs[nxt].arrival_ns, ARRIVAL, None)
                counted = 0
            else:
                end, counted = now, 1  # the step in flight ends now: run_until ends it, and the next ones too
            if end is not None and (counted or handled != budget):
                # The steps that end before the next arrival (the only other event) and the next sample, and
                # not after until_ns, follow one another without the heap: the same events in the same order.
                limit = queue.peek_time() if len(queue) else math.inf
                if series.next_ns < limit:
                    limit = series.next_ns
                if until_ns is not None and math.floor(until_ns) + 1 < limit:
                    limit = math.floor(until_ns) + 1  # events at until_ns itself are handled
                end, last, steps = rep.run_until(end, limit, budget - handled + counted if budget >= 0 else -1)
                handled += steps - counted
                if last is not None:
                    now = last
            if end is not None:
                push(end, STEP_END, None)
            self.now_ns = now
        self.events += handled
        return not len(queue)

    def result(self) -> Result:
        """The summary and series of the run so far (call after ``advance()`` returned True for the full run)."""
        return Result(summary=summarize(self), time_series=self.series.to_dict(self.replica.total_blocks),
                      scenario=self.scenario.to_dict())


def _r(value, digits: int = 6):
    return None if value is None else round_sig(value, digits)


def summarize(sim: Simulation) -> dict:
    """The run's figures, floats rounded to 6 significant digits (the same JSON on every CPython).

    Throughputs are over the run's duration: from time 0 (the first arrival
    window) to the last completion, as vLLM's ``benchmark_serving`` measures.
    Cost per million tokens: replica price per hour / (tokens/s x 3,600) x 1e6
    (:func:`calc.cost.usd_per_million_tokens`); null without a price.

    >>> from calc.sim.scenario import Scenario
    >>> sim = Simulation(Scenario.from_dict({"workload": {"requests": 3, "arrival": "all-at-once"}})); _ = sim.advance()
    >>> s = summarize(sim); s["requests_completed"], s["throughput_output_tokens_per_s"], s["kv_token_share"]
    (3, 184.286, 0.963541)
    """
    sc, rep, sink, hw = sim.scenario, sim.replica, sim.sink, sim.hardware
    end_ns = max(sink.last_finish_ns, 1) if sink.last_finish_ns else max(sim.now_ns, 1)
    dur_s = end_ns / NS_PER_S
    completed = rep.finished
    out_tokens, in_tokens = rep.output_tokens, rep.input_tokens
    out_tps = out_tokens / dur_s
    total_tps = (out_tokens + in_tokens) / dur_s
    block_tokens = 1 if sc.batching == "static" else sc.block_size
    slots = rep.int_used_blocks * block_tokens
    summary = {
        "model": hw.model_name,
        "gpu": hw.gpu_name,
        "gpus": hw.gpus,
        "batching": sc.batching,
        "allocation": sc.allocation if sc.batching == "continuous" else "static",
        "requests_total": len(sim.requests),
        "requests_completed": completed,
        "requests_rejected": rep.rejected,
        "requests_unfinished": len(sim.requests) - completed - rep.rejected,
        "input_tokens": in_tokens,
        "output_tokens": out_tokens,
        "prefill_tokens_computed": rep.prefill_tokens_computed,
        "duration_s": _r(dur_s),
        "throughput_requests_per_s": _r(completed / dur_s),
        "throughput_input_tokens_per_s": _r(in_tokens / dur_s),
        "throughput_output_tokens_per_s": _r(out_tps),
        "throughput_total_tokens_per_s": _r(total_tps),
    }
    summary.update(latency_stats(sink.ttft_ns, "ttft"))
    summary.update(sink.itl_stats())
    summary.update(latency_stats(sink.e2e_ns, "e2e"))
    summary.update({
        "queue_depth_mean": _r(rep.int_queue / end_ns),
        "queue_depth_max": rep.max_queue,
        "running_mean": _r(rep.int_running / end_ns),
        "running_max": rep.max_running,
        "kv_cache_tokens": hw.kv_cache_tokens if sc.batching == "continuous" else rep.total_blocks,
        "kv_use_mean": _r(rep.int_used_blocks / (rep.total_blocks * end_ns)),
        "kv_use_peak": _r(rep.peak_used_blocks / rep.total_blocks),
        "kv_token_share": _r(rep.int_token_states / slots) if slots else None,
        "kv_waste_share": _r(1 - rep.int_token_states / slots) if slots else None,
        "preemptions": rep.preemptions,
        "prefix_cache_hit_rate": _r(rep.prefix_cache_hit_rate),
        "speculation_tokens_per_step": _r(advance_ticks(sc.speculation) / TICKS) if sc.speculation else None,
        "gpu_util_reported": _r(rep.gpu_util_reported(end_ns)),
        "compute_utilization": _r(rep.compute_utilization(end_ns)),
        "steps": rep.steps,
        "events": sim.events,
    })
    price = hw.price_usd_per_gpu_hour
    if price is not None and out_tokens:
        per_hour = replica_usd_per_hour(price, hw.gpus)
        summary["cost_usd_per_million_output_tokens"] = _r(usd_per_million_tokens(per_hour, out_tps))
        summary["cost_usd_per_million_tokens"] = _r(usd_per_million_tokens(per_hour, total_tps))
    else:
        summary["cost_usd_per_million_output_tokens"] = None
        summary["cost_usd_per_million_tokens"] = None
    summary["gpu_price_usd_per_hour"] = price
    summary["gpu_price_source"] = hw.price_source
    classes = []
    for i, cls in enumerate(sc.workload.classes):
        ttft = sink.ttft_by_class.get(i, [])
        e2e = sink.e2e_by_class.get(i, [])
        row = {"name": cls.name, "requests_completed": len(e2e)}
        row.update({k: v for k, v in latency_stats(ttft, "ttft").items() if k != "ttft_mean_s"})
        row.update({k: v for k, v in latency_stats(e2e, "e2e").items() if k != "e2e_mean_s"})
        classes.append(row)
    summary["classes"] = classes
    return summary


def simulate(scenario, *, step_time_s=None) -> Result:
    """Run ``scenario`` to the end (every request completes or is rejected) and return its :class:`Result`.

    ``step_time_s`` replaces the roofline's price of a step (for tests); by
    default every step is priced by :func:`calc.roofline.step_coefficients`.
    Source: the engine, scheduler and metrics of :mod:`calc.sim`.

    >>> from calc.sim.scenario import Scenario
    >>> r = simulate(Scenario.from_dict({"workload": {"requests": 10, "arrival": "all-at-once"}}))
    >>> r.summary["requests_completed"], r.summary["gpu_util_reported"]
    (10, 1.0)
    """
    sim = Simulation(scenario, step_time_s=step_time_s)
    sim.advance()
    if sim.replica.outstanding:
        raise CalcError("the simulation ended with requests still queued; this is a bug in calc.sim", "scenario")
    return sim.result()
