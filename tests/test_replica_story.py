"""One replica, one story (issue 32): walking the lesson's changes in order, each Apply's before -> after.

The figures are calc.replica.change_effect's (the replica before and after a step's change on one seed, the
redeploy's transient skipped). A change may drown the replica only where that is the step's lesson (a "Break
it" step, or a change declaring ``breaks``), and the next step's change must then rescue it visibly.
"""

from __future__ import annotations

import glob
import os
import re

import pytest

from calc.replica import (DROWNED_TTFT_P99_S, EFFECT_WINDOW_S, LESSON_CHANGES, SETTLE_S, WARMUP_S, ReaderReplica,
                          ReplicaRun, change_effect, window_figures)

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def break_it_titles() -> set[int]:
    """The steps whose page title says "Break it"."""
    steps = set()
    for path in glob.glob(os.path.join(ROOT, "docs", "lesson", "*.md")):
        with open(path, encoding="utf-8") as handle:
            if re.search(r"^# \d+\. Break it\b", handle.read(), re.M):
                steps.add(int(os.path.basename(path)[:2]))
    return steps


BREAK_STEPS = break_it_titles() | {step for step, change in LESSON_CHANGES.items() if change.get("breaks")}


@pytest.fixture(scope="module")
def story() -> list[dict]:
    """Each lesson change's effect on the replica the lesson has built up to it, in order."""
    replica, effects = ReaderReplica(), []
    for index, step in enumerate(sorted(LESSON_CHANGES)):
        change = LESSON_CHANGES[step]
        effects.append(change_effect(replica, step, change["delta"], change["label"]))
        replica = replica.apply(step, change["delta"], 100.0 * (index + 1), change["label"])
    return effects


def steady_state(scenario: dict) -> dict:
    run = ReplicaRun(ReaderReplica(base=scenario))
    run.advance_to(WARMUP_S)
    return window_figures(run, EFFECT_WINDOW_S)


def lesson_scenarios() -> dict[int, dict]:
    """The scenario in force after each lesson step's change."""
    replica, out = ReaderReplica(), {}
    for index, step in enumerate(sorted(LESSON_CHANGES)):
        replica = replica.apply(step, LESSON_CHANGES[step]["delta"], float(index))
        out[step] = replica.scenario_data()
    return out


rescue_scenarios = lesson_scenarios()


def test_break_it_titles_are_read_from_the_pages():
    assert {4, 10, 11, 14} <= break_it_titles()


def test_no_step_leaves_the_replica_drowned_unless_it_breaks_it_and_the_next_step_rescues_it(story):
    drowned = [e["step"] for e in story if e["after"]["drowned"]]
    assert drowned, "no change drowns the replica: the break-it steps show nothing"
    for index, effect in enumerate(story):
        if not effect["after"]["drowned"]:
            continue
        assert effect["step"] in BREAK_STEPS, (effect["step"], effect["text"])
        assert not effect["before"]["drowned"], effect["step"]  # it was fine before the break
        rescue = story[index + 1]
        assert rescue["before"]["drowned"] and not rescue["after"]["drowned"], (rescue["step"], rescue["text"])
        # visibly: the backlog drains (the queue to under half), TTFT p99 falls by 40% and under the drowned mark
        assert rescue["after"]["queue"] < 0.5 * rescue["before"]["queue"], rescue["text"]
        assert rescue["after"]["ttft_p99_s"] < min(0.6 * rescue["before"]["ttft_p99_s"], DROWNED_TTFT_P99_S)
        assert "queue" in rescue["watch"] and "TTFT p99" in rescue["watch"]
        # and once the backlog is gone the rescued replica is healthy: its own steady state, from empty
        healthy = steady_state(rescue_scenarios[rescue["step"]])
        assert not healthy["drowned"] and healthy["ttft_p99_s"] < 2.0 and healthy["queue"] < 10, healthy


def test_a_declared_break_does_drown_the_replica(story):
    """A change that says it breaks the replica must: the queue grows or TTFT p99 passes 30 s."""
    for effect in story:
        if LESSON_CHANGES[effect["step"]].get("breaks"):
            assert effect["after"]["drowned"], effect["text"]
            assert effect["after"]["ttft_p99_s"] > 10 * effect["before"]["ttft_p99_s"], effect["text"]


