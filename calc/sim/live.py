"""Live mode: a simulation run as a stream of frames, each a short slice of work.

The browser's worker keeps the generator of :func:`live_frames` and asks for
one frame at a time (start, next frame, cancel: cancelling is not asking for
more). A frame covers ``frame_interval_s`` of simulated time, or fewer events
when that much time would take too long to compute (``max_events``, so that
one slice stays in the tens of milliseconds), and carries:

* ``t_s``, ``done``;
* ``points``: the time-series samples taken since the previous frame (the
  columns of :data:`calc.sim.fleet.SERIES_KEYS`), so that concatenating every
  frame's points gives the series of the same run without frames;
* ``summary``: the run's summary so far (at the last frame, the summary of
  the run without frames, key for key);
* ``blockmap``: the KV cache of one replica, one character per cell
  (:func:`block_map`).

Why a stream: a long run must not hold the worker, so it is cut into short
slices the page asks for one at a time (start, next frame, cancel), and
cancelling is simply not asking for more (the page/worker messages are declared
in ``calc/widgets/contract.json``).

>>> from calc.sim.scenario import Scenario
>>> frames = list(live_frames(Scenario.from_dict({"workload": {"requests": 30, "rate_per_s": 5}}),
...                           frame_interval_s=2.0, blockmap_cols=16, blockmap_rows=4))
>>> frames[-1]["done"], frames[-1]["summary"]["requests_completed"], len(frames[0]["blockmap"]["cells"])
(True, 30, 64)
>>> [t for f in frames for t in f["points"]["t_s"]][:4]     # the points of all frames: one series
[1.0, 2.0, 3.0, 4.0]
"""

from __future__ import annotations

from calc.errors import check_range
from calc.sim.fleet import SERIES_KEYS, Fleet
from calc.units import NS_PER_S, format_number, round_sig

__all__ = ["live_frames", "block_map", "MAX_EVENTS_PER_FRAME"]

# About 20-40 microseconds of CPython per event on this machine: 1,500 events stay near 30-60 ms at worst.
MAX_EVENTS_PER_FRAME = 1500
_LETTERS = "abcdefghijklmnop"
_RESERVED = "ABCDEFGHIJKLMNOP"


