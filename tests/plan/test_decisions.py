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
