"""A vLLM-style iteration-level scheduler over a KV block pool.

Each engine step the scheduler decides what the GPU computes:

1. every running sequence in its decode phase gets its next token (decodes
   first); a sequence that needs a new KV block gets one, and when the pool is
   empty the most recently admitted running sequences are preempted (their
   blocks freed, to be recomputed later from the front of the waiting queue);
2. sequences part-way through their prompt get the next chunk (chunked prefill);
3. waiting requests are admitted first come, first served while the step's
   token budget (``max_num_batched_tokens``), the cap on running sequences
   (``max_num_seqs``) and the free blocks allow; none are admitted in a step
   that preempted.

With chunked prefill off the older vLLM policy runs instead: a step is either
all prefill (whole prompts, admitted first) or all decode, so a new prompt
stalls every running answer for one step.

With ``context_chunking`` off (TensorRT-LLM's in-flight batching without
chunked context, its default) steps still mix decodes with prompts, but a
waiting prompt is admitted only when all of it fits the budget the step has
left, and never split: with the default budget of 8,192 tokens two 5,000-token
prompts never share a step (step 2 runs the first alone beside the decodes,
the second waits for step 3). Source: TensorRT-LLM, "Tuning Max Batch Size and
Max Num Tokens" (docs/source/performance/tuning-max-batch-size-and-max-num-
tokens.md: the scheduler "cannot schedule any more requests because the
prompts of the first two requests had 5 tokens each, leaving a budget of 2
tokens ... context chunking can help in this situation"; generation requests
are scheduled first; the default max num tokens is 8192).

With ``capacity_policy`` ``guaranteed-no-evict`` (TensorRT-LLM's default capacity
scheduler) a waiting request is admitted only when the blocks of its whole prompt
and answer fit beside the blocks every running request still needs to finish;
so no running sequence is ever preempted, and the KV cache holds as many
requests as fit at their full length. The scheduler books those blocks at
admission (the same admissions: free blocks less what the running requests
will still take). The default, ``preempt``, is vLLM's: admit on the prompt's
blocks, grow block by block, preempt when the pool runs dry. Source:
TensorRT-LLM ``cpp/include/tensorrt_llm/executor/executor.h``
(``SchedulerConfig(CapacitySchedulerPolicy capacitySchedulerPolicy =
CapacitySchedulerPolicy::kGUARANTEED_NO_EVICT, ...)``) and
``cpp/tensorrt_llm/batch_manager/capacityScheduler.cpp``
(``GuaranteedNoEvictScheduler``: in-progress requests first, each reserving
its blocks to completion, then pending requests while
``enoughAvailableBlocks``, stopping at the first that does not fit).
With ``scheduler_steps`` N > 1 (vLLM v0.6's multi-step scheduling,
``--num-scheduler-steps N``) the scheduler runs only at a window boundary: a
step that decodes opens a window of N steps over the sequences decoding then,
and the N - 1 steps after its first only decode them; nothing waiting is
admitted and no prefill chunk runs until the window ends. A prefill-only step
(chunked prefill off) is a window of one step. A sequence whose answer ends
inside a window keeps its place to the window's end (the GPU computes its
tokens, which are thrown away) and completes when the window ends, when the
engine processes the window's outputs. Sources (vllm-project/vllm v0.6.0):
``vllm/engine/llm_engine.py`` ``step`` ("Skip the scheduler if there are any
remaining steps in the seq groups. This ensures that the scheduler is only
called again when the current batch has completed", and the outputs are
processed only once no steps remain); ``vllm/core/scheduler.py``
(``_schedule_prefills``: ``init_multi_step(num_scheduler_steps=
_get_num_lookahead_slots(is_prefill=True) + 1)``, 0 lookahead slots for a
prefill, so one step; decodes get ``num_lookahead_slots + 1`` steps, and
``vllm/engine/arg_utils.py`` sets ``num_lookahead_slots = max(...,
num_scheduler_steps - 1)``); ``vllm/engine/output_processor/multi_step.py``
(``_process_seq_outputs``: "Truncate to max_tokens if necessary": the window
ran its fixed steps for every sequence in it). In the simulator such a
sequence leaves the decode set at its last token and is priced as a phantom
sequence (its token and its context read) for the rest of the window, its KV
blocks returned at once (nothing is admitted before the window ends anyway).
With chunked prefill on, the window's first step also carries prefill chunks
and the prompts finished there decode in its other steps (vllm-project/vllm
pull request #8378, vLLM 0.6.2; vLLM 0.6.0 refused the combination, issue
#8274). Tokens are counted (ITL) at each step, not in the window's bursts.

Sources: vLLM v1 scheduler (vllm/v1/core/sched/scheduler.py: running requests
first, then waiting; preempt the last running request when blocks run out;
recompute), vLLM v0 default policy (prefill-only steps); Agrawal et al.,
"Taming Throughput-Latency Tradeoff in LLM Inference with Sarathi-Serve",
OSDI 2024 (chunked prefill, stall-free batching).

Speed: a decode step costs O(sequences that change), not O(batch). All
decoding sequences advance together, so a sequence's context after ``j``
decode steps is known in closed form; the scheduler keeps the sum of contexts
as one running integer and files each sequence under the step index at which it
next needs a block and the one at which it finishes (``dict`` of step ->
list), so a step touches only those. Progress is counted in integer ticks
(``TICKS`` per token) so that speculative decoding's fractional tokens per
step stay exact and deterministic.

>>> from calc.sim.kv_blocks import BlockPool
>>> from calc.sim.workload import Request
>>> cfg = SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=64, block_size=16, max_model_len=256)
>>> s = Scheduler(cfg, BlockPool(100, 16))
>>> s.add(Request(0, 0, 40, 3))
True
>>> plan = s.plan(); plan.new_tokens, plan.decode_seqs
(40, 0)
>>> s.commit(plan, now_ns=1000); s.n_decoding, s.pool.used
(1, 3)
>>> while s.has_work(): s.commit(s.plan(), now_ns=2000)
>>> s.finished, s.pool.used
(1, 0)
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass

from calc.errors import CalcError, check_choice, check_range
from calc.sim.fast import enabled as fast_paths_enabled
from calc.sim.kv_blocks import ALLOCATIONS, BlockPool, blocks_for_tokens, reservation_blocks
from calc.sim.prefix_cache import PrefixCache

__all__ = ["TICKS", "CAPACITY_POLICIES", "SchedulerConfig", "Seq", "StepPlan", "Scheduler", "NullSink"]

TICKS = 1 << 16  # progress units per token: integer arithmetic for fractional tokens per step
#: How admission treats the KV cache: ``preempt`` (vLLM: admit on the prompt's blocks, preempt when short) or
#: ``guaranteed-no-evict`` (TensorRT-LLM's default: admit only when the whole request fits to completion).
CAPACITY_POLICIES = ("preempt", "guaranteed-no-evict")


@dataclass(frozen=True)
class SchedulerConfig:
    """The scheduler's limits, as vLLM names them.

    Defaults: ``max_num_seqs`` 256 (vLLM's long-standing default),
    ``max_num_batched_tokens`` 8192 (vLLM V1's default for its API server on
    80 GB-class GPUs), ``block_size`` 16 (vLLM's default), chunked prefill on
    (vLLM V1 always chunks). vLLM requires ``max_num_batched_tokens >=
    max_num_seqs`` and, without chunked prefill, ``>= max_model_len``; so does
    this (with speculation, every decode needs ``k + 1`` tokens of budget).

    >>> SchedulerConfig().max_num_seqs, SchedulerConfig().capacity_policy, SchedulerConfig().scheduler_steps
    (256, 'preempt', 1)
    >>> SchedulerConfig(scheduler_steps=0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: scheduler_steps must be a whole number between 1 and 64; got 0
    >>> SchedulerConfig(capacity_policy="no-evict")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: capacity_policy must be one of preempt, guaranteed-no-evict; got 'no-evict'
    >>> SchedulerConfig(max_num_batched_tokens=100, max_num_seqs=256)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: max_num_batched_tokens must be at least max_num_seqs x tokens per decode (256 x 1 = 256); got 100
    """

    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    block_size: int = 16
    max_model_len: int = 8192
    chunked_prefill: bool = True
    context_chunking: bool = True  # False: mixed steps, but a prompt is admitted whole or not at all (TensorRT-LLM)
    allocation: str = "paged"
    prefix_caching: bool = False
    tokens_per_decode: int = 1  # positions verified per sequence under speculation: budget a decode takes
    capacity_policy: str = "preempt"  # or "guaranteed-no-evict" (TensorRT-LLM): CAPACITY_POLICIES
    scheduler_steps: int = 1  # > 1: decode steps run in windows of this many, admission at their ends (vLLM 0.6)

    def __post_init__(self):
        check_choice("capacity_policy", self.capacity_policy, CAPACITY_POLICIES)
        check_range("max_num_seqs", self.max_num_seqs, 1, 1_000_000, integer=True)
        check_range("max_num_batched_tokens", self.max_num_batched_tokens, 1, 100_000_000, integer=True)
        check_range("block_size", self.block_size, 1, 65_536, integer=True)
        check_range("max_model_len", self.max_model_len, 2, 100_000_000, integer=True)
        check_choice("allocation", self.allocation, ALLOCATIONS)
        check_range("scheduler_steps", self.scheduler_steps, 1, 64, integer=True)
        if self.scheduler_steps > 1 and self.tokens_per_decode != 1:
            # vLLM v0.6.0 refuses it too: "Speculative decoding is not supported with multi-step".
            raise CalcError(f"speculation needs scheduler_steps 1 (no multi-step windows); got scheduler_steps "
                            f"{self.scheduler_steps}", "scheduler_steps")
        need = self.max_num_seqs * self.tokens_per_decode
        if self.max_num_batched_tokens < need:
            raise CalcError(
                f"max_num_batched_tokens must be at least max_num_seqs x tokens per decode "
                f"({self.max_num_seqs} x {self.tokens_per_decode} = {need}); got {self.max_num_batched_tokens}",
                "max_num_batched_tokens")
        if (not self.chunked_prefill or not self.context_chunking) and self.max_num_batched_tokens < self.max_model_len:
            raise CalcError(
                f"max_num_batched_tokens must be at least max_model_len ({self.max_model_len}) when chunked "
                f"prefill or context chunking is off (a whole prompt is one step); got {self.max_num_batched_tokens}",
                "max_num_batched_tokens")
        if self.prefix_caching and self.allocation != "paged":
            raise CalcError("prefix_caching needs allocation 'paged' (blocks are what is shared); got "
                            f"{self.allocation!r}", "prefix_caching")


class Seq:
    """A request inside the engine: how far its prefill and answer have got, and its blocks.

    Source: vLLM's ``Request`` state (``num_computed_tokens``, output so far, block table), reduced to counts.

    While it decodes one token per step, the blocks it gains are counted by
    the scheduler, not one by one here: it takes a block every ``block_size``
    steps from step ``cross0`` on, so ``own_blocks`` adds the crossings the
    scheduler has allocated so far (``clock``: the last step whose crossings
    were allocated, and the block size).

    >>> from calc.sim.workload import Request
    >>> s = Seq(Request(3, 0, 100, 20)); (s.rid, s.prompt_len, s.computed, s.out_done)
    (3, 100, 0, 0)
    >>> s.own_blocks = 7; s.clock, s.cross0 = [40, 16], 12; s.own_blocks   # crossings at steps 12 and 28
    9
    """

    __slots__ = ("req", "rid", "prompt_len", "computed", "out_done", "_own", "shared_blocks",
                 "d0", "ctx0", "epoch", "group", "last_token_ns", "chunk", "chunk_start", "cross0", "clock")

    def __init__(self, req, clock=None):
        self.req = req
        self.rid = req.rid
        self.prompt_len = req.prompt_tokens  # tokens to prefill (grows by the answer so far on recompute)
        self.computed = 0  # prompt tokens whose KV is computed
        self.out_done = 0  # answer tokens emitted
        self._own = 0  # own blocks (as of cross0, while the scheduler counts its crossings)
        self.cross0 = -1  # first decode step at which it takes a block, while counted by the scheduler; else -1
        self.clock = clock  # the scheduler's [last step whose crossings were allocated, block size]
        self.shared_blocks = 0  # leading prefix blocks held through the prefix cache
        self.d0 = 0  # decode step index when the decode phase (re)started
        self.ctx0 = 0  # tokens in KV at that moment
        self.epoch = 0  # bumped on preemption: filed events for an older epoch are stale
        self.group = None
        self.last_token_ns = -1
        self.chunk = 0
        self.chunk_start = 0

    @property
    def own_blocks(self) -> int:
        """KV blocks it holds besides shared prefix blocks."""
        c = self.cross0
        if c < 0:
            return self._own
        done, size = self.clock
        return self._own + ((done - c) // size + 1 if done >= c else 0)

    @own_blocks.setter
    def own_blocks(self, value: int) -> None:
        if self.cross0 >= 0:
            raise RuntimeError("own_blocks set while the scheduler counts the sequence's crossings")
        self._own = value


class _Group:
    """Decoding sequences whose last token came out at the same time ``t_ns`` (for inter-token latency)."""

    __slots__ = ("t_ns", "count", "parent")

    def __init__(self, t_ns):
        self.t_ns = t_ns
        self.count = 0
        self.parent = None

    def root(self):
        g = self
        while g.parent is not None:
            g = g.parent
        return g


class StepPlan:
    """What one engine step computes: its decode batch, its prefill chunks, and the roofline inputs.

    ``new_tokens``, ``kv_tokens_read`` and ``attention_token_pairs`` are the three sums
    :meth:`calc.roofline.StepCoefficients.step_time_s` prices a step by.

    >>> StepPlan().empty
    True
    """

    __slots__ = ("decode_seqs", "prefills", "new_tokens", "kv_tokens_read", "attention_token_pairs",
                 "decode_kv_tokens", "preempted", "phantom_seqs")

    def __init__(self):
        self.decode_seqs = 0
        self.phantom_seqs = 0  # finished sequences a multi-step window still computes (priced, nothing emitted)
        self.prefills = []
        self.new_tokens = 0
        self.kv_tokens_read = 0
        self.attention_token_pairs = 0
        self.decode_kv_tokens = 0
        self.preempted = 0

    @property
    def empty(self) -> bool:
        """True when there is nothing to compute."""
        return self.decode_seqs == 0 and not self.prefills and not self.phantom_seqs


class NullSink:
    """A metrics sink that records nothing (the scheduler's default).

    >>> NullSink().finish(None, 5)
    """

    def first_token(self, req, now_ns):
        """Called when a request's first answer token came out; ignored here."""

    def finish(self, req, now_ns):
        """Called when a request completed; ignored here."""

    def itl(self, value_ns, weight_ticks):
        """Called when tokens came out after a gap; ignored here."""

    def preempted(self, req):
        """Called when a running request was preempted; ignored here."""


class Scheduler:
    """Waiting and running queues, the block pool and decode progress of one replica.

    ``add(request)`` queues a request (``False`` if it can never fit: longer
    than ``max_model_len`` or than the whole KV cache); ``plan()`` decides the
    next step and allocates its blocks; ``commit(plan, now_ns)`` applies the
    step's results when it ends. ``advance_ticks`` is the progress per decode
    step in ticks (``TICKS`` for one token; more under speculation).
    Source: see the module docstring.

    >>> s = Scheduler(SchedulerConfig(max_model_len=1024), BlockPool(50, 16))
    >>> from calc.sim.workload import Request
    >>> s.add(Request(0, 0, 900, 200)), s.add(Request(1, 0, 100, 10)), s.rejected   # 1,100 tokens > 50 blocks
    (False, True, 1)
    """

    #: Count block crossings per residue of the step (True) or file each sequence under its next crossing (False,
    #: the general way, also taken under speculation and contiguous reservation; tests compare the two). The
    #: switch of every fast path is calc.sim.fast ("counted_crossings"); this one stays for callers that set it.
    COUNT_CROSSINGS = True

    def __init__(self, config: SchedulerConfig, pool: BlockPool, *, advance_ticks: int = TICKS, sink=None):
        self.cfg = config
        self.pool = pool
        if pool.block_size != config.block_size:
            raise CalcError(f"block_size {config.block_size} differs from the pool's {pool.block_size}", "block_size")
        self.cache = PrefixCache(pool) if config.prefix_caching else None
        self.adv = check_range("advance_ticks", advance_ticks, 1, TICKS * 1024, integer=True)
        self.sink = sink if sink is not None else NullSink()
        self.reserve = reservation_blocks(config.allocation, config.max_model_len, config.block_size)
        # Blocks booked whole at admission: max_model_len's (contiguous) or each request's own full length
        # (guaranteed-no-evict); either way a decoding sequence never takes a block.
        self.no_evict = config.capacity_policy == "guaranteed-no-evict"
        self.booking = bool(self.reserve) or self.no_evict
        self.waiting: deque[Seq] = deque()
        self.running: dict[int, Seq] = {}  # admission order: the last is preempted first
        self.prefilling: dict[int, Seq] = {}
        self.n_decoding = 0
        self.ctx_ticks = 0  # sum over decoding sequences of tokens in KV, in ticks
        self.prefill_kv_tokens = 0  # sum over prefilling sequences of computed prompt tokens
        self.shared_running_tokens = 0  # prefix tokens counted in sequences' contexts but shared
        self.step_index = 0  # decode steps done (D)
        self.cross_at: dict[int, list] = {}  # D at step start -> [(seq, epoch)] needing blocks
        # One token per decode step and paged blocks: a decoding sequence takes a block every block_size steps,
        # so crossings are counted per residue of the step index (mod block_size) instead of filed one by one.
        self.lazy = (self.COUNT_CROSSINGS and fast_paths_enabled("counted_crossings") and self.adv == TICKS
                     and not self.booking)
        self.res_count = [0] * config.block_size if self.lazy else None
        self.clock = [-1, config.block_size]  # last step whose crossings were allocated; block size
        self.finish_at: dict[int, list] = {}  # D after step -> [(seq, epoch)] finishing
        self.groups: list[_Group] = []
        self.finished = 0
        self.rejected = 0
        self.preemptions = 0
        self.output_tokens = 0
        self.input_tokens = 0
        self.prefill_tokens_computed = 0  # prompt tokens computed, recomputation included, cache hits not
        self.emitted_ticks = 0  # answer tokens emitted, in ticks (exact whole tokens once sequences leave)
        # Multi-step windows (cfg.scheduler_steps > 1): steps left in the window after the one planned, the
        # finished sequences it still computes (count, context tokens) and their requests, completed at its end.
        self.window_steps_left = 0
        self.window_phantoms = 0
        self.window_phantom_tokens = 0
        self.window_finished: list = []

    # ----------------------------------------------------------------- queueing
    def blocks_for_request(self, req) -> int:
        """Blocks the request holds at its largest (its prompt and full answer, or the reservation)."""
        if self.reserve:
            return self.reserve
        return blocks_for_tokens(req.prompt_tokens + req.output_tokens, self.cfg.block_size)

    def _booked_blocks(self, seq: Seq) -> int:
        """Blocks booked for ``seq`` at admission when booking: the reservation, or its full length."""
        return self.reserve or blocks_for_tokens(seq.req.prompt_tokens + seq.req.output_tokens, self.cfg.block_size)

    def add(self, req) -> bool:
        """Queue ``req``; ``False`` (counted as rejected) if it can never run on this replica."""
        total = req.prompt_tokens + req.output_tokens
        if total > self.cfg.max_model_len or (self.reserve or -(-total // self.cfg.block_size)) > self.pool.total_blocks:
            self.rejected += 1  # (blocks_for_request, inlined)
            return False
        self.waiting.append(Seq(req, self.clock))
        return True

    def has_work(self) -> bool:
        """True while anything waits or runs (or a multi-step window still computes finished sequences)."""
        return bool(self.waiting) or bool(self.running) or bool(self.window_phantoms)

    def seq_kv_tokens(self, seq: Seq) -> int:
        """Tokens of ``seq`` whose KV is held now (prompt computed so far, plus answer tokens written)."""
        if seq.rid in self.prefilling or seq.group is None:
            return seq.computed
        steps = self.step_index - seq.d0
        return seq.ctx0 + min(steps * self.adv // TICKS, seq.req.output_tokens - seq.out_done)

    def kv_token_states(self) -> int:
        """Tokens whose KV is held now, each shared prefix block counted once."""
        shared = self.cache.in_use_tokens() if self.cache is not None else 0
        return self.ctx_ticks // TICKS + self.prefill_kv_tokens - self.shared_running_tokens + shared

    # ---------------------------------------------------------------- preemption
    def _release(self, seq: Seq) -> None:
        self.pool.give(seq.own_blocks)
        seq.own_blocks = 0
        if seq.shared_blocks:
            self.cache.release(seq.req.prefix_key)
            self.shared_running_tokens -= seq.shared_blocks * self.cfg.block_size
            seq.shared_blocks = 0

    def _leave_decoding(self, seq: Seq) -> int:
        """Take ``seq`` out of the decode set now; return answer tokens it emitted in decode."""
        steps = self.step_index - seq.d0
        credited = steps * self.adv
        self.ctx_ticks -= seq.ctx0 * TICKS + credited
        self.n_decoding -= 1
        seq.group.root().count -= 1
        seq.group = None
        if seq.cross0 >= 0:
            own = seq.own_blocks  # the crossings allocated so far, fixed from now on
            self.res_count[seq.cross0 % self.cfg.block_size] -= 1
            seq.cross0 = -1
            seq._own = own
        emitted = min(credited // TICKS, seq.req.output_tokens - seq.out_done)
        self.emitted_ticks += emitted * TICKS - credited  # replace the fluid credit by whole tokens
        return emitted

    def _preempt(self, seq: Seq) -> None:
        """Free a running sequence's blocks and put it at the front of the queue, to recompute."""
        del self.running[seq.rid]
        seq.epoch += 1
        if seq.rid in self.prefilling:
            del self.prefilling[seq.rid]
            self.prefill_kv_tokens -= seq.computed
        else:
            seq.last_token_ns = seq.group.root().t_ns
            seq.out_done += self._leave_decoding(seq)
            seq.prompt_len = seq.req.prompt_tokens + seq.out_done  # recompute prompt and answer so far
        seq.computed = 0
        seq.chunk = 0
        self._release(seq)
        self.preemptions += 1
        self.sink.preempted(seq.req)
        self.waiting.appendleft(seq)

    def _preempt_until(self, need: int, protect: Seq | None = None) -> bool:
        """Preempt from the back of ``running`` until ``need`` blocks are available; False if ``protect`` went."""
        pool = self.pool
        while pool.free + pool.evictable < need and self.running:
            victim = next(reversed(self.running.values()))
            self._preempt(victim)
            if victim is protect:
                return False
        return True

    # ----------------------------------------- the small methods calc.sim.fast's fused decode path calls
    def decode_counters(self) -> tuple:
        """``(decoding sequences, their context in ticks, answer ticks emitted, decode steps done)``."""
        return self.n_decoding, self.ctx_ticks, self.emitted_ticks, self.step_index

    def store_decode_counters(self, ctx_ticks: int, emitted_ticks: int, step_index: int) -> None:
        """Write back the counters of :meth:`decode_counters` after decode-only steps taken elsewhere."""
        self.ctx_ticks, self.emitted_ticks, self.step_index = ctx_ticks, emitted_ticks, step_index

    def token_states_besides_contexts(self) -> int:
        """KV token states held besides the decoding contexts: prefilled prompt parts, cached prefix blocks."""
        out = self.prefill_kv_tokens - self.shared_running_tokens
        if self.cache is not None:
            out += self.cache.in_use_blocks * self.pool.block_size
        return out

    def take_counted_crossings(self, step_index: int, need: int) -> None:
        """:meth:`_decode_blocks_counted` at ``step_index`` when ``need`` blocks are free (no eviction, no preemption)."""
        pool = self.pool  # BlockPool.take without eviction: need <= free
        pool.free -= need
        used = pool.total_blocks - pool.free - pool.evictable
        if used > pool.peak_used:
            pool.peak_used = used
        self.clock[0] = step_index

    def decode_blocks(self, plan: StepPlan) -> None:
        """Give the decoding sequences crossing into a new block at this step their blocks (preempting if short)."""
        self._decode_blocks(plan)

    # ------------------------------------------------------------------ planning
    def _decode_blocks(self, plan: StepPlan) -> None:
        """Give decoding sequences crossing into a new block this step their blocks (preempting if short)."""
        if self.lazy:
            self._decode_blocks_counted(plan)
            return
        filed = self.cross_at.pop(self.step_index, None)
        if filed:
            self._decode_blocks_filed(plan, filed)

    def _decode_blocks_filed(self, plan: StepPlan, filed: list) -> None:
        """:meth:`_decode_blocks` for sequences filed one by one (any progress per step: speculation too)."""
        size, adv = self.cfg.block_size, self.adv
        nxt = self.step_index + 1  # the step about to run, counted from each sequence's d0
        needs = []
        need = 0
        for seq, epoch in filed:
            if seq.epoch != epoch:
                continue
            left = seq.req.output_tokens - seq.out_done
            e = (nxt - seq.d0) * adv // TICKS
            if e > left:
                e = left
            n = -(-(seq.ctx0 + e) // size) - seq.shared_blocks - seq.own_blocks  # blocks_for_tokens, inlined
            if n > 0:
                needs.append((seq, epoch, n))
                need += n
        if not needs:
            return
        pool = self.pool
        if need > pool.free + pool.evictable:
            before = self.preemptions
            while True:
                need = sum(n for s, ep, n in needs if s.epoch == ep)
                if need <= pool.free + pool.evictable or not self.running:
                    break
                self._preempt(next(reversed(self.running.values())))
            plan.preempted += self.preemptions - before
            needs = [item for item in needs if item[0].epoch == item[1]]
            need = sum(n for _, _, n in needs)
            if not needs:
                return
        # One allocation for all of them: the pool evicts cached blocks oldest first either way, so taking the
        # sum at once leaves it exactly as taking each sequence's blocks in turn would.
        if not pool.take(need):
            raise RuntimeError("KV block accounting broke: a decode block could not be allocated")
        # Refile each under the step at whose start it next needs a block (_file_crossing, inlined).
        cross_at, ticks_per_step = self.cross_at, adv
        for seq, epoch, n in needs:
            own = seq.own_blocks + n
            seq.own_blocks = own
            need_e = (own + seq.shared_blocks) * size - seq.ctx0 + 1
            if need_e > seq.req.output_tokens - seq.out_done:
                continue
            key = seq.d0 - (-need_e * TICKS // ticks_per_step) - 1
            lst = cross_at.get(key)
            if lst is None:
                cross_at[key] = [(seq, epoch)]
            else:
                lst.append((seq, epoch))

    def _decode_blocks_counted(self, plan: StepPlan) -> None:
        """:meth:`_decode_blocks` when every decode step adds one token to paged blocks (no speculation).

        A decoding sequence needs a block at step ``cross0`` (its first token
        past the blocks it held when it started decoding) and then every
        ``block_size`` steps while its answer goes on; it finishes before the
        next one. So the sequences crossing at step ``D`` are those counted in
        ``res_count[D % block_size]``, each needing exactly one block: the same
        allocation (and the same preemptions when short) as filing each one,
        in O(1). Their ``own_blocks`` follow from the scheduler's ``clock``.
        """
        step = self.step_index
        r = step % self.cfg.block_size
        need = self.res_count[r]
        if need:
            pool = self.pool
            if need > pool.free + pool.evictable:
                before = self.preemptions
                while need > pool.free + pool.evictable and self.running:
                    self._preempt(next(reversed(self.running.values())))
                    need = self.res_count[r]
                plan.preempted += self.preemptions - before
            if need and not pool.take(need):
                raise RuntimeError("KV block accounting broke: a decode block could not be allocated")
        self.clock[0] = step

    def _file_crossing(self, seq: Seq) -> None:
        """File ``seq`` under the decode step at whose start it next needs a block (if ever)."""
        size = self.cfg.block_size
        held_tokens = (seq.own_blocks + seq.shared_blocks) * size
        need_e = held_tokens - seq.ctx0 + 1  # answer tokens in KV that overflow the held blocks
        if need_e > seq.req.output_tokens - seq.out_done:
            return
        steps = -(-need_e * TICKS // self.adv)
        key = seq.d0 + steps - 1
        lst = self.cross_at.get(key)
        if lst is None:
            self.cross_at[key] = [(seq, seq.epoch)]
        else:
            lst.append((seq, seq.epoch))

    def _chunk_blocks(self, seq: Seq, upto: int) -> int:
        """Own blocks ``seq`` must add so that its first ``upto`` prompt tokens have slots."""
        if self.booking:
            n = self._booked_blocks(seq) - seq.shared_blocks - seq.own_blocks
            return n if n > 0 else 0
        n = blocks_for_tokens(upto, self.cfg.block_size) - seq.shared_blocks - seq.own_blocks
        return n if n > 0 else 0

    def _schedule_chunk(self, plan: StepPlan, seq: Seq, chunk: int) -> None:
        seq.chunk = chunk
        seq.chunk_start = seq.computed
        plan.prefills.append((seq, seq.epoch))

    def _continue_prefills(self, plan: StepPlan, budget: int) -> int:
        """Next chunks of sequences part-way through their prompt; returns the budget left."""
        for seq in list(self.prefilling.values()):
            if budget <= 0:
                break
            if seq.rid not in self.prefilling or seq.chunk:
                continue  # preempted meanwhile, or already planned
            chunk = min(seq.prompt_len - seq.computed, budget)
            need = self._chunk_blocks(seq, seq.computed + chunk)
            if need > self.pool.free + self.pool.evictable:
                before = self.preemptions
                ok = self._preempt_until(need, protect=seq)
                plan.preempted += self.preemptions - before
                if not ok:
                    continue
            if not self.pool.take(need):
                raise RuntimeError("KV block accounting broke: a prefill chunk found no blocks")
            seq.own_blocks += need
            self._schedule_chunk(plan, seq, chunk)
            budget -= chunk
        return budget

    def _admit(self, plan: StepPlan, budget: int) -> int:
        """Admit waiting requests first come, first served; returns the budget left."""
        cfg, pool, cache = self.cfg, self.pool, self.cache
        size = cfg.block_size
        while self.waiting and budget > 0 and len(self.running) < cfg.max_num_seqs:
            seq = self.waiting[0]
            req = seq.req
            hit_blocks = prefix_blocks = missing = pinned = 0
            if cache is not None and req.prefix_key >= 0:
                # Whole blocks of the shared prefix only, and never the whole prompt (one token must be computed).
                prefix_blocks = min(req.prefix_tokens, seq.prompt_len - 1) // size
                cached = cache.cached_blocks(req.prefix_key)
                hit_blocks = min(cached, prefix_blocks)
                missing = prefix_blocks - hit_blocks
                if prefix_blocks and not cache.referenced(req.prefix_key):
                    pinned = cached  # evictable now, but this admission takes them out of the evictable pool
            start = hit_blocks * size
            remaining = seq.prompt_len - start
            if cfg.chunked_prefill and cfg.context_chunking:
                chunk = remaining if remaining <= budget else budget
            else:  # the whole prompt in this step, or it waits (and so does every later one: first come, first served)
                if remaining > budget:
                    break
                chunk = remaining
            if self.booking:
                # The whole request's blocks (less its shared prefix): the running ones booked theirs, so
                # what is free is what the capacity scheduler may still promise.
                own = self._booked_blocks(seq) - prefix_blocks
                if own < 0:
                    own = 0
            else:
                own = blocks_for_tokens(start + chunk, size) - prefix_blocks
                if own < 0:
                    own = 0
            if missing + own > pool.free + pool.evictable - pinned:
                break  # head-of-line: later requests wait too (first come, first served)
            self.waiting.popleft()
            if prefix_blocks:
                cache.query_tokens += seq.prompt_len
                got = cache.acquire(req.prefix_key, prefix_blocks)
                cache.hit_tokens += got * size
                seq.shared_blocks = prefix_blocks
                self.shared_running_tokens += prefix_blocks * size
            elif cache is not None:
                cache.query_tokens += seq.prompt_len
            if not pool.take(own):
                raise RuntimeError("KV block accounting broke: an admitted request found no blocks")
            seq.own_blocks = own
            seq.computed = start
            self.prefill_kv_tokens += start
            self.running[seq.rid] = seq
            self.prefilling[seq.rid] = seq
            self._schedule_chunk(plan, seq, chunk)
            budget -= chunk
        return budget

    def _plan_in_window(self) -> StepPlan:
        """A step inside a multi-step window: the window's decodes and phantoms only, nothing admitted."""
        plan = StepPlan()
        if self.n_decoding and (self.res_count[self.step_index % self.cfg.block_size] if self.lazy
                                else self.step_index in self.cross_at):
            self._decode_blocks(plan)
        n = self.n_decoding
        phantoms = self.window_phantoms
        if not n and not phantoms:  # everything was preempted: the window is over, this step is empty
            self.window_steps_left = 0
            return plan
        self.window_steps_left -= 1
        ctx = self.ctx_ticks // TICKS if n else 0
        plan.decode_seqs = n
        plan.phantom_seqs = phantoms
        plan.decode_kv_tokens = ctx
        plan.new_tokens = n + phantoms  # one token each (no speculation with windows: SchedulerConfig)
        plan.kv_tokens_read = plan.attention_token_pairs = ctx + self.window_phantom_tokens
        return plan

    def plan(self) -> StepPlan:
        """Decide the next step (allocating its blocks, preempting if needed)."""
        cfg = self.cfg
        if self.window_steps_left:  # inside a multi-step window (cfg.scheduler_steps > 1)
            if self.n_decoding or self.window_phantoms:
                return self._plan_in_window()
            self.window_steps_left = 0  # nothing left in it: the scheduler runs again
        plan = StepPlan()
        budget = cfg.max_num_batched_tokens
        prefill_only = False
        if not cfg.chunked_prefill and self.waiting:
            budget = self._admit(plan, budget)
            prefill_only = bool(plan.prefills)
        if not prefill_only:
            if self.n_decoding:
                if (self.res_count[self.step_index % cfg.block_size] if self.lazy
                        else self.step_index in self.cross_at):
                    self._decode_blocks(plan)
                budget -= self.n_decoding * cfg.tokens_per_decode
            if cfg.chunked_prefill:
                if self.prefilling:
                    budget = self._continue_prefills(plan, budget)
                if not plan.preempted and self.waiting:
                    self._admit(plan, budget)
        # The roofline's inputs, counted as calc.roofline.decode_step and prefill_chunk count them: a decode
        # token reads and attends to its sequence's context (q candidates each also to those before it, under
        # speculation); a prefill chunk of c tokens after p attends causally: c p + c (c + 1) / 2 pairs.
        q = cfg.tokens_per_decode
        n = self.n_decoding if not prefill_only else 0
        ctx = self.ctx_ticks // TICKS if n else 0
        new_tokens = n * q
        kv_read = ctx
        pairs = q * ctx + n * q * (q - 1) // 2 if n else 0
        if plan.prefills:
            live = []
            for seq, epoch in plan.prefills:
                if seq.epoch != epoch or not seq.chunk:
                    continue
                live.append((seq, epoch))
                c, p = seq.chunk, seq.chunk_start
                new_tokens += c
                kv_read += p + c
                pairs += c * p + c * (c + 1) // 2
            plan.prefills = live
        plan.decode_seqs = n
        plan.decode_kv_tokens = ctx
        plan.new_tokens = new_tokens
        plan.kv_tokens_read = kv_read
        plan.attention_token_pairs = pairs
        if n and cfg.scheduler_steps > 1:  # a step that decodes opens a window (a prefill-only step is one step)
            self.window_steps_left = cfg.scheduler_steps - 1
        return plan

    # ---------------------------------------------------------------- committing
    def _join_decoding(self, seq: Seq, now_ns: int) -> None:
        seq.d0 = self.step_index
        seq.ctx0 = seq.prompt_len
        self.ctx_ticks += seq.ctx0 * TICKS
        self.n_decoding += 1
        groups = self.groups
        if groups and groups[-1].t_ns == now_ns:
            g = groups[-1]
        else:
            g = _Group(now_ns)
            groups.append(g)
        g.count += 1
        seq.group = g
        left = seq.req.output_tokens - seq.out_done
        key = self.step_index + (-(-left * TICKS // self.adv))
        lst = self.finish_at.get(key)
        if lst is None:
            self.finish_at[key] = [(seq, seq.epoch)]
        else:
            lst.append((seq, seq.epoch))
        if self.lazy:
            size = self.cfg.block_size
            need_e = (seq._own + seq.shared_blocks) * size - seq.ctx0 + 1  # its first token past the held blocks
            if need_e <= left:
                seq.cross0 = first = self.step_index + need_e - 1
                self.res_count[first % size] += 1
        elif not self.booking:
            self._file_crossing(seq)

    def _finish(self, seq: Seq, now_ns: int) -> None:
        del self.running[seq.rid]
        self._release(seq)
        req = seq.req
        if self.window_steps_left:
            # Inside a multi-step window: computed on to its end as a phantom, completed there.
            self.window_phantoms += 1
            self.window_phantom_tokens += req.prompt_tokens + req.output_tokens
            self.window_finished.append(req)
            return
        self._complete(req, now_ns)

    def _complete(self, req, now_ns: int) -> None:
        self.finished += 1
        self.output_tokens += req.output_tokens
        self.input_tokens += req.prompt_tokens
        self.sink.finish(req, now_ns)

    def _end_window(self, now_ns: int) -> None:
        """A multi-step window ended at ``now_ns``: the requests that finished inside it complete now."""
        done, self.window_finished = self.window_finished, []
        self.window_phantoms = self.window_phantom_tokens = 0
        for req in done:
            self._complete(req, now_ns)

    def commit(self, plan: StepPlan, now_ns: int) -> None:
        """Apply a planned step's results at its end time ``now_ns``."""
        sink = self.sink
        if plan.phantom_seqs:
            self.window_phantom_tokens += plan.phantom_seqs  # each phantom's thrown-away token is in its KV now
        if plan.decode_seqs:
            # Every decoding sequence emitted tokens now: one inter-token gap per group, weighted in ticks.
            adv = self.adv
            inc = self.n_decoding * adv
            self.ctx_ticks += inc
            self.emitted_ticks += inc
            step = self.step_index = self.step_index + 1
            groups = self.groups
            main = groups[0]
            if len(groups) == 1:
                if main.count:
                    sink.itl((now_ns - main.t_ns) * TICKS // adv, main.count * adv)
            else:
                for g in groups:
                    if g.count:
                        sink.itl((now_ns - g.t_ns) * TICKS // adv, g.count * adv)
                    if g is not main:
                        main.count += g.count
                        g.count = 0
                        g.parent = main
                del groups[1:]
            main.t_ns = now_ns
            done = self.finish_at.pop(step, None) if step in self.finish_at else None
            if done:
                for seq, epoch in done:
                    if seq.epoch == epoch:
                        self._leave_decoding(seq)
                        seq.out_done = seq.req.output_tokens
                        self._finish(seq, now_ns)
        if not plan.prefills:
            if self.window_finished and not self.window_steps_left:
                self._end_window(now_ns)
            return
        for seq, epoch in plan.prefills:
            if seq.epoch != epoch:
                continue
            seq.computed += seq.chunk
            self.prefill_kv_tokens += seq.chunk
            self.prefill_tokens_computed += seq.chunk
            seq.chunk = 0
            if seq.computed < seq.prompt_len:
                continue
            # Prompt done: this step's output is the next answer token.
            del self.prefilling[seq.rid]
            self.prefill_kv_tokens -= seq.computed
            seq.out_done += 1
            self.emitted_ticks += TICKS
            if seq.out_done == 1:
                sink.first_token(seq.req, now_ns)
            else:
                sink.itl((now_ns - seq.last_token_ns), TICKS)
            if seq.out_done >= seq.req.output_tokens:
                self._finish(seq, now_ns)
            else:
                self._join_decoding(seq, now_ns)
        if self.window_finished and not self.window_steps_left:
            self._end_window(now_ns)
