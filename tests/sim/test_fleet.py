"""The fleet's event loop: one replica gives the single-replica run's numbers; requests are conserved;
traffic phases shape arrivals; replicas are billed for their lifetime; runs are deterministic."""

import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim.fleet import (SERIES_KEYS, Fleet, FleetScenario, RankedInts, fleet_requests, ranked_stats,
                            simulate_fleet)
from calc.sim.metrics import latency_stats, weighted_nearest_rank
from calc.sim.run import simulate
from calc.sim.scenario import Scenario
from calc.units import NS_PER_S

SINGLE = {
    "paged": {"workload": {"rate_per_s": 9, "requests": 200}},
    "contiguous": {"allocation": "contiguous", "max_model_len": 4096, "workload": {"rate_per_s": 6, "requests": 150}},
    "prefix_classes_bursty": {
        "prefix_caching": True, "max_model_len": 16384,
        "workload": {"arrival": "bursty", "rate_per_s": 4, "requests": 150, "classes": [
            {"name": "chat", "share": 0.8, "lengths": "chat", "prefix_tokens": 2500, "prefix_variants": 2},
            {"name": "document", "share": 0.2, "lengths": "lognormal", "prompt_tokens": 6000, "output_tokens": 300}]}},
    "speculation_8b": {"model": "llama-3.1-8b", "tp": 1, "speculation": "eagle-like",
                       "workload": {"rate_per_s": 5, "requests": 120}},
    "static": {"model": "llama-3.1-8b", "tp": 1, "batching": "static", "static_batch_size": 8,
               "workload": {"rate_per_s": 2, "requests": 60, "lengths": "chat"}},
    "preempting": {"kv_cache_tokens": 60000, "chunked_prefill": False,
                   "workload": {"arrival": "all-at-once", "requests": 120, "lengths": "lognormal"}},
}


@pytest.mark.parametrize("name", sorted(SINGLE))
def test_a_fleet_of_one_gives_the_single_replica_numbers(name):
    scenario = Scenario.from_dict(SINGLE[name])
    alone = simulate(scenario).summary
    fleet = simulate_fleet(scenario).summary
    for key, value in alone.items():
        assert fleet[key] == value, key
    assert fleet["replicas_max"] == fleet["replicas_final"] == 1
    assert fleet["replica_hours"] == pytest.approx(alone["duration_s"] / 3600, rel=1e-5)


def test_conservation_across_replicas_and_pools():
    fs = FleetScenario.from_dict({
        "max_model_len": 16384, "workload": {"rate_per_s": 10, "requests": 500, "classes": [
            {"name": "chat", "share": 0.9, "lengths": "chat"},
            {"name": "document", "share": 0.1, "prompt_tokens": 9000, "output_tokens": 300}]},
        "fleet": {"pools": [{"name": "chat", "classes": ["chat"], "replicas": 2, "router": "round-robin"},
                            {"name": "docs", "classes": ["document"], "replicas": 1, "max_model_len": 8192}]}})
    fleet = Fleet(fs)
    s = fleet.run().summary
    reqs = fleet.requests
    assert s["requests_total"] == len(reqs) == 500
    assert s["requests_completed"] + s["requests_rejected"] == 500 and s["requests_unfinished"] == 0
    assert s["requests_rejected"] == sum(1 for r in reqs if r.class_index == 1)  # 9,300 tokens > 8,192
    done = [r for r in reqs if r.class_index == 0]
    assert s["output_tokens"] == sum(r.output_tokens for r in done)
    assert s["input_tokens"] == sum(r.prompt_tokens for r in done)
    assert sum(m.rep.submitted for m in fleet.members) == 500
    for m in fleet.members:
        assert m.rep.peak_used_blocks <= m.rep.total_blocks


def test_traffic_phases_shape_the_arrivals():
    fs = FleetScenario.from_dict({"workload": {"requests": 100000}, "fleet": {"traffic": [
        {"duration_s": 100, "rate_per_s": 2}, {"duration_s": 100, "rate_per_s": 2, "end_rate_per_s": 20},
        {"duration_s": 100, "rate_per_s": 0}, {"duration_s": 100, "rate_per_s": 5}]}})
    reqs = fleet_requests(fs)
    t = [r.arrival_ns / NS_PER_S for r in reqs]
    assert t == sorted(t) and [r.rid for r in reqs] == list(range(len(reqs)))
    expected = (200, 1100, 0, 500)
    for i, want in enumerate(expected):
        got = sum(1 for x in t if 100 * i <= x < 100 * (i + 1))
        assert abs(got - want) <= 4 * math.sqrt(want) + 1, (i, got, want)
    ramp = [x for x in t if 100 <= x < 200]
    assert sum(1 for x in ramp if x < 150) < sum(1 for x in ramp if x >= 150) / 2  # rising: 325 vs 775 expected