def _runs_paged(rep) -> tuple[list, int, int]:
    """(runs of (char, blocks), blocks holding tokens, blocks reserved but empty) for a paged/contiguous replica.

    The engine's pool counts blocks without naming them, so the map lays each
    running request's blocks out in admission order: its shared prefix blocks
    (at the first request that uses them), then its own blocks, those holding
    tokens first. Cached prefix blocks no request holds follow, then the free ones.
    """
    sched = rep.sched
    pool = rep.pool
    size = pool.block_size
    cache = sched.cache
    runs = []
    held = reserved = 0
    shown_prefix = set()
    kv_tokens = sched.seq_kv_tokens
    for seq in sched.running.values():
        letter = _LETTERS[seq.rid % 16]
        tokens = kv_tokens(seq)
        if seq.shared_blocks and cache is not None:
            key = seq.req.prefix_key
            if key not in shown_prefix:
                # Shown once, with the oldest request holding it; blocks still being prefilled are promises.
                shown_prefix.add(key)
                n = cache.cached_blocks(key)
                written = min(n, tokens // size)
                if written:
                    runs.append((letter, written))
                if n - written:
                    runs.append((_RESERVED[seq.rid % 16], n - written))
                held += written
                reserved += n - written
        with_tokens = -(-tokens // size) - seq.shared_blocks
        own = seq.own_blocks
        with_tokens = 0 if with_tokens < 0 else (own if with_tokens > own else with_tokens)
        if with_tokens:
            runs.append((letter, with_tokens))
        if own - with_tokens:
            runs.append((_RESERVED[seq.rid % 16], own - with_tokens))
        held += with_tokens
        reserved += own - with_tokens
    if pool.evictable:
        runs.append(("z", pool.evictable))
    return runs, held, reserved


def _runs_static(rep) -> tuple[list, int, int]:
    """Runs for a static-batching replica: each row reserves the padded length; its real tokens are held."""
    runs = []
    held = reserved = 0
    if rep.batch:
        row = rep.pad_prompt + rep.pad_output
        j = rep.plan_index
        for r in rep.batch:
            tokens = min(row, r.prompt_tokens + min(j, r.output_tokens - 1))
            runs.append((_LETTERS[r.rid % 16], tokens))
            if row - tokens:
                runs.append((_RESERVED[r.rid % 16], row - tokens))
            held += tokens
            reserved += row - tokens
    return runs, held, reserved


def block_map(rep, cols: int = 128, rows: int = 64) -> dict:
    """The KV cache of replica ``rep`` as a grid of characters, with counts and a sentence.

    Each cell covers ``blocks_per_cell`` consecutive blocks (as few as fit the
    pool into ``cols x rows`` cells; ``rows`` shrinks to what the pool needs)
    and shows the request whose blocks dominate it: ``"."`` free, ``"a"``-``"p"``
    holding a request's tokens (request id mod 16), ``"A"``-``"P"`` reserved for
    that request and still empty, ``"z"`` cached prefix blocks that no running
    request holds. The layout is derived from per-request block counts in
    admission order (the engine counts blocks and does not name them), so it
    is deterministic but not a picture of physical addresses. For static
    batching a "block" is one token slot. Source: the block table of vLLM's
    PagedAttention (Kwon et al. 2023, Sec. 4) and contiguous reservation
    ("memory full of promises"), counted by :mod:`calc.sim.kv_blocks`.

    >>> from calc.sim.engine import Replica
    >>> from calc.sim.scheduler import SchedulerConfig
    >>> from calc.sim.workload import Request
    >>> fake = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.01
    >>> rep = Replica(SchedulerConfig(max_model_len=256, allocation="contiguous"), 64, fake)
    >>> rep.submit(Request(1, 0, 40, 8), 0); t = rep.start_step(0); rep.end_step(t)
    True
    >>> m = block_map(rep, cols=8, rows=8)
    >>> m["cells"][:20], m["used_blocks"], m["reserved_unused_blocks"]
    ('bbbBBBBBBBBBBBBB....', 3, 13)
    >>> m["summary"]
    '3 of 64 blocks hold tokens, 13 reserved but empty, 48 free'
    """
    cols = check_range("blockmap_cols", cols, 1, 4096, integer=True)
    rows = check_range("blockmap_rows", rows, 1, 4096, integer=True)
    static = not hasattr(rep, "sched")
    runs, held, reserved = _runs_static(rep) if static else _runs_paged(rep)
    total = rep.total_blocks
    cached = 0 if static else rep.pool.evictable
    used_sum = held + reserved + cached
    free = total - used_sum if total > used_sum else 0
    if free:
        runs.append((".", free))
    per_cell = -(-total // (cols * rows))
    cells_needed = -(-total // per_cell)
    rows_used = -(-cells_needed // cols)
    out = []
    counts: dict = {}
    filled = 0
    for ch, n in runs:
        while n > 0:
            if not filled and n >= per_cell:
                k = n // per_cell
                out.append(ch * k)
                n -= k * per_cell
                continue
            take = per_cell - filled
            if take > n:
                take = n
            counts[ch] = counts.get(ch, 0) + take
            filled += take
            n -= take
            if filled == per_cell:
                out.append(max(counts.items(), key=lambda kv: kv[1])[0])
                counts = {}
                filled = 0
    if filled:
        out.append(max(counts.items(), key=lambda kv: kv[1])[0])
    cells = "".join(out)
    cells = (cells + "." * (cols * rows_used))[:cols * rows_used]
    unit = "token slots" if static else "blocks"
    words = f"{format_number(held)} of {format_number(total)} {unit} hold tokens"
    words += f", {format_number(reserved)} reserved but empty"
    if cached:
        words += f", {format_number(cached)} cached for a prefix no request holds"
    words += f", {format_number(free)} free"
    return {"cols": cols, "rows": rows_used, "cells": cells, "blocks_total": total, "blocks_per_cell": per_cell,
            "used_blocks": held, "reserved_unused_blocks": reserved, "summary": words}


def _shown_replica(fleet: Fleet, index: int):
    """The replica with id ``index`` while it exists, else the oldest replica still serving."""
    members = fleet.members
    if 0 <= index < len(members) and members[index].removed_ns is None:
        return members[index].rep
    for m in members:
        if m.removed_ns is None and m.ready_ns <= fleet.now_ns:
            return m.rep
    return members[0].rep


def live_frames(scenario, *, frame_interval_s: float, blockmap_cols: int = 128, blockmap_rows: int = 64,
                replica: int = 0, max_events: int = MAX_EVENTS_PER_FRAME, step_time_s=None):
    """Run ``scenario`` (a Scenario, a FleetScenario or its dict) as a generator of frames (see the module docstring).

    Each ``next()`` advances the run to the next multiple of
    ``frame_interval_s`` of simulated time, or by ``max_events`` events if
    that comes first (then the frame ends where the work stopped and may carry
    no new points). The last frame has ``done`` true.

    >>> from calc.sim.scenario import Scenario
    >>> frames = live_frames(Scenario.from_dict({"workload": {"requests": 40, "rate_per_s": 8}}), frame_interval_s=2)
    >>> f = next(frames); f["t_s"], f["done"], f["points"]["t_s"], f["points"]["queue_depth"]
    (2.0, False, [1.0, 2.0], [2, 0])
    >>> f["blockmap"]["summary"]
    '1,113 of 24,965 blocks hold tokens, 0 reserved but empty, 23,852 free'
    """
    frame_ns = round(check_range("frame_interval_s", frame_interval_s, 0.001, 1e6) * NS_PER_S)
    check_range("blockmap_cols", blockmap_cols, 1, 4096, integer=True)
    check_range("blockmap_rows", blockmap_rows, 1, 4096, integer=True)
    check_range("replica", replica, 0, 100_000, integer=True)
    max_events = check_range("max_events", max_events, 1, 10**9, integer=True)
    fleet = Fleet(scenario, step_time_s=step_time_s)
    series = fleet.series
    sent = 0
    target = frame_ns
    while True:
        done = fleet.advance(max_events=max_events, until_ns=target)
        if done:
            t_ns = fleet.now_ns
        else:
            nxt = fleet.next_event_ns()
            if nxt is not None and nxt >= target:
                fleet.sample_until(target)  # no event before the frame's end remains: its samples are final
                t_ns = target
                target += frame_ns
            else:
                t_ns = fleet.now_ns
        n = len(series["t_s"])
        points = {k: series[k][sent:n] for k in SERIES_KEYS}
        sent = n
        yield {"t_s": round_sig(t_ns / NS_PER_S), "done": done, "points": points, "summary": fleet.summary(),
               "blockmap": block_map(_shown_replica(fleet, replica), blockmap_cols, blockmap_rows)}
        if done:
            return
