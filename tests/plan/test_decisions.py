"""The decision test's structure: groups of measured configurations, the pick graded against the measurements."""

from __future__ import annotations

import copy

import pytest

from calc.errors import CalcError
from calc.plan.decisions import (EXAMPLE, DecisionGroup, cheapest_meeting, load_groups, meets, plan_pick, score,
                                 summary)


def _group(**changes):
    data = copy.deepcopy(EXAMPLE)
    data.update(changes)
    return DecisionGroup.from_dict(data)


def test_hits_and_regret_follow_the_measurements():
    g = _group()
    assert [meets(c, g.targets) for c in g.configurations] == [False, True, True]
    assert cheapest_meeting(g).key == "tp2-fp8"
    assert score(g, "tp2-fp8") == {"group": "example", "role": "validation", "pick": "tp2-fp8", "scored": True,
                                   "hit": True, "regret": 0.0, "cheapest_meeting": "tp2-fp8"}
    assert score(g, "tp4-bf16")["regret"] == pytest.approx(1.0 / 0.6 - 1)
    assert score(g, "tp1-bf16")["hit"] is False
    assert score(g, None)["hit"] is False  # "none meets" is wrong when one does


def test_unmeasured_targets_and_picks_are_unscored_not_hits():
    data = copy.deepcopy(EXAMPLE)
    data["targets"]["ttft_p50_s"] = 1.0  # no configuration measured its median
    g = DecisionGroup.from_dict(data)
    assert cheapest_meeting(g) is None and score(g, "tp2-fp8")["scored"] is False
    assert score(g, None)["hit"] is True  # nothing the measurements can confirm: "none" is right
    s = summary([score(_group(), "tp2-fp8"), score(_group(role="calibration"), "tp1-bf16"), score(g, "tp2-fp8")])
    assert s["validation"] == {"scored": 1, "unscored": 1, "hit_rate": 1.0, "median_regret": 0.0}
    assert s["calibration"]["hit_rate"] == 0.0  # roles stay apart


@pytest.mark.parametrize("change, field", [
    ({"role": "fitted"}, "role"),
    ({"targets": {"p99": 1}}, "targets"),
    ({"configurations": EXAMPLE["configurations"][:1]}, "configurations"),
])
def test_groups_are_checked(change, field):
    with pytest.raises(CalcError) as info:
        _group(**change)
    assert info.value.field == field


def test_every_row_needs_a_source():
    data = copy.deepcopy(EXAMPLE)
    data["configurations"][1]["source"] = ""
    with pytest.raises(CalcError, match="needs its source"):
        DecisionGroup.from_dict(data)


def test_the_planner_picks_among_measured_configurations():
    # the example's configurations as the simulator sees them: one TP1 bf16 replica cannot hold Llama 3.1 70B,
    # the TP2 fp8 fleet of four replicas meets the lesson's targets at 20 requests/s (tests/plan/test_plan_lesson.py)
    pick = plan_pick(_group(workload={"prompt_tokens": 1024, "answer_tokens": 256, "rate_per_s": 20, "requests": 1500}))
    assert pick == "tp2-fp8"
    assert score(_group(), pick)["hit"] is True


def test_the_data_file_loads():
    assert all(g.source and len(g.configurations) >= 2 for g in load_groups())


# ---- the measured groups (calc/plan/decision_groups.json) -------------------------------------------------------

import json

from calc.accuracy import load_measurements
from calc.plan.decisions import (METRICS, SCORES_PATH, _row_metric, evaluate, measured_groups, midpoints,
                                 question_groups, questions, role_of, run_cost)
from calc.plan.inputs import PlanRequest
from calc.plan.prices import gpu_hour_price

GROUPS = measured_groups()
BY_ID = {g["id"]: g for g in GROUPS}


def _fresh():
    return json.loads(json.dumps(evaluate(), sort_keys=True))


def test_the_stored_scores_are_a_fresh_evaluation():
    with open(SCORES_PATH, encoding="utf-8") as handle:
        stored = json.load(handle)
    assert stored == _fresh(), "rerun: python -m calc.plan.decisions --write"