def test_every_change_moves_a_figure_and_the_replica_ends_healthy(story):
    for effect in story:
        assert effect["moved"], (effect["step"], effect["text"])
        for moved in effect["moved"]:
            assert moved["before"] != moved["after"] and moved["text"].startswith(moved["name"])
    assert not story[-1]["after"]["drowned"] and story[-1]["after"]["queue_growth"] <= 0


def test_the_lessons_points_show_in_the_figures(story):
    by_step = {e["step"]: e for e in story}
    # Step 4: contiguous allocation caps the batch (48) and fills the KV cache; step 5 lifts the batch.
    assert by_step[4]["after"]["running"] == 48 and by_step[4]["after"]["kv_cache_pct"] > 90
    assert by_step[5]["after"]["running"] > 4 * by_step[5]["before"]["running"]
    # Step 7: fp8 halves the weights per GPU.
    w = by_step[7]
    assert w["after"]["weights_gb_per_gpu"] == pytest.approx(w["before"]["weights_gb_per_gpu"] / 2, rel=0.1)
    # Step 9: speculation at light traffic shortens the time between tokens.
    assert by_step[9]["after"]["itl_p99_s"] < 0.5 * by_step[9]["before"]["itl_p99_s"]
    # Step 12: prefix caching cuts TTFT p99 and frees KV cache against step 11's system prompt.
    p = by_step[12]
    assert p["after"]["ttft_p99_s"] < 0.5 * p["before"]["ttft_p99_s"]
    assert p["after"]["kv_cache_pct"] < 0.5 * p["before"]["kv_cache_pct"]


def test_after_figures_are_read_after_the_redeploy_transient(story):
    for effect in story:
        assert effect["after"]["from_s"] >= effect["before"]["to_s"] + SETTLE_S, effect["step"]


def test_step_10_switches_speculation_off_and_its_undo_turns_it_back_on():
    replica = ReaderReplica()
    for index, step in enumerate(s for s in sorted(LESSON_CHANGES) if s <= 9):
        replica = replica.apply(step, LESSON_CHANGES[step]["delta"], float(index))
    assert replica.fleet_scenario().scenario.speculation is not None
    off = replica.apply(10, LESSON_CHANGES[10]["delta"], 50.0)
    assert off.fleet_scenario().scenario.speculation is None
    assert off.undo(60.0).fleet_scenario().scenario.speculation is not None


def test_reset_to_a_step_restores_the_lessons_replica_at_that_step():
    lesson_12 = ReaderReplica()
    for index, step in enumerate(s for s in sorted(LESSON_CHANGES) if s <= 12):
        lesson_12 = lesson_12.apply(step, LESSON_CHANGES[step]["delta"], float(index))
    wandered = ReaderReplica().apply(7, LESSON_CHANGES[7]["delta"], 1.0).apply(14, LESSON_CHANGES[14]["delta"], 2.0)
    reset = wandered.reset_to(12, 30.0)
    assert reset.scenario_data() == lesson_12.scenario_data()
    assert reset.applied_steps() == lesson_12.applied_steps() == [4, 5, 6, 7, 9, 10, 11, 12]
    assert reset.undo(40.0).scenario_data() == lesson_12.undo(40.0).scenario_data()  # Undo takes off step 12's
    assert ReaderReplica.from_dict(reset.to_dict()) == reset  # a reload replays the reset
    run = ReplicaRun(wandered)
    run.advance_to(10.0)
    run.reset_to(12)
    run.advance_to(20.0)
    assert run.frame()["applied"] == [4, 5, 6, 7, 9, 10, 11, 12] and run.scenario.prefix_caching


def test_step_15_keeps_the_warm_headroom_its_page_runs():
    """Step 15's change is its page's arm: the queue signal and the floor the page computes (the preset
    step15-warm-headroom, whose floor tests/site/test_one_story.py ties to calc.autoscale.ramp_headroom)."""
    from calc.sim import presets

    page_arm = presets.load_data("step15-warm-headroom")["fleet"]
    change = LESSON_CHANGES[15]["delta"]["fleet"]
    assert change["autoscaler"]["signal"] == page_arm["autoscaler"]["signal"] == "queue_depth"
    assert change["autoscaler"]["min_replicas"] == page_arm["autoscaler"]["min_replicas"] == change["replicas"]
    assert change["replicas"] == page_arm["replicas"]


