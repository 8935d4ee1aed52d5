"""The reader's replica: one simulation of the running example, changed step by step through the lesson.

A :class:`ReaderReplica` is data: the running example's scenario (the lesson's
70B replica on four H100s under step 4's and 5's traffic, from the preset
``step05-paged``) and the ordered history of what the reader did to it: each
entry applies a step's scenario delta, or undoes the last applied one, at a
simulated time. The scenario in force is the base with every applied delta
merged in order (:func:`merge_delta`); ``export()`` gives it as a scenario file
for ``python -m calc simulate --scenario FILE`` (a single replica) or
``--preset FILE`` (a fleet, from step 14 on).

A :class:`ReplicaRun` is the live simulation of that history. Applying a change
redeploys the replica as a rolling restart would: the clock keeps counting, a
new fleet is built from the changed scenario, the requests in flight are queued
again on it, and the arrivals that have not come yet keep coming. The traffic
is an endless stream, drawn in chunks of :data:`CHUNK_S` simulated seconds, each
from its own seed derived from the scenario's seed and the chunk's index, so
the same history and the same time always give the same state
(:func:`replay`: what a reload does). Traffic with phases (steps 14 to 20) starts
its phases at the redeploy and repeats them.

>>> replica = ReaderReplica().apply(4, {"allocation": "contiguous"}, at_s=30.0, label="Reserve max_model_len")
>>> replica.applied_steps(), replica.scenario_data()["allocation"]
([4], 'contiguous')
>>> run = replay(replica, until_s=40.0)
>>> run.t_s, run.frame()["allocation"], run.frame()["running"] <= 48
(40.0, 'contiguous', True)
>>> replica.undo(at_s=50.0).applied_steps()
[]
"""

from __future__ import annotations

import bisect
import copy
import json
import math

from calc.cost import replica_usd_per_hour, usd_per_million_tokens
from calc.errors import CalcError, check_range
from calc.sim import presets
from calc.sim.fleet import Fleet
from calc.sim.fleet_scenario import FleetScenario, fleet_requests
from calc.sim.scenario import SPECULATION_PRESETS
from calc.sim.workload import Request
from calc.units import NS_PER_S

__all__ = ["BASE_PRESET", "CHUNK_S", "MAX_HISTORY", "ReaderReplica", "ReplicaRun", "merge_delta", "replay",
           "base_scenario_data", "CLIENT_TIMEOUT_S", "parse_change", "playground_query",
           "SETTLE_S", "change_effect", "window_figures", "LESSON_CHANGES", "CARRIED_DOCUMENT_SHARE",
           "CHAT_CLASS", "effect_watch", "effect_sentence", "lesson_path", "lesson_change_effect"]

#: The preset the reader's replica starts from: the running example with the lesson's traffic (8 requests/s).
BASE_PRESET = "step05-paged"
#: Simulated seconds of traffic drawn at a time (the stream is endless: a reader may stay an hour).
CHUNK_S = 60
#: Most entries a history may hold (each is a redeploy the replay repeats).
MAX_HISTORY = 200
#: Lesson steps a change may come from.
FIRST_STEP, LAST_STEP = 1, 22
#: Longest a replica may be replayed or run (simulated seconds): a day.
MAX_TIME_S = 86_400.0
#: A request left waiting this long when the replica is redeployed has been given up by its client (a gateway's
#: timeout); the younger ones are queued again on the new deployment (the engine models no abandonment yet).
CLIENT_TIMEOUT_S = 30
#: Simulated seconds after a redeploy that are the restart's transient, not the new steady state: the requests
#: in flight arrive again at once, and the latency percentiles' trailing window (10 s,
#: calc.sim.fleet_scenario's percentile_window_s) still holds that burst. The panel marks these seconds as
#: settling and :func:`change_effect` reads its after-figures from after them.
SETTLE_S = 20
#: Simulated seconds of steady state the before and after figures of a change are read over (stationary traffic;
#: traffic with phases is read over one whole cycle of its phases).
EFFECT_WINDOW_S = 120
#: Simulated seconds the "before" run warms up from empty before its window (stationary traffic).
WARMUP_S = 60
#: A replica is drowned when its TTFT p99 passes this (a chat user has given up), or its queue keeps growing.
DROWNED_TTFT_P99_S = 30.0
#: Growth of the queue over the second half of a window that counts as "growing without bound" (requests).
DROWNED_QUEUE_GROWTH = 25
#: The request class whose TTFT the pools of step 20 protect (the incident's alert is about chat users).
CHAT_CLASS = "chat"
#: The live series are sampled every simulated second, whatever the preset's spacing (its charts are short).
SAMPLE_INTERVAL_S = 1.0

_META_KEYS = ("lesson_step",)


