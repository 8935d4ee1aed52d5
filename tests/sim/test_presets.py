"""The lesson's presets: every one runs, its golden summary holds, and each shows the effect its step teaches.

Golden files: ``tests/sim/golden/presets/<name>.json`` hold the summary and a digest of the time series.
After an intended change of the model, regenerate them and review the diff:

    .venv/bin/python -m tests.sim.test_presets
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import subprocess
import sys

import pytest

from calc.sim import presets
from calc.sim.fleet import simulate_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
GOLDEN = os.path.join(ROOT, "tests", "sim", "golden", "presets")
STEPS = (4, 5, 6, 10, 11, 12, 14, 15, 19, 20, 22)


@functools.lru_cache(maxsize=None)
def result(name: str):
    return presets.run(name)


def golden_of(res) -> dict:
    series = json.dumps(res.time_series, sort_keys=True)
    return {"summary": res.summary, "series_points": len(res.time_series["t_s"]),
            "series_sha256": hashlib.sha256(series.encode()).hexdigest()}


def dumps(data: dict) -> str:
    return json.dumps(data, indent=1, sort_keys=True) + "\n"


def test_every_simulated_step_has_a_preset():
    by_step = presets.by_step()
    assert sorted(by_step) == list(STEPS)
    for step, names in by_step.items():
        assert all(n.startswith(f"step{step:02d}-") for n in names)
        assert all(presets.info(n)["description"] for n in names)


@pytest.mark.parametrize("name", presets.names())
def test_golden_summary_holds(name):
    with open(os.path.join(GOLDEN, f"{name}.json"), encoding="utf-8") as handle:
        stored = handle.read()
    assert dumps(golden_of(result(name))) == stored


@pytest.mark.parametrize("name", presets.names())
def test_preset_runs_to_the_end_in_a_bounded_amount_of_work(name):
    s = result(name).summary
    assert s["requests_completed"] + s["requests_rejected"] == s["requests_total"] > 0
    assert s["requests_rejected"] == 0
    assert s["events"] < 200_000  # about a second of CPython on this machine; see bench/ for timings


def _class(summary, name):
    return [c for c in summary["classes"] if c["name"] == name][0]


def test_step04_contiguous_reservation_caps_concurrency_and_wastes_memory():
    contiguous, paged = result("step04-reserve-max").summary, result("step05-paged").summary
    assert contiguous["running_max"] == contiguous["kv_cache_tokens"] // 8192 == 48  # capacity / max length
    assert contiguous["kv_token_share"] < 0.25 < 0.9 < paged["kv_token_share"]     # vLLM paper: 20.4% vs 96.3%
    assert paged["running_max"] > 2 * contiguous["running_max"]
    assert contiguous["ttft_p99_s"] > 10 * paged["ttft_p99_s"]


def test_step06_twice_the_traffic_saturates_the_replica():
    base, twice = result("step05-paged").summary, result("step06-twice-the-traffic").summary
    rate = presets.load("step05-paged").workload.rate_per_s
    assert presets.load("step06-twice-the-traffic").workload.rate_per_s == 2 * rate
    assert twice["running_max"] == 256 and twice["queue_depth_max"] > 100
    assert twice["itl_p50_s"] > 1.3 * base["itl_p50_s"]  # a bigger batch: more KV read per step
    assert twice["ttft_p99_s"] > 10 * base["ttft_p99_s"]
    assert twice["throughput_output_tokens_per_s"] < 1.5 * base["throughput_output_tokens_per_s"]


def test_step10_speculation_loses_at_saturation():
    with_spec = result("step10-speculation-at-saturation").summary
    without = simulate_fleet(presets.load("step10-speculation-at-saturation").replace(speculation=None)).summary
    assert with_spec["running_mean"] > 200
    assert with_spec["throughput_output_tokens_per_s"] < without["throughput_output_tokens_per_s"]


def test_step11_12_prefix_caching_raises_the_hit_rate_and_cuts_ttft():
    cold, warm = result("step11-system-prompt").summary, result("step12-prefix-caching").summary
    assert cold["prefix_cache_hit_rate"] is None and warm["prefix_cache_hit_rate"] > 0.6
    assert warm["prefill_tokens_computed"] < 0.5 * cold["prefill_tokens_computed"]
    assert warm["ttft_p99_s"] < cold["ttft_p99_s"] / 10


def test_step14_15_gpu_util_only_scales_up_queue_depth_comes_back_down():
    gpu, queue = result("step14-scale-on-gpu-util").summary, result("step15-scale-on-queue").summary
    traffic = presets.load("step14-scale-on-gpu-util").fleet.traffic
    assert traffic == presets.load("step15-scale-on-queue").fleet.traffic
    peak, last = max(p.rate_per_s for p in traffic), traffic[-1]
    assert 0 < last.rate_per_s == last.end_rate <= peak / 10  # up, then down to a low but non-zero load
    cfg = presets.load("step14-scale-on-gpu-util").fleet.pools[0].autoscaler
    assert gpu["scale_ups"] >= 2 and gpu["scale_downs"] == 0
    assert gpu["replicas_final"] == gpu["replicas_max"] == cfg.max_replicas
    assert gpu["gpu_util_reported"] > 0.9 > 0.3 > gpu["compute_utilization"]  # busy, not loaded
    qcfg = presets.load("step15-scale-on-queue").fleet.pools[0].autoscaler
    assert queue["scale_ups"] >= 2 and queue["scale_downs"] >= 2
    assert queue["replicas_final"] <= qcfg.min_replicas + 1
    assert queue["replica_hours"] < 0.8 * gpu["replica_hours"]
    # What the GPU-Util autoscaler saw at the low load at the end: every replica near 100% busy.
    ts = result("step14-scale-on-gpu-util").time_series
    tail = [u for t, u in zip(ts["t_s"], ts["gpu_util_reported"]) if t > 400]
    assert tail and min(tail) > cfg.scale_down_below and sum(tail) / len(tail) > 0.9


def test_step15_warm_headroom_buys_latency_with_replica_hours():
    base, warm = result("step15-scale-on-queue").summary, result("step15-warm-headroom").summary
    gpu = result("step14-scale-on-gpu-util").summary
    assert warm["ttft_p99_s"] < 0.6 * base["ttft_p99_s"]
    assert warm["replica_hours"] > base["replica_hours"]
    # Right-sized headroom on the right signal beats GPU-Util on both latency and cost.
    assert warm["ttft_p99_s"] < gpu["ttft_p99_s"] and warm["replica_hours"] < gpu["replica_hours"]


def test_step15_warm_floor_is_the_ramps_headroom_over_one_scale_up_window():
    from calc.autoscale import ramp_headroom, steepest_ramp
    from calc.gpu_util import replica_capacity_rps
    from calc.sim_views import fleet_scale_up_delay_s

    data = presets.load_data("step15-warm-headroom")
    auto = data["fleet"]["autoscaler"]
    ramp = steepest_ramp(data["fleet"]["traffic"])
    sizing = ramp_headroom(start_rps=ramp["start_rps"], slope_rps_per_s=ramp["slope_rps_per_s"],
                           window_s=auto["interval_s"] + fleet_scale_up_delay_s(preset="step15-warm-headroom"),
                           replica_capacity_rps=replica_capacity_rps())
    assert auto["min_replicas"] == data["fleet"]["replicas"] == sizing["warm_floor"]
    assert sizing["headroom_replicas"] >= 1
    queue = presets.load_data("step15-scale-on-queue")["fleet"]
    assert data["fleet"]["traffic"] == queue["traffic"]  # the same day, the same queue thresholds
    assert {k: v for k, v in auto.items() if k != "min_replicas"} == {
        k: v for k, v in queue["autoscaler"].items() if k != "min_replicas"}


def test_step19_incident_p99_near_36_s_while_rate_and_gpu_util_look_normal():
    s = result("step19-incident-p99").summary
    assert 25 <= s["ttft_p99_s"] <= 50
    assert 25 <= _class(s, "chat")["ttft_p99_s"] <= 50  # the assistant's users wait, not only the documents
    assert s["gpu_util_reported"] > 0.9
    scenario = presets.load("step19-incident-p99")
    rate = scenario.fleet.traffic[0].rate_per_s
    assert all(p.rate_per_s == p.end_rate == rate for p in scenario.fleet.traffic)  # the same rate all along
    assert abs(s["arrival_rate_per_s"] - rate) < 0.05 * rate
    ts = result("step19-incident-p99").time_series
    during = [i for i, t in enumerate(ts["t_s"]) if 60 < t <= 120]
    rates = [ts["requests_per_s"][i] for i in during]
    assert sum(rates) / len(rates) == pytest.approx(rate, rel=0.15)          # the rate chart looks normal
    assert min(ts["gpu_util_reported"][i] for i in during) > 0.9              # and so does GPU-Util
    assert max(ts["kv_use_fraction"]) > 0.95 and s["queue_depth_max"] > 100   # KV cache and queue do not
    assert s["preemptions"] > 0
    # Tokens per request: the long documents raise the mean prompt over the chat-only traffic.
    chat_only = presets.load("step19-incident-p99").replace(fleet={"traffic": [{"duration_s": 240, "rate_per_s": 15}]})
    normal = simulate_fleet(chat_only).summary
    # Over the whole run (one surge minute in four; 8% documents in it) the mean prompt is 1.19x chat-only's;
    # in the surge minute itself it is 1.8x (calc.incident.prompt_statistics).
    assert s["prompt_tokens_mean"] > 1.15 * normal["prompt_tokens_mean"]
    assert normal["ttft_p99_s"] < 5


def test_step20_pools_bring_p99_back_under_a_few_seconds():
    incident, fixed = result("step19-incident-p99").summary, result("step20-pools").summary
    assert fixed["requests_total"] == incident["requests_total"]  # the same traffic
    assert fixed["ttft_p99_s"] < 5
    assert _class(fixed, "chat")["ttft_p99_s"] < 2
    assert fixed["itl_p99_s"] < incident["itl_p99_s"] / 2
    assert fixed["preemptions"] == 0
    assert [p["name"] for p in fixed["pools"]] == ["chat", "documents", "batch"]


def test_cli_runs_a_preset_as_a_new_user_would():
    out = subprocess.run([sys.executable, "-m", "calc", "simulate", "--preset", "step12-prefix-caching"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 0, out.stderr
    assert "prefix cache hit rate" in out.stdout
    out = subprocess.run([sys.executable, "-m", "calc", "simulate", "--preset", "step20-pools", "--json"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    data = json.loads(out.stdout)
    expected = {"preset": "step20-pools", **result("step20-pools").summary}
    # the CLI adds what ran (engine profile, frontend, memory basis: calc.cli.simulate.what_ran)
    assert data["preset"] == "step20-pools" and {k: data[k] for k in expected} == expected
    assert (data["engine"], data["memory_basis"]) == ("vllm", "marketed")
    out = subprocess.run([sys.executable, "-m", "calc", "simulate", "--preset", "step99"],
                         capture_output=True, text=True, cwd=ROOT, timeout=120)
    assert out.returncode == 2 and "unknown preset 'step99'" in out.stderr and "Traceback" not in out.stderr


PYODIDE_SCRIPT = r'''
import json, hashlib
from calc.sim import presets
from calc.sim.live import live_frames
out = {}
for name in json.loads(%r):
    res = presets.run(name)
    series = json.dumps(res.time_series, sort_keys=True)
    golden = {"summary": res.summary, "series_points": len(res.time_series["t_s"]),
              "series_sha256": hashlib.sha256(series.encode()).hexdigest()}
    out[name] = json.dumps(golden, indent=1, sort_keys=True) + "\n"
frames = list(live_frames(presets.load("step05-paged"), frame_interval_s=10))
out["live"] = json.dumps(frames[-1]["summary"], sort_keys=True)
print(json.dumps(out))
'''
PYODIDE_PRESETS = ("step19-incident-p99", "step15-scale-on-queue")


@pytest.mark.pyodide
@pytest.mark.xdist_group("pyodide")
def test_presets_give_the_same_json_in_pyodide():
    from tests.pyodide_runner import run_in_pyodide

    got = json.loads(run_in_pyodide(PYODIDE_SCRIPT % json.dumps(PYODIDE_PRESETS)))
    for name in PYODIDE_PRESETS:
        with open(os.path.join(GOLDEN, f"{name}.json"), encoding="utf-8") as handle:
            assert got[name] == handle.read(), name
    assert got["live"] == json.dumps(result("step05-paged").summary, sort_keys=True)


def regenerate() -> None:
    os.makedirs(GOLDEN, exist_ok=True)
    for name in presets.names():
        with open(os.path.join(GOLDEN, f"{name}.json"), "w", encoding="utf-8") as handle:
            handle.write(dumps(golden_of(presets.run(name))))
        print("wrote", name)


if __name__ == "__main__":
    regenerate()