def test_step_15_beats_step_14_on_both_p99_and_replicas(story):
    by_step = {e["step"]: e for e in story}
    assert by_step[15]["after"]["ttft_p99_s"] < 0.7 * by_step[15]["before"]["ttft_p99_s"]
    assert by_step[15]["after"]["replicas"] < by_step[15]["before"]["replicas"]


def _surge_share(delta: dict, share: float) -> dict:
    """Step 19's or 20's delta with ``share`` documents in the surge minute (chat gives up the difference)."""
    import copy

    delta = copy.deepcopy(delta)
    shares = delta["fleet"]["traffic"][1]["shares"]
    shares["chat"] = round(shares["chat"] + shares["document"] - share, 9)
    shares["document"] = share
    return delta


@pytest.fixture(scope="module")
def carried_15() -> ReaderReplica:
    """The replica the lesson carries to step 19 (its changes up to step 15)."""
    return ReaderReplica().reset_to(15, 0.0)


def test_the_pages_incident_barely_dents_the_carried_replica_because_fp8_doubled_its_room(carried_15):
    """Why step 19's change barely showed: the page's surge (8% documents, tuned on the bf16 running example to
    the title's peak) on the reader's replica, which runs fp8 weights since step 7: more KV cache, and its TTFT p99
    stays a fraction of the page's peak."""
    from calc.incident import alert_page, incident_scenario
    from calc.sim.hardware import kv_sizing
    from calc.sim.scenario import Scenario

    page_share = incident_scenario()["fleet"]["traffic"][1]["shares"]["document"]
    page_peak_s = alert_page()["peak_s"]
    carried = carried_15.fleet_scenario().scenario
    page_scenario = Scenario.from_dict({k: v for k, v in incident_scenario().items() if k != "fleet"})
    assert carried.weights == "fp8" and page_scenario.weights == "bf16"
    room = kv_sizing(carried).kv_cache_tokens / kv_sizing(page_scenario).kv_cache_tokens
    assert room > 1.4, room
    dented = change_effect(carried_15, 19, _surge_share(LESSON_CHANGES[19]["delta"], page_share))
    assert dented["after"]["ttft_p99_s"] < 0.25 * page_peak_s, dented["text"]
    assert dented["after"]["kv_cache_pct"] < 25, dented["text"]


def test_step_19_hits_the_carried_replica_as_hard_as_the_page_and_step_20_protects_chat(story):
    """The surge sized for the reader's replica (CARRIED_DOCUMENT_SHARE) takes its TTFT p99 near the page's peak,
    chat's with it, and fills the KV cache; step 20's pools bring chat's TTFT p99 back under a second (the
    documents wait in their own pool, so the fleet's TTFT p99 is theirs)."""
    from calc.incident import alert_page
    from calc.replica import CARRIED_DOCUMENT_SHARE

    by_step = {e["step"]: e for e in story}
    incident, fix = by_step[19], by_step[20]
    page_peak_s = alert_page()["peak_s"]
    assert LESSON_CHANGES[19]["delta"]["fleet"]["traffic"][1]["shares"]["document"] == CARRIED_DOCUMENT_SHARE
    assert incident["after"]["ttft_p99_s"] > 0.75 * page_peak_s, incident["text"]
    assert incident["after"]["ttft_p99_s"] > 50 * incident["before"]["ttft_p99_s"], incident["text"]
    assert incident["after"]["chat_ttft_p99_s"] > 0.75 * page_peak_s, incident["text"]
    assert incident["after"]["kv_cache_pct"] > 5 * incident["before"]["kv_cache_pct"], incident["text"]
    assert {"TTFT p99 (all requests)", "chat TTFT p99", "KV cache"} <= set(incident["watch"])
    assert fix["before"]["chat_ttft_p99_s"] > 0.75 * page_peak_s, fix["text"]
    assert fix["after"]["chat_ttft_p99_s"] < min(1.0, 0.05 * fix["before"]["chat_ttft_p99_s"]), fix["text"]
    assert "chat TTFT p99" in fix["watch"]
