"""The closed-loop client, the request-level overhead and per-request TPOT (calc.sim.arrivals, calc.sim.metrics)."""

import math

import pytest

from calc.errors import CalcError
from calc.sim import Scenario, Simulation, simulate
from calc.sim.fleet import Fleet, FleetScenario, simulate_fleet
from calc.sim.hardware import replica_hardware
from calc.sim.metrics import WindowSink
from calc.sim.scheduler import TICKS
from calc.units import round_sig
from calc.sim.workload import generate_requests

FIXED = {"prompt_tokens": 512, "output_tokens": 64}


def _closed(concurrency, requests, **workload):
    return {"workload": {"arrival": "closed-loop", "concurrency": concurrency, "requests": requests, **workload}}


def test_the_closed_loop_draws_the_same_lengths_as_the_open_kinds():
    wl = {"requests": 50, "lengths": "chat"}
    closed = Scenario.from_dict(_closed(7, **wl))
    opened = Scenario.from_dict({"workload": {"arrival": "poisson", **wl}})
    lengths = [(r.prompt_tokens, r.output_tokens) for r in generate_requests(closed.workload, 3, 8192)]
    assert lengths == [(r.prompt_tokens, r.output_tokens) for r in generate_requests(opened.workload, 3, 8192)]


class _Watch(Fleet):
    """A fleet that records, after every event, the requests sent and not finished (in flight on the clients)."""

    def run_watching(self):
        most = 0
        while not self.advance(max_events=1):
            sent = self.arrivals.sent
            finished = sum(m.rep.finished + m.rep.rejected for m in self.members)
            most = max(most, sent - finished)
        return most


@pytest.mark.parametrize("fleet", [None, {"replicas": 3, "router": "least-outstanding"}])
def test_exactly_n_requests_are_in_flight(fleet):
    data = _closed(10, 120, lengths="lognormal")
    if fleet:
        data["fleet"] = fleet
    f = _Watch(FleetScenario.from_dict(data))
    assert f.run_watching() == 10
    s = f.result().summary
    assert s["requests_completed"] == 120 and s["requests_total"] == 120
    assert s["running_max"] <= 10


def test_one_client_sends_each_request_as_the_previous_one_finishes():
    sim = Simulation(Scenario.from_dict(_closed(1, 5, **FIXED)))
    sim.advance()
    e2e = sim.sink.e2e_ns
    sends = sorted(r.arrival_ns for r in sim.requests)
    # Each send is the previous send plus its end-to-end latency: back to back, nothing overlapping.
    assert sends == [sum(e2e[:i]) for i in range(5)]
    assert sim.result().summary["duration_s"] == pytest.approx(sum(e2e) / 1e9, rel=1e-6)


def test_think_time_delays_each_next_send():
    base = simulate(Scenario.from_dict(_closed(1, 4, **FIXED))).summary
    think = simulate(Scenario.from_dict(_closed(1, 4, think_time_s=2.0, **FIXED))).summary
    assert think["e2e_p50_s"] == base["e2e_p50_s"]
    assert think["duration_s"] == pytest.approx(base["duration_s"] + 3 * 2.0, abs=1e-4)  # 3 pauses of 2 s


def test_duration_stops_the_sending():
    s = simulate(Scenario.from_dict(_closed(4, 1000, duration_s=10, **FIXED))).summary
    assert 0 < s["requests_total"] < 1000
    assert s["requests_completed"] == s["requests_total"]  # every request sent is served
    assert s["requests_unfinished"] == 0


@pytest.mark.parametrize("concurrency", [4, 32])
def test_littles_law_holds_n_in_flight(concurrency):
    # N clients always have N requests in flight: throughput x mean end-to-end latency = N (Little's law),
    # up to the tail where the last clients find nothing more to send (short with fixed lengths).
    s = simulate(Scenario.from_dict(_closed(concurrency, 20 * concurrency))).summary
    assert s["throughput_requests_per_s"] * s["e2e_mean_s"] == pytest.approx(concurrency, rel=0.002)
    more = simulate(Scenario.from_dict(_closed(2 * concurrency, 40 * concurrency))).summary
    assert more["throughput_output_tokens_per_s"] > s["throughput_output_tokens_per_s"]
    assert more["itl_p50_s"] > s["itl_p50_s"]  # a bigger batch: slower steps


def test_refused_requests_free_their_client():
    # Every prompt is longer than the whole KV cache: each is refused at arrival and the client sends the next.
    s = simulate(Scenario.from_dict({"kv_cache_tokens": 500, **_closed(2, 9, **FIXED)})).summary
    assert (s["requests_rejected"], s["requests_completed"], s["requests_total"]) == (9, 0, 9)


