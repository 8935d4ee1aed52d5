"""calc.sim.metrics: nearest-rank percentiles, the latency sink, the bounded time series."""

import math

import pytest
from hypothesis import given, strategies as st

from calc.errors import CalcError
from calc.sim.metrics import LatencySink, TimeSeries, latency_stats, nearest_rank, weighted_nearest_rank
from calc.units import NS_PER_S, round_sig


@given(st.lists(st.integers(-1000, 1000), min_size=1, max_size=200), st.integers(0, 100))
def test_nearest_rank_is_the_ceil_rank_value(values, q):
    ordered = sorted(values)
    assert nearest_rank(values, q) == ordered[max(1, math.ceil(q * len(values) / 100)) - 1]


@given(st.lists(st.tuples(st.integers(0, 50), st.integers(1, 5)), min_size=1, max_size=60), st.sampled_from([1, 50, 90, 99, 100]))
def test_weighted_percentile_equals_the_expanded_list(pairs, q):
    expanded = [v for v, w in pairs for _ in range(w)]
    assert weighted_nearest_rank(pairs, q) == nearest_rank(expanded, q)


@given(st.dictionaries(st.integers(1, 10**9), st.integers(1, 40), min_size=1, max_size=80))
def test_itl_stats_give_weighted_nearest_rank_at_each_percentile(weights):
    # itl_stats sorts once for all its percentiles: the same answers as weighted_nearest_rank's own sort each time
    sink = LatencySink(ticks=1)
    for gap_ns, weight in weights.items():
        sink.itl(gap_ns, weight)
    stats = sink.itl_stats()
    for q in (50, 90, 99):
        assert stats[f"itl_p{q}_s"] == round_sig(weighted_nearest_rank(list(weights.items()), q) / NS_PER_S)


def test_percentiles_of_nothing_are_refused_or_null():
    with pytest.raises(CalcError):
        nearest_rank([], 50)
    assert latency_stats([], "ttft")["ttft_p99_s"] is None
    assert LatencySink(1).itl_stats()["itl_p50_s"] is None


def test_sink_keeps_latencies_per_class():
    from calc.sim.workload import Request

    sink = LatencySink(ticks=4)
    for i, cls in enumerate([0, 1, 1]):
        r = Request(i, 0, 10, 2, class_index=cls)
        sink.first_token(r, 1000 * (i + 1))
        sink.finish(r, 5000 * (i + 1))
    sink.itl(300, 8)
    sink.itl(300, 4)
    sink.itl(900, 4)
    assert sink.ttft_by_class == {0: [1000], 1: [2000, 3000]}
    assert sink.last_finish_ns == 15000
    stats = sink.itl_stats()
    assert stats["itl_p50_s"] == 3e-7 and stats["itl_p90_s"] == 9e-7
    assert stats["itl_mean_s"] == pytest.approx((300 * 12 + 900 * 4) / 16 / NS_PER_S)


@given(n=st.integers(0, 3000), cap=st.integers(2, 50))
def test_time_series_stays_bounded_on_its_grid(n, cap):
    ts = TimeSeries(interval_s=0.5, max_points=cap)
    ts.advance_to(n * NS_PER_S // 2, lambda t: (0, 0, 0, t // 1000, t // 2, 0, 0))
    assert len(ts.points) <= cap
    times = [p[0] for p in ts.points]
    assert all(t % ts.interval_ns == 0 for t in times) and times == sorted(set(times))
    cols = ts.to_dict(total_blocks=1)
    assert all(v == pytest.approx(1e6) for v in cols["output_tokens_per_s"])  # t // 1000 tokens: 1e6 per second
    assert all(v == 0.5 for v in cols["gpu_util"])
