"""The replica panel's stream (calc/widgets/replica.py): frames, the run kept per id, catch-up, changes, export."""

from __future__ import annotations

import itertools
import json

import pytest

from calc.errors import CalcError
from calc.widgets import framework, replica as panel
from calc.widgets.runtime import handle

DELTA_4 = {"allocation": "contiguous"}


def frames(n, **args):
    return list(itertools.islice(panel.live(**args), n))


def setup_function():
    panel._runs.clear()


def test_a_frame_carries_every_view_the_panel_shows():
    frame = frames(1, replica_id="a")[0]
    for key in ("t_s", "queue", "running", "ttft_p99_s", "itl_p50_s", "itl_p99_s", "weights_gb_per_gpu",
                "kv_used_gb_per_gpu", "kv_blocks_used", "kv_blocks_total", "gpu_util_reported",
                "compute_utilization", "usd_per_million_tokens", "allocation", "applied", "replicas"):
        assert key in frame, key
    assert frame["t_s"] == panel.FRAME_S and frame["state"] == {"history": [], "t_s": 1.0}
    assert frame["weights_gb_per_gpu"] == pytest.approx(35.28, abs=0.01)  # 70.6 B x 2 bytes / 4 GPUs


def test_the_run_is_kept_for_its_id_so_a_new_stream_carries_on():
    first = frames(5, replica_id="visit")
    again = frames(2, replica_id="visit", state=json.dumps(first[0]["state"]))
    assert [f["t_s"] for f in again] == [6.0, 7.0]  # the worker's run, not a replay from the saved 1 s
    assert "state" not in again[0]  # the same history: nothing new to save


def test_a_change_applies_at_the_run_s_time_and_is_returned_to_save():
    frames(10, replica_id="v")
    change = json.dumps({"action": "apply", "step": 4, "delta": DELTA_4, "label": "Reserve"})
    frame = frames(1, replica_id="v", state='{"history": [], "t_s": 10}', change=change)[0]
    assert frame["applied"] == [4] and frame["allocation"] == "contiguous"
    assert frame["state"]["history"][0]["at_s"] == 10.0 and frame["t_s"] == 11.0
    undone = frames(1, replica_id="v", state=json.dumps(frame["state"]), change='{"action": "undo"}')[0]
    assert undone["applied"] == [] and undone["allocation"] == "paged" and undone["t_s"] == 12.0


def test_a_new_worker_replays_the_saved_state_in_slices_and_the_clock_does_not_go_back():
    state = {"history": [{"kind": "apply", "step": 4, "delta": DELTA_4, "label": "", "at_s": 5.0}], "t_s": 70.0}
    got = frames(5, replica_id="reloaded", state=json.dumps(state))
    catching = [f for f in got if f["catching_up"]]
    live = [f for f in got if not f["catching_up"]]
    assert len(catching) == 3 and [f["t_s"] for f in catching] == [20.0, 40.0, 60.0]
    assert live[0]["t_s"] == 71.0 and live[0]["applied"] == [4] and live[0]["running"] <= 48


def test_the_stream_runs_through_the_worker_protocol():
    start = json.loads(handle(json.dumps({"id": 1, "op": "stream_start", "fn": "replica.live",
                                          "args": {"replica_id": "p"}})))
    sid = start["result"]["stream"]
    answer = json.loads(handle(json.dumps({"id": 2, "op": "stream_next", "stream": sid, "frames": 3})))
    assert [f["t_s"] for f in answer["result"]["frames"]] == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("args, field", [
    ({"state": "{nope"}, "state"),
    ({"state": '{"t_s": -1}'}, "state.t_s"),
    ({"state": '{"history": [], "t_s": 1e99}'}, "state.t_s"),
    ({"change": '{"action": "redo"}'}, "change.action"),
    ({"change": '{"action": "undo"}'}, "undo"),
    ({"change": '{"action": "apply", "step": 4, "delta": {"allocation": "x"}}'}, "allocation"),
])
def test_bad_input_is_a_calc_error_naming_the_field(args, field):
    with pytest.raises(CalcError) as error:
        frames(1, replica_id="bad", **args)
    assert error.value.field == field


def test_export_gives_the_cli_file_and_the_playground_s_query():
    state = {"history": [{"kind": "apply", "step": 5, "delta": {"allocation": "paged"}, "at_s": 2}], "t_s": 4}
    out = framework.call("replica.export_scenario", {"state": json.dumps(state)})["outputs"]
    assert json.loads(out["scenario_json"]["text"])["allocation"] == "paged"
    assert "allocation=paged" in out["playground_query"]["text"] and "rate_per_s=6" in out["playground_query"]["text"]


def test_a_stream_ends_after_its_frames_and_the_next_one_carries_on():
    assert [f["t_s"] for f in panel.live(replica_id="short", frames=3)] == [1.0, 2.0, 3.0]
    assert next(panel.live(replica_id="short", frames=3))["t_s"] == 4.0


def test_change_effect_view_says_what_to_watch_and_before_after_from_calc():
    from calc.replica import ReaderReplica, change_effect

    # called by name, as the page calls it (calc-replica.js's EFFECT_FN), with the page's string arguments
    out = framework.call("replica.change_effect_view", {"state": "", "step": "4",
                                                        "delta": '{"allocation": "contiguous"}'})["outputs"]
    effect = change_effect(ReaderReplica(), 4, {"allocation": "contiguous"})
    assert out["moved"]["text"] == effect["text"] and "queue 0 -> " in out["moved"]["text"]
    assert out["watch"]["text"] == "The replica drowns: the step's point. Watch:" and "TTFT p99" in out["moved"]["text"]
    assert out["drowned"]["text"] == "yes"


def test_live_resets_to_a_step():
    frames = panel.live(replica_id="reset-test", state='{"history": [], "t_s": 0}',
                          change='{"action": "reset", "step": 7}', frames=2)
    frame = next(frames)
    assert frame["applied"] == [4, 5, 6, 7] and frame["state"]["history"][0]["kind"] == "reset"