#: The lesson's changes to the reader's replica, by step: what each step's "Apply to my replica" button applies
#: (a page's ``/// replica-change | N`` block with an empty body takes its step's entry). ``breaks``: the change
#: drowns the replica on purpose, the step's lesson, and the next change rescues it (tests/test_replica_story.py).
#: The traffic is the lesson's at that step; where the replica departs from its page, the label says so and why.
LESSON_CHANGES: dict[int, dict] = {
    4: {
        "label": 'Reserve max_model_len (8,192 tokens) for every request: contiguous allocation',
        "delta": {'allocation': 'contiguous'},
    },
    5: {
        "label": 'Paged attention: KV blocks of 16 tokens, taken as sequences grow',
        "delta": {'allocation': 'paged'},
    },
    6: {
        "label": ("Busier traffic: 9 requests per second (this page's 12 would drown the fp8 replica of step 7 too; "
                   'copies come at step 14)'),
        "breaks": ('in bf16 the replica cannot keep up with 9 requests/s (the batch at its cap, the queue growing); step '
                    "7's fp8 weights rescue it"),
        "delta": {'workload': {'rate_per_s': 9}},
    },
    7: {
        "label": 'Weights in fp8: half the bytes, the freed memory becomes KV cache',
        "delta": {'weights': 'fp8'},
    },
    9: {
        "label": "Speculative decoding with EAGLE-like drafts, at this page's light traffic (2 requests/s)",
        "delta": {'speculation': 'eagle-like', 'workload': {'rate_per_s': 2}},
    },
    10: {
        "label": ('Busy again (9 requests/s) with speculation off: at a full batch it no longer pays (Undo turns it '
                   'back on)'),
        "delta": {'speculation': None, 'workload': {'rate_per_s': 9}},
    },
    11: {
        "label": "A 2,500-token system prompt before every prompt, at this page's 4 requests/s",
        "delta": {'workload': {'rate_per_s': 4,
                               'classes': [{'name': 'chat',
                                            'lengths': 'fixed',
                                            'prompt_tokens': 1024,
                                            'output_tokens': 256,
                                            'prefix_tokens': 2500}]}},
    },
    12: {
        "label": "Prefix caching: the system prompt's KV blocks reused",
        "delta": {'prefix_caching': True},
    },
    14: {
        "label": "Copies behind a router, autoscaled on GPU-Util, under the day's ramp to 20 requests/s",
        "delta": {'fleet': {'replicas': 1,
                            'router': 'least-outstanding',
                            'autoscaler': {'signal': 'gpu_util',
                                           'min_replicas': 1,
                                           'max_replicas': 4,
                                           'interval_s': 15,
                                           'cooldown_s': 45,
                                           'pod_start_s': 30,
                                           'load_bytes_per_s': 2000000000.0},
                            'traffic': [{'duration_s': 30, 'rate_per_s': 2},
                                        {'duration_s': 150, 'rate_per_s': 2, 'end_rate_per_s': 20},
                                        {'duration_s': 90, 'rate_per_s': 20},
                                        {'duration_s': 60, 'rate_per_s': 20, 'end_rate_per_s': 2},
                                        {'duration_s': 200, 'rate_per_s': 2}]}},
    },
    15: {
        "label": ("Autoscale on the queue depth instead of GPU-Util, with this page's warm headroom (a floor of 3 "
                   'replicas)'),
        "delta": {'fleet': {'replicas': 3, 'autoscaler': {'signal': 'queue_depth', 'min_replicas': 3}}},
    },
    19: {
        "label": "The incident: three replicas, long documents join the chat traffic",  # + its sizing, below
        "delta": {'max_model_len': 32768,
                  'fleet': {'replicas': 3,
                            'autoscaler': None}},
    },
    20: {
        "label": ("Pools for chat, documents and batch, each with its own limits (chat's token budget fits "
                   "speculation's 4,096)"),
        "delta": {'max_model_len': 32768,
                  'fleet': {'replicas': None,
                            'router': None,
                            'autoscaler': None,
                            'pools': [{'name': 'chat',
                                       'classes': ['chat'],
                                       'replicas': 3,
                                       'router': 'least-outstanding',
                                       'max_num_batched_tokens': 4096},
                                      {'name': 'documents',
                                       'classes': ['document'],
                                       'replicas': 2,
                                       'router': 'least-outstanding',
                                       'max_num_seqs': 16,
                                       'max_num_batched_tokens': 16384,
                                       'autoscaler': {'signal': 'queue_depth',
                                                      'scale_up_above': 1,
                                                      'scale_down_below': 0.2,
                                                      'min_replicas': 2,
                                                      'max_replicas': 4,
                                                      'interval_s': 15,
                                                      'cooldown_s': 45}},
                                      {'name': 'batch',
                                       'classes': ['batch'],
                                       'replicas': 1,
                                       'router': 'least-outstanding',
                                       'max_num_seqs': 128}]}},
    },
}

#: The long documents' share of the requests in the incident's surge minute on the reader's replica. The page's
#: incident (preset step19-incident-p99, 8%) is tuned on the running example in bf16; the reader's replica runs
#: fp8 weights since step 7, which give it 1.5 times the KV cache (608,266 tokens against 399,169) and a faster
#: decode, so the page's surge reaches a TTFT p99 of only a few seconds on it (tests/test_replica_story.py
#: computes both). Sized for this replica, the surge that hits it as hard as the page's hits the bf16 one (its
#: TTFT p99 past 30 s, the KV cache near half full on average over the cycle) has 20% documents.
CARRIED_DOCUMENT_SHARE = 0.2

# Steps 19 and 20 carry the incident's traffic as its preset has it, not a copy (a re-tune of the incident,
# calc.incident.TUNING_KNOB, one line of step19-incident-p99.json, reaches the reader's replica too), with the
# surge's documents at CARRIED_DOCUMENT_SHARE in place of chat's share (batch jobs keep theirs).
_incident = presets.load_data("step19-incident-p99")
for _step in (19, 20):
    LESSON_CHANGES[_step]["delta"]["workload"] = {key: copy.deepcopy(_incident["workload"][key])
                                                  for key in ("rate_per_s", "classes")}
    _traffic = copy.deepcopy(_incident["fleet"]["traffic"])
    _shares = _traffic[1]["shares"]
    _shares["chat"] = round(_shares["chat"] + _shares["document"] - CARRIED_DOCUMENT_SHARE, 9)
    _shares["document"] = CARRIED_DOCUMENT_SHARE
    LESSON_CHANGES[_step]["delta"]["fleet"]["traffic"] = _traffic
_page_share = _incident["fleet"]["traffic"][1]["shares"]["document"]
del _step, _incident, _traffic, _shares


def _kv_room_ratio() -> float:
    """The reader's replica's KV cache (fp8 weights, step 7) over the page's incident replica's (bf16)."""
    from calc.sim.hardware import kv_sizing
    from calc.sim.scenario import Scenario

    tokens = {w: kv_sizing(Scenario(parameter_count="lesson", weights=w)).kv_cache_tokens for w in ("fp8", "bf16")}
    return tokens["fp8"] / tokens["bf16"]


LESSON_CHANGES[19]["label"] += (f" ({CARRIED_DOCUMENT_SHARE:.0%} of the surge here: your fp8 replica has "
                                f"{_kv_room_ratio():.1f}x the page's KV cache, and the page's {_page_share:.0%} "
                                "barely dents it)")
del _page_share


def base_scenario_data() -> dict:
    """The running example's scenario as JSON-ready data: :data:`BASE_PRESET` without its lesson metadata.

    >>> d = base_scenario_data()
    >>> d["allocation"], d["workload"]["rate_per_s"], d["model"] if "model" in d else "default"
    ('paged', 6, 'default')
    """
    data = {k: v for k, v in presets.load_data(BASE_PRESET).items() if k not in _META_KEYS}
    data["name"] = "my-replica"
    data["description"] = "The reader's replica: the running example with the changes applied in the lesson."
    return data


