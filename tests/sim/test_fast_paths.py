"""calc.sim's fast paths give the same runs as the general code they shortcut.

The engine takes decode-only steps on a fused path (:meth:`calc.sim.engine.Replica.run_until`)
and, without speculation, counts block crossings instead of filing each sequence
(:meth:`calc.sim.scheduler.Scheduler._decode_blocks_counted`, with ``own_blocks`` derived
from the count). Here the same scenarios run with both switched back to the general code
(steps through ``end_step``/``start_step``, each sequence filed under its next crossing),
and the JSON must be equal.
"""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.sim import Scenario, Simulation, simulate
from calc.sim.engine import Replica, ReplicaClock
from calc.sim.fleet import FleetScenario, simulate_fleet
from calc.sim.scheduler import Scheduler


@pytest.fixture
def general(monkeypatch):
    """A switch to the general paths: call it, then run again."""
    def switch():
        monkeypatch.setattr(Replica, "run_until", ReplicaClock.run_until)
        monkeypatch.setattr(Scheduler, "COUNT_CROSSINGS", False)
    return switch


def _dump(result) -> str:
    return json.dumps(result.to_dict(), sort_keys=True)


SCENARIOS = [
    {"workload": {"rate_per_s": 6, "requests": 150}},
    {"max_num_seqs": 16, "workload": {"arrival": "all-at-once", "requests": 64}},
    {"kv_cache_tokens": 20000, "workload": {"rate_per_s": 12, "requests": 150, "lengths": "lognormal"}},
    {"kv_cache_tokens": 30000, "chunked_prefill": False, "workload": {"arrival": "all-at-once", "requests": 80}},
    {"prefix_caching": True, "max_model_len": 16384, "kv_cache_tokens": 60000,
     "workload": {"rate_per_s": 8, "requests": 150, "prefix_tokens": 2500, "prefix_variants": 3, "lengths": "chat"}},
    {"allocation": "contiguous", "max_model_len": 4096, "workload": {"rate_per_s": 8, "requests": 120}},
    {"speculation": "eagle-like", "kv_cache_tokens": 30000, "workload": {"rate_per_s": 8, "requests": 120}},
    {"block_size": 1, "model": "llama-3.1-8b", "tp": 1, "workload": {"rate_per_s": 4, "requests": 60}},
]


@pytest.mark.parametrize("data", SCENARIOS)
def test_fast_paths_give_the_general_run(data, general):
    scenario = Scenario.from_dict(data)
    fast = _dump(simulate(scenario)), _dump(simulate_fleet(scenario))
    general()
    assert (_dump(simulate(scenario)), _dump(simulate_fleet(scenario))) == fast


def test_fast_paths_in_slices_and_fleets(general):
    data = {"kv_cache_tokens": 40000, "workload": {"rate_per_s": 10, "requests": 200, "lengths": "chat"},
            "fleet": {"replicas": 2, "router": "least-outstanding"}}

    def sliced():
        sim = Simulation(Scenario.from_dict({k: v for k, v in data.items() if k != "fleet"}))
        marks = []
        while not sim.advance(max_events=29, until_ns=(len(marks) + 1) * 700_000_000):
            marks.append((sim.events, sim.now_ns))
        return marks, _dump(sim.result()), _dump(simulate_fleet(FleetScenario.from_dict(data)))

    fast = sliced()
    general()
    assert sliced() == fast


@settings(max_examples=25, deadline=None)
@given(seqs=st.integers(1, 64), kv=st.integers(2_000, 200_000), rate=st.floats(0.5, 30), chunked=st.booleans(),
       block=st.sampled_from([1, 8, 16, 32]), lengths=st.sampled_from(["fixed", "chat", "lognormal"]),
       seed=st.integers(0, 50))
def test_fast_paths_on_random_replicas(seqs, kv, rate, chunked, block, lengths, seed):
    data = {"max_num_seqs": seqs, "kv_cache_tokens": kv, "chunked_prefill": chunked, "block_size": block,
            "max_model_len": 4096, "seed": seed,
            "workload": {"rate_per_s": rate, "requests": 40, "lengths": lengths, "prompt_tokens": 700,
                         "output_tokens": 90}}
    if not chunked:
        data["max_num_batched_tokens"] = 8192
    try:
        scenario = Scenario.from_dict(data)
    except ValueError:
        return
    fast = _dump(simulate(scenario))
    with pytest.MonkeyPatch.context() as mp:
        mp.setattr(Replica, "run_until", ReplicaClock.run_until)
        mp.setattr(Scheduler, "COUNT_CROSSINGS", False)
        assert _dump(simulate(scenario)) == fast


def _state(sim) -> tuple:
    """Everything a replica and its scheduler hold, as plain values (the fast paths must leave the same)."""
    rep, sched, pool = sim.replica, sim.replica.sched, sim.replica.pool
    clock = tuple(getattr(rep, k) for k in (
        "busy_ns", "steps", "int_queue", "int_running", "int_used_blocks", "int_token_states", "_last_ns",
        "now_ns", "step_start_ns", "step_end_ns", "max_running", "max_queue", "sum_new_tokens", "sum_pairs"))
    plan = rep.plan
    planned = None if plan is None else (plan.decode_seqs, plan.new_tokens, plan.kv_tokens_read,
                                         plan.attention_token_pairs, plan.decode_kv_tokens,
                                         [(s.rid, e) for s, e in plan.prefills])
    scheduler = tuple(getattr(sched, k) for k in (
        "n_decoding", "ctx_ticks", "emitted_ticks", "step_index", "prefill_kv_tokens", "shared_running_tokens",
        "finished", "preemptions", "prefill_tokens_computed"))
    seqs = [(s.rid, s.own_blocks, s.shared_blocks, s.computed, s.out_done, sched.seq_kv_tokens(s))
            for s in sched.running.values()]
    return clock, planned, scheduler, seqs, (pool.free, pool.evictable, pool.peak_used), sim.events, sim.now_ns


@pytest.mark.parametrize("data", SCENARIOS[:5])
def test_fast_paths_leave_the_same_state_at_every_slice(data, general):
    def slices():
        sim = Simulation(Scenario.from_dict(data))
        out = []
        k = 1
        while not sim.advance(max_events=k):
            out.append(_state(sim))
            k = k % 17 + 3
        return out

    fast = slices()
    general()
    assert slices() == fast
