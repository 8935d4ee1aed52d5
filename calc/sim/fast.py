"""calc.sim's fast paths, in one place, each with a general twin and one switch that selects the general twin.

Every fast path here gives the same run as the general code it shortcuts: the
same events in the same order, the same state after every slice of events,
the same JSON (``tests/sim/test_fast_paths.py`` compares each pair).

=========================  ================================================  ==================================
fast path                  what it skips                                     general twin
=========================  ================================================  ==================================
``fused_decode``           end and start of decode-only steps, inlined on    :meth:`calc.sim.engine.ReplicaClock
                           locals (:func:`decode_run`)                       .run_until` (``end_step`` then
                                                                             ``start_step``, one by one)
``counted_crossings``      filing each decoding sequence under the step it   ``Scheduler._decode_blocks_filed``
                           next needs a block: crossings are counted per     (each sequence filed)
                           residue of the step index
``fleet_of_one``           the heap between the step ends of a lone replica  every step end through the heap;
                           (no other replica, no autoscaler: nothing else    fleet-wide queue and batch maxima
                           can happen before the next arrival or sample),    summed over replicas
                           and the sums over replicas of the queue and
                           batch maxima
``same_instant_arrivals``  the heap between arrivals at the same instant     each arrival pushed and popped
                           (an arrival outranks every other event at its     (:mod:`calc.sim.events`' tie rule)
                           time, so they come next anyway)
``draft_phase``            pricing a speculation round's k draft steps on    :func:`calc.speculative.draft_phase_s`
                           the roofline each time: the fixed cost once, the  (each step priced from the draft's
                           k steps' shapes kept per batch size               shape)
                           (speculative_step.draft_phase_pricer)
=========================  ================================================  ==================================

The switch: the module flag :data:`FAST_PATHS` (all of them), the
environment variable ``CALC_SIM_FAST_PATHS=0`` (read at import, for a whole
process), or :func:`general_paths` for a block of code (tests). Engines read
it when they are built, so a run keeps the paths it started with.

The fast code reaches the replica, its scheduler and its block pool through
small methods (``fused_end``, ``decode_counters``, ``token_states_besides_contexts``,
``take_counted_crossings``, ``decode_blocks``), never their private fields.

>>> enabled("fused_decode")
True
>>> with general_paths():
...     enabled("fused_decode"), enabled("same_instant_arrivals")
(False, False)
>>> with general_paths("fleet_of_one"):
...     enabled("fused_decode"), enabled("fleet_of_one")
(True, False)
>>> with general_paths("warp_drive"):
...     pass
Traceback (most recent call last):
...
calc.errors.CalcError: unknown fast path 'warp_drive'; fast paths: counted_crossings, draft_phase, fleet_of_one, fused_decode, same_instant_arrivals
"""

from __future__ import annotations

import os
from contextlib import contextmanager

from calc.errors import CalcError
from calc.units import NS_PER_S

__all__ = ["FAST_PATHS", "PATHS", "enabled", "general_paths", "decode_run"]

#: The fast paths by name (see the module docstring).
PATHS = ("counted_crossings", "draft_phase", "fleet_of_one", "fused_decode", "same_instant_arrivals")

#: False: every engine built from now on takes the general twins.
FAST_PATHS = os.environ.get("CALC_SIM_FAST_PATHS", "1") != "0"

_off: set = set()  # fast paths switched off one by one (general_paths with names)


def enabled(name: str) -> bool:
    """True when the fast path ``name`` is on (the module switch on, and that path not switched off)."""
    return FAST_PATHS and name not in _off


@contextmanager
def general_paths(*names: str):
    """Within the block, engines built take the general twins: of ``names``, or of every fast path when none given."""
    global FAST_PATHS
    for name in names:
        if name not in PATHS:
            raise CalcError(f"unknown fast path {name!r}; fast paths: {', '.join(PATHS)}", "fast_path")
    saved = FAST_PATHS, set(_off)
    if names:
        _off.update(names)
    else:
        FAST_PATHS = False
    try:
        yield
    finally:
        FAST_PATHS = saved[0]
        _off.clear()
        _off.update(saved[1])


