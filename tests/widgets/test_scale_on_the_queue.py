"""Step 15: scale-up delay, warm headroom, the queue-depth fleet against GPU-Util, facts and bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.autoscale import scale_up_delay_s
from calc.sim_views import fleet_scale_up_delay_s, warm_fleet_scenario
from calc.catalog import get_model
from calc.errors import CalcError
from calc.memory import weights_bytes_per_gpu
from calc.sim import presets
from calc.sim.autoscaler import AutoscalerConfig, scale_up_delay_ns
from calc.units import GB
from calc.widgets import framework
from calc.widgets import scale_on_the_queue as step

DELAY = "scale_on_the_queue.scale_up_delay"
HEADROOM = "scale_on_the_queue.warm_headroom_view"
STREAM = "scale_on_the_queue.queue_autoscaler"


def outputs(name, **args):
    return framework.call(name, args)["outputs"]


def test_delay_of_the_simulated_fleet():
    out = outputs(DELAY)
    assert out["weights_per_gpu"]["text"] == "35.3 GB"
    assert out["delay_s"]["value"] == pytest.approx(30 + 35.2769e9 / 2e9, abs=0.01)
    assert out["delay_s"]["text"] == "47.6 s"
    assert out["shared_delay_s"]["value"] == pytest.approx(30 + 4 * 35.2769e9 / 2e9, abs=0.05)


def test_delay_matches_the_simulators_own():
    auto = AutoscalerConfig.from_dict(presets.load_data(step.QUEUE)["fleet"]["autoscaler"])
    per_gpu = weights_bytes_per_gpu(get_model("llama-3.1-70b"), 4, "bf16")
    assert scale_up_delay_ns(auto, per_gpu) / 1e9 == pytest.approx(fleet_scale_up_delay_s(), abs=1e-6)


@settings(max_examples=30, deadline=None)
@given(st.floats(min_value=0, max_value=600), st.floats(min_value=0.1, max_value=100))
def test_delay_is_pod_start_plus_weights_over_bandwidth(pod, bandwidth):
    out = outputs(DELAY, pod_start_s=pod, load_gb_per_s=bandwidth)
    expected = scale_up_delay_s(pod_start_s=pod, weights_bytes=out["weights_per_gpu"]["value"],
                                load_bytes_per_s=bandwidth * GB)
    assert out["delay_s"]["value"] == pytest.approx(expected, rel=1e-6)
    assert out["delay_s"]["value"] >= pod


def test_headroom_defaults():
    out = outputs(HEADROOM)
    assert out["load_at_end_rps"]["value"] == pytest.approx(20 * 1.2 ** (62.6 / 60), rel=1e-6)
    assert (out["replicas_now"]["value"], out["replicas_at_end"]["value"]) == (4, 5)
    assert out["headroom_replicas"]["text"] == "1 replica (+21% load)"
    assert out["headroom_usd_per_hour"]["text"] == "$15.12 per hour (1 × 4 GPUs × $3.78)"


def test_no_growth_needs_no_headroom():
    assert outputs(HEADROOM, growth_pct_per_min=0, window_s=3600)["headroom_replicas"]["value"] == 0


@pytest.mark.parametrize("name, args, field", [
    (DELAY, {"tp": "3"}, "tp"),
    (DELAY, {"load_gb_per_s": "0"}, "load_gb_per_s"),
    (HEADROOM, {"growth_pct_per_min": "-5"}, "growth_pct_per_min"),
    (HEADROOM, {"replica_capacity_rps": "abc"}, "replica_capacity_rps"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args)
    assert caught.value.field == field


def test_warm_replicas_beyond_the_ceiling_are_refused():
    with pytest.raises(CalcError) as caught:
        warm_fleet_scenario(step.QUEUE, 9)
    assert caught.value.field == "min_replicas"
    with pytest.raises(CalcError):
        framework.bind(STREAM, {"min_replicas": "5"})


def test_labels_come_from_the_presets():
    assert step.autoscaler_label(step.KV) == "KV cache use: up above 50%, down below 20%"
    assert step.autoscaler_label(step.GPU_UTIL) == "GPU-Util (step 14): up above 80%, down below 30%"


def test_kv_use_warns_before_the_queue_forms():
    """Step 15's contrast: the KV autoscaler asks for its first replica at an earlier tick than the queue one,
    with its reading clear of its threshold (not a tie decided by rounding), and its tail is shorter."""
    from calc.sim_views import preset_summary

    queue, kv = preset_summary(step.QUEUE), preset_summary(step.KV)
    first = lambda s: next(e for e in s["scale_events"] if e["to"] > e["from"])  # noqa: E731
    interval_s = presets.load_data(step.KV)["fleet"]["autoscaler"]["interval_s"]
    assert first(kv)["t_s"] <= first(queue)["t_s"] - interval_s
    threshold = presets.load_data(step.KV)["fleet"]["autoscaler"]["scale_up_above"]
    assert first(kv)["value"] >= threshold * 1.1
    assert kv["ttft_p99_s"] < 0.8 * queue["ttft_p99_s"]


def test_queue_fleet_scales_down_and_headroom_cuts_the_tail():
    rows = {row[0]: row for row in step.comparison_rows()}
    queue, warm, gpu = (rows[step.autoscaler_label(n)] for n in (step.QUEUE, step.HEADROOM, step.GPU_UTIL))
    assert queue[3] == "1 / 4 / 1" and gpu[3] == "1 / 4 / 4"
    assert float(queue[4]) < float(warm[4]) < float(gpu[4])  # replica-hours
    p99 = lambda row: float(row[2].split()[0])  # noqa: E731
    # The right signal with right-sized headroom beats GPU-Util on latency too, not only on cost.
    assert p99(warm) < p99(gpu) < p99(queue)


def test_the_stream_plays_the_chosen_autoscaler():
    entry, bound = framework.bind(STREAM, {"scenario": step.HEADROOM, "frame_interval_s": "60"})
    merged = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    summary = presets.run(step.HEADROOM).summary
    assert merged["outputs"]["ttft_p99_s"]["value"] == pytest.approx(summary["ttft_p99_s"])
    floor = presets.load_data(step.HEADROOM)["fleet"]["autoscaler"]["min_replicas"]
    assert merged["outputs"]["replicas"]["text"].split(" / ")[0] == str(floor)


def test_facts():
    f = {key: value.replace("&#36;", "$") for key, value in step.facts().items()}
    assert (f["delay_s"], f["delay_60_s"], f["window_s"]) == ("47.6 s", "77.6 s", "62.6 s")
    assert (f["first_up_s"], f["first_ready_s"], f["rate_at_first_ready"]) == ("120 s", "168 s", "18.5 requests/s")
    assert f["first_ready_multiple"] == "2.5 times"
    assert f["warm_min"] == f["ramp_floor"]  # the headroom arm keeps the floor the page computes
    assert f["kv_vs_queue"].startswith("On this traffic the KV autoscaler decides at other ticks")
    assert (f["widget_now"], f["widget_end"]) == ("4", "5")
