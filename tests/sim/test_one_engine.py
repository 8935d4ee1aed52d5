"""One simulation engine: a replica is a fleet of one, with one loop, one summary and one ``until`` rule.

The rule (SimPy's ``run(until=t)``): ``advance(until_ns=t)`` handles the
events before ``t``, none at ``t``; the samples due at or before ``t`` are
then taken. Tested on both faces of the engine, with the fast paths on and off.
"""

import json
from contextlib import nullcontext

import pytest

from calc.sim import Result, Scenario, Simulation, fast, simulate
from calc.sim.fleet import Fleet, FleetResult, FleetScenario, simulate_fleet, summarize
from calc.sim.metrics import TimeSeries

FIVE_AT_ONCE = {"workload": {"requests": 5, "arrival": "all-at-once"}}
S = 10**9


@pytest.mark.parametrize("overhead_s", [0.0, None])  # none, and the replica profile's request overhead
@pytest.mark.parametrize("general", [False, True])
@pytest.mark.parametrize("engine", [Simulation, Fleet])
def test_until_handles_the_events_before_it_and_none_at_it(engine, general, overhead_s):
    data = FIVE_AT_ONCE if overhead_s is None else {**FIVE_AT_ONCE, "request_overhead_s": overhead_s}
    with fast.general_paths() if general else nullcontext():
        run = engine(Scenario.from_dict(data))
    # The five requests are sent at t = 0 and become schedulable (arrive) one request overhead later.
    arrive = run.request_overhead_ns
    assert (arrive == 0) is (overhead_s == 0.0)
    assert run.advance(until_ns=0) is False
    assert (run.events, run.now_ns) == (0, 0)
    assert run.next_event_ns() == arrive
    assert run.advance(until_ns=arrive) is False
    assert run.events == 0  # the arrivals at `arrive` are not handled before arrive + 1
    assert run.advance(until_ns=arrive + 1) is False
    assert run.events == 5  # the five arrivals; the first step ends later
    first_end = run.next_event_ns()
    assert first_end > 1
    run.advance(until_ns=first_end)
    assert run.events == 5  # the step ending at first_end is not handled before first_end + 1
    run.advance(until_ns=first_end + 1)
    assert run.events == 6 and run.now_ns == first_end


@pytest.mark.parametrize("engine", [Simulation, Fleet])
def test_until_takes_the_samples_due_at_it(engine):
    run = engine(Scenario.from_dict({"workload": {"requests": 30, "rate_per_s": 0.5}}))
    run.advance(until_ns=3 * S)
    times = run.series.to_dict(1)["t_s"] if isinstance(run.series, TimeSeries) else run.series["t_s"]
    assert times == [1.0, 2.0, 3.0]
    run.advance(until_ns=3 * S)  # nothing new: no event before 3 s is left, no sample due
    times = run.series.to_dict(1)["t_s"] if isinstance(run.series, TimeSeries) else run.series["t_s"]
    assert times == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("engine", [Simulation, Fleet])
def test_stopping_at_every_instant_changes_nothing(engine):
    data = {"workload": {"requests": 60, "rate_per_s": 8}}
    whole = engine(Scenario.from_dict(data))
    whole.advance()
    sliced = engine(Scenario.from_dict(data))
    t = 0
    while not sliced.advance(until_ns=t):
        t += 50_000_000
    assert json.dumps(sliced.result().to_dict(), sort_keys=True) == json.dumps(whole.result().to_dict(),
                                                                                sort_keys=True)


def test_a_replica_is_a_fleet_of_one():
    scenario = Scenario.from_dict({"workload": {"requests": 80, "rate_per_s": 6, "lengths": "chat"}})
    sim = Simulation(scenario)
    assert isinstance(sim, Fleet) and sim.single
    sim.advance()
    fleet = simulate_fleet(scenario).summary
    replica = sim.result().summary
    assert replica == summarize(sim)
    assert {k: fleet[k] for k in replica} == replica  # every shared key, the same value
    assert set(fleet) - set(replica) >= {"replicas_max", "replica_hours", "pools", "scale_events"}


def test_result_and_fleet_result_are_one_class():
    assert FleetResult is Result
    assert type(simulate(Scenario.from_dict(FIVE_AT_ONCE))) is type(simulate_fleet(Scenario.from_dict(FIVE_AT_ONCE)))


def test_a_simulation_runs_one_replica_only():
    from calc.errors import CalcError

    with pytest.raises(CalcError, match="one replica") as err:
        Simulation(FleetScenario.from_dict({"workload": {"requests": 5}, "fleet": {"replicas": 2}}))
    assert err.value.field == "fleet"


def test_the_run_is_over_when_its_last_event_is_handled():
    sim = Simulation(Scenario.from_dict(FIVE_AT_ONCE))
    sim.advance()
    events = sim.events
    again = Simulation(Scenario.from_dict(FIVE_AT_ONCE))
    assert again.advance(max_events=events) is True  # the budget ends exactly with the run: it is over
    assert again.advance() is True and again.events == events
