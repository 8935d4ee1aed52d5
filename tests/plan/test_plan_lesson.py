"""The done-when of issue 34 on the lesson preset: a plan the simulator confirms at the lesson's peak, its binding
constraint named, compared with the lesson's own hand-made deployment; and everything the answer must explain."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from calc import latency_accuracy
from calc.plan import presets
from calc.plan.screen import BINDINGS
from calc.plan.search import plan
from tests.once import computed_once

DOCS = Path(__file__).resolve().parents[2] / "docs"
REQUEST = computed_once(lambda: {"request": presets.request("lesson")})
ANSWER = computed_once(lambda: plan(REQUEST["request"], baseline=presets.baseline("lesson"), parallel=False))


def test_the_plan_meets_the_lessons_targets_in_the_simulator():
    best = ANSWER["best"]
    targets = ANSWER["targets"]
    assert ANSWER["status"] == "confirmed" and best["source"] == "simulator" and best["confirmed"]
    for key, target in targets.items():
        assert best["simulation"][key] <= target, key
        assert best["predicted"][key] == best["simulation"][key]
    assert best["simulation"]["requests_completed"] >= 1000
    assert not best["simulation"]["requests_rejected"] and not best["simulation"]["requests_unfinished"]


def test_the_plan_names_its_binding_constraint_and_the_step_that_teaches_it():
    binding = ANSWER["best"]["binding"]
    assert binding["constraint"] in BINDINGS and binding["constraint"] != "engine"
    assert (DOCS / binding["lesson_step"]).is_file()
    fewer = binding["one_replica_fewer"]
    assert fewer["replicas"] == ANSWER["best"]["replicas"] - 1
    assert fewer["misses"] and all(v is None or v > 0 for v in fewer["misses"].values())
    assert binding["constraint"] in " ".join(ANSWER["explanation"]).lower()


def test_the_plan_beats_the_lessons_hand_made_deployment_on_cost_per_million():
    best, base = ANSWER["best"], ANSWER["baseline"]
    assert base["confirmed"] and base["config"] == presets.baseline("lesson")
    for key, target in ANSWER["targets"].items():
        assert base["simulation"][key] <= target
    assert best["usd_per_million"]["all_at_peak"] < base["usd_per_million"]["all_at_peak"]
    assert best["gpus"] < base["gpus"]
    saved = 1 - best["usd_per_million"]["all_at_peak"] / base["usd_per_million"]["all_at_peak"]
    assert f"by {saved * 100:.0f}%" in ANSWER["verdict"]


def test_gpus_cost_and_token_prices_add_up():
    best = ANSWER["best"]
    r = REQUEST["request"]
    assert best["gpus"] == best["replicas"] * best["gpus_per_replica"]
    assert best["usd_per_hour"] == pytest.approx(best["gpus"] * best["usd_per_gpu_hour"], rel=1e-4)
    assert best["price"]["date"] and best["price"]["source"]  # the catalog's dated, sourced listing
    prompt, answer = r.prompt_answer_means()
    um = best["usd_per_million"]
    hourly = (um["input_at_peak"] * r.peak_rate_per_s * prompt + um["output_at_peak"] * r.peak_rate_per_s * answer) \
        * 3600 / 1e6
    assert hourly == pytest.approx(best["usd_per_hour"], rel=1e-3)
    assert um["all_at_mean"] == pytest.approx(um["all_at_peak"] * r.peak_rate_per_s / r.mean_rate_per_s, rel=1e-3)
    assert um["input_at_peak"] < um["output_at_peak"]  # a prompt token is cheaper than an answer token


def test_error_bands_come_from_the_engines_held_out_rows():
    rows = latency_accuracy.load_rows()
    held_out = {m: sum(1 for r in rows if r["role"] == "validation" and r["inputs"].get("engine_profile") == "vllm"
                       and latency_accuracy.metric_of(r) == m) for m in ("ttft", "tpot_itl")}
    bands = ANSWER["best"]["bands"]
    assert bands["ttft_p99_s"]["n"] == held_out["ttft"] and bands["tpot_p99_s"]["n"] == held_out["tpot_itl"]
    for band in bands.values():
        assert band["low"] <= band["high"] and band["engines"] == "vllm"


def test_cheaper_failures_runners_up_sensitivity_and_the_front():
    best = ANSWER["best"]
    assert ANSWER["cheaper_failed"], "a cheaper fleet that fails is shown"
    for c in ANSWER["cheaper_failed"]:
        assert c["usd_per_hour"] < best["usd_per_hour"] and c["misses"]
    assert len(ANSWER["runners_up"]) == 3
    assert all(e["usd_per_hour"] >= best["usd_per_hour"] and e["key"] != best["key"] for e in ANSWER["runners_up"])
    sens = ANSWER["sensitivity"]
    assert sens["rate_plus_20_percent"]["replicas"] >= best["replicas"]
    assert sens["targets_minus_20_percent"]["replicas"] >= best["replicas"]
    points = {p["key"]: p for p in ANSWER["pareto"]["points"]}
    for metric in ("ttft_p99", "tpot_p99"):
        front = ANSWER["pareto"][f"front_{metric}"]
        assert front and set(front) <= set(points)
        costs = [points[k]["usd_per_million"] for k in front]
        values = [points[k][f"{metric}_s"] for k in front]
        assert costs == sorted(costs) and values == sorted(values, reverse=True)
        for p in points.values():  # nothing off the front beats a front point on both
            assert not any(p["usd_per_million"] < points[k]["usd_per_million"] and p[f"{metric}_s"] < points[k][f"{metric}_s"]
                           for k in front)


def test_commands_replay_the_plan():
    best = ANSWER["best"]
    serve, bench = best["commands"]["serve"], best["commands"]["bench"]
    assert serve.startswith("vllm serve meta-llama/Llama-3.1-70B")
    assert f"--tensor-parallel-size {best['config']['tp']}" in serve
    assert f"--max-num-seqs {best['config']['max_num_seqs']}" in serve
    rate = REQUEST["request"].peak_rate_per_s / best["replicas"]
    assert f"--request-rate {rate:.4g}" in bench and "--random-input-len 1024" in bench
    assert "--random-output-len 256" in bench


def test_answer_has_no_non_finite_number():
    def walk(v):
        if isinstance(v, float):
            assert math.isfinite(v)
        elif isinstance(v, dict):
            for x in v.values():
                walk(x)
        elif isinstance(v, list):
            for x in v:
                walk(x)
    walk(dict(ANSWER))
