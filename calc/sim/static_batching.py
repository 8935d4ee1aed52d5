"""The baseline continuous batching replaced: a plain static-batching generate loop.

This is what serving with Hugging Face Transformers' ``model.generate`` on a
batch looks like: take up to ``batch_size`` waiting requests, pad every prompt
to the longest one, prefill them together, then decode one token for the whole
batch per step until the longest answer is done. Sequences that finished early
keep occupying their row (generating padding); nothing new is admitted until
the batch is over; the KV cache is one contiguous tensor of ``batch x
(longest prompt + longest answer)`` tokens, so a batch is only formed as large
as that fits. Tokens stream out as they are generated (TTFT after the batch's
prefill, end-to-end latency at a request's own last token), but its row is
freed only when the batch returns.
Sources: Hugging Face Transformers ``GenerationMixin.generate`` (padded batch,
static until every sequence hits EOS or ``max_new_tokens``); Yu et al., "Orca:
A Distributed Serving System for Transformer-Based Generative Models", OSDI
2022 (request-level vs iteration-level scheduling); the vLLM launch post
(2023-06-20: up to 24x the throughput of Hugging Face Transformers).

>>> from calc.sim.workload import Request
>>> fake = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.01 + 1e-5 * new_tokens
>>> rep = StaticReplica(batch_size=2, kv_cache_tokens=10_000, step_time_s=fake, max_model_len=4096)
>>> for i, (p, o) in enumerate([(100, 2), (50, 4), (10, 1)]): _ = rep.submit(Request(i, 0, p, o), 0)
>>> t = rep.start_step(0)
>>> while t is not None: rep.end_step(t); t = rep.start_step(t)
>>> rep.steps, rep.sink.e2e_ns     # batch 1: a prefill and 3 decode steps; batch 2: one prefill
(5, [22020000, 42060000, 52160000])
"""

from __future__ import annotations

from collections import deque

from calc.errors import CalcError, check_range
from calc.sim.engine import ReplicaClock
from calc.sim.metrics import LatencySink
from calc.sim.scheduler import TICKS
from calc.units import NS_PER_S

__all__ = ["StaticReplica"]


class _Plan:
    __slots__ = ("new_tokens", "kv_tokens_read", "attention_token_pairs", "decode_index")

    def __init__(self, new_tokens, kv_tokens_read, pairs, decode_index):
        self.new_tokens = new_tokens
        self.kv_tokens_read = kv_tokens_read
        self.attention_token_pairs = pairs
        self.decode_index = decode_index  # 0 for the prefill step, j for the j-th decode step