def decode_run(rep, end_ns, limit_ns, budget: int = -1, sink_clock: bool = False) -> tuple:
    """``rep.run_until`` with decode-only steps fused: the fast twin of :meth:`calc.sim.engine.ReplicaClock.run_until`.

    ``rep`` is a :class:`calc.sim.engine.Replica` without speculation. A step
    that only decodes (nothing prefilling, nothing that could be admitted, no
    request finishing) ends and the next one starts inline, on locals: the
    same integrals, counters, inter-token gaps and price as ``end_step`` then
    ``start_step``, without their general cases. Any other step goes through
    those two. Returns what ``run_until`` returns.

    >>> from calc.sim.engine import Replica, ReplicaClock
    >>> from calc.sim.scheduler import SchedulerConfig
    >>> from calc.sim.workload import Request
    >>> def run(fused):
    ...     rep = Replica(SchedulerConfig(max_model_len=4096), 1000, lambda **k: 0.01 + 1e-6 * k["kv_tokens_read"])
    ...     rep.submit(Request(0, 0, 100, 40), 0); rep.submit(Request(1, 0, 300, 50), 0)
    ...     end = rep.start_step(0)
    ...     out = (decode_run if fused else ReplicaClock.run_until)(rep, end, float("inf"))
    ...     return out, rep.steps, rep.now_ns, rep.int_token_states, sorted(rep.sink.itl_weights.items())
    >>> run(True) == run(False)
    True
    """
    (sched, pool, sink, decode, cap, finish_at, groups, waiting, running, lazy, res_count, cross_at, ticks,
     block_size, total_blocks, itl) = rep.fused_refs()
    price_n, price = 0, None  # the decode price function of the last batch size
    window_steps = sched.cfg.scheduler_steps  # > 1: multi-step windows (calc.sim.scheduler), kept as plan() keeps them
    handled = 0
    now = None
    while end_ns is not None and end_ns < limit_ns and handled != budget:
        handled += 1
        now = end_ns
        if sink_clock:
            sink.now_ns = now
        plan = rep.plan
        if (plan.prefills or not plan.decode_seqs or len(groups) != 1 or sched.step_index + 1 in finish_at
                or plan.phantom_seqs):
            rep.end_step(now)
            end_ns = rep.start_step(now)
            if sink.wake:  # as run_until: a closed loop's client sent a request, the heap has a new event
                sink.wake = False
                break
            continue
        # A run of decode-only steps. The state they change lives in locals (written back through the owners'
        # methods before any other code runs and when the run stops); each iteration is end_step then start_step.
        main = groups[0]  # every decoding sequence emitted its last token at main.t_ns
        # Read one by one (public counters): a tuple per run would be one more object for the garbage collector,
        # which costs most in Pyodide's Python on a large run.
        n, ctx_ticks, emitted, step = sched.n_decoding, sched.ctx_ticks, sched.emitted_ticks, sched.step_index
        busy, steps, sum_new, sum_pairs = rep.busy_ns, rep.steps, rep.sum_new_tokens, rep.sum_pairs
        iq, ir, iu, ist = rep.int_queue, rep.int_running, rep.int_used_blocks, rep.int_token_states
        last, start, max_running = rep.last_accounted_ns, rep.step_start_ns, rep.max_running
        offset = sched.token_states_besides_contexts()
        queued, live = len(waiting), len(running)
        used = total_blocks - pool.free - pool.evictable
        window_left = sched.window_steps_left
        stopped = None  # "general" when the next step needs start_step; "idle" when none starts
        while True:
            # end_step: _account's integrals and commit's decode branch (no request finishes here)
            dt = now - last
            if dt > 0:
                iq += queued * dt
                ir += live * dt
                iu += used * dt
                ist += (ctx_ticks // ticks + offset) * dt
                last = now
            inc = n * ticks
            ctx_ticks += inc
            emitted += inc
            step += 1
            if main.count:
                itl(now - main.t_ns, main.count * ticks)  # (gap x TICKS) // advance, with advance = TICKS
            main.t_ns = now
            busy += now - start
            steps += 1
            # start_step, when the next step only decodes too (Scheduler.plan's decode-only case; inside a
            # multi-step window, Scheduler._plan_in_window's: nothing is admitted there, whatever waits)
            in_window = window_left > 0
            if sched.prefilling or not n or (queued and live < cap and not in_window):
                stopped = "general"
                break
            need = res_count[step % block_size] if lazy else 0
            if need and need <= pool.free:
                sched.take_counted_crossings(step, need)  # enough free blocks: no eviction, no preemption
                used += need
            elif need or (not lazy and step in cross_at):
                sched.store_decode_counters(ctx_ticks, emitted, step)
                plan.preempted = 0
                sched.decode_blocks(plan)  # may preempt: then nothing is admitted this step, as in plan()
                if plan.preempted:
                    n, ctx_ticks, emitted, step = sched.decode_counters()
                    queued, live = len(waiting), len(running)
                    offset = sched.token_states_besides_contexts()
                    if not n:
                        stopped = "idle"  # everything was preempted: an empty plan, as start_step returns
                        window_left = 0  # and no window goes on (plan() and _plan_in_window end it)
                        break
                used = total_blocks - pool.free - pool.evictable
            if window_steps > 1:  # this step's place in its window: plan() opens one, _plan_in_window counts down
                window_left = window_left - 1 if in_window else window_steps - 1
            ctx = ctx_ticks // ticks
            if n != price_n:
                price_n, price = n, decode(n)
            step_ns = round(price(ctx) * NS_PER_S)
            if step_ns < 1:
                step_ns = 1
            start = now
            end_ns = now + step_ns
            sum_new += n
            sum_pairs += ctx
            if live > max_running:
                max_running = live
            if not (end_ns < limit_ns and handled != budget) or step + 1 in finish_at:
                break
            handled += 1
            now = end_ns
            if sink_clock:
                sink.now_ns = now
        sched.window_steps_left = window_left
        if stopped is None:  # the plan in flight stays the same decode-only StepPlan, with this step's sums
            rep.fused_end(ctx_ticks, emitted, step, busy, steps, sum_new, sum_pairs, iq, ir, iu, ist, last, start,
                          max_running, now, True, n, ctx, end_ns)
        else:
            rep.fused_end(ctx_ticks, emitted, step, busy, steps, sum_new, sum_pairs, iq, ir, iu, ist, last, start,
                          max_running, now, False)
            end_ns = rep.start_step(now) if stopped == "general" else None
    return end_ns, now, handled