def test_enough_groups_from_enough_sources_every_row_sourced():
    served = [g for g in GROUPS if sum(not c["failed"] for c in g["configurations"]) >= 2]
    assert len(served) >= 6
    def publisher(url):  # a GitHub repository, or a site
        parts = url.split("/")
        return "/".join(parts[2:5]) if parts[2] == "github.com" else parts[2]

    sources = {publisher(c["source"]["url"]) for g in served for c in g["configurations"]}
    assert {"github.com/LambdaLabsML/vllm-benchmark", "buildkite.com", "github.com/sgl-project/sglang"} <= sources
    for g in GROUPS:
        for c in g["configurations"]:
            assert c["source"]["url"].startswith("https://") and c["source"]["where"]


def test_row_figures_are_the_measurements_own():
    rows = {r["id"]: r for r in load_measurements(kinds=None)}
    checked = 0
    for g in GROUPS:
        for c in g["configurations"]:
            for rid in c["source"].get("rows", ()):
                if rid in rows:
                    metric, value = _row_metric(rows[rid])
                    assert c["measured"][metric] == value
                    checked += 1
    assert checked >= 20


def test_prices_are_the_catalogs_dated_listing_and_unpriced_gpus_are_left_out():
    for g in GROUPS:
        for c in g["configurations"]:
            price = gpu_hour_price(PlanRequest(), c["config"]["gpu"])
            assert price["basis"] == "listed" and price["date"]
            assert c["usd_per_million_tokens"] == run_cost(c["gpus"], price["usd_per_gpu_hour"], c["tokens"],
                                                           c["duration_s"])
        for left in g["left_out"]:
            assert gpu_hour_price(PlanRequest(), left["key"].split("-tp")[0]) is None
    # an all-at-once run's cost follows its measured wall time: the faster run of the same GPUs costs less
    llama = {c["key"]: c for c in BY_ID["lambda-llama-3-8b-sharegpt160"]["configurations"]}
    assert llama["h100-tp1"]["usd_per_million_tokens"] < llama["a100-tp1"]["usd_per_million_tokens"]
    assert llama["h100-tp1"]["duration_s"] < llama["a100-tp1"]["duration_s"]


def test_targets_are_every_midpoint_between_measured_values():
    for g in GROUPS:
        served = [c for c in g["configurations"] if not c["failed"]]
        shared = [m for m in METRICS if all(m in c["measured"] for c in served)]
        qs = questions(g)
        assert len(qs) == sum(len({c["measured"][m] for c in served}) - 1 for m in shared)
        for q in qs:
            (metric, t), = q.items()
            below = [c for c in served if c["measured"][metric] <= t]
            above = [c for c in served if c["measured"][metric] > t]
            assert below and above  # each question separates the measured configurations
    assert midpoints([4.0, 1.0, 2.0]) == [1.5, 3.0]


def test_roles_follow_the_rows_sources():
    rows = {r["id"]: r for r in load_measurements(kinds=None)}
    for g in GROUPS:
        used = [rows[r]["role"] for c in g["configurations"] for r in c["source"].get("rows", ()) if r in rows]
        assert g["role"] == role_of(used)
    assert BY_ID["vllm-nightly-latency-llama8b"]["role"] == "calibration"   # its rows set the vllm step cost
    assert BY_ID["lambda-llama-3-8b-sharegpt160"]["role"] == "validation"   # never read by any fit


def test_a_failed_run_is_never_a_hit_and_the_planner_refuses_it_too():
    g = BY_ID["lambda-llama-3-70b-sharegpt160"]
    failed = [c["key"] for c in g["configurations"] if c["failed"]]
    assert failed == ["a100-tp2", "h100-tp2"]
    for q in question_groups(g):
        for key in failed:
            assert score(q, key)["hit"] is False
    stored = {x["id"]: x for x in _fresh()["groups"]}[g["id"]]
    predicted = {c["key"]: c["predicted"] for c in stored["configurations"]}
    assert all("refused" in predicted[k] for k in failed)  # bf16 70B weights leave TP2 no KV cache


