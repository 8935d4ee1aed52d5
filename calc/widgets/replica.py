"""The replica panel's stream: the reader's replica (:mod:`calc.replica`), kept in the worker for the visit.

The panel on every lesson page (``docs/assets/runtime/calc-replica.js``) starts
:func:`live` with the id of the visit's replica, the state it keeps in
``localStorage`` (the history of applied changes and the simulated time) and
the change to make now, if any. The run lives in this module's memory under that
id, so a new stream after an instant navigation (or after the runtime dropped an
old one) picks up the same run where it was; only when the worker has no run for
the id, or holds another history (another tab applied a change), is the run
replayed from the state, in slices, so the clock never goes back. Each frame is
one simulated second: the clock, queue and running sequences (summed over
replicas), TTFT and ITL percentiles, memory per GPU, KV blocks, GPU-Util beside
real compute use and cost per million tokens.

>>> frames = live(replica_id="doc", state='{"history": [], "t_s": 0}', change="")
>>> first = next(frames); first["t_s"], first["allocation"], first["applied"]
(1.0, 'paged', [])
>>> frames = live(replica_id="doc", state='{"history": [], "t_s": 1}',
...               change='{"action": "apply", "step": 4, "delta": {"allocation": "contiguous"}, "label": "Reserve"}')
>>> frame = next(frames); frame["t_s"], frame["applied"], frame["allocation"], frame["state"]["history"][0]["at_s"]
(2.0, [4], 'contiguous', 1.0)
"""

from __future__ import annotations

import json
import time
from typing import Annotated

from calc.errors import CalcError
from calc.replica import (LAST_STEP, MAX_TIME_S, ReaderReplica, ReplicaRun, change_effect, effect_sentence,
                          effect_watch)
from calc.widgets.framework import FloatRange, IntRange, Text, output, stream, view, widget

__all__ = ["live", "export_scenario", "change_effect_view", "FRAME_S", "SLICE_S", "MAX_RUNS"]

#: Simulated seconds per frame.
FRAME_S = 1.0
#: Simulated seconds replayed per slice while catching up (a few ms each in CPython).
SLICE_S = 20.0
#: Runs kept in the worker (one per visit in practice; ids beyond it drop the oldest).
MAX_RUNS = 4

_runs: dict[str, ReplicaRun] = {}


def _state(text: str) -> tuple[ReaderReplica, float]:
    if not text:
        return ReaderReplica(), 0.0
    try:
        data = json.loads(text)
    except ValueError:
        raise CalcError("state must be JSON: {\"history\": [...], \"t_s\": seconds}", "state") from None
    if not isinstance(data, dict):
        raise CalcError("state must be a JSON object with history and t_s", "state")
    t_s = data.get("t_s", 0.0)
    if isinstance(t_s, bool) or not isinstance(t_s, (int, float)) or not 0 <= t_s <= MAX_TIME_S:
        raise CalcError(f"state.t_s must be a number of seconds between 0 and {MAX_TIME_S:g}; got {t_s!r}", "state.t_s")
    replica = ReaderReplica.from_dict({"history": data.get("history", [])})
    if replica.history and replica.history[-1]["at_s"] > t_s:
        raise CalcError("state.t_s must be at or after the last change's time", "state.t_s")
    return replica, float(t_s)


def _change(text: str):
    if not text:
        return None
    try:
        change = json.loads(text)
    except ValueError:
        raise CalcError("change must be JSON: {\"action\": \"apply\"|\"undo\"|\"reset\", ...}", "change") from None
    if not isinstance(change, dict) or change.get("action") not in ("apply", "undo", "reset"):
        raise CalcError("change.action must be apply, undo or reset", "change.action")
    return change


def _run_for(replica_id: str, replica: ReaderReplica, t_s: float):
    """The worker's run for this id if it holds the same history (else a fresh one to replay); and whether fresh."""
    run = _runs.get(replica_id)
    if run is not None and run.replica.history == replica.history:
        return run, False
    run = ReplicaRun(replica)
    _runs.pop(replica_id, None)
    _runs[replica_id] = run
    while len(_runs) > MAX_RUNS:
        _runs.pop(next(iter(_runs)))
    return run, True


def _frame(run: ReplicaRun, catching_up: bool, with_state: bool) -> dict:
    frame = run.frame()
    frame["catching_up"] = catching_up
    if with_state:  # the page keeps this in localStorage: sent when it changes, not every second
        frame["state"] = {"history": [dict(e) for e in run.replica.history], "t_s": frame["t_s"]}
    return frame


