"""The threshold autoscaler: its rule, its bounds and cooldown, the scale-up delay, and its life in a fleet."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.autoscale import scale_up_delay_s
from calc.errors import CalcError
from calc.sim.autoscaler import DEFAULT_THRESHOLDS, Autoscaler, AutoscalerConfig, scale_up_delay_ns
from calc.sim.fleet import Fleet, FleetScenario
from calc.units import NS_PER_S

S = NS_PER_S


def test_rule_up_down_hold_and_cooldown():
    a = Autoscaler(AutoscalerConfig(signal="queue_depth", scale_up_above=4, scale_down_below=0.5, cooldown_s=60,
                                    min_replicas=1, max_replicas=3))
    assert a.decide(2.0, 0, 2) == 0          # between the thresholds: hold, no cooldown started
    assert a.decide(5.0, 1 * S, 2) == 1      # up
    assert a.decide(9.0, 30 * S, 3) == 0     # cooling down (and at the maximum anyway)
    assert a.decide(0.1, 60 * S, 3) == 0     # 59 s after the change: still cooling
    assert a.decide(0.1, 61 * S, 3) == -1    # down
    assert a.decide(0.1, 200 * S, 1) == 0    # at the minimum
    assert [h[2:] for h in a.history] == [(2, 3), (3, 2)]


@given(signal=st.floats(0, 100), current=st.integers(1, 20), lo=st.integers(1, 5), extra=st.integers(0, 10),
       step=st.integers(1, 4))
@settings(max_examples=120, deadline=None)
def test_decisions_stay_within_bounds(signal, current, lo, extra, step):
    cfg = AutoscalerConfig(signal="queue_depth", scale_up_above=4, scale_down_below=0.5, cooldown_s=0,
                           min_replicas=lo, max_replicas=lo + extra, step=step)
    current = min(current, lo + extra)
    delta = Autoscaler(cfg).decide(signal, 0, current)
    assert lo <= current + delta <= lo + extra
    assert abs(delta) <= max(step, lo - current)
    if signal > 4 and current < lo + extra:
        assert delta > 0
    if signal < 0.5 and current > lo:
        assert delta < 0


def test_config_defaults_per_signal_and_errors():
    for signal, (up, down) in DEFAULT_THRESHOLDS.items():
        cfg = AutoscalerConfig.from_dict({"signal": signal})
        assert (cfg.scale_up_above, cfg.scale_down_below) == (up, down)
    with pytest.raises(CalcError, match="below scale_up_above") as err:
        AutoscalerConfig.from_dict({"scale_up_above": 0.5, "scale_down_below": 0.6})
    assert err.value.field == "autoscaler.scale_down_below"
    with pytest.raises(CalcError, match="autoscaler.signal"):
        AutoscalerConfig.from_dict({"signal": "cpu"})
    with pytest.raises(CalcError, match="unknown key 'target'"):
        AutoscalerConfig.from_dict({"target": 0.7})
    with pytest.raises(CalcError, match="between 0 and 1; got 80"):
        AutoscalerConfig.from_dict({"signal": "gpu_util", "scale_up_above": 80})


def test_delay_is_pod_start_plus_a_shard_over_bandwidth():
    cfg = AutoscalerConfig(pod_start_s=45, load_bytes_per_s=1.5e9)
    assert scale_up_delay_ns(cfg, 35.3e9) == round(scale_up_delay_s(pod_start_s=45, weights_bytes=35.3e9,
                                                                    load_bytes_per_s=1.5e9) * S)
    assert scale_up_delay_ns(cfg, 35.3e9) == round((45 + 35.3e9 / 1.5e9) * S)


def _burst_fleet(signal="queue_depth"):
    # Ten minutes of traffic a single replica cannot carry, then quiet: the autoscaler must add replicas.
    return FleetScenario.from_dict({
        "workload": {"requests": 100000, "prompt_tokens": 1024, "output_tokens": 256},
        "fleet": {"replicas": 1, "router": "least-outstanding",
                  "autoscaler": {"signal": signal, "min_replicas": 1, "max_replicas": 3, "interval_s": 10,
                                 "cooldown_s": 20, "pod_start_s": 20, "load_bytes_per_s": 4e9},
                  "traffic": [{"duration_s": 90, "rate_per_s": 18}, {"duration_s": 120, "rate_per_s": 0.5}]}})


def test_new_replicas_serve_only_after_the_delay_and_bill_from_the_request():
    fleet = Fleet(_burst_fleet())
    delay_ns = scale_up_delay_ns(fleet.pools[0].spec.autoscaler, fleet.hardware.weights_bytes_per_gpu)
    weights = fleet.hardware.weights_bytes_per_gpu  # 70.6 B parameters x 2 bytes / 4 GPUs
    assert weights == pytest.approx(35.3e9, rel=1e-3)
    assert delay_ns == round((20 + weights / 4e9) * S)
    checked = 0
    while not fleet.advance(max_events=500):
        for m in fleet.members[1:]:
            if fleet.now_ns < m.ready_ns:  # still loading weights: it has received nothing
                assert m.rep.submitted == 0
                checked += 1
    assert checked > 0
    added = fleet.members[1:]
    assert added and all(m.ready_ns - m.start_ns == delay_ns for m in added)
    result = fleet.result().summary
    assert result["scale_ups"] == len(added) >= 1
    assert result["requests_completed"] == result["requests_total"]
    # Billing: each replica from its request to its removal (or the end of the run).
    end_ns = round(result["duration_s"] * S)
    lifetimes = sum((m.removed_ns if m.removed_ns is not None else end_ns) - m.start_ns for m in fleet.members)
    assert result["replica_hours"] == pytest.approx(lifetimes / S / 3600, rel=1e-4)
    assert result["cost_usd"] == pytest.approx(result["replica_hours"] * 4 * 3.78, rel=1e-4)


def test_scaled_down_replicas_drain_before_they_go():
    fleet = Fleet(_burst_fleet())
    fleet.run()
    s = fleet.result().summary
    assert s["scale_downs"] >= 1 and s["replicas_final"] < s["replicas_max"]
    gone = [m for m in fleet.members if m.removed_ns is not None]
    assert gone
    for m in gone:
        assert m.rep.outstanding == 0 and m.rep.plan is None
        assert m.rep.finished + m.rep.rejected == m.rep.submitted  # it finished everything it was sent


def test_gpu_util_reads_busy_at_low_load_queue_depth_does_not():
    # The signals the autoscaler reads, on the same quiet traffic: GPU-Util near 1, queue depth near 0.
    for signal, low, high in (("gpu_util", 0.8, 1.0), ("queue_depth", 0.0, 0.05)):
        fs = FleetScenario.from_dict({"workload": {"requests": 60, "rate_per_s": 1},
                                      "fleet": {"autoscaler": {"signal": signal, "interval_s": 10,
                                                               "max_replicas": 1}}})
        fleet = Fleet(fs)
        fleet.advance(until_ns=30 * S)
        value = fleet._signal(fleet.pools[0], 30 * S)
        assert low <= value <= high, (signal, value)