def test_hit_rates_and_regret_recompute_from_the_picks():
    out = _fresh()
    for g in out["groups"]:
        scored = g["questions"]
        misses = len(g["misses"])
        assert g["optimistic"] + g["pessimistic"] == misses
        if scored:
            assert g["hit_rate"] == pytest.approx(1 - misses / scored, abs=1e-4)
    v = out["by_role"]["validation"]
    assert v["scored"] == sum(g["questions"] for g in out["groups"] if g["role"] == "validation")
    assert 0 < v["hit_rate"] < 1 and v["median_regret"] is not None
    assert sum(m["scored"] for m in v["by_metric"].values()) == v["scored"]


def _loose_question(g, costs):
    loose = min(3600.0, 10 * max(c["measured"]["duration_s"] for c in g["configurations"]))
    return DecisionGroup.from_dict({
        "id": "loose", "role": "validation", "model": g["model"], "workload": g["workload"], "source": "test",
        "targets": {"duration_s": loose},
        "configurations": [{"key": c["key"], "config": c["config"], "gpus": c["gpus"], "usd_per_million_tokens": cost,
                            "measured": c["measured"], "source": "test"} for c, cost in zip(g["configurations"], costs)]})


def test_the_pick_ranks_by_the_cost_it_predicts_never_the_measured_one():
    g = BY_ID["lambda-llama-3-8b-sharegpt160"]
    n = len(g["configurations"])
    pick = plan_pick(_loose_question(g, [1.0] * n))
    assert pick == plan_pick(_loose_question(g, [float(n - i) for i in range(n)]))  # measured $/M reversed
    # at a target every run meets, the pick is the configuration the planner's own runs price lowest
    assert pick == "h100-tp1"


def test_the_accuracy_pages_claims_follow_the_scores():
    from calc.widgets.accuracy import decision_facts

    f = decision_facts()
    assert 0 < int(f["dec_hit_validation"].rstrip("%")) < 100  # "where the picks miss" has misses to explain
    # "The picks miss most on the sweeps ... Those sweeps are Lambda's runs of 160 prompts sent at once"
    assert int(f["dec_misses_large"]) > int(f["dec_misses_validation"]) / 2
    large = [g for g in _fresh()["groups"] if g["role"] == "validation" and len(g["configurations"]) > 2]
    assert {g["cite"] for g in large} == {"LambdaLabsML vllm-benchmark"}
    assert all(g["configurations"][0]["source"].startswith("https://github.com/LambdaLabsML/") for g in large)
    # "The planner refuses ... for lack of memory. Llama 3 70B in bf16 leaves no room for a KV cache on two 80 GB GPUs"
    refused = [c["predicted"]["refused"] for g in _fresh()["groups"] for c in g["configurations"]
               if "failed" in c["measured"]]
    assert refused and all("does not fit" in r or "KV cache" in r for r in refused)
    assert f["dec_failed_refused"] == f["dec_failed"]


def test_a_closed_loop_group_is_answered_with_its_own_client():
    from calc.plan.decisions import workload_of

    w = workload_of({"kind": "closed_loop", "concurrency": 4, "requests": 40},
                    {"lengths": "fixed", "prompt_tokens": 500, "output_tokens": 100})
    cfg = lambda key, tp: {"key": key, "config": {"gpu": "h100-sxm-80gb", "tp": tp}, "gpus": tp,
                           "usd_per_million_tokens": 1.0, "measured": {"tpot_p50_s": 0.01}, "source": "test"}
    g = DecisionGroup.from_dict({"id": "closed", "role": "validation", "model": "llama-3.1-8b", "workload": w,
                                 "targets": {"tpot_p50_s": 0.05}, "source": "test",
                                 "configurations": [cfg("tp1", 1), cfg("tp2", 2)]})
    assert plan_pick(g) == "tp1"  # four clients: one GPU meets a 50 ms TPOT at half the GPUs
    tight = DecisionGroup.from_dict({**{"id": "tight", "role": "validation", "model": "llama-3.1-8b",
                                        "workload": w, "source": "test"}, "targets": {"tpot_p50_s": 0.001},
                                     "configurations": [cfg("tp1", 1), cfg("tp2", 2)]})
    assert plan_pick(tight) is None  # a 1 ms TPOT: none meets it
