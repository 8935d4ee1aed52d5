"""calc.sim.scheduler: conservation, the incremental decode bookkeeping against a naive count, vLLM's rules."""

import random
import pytest
from hypothesis import given, settings, strategies as st

from calc.errors import CalcError
from calc.sim.kv_blocks import BlockPool, blocks_for_tokens
from calc.sim.scheduler import TICKS, Scheduler, SchedulerConfig
from calc.sim.workload import Request


class Recorder:
    def __init__(self):
        self.first, self.done, self.itl_ticks, self.n_preempted = [], [], 0, 0

    def first_token(self, req, now_ns):
        self.first.append(req.rid)

    def finish(self, req, now_ns):
        self.done.append(req.rid)

    def itl(self, value_ns, weight_ticks):
        assert value_ns > 0
        self.itl_ticks += weight_ticks

    def preempted(self, req):
        self.n_preempted += 1


def drive(sched, requests, check=True, max_steps=200_000):
    """Run to the end, checking the invariants after every step; return the number of steps."""
    for r in requests:
        sched.add(r)
    naive = {}  # rid -> context in ticks, counted step by step
    now = 0
    steps = 0
    cfg = sched.cfg
    while sched.has_work():
        plan = sched.plan()
        assert not plan.empty, "work left but nothing schedulable"
        assert plan.new_tokens <= cfg.max_num_batched_tokens
        assert len(sched.running) <= cfg.max_num_seqs
        decoding = [s for s in sched.running.values() if s.rid not in sched.prefilling] if plan.decode_seqs else []
        for rid in list(naive):
            if rid not in sched.running or rid in sched.prefilling:
                del naive[rid]  # preempted at planning
        assert plan.decode_seqs == len(decoding) or not plan.decode_seqs
        assert plan.decode_kv_tokens == sum(naive[s.rid] for s in decoding) // TICKS
        now += 1000
        sched.commit(plan, now)
        steps += 1
        for s in decoding:
            naive[s.rid] += sched.adv
        for s in sched.running.values():
            if s.rid not in sched.prefilling and s.rid not in naive:
                naive[s.rid] = s.ctx0 * TICKS  # joined the decode phase this step
        for rid in list(naive):
            if rid not in sched.running:
                del naive[rid]
        if check:
            assert sched.ctx_ticks == sum(naive.values())
            assert sched.pool.used <= sched.pool.total_blocks
            for s in sched.running.values():
                held = (s.own_blocks + s.shared_blocks) * cfg.block_size
                assert held >= sched.seq_kv_tokens(s), "KV without slots"
                if cfg.allocation == "paged" and sched.adv == TICKS and cfg.capacity_policy == "preempt":
                    # never more than the slots the next step can fill
                    assert s.own_blocks + s.shared_blocks <= blocks_for_tokens(sched.seq_kv_tokens(s) + cfg.max_num_batched_tokens, cfg.block_size)
        assert steps < max_steps
    return steps


requests_strategy = st.lists(st.tuples(st.integers(1, 300), st.integers(1, 80), st.integers(0, 3)), min_size=1, max_size=25)


def check_conservation(reqs, block, blocks, seqs, chunked, alloc, adv, caching):
    # "no-evict": paged blocks under TensorRT-LLM's guaranteed-no-evict admission (whole requests booked).
    policy = "guaranteed-no-evict" if alloc == "no-evict" else "preempt"
    alloc = "paged" if alloc == "no-evict" else alloc
    caching = caching and alloc == "paged"
    q = 3 if adv != TICKS else 1
    cfg = SchedulerConfig(max_num_seqs=seqs, max_num_batched_tokens=max(400, seqs * q), block_size=block,
                          max_model_len=400, chunked_prefill=chunked is not False, allocation=alloc,
                          prefix_caching=caching, tokens_per_decode=q,
                          context_chunking=chunked is True,  # "whole": mixed steps, prompts never split
                          capacity_policy=policy)
    rec = Recorder()
    sched = Scheduler(cfg, BlockPool(blocks, block), advance_ticks=adv, sink=rec)
    requests = [Request(i, 0, p + (prefix * 20 if caching else 0), o, 0, prefix if caching and prefix else -1,
                        prefix * 20 if caching else 0) for i, (p, o, prefix) in enumerate(reqs)]
    drive(sched, requests)
    if policy == "guaranteed-no-evict":
        assert sched.preemptions == 0 and rec.n_preempted == 0  # admitted only when it fits to completion
    done = set(rec.done)
    assert len(done) == len(rec.done)  # nobody finishes twice
    assert len(done) + sched.rejected == len(requests)
    assert sched.finished == len(done)
    assert sched.output_tokens == sum(r.output_tokens for r in requests if r.rid in done)
    assert sched.emitted_ticks == sched.output_tokens * TICKS  # every token emitted exactly once
    assert sched.pool.used == 0 and sched.pool.peak_used <= blocks
    assert sorted(rec.first) == sorted(done)  # one first token per completed request
    if adv == TICKS:
        # every answer token after the first came out with an inter-token gap (recompute re-emits none twice)
        assert rec.itl_ticks == sum((r.output_tokens - 1) * TICKS for r in requests if r.rid in done)