class StaticReplica(ReplicaClock):
    """A replica serving fixed, padded batches; the same driving interface as :class:`calc.sim.engine.Replica`.

    ``kv_cache_tokens`` bounds ``batch x (longest prompt + longest answer)``;
    a request longer than ``max_model_len`` or than the whole cache is rejected.
    Source: see the module docstring (Hugging Face ``generate`` on a padded batch).

    >>> rep = StaticReplica(4, 1000, lambda **k: 0.01, max_model_len=2048)
    >>> from calc.sim.workload import Request
    >>> rep.submit(Request(0, 0, 800, 100), 0), rep.submit(Request(1, 0, 900, 200), 0), rep.rejected
    (True, False, 1)
    """

    def __init__(self, batch_size: int, kv_cache_tokens: int, step_time_s, *, max_model_len: int,
                 flops=None, peak_flops_per_s: float | None = None, sink=None, name: int = 0):
        self.batch_size = check_range("static_batch_size", batch_size, 1, 1_000_000, integer=True)
        self.capacity_tokens = check_range("kv_cache_tokens", kv_cache_tokens, 1, 10**12, integer=True)
        self.max_model_len = max_model_len
        self.step_time_s = step_time_s
        self.sink = sink if sink is not None else LatencySink(TICKS)
        self.speculation = None
        self.waiting: deque = deque()
        self.batch: list = []
        self.outputs_desc: list[int] = []  # answer lengths of the batch, longest first
        self.pad_prompt = 0
        self.pad_output = 0
        self.finished = 0
        self.rejected = 0
        self.preemptions = 0
        self.output_tokens = 0
        self.input_tokens = 0
        self._emitted = 0
        self._last_emit_ns = 0
        self.plan_index = 0  # decode steps done in the current batch
        self._peak = 0
        self._prefill_tokens = 0
        self._init_clock(flops=flops, peak_flops_per_s=peak_flops_per_s, name=name)

    # ------------------------------------------------------------- observation
    @property
    def queue_depth(self) -> int:
        """Requests waiting for the next batch."""
        return len(self.waiting)

    @property
    def running(self) -> int:
        """Requests in the current batch (finished rows included until it returns)."""
        return len(self.batch)

    @property
    def outstanding(self) -> int:
        """Requests submitted and not finished."""
        return len(self.waiting) + len(self.batch)

    # Static batching has no KV blocks: the "block" counts below are tokens (a block of one token).
    @property
    def total_blocks(self) -> int:
        """KV capacity in tokens."""
        return self.capacity_tokens

    def _held_tokens(self) -> int:
        return len(self.batch) * (self.pad_prompt + self.pad_output)

    @property
    def kv_used_blocks(self) -> int:
        """KV tokens reserved by the batch's padded cache."""
        return self._held_tokens()

    @property
    def kv_use_fraction(self) -> float:
        """Reserved KV tokens over capacity."""
        return self._held_tokens() / self.capacity_tokens

    @property
    def peak_used_blocks(self) -> int:
        """Most KV tokens ever reserved at once."""
        return self._peak

    @property
    def emitted_tokens(self) -> int:
        """Answer tokens emitted so far."""
        return self._emitted

    @property
    def prefill_tokens_computed(self) -> int:
        """Prompt tokens computed, padding included (every row prefills the batch's longest prompt)."""
        return self._prefill_tokens

    @property
    def prefix_cache_hit_rate(self):
        """Static batching has no prefix cache: None."""
        return None

    def _token_states(self) -> int:
        if not self.batch:
            return 0
        j = self.plan_index  # decode steps done in this batch
        return sum(r.prompt_tokens + min(j, r.output_tokens - 1) for r in self.batch)

    def _levels(self) -> tuple:
        return len(self.waiting), len(self.batch), self._held_tokens(), self._token_states()

    def state_at(self, t_ns: int) -> tuple:
        """The tuple :class:`calc.sim.metrics.TimeSeries` samples."""
        return (len(self.waiting), len(self.batch), self._held_tokens(), self._emitted, self.busy_ns_until(t_ns),
                self.finished, 0)

    # ----------------------------------------------------------------- driving
    def submit(self, req, now_ns: int) -> bool:
        """A request arrives; False (rejected) if it can never fit."""
        self._account(now_ns)
        self.submitted += 1
        total = req.prompt_tokens + req.output_tokens
        if total > self.max_model_len or total > self.capacity_tokens:
            self.rejected += 1
            return False
        self.waiting.append(req)
        if len(self.waiting) > self.max_queue:
            self.max_queue = len(self.waiting)
        return True

    def _form_batch(self) -> None:
        batch, pad_p, pad_o = [], 0, 0
        while self.waiting and len(batch) < self.batch_size:
            r = self.waiting[0]
            p, o = max(pad_p, r.prompt_tokens), max(pad_o, r.output_tokens)
            if (len(batch) + 1) * (p + o) > self.capacity_tokens:
                break
            batch.append(self.waiting.popleft())
            pad_p, pad_o = p, o
        self.batch, self.pad_prompt, self.pad_output = batch, pad_p, pad_o
        self.outputs_desc = sorted((r.output_tokens for r in batch), reverse=True)
        held = len(batch) * (pad_p + pad_o)
        if held > self._peak:
            self._peak = held

    def start_step(self, now_ns: int):
        """Start the next step of the batch (forming one if idle); its end time, or None when idle."""
        if self.plan is not None:
            raise CalcError("start_step called while a step is in flight", "step")
        self._account(now_ns)
        if not self.batch:
            if not self.waiting:
                return None
            self._form_batch()
            self.plan_index = 0
            b, p = len(self.batch), self.pad_prompt
            plan = _Plan(b * p, 0, b * p * (p + 1) // 2, 0)
            self._prefill_tokens += b * p
        else:
            j = self.plan_index + 1
            b, ctx = len(self.batch), self.pad_prompt + j - 1
            plan = _Plan(b, b * ctx, b * (ctx + 1), j)
        if getattr(self.step_time_s, "takes_sequences", False):  # the roofline's pricer: the batch's per-sequence cost
            seconds = self.step_time_s(new_tokens=plan.new_tokens, kv_tokens_read=plan.kv_tokens_read,
                                       attention_token_pairs=plan.attention_token_pairs, sequences=b)
        else:
            seconds = self.step_time_s(new_tokens=plan.new_tokens, kv_tokens_read=plan.kv_tokens_read,
                                       attention_token_pairs=plan.attention_token_pairs)
        step_ns = max(1, round(seconds * NS_PER_S))
        self.plan = plan
        self.step_start_ns = now_ns
        self.step_end_ns = now_ns + step_ns
        self.sum_new_tokens += plan.new_tokens
        self.sum_pairs += plan.attention_token_pairs
        if len(self.batch) > self.max_running:
            self.max_running = len(self.batch)
        return self.step_end_ns

    def end_step(self, now_ns: int) -> None:
        """The step ends: the batch's next tokens come out; requests whose answer is complete finish."""
        plan = self.plan
        if plan is None:
            raise CalcError("end_step called with no step in flight", "step")
        self._account(now_ns)
        j = plan.decode_index
        sink = self.sink
        # Rows still generating real tokens this step: answers longer than j tokens.
        live = 0
        for o in self.outputs_desc:
            if o > j:
                live += 1
            else:
                break
        if j == 0:
            for r in self.batch:
                sink.first_token(r, now_ns)
        elif live:
            sink.itl(now_ns - self._last_emit_ns, live * TICKS)
        self._emitted += live
        for r in self.batch:
            if r.output_tokens == j + 1:
                sink.finish(r, now_ns)
                self.finished += 1
                self.output_tokens += r.output_tokens
                self.input_tokens += r.prompt_tokens
        self._last_emit_ns = now_ns
        self.plan_index = j
        self.busy_ns += now_ns - self.step_start_ns
        self.steps += 1
        self.plan = None
        self.step_end_ns = None
        if j + 1 >= self.pad_output:
            self.batch, self.outputs_desc = [], []

