"""One serving replica, stepped by an outer event loop.

A replica is the scheduler (:mod:`calc.sim.scheduler`) plus a clock: an outer
loop hands it requests (``submit``), asks it to start a step when it is idle
(``start_step`` returns the step's end time, priced on the roofline, or None
when there is nothing to do) and tells it when that step ends (``end_step``).
The same interface drives one replica (:func:`calc.sim.run.simulate`) or many
behind a router, and the static-batching baseline
(:mod:`calc.sim.static_batching`) offers it too.

What a dashboard reads off a replica is here as properties: queue depth,
running batch, KV cache use, GPU-Util as ``nvidia-smi`` reports it (the share
of time a kernel runs: the fraction of wall time inside a step, which is about
1 whenever anything runs) and the real compute utilization (FLOPs done over
peak FLOP/s x time). Source for GPU-Util's meaning: NVIDIA's NVML
documentation, ``nvmlUtilization_t.gpu``: "percent of time over the past
sample period during which one or more kernels was executing on the GPU".

>>> from calc.sim.scheduler import SchedulerConfig
>>> from calc.sim.workload import Request
>>> fake = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.02 + 1e-4 * new_tokens
>>> rep = Replica(SchedulerConfig(max_model_len=4096), kv_cache_blocks=1000, step_time_s=fake)
>>> rep.submit(Request(0, 0, 100, 4), now_ns=0)
True
>>> t = rep.start_step(0); t
30000000
>>> while t is not None: rep.end_step(t); t = rep.start_step(t)
>>> rep.sink.ttft_ns, rep.sink.e2e_ns, rep.gpu_util_reported(rep.now_ns)
([30000000], [90300000], 1.0)
"""

from __future__ import annotations

from functools import partial

from calc.errors import CalcError
from calc.sim.fast import decode_run
from calc.sim.fast import enabled as fast_paths_enabled
from calc.sim.kv_blocks import BlockPool
from calc.sim.metrics import LatencySink
from calc.sim.scheduler import TICKS, Scheduler, SchedulerConfig, StepPlan
from calc.sim.speculative_step import advance_ticks, speculative_step_time_s, tokens_per_decode
from calc.units import NS_PER_S

__all__ = ["ReplicaClock", "Replica"]