@settings(max_examples=120, deadline=None)
@given(reqs=requests_strategy, block=st.sampled_from([1, 4, 16]), blocks=st.integers(8, 200),
       seqs=st.integers(1, 12), chunked=st.sampled_from([True, False, "whole"]),
       alloc=st.sampled_from(["paged", "contiguous", "no-evict"]),
       adv=st.sampled_from([TICKS, TICKS * 5 // 2]), caching=st.booleans())
def test_conservation_and_bookkeeping(reqs, block, blocks, seqs, chunked, alloc, adv, caching):
    check_conservation(reqs, block, blocks, seqs, chunked, alloc, adv, caching)


def test_conservation_on_a_seeded_sweep():
    """Hypothesis shrinks toward small cases; this sweep keeps crowded caches with shared prefixes in every run."""
    rng = random.Random(2026)
    for _ in range(400):
        reqs = [(rng.randint(1, 300), rng.randint(1, 80), rng.randint(0, 3)) for _ in range(rng.randint(1, 25))]
        check_conservation(reqs, rng.choice([1, 4, 16]), rng.randint(8, 200), rng.randint(1, 12), rng.choice([True, False, "whole"]),
                           rng.choice(["paged", "contiguous", "no-evict"]), rng.choice([TICKS, TICKS * 5 // 2]),
                           rng.random() < 0.5)


def test_first_come_first_served_without_pressure():
    rec = Recorder()
    sched = Scheduler(SchedulerConfig(max_num_seqs=4, max_num_batched_tokens=256, max_model_len=512),
                      BlockPool(1000, 16), sink=rec)
    drive(sched, [Request(i, 0, 200, 10) for i in range(12)])
    assert rec.first == list(range(12))
    assert sched.preemptions == 0


def test_pressure_preempts_the_newest_and_everyone_still_finishes():
    rec = Recorder()
    sched = Scheduler(SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=512, block_size=16, max_model_len=512),
                      BlockPool(60, 16), sink=rec)
    drive(sched, [Request(i, 0, 100, 300) for i in range(10)])
    assert sched.preemptions > 0
    assert sorted(rec.done) == list(range(10))


def test_without_chunked_prefill_a_prompt_stalls_the_decodes():
    sched = Scheduler(SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=1024, max_model_len=1024,
                                      chunked_prefill=False), BlockPool(1000, 16))
    sched.add(Request(0, 0, 100, 50))
    sched.commit(sched.plan(), 1)
    sched.add(Request(1, 0, 100, 50))
    plan = sched.plan()
    assert sched.n_decoding == 1 and plan.decode_seqs == 0 and len(plan.prefills) == 1  # prefill-only step
    chunked = Scheduler(SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=1024, max_model_len=1024),
                        BlockPool(1000, 16))
    chunked.add(Request(0, 0, 100, 50))
    chunked.commit(chunked.plan(), 1)
    chunked.add(Request(1, 0, 100, 50))
    plan = chunked.plan()
    assert plan.decode_seqs == 1 and len(plan.prefills) == 1  # decodes first, prefill beside them


def test_chunked_prefill_splits_a_long_prompt_across_steps():
    sched = Scheduler(SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=512, max_model_len=4096),
                      BlockPool(1000, 16))
    sched.add(Request(0, 0, 1300, 5))
    chunks = []
    while 0 in sched.prefilling or not chunks:
        plan = sched.plan()
        chunks.append(plan.new_tokens)
        sched.commit(plan, len(chunks))
    assert chunks == [512, 512, 276]


def test_without_context_chunking_prompts_go_whole_beside_the_decodes():
    # TensorRT-LLM's in-flight batching without chunked context: a budget of 8,192 holds one 5,000-token
    # prompt; the second waits whole for the next step (where it runs beside the first one's decode).
    cfg = SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=8192, max_model_len=8192, context_chunking=False)
    sched = Scheduler(cfg, BlockPool(2000, 16))
    sched.add(Request(0, 0, 5000, 20))
    sched.add(Request(1, 0, 5000, 20))
    steps = []
    for t in range(1, 4):
        plan = sched.plan()
        steps.append((plan.decode_seqs, [seq.chunk for seq, _ in plan.prefills]))
        sched.commit(plan, t)
    assert steps == [(0, [5000]), (1, [5000]), (2, [])]
    chunked = Scheduler(SchedulerConfig(max_num_seqs=8, max_num_batched_tokens=8192, max_model_len=8192),
                        BlockPool(2000, 16))
    chunked.add(Request(0, 0, 5000, 20))
    chunked.add(Request(1, 0, 5000, 20))
    assert [seq.chunk for seq, _ in chunked.plan().prefills] == [5000, 3192]  # vLLM's chunks fill the budget
    with pytest.raises(CalcError) as err:
        SchedulerConfig(max_num_batched_tokens=4096, max_model_len=8192, context_chunking=False)
    assert err.value.field == "max_num_batched_tokens" and "context chunking" in str(err.value)