@pytest.mark.parametrize("workload, message", [
    ({"arrival": "closed-loop"}, "workload.concurrency (the closed loop's clients) must be a whole number between 1 "
                                 "and 100000 for arrival closed-loop; got none"),
    ({"arrival": "closed-loop", "concurrency": 0}, "workload.concurrency must be a whole number between 1 and 100000"),
    ({"arrival": "closed-loop", "concurrency": 2.5}, "workload.concurrency must be a whole number between 1 and"),
    ({"arrival": "closed-loop", "concurrency": 4, "think_time_s": -1}, "workload.think_time_s must be between 0"),
])
def test_bad_closed_loops_name_the_field_and_its_range(workload, message):
    with pytest.raises(CalcError) as err:
        Scenario.from_dict({"workload": workload})
    assert message in str(err.value)
    assert err.value.field.startswith("workload.")


def test_traffic_phases_refuse_a_closed_loop():
    with pytest.raises(CalcError, match="fleet.traffic needs workload.arrival poisson or bursty; got 'closed-loop'"):
        FleetScenario.from_dict({**_closed(4, 10), "fleet": {"traffic": [{"duration_s": 10, "rate_per_s": 2}]}})


def test_the_closed_loop_keeps_its_keys_through_json():
    s = Scenario.from_dict(_closed(6, 30, think_time_s=0.25))
    assert Scenario.from_dict(s.to_dict()) == s
    assert (s.to_dict()["workload"]["concurrency"], s.to_dict()["workload"]["think_time_s"]) == (6, 0.25)


# ----------------------------------------------------------------------------------------- request overhead
@pytest.mark.parametrize("workload", [{"arrival": "all-at-once", "requests": 1}, _closed(1, 3)["workload"]])
def test_the_request_overhead_adds_to_ttft_and_e2e_from_the_send(workload):
    # The base pins no overhead (the replica's profile would add its own, calc.engine_profiles); the other 50 ms.
    base = simulate(Scenario.from_dict({"request_overhead_s": 0.0, "workload": {**workload, **FIXED}})).summary
    slow = simulate(Scenario.from_dict({"request_overhead_s": 0.05, "workload": {**workload, **FIXED}})).summary
    for key in ("ttft_p50_s", "ttft_p99_s", "e2e_p50_s", "e2e_p99_s"):
        assert slow[key] == pytest.approx(base[key] + 0.05, abs=2e-6)
    assert slow["itl_p50_s"] == base["itl_p50_s"] and slow["tpot_p50_s"] == base["tpot_p50_s"]
    # The default is the profile's overhead: between the two, by exactly that much.
    default = simulate(Scenario.from_dict({"workload": {**workload, **FIXED}})).summary
    profile_s = replica_hardware(Scenario()).request_overhead_s
    assert 0 < profile_s < 0.05
    assert default["ttft_p50_s"] == pytest.approx(base["ttft_p50_s"] + profile_s, abs=2e-6)


def test_the_overhead_comes_from_the_hardware_profile_unless_the_scenario_gives_one():
    scenario = Scenario.from_dict({"workload": {"arrival": "all-at-once", "requests": 1, **FIXED}})

    class Profile:  # the hardware with a fitted request_overhead_s (the stepcost branch adds the attribute)
        def __init__(self, hw, overhead_s):
            self._hw = hw
            self.request_overhead_s = overhead_s

        def __getattr__(self, name):
            return getattr(self._hw, name)

    hw = replica_hardware(scenario)

    def ttft_ns(sc, hardware):
        sim = Simulation(sc, hardware=hardware)
        sim.advance()
        return sim.sink.ttft_ns[0]

    none_given = scenario.replace(request_overhead_s=0.0)
    assert ttft_ns(scenario, Profile(hw, 0.03)) - ttft_ns(none_given, Profile(hw, 0.03)) == 30_000_000
    assert ttft_ns(none_given, Profile(hw, 0.5)) == ttft_ns(none_given, hw)  # the scenario's 0 wins
    assert ttft_ns(scenario.replace(request_overhead_s=0.01), Profile(hw, 0.5)) - ttft_ns(none_given, hw) == 10_000_000


@pytest.mark.parametrize("value", [-0.1, 10.5, "fast"])
def test_bad_overheads_name_the_field(value):
    with pytest.raises(CalcError) as err:
        Scenario.from_dict({"request_overhead_s": value})
    assert err.value.field == "request_overhead_s"
    assert "request_overhead_s must be" in str(err.value)


# --------------------------------------------------------------------------------------------------- TPOT
class _Pairs(WindowSink):
    """A sink that also keeps each request's TTFT and end-to-end latency, paired."""

    def __init__(self):
        super().__init__(TICKS)
        self.pairs = {}

    def first_token(self, req, now_ns):
        super().first_token(req, now_ns)
        self.pairs[req.rid] = [now_ns - req.arrival_ns, None, req.output_tokens]

    def finish(self, req, now_ns):
        super().finish(req, now_ns)
        self.pairs[req.rid][1] = now_ns - req.arrival_ns