def merge_delta(scenario: dict, delta: dict, where: str = "delta") -> dict:
    """``scenario`` with ``delta`` merged in: objects merge key by key, anything else replaces, null removes.

    Removing a key gives it back its default (e.g. a fleet's ``replicas``,
    ``router`` and ``autoscaler`` make way for ``pools``). The input is not changed.

    >>> merge_delta({"tp": 4, "workload": {"rate_per_s": 8, "requests": 600}}, {"workload": {"rate_per_s": 16}})
    {'tp': 4, 'workload': {'rate_per_s': 16, 'requests': 600}}
    >>> merge_delta({"fleet": {"replicas": 2, "router": "round-robin"}}, {"fleet": {"replicas": None}})
    {'fleet': {'router': 'round-robin'}}
    >>> merge_delta({"tp": 4}, ["tp"])
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: delta must be a JSON object of scenario keys; got list
    """
    if not isinstance(delta, dict):
        raise CalcError(f"{where} must be a JSON object of scenario keys; got {type(delta).__name__}", where)
    merged = copy.deepcopy(scenario)
    for key, value in delta.items():
        if not isinstance(key, str):
            raise CalcError(f"{where}: keys must be strings; got {key!r}", where)
        if value is None:
            merged.pop(key, None)
        elif isinstance(value, dict):  # onto nothing too, so that its nulls are dropped
            base = merged.get(key)
            merged[key] = merge_delta(base if isinstance(base, dict) else {}, value, f"{where}.{key}")
        else:
            merged[key] = copy.deepcopy(value)
    return merged


def parse_change(step, body: str) -> dict:
    r"""A page's ``/// replica-change | N`` block body: a ``label:`` line, a ``delta:`` line of JSON, and
    optionally a ``breaks:`` line: the change drowns the replica on purpose (the step's lesson), and why.

    >>> parse_change(4, 'label: Reserve the maximum\ndelta: {"allocation": "contiguous"}')
    {'step': 4, 'label': 'Reserve the maximum', 'delta': {'allocation': 'contiguous'}, 'breaks': ''}
    >>> parse_change(6, "")["delta"]
    {'workload': {'rate_per_s': 9}}
    >>> parse_change(4, 'label: x\ndelta: {"allocation": "diagonal"}')
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: allocation must be one of paged, contiguous; got 'diagonal'
    """
    step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
    if not body.strip():  # the lesson's own change for this step
        if step not in LESSON_CHANGES:
            raise CalcError(f"replica-change {step}: the lesson declares no change for step {step} "
                            f"(calc.replica.LESSON_CHANGES has {sorted(LESSON_CHANGES)}); write label: and delta:", "body")
        change = LESSON_CHANGES[step]
        return {"step": step, "label": change["label"], "delta": copy.deepcopy(change["delta"]),
                "breaks": change.get("breaks", "")}
    fields_found: dict[str, str] = {}
    current = None
    for line in body.splitlines():
        key, sep, rest = line.partition(":")
        if sep and key.strip() in ("label", "delta", "breaks") and not line[:1].isspace():
            current = key.strip()
            fields_found[current] = rest.strip()
        elif current == "delta" and line.strip():
            fields_found["delta"] += "\n" + line  # a delta may run over several lines
        elif line.strip():
            raise CalcError(f"replica-change {step}: lines must start with label:, delta: or breaks:; got {line!r}",
                            "body")
    for key in ("label", "delta"):
        if not fields_found.get(key):
            raise CalcError(f"replica-change {step}: missing {key}:", key)
    try:
        delta = json.loads(fields_found["delta"])
    except ValueError as exc:
        raise CalcError(f"replica-change {step}: delta is not valid JSON: {exc}", "delta") from None
    ReaderReplica().apply(step, delta, 0.0, fields_found["label"])  # validated against the running example
    return {"step": step, "label": fields_found["label"], "delta": delta, "breaks": fields_found.get("breaks", "")}


def _check_time(at_s, field: str = "at_s") -> float:
    return float(check_range(field, at_s, 0.0, MAX_TIME_S))