class ReplicaClock:
    """Time accounting shared by every kind of replica: busy time, time integrals, GPU-Util, FLOPs.

    Subclasses keep ``plan`` (the step in flight, or None), ``step_start_ns``,
    ``step_end_ns`` and call :meth:`_account` whenever their state changes;
    :meth:`_levels` returns ``(queue, running, used_blocks, token_states)``.
    GPU-Util source: NVML ``nvmlUtilization_t.gpu`` (share of time a kernel runs).

    >>> clock = ReplicaClock(); clock._init_clock()
    >>> clock.busy_ns, clock.plan = 3_000, "a step"; clock.step_start_ns, clock.step_end_ns = 8_000, 12_000
    >>> clock.busy_ns_until(10_000), clock.gpu_util_reported(10_000)   # 3 us done + 2 us of the step in flight
    (5000, 0.5)
    """

    def _init_clock(self, *, flops=None, peak_flops_per_s=None, name=0):
        self.name = name
        self.flops = flops
        self.peak_flops_per_s = peak_flops_per_s
        self.plan = None
        self.step_start_ns = 0
        self.step_end_ns = None
        self.now_ns = 0
        self.steps = 0
        self.busy_ns = 0
        self.sum_new_tokens = 0
        self.sum_pairs = 0
        self.sum_draft_tokens = 0
        self.submitted = 0
        self._last_ns = 0
        self.int_queue = 0
        self.int_running = 0
        self.int_used_blocks = 0
        self.int_token_states = 0
        self.max_queue = 0
        self.max_running = 0

    @property
    def busy(self) -> bool:
        """True while a step is in flight."""
        return self.plan is not None

    def busy_ns_until(self, t_ns: int) -> int:
        """Nanoseconds a kernel was running between time 0 and ``t_ns`` (the step in flight counted so far)."""
        if self.plan is not None and t_ns > self.step_start_ns:
            return self.busy_ns + min(t_ns, self.step_end_ns) - self.step_start_ns
        return self.busy_ns

    def gpu_util_reported(self, t_ns: int) -> float:
        """GPU-Util as ``nvidia-smi`` shows it over ``[0, t_ns]``: the share of time any kernel ran."""
        return self.busy_ns_until(t_ns) / t_ns if t_ns > 0 else 0.0

    def compute_utilization(self, t_ns: int) -> float | None:
        """Real compute utilization over ``[0, t_ns]``: FLOPs done / (peak FLOP/s x time); None without a FLOP model.

        Draft-model FLOPs under speculation are priced as ``draft_cost_ratio`` of the target's per token.
        """
        if self.flops is None or not self.peak_flops_per_s or t_ns <= 0:
            return None
        done = self.flops(self.sum_new_tokens, self.sum_pairs)
        spec = getattr(self, "speculation", None)
        if spec is not None:
            done += spec.draft_cost_ratio * self.flops(self.sum_draft_tokens, 0)
        return done / (self.peak_flops_per_s * t_ns / NS_PER_S)

    def run_until(self, end_ns, limit_ns, budget: int = -1, sink_clock: bool = False) -> tuple:
        """Handle this replica's step ends before ``limit_ns`` (at most ``budget``; -1: no limit), starting each next step.

        The step in flight ends at ``end_ns``. An outer loop calls this when no
        other event can come before ``limit_ns`` (one replica; the next arrival,
        sample or stop time as the limit): the same ``end_step`` and
        ``start_step`` calls in the same order as through the event heap. It
        stops early after a step at whose end the sink's ``wake`` was set (a
        closed loop's client sent a request: a new event on the heap), and clears it.
        ``sink_clock`` sets ``sink.now_ns`` before each step ends (the fleet's
        sink times inter-token gaps by it). Returns ``(end of the step now in
        flight or None, time of the last step end handled or None, steps handled)``.

        >>> from calc.sim.scheduler import SchedulerConfig
        >>> from calc.sim.workload import Request
        >>> rep = Replica(SchedulerConfig(), 100, lambda **k: 0.01); rep.submit(Request(0, 0, 20, 3), 0)
        True
        >>> ReplicaClock.run_until(rep, rep.start_step(0), 25_000_000)   # two 10 ms steps end before 25 ms
        (30000000, 20000000, 2)
        """
        handled = 0
        now = None
        sink = self.sink
        while end_ns is not None and end_ns < limit_ns and handled != budget:
            handled += 1
            now = end_ns
            if sink_clock:
                sink.now_ns = now
            self.end_step(now)
            end_ns = self.start_step(now)
            if sink.wake:  # a request finished and its client sent another: an event may now come before limit_ns
                sink.wake = False
                break
        return end_ns, now, handled

    def levels(self) -> tuple:
        """``(queue depth, running, KV blocks used, token states held)`` now."""
        return self._levels()

    def queue_and_kv_integrals_until(self, t_ns: int) -> tuple:
        """Time integrals (ns x requests, ns x blocks) of the queue depth and KV blocks used from 0 to ``t_ns``.

        The levels are those since the last change, which is at or before ``t_ns``.
        """
        dt = t_ns - self._last_ns
        if dt <= 0:
            return self.int_queue, self.int_used_blocks
        return self.int_queue + self.queue_depth * dt, self.int_used_blocks + self.kv_used_blocks * dt

    def steps_runner(self):
        """The function an event loop calls as ``run_until(end_ns, limit_ns, budget, sink_clock)`` on this replica."""
        return self.run_until

    def _account(self, now_ns: int) -> None:
        dt = now_ns - self._last_ns
        if dt > 0:
            queue, running, used, states = self._levels()
            self.int_queue += queue * dt
            self.int_running += running * dt
            self.int_used_blocks += used * dt
            self.int_token_states += states * dt
            self._last_ns = now_ns
        self.now_ns = now_ns


