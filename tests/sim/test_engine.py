"""calc.sim.engine: the replica's clock, GPU-Util against compute utilization, what a dashboard reads."""

import pytest

from calc.errors import CalcError
from calc.sim.engine import Replica
from calc.sim.scheduler import SchedulerConfig
from calc.sim.workload import Request
from calc.speculative import SpeculationConfig


def linear(new_tokens, kv_tokens_read, attention_token_pairs):
    return 0.010 + 2e-5 * new_tokens + 1e-8 * kv_tokens_read


def run(rep, requests):
    """A minimal outer loop: submit everything at its time, step until idle."""
    now, i = 0, 0
    pending = sorted(requests, key=lambda r: r.arrival_ns)
    while i < len(pending) or rep.busy or rep.outstanding:
        next_arrival = pending[i].arrival_ns if i < len(pending) else None
        if rep.busy and (next_arrival is None or rep.step_end_ns <= next_arrival):
            now = rep.step_end_ns
            rep.end_step(now)
        elif next_arrival is not None:
            now = next_arrival
            rep.submit(pending[i], now)
            i += 1
        if not rep.busy:
            rep.start_step(now)
    return now


def test_steps_are_priced_by_the_given_function_and_itl_is_the_step_time():
    rep = Replica(SchedulerConfig(), 1000, linear)
    run(rep, [Request(0, 0, 100, 3)])
    prefill = round(linear(100, 100, 0) * 1e9)
    decode1 = round(linear(1, 100, 100) * 1e9)
    decode2 = round(linear(1, 101, 101) * 1e9)
    assert rep.sink.ttft_ns == [prefill]
    assert rep.sink.e2e_ns == [prefill + decode1 + decode2]
    assert rep.sink.itl_weights == {decode1: 65536, decode2: 65536}


def test_gpu_util_reads_busy_whenever_anything_runs_compute_does_not():
    flops = lambda new, pairs: 1e9 * new  # noqa: E731
    rep = Replica(SchedulerConfig(), 1000, linear, flops=flops, peak_flops_per_s=1e15)
    # one request every second, each decoding for about 2 s: never idle, barely loaded
    end = run(rep, [Request(i, i * 1_000_000_000, 50, 200) for i in range(20)])
    assert rep.gpu_util_reported(end) > 0.99
    assert rep.compute_utilization(end) < 0.01
    assert rep.busy_ns_until(end) == rep.busy_ns


def test_an_idle_gap_shows_in_gpu_util():
    rep = Replica(SchedulerConfig(), 1000, linear)
    end = run(rep, [Request(0, 0, 10, 2), Request(1, 10_000_000_000, 10, 2)])
    assert rep.gpu_util_reported(end) < 0.01


def test_dashboard_levels_and_time_integrals():
    rep = Replica(SchedulerConfig(max_num_seqs=2, max_num_batched_tokens=512, max_model_len=1024), 1000, linear)
    for i in range(5):
        rep.submit(Request(i, 0, 100, 10), 0)
    assert (rep.queue_depth, rep.running, rep.outstanding) == (5, 0, 5)
    rep.start_step(0)
    assert (rep.queue_depth, rep.running) == (3, 2)
    assert rep.kv_used_blocks == 2 * 7 and rep.kv_use_fraction == pytest.approx(14 / 1000)
    end = rep.step_end_ns
    rep.end_step(end)
    assert rep.int_queue == 3 * end and rep.int_running == 2 * end
    state = rep.state_at(end)
    assert state[:3] == (3, 2, 14) and state[3] == 2  # two first tokens out


def test_block_map_lists_running_requests():
    rep = Replica(SchedulerConfig(block_size=16, max_model_len=2048), 100, linear)
    rep.submit(Request(1, 0, 40, 5), 0)
    rep.submit(Request(2, 0, 1000, 5), 0)
    rep.start_step(0)
    rep.end_step(rep.step_end_ns)
    m = rep.kv_block_map()
    assert [(s["rid"], s["phase"], s["blocks"], s["tokens"]) for s in m["sequences"]] == [
        (1, "decode", 3, 40), (2, "decode", 63, 1000)]
    assert m["used_blocks"] + m["free_blocks"] + m["evictable_blocks"] == m["total_blocks"]