class ReaderReplica:
    """The reader's replica as data: a base scenario and the history of changes (immutable: methods return new ones).

    History entries are dicts ``{"kind": "apply", "step", "delta", "label", "at_s"}``,
    ``{"kind": "undo", "at_s"}`` or ``{"kind": "reset", "step", "changes", "at_s"}`` (the lesson's changes up to
    that step in place of the applied ones), in time order.

    >>> r = ReaderReplica().apply(4, {"allocation": "contiguous"}, 12.5).apply(5, {"allocation": "paged"}, 30)
    >>> r.applied_steps(), [c["at_s"] for c in r.applied()]
    ([4, 5], [12.5, 30.0])
    >>> ReaderReplica().apply(4, {"allocation": "diagonal"}, 1)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: allocation must be one of paged, contiguous; got 'diagonal'
    """

    def __init__(self, history=(), base: dict | None = None):
        self.base = base_scenario_data() if base is None else copy.deepcopy(base)
        self.history: tuple = tuple(history)

    # ------------------------------------------------------------------------------------- changes
    def apply(self, step, delta, at_s, label: str = "") -> "ReaderReplica":
        """A replica with step ``step``'s ``delta`` applied at ``at_s`` simulated seconds (validated).

        A step already in force is not applied again: the same replica comes back.

        >>> r = ReaderReplica().apply(7, {"weights": "fp8"}, 5)
        >>> r.apply(7, {"weights": "fp8"}, 9) is r, len(r.history)
        (True, 1)
        """
        step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
        if step in self.applied_steps():  # applying a step twice is a no-op (a double click, a second tab)
            return self
        at_s = self._next_time(at_s)
        if not isinstance(label, str) or len(label) > 200:
            raise CalcError(f"label must be a string of at most 200 characters; got {label!r}", "label")
        merge_delta({}, delta)  # a JSON object, else CalcError naming `delta`
        entry = {"kind": "apply", "step": step, "delta": copy.deepcopy(delta), "label": label, "at_s": at_s}
        replica = ReaderReplica(self.history + (entry,), self.base)
        replica.fleet_scenario()  # the changed scenario must be valid: CalcError names the field
        return replica

    def undo(self, at_s) -> "ReaderReplica":
        """A replica without the last applied change, from ``at_s`` on; CalcError when nothing is applied.

        >>> ReaderReplica().undo(3)
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: undo: no change is applied
        """
        if not self.applied():
            raise CalcError("undo: no change is applied", "undo")
        return ReaderReplica(self.history + ({"kind": "undo", "at_s": self._next_time(at_s)},), self.base)

    def reset_to(self, step, at_s) -> "ReaderReplica":
        """The replica as the lesson has it at step ``step``, from ``at_s``: every change of
        :data:`LESSON_CHANGES` up to that step, in order, in place of what was applied (a no-op if already so).

        >>> r = ReaderReplica().apply(9, LESSON_CHANGES[9]["delta"], 3).reset_to(7, 10)
        >>> r.applied_steps(), r.scenario_data()["weights"], r.scenario_data()["workload"]["rate_per_s"]
        ([4, 5, 6, 7], 'fp8', 9)
        >>> r.reset_to(7, 12) is r
        True
        """
        step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
        changes = [{"step": s, "delta": copy.deepcopy(LESSON_CHANGES[s]["delta"]), "label": LESSON_CHANGES[s]["label"]}
                   for s in sorted(LESSON_CHANGES) if s <= step]
        if [(e["step"], e["delta"]) for e in self.applied()] == [(c["step"], c["delta"]) for c in changes]:
            return self
        entry = {"kind": "reset", "step": step, "changes": changes, "at_s": self._next_time(at_s)}
        replica = ReaderReplica(self.history + (entry,), self.base)
        replica.fleet_scenario()
        return replica

    def _next_time(self, at_s) -> float:
        at_s = _check_time(at_s)
        if len(self.history) >= MAX_HISTORY:
            raise CalcError(f"history holds at most {MAX_HISTORY} changes", "history")
        if self.history and at_s < self.history[-1]["at_s"]:
            raise CalcError(f"at_s must be at least the last change's time, {self.history[-1]['at_s']} s; "
                            f"got {at_s}", "at_s")
        return at_s

    def applied(self, upto: int | None = None) -> list[dict]:
        """The apply entries in force after the first ``upto`` history entries (all by default), in order."""
        stack: list[dict] = []
        for entry in self.history[:upto]:
            if entry["kind"] == "apply":
                stack.append(entry)
            elif entry["kind"] == "reset":
                stack = [dict(change, kind="apply", at_s=entry["at_s"]) for change in entry["changes"]]
            elif stack:
                stack.pop()
        return stack

    def applied_steps(self) -> list[int]:
        """The steps of the changes in force, in the order applied."""
        return [entry["step"] for entry in self.applied()]

    # ------------------------------------------------------------------------------------ scenarios
    def scenario_data(self, upto: int | None = None) -> dict:
        """The scenario in force (after the first ``upto`` history entries) as JSON-ready data."""
        data = self.base
        for index, entry in enumerate(self.applied(upto)):
            data = merge_delta(data, entry["delta"], f"delta of step {entry['step']}")
        return data

    def fleet_scenario(self, upto: int | None = None) -> FleetScenario:
        """The scenario in force as a validated :class:`FleetScenario` (a single replica is a fleet of one)."""
        return FleetScenario.from_dict(self.scenario_data(upto))

    def export(self) -> dict:
        """The scenario in force as a file for the CLI (and its command), with every key filled in.

        >>> out = ReaderReplica().apply(7, {"weights": "fp8"}, 5).export()
        >>> out["command"], out["scenario"]["weights"], out["scenario"]["workload"]["rate_per_s"]
        ('python -m calc simulate --scenario my-replica.json', 'fp8', 6)
        >>> ReaderReplica().apply(14, {"fleet": {"replicas": 2}}, 5).export()["command"]
        'python -m calc simulate --preset my-replica.json'
        """
        fs = self.fleet_scenario()
        data = fs.to_dict()
        is_fleet = "fleet" in self.scenario_data()
        if not is_fleet:
            data.pop("fleet", None)
        flag = "--preset" if is_fleet else "--scenario"
        return {"file_name": "my-replica.json", "scenario": data,
                "command": f"python -m calc simulate {flag} my-replica.json",
                "playground_query": playground_query(fs.scenario),
                "applied": self.applied_steps()}

    # ---------------------------------------------------------------------------------- persistence
    def to_dict(self) -> dict:
        """The history as JSON-ready data (what the page keeps in localStorage, with the time)."""
        return {"history": copy.deepcopy(list(self.history))}

    @classmethod
    def from_dict(cls, data) -> "ReaderReplica":
        """A replica from :meth:`to_dict`'s data, every entry checked again (it comes from the page).

        >>> r = ReaderReplica.from_dict({"history": [{"kind": "apply", "step": 5, "delta": {}, "at_s": 2}]})
        >>> r.applied_steps()
        [5]
        >>> ReaderReplica.from_dict({"history": [{"kind": "redo", "at_s": 2}]})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: history[0].kind must be apply, undo or reset; got 'redo'
        """
        if not isinstance(data, dict) or not isinstance(data.get("history", []), list):
            raise CalcError("replica state must be an object with a list `history`", "history")
        replica = cls()
        for index, entry in enumerate(data.get("history", [])):
            if not isinstance(entry, dict):
                raise CalcError(f"history[{index}] must be an object; got {entry!r}", f"history[{index}]")
            kind = entry.get("kind")
            if kind == "apply":
                replica = replica.apply(entry.get("step"), entry.get("delta"), entry.get("at_s"),
                                        entry.get("label", ""))
            elif kind == "undo":
                replica = replica.undo(entry.get("at_s"))
            elif kind == "reset":
                replica = replica.reset_to(entry.get("step"), entry.get("at_s"))
            else:
                raise CalcError(f"history[{index}].kind must be apply, undo or reset; got {kind!r}",
                                f"history[{index}].kind")
        return replica

    @classmethod
    def from_json(cls, text: str) -> "ReaderReplica":
        """:meth:`from_dict` of a JSON string (empty: a fresh replica)."""
        if not text:
            return cls()
        try:
            return cls.from_dict(json.loads(text))
        except (ValueError, TypeError) as exc:
            if isinstance(exc, CalcError):
                raise
            raise CalcError(f"replica state is not valid JSON: {exc}", "state") from None

    def __eq__(self, other) -> bool:
        return isinstance(other, ReaderReplica) and self.history == other.history and self.base == other.base

    def __repr__(self) -> str:
        return f"ReaderReplica(applied={self.applied_steps()}, history={len(self.history)} entries)"


def playground_query(scenario) -> dict:
    """The playground's knobs (step 22, its URL's query) for one replica of ``scenario``: the first request class.

    The playground simulates one replica of one class of requests, so a fleet's
    router, pools and autoscaler, and any class after the first, are left out.

    >>> from calc.sim.scenario import Scenario
    >>> q = playground_query(Scenario.from_dict({"weights": "fp8", "speculation": "eagle-like"}))
    >>> q["weights"], q["speculation"], q["prefix_caching"], q["rate_per_s"]
    ('fp8', 'eagle-like', 'off', 5.0)
    """
    first = scenario.workload.classes[0]
    query = {key: getattr(scenario, key) for key in (
        "model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "memory_basis", "block_size",
        "max_model_len", "max_num_seqs", "max_num_batched_tokens", "allocation", "batching", "seed")}
    query.update({
        "chunked_prefill": "on" if scenario.chunked_prefill else "off",
        "prefix_caching": "on" if scenario.prefix_caching else "off",
        "arrival": scenario.workload.arrival, "rate_per_s": scenario.workload.rate_per_s,
        "lengths": first.lengths, "prompt_tokens": first.prompt_tokens, "output_tokens": first.output_tokens,
        "prefix_tokens": first.prefix_tokens, "prefix_variants": first.prefix_variants,
    })
    spec = scenario.speculation
    if spec is None:
        query["speculation"] = "off"
    elif spec == SPECULATION_PRESETS["eagle-like"]:
        query["speculation"] = "eagle-like"
    else:
        query.update({"speculation": "custom", "spec_k": spec.k, "spec_acceptance": spec.acceptance,
                      "spec_draft_cost_ratio": spec.draft_cost_ratio})
    return query


