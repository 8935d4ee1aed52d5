"""The reader's replica (calc/replica.py): its data, the changes the step pages declare, the live run and replay."""

from __future__ import annotations

import glob
import json
import os
import re

import pytest

from calc.errors import CalcError
from calc.replica import CLIENT_TIMEOUT_S, ReaderReplica, ReplicaRun, merge_delta, parse_change, replay
from calc.sim.fleet_scenario import FleetScenario
from calc.sim.scenario import Scenario

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BLOCK = re.compile(r"^/// replica-change \| (\d+)\n(?:(.*?)\n)?///$", re.S | re.M)
REQUIRED_STEPS = [4, 5, 6, 7, 9, 10, 11, 12, 14, 15, 19, 20]


def page_changes() -> dict[int, dict]:
    """Every step page's declared change, parsed as the build parses it."""
    found = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "lesson", "*.md"))):
        with open(path, encoding="utf-8") as handle:
            for step, body in BLOCK.findall(handle.read()):
                assert int(step) == int(os.path.basename(path)[:2]), path  # a page declares its own step
                found[int(step)] = parse_change(int(step), body)
    return found


CHANGES = page_changes()


def test_the_steps_the_issue_names_declare_a_change():
    assert sorted(CHANGES) == REQUIRED_STEPS


def test_contiguous_caps_the_batch_at_48_and_paged_lifts_it():
    run = ReplicaRun()
    run.advance_to(10)
    run.apply(4, CHANGES[4]["delta"], CHANGES[4]["label"])
    run.advance_to(60)
    frame = run.frame()
    assert (frame["allocation"], frame["running"], frame["applied"]) == ("contiguous", 48, [4])
    assert frame["queue"] > 100  # at 8 requests/s the rest wait
    run.apply(5, CHANGES[5]["delta"])
    run.advance_to(90)
    frame = run.frame()
    assert frame["allocation"] == "paged" and frame["running"] > 48 and frame["applied"] == [4, 5]
    assert frame["t_s"] == 90.0


def test_the_whole_lesson_path_runs_and_every_figure_is_finite():
    run = ReplicaRun()
    t = 0.0
    for step in REQUIRED_STEPS:
        t += 20
        run.advance_to(t)
        run.apply(step, CHANGES[step]["delta"], CHANGES[step]["label"])
        t += 20
        run.advance_to(t)
        frame = run.frame()
        assert frame["t_s"] == t and frame["applied"] == REQUIRED_STEPS[:REQUIRED_STEPS.index(step) + 1]
        for key in ("queue", "running", "kv_blocks_used", "kv_blocks_total", "weights_gb_per_gpu"):
            assert isinstance(frame[key], (int, float)) and frame[key] >= 0, (step, key)
        json.dumps(frame, allow_nan=False)
    assert frame["replicas"] == 6  # step 20's pools: 2 chat + 3 documents + 1 batch
    assert run.frame()["weights_gb_per_gpu"] == pytest.approx(18.17, abs=0.05)  # fp8 since step 7: half of 35.3 GB


def test_fp8_frees_memory_for_kv_blocks():
    run = ReplicaRun()
    before = run.frame()["kv_blocks_total"]
    run.advance_to(5)
    run.apply(7, CHANGES[7]["delta"])
    run.advance_to(6)
    assert run.frame()["kv_blocks_total"] > 1.4 * before
    assert run.frame()["weights_gb_per_gpu"] < 0.6 * 35.28


def test_replay_gives_the_same_state_as_the_live_run():
    live = ReplicaRun()
    live.advance_to(12.5)
    live.apply(4, CHANGES[4]["delta"])
    live.advance_to(40)
    live.undo()
    live.advance_to(55)
    live.apply(6, CHANGES[6]["delta"])
    live.advance_to(70)
    replayed = replay(ReaderReplica.from_dict(live.replica.to_dict()), 70)
    assert replayed.frame() == live.frame()
    assert replayed.replica.applied_steps() == [6]
    assert [e["kind"] for e in replayed.replica.history] == ["apply", "undo", "apply"]


def test_the_clock_carries_on_through_a_redeploy_and_requests_in_flight_are_queued_again():
    run = ReplicaRun()
    run.advance_to(30)
    held = len(run._in_flight())
    run.apply(4, CHANGES[4]["delta"])
    assert run.t_s == 30.0
    assert len(run.requests) >= held > 0  # re-queued at the redeploy, ahead of the new arrivals
    assert all(r.arrival_ns == 0 for r in run.requests[:held])


def test_requests_waiting_past_the_client_timeout_are_given_up_at_a_redeploy():
    run = ReplicaRun()
    run.apply(4, CHANGES[4]["delta"])
    run.advance_to(CLIENT_TIMEOUT_S + 200)  # contiguous: the queue grows, its head waits longer than the timeout
    run.apply(5, CHANGES[5]["delta"])
    assert run.given_up > 0 and run.frame()["given_up"] == run.given_up


def test_undo_goes_back_to_the_previous_scenario_while_the_clock_carries_on():
    replica = ReaderReplica().apply(4, CHANGES[4]["delta"], 10).apply(7, CHANGES[7]["delta"], 20).undo(30)
    assert replica.applied_steps() == [4]
    assert replica.scenario_data()["allocation"] == "contiguous" and "weights" not in replica.scenario_data()