def test_guaranteed_no_evict_admits_only_what_fits_to_completion():
    # TensorRT-LLM's default capacity scheduler: 60 blocks of 16 hold three requests of 100 + 200 tokens
    # (19 blocks each) at their full length, so the fourth waits for the first to finish and nobody is
    # preempted; vLLM's policy admits all ten on their prompts' 7 blocks and preempts as the answers grow.
    reqs = [Request(i, 0, 100, 200) for i in range(10)]
    cfg = SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=2048, max_model_len=512,
                          capacity_policy="guaranteed-no-evict")
    rec = Recorder()
    sched = Scheduler(cfg, BlockPool(60, 16), sink=rec)
    for r in reqs:
        sched.add(r)
    sched.commit(sched.plan(), 1)
    assert len(sched.running) == 3 and sched.pool.free == 60 - 3 * 19
    t = 1
    while sched.has_work():
        t += 1
        sched.commit(sched.plan(), t)
    assert sched.preemptions == 0 and sorted(rec.done) == list(range(10))
    assert rec.first == list(range(10))  # first come, first served
    vllm = Scheduler(SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=2048, max_model_len=512),
                     BlockPool(60, 16))
    for r in reqs:
        vllm.add(r)
    vllm.commit(vllm.plan(), 1)
    assert len(vllm.running) == 8  # 8 x 7 prompt blocks of 60
    while vllm.has_work():
        t += 1
        vllm.commit(vllm.plan(), t)
    assert vllm.preemptions > 0


def test_guaranteed_no_evict_stops_at_the_first_request_that_does_not_fit():
    # Head of line: a long request that does not fit holds back a short one behind it (capacityScheduler.cpp:
    # "If one requests fails to be scheduled, break").
    cfg = SchedulerConfig(max_num_seqs=16, max_num_batched_tokens=2048, max_model_len=2048,
                          capacity_policy="guaranteed-no-evict")
    sched = Scheduler(cfg, BlockPool(100, 16))
    sched.add(Request(0, 0, 800, 500))  # 82 blocks
    sched.add(Request(1, 0, 200, 200))  # 25 blocks: 82 + 25 > 100
    sched.add(Request(2, 0, 16, 16))    # 2 blocks would fit, but waits behind request 1
    plan = sched.plan()
    assert [seq.rid for seq, _ in plan.prefills] == [0]
    assert [seq.rid for seq in sched.waiting] == [1, 2]


def test_requests_that_can_never_fit_are_rejected():
    sched = Scheduler(SchedulerConfig(max_model_len=1000), BlockPool(10, 16))
    assert not sched.add(Request(0, 0, 900, 200))  # longer than max_model_len
    assert not sched.add(Request(1, 0, 150, 20))  # 170 tokens > 160 slots in the whole cache
    assert sched.add(Request(2, 0, 100, 20))
    assert sched.rejected == 2


def test_vllm_budget_rules():
    with pytest.raises(CalcError) as err:
        SchedulerConfig(max_num_seqs=64, max_num_batched_tokens=32)
    assert err.value.field == "max_num_batched_tokens"
    with pytest.raises(CalcError) as err:
        SchedulerConfig(max_num_batched_tokens=2048, max_model_len=8192, chunked_prefill=False)
    assert "max_model_len" in str(err.value)
    with pytest.raises(CalcError) as err:
        SchedulerConfig(allocation="contiguous", prefix_caching=True)
    assert err.value.field == "prefix_caching"
