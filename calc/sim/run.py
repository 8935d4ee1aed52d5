"""Run a scenario on one replica: requests arrive, the replica steps, metrics come out.

:func:`simulate` runs a :class:`~calc.sim.scenario.Scenario` to the end and
returns a :class:`Result` (a summary dict, a time series for charts, the
scenario itself). :class:`Simulation` is the same run in slices
(``advance(max_events=..., until_ns=...)``), for a caller that wants frames as
it goes or to stop early.

A replica is a fleet of one: :class:`Simulation` is the engine of
:mod:`calc.sim.fleet` (one event loop, one summary, one ``until`` rule) with
one replica, a plain latency sink, the replica's time series
(:class:`calc.sim.metrics.TimeSeries`) and the summary's shared keys only
(:func:`calc.sim.fleet.summarize`), so its numbers are the fleet's.

>>> from calc.sim.scenario import Scenario
>>> s = Scenario.from_dict({"workload": {"requests": 40, "rate_per_s": 4}})
>>> r = simulate(s)
>>> r.summary["requests_completed"], r.summary["output_tokens"], r.summary["ttft_p50_s"]
(40, 10240, 0.132173)
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.sim.fleet import Fleet, Result, build_replica, summarize
from calc.sim.metrics import LatencySink, TimeSeries
from calc.sim.scheduler import TICKS

__all__ = ["Result", "Simulation", "build_replica", "simulate", "summarize"]


class Simulation(Fleet):
    """One run of a scenario on one replica, advanced in slices or to the end (a :class:`~calc.sim.fleet.Fleet` of one).

    ``advance`` follows the engine's ``until`` rule: the events before
    ``until_ns``, none at it (:mod:`calc.sim.fleet`).

    >>> from calc.sim.scenario import Scenario
    >>> sim = Simulation(Scenario.from_dict({"workload": {"requests": 20}}))
    >>> sim.advance(max_events=10), sim.events
    (False, 10)
    >>> sim.advance(), sim.result().summary["requests_completed"]
    (True, 20)
    >>> sim = Simulation(Scenario.from_dict({"workload": {"requests": 5, "arrival": "all-at-once"}}))
    >>> t = sim.request_overhead_ns  # sent at 0, the five arrive (are schedulable) one request overhead later
    >>> sim.advance(until_ns=t), sim.events, sim.advance(until_ns=t + 1), sim.events
    (False, 0, False, 5)
    """

    def __init__(self, scenario, *, step_time_s=None, hardware=None):
        super().__init__(scenario, step_time_s=step_time_s, hardware=hardware, time_series=False,
                         sink=LatencySink(TICKS))
        if not self.single:
            raise CalcError("Simulation runs one replica without an autoscaler; run a fleet with calc.sim.fleet.Fleet",
                            "fleet")
        self.replica = self.members[0].rep
        # The replica's series: thinned to at most max_time_series_points as the run goes.
        self.series = TimeSeries(self.scenario.sample_interval_s, self.scenario.max_time_series_points)
        self.next_sample_ns = self.series.next_ns

    def sample_until(self, t_ns: int) -> None:
        """Take every sample due at or before ``t_ns`` (the state is that before any event at ``t_ns``)."""
        series = self.series
        if series.next_ns <= t_ns:
            series.advance_to(t_ns, self.replica.state_at)
        self.next_sample_ns = series.next_ns

    def summary(self) -> dict:
        """The run's figures: :func:`calc.sim.fleet.summarize` (no fleet keys)."""
        return summarize(self)

    def result(self) -> Result:
        """The summary and series of the run so far (call after ``advance()`` returned True for the full run)."""
        return Result(summary=summarize(self), time_series=self.series.to_dict(self.replica.total_blocks),
                      scenario=self.scenario.to_dict())


def simulate(scenario, *, step_time_s=None) -> Result:
    """Run ``scenario`` to the end (every request completes or is rejected) and return its :class:`Result`.

    ``step_time_s`` replaces the price of a step (for tests); by default every
    step is priced by the roofline plus the engine's fitted terms
    (:func:`calc.engine_profiles.engine_coefficients`).
    Source: the engine, scheduler and metrics of :mod:`calc.sim`.

    Ten requests sent at once keep the GPU busy from their arrival (one request
    overhead after the send) to the end: idle only for that overhead.

    >>> from calc.sim.scenario import Scenario
    >>> ten = Scenario.from_dict({"workload": {"requests": 10, "arrival": "all-at-once"}})
    >>> r = simulate(ten)
    >>> r.summary["requests_completed"], r.summary["gpu_util_reported"]
    (10, 0.998876)
    >>> round(1 - Simulation(ten).request_overhead_ns / 1e9 / r.summary["duration_s"], 5)
    0.99888
    >>> simulate(ten.replace(request_overhead_s=0.0)).summary["gpu_util_reported"]
    1.0
    """
    sim = Simulation(scenario, step_time_s=step_time_s)
    sim.advance()
    if sim.replica.outstanding:
        raise CalcError("the simulation ended with requests still queued; this is a bug in calc.sim", "scenario")
    return sim.result()