# ------------------------------------------------------------------------------------------ the live run
def _chunk_seed(seed: int, index: int) -> int:
    """The seed of chunk ``index`` of a stream: derived by integers only (the same in CPython and Pyodide)."""
    return (seed * 1_000_003 + 104_729 * (index + 1)) % 2**32


class _Stream:
    """The endless arrivals of one scenario: chunk after chunk, each drawn by the engine from its own seed.

    Stationary traffic is laid on the absolute clock (chunk ``j`` covers
    ``[j, j + 1) x CHUNK_S``), so a redeploy that leaves the traffic alone keeps
    the same arrivals; traffic with phases repeats its phases from the redeploy on.
    """

    def __init__(self, data: dict, start_ns: int):
        self.data = data
        self.phased = bool(data.get("fleet", {}).get("traffic"))
        if self.phased:
            self.origin_ns = start_ns
            cycle_s = math.fsum(p["duration_s"] for p in data["fleet"]["traffic"])
            self.chunk_ns = round(cycle_s * NS_PER_S)
            self.index = 0
        else:
            self.origin_ns = 0
            self.chunk_ns = CHUNK_S * NS_PER_S
            self.index = start_ns // self.chunk_ns
        self.start_ns = start_ns

    def next_chunk(self) -> list:
        """The next chunk's requests, on the absolute clock (ns), at or after the stream's start."""
        data = copy.deepcopy(self.data)
        data["seed"] = _chunk_seed(data.get("seed", 0), self.index)
        workload = data.setdefault("workload", {})
        workload["requests"] = 10_000_000  # the chunk's duration ends it
        if not self.phased:
            workload["duration_s"] = self.chunk_ns / NS_PER_S
        offset = self.origin_ns + self.index * self.chunk_ns
        self.index += 1
        requests = fleet_requests(FleetScenario.from_dict(data))
        return [r for r in requests if r.arrival_ns + offset >= self.start_ns and
                (not self.phased or r.arrival_ns < self.chunk_ns)], offset


class _ClassFirstTokens:
    """The first tokens of one request class of a deployment, in time order as the run comes to them: the class's
    TTFT percentiles over a trailing window (the fleet's own series mix every class).

    >>> from calc.sim.workload import Request
    >>> reqs = [Request(0, 0, 10, 5, 0), Request(1, 0, 10, 5, 1), Request(2, 2 * NS_PER_S, 10, 5, 0)]
    >>> reqs[0].ttft_ns, reqs[1].ttft_ns = 3 * NS_PER_S, NS_PER_S
    >>> firsts = _ClassFirstTokens(reqs, 0); firsts.update(5 * NS_PER_S)
    >>> firsts.p99_s(5 * NS_PER_S, 10 * NS_PER_S), firsts.scan_from
    (3.0, 2)
    """

    def __init__(self, requests: list, class_index: int):
        self.requests, self.class_index = requests, class_index
        self.scan_from = 0  # every request before it is of another class or has its first token recorded
        self.recorded: set[int] = set()
        self.times: list[int] = []  # first-token times (ns, the deployment's clock), sorted
        self.values: list[int] = []  # their TTFTs (ns), in the same order

    def update(self, local_ns: int) -> None:
        """Record the first tokens that have come by ``local_ns``."""
        reqs, index = self.requests, self.scan_from
        settled = True
        while index < len(reqs) and reqs[index].arrival_ns <= local_ns:
            request = reqs[index]
            if request.class_index == self.class_index and index not in self.recorded:
                if request.ttft_ns >= 0:
                    at = bisect.bisect_right(self.times, request.arrival_ns + request.ttft_ns)
                    self.times.insert(at, request.arrival_ns + request.ttft_ns)
                    self.values.insert(at, request.ttft_ns)
                    self.recorded.add(index)
                else:
                    settled = False  # still waiting: scanned again next time
            index += 1
            if settled:
                self.scan_from = index
        self.recorded = {i for i in self.recorded if i >= self.scan_from}

    def p99_s(self, local_ns: int, window_ns: int) -> float | None:
        """The class's TTFT p99 over the first tokens in ``(local_ns - window_ns, local_ns]``, the fleet's rank."""
        lo = bisect.bisect_right(self.times, local_ns - window_ns)
        hi = bisect.bisect_right(self.times, local_ns)
        if hi <= lo:
            return None
        window = sorted(self.values[lo:hi])
        return round(window[max(1, math.ceil(0.99 * len(window))) - 1] / NS_PER_S, 6)


