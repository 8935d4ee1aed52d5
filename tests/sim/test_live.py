"""Live frames add up to the run without frames; the frame and block-map format the browser view reads."""

import json

import pytest

from calc import lesson
from calc.errors import CalcError
from calc.sim import presets
from calc.sim.engine import Replica
from calc.sim.fleet import SERIES_KEYS, FleetScenario, simulate_fleet
from calc.sim.live import block_map, live_frames
from calc.sim.scenario import Scenario
from calc.sim.scheduler import SchedulerConfig
from calc.sim.workload import Request

FRAME_KEYS = {"t_s", "done", "points", "summary", "blockmap"}
MAP_KEYS = {"cols", "rows", "cells", "blocks_total", "blocks_per_cell", "used_blocks", "reserved_unused_blocks",
            "summary"}
CELL_CHARS = set(".abcdefghijklmnopABCDEFGHIJKLMNOPz")

RAMP = FleetScenario.from_dict({
    "sample_interval_s": 2, "workload": {"requests": 100000},
    "fleet": {"replicas": 1, "router": "least-outstanding",
              "autoscaler": {"signal": "queue_depth", "max_replicas": 3, "interval_s": 10, "cooldown_s": 20,
                             "pod_start_s": 10},
              "traffic": [{"duration_s": 60, "rate_per_s": 2, "end_rate_per_s": 16},
                          {"duration_s": 60, "rate_per_s": 16, "end_rate_per_s": 1}]}})

CASES = {
    "paged": (Scenario.from_dict({"workload": {"rate_per_s": 8, "requests": 250}}), 1.0, 1500),
    "contiguous, frames off the sample grid": (
        Scenario.from_dict({"allocation": "contiguous", "workload": {"rate_per_s": 8, "requests": 250}}), 2.7, 1500),
    "prefix caching, tiny slices": (
        Scenario.from_dict({"prefix_caching": True, "workload": {"rate_per_s": 3, "requests": 120,
                                                                 "prefix_tokens": 2500}}), 5.0, 40),
    "static batching": (Scenario.from_dict({"model": "llama-3.1-8b", "tp": 1, "batching": "static",
                                            "workload": {"rate_per_s": 2, "requests": 60}}), 3.0, 1500),
    "autoscaled fleet": (RAMP, 4.0, 300),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_frames_add_up_to_the_run_without_frames(name):
    scenario, interval, max_events = CASES[name]
    full = simulate_fleet(scenario)
    frames = list(live_frames(scenario, frame_interval_s=interval, max_events=max_events,
                              blockmap_cols=32, blockmap_rows=16))
    assert [f["done"] for f in frames] == [False] * (len(frames) - 1) + [True]
    joined = {k: [v for f in frames for v in f["points"][k]] for k in SERIES_KEYS}
    assert joined == full.time_series
    assert json.dumps(frames[-1]["summary"], sort_keys=True) == json.dumps(full.summary, sort_keys=True)
    times = [f["t_s"] for f in frames]
    assert times == sorted(times) and times[-1] == full.summary["duration_s"]
    assert len(frames) > 5


def test_frame_format_is_what_the_browser_reads():
    frames = live_frames(presets.load("step05-paged"), frame_interval_s=5.0)
    frame = next(frames)
    assert set(frame) == FRAME_KEYS
    assert tuple(frame["points"]) == SERIES_KEYS
    assert frame["t_s"] == 5.0 and frame["points"]["t_s"] == [1.0, 2.0, 3.0, 4.0, 5.0]
    assert len({len(v) for v in frame["points"].values()}) == 1
    m = frame["blockmap"]
    assert set(m) == MAP_KEYS
    assert len(m["cells"]) == m["cols"] * m["rows"] and set(m["cells"]) <= CELL_CHARS
    assert m["cols"] == 128 and m["rows"] <= 64 and m["blocks_per_cell"] * m["cols"] * m["rows"] >= m["blocks_total"]
    assert m["blocks_total"] == 24948 == lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS // 16  # step 1's cache, in blocks
    json.dumps(frame)  # plain JSON all the way down
    frames.close()


def _mid_run_map(allocation):
    scenario = presets.load("step04-reserve-max").replace(allocation=allocation)
    for frame in live_frames(scenario, frame_interval_s=20.0):
        if frame["t_s"] >= 40:
            return frame["blockmap"]


def test_the_block_map_shows_promises_under_contiguous_allocation_and_tokens_under_paged():
    contiguous, paged = _mid_run_map("contiguous"), _mid_run_map("paged")
    assert contiguous["reserved_unused_blocks"] > 4 * contiguous["used_blocks"]
    assert sum(c.isupper() for c in contiguous["cells"]) > sum(c.islower() for c in contiguous["cells"])
    assert paged["reserved_unused_blocks"] < 0.05 * paged["used_blocks"]
    assert "reserved but empty" in contiguous["summary"]


def test_block_map_counts_and_cached_prefix():
    rep = Replica(SchedulerConfig(block_size=16, max_model_len=4096, prefix_caching=True), 200,
                  lambda **k: 0.01)
    for rid in range(3):
        rep.submit(Request(rid, 0, 1000, 4, 0, 7, 640), 0)
    t = rep.start_step(0)
    m = block_map(rep, cols=20, rows=10)
    assert m["blocks_per_cell"] == 1 and m["rows"] == 10
    # Three 1,000-token prompts sharing 640 tokens (40 blocks) of system prompt: 40 + 3 x 23 blocks, all
    # allocated for the prefill in flight, none written yet (a step writes its KV when it ends).
    assert (m["used_blocks"], m["reserved_unused_blocks"]) == (0, 40 + 3 * 23)
    assert m["cells"][:109] == "A" * 63 + "B" * 23 + "C" * 23
    rep.end_step(t)
    t = rep.start_step(t)
    m = block_map(rep, cols=20, rows=10)
    assert (m["used_blocks"], m["reserved_unused_blocks"]) == (40 + 3 * 23, 0)
    while t is not None:
        rep.end_step(t)
        t = rep.start_step(t)
    done = block_map(rep, cols=20, rows=10)
    assert done["used_blocks"] == done["reserved_unused_blocks"] == 0
    assert done["cells"].count("z") == 40 and "cached for a prefix" in done["summary"]


def test_bad_arguments_are_refused():
    with pytest.raises(CalcError, match="frame_interval_s"):
        next(live_frames(Scenario(), frame_interval_s=0))
    with pytest.raises(CalcError, match="blockmap_cols"):
        next(live_frames(Scenario(), frame_interval_s=1, blockmap_cols=0))