@pytest.mark.parametrize("workload", [{"rate_per_s": 3, "requests": 60}, _closed(16, 60)["workload"]])
def test_tpot_is_per_request_time_after_the_first_token_over_the_tokens_after_it(workload):
    data = {"kv_cache_tokens": 15000, "workload": {**workload, "lengths": "lognormal", "prompt_tokens": 300,
                                                   "output_tokens": 40}}
    f = Fleet(Scenario.from_dict(data), sink=_Pairs())
    f.advance()
    # (e2e - ttft) / (out - 1) to the nearest ns, halves up
    by_hand = sorted((2 * (e2e - ttft) + out - 1) // (2 * (out - 1)) for ttft, e2e, out in f.sink.pairs.values()
                     if out > 1)
    assert sorted(f.sink.tpot_ns) == by_hand
    s = f.result().summary
    n = len(by_hand)
    assert s["tpot_p50_s"] == round_sig(by_hand[math.ceil(0.5 * n) - 1] / 1e9)
    assert s["tpot_p90_s"] == round_sig(by_hand[math.ceil(0.9 * n) - 1] / 1e9)
    assert s["tpot_p99_s"] == round_sig(by_hand[math.ceil(0.99 * n) - 1] / 1e9)
    assert s["tpot_mean_s"] == round_sig(sum(by_hand) / n / 1e9)
    assert s["tpot_mean_s"] > s["itl_p50_s"] * 0.5  # the same order as ITL, not a different unit


def test_tpot_of_one_request_by_hand():
    sim = Simulation(Scenario.from_dict({"workload": {"arrival": "all-at-once", "requests": 1, **FIXED}}))
    sim.advance()
    ttft, e2e = sim.sink.ttft_ns[0], sim.sink.e2e_ns[0]
    assert sim.sink.tpot_ns == [round((e2e - ttft) / 63)]
    s = sim.result().summary
    assert s["tpot_mean_s"] == s["tpot_p50_s"] == s["tpot_p99_s"] == round_sig(round((e2e - ttft) / 63) / 1e9)


def test_one_token_answers_have_no_tpot_and_the_keys_stay_null():
    s = simulate(Scenario.from_dict({"workload": {"requests": 5, "prompt_tokens": 100, "output_tokens": 1}})).summary
    assert (s["tpot_mean_s"], s["tpot_p50_s"], s["tpot_p90_s"], s["tpot_p99_s"]) == (None, None, None, None)
    assert s["itl_p50_s"] is None  # and ITL has no gap either


def test_fleet_and_replica_give_the_same_tpot():
    data = {"workload": {"rate_per_s": 6, "requests": 80, "lengths": "chat"}}
    single = simulate(Scenario.from_dict(data)).summary
    fleet = simulate_fleet(FleetScenario.from_dict(data)).summary
    assert {k: single[k] for k in single if k.startswith("tpot")} == {k: fleet[k] for k in fleet if k.startswith("tpot")}
    assert set(k for k in single if k.startswith("tpot")) == {"tpot_mean_s", "tpot_p50_s", "tpot_p90_s", "tpot_p99_s"}


def test_a_profiled_sink_measures_only_the_requests_after_the_warm_up():
    from calc.sim.arrivals import ProfiledSink
    from calc.sim.fleet import summarize
    from calc.sim.metrics import LatencySink

    data = {"workload": {"arrival": "closed-loop", "concurrency": 6, "requests": 48, "prompt_tokens": 2000,
                         "output_tokens": 40}}

    class Everything(LatencySink):  # every request's TTFT by rid, to check the profiled mean against
        def __init__(self):
            super().__init__(TICKS)
            self.by_rid = {}

        def first_token(self, req, now_ns):
            self.by_rid[req.rid] = now_ns - req.arrival_ns
            super().first_token(req, now_ns)

    whole = Fleet(Scenario.from_dict(data), time_series=False, sink=Everything())
    whole.advance()
    profiled = Fleet(Scenario.from_dict(data), time_series=False, sink=ProfiledSink(TICKS, 12))
    profiled.advance()
    after = [v for rid, v in whole.sink.by_rid.items() if rid >= 12]
    assert len(profiled.sink.ttft_ns) == len(profiled.sink.tpot_ns) == 36
    assert sorted(profiled.sink.ttft_ns) == sorted(after)  # the same run: the warm-up only goes unrecorded
    s = summarize(profiled)
    assert s["requests_completed"] == 48  # the warm-up is served, and its clients send the measured requests
    assert s["ttft_mean_s"] == pytest.approx(sum(after) / len(after) / 1e9, abs=1e-6)
    assert s["ttft_mean_s"] < summarize(whole)["ttft_mean_s"]  # the first round's queue is left out