class ReplicaRun:
    """The live simulation of a :class:`ReaderReplica`: a fleet per deployment, on one clock.

    >>> run = ReplicaRun(ReaderReplica())
    >>> run.advance_to(20.0); run.t_s, run.frame()["allocation"], run.frame()["queue"] < 10
    (20.0, 'paged', True)
    >>> run.apply(4, {"allocation": "contiguous"}, "Reserve the maximum"); run.advance_to(60.0)
    >>> run.replica.applied_steps(), run.frame()["running"]
    ([4], 48)
    """

    def __init__(self, replica: ReaderReplica | None = None):
        self.replica = ReaderReplica() if replica is None else replica
        self.deployed = 0  # history entries deployed so far
        self.start_ns = 0  # absolute time (ns) of the current deployment's time 0
        self.now_ns = 0  # absolute simulated time (ns)
        self.deployments = 0
        self.given_up = 0  # requests dropped at redeploys after waiting longer than CLIENT_TIMEOUT_S
        self._deploy(self.replica.scenario_data(0), [])

    @property
    def t_s(self) -> float:
        """Simulated seconds since the replica started."""
        return self.now_ns / NS_PER_S

    # -------------------------------------------------------------------------------- deployments
    def _deploy(self, data: dict, requeued: list) -> None:
        """A new fleet for scenario ``data`` from now on; ``requeued`` (requests in flight) arrive at once."""
        data = copy.deepcopy(data)
        data["sample_interval_s"] = SAMPLE_INTERVAL_S
        data["max_time_series_points"] = 100_000
        stream = _Stream(data, self.now_ns)
        # The engine draws its own requests from the scenario: one, at once, replaced below with the re-queued
        # requests and the stream.
        built = copy.deepcopy(data)
        built.setdefault("workload", {}).update({"requests": 1, "arrival": "all-at-once", "duration_s": None})
        built.get("fleet", {}).pop("traffic", None)
        fs = FleetScenario.from_dict(built)
        fleet = Fleet(fs)
        classes = len(fs.scenario.workload.classes)
        limit = fs.scenario.max_model_len
        self.requests = [Request(i, 0, r.prompt_tokens, r.output_tokens, r.class_index, r.prefix_key, r.prefix_tokens)
                         for i, r in enumerate(r for r in requeued
                                               if r.class_index < classes and r.prompt_tokens + r.output_tokens <= limit)]
        self.fleet = fleet
        self.stream = stream
        self.start_ns = self.now_ns
        self.deployments += 1
        self.scenario = fs.scenario
        self.data = data
        names = [c.name for c in fs.scenario.workload.classes]
        # chat's own TTFT, where other classes share the replicas (steps 19 and 20: what the pools protect)
        self.chat_firsts = (_ClassFirstTokens(self.requests, names.index(CHAT_CLASS))
                            if len(names) > 1 and CHAT_CLASS in names else None)
        self._extend(0)
        # The engine's open arrival source, given these requests: its own drawn arrival is dropped, its other
        # events (autoscaler ticks) kept; the list grows as the stream is drawn (calc.sim.arrivals).
        fleet.replace_requests(self.requests)

    def _extend(self, local_until_ns: int) -> None:
        """Draw the stream until an arrival lies past ``local_until_ns`` (the fleet's clock), so one is pending."""
        reqs = self.requests
        while not reqs or reqs[-1].arrival_ns <= local_until_ns:
            chunk, offset = self.stream.next_chunk()
            shift = offset - self.start_ns
            for r in chunk:
                reqs.append(Request(len(reqs), r.arrival_ns + shift, r.prompt_tokens, r.output_tokens,
                                    r.class_index, r.prefix_key, r.prefix_tokens))
            if not chunk and self.stream.index > 10_000:
                raise CalcError("the replica's traffic has no arrivals; give workload.rate_per_s above 0",
                                "workload.rate_per_s")

    def _in_flight(self) -> list:
        """The requests the fleet holds now (queued or running), in arrival order: a redeploy queues them again."""
        held = []
        for member in self.fleet.members:
            if member.removed_ns is not None:
                continue
            sched = getattr(member.rep, "sched", None)
            if sched is None:
                continue
            held.extend(seq.req for seq in sched.waiting)
            held.extend(seq.req for seq in sched.running.values())
        # Arrival times are on the fleet's clock: a request queued longer than the timeout is given up.
        oldest_ns = (self.now_ns - self.start_ns) - CLIENT_TIMEOUT_S * NS_PER_S
        kept = [r for r in held if r.arrival_ns >= oldest_ns]
        self.given_up += len(held) - len(kept)
        return sorted(kept, key=lambda r: (r.arrival_ns, r.rid))

    def _redeploy(self) -> None:
        self._deploy(self.replica.scenario_data(), self._in_flight())

    # ------------------------------------------------------------------------------------- driving
    def advance_to(self, t_s: float) -> None:
        """Run on to ``t_s`` simulated seconds, redeploying at each history entry on the way (no-op if past)."""
        target_ns = round(_check_time(t_s, "t_s") * NS_PER_S)
        history = self.replica.history
        while self.deployed < len(history) and round(history[self.deployed]["at_s"] * NS_PER_S) <= target_ns:
            self._advance_ns(round(history[self.deployed]["at_s"] * NS_PER_S))
            self.deployed += 1
            self._redeploy_upto(self.deployed)
        self._advance_ns(target_ns)

    def _redeploy_upto(self, upto: int) -> None:
        self._deploy(self.replica.scenario_data(upto), self._in_flight())

    def _advance_ns(self, target_ns: int) -> None:
        if target_ns <= self.now_ns:
            return
        local = target_ns - self.start_ns
        self._extend(local)
        self.fleet.advance(until_ns=local)
        self.now_ns = target_ns

    def apply(self, step, delta, label: str = "") -> None:
        """Apply step ``step``'s delta now: the history grows and the replica is redeployed at once.

        A step already in force is left alone (no redeploy).
        """
        replica = self.replica.apply(step, delta, self.t_s, label)
        if replica is self.replica:
            return
        self.replica = replica
        self.deployed = len(self.replica.history)
        self._redeploy()

    def reset_to(self, step) -> None:
        """Put the replica as the lesson has it at step ``step`` now (redeployed at once; no-op if already so)."""
        replica = self.replica.reset_to(step, self.t_s)
        if replica is self.replica:
            return
        self.replica = replica
        self.deployed = len(self.replica.history)
        self._redeploy()

    def undo(self) -> None:
        """Undo the last applied change now (redeployed at once)."""
        self.replica = self.replica.undo(self.t_s)
        self.deployed = len(self.replica.history)
        self._redeploy()

    # --------------------------------------------------------------------------------------- frames
    def _chat_ttft_p99_s(self, local_ns: int) -> float | None:
        """Chat's TTFT p99 over the fleet's trailing window now; None with one class of requests."""
        if self.chat_firsts is None:
            return None
        self.chat_firsts.update(local_ns)
        return self.chat_firsts.p99_s(local_ns, self.fleet.window_ns)

    def frame(self) -> dict:
        """What the panel shows now: the clock, the batch and queue, latency, memory, utilisation and cost.

        Queue, running and blocks are summed over the replicas serving; the
        percentiles are the engine's over its trailing window (chat's own TTFT p99 beside them where other classes
        share the replicas); memory is per GPU
        of the replicas (the mean over them); cost is the fleet's GPU price over
        the output tokens of the last ten simulated seconds.
        """
        fleet, hw, sc = self.fleet, self.fleet.hardware, self.scenario
        local = self.now_ns - self.start_ns
        queue = running = used = total = serving = 0
        for member in fleet.members:
            if member.removed_ns is not None or member.ready_ns > local:
                continue
            q, r, u, _ = member.rep.levels()
            queue, running, used, total, serving = queue + q, running + r, used + u, total + member.rep.total_blocks, serving + 1
        alive = sum(1 for m in fleet.members if m.removed_ns is None)
        series = fleet.series

        def last(key):
            values = series[key]
            return values[-1] if values else None

        tokens = series["output_tokens_per_s"][-10:]
        tokens_per_s = math.fsum(tokens) / len(tokens) if tokens else 0.0
        price = hw.price_usd_per_gpu_hour
        cost = None
        if price is not None and tokens_per_s > 0:
            cost = round(usd_per_million_tokens(replica_usd_per_hour(price, hw.gpus) * alive, tokens_per_s), 4)
        block_bytes = sc.block_size * hw.kv_bytes_per_token_per_gpu
        per_replica = max(serving, 1)
        return {
            "t_s": round(self.t_s, 3),
            "queue": queue,
            "running": running,
            "replicas": alive,
            "allocation": sc.allocation,
            "ttft_p50_s": last("ttft_p50_s"),
            "ttft_p99_s": last("ttft_p99_s"),
            "itl_p50_s": last("itl_p50_s"),
            "itl_p99_s": last("itl_p99_s"),
            "chat_ttft_p99_s": self._chat_ttft_p99_s(local),
            "kv_blocks_used": used,
            "kv_blocks_total": total,
            "weights_gb_per_gpu": round(hw.weights_bytes_per_gpu / 1e9, 2),
            "kv_used_gb_per_gpu": round(used * block_bytes / per_replica / 1e9, 2),
            "kv_pool_gb_per_gpu": round(total * block_bytes / per_replica / 1e9, 2),
            "gpu_util_reported": last("gpu_util_reported"),
            "compute_utilization": last("compute_utilization"),
            "output_tokens_per_s": round(tokens_per_s, 1),
            "usd_per_million_tokens": cost,
            "applied": self.replica.applied_steps(),
            "history": len(self.replica.history),
            "given_up": self.given_up,
            "settling_s": round(max(0.0, SETTLE_S - local / NS_PER_S), 3) if self.deployments > 1 else 0.0,
        }


