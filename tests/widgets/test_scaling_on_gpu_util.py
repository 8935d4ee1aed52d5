"""Step 14: GPU-Util against load (the model agrees with the simulator), the GPU-Util fleet, facts, bad input."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim.run import simulate
from calc.sim.scenario import Scenario
from calc.widgets import framework
from calc.widgets import scaling_on_gpu_util as step

WIDGET = "scaling_on_gpu_util.gpu_util_vs_load"
STREAM = "scaling_on_gpu_util.gpu_util_autoscaler"


def outputs(**args):
    return framework.call(WIDGET, args)["outputs"]


def test_two_requests_a_second_read_as_a_busy_gpu():
    out = outputs()
    assert out["gpu_util"]["text"] == "100.00%"
    assert out["compute_utilization"]["value"] == pytest.approx(0.0915, abs=0.001)
    assert out["in_flight"]["value"] == pytest.approx(10.76, abs=0.01)
    assert out["load_fraction"]["text"] == "27.4% of 7.29 requests/s"
    assert out["scale_up_rate"]["value"] == pytest.approx(0.317, abs=0.001)
    assert out["scale_down_rate"]["value"] == pytest.approx(0.0708, abs=0.0005)


def test_capacity_is_the_replicas_saturation_rate():
    # max_throughput's 1,866 output tokens/s over 256-token answers; the step 6 preset saturates there too.
    assert step.replica_capacity_rps() == pytest.approx(7.29, abs=0.01)
    assert outputs(rate_per_s=20)["load_fraction"]["text"].endswith("(saturated: a queue grows)")
    assert outputs(rate_per_s=20)["gpu_util"]["value"] == 1.0


@pytest.mark.parametrize("rate", [0.05, 0.2, 0.5, 1.0])
def test_the_formula_agrees_with_the_simulator(rate):
    """1 - exp(-in flight) against the simulated replica's busy time, and FLOPs against its compute use."""
    sim = simulate(Scenario.from_dict({"workload": {"requests": max(60, int(rate * 200)), "rate_per_s": rate}}))
    model = step.gpu_util_at_rate(rate)
    assert model["gpu_util"] == pytest.approx(sim.summary["gpu_util_reported"], abs=0.03)
    assert model["compute_utilization"] == pytest.approx(sim.summary["compute_utilization"], rel=0.1)


@settings(max_examples=40, deadline=None)
@given(st.floats(min_value=0.001, max_value=9.0), st.floats(min_value=0.001, max_value=9.0))
def test_gpu_util_rises_with_load_and_never_leaves_0_to_1(a, b):
    low, high = sorted((a, b))
    ra, rb = step.gpu_util_at_rate(low), step.gpu_util_at_rate(high)
    assert 0 <= ra["gpu_util"] <= rb["gpu_util"] <= 1
    assert ra["compute_utilization"] <= rb["compute_utilization"] + 1e-12
    assert rb["compute_utilization"] < rb["gpu_util"]


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=0.01, max_value=0.99))
def test_rate_for_gpu_util_inverts_the_reading(util):
    rate = step.rate_for_gpu_util(util)
    assert step.gpu_util_at_rate(rate)["gpu_util"] == pytest.approx(util, abs=0.02)


@pytest.mark.parametrize("args, field", [
    ({"rate_per_s": "-1"}, "rate_per_s"),
    ({"scale_up_above_pct": "30", "scale_down_below_pct": "50"}, "scale_down_below_pct"),
    ({"answer_tokens": "0"}, "answer_tokens"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(WIDGET, args)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_the_stream_refuses_thresholds_the_wrong_way_round():
    entry, bound = framework.bind(STREAM, {"scale_up_above_pct": "40", "scale_down_below_pct": "60"})
    with pytest.raises(CalcError) as caught:
        next(entry.function(**bound))
    assert caught.value.field == "scale_down_below_pct"
    with pytest.raises(CalcError) as caught:
        framework.bind(STREAM, {"scale_down_below_pct": "95"})  # above the range the simulator reads honestly
    assert caught.value.field == "scale_down_below_pct"


def test_the_gpu_util_fleet_scales_up_and_never_down():
    entry, bound = framework.bind(STREAM, {"frame_interval_s": "60"})
    merged = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    out = merged["outputs"]
    assert out["replicas"]["text"] == "1 / 4 / 4"
    assert out["scale_changes"]["text"] == "3 / 0"
    assert out["replica_hours"]["value"] == pytest.approx(0.521, abs=0.001)
    replicas = merged["figures"]["traffic"]["data"][1]["y"]
    assert replicas == sorted(replicas)  # never down
    arrivals = merged["figures"]["traffic"]["data"][0]["y"]
    assert max(arrivals) > 15 and arrivals[-1] < 4  # the ramp up and back down
    late = [u for u in merged["figures"]["signals"]["data"][0]["y"][len(arrivals) // 2:] if u is not None]
    assert math.fsum(late) / len(late) > 0.9  # GPU-Util stays high while traffic falls back


def test_facts():
    f = {key: value.replace("&#36;", "$") for key, value in step.facts().items()}
    assert (f["util_at_2"], f["compute_at_2"], f["capacity_rps"]) == ("100.00%", "9.1%", "7.29 requests/s")
    assert (f["rate_for_80"], f["rate_for_30"]) == ("0.317 requests/s", "0.0708 requests/s")
    assert (f["scale_ups"], f["scale_downs"], f["replicas_final"]) == ("3", "0", "4")
    assert f["first_scale_up_s"] == "15 s"
    assert (f["last_phase_util"], f["last_phase_compute"]) == ("98.8%", "2.4%")
    assert (f["replica_hours"], f["queue_replica_hours"], f["extra_hours_pct"]) == ("0.521", "0.321", "62.4%")
    assert f["last_phase_per_replica"] == "0.5 requests/s"


def test_gpu_util_is_not_compute():
    """The point of the page in one line: at 6% of capacity GPU-Util is past the 80% line (it crosses it at 5.1%)."""
    r = step.gpu_util_at_rate(0.06 * step.replica_capacity_rps())
    assert r["gpu_util"] > 0.8 and r["compute_utilization"] < 0.03
    assert math.isclose(r["load_fraction"], 0.06)