def test_phase_shares_change_the_mix_not_the_rate():
    fs = FleetScenario.from_dict({"workload": {"requests": 100000, "classes": [
        {"name": "chat", "share": 1.0}, {"name": "document", "share": 0.0, "prompt_tokens": 5000}]},
        "fleet": {"traffic": [{"duration_s": 60, "rate_per_s": 10},
                              {"duration_s": 60, "rate_per_s": 10, "shares": {"chat": 0.5, "document": 0.5}},
                              {"duration_s": 60, "rate_per_s": 10}]}})
    reqs = fleet_requests(fs)
    docs = [r.arrival_ns / NS_PER_S for r in reqs if r.class_index == 1]
    assert docs and all(60 <= x <= 120 for x in docs)
    assert abs(len(docs) - 300) <= 4 * math.sqrt(300)
    for i in range(3):
        n = sum(1 for r in reqs if 60 * i <= r.arrival_ns / NS_PER_S < 60 * (i + 1))
        assert abs(n - 600) <= 4 * math.sqrt(600)


def test_fixed_fleet_is_billed_for_every_replica_all_the_time():
    fs = FleetScenario.from_dict({"workload": {"rate_per_s": 3, "requests": 90}, "fleet": {"replicas": 3}})
    s = simulate_fleet(fs).summary
    assert s["replica_hours"] == pytest.approx(3 * s["duration_s"] / 3600, rel=1e-5)
    assert s["gpu_hours"] == pytest.approx(4 * s["replica_hours"], rel=1e-5)
    assert s["cost_usd"] == pytest.approx(s["gpu_hours"] * s["gpu_price_usd_per_hour"], rel=1e-5)
    per_m = s["cost_usd"] / s["output_tokens"] * 1e6
    assert s["cost_usd_per_million_output_tokens"] == pytest.approx(per_m, rel=1e-5)
    # Three replicas for this traffic cost three times one replica's hours per token.
    one = simulate_fleet(Scenario.from_dict({"workload": {"rate_per_s": 3, "requests": 90}})).summary
    assert s["cost_usd_per_million_output_tokens"] > 2.5 * one["cost_usd_per_million_output_tokens"]


def test_time_series_columns_and_determinism():
    fs = FleetScenario.from_dict({"sample_interval_s": 2, "workload": {"rate_per_s": 8, "requests": 300},
                                  "fleet": {"replicas": 2, "router": "least-outstanding"}})
    a = simulate_fleet(fs).to_dict()
    b = simulate_fleet(FleetScenario.from_dict(fs.to_dict())).to_dict()
    assert json.dumps(a, sort_keys=True) == json.dumps(b, sort_keys=True)
    ts = a["time_series"]
    assert tuple(ts) == SERIES_KEYS
    n = len(ts["t_s"])
    assert n > 10 and all(len(v) == n for v in ts.values())
    assert ts["t_s"][:3] == [2.0, 4.0, 6.0]
    assert all(r == 2 for r in ts["replicas"])
    assert all(0.0 <= u <= 1.0 for u in ts["gpu_util_reported"] + ts["kv_use_fraction"] + ts["kv_waste_fraction"])
    assert ts["prefix_hit_rate"] == [None] * n  # prefix caching is off
    arrivals = sum(v * 2 for v in ts["requests_per_s"])
    assert arrivals == pytest.approx(300, abs=1)  # every arrival falls in one window (the run ends after the last)


def test_the_interval_widens_for_long_runs():
    fs = FleetScenario.from_dict({"max_time_series_points": 50, "workload": {"rate_per_s": 1, "requests": 400}})
    fleet = Fleet(fs)
    assert fleet.interval_ns == 20 * NS_PER_S  # the last arrival near 400 s: 2 x 400 / 50 = 16 s, rounded to 20
    fleet.run()
    assert len(fleet.series["t_s"]) <= 50