def replay(replica: ReaderReplica, until_s: float) -> ReplicaRun:
    """The replica's run replayed from its start to ``until_s``: the same history and time give the same state.

    >>> r = ReaderReplica().apply(5, {"allocation": "paged"}, 10)
    >>> replay(r, 30).frame() == replay(r, 30).frame()
    True
    """
    run = ReplicaRun(replica)
    run.advance_to(until_s)
    return run


# ------------------------------------------------------------------------------------ a change's effect
#: The figures a change's before -> after reports, in the order the panel lists them: key, name, unit, and the
#: smallest difference that counts as moving (absolute; relative changes under 10% never count).
EFFECT_FIGURES = (
    ("kv_cache_pct", "KV cache", "%", 5.0),
    ("queue", "queue", "", 5.0),
    ("running", "running", "", 5.0),
    ("ttft_p99_s", "TTFT p99", "s", 0.05),
    ("chat_ttft_p99_s", "chat TTFT p99", "s", 0.05),
    ("itl_p99_s", "ITL p99", "s", 0.003),
    ("output_tokens_per_s", "output", "tok/s", 50.0),
    ("replicas", "replicas", "", 0.5),
    ("weights_gb_per_gpu", "weights", "GB/GPU", 1.0),
)
_MOVE_RELATIVE = 0.10


def _cycle_s(data: dict) -> float:
    traffic = data.get("fleet", {}).get("traffic")
    return math.fsum(p["duration_s"] for p in traffic) if traffic else 0.0