class Replica(ReplicaClock):
    """A vLLM-like replica: continuous batching, paged (or contiguous) KV, optional prefix cache and speculation.

    ``step_time_s(new_tokens=, kv_tokens_read=, attention_token_pairs=)`` gives
    one forward pass in seconds (normally
    :meth:`calc.roofline.StepCoefficients.step_time_s`); ``speculation`` a
    :class:`calc.speculative.SpeculationConfig` or None; ``flops(new_tokens,
    attention_token_pairs)`` the FLOPs of a step per GPU and ``peak_flops_per_s``
    one GPU's peak, for the compute utilization (both optional).
    Source: vLLM's engine loop (schedule, execute the model, update), see :mod:`calc.sim.scheduler`.

    >>> rep = Replica(SchedulerConfig(), kv_cache_blocks=100, step_time_s=lambda **k: 0.01,
    ...               flops=lambda n, p: 1e11 * n, peak_flops_per_s=1e15)
    >>> from calc.sim.workload import Request
    >>> rep.submit(Request(0, 0, 50, 1), 0), rep.start_step(0), rep.compute_utilization(10_000_000)
    (True, 10000000, 0.5)
    """

    def __init__(self, config: SchedulerConfig, kv_cache_blocks: int, step_time_s, *, speculation=None,
                 flops=None, peak_flops_per_s: float | None = None, sink=None, name: int = 0):
        if config.tokens_per_decode != tokens_per_decode(speculation):
            raise CalcError(f"tokens_per_decode must be {tokens_per_decode(speculation)} for this speculation "
                            f"set-up; got {config.tokens_per_decode}", "tokens_per_decode")
        self.config = config
        self.pool = BlockPool(kv_cache_blocks, config.block_size)
        self.speculation = speculation
        self.adv = advance_ticks(speculation)
        self.sink = sink if sink is not None else LatencySink(TICKS)
        self.sched = Scheduler(config, self.pool, advance_ticks=self.adv, sink=self.sink)
        self.step_time_s = step_time_s
        self._positional = getattr(step_time_s, "positional", None)
        # The roofline's pricer takes each step's sequence count (the engine's per-sequence term); a stand-in may not.
        self._takes_sequences = getattr(step_time_s, "takes_sequences", False)
        self._fused = None  # fused_refs, made on its first call
        self._fused_on = speculation is None and fast_paths_enabled("fused_decode")
        self._init_clock(flops=flops, peak_flops_per_s=peak_flops_per_s, name=name)

    # ------------------------------------------------------------- observation
    @property
    def queue_depth(self) -> int:
        """Requests waiting for admission (vLLM's ``num_requests_waiting``)."""
        return len(self.sched.waiting)

    @property
    def running(self) -> int:
        """Requests admitted and not finished: the running batch (``num_requests_running``)."""
        return len(self.sched.running)

    @property
    def outstanding(self) -> int:
        """Requests submitted and not finished (waiting + running), for a least-outstanding router."""
        return len(self.sched.waiting) + len(self.sched.running)

    @property
    def kv_used_blocks(self) -> int:
        """KV blocks held by running requests."""
        return self.pool.used

    @property
    def kv_use_fraction(self) -> float:
        """KV cache use as vLLM reports it (``gpu_cache_usage_perc``): blocks in use over all blocks."""
        return self.pool.used / self.pool.total_blocks

    @property
    def emitted_tokens(self) -> int:
        """Answer tokens emitted so far (whole tokens)."""
        return self.sched.emitted_ticks // TICKS

    @property
    def finished(self) -> int:
        """Requests completed."""
        return self.sched.finished

    @property
    def rejected(self) -> int:
        """Requests refused at arrival (longer than max_model_len or than the whole KV cache)."""
        return self.sched.rejected

    @property
    def preemptions(self) -> int:
        """Times a running request lost its KV blocks and went back to be recomputed."""
        return self.sched.preemptions

    @property
    def output_tokens(self) -> int:
        """Answer tokens of completed requests."""
        return self.sched.output_tokens

    @property
    def input_tokens(self) -> int:
        """Prompt tokens of completed requests."""
        return self.sched.input_tokens

    @property
    def prefill_tokens_computed(self) -> int:
        """Prompt tokens the GPU computed: recomputation after preemption included, prefix-cache hits not."""
        return self.sched.prefill_tokens_computed

    @property
    def prefix_cache_hit_rate(self) -> float | None:
        """Prefix-cache hit tokens over looked-up prompt tokens; None when caching is off."""
        cache = self.sched.cache
        return None if cache is None else cache.hit_rate

    @property
    def total_blocks(self) -> int:
        """KV blocks of the replica."""
        return self.pool.total_blocks

    @property
    def peak_used_blocks(self) -> int:
        """Most KV blocks ever in use at once (never above ``total_blocks``)."""
        return self.pool.peak_used

    def kv_block_map(self, limit: int | None = None) -> dict:
        """The KV cache as a chart draws it: blocks per running request, in admission order, and the rest.

        ``sequences`` lists ``{"rid", "phase" ("prefill"|"decode"), "blocks" (own), "shared_blocks"
        (prefix blocks it uses through the cache), "tokens" (KV held)}`` for at most ``limit``
        requests; ``shared_blocks`` at top level counts cached prefix blocks in use once.

        >>> from calc.sim.scheduler import SchedulerConfig
        >>> from calc.sim.workload import Request
        >>> rep = Replica(SchedulerConfig(block_size=16), 100, lambda **k: 0.01)
        >>> rep.submit(Request(7, 0, 40, 5), 0); t = rep.start_step(0); rep.end_step(t)
        True
        >>> m = rep.kv_block_map(); m["sequences"], m["free_blocks"]
        ([{'rid': 7, 'phase': 'decode', 'blocks': 3, 'shared_blocks': 0, 'tokens': 40}], 97)
        """
        s = self.sched
        rows = []
        for seq in s.running.values():
            if limit is not None and len(rows) >= limit:
                break
            rows.append({"rid": seq.rid, "phase": "prefill" if seq.rid in s.prefilling else "decode",
                         "blocks": seq.own_blocks, "shared_blocks": seq.shared_blocks, "tokens": s.seq_kv_tokens(seq)})
        shared = s.cache.in_use_tokens() // self.pool.block_size if s.cache is not None else 0
        return {"total_blocks": self.pool.total_blocks, "block_size": self.pool.block_size,
                "used_blocks": self.pool.used, "free_blocks": self.pool.free,
                "evictable_blocks": self.pool.evictable, "shared_blocks": shared, "sequences": rows}

    def _levels(self) -> tuple:
        s = self.sched
        return len(s.waiting), len(s.running), self.pool.used, s.kv_token_states()

    def _account(self, now_ns: int) -> None:
        # ReplicaClock._account with _levels inlined (it runs twice per step): the same integrals.
        dt = now_ns - self._last_ns
        if dt > 0:
            s = self.sched
            pool = self.pool
            self.int_queue += len(s.waiting) * dt
            self.int_running += len(s.running) * dt
            self.int_used_blocks += (pool.total_blocks - pool.free - pool.evictable) * dt
            cache = s.cache
            states = s.ctx_ticks // TICKS + s.prefill_kv_tokens - s.shared_running_tokens
            if cache is not None:
                states += cache.in_use_blocks * pool.block_size
            self.int_token_states += states * dt
            self._last_ns = now_ns
        self.now_ns = now_ns

    def state_at(self, t_ns: int) -> tuple:
        """The tuple :class:`calc.sim.metrics.TimeSeries` samples."""
        s = self.sched
        return (len(s.waiting), len(s.running), self.pool.used, s.emitted_ticks // TICKS, self.busy_ns_until(t_ns),
                s.finished, s.preemptions)

    # ----------------------------------------------------------------- driving
    def run_until(self, end_ns, limit_ns, budget: int = -1, sink_clock: bool = False) -> tuple:
        """:meth:`ReplicaClock.run_until`; decode-only steps on the fused path :func:`calc.sim.fast.decode_run`.

        The fused path is taken without speculation, when the fast path
        ``fused_decode`` was on as the replica was built (:mod:`calc.sim.fast`).
        """
        if self._fused_on:
            return decode_run(self, end_ns, limit_ns, budget, sink_clock)
        return ReplicaClock.run_until(self, end_ns, limit_ns, budget, sink_clock)

    def steps_runner(self):
        """:meth:`run_until` as a function of ``(end_ns, limit_ns, budget, sink_clock)``: the fused path itself when on."""
        if self._fused_on:
            return partial(decode_run, self)
        return self.run_until

    # The small methods through which calc.sim.fast reads and writes this replica's clock and plan.
    def fused_refs(self) -> tuple:
        """What the fused path reads on every call: objects that stay the same for the replica's life."""
        fixed = self._fused
        if fixed is None:
            sched, pool, sink = self.sched, self.pool, self.sink
            decode = getattr(self.step_time_s, "decode", None)
            if decode is None:
                step_time_s = self.step_time_s

                def decode(n):  # a stand-in without the pricer's decode twin (and without a sequence count)
                    return lambda ctx: step_time_s(new_tokens=n, kv_tokens_read=ctx, attention_token_pairs=ctx)
            fixed = self._fused = (sched, pool, sink, decode, sched.cfg.max_num_seqs, sched.finish_at, sched.groups,
                                   sched.waiting, sched.running, sched.lazy, sched.res_count, sched.cross_at, TICKS,
                                   pool.block_size, pool.total_blocks, sink.itl)
        return fixed

    @property
    def last_accounted_ns(self) -> int:
        """The time up to which the time integrals are counted."""
        return self._last_ns

    def fused_end(self, ctx_ticks, emitted_ticks, step_index, busy_ns, steps, sum_new_tokens, sum_pairs, int_queue,
                  int_running, int_used_blocks, int_token_states, last_ns, step_start_ns, max_running, now_ns,
                  plan_in_flight, decode_seqs=0, kv_tokens=0, end_ns=None) -> None:
        """Write back the clock's and scheduler's counters, advanced by decode-only steps taken elsewhere, and the time.

        ``plan_in_flight``: the decode-only step in flight is now one of
        ``decode_seqs`` over ``kv_tokens``, ending at ``end_ns`` (the same
        StepPlan object); else no step is in flight.
        """
        self.sched.store_decode_counters(ctx_ticks, emitted_ticks, step_index)
        self.busy_ns, self.steps, self.sum_new_tokens, self.sum_pairs = busy_ns, steps, sum_new_tokens, sum_pairs
        self.int_queue, self.int_running = int_queue, int_running
        self.int_used_blocks, self.int_token_states = int_used_blocks, int_token_states
        self._last_ns, self.step_start_ns, self.max_running, self.now_ns = last_ns, step_start_ns, max_running, now_ns
        if plan_in_flight:
            plan = self.plan
            plan.decode_seqs = plan.new_tokens = decode_seqs
            plan.decode_kv_tokens = plan.kv_tokens_read = plan.attention_token_pairs = kv_tokens
            self.step_end_ns = end_ns
        else:
            self.plan = None
            self.step_end_ns = None

    def submit(self, req, now_ns: int) -> bool:
        """A request arrives; False if it can never run here (counted as rejected)."""
        self._account(now_ns)
        self.submitted += 1
        ok = self.sched.add(req)
        q = len(self.sched.waiting)
        if q > self.max_queue:
            self.max_queue = q
        return ok

    def start_step(self, now_ns: int):
        """Plan and price the next step; return its end time in ns, or None when there is nothing to run."""
        if self.plan is not None:
            raise CalcError("start_step called while a step is in flight", "step")
        if now_ns != self._last_ns or now_ns != self.now_ns:
            self._account(now_ns)
        sched = self.sched
        plan = sched.plan()
        n = plan.decode_seqs
        if n == 0 and not plan.prefills and not plan.phantom_seqs:
            return None
        # every sequence the step computes a token or a chunk of (a multi-step window's finished ones too)
        sequences = n + len(plan.prefills) + plan.phantom_seqs
        if self.speculation is None:
            positional = self._positional
            if positional is not None:  # the same price, without keywords (calc.sim.hardware.step_pricer)
                seconds = positional(plan.new_tokens, plan.kv_tokens_read, plan.attention_token_pairs, sequences)
            elif self._takes_sequences:
                seconds = self.step_time_s(new_tokens=plan.new_tokens, kv_tokens_read=plan.kv_tokens_read,
                                           attention_token_pairs=plan.attention_token_pairs, sequences=sequences)
            else:
                seconds = self.step_time_s(new_tokens=plan.new_tokens, kv_tokens_read=plan.kv_tokens_read,
                                           attention_token_pairs=plan.attention_token_pairs)
        else:
            seconds = speculative_step_time_s(
                self.step_time_s, self.speculation, decode_seqs=n, decode_kv_tokens=plan.decode_kv_tokens,
                new_tokens=plan.new_tokens, kv_tokens_read=plan.kv_tokens_read,
                attention_token_pairs=plan.attention_token_pairs,
                sequences=sequences if self._takes_sequences else None)
            self.sum_draft_tokens += n * self.speculation.k
        step_ns = round(seconds * NS_PER_S)
        if step_ns < 1:
            step_ns = 1
        self.plan = plan
        self.step_start_ns = now_ns
        end = self.step_end_ns = now_ns + step_ns
        self.sum_new_tokens += plan.new_tokens
        self.sum_pairs += plan.attention_token_pairs
        r = len(sched.running)
        if r > self.max_running:
            self.max_running = r
        return end

    def end_step(self, now_ns: int) -> None:
        """The step in flight ends at ``now_ns``: tokens come out, requests finish, blocks return."""
        plan = self.plan
        if plan is None:
            raise CalcError("end_step called with no step in flight", "step")
        self._account(now_ns)
        self.sched.commit(plan, now_ns)
        self.busy_ns += now_ns - self.step_start_ns
        self.steps += 1
        self.plan = None
        self.step_end_ns = None