def test_export_is_a_scenario_the_cli_reads():
    out = ReaderReplica().apply(7, CHANGES[7]["delta"], 3).apply(12, CHANGES[12]["delta"], 9).export()
    scenario = Scenario.from_dict(out["scenario"])  # what `python -m calc simulate --scenario FILE` loads
    assert (scenario.weights, scenario.prefix_caching, scenario.workload.rate_per_s) == ("fp8", True, 6)
    fleet = ReaderReplica().apply(14, CHANGES[14]["delta"], 3).export()
    assert fleet["command"].endswith("--preset my-replica.json")
    assert '"signal": "gpu_util"' in json.dumps(fleet["scenario"]["fleet"])
    assert FleetScenario.from_dict(fleet["scenario"]).fleet.pools[0].autoscaler.signal == "gpu_util"


def test_merge_delta_merges_objects_and_removes_nulls():
    assert merge_delta({"a": {"b": 1, "c": 2}, "d": [1]}, {"a": {"b": None, "e": 3}, "d": [2]}) == {
        "a": {"c": 2, "e": 3}, "d": [2]}


@pytest.mark.parametrize("call, field", [
    (lambda: ReaderReplica().apply(0, {}, 1), "step"),
    (lambda: ReaderReplica().apply(4, {"allocation": "diagonal"}, 1), "allocation"),
    (lambda: ReaderReplica().apply(4, {"tp": 0}, 1), "tp"),
    (lambda: ReaderReplica().apply(4, "contiguous", 1), "delta"),
    (lambda: ReaderReplica().apply(4, {}, -1), "at_s"),
    (lambda: ReaderReplica().apply(4, {}, float("nan")), "at_s"),
    (lambda: ReaderReplica().apply(4, {}, 10).apply(5, {}, 5), "at_s"),
    (lambda: ReaderReplica().undo(1), "undo"),
    (lambda: ReaderReplica.from_json("{not json"), "state"),
    (lambda: ReaderReplica.from_dict({"history": [{"kind": "apply", "step": 4, "delta": {}, "at_s": "x"}]}), "at_s"),
    (lambda: parse_change(4, "label: x"), "delta"),
    (lambda: parse_change(4, "label: x\ndelta: {nope"), "delta"),
    (lambda: ReplicaRun().advance_to(1e12), "t_s"),
])
def test_bad_input_is_a_calc_error_naming_the_field(call, field):
    with pytest.raises(CalcError) as error:
        call()
    if field is not None:
        assert error.value.field == field


def test_the_playground_query_is_made_of_the_playground_s_knobs_and_gives_the_same_scenario():
    from calc.widgets.playground import scenario_data

    replica = ReaderReplica().apply(7, CHANGES[7]["delta"], 3).apply(9, CHANGES[9]["delta"], 9)
    out = replica.export()
    rebuilt = Scenario.from_dict(scenario_data(**out["playground_query"]))
    mine = Scenario.from_dict(out["scenario"])
    assert (rebuilt.weights, rebuilt.speculation, rebuilt.workload.rate_per_s, rebuilt.allocation) == (
        mine.weights, mine.speculation, mine.workload.rate_per_s, mine.allocation)


def test_applying_the_same_step_twice_is_a_no_op():
    once = ReaderReplica().apply(7, CHANGES[7]["delta"], 5.0, CHANGES[7]["label"])
    assert once.apply(7, CHANGES[7]["delta"], 9.0) is once and len(once.history) == 1
    # the same in the live run: no second redeploy, no second history entry, the same frame as one apply
    twice, single = ReplicaRun(), ReplicaRun()
    for run, applies in ((twice, 2), (single, 1)):
        run.advance_to(10)
        for _ in range(applies):
            run.apply(7, CHANGES[7]["delta"], CHANGES[7]["label"])
        run.advance_to(40)
    assert twice.deployments == single.deployments == 2
    assert twice.frame() == single.frame() and twice.replica == single.replica
    # after an undo it may be applied again
    undone = once.undo(10.0)
    assert undone.apply(7, CHANGES[7]["delta"], 11.0).applied_steps() == [7]


def test_the_frame_names_per_token_latency_itl_and_marks_the_redeploy_transient():
    from calc.replica import SETTLE_S

    run = ReplicaRun()
    run.advance_to(30)
    frame = run.frame()
    assert not any(key.startswith("tpot") for key in frame)
    assert frame["itl_p99_s"] > 0 and frame["settling_s"] == 0  # the first deployment has no restart
    run.apply(6, CHANGES[6]["delta"])
    run.advance_to(31)
    assert run.frame()["settling_s"] == SETTLE_S - 1
    run.advance_to(30 + SETTLE_S)
    assert run.frame()["settling_s"] == 0


def test_every_page_block_takes_the_lessons_change_from_calc():
    from calc.replica import LESSON_CHANGES

    assert sorted(LESSON_CHANGES) == REQUIRED_STEPS
    for step, change in CHANGES.items():
        assert (change["label"], change["delta"]) == (LESSON_CHANGES[step]["label"], LESSON_CHANGES[step]["delta"])
    with pytest.raises(CalcError, match="declares no change for step 8"):
        parse_change(8, "")