@stream(budget_s=4.0)
def live(
    replica_id: Annotated[str, Text(label="Replica id", rows=1, max_chars=64)] = "",
    state: Annotated[str, Text(label="Saved state (JSON)", rows=4)] = "",
    change: Annotated[str, Text(label="Change to make now (JSON)", rows=2)] = "",
    speed: Annotated[float, FloatRange(0.25, 8.0, 0.25, "simulated s per frame", label="Speed")] = FRAME_S,
    frames: Annotated[int, IntRange(1, 3600, 1, "frames", label="Frames")] = 120,
):
    """The reader's replica, live: catch up to the saved time, make the change, then ``frames`` frames of ``speed`` s.

    The stream ends after ``frames`` frames; the run stays in the worker, so the panel's next stream for the
    same id carries on from there.
    """
    replica_id = (replica_id or "default").strip()[:64]
    replica, t_s = _state(state)
    change = _change(change)
    run, fresh = _run_for(replica_id, replica, t_s)
    # Catch up to the saved time in slices, each a frame the panel may show as "catching up".
    while run.t_s + 1e-9 < t_s:
        started = time.perf_counter()
        run.advance_to(min(t_s, run.t_s + SLICE_S))
        if run.t_s + 1e-9 < t_s and time.perf_counter() - started > 0:
            yield _frame(run, True, False)
    send_state = fresh
    if change is not None:
        if change["action"] == "apply":
            run.apply(change.get("step"), change.get("delta"), change.get("label", ""))
        elif change["action"] == "reset":
            run.reset_to(change.get("step"))
        else:
            run.undo()
        send_state = True
    for _ in range(frames):
        if run.t_s + speed > MAX_TIME_S:
            return
        run.advance_to(run.t_s + speed)
        yield _frame(run, False, send_state)
        send_state = False


@widget
def export_scenario(state: Annotated[str, Text(label="Saved state (JSON)", rows=4)] = ""):
    """The replica's scenario in force as a file (for ``python -m calc simulate``) and as the playground's knobs.

    >>> out = export_scenario('{"history": [{"kind": "apply", "step": 7, "delta": {"weights": "fp8"}, "at_s": 3}], "t_s": 9}')
    >>> out["outputs"]["command"]["text"], json.loads(out["outputs"]["scenario_json"]["text"])["weights"]
    ('python -m calc simulate --scenario my-replica.json', 'fp8')
    >>> out["outputs"]["playground_query"]["text"][:40]
    'model=llama-3.1-70b&gpu=h100-sxm-80gb&tp'
    """
    from urllib.parse import urlencode

    replica, _ = _state(state)
    exported = replica.export()
    text = json.dumps(exported["scenario"], indent=2, sort_keys=True)
    return view(outputs=[
        output("scenario_json", "Scenario file", exported["file_name"], text=text),
        output("command", "Run it", exported["command"], text=exported["command"]),
        output("playground_query", "Playground", "query", text=urlencode(exported["playground_query"])),
        output("file_name", "File name", exported["file_name"], text=exported["file_name"]),
    ])


@widget
def change_effect_view(
    state: Annotated[str, Text(label="Saved state before the change (JSON)", rows=4)] = "",
    step: Annotated[int, IntRange(1, LAST_STEP, 1, "", label="Step")] = 4,
    delta: Annotated[str, Text(label="The step's delta (JSON)", rows=2)] = '{"allocation": "contiguous"}',
):
    """What to watch when a step's change is applied, and before -> after for the figures that move.

    The panel shows it beside the Apply button; the numbers are :func:`calc.replica.change_effect`'s.

    >>> out = change_effect_view("", 4, '{"allocation": "contiguous"}')["outputs"]
    >>> out["watch"]["text"], out["moved"]["text"].split(", ")[0]
    ("The replica drowns: the step's point. Watch:", 'KV cache 30% -> 98%')
    """
    replica, _ = _state(state)
    try:
        delta_data = json.loads(delta)
    except ValueError:
        raise CalcError("delta must be JSON: a scenario delta object", "delta") from None
    effect = change_effect(replica, step, delta_data)
    # the moved figures are what to watch: the text names each one with its before -> after; the sentence is the
    # line the build pre-renders for the lesson's path (calc.replica.lesson_change_effect), word for word
    return view(outputs=[
        output("watch", "Watch", "", text=effect_watch(effect)),
        output("moved", "Before -> after", "", text=effect["text"]),
        output("sentence", "Shown", "", text=effect_sentence(effect)),
        output("drowned", "Drowned after", "", text="yes" if effect["after"]["drowned"] else "no"),
    ])