def window_figures(run: ReplicaRun, seconds: float) -> dict:
    """Run ``run`` on for ``seconds`` and sum up what the panel showed, second by second.

    KV cache (percent of the blocks, mean), the queue at the window's end and its
    growth over the second half, running sequences and output tokens/s (means),
    TTFT and ITL p99 (the trailing percentiles at the window's end, or the last measured if none fell in it; with
    phases the worst over the cycle), chat's TTFT p99 (the worst trailing window of the ``chat`` class alone, None
    with one class; ``classes`` counts the scenario's request classes), replicas and weights (the most). ``drowned``:
    a queue still growing by :data:`DROWNED_QUEUE_GROWTH` over the second half, or
    TTFT p99 over :data:`DROWNED_TTFT_P99_S` while the queue is not draining.

    >>> run = ReplicaRun(); run.advance_to(30)
    >>> f = window_figures(run, 30); f["drowned"], f["queue"] < 10, 0 < f["kv_cache_pct"] < 100
    (False, True, True)
    """
    frames = []
    end_s = run.t_s + seconds
    while run.t_s + 1e-9 < end_s:
        run.advance_to(min(end_s, run.t_s + 1.0))
        frames.append(run.frame())
    if not frames:
        raise CalcError(f"seconds must be at least 1; got {seconds}", "seconds")

    def worst(key):
        values = [f[key] for f in frames if f[key] is not None]
        return round(max(values), 4) if values else None

    def latest(key):
        # A saturated batch admits in waves (a redeploy re-queues everything at once), so the window may end
        # between two waves with no first token in the percentile window: the last figure measured stands.
        return next((f[key] for f in reversed(frames) if f[key] is not None), None)

    half = frames[len(frames) // 2]
    phased = bool(_cycle_s(run.data))
    kv = [f["kv_blocks_used"] / f["kv_blocks_total"] * 100 for f in frames if f["kv_blocks_total"]]
    figures = {
        "kv_cache_pct": round(math.fsum(kv) / len(kv), 1) if kv else 0.0,
        "queue": frames[-1]["queue"],
        "queue_growth": frames[-1]["queue"] - half["queue"],
        "running": round(math.fsum(f["running"] for f in frames) / len(frames), 1),
        # a day of phases at its worst; steady traffic where the window ends (a backlog may still be draining)
        "ttft_p99_s": worst("ttft_p99_s") if phased else latest("ttft_p99_s"),
        "itl_p99_s": worst("itl_p99_s") if phased else latest("itl_p99_s"),
        "chat_ttft_p99_s": worst("chat_ttft_p99_s"),
        "classes": len(run.scenario.workload.classes),
        "output_tokens_per_s": round(math.fsum(f["output_tokens_per_s"] for f in frames) / len(frames), 1),
        "replicas": max(f["replicas"] for f in frames),
        "weights_gb_per_gpu": frames[-1]["weights_gb_per_gpu"],
        "from_s": frames[0]["t_s"] - 1.0, "to_s": frames[-1]["t_s"],
    }
    classes = run.scenario.workload.classes
    if len(classes) == 1 and classes[0].name == CHAT_CLASS:  # chat alone: its TTFT is the fleet's
        figures["chat_ttft_p99_s"] = figures["ttft_p99_s"]
    # A queue that falls over the second half is a backlog draining, not a drowned replica.
    draining = figures["queue_growth"] <= -DROWNED_QUEUE_GROWTH
    figures["drowned"] = bool(figures["queue_growth"] >= DROWNED_QUEUE_GROWTH
                              or ((figures["ttft_p99_s"] or 0.0) > DROWNED_TTFT_P99_S and not draining))
    return figures


def _format(value, unit: str) -> str:
    if value is None:
        return "none"
    if unit == "s":
        return f"{value:.2f} s" if value < 1 else f"{value:.1f} s"
    if unit == "%":
        return f"{value:.0f}%"
    text = f"{value:,.0f}" if abs(value) >= 10 or float(value).is_integer() else f"{value:.1f}"
    return f"{text} {unit}".strip()


def change_effect(replica: ReaderReplica, step, delta, label: str = "") -> dict:
    """What step ``step``'s change does to ``replica``: its figures before and after, and the ones that move.

    One run on one seed: the scenario in force warms up from empty (:data:`WARMUP_S`)
    and is read over a window; the change is applied, the redeploy's transient
    (:data:`SETTLE_S`) is skipped, and the same window is read again. The window
    is :data:`EFFECT_WINDOW_S`, or one whole cycle of traffic with phases (a
    fleet's day). ``moved`` lists the figures of :data:`EFFECT_FIGURES` that
    change by more than 10% and their threshold, each with its text; ``text``
    joins them the way the panel shows it.

    Source: the replica's engine and fleet, :mod:`calc.sim.fleet`; a rolling
    restart's transient as in Kubernetes, https://kubernetes.io/docs/concepts/workloads/controllers/deployment/#rolling-update-deployment

    >>> e = change_effect(ReaderReplica(), 4, {"allocation": "contiguous"})
    >>> e["before"]["drowned"], e["after"]["drowned"], e["after"]["running"]
    (False, True, 48.0)
    >>> e["text"].split(", ")[:2]
    ['KV cache 30% -> 98%', 'queue 0 -> 303']
    """
    step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
    before_data = replica.scenario_data()
    after_data = merge_delta(before_data, delta)
    run = ReplicaRun(ReaderReplica(base=before_data))
    before_window = _cycle_s(before_data) or EFFECT_WINDOW_S
    if not _cycle_s(before_data):
        run.advance_to(WARMUP_S)
    before = window_figures(run, before_window)
    run.apply(step, delta, label)
    run.advance_to(run.t_s + SETTLE_S)
    after = window_figures(run, _cycle_s(after_data) or EFFECT_WINDOW_S)
    moved = []
    mixed = max(before["classes"], after["classes"]) > 1
    for key, name, unit, threshold in EFFECT_FIGURES:
        if key == "chat_ttft_p99_s" and not mixed:
            continue  # one class: chat's TTFT is the TTFT
        if key == "ttft_p99_s" and mixed:
            name = "TTFT p99 (all requests)"  # beside chat's own: documents and batch jobs wait in it too
        b, a = before[key], after[key]
        if b is None or a is None:
            if b != a:
                moved.append({"key": key, "name": name, "before": b, "after": a,
                              "text": f"{name} {_format(b, unit)} -> {_format(a, unit)}"})
            continue
        if abs(a - b) >= threshold and abs(a - b) > _MOVE_RELATIVE * max(abs(a), abs(b)):
            moved.append({"key": key, "name": name, "before": b, "after": a,
                          "text": f"{name} {_format(b, unit)} -> {_format(a, unit)}"})
    return {"step": step, "label": label, "before": before, "after": after, "moved": moved,
            "watch": [m["name"] for m in moved], "settle_s": SETTLE_S,
            "text": ", ".join(m["text"] for m in moved) or "no figure moves by more than 10%"}


def effect_watch(effect: dict) -> str:
    """What the panel writes before a change's figures: what to watch, and that a drowning is the step's point.

    >>> effect_watch({"after": {"drowned": True}}), effect_watch({"after": {"drowned": False}})
    ("The replica drowns: the step's point. Watch:", 'Watch:')
    """
    return ("The replica drowns: the step's point. " if effect["after"]["drowned"] else "") + "Watch:"


def effect_sentence(effect: dict) -> str:
    """The line beside an applied change's button: :func:`effect_watch` and the moved figures, before → after.

    >>> effect_sentence({"after": {"drowned": False}, "text": "queue 9 -> 0, TTFT p99 3.1 s -> 0.20 s"})
    'Watch: queue 9 → 0, TTFT p99 3.1 s → 0.20 s.'
    """
    return f"{effect_watch(effect)} {effect['text'].replace(' -> ', ' → ')}."


def lesson_path(step) -> list[dict]:
    """The changes in force on the reader's replica when it reaches step ``step`` along the lesson: every change of
    :data:`LESSON_CHANGES` before that step, in order (what "Reset to step N" gives at step ``step - 1``).

    >>> [c["step"] for c in lesson_path(9)], lesson_path(4)
    ([4, 5, 6, 7], [])
    """
    step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
    return [{"step": s, "delta": copy.deepcopy(LESSON_CHANGES[s]["delta"])} for s in sorted(LESSON_CHANGES) if s < step]


def lesson_change_effect(step, delta=None) -> dict:
    """Step ``step``'s change (its :data:`LESSON_CHANGES` delta unless ``delta`` is given) on the replica the lesson
    has carried to that step: :func:`change_effect` on :func:`lesson_path`, with the line the panel shows.

    The change's effect depends only on the scenario before it and the delta, so the build computes it for the
    reader who follows the lesson's path (``hooks/replica.py`` pre-renders it beside the step's Apply button);
    the panel recomputes it live only for a replica the reader changed otherwise.

    >>> e = lesson_change_effect(5)
    >>> [c["step"] for c in e["path"]], e["drowned"], e["sentence"].split(", ")[0]
    ([4], False, 'Watch: KV cache 98% → 71%')
    """
    step = check_range("step", step, FIRST_STEP, LAST_STEP, integer=True)
    if delta is None:
        if step not in LESSON_CHANGES:
            raise CalcError(f"step {step} has no lesson change (calc.replica.LESSON_CHANGES has {sorted(LESSON_CHANGES)})",
                            "step")
        delta = LESSON_CHANGES[step]["delta"]
    path = lesson_path(step)
    replica = ReaderReplica()
    for index, change in enumerate(path):
        replica = replica.apply(change["step"], change["delta"], float(index))
    effect = change_effect(replica, step, delta)
    return {"step": step, "path": path, "watch": effect_watch(effect), "moved": effect["text"],
            "sentence": effect_sentence(effect), "drowned": effect["after"]["drowned"], "effect": effect}
