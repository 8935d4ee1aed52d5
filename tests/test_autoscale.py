"""Autoscaling: scale-up delay, warm headroom, and bad input."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calc.autoscale import load_after_s, ramp_headroom, replicas_needed, scale_up_delay_s, steepest_ramp, warm_headroom
from calc.errors import CalcError
from calc.memory import weight_bytes
from calc.catalog import get_model


def test_delay_is_pod_start_plus_weights_over_bandwidth():
    weights = weight_bytes(get_model("llama-3.1-70b")).total_bytes  # 141 GB in bf16
    assert math.isclose(scale_up_delay_s(pod_start_s=60, weights_bytes=weights, load_bytes_per_s=2e9),
                        60 + weights / 2e9)
    assert round(weights / 1e9) == 141


def test_headroom_covers_growth_over_the_delay():
    r = warm_headroom(load_rps=40, growth_per_min=0.10, delay_s=300, replica_capacity_rps=2.5)
    assert math.isclose(r["load_at_end_rps"], 40 * 1.1 ** 5)
    assert (r["replicas_now"], r["replicas_at_end"], r["headroom_replicas"]) == (16, 26, 10)


def test_no_growth_needs_no_headroom():
    r = warm_headroom(load_rps=10, growth_per_min=0, delay_s=600, replica_capacity_rps=2)
    assert r["headroom_replicas"] == 0 and r["headroom_fraction"] == 0


@given(load=st.floats(0.01, 1e4), g=st.floats(0, 1), d=st.floats(0, 3600), extra=st.floats(0, 3600),
       cap=st.floats(0.01, 100))
def test_longer_delays_need_at_least_as_much_headroom(load, g, d, extra, cap):
    a = warm_headroom(load_rps=load, growth_per_min=g, delay_s=d, replica_capacity_rps=cap)
    b = warm_headroom(load_rps=load, growth_per_min=g, delay_s=d + extra, replica_capacity_rps=cap)
    assert b["headroom_replicas"] >= a["headroom_replicas"] >= 0
    assert a["replicas_now"] >= 1


def test_replicas_needed_rounds_up_exactly():
    assert replicas_needed(10, 2) == 5
    assert replicas_needed(10.01, 2) == 6
    assert load_after_s(10, 0.05, 0) == 10


@pytest.mark.parametrize("call, field", [
    (lambda: scale_up_delay_s(pod_start_s=-1, weights_bytes=1e9, load_bytes_per_s=1e9), "pod_start_s"),
    (lambda: scale_up_delay_s(pod_start_s=1, weights_bytes=0, load_bytes_per_s=1e9), "weights_bytes"),
    (lambda: scale_up_delay_s(pod_start_s=1, weights_bytes=1e9, load_bytes_per_s=0), "load_bytes_per_s"),
    (lambda: warm_headroom(load_rps=-1, growth_per_min=0.1, delay_s=10, replica_capacity_rps=1), "load_rps"),
    (lambda: warm_headroom(load_rps=1, growth_per_min=-0.1, delay_s=10, replica_capacity_rps=1), "growth_per_min"),
    (lambda: warm_headroom(load_rps=1, growth_per_min=0.1, delay_s=float("inf"), replica_capacity_rps=1), "delay_s"),
    (lambda: replicas_needed(1, 0), "replica_capacity_rps"),
    (lambda: replicas_needed(1, 1, target_utilization=0), "target_utilization"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field


@given(start=st.floats(0, 1e3), slope=st.floats(0, 10), window=st.floats(0, 3600), cap=st.floats(0.01, 100))
def test_ramp_headroom_carries_the_growth_of_one_window(start, slope, window, cap):
    r = ramp_headroom(start_rps=start, slope_rps_per_s=slope, window_s=window, replica_capacity_rps=cap)
    # The headroom carries the window's growth, and one replica fewer would not.
    assert r["headroom_replicas"] * cap >= slope * window - 1e-8 * cap  # (float noise is rounded away)
    assert (r["headroom_replicas"] - 1) * cap < slope * window or r["headroom_replicas"] == 0
    assert r["warm_floor"] == replicas_needed(start, cap) + r["headroom_replicas"]


def test_steepest_ramp_picks_the_fastest_rise():
    phases = [{"duration_s": 60, "rate_per_s": 1, "end_rate_per_s": 4}, {"duration_s": 10, "rate_per_s": 4,
              "end_rate_per_s": 9}, {"duration_s": 30, "rate_per_s": 9, "end_rate_per_s": 1}]
    assert steepest_ramp(phases) == {"start_rps": 4, "end_rps": 9, "slope_rps_per_s": 0.5}
    assert steepest_ramp([{"duration_s": 5, "rate_per_s": 3}])["slope_rps_per_s"] == 0
    with pytest.raises(CalcError):
        steepest_ramp([])


def test_growth_compounded_past_any_rate_is_refused_by_name_not_overflowed():
    # Found by tests/test_bad_input.py: `calc scale --weights-gb 128000 --growth-per-min 1` compounded 100%/min over
    # the 17.8 h its weights take to load, and (1 + 1) ** 1068 overflowed a float.
    import contextlib
    import io

    from calc.cli import main

    with pytest.raises(CalcError) as err:
        load_after_s(10, 1.0, 20_000)
    assert err.value.field == "growth_per_min" and "lower growth_per_min" in str(err.value)
    stderr = io.StringIO()
    with contextlib.redirect_stderr(stderr), contextlib.redirect_stdout(io.StringIO()):
        code = main(["scale", "--json", "--weights-gb", "128000", "--growth-per-min", "1"])
    assert code == 2 and "growth_per_min" in stderr.getvalue()
    # Below the bound the growth is followed exactly: 40 doublings of 1 req/s.
    assert load_after_s(1, 1.0, 2400) == 2.0 ** 40