def test_speculation_must_match_the_verify_width():
    spec = SpeculationConfig(0.7, 3, 0.1, "test")
    with pytest.raises(CalcError) as err:
        Replica(SchedulerConfig(), 100, linear, speculation=spec)
    assert err.value.field == "tokens_per_decode"
    Replica(SchedulerConfig(tokens_per_decode=4), 100, linear, speculation=spec)


def test_driving_out_of_order_is_refused():
    rep = Replica(SchedulerConfig(), 100, linear)
    with pytest.raises(CalcError):
        rep.end_step(5)
    rep.submit(Request(0, 0, 10, 2), 0)
    rep.start_step(0)
    with pytest.raises(CalcError):
        rep.start_step(1)


# ------------------------------------------------------------ multi-step windows (vLLM 0.6, calc.sim.scheduler)
def flat(new_tokens, kv_tokens_read, attention_token_pairs):
    return 0.010  # every step 10 ms: the times below are counted in steps


MS = 1_000_000


def test_a_request_waits_for_the_running_window_to_end():
    # A decodes from 10 ms in a window of 4 steps (10-50 ms); B, sent at 15 ms, is admitted only at 50 ms.
    requests = lambda: [Request(0, 0, 10, 20), Request(1, 15 * MS, 10, 3)]  # noqa: E731
    windows = Replica(SchedulerConfig(chunked_prefill=False, scheduler_steps=4), 1000, flat)
    run(windows, requests())
    assert sorted(windows.sink.ttft_ns) == [10 * MS, 45 * MS]  # B: prefill step 50-60 ms
    # B's last token comes out at 80 ms, inside the window of 60-100 ms: it completes when that window ends.
    assert sorted(windows.sink.e2e_ns)[0] == 85 * MS
    every_step = Replica(SchedulerConfig(chunked_prefill=False), 1000, flat)
    run(every_step, requests())
    assert sorted(every_step.sink.ttft_ns) == [10 * MS, 15 * MS]  # admitted at the next step, 20 ms
    assert sorted(every_step.sink.e2e_ns)[0] == 35 * MS


def test_a_window_keeps_its_steps_when_its_answers_end_inside_it():
    # A's two decode tokens come out at 20 and 30 ms; the window (10-50 ms) runs on with A as a phantom,
    # so A completes at 50 ms and B, sent at 35 ms, starts its prefill at 50 ms.
    rep = Replica(SchedulerConfig(chunked_prefill=False, scheduler_steps=4), 1000, flat)
    end = run(rep, [Request(0, 0, 10, 3), Request(1, 35 * MS, 10, 2)])
    assert rep.sink.e2e_ns[0] == 50 * MS
    assert rep.sink.ttft_ns == [10 * MS, 25 * MS]
    assert rep.steps == 1 + 4 + 1 + 4 and end == 100 * MS  # B: prefill 50-60 ms, one decode token, three phantoms
    assert rep.sum_new_tokens == 10 + 4 + 10 + 4  # the phantoms' thrown-away tokens are computed (and priced)
    assert rep.finished == 2 and rep.sched.window_phantoms == 0 and rep.kv_used_blocks == 0


def test_phantom_steps_are_priced_with_the_finished_sequences_context():
    # A (prompt 10, 3 tokens) finishes at its second decode step; the two steps after price it as one
    # sequence over its 13 tokens, then 14: the KV read grows as its dropped tokens are written.
    seen = []

    def price(new_tokens, kv_tokens_read, attention_token_pairs):
        seen.append((new_tokens, kv_tokens_read))
        return 0.010

    rep = Replica(SchedulerConfig(chunked_prefill=False, scheduler_steps=4), 1000, price)
    run(rep, [Request(0, 0, 10, 3)])
    assert seen == [(10, 10), (1, 10), (1, 11), (1, 13), (1, 14)]


def test_windows_refuse_speculation():
    with pytest.raises(CalcError, match="scheduler_steps"):
        SchedulerConfig(scheduler_steps=10, tokens_per_decode=3)