def test_fleet_scenario_errors_and_round_trip():
    with pytest.raises(CalcError, match="unknown key 'size' in fleet"):
        FleetScenario.from_dict({"fleet": {"size": 3}})
    with pytest.raises(CalcError, match="needs workload.arrival poisson or bursty"):
        FleetScenario.from_dict({"workload": {"arrival": "all-at-once"},
                                 "fleet": {"traffic": [{"duration_s": 5, "rate_per_s": 1}]}})
    with pytest.raises(CalcError, match="names request class 'video'"):
        FleetScenario.from_dict({"fleet": {"traffic": [{"duration_s": 5, "rate_per_s": 1, "shares": {"video": 1}}]}})
    with pytest.raises(CalcError, match="carry no traffic"):
        FleetScenario.from_dict({"fleet": {"traffic": [{"duration_s": 5, "rate_per_s": 0}]}})
    with pytest.raises(CalcError, match="fleet.traffic\\[0\\].duration_s"):
        FleetScenario.from_dict({"fleet": {"traffic": [{"duration_s": -1, "rate_per_s": 1}]}})
    fs = FleetScenario.from_dict({"fleet": {"replicas": 2, "autoscaler": {"signal": "kv_use", "max_replicas": 3},
                                            "traffic": [{"duration_s": 9, "rate_per_s": 1, "shares": {"chat": 1}}]}})
    assert FleetScenario.from_dict(fs.to_dict()) == fs
    assert fs.replace(fleet={"replicas": 3}).fleet.pools[0].replicas == 3
    assert fs.replace(tp=8).scenario.tp == 8


@given(values=st.lists(st.tuples(st.integers(0, 10**12), st.integers(1, 70000)), min_size=1, max_size=400),
       cut=st.integers(0, 400))
@settings(max_examples=80, deadline=None)
def test_ranked_ints_match_the_sorting_percentiles(values, cut):
    # Queried part-way (an unmerged buffer) and at the end: always the nearest-rank answers of calc.sim.metrics.
    r, w = RankedInts(), RankedInts()
    for i, (v, wt) in enumerate(values):
        r.add(v)
        w.add(v, wt)
        if i == cut:
            assert ranked_stats([r], "x") == latency_stats([x for x, _ in values[:i + 1]], "x")
    assert ranked_stats([r], "x") == latency_stats([x for x, _ in values], "x")
    for q in (0, 50, 90, 99, 100):
        assert w.rank_value(w.weight_target(q)) == weighted_nearest_rank(values, q)
    half = len(values) // 2
    a, b = RankedInts(), RankedInts()
    for v, _ in values[:half]:
        a.add(v)
    for v, _ in values[half:]:
        b.add(v)
    assert ranked_stats([a, b], "x", mean=False) == {k: v for k, v in latency_stats([x for x, _ in values], "x").items()
                                                    if k != "x_mean_s"}


# ------------------------------------------------------------------ speed paths that must not change a figure
from calc.sim.fleet import _weighted_ranks  # noqa: E402


@settings(max_examples=200, deadline=None)
@given(pairs=st.lists(st.tuples(st.integers(0, 10**9), st.integers(1, 1 << 20)), min_size=1, max_size=60),
       qs=st.lists(st.floats(0, 100), min_size=1, max_size=4))
def test_weighted_ranks_sort_once_and_agree_with_weighted_nearest_rank(pairs, qs):
    values, weights = [v for v, _ in pairs], [w for _, w in pairs]
    assert _weighted_ranks(values, weights, qs) == [weighted_nearest_rank(pairs, q) for q in qs]


@pytest.mark.parametrize("replicas", [1, 2])
def test_a_run_without_its_time_series_has_the_same_summary(replicas):
    data = {"prefix_caching": True, "max_model_len": 16384, "kv_cache_tokens": 80_000,
            "workload": {"rate_per_s": 5, "requests": 120, "prefix_tokens": 2500, "lengths": "lognormal"},
            "fleet": {"replicas": replicas, "router": "least-outstanding"}}
    full = simulate_fleet(FleetScenario.from_dict(data))
    lean = simulate_fleet(FleetScenario.from_dict(data), time_series=False)
    assert lean.summary == full.summary
    assert full.time_series["t_s"] and lean.time_series["t_s"] == []


def test_the_window_sink_keeps_what_the_base_sink_keeps():
    from calc.sim.fleet import WindowSink
    from calc.sim.metrics import LatencySink
    from calc.sim.workload import Request

    base, window = LatencySink(1), WindowSink(1)
    for i, (arrival, first, last, cls) in enumerate([(0, 50, 90, 0), (10, 70, 200, 1), (20, 95, 150, 0)]):
        req = Request(i, arrival, 10, 5, cls)
        for sink in (base, window):
            sink.first_token(req, first)
            sink.itl(7 + i, 3)
            sink.finish(req, last)
    for name in ("ttft_ns", "e2e_ns", "ttft_by_class", "e2e_by_class", "itl_weights", "last_finish_ns"):
        assert getattr(window, name) == getattr(base, name), name
    assert window.itl_stats() == base.itl_stats()
    assert ranked_stats([window.e2e_rank], "e2e") == latency_stats(base.e2e_ns, "e2e")
