"""calc.sim's fast paths (:mod:`calc.sim.fast`) give the same runs as their general twins.

Each scenario runs with every fast path on, then with all of them (or one of
them) switched to the general twin by :func:`calc.sim.fast.general_paths`:
the JSON must be equal, and so must the whole state of every replica after
every slice of events. The fleet-of-one and same-instant shortcuts are
compared too (all-at-once arrivals, a lone replica, replicas behind a router).
"""

import json
import os
import subprocess
import sys

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.sim import Scenario, Simulation, fast, simulate
from calc.sim.fleet import Fleet, FleetScenario, simulate_fleet

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


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
    {"batching": "static", "model": "llama-3.1-8b", "tp": 1, "workload": {"arrival": "all-at-once", "requests": 40}},
    # The closed loop (calc.sim.arrivals): clients released as their requests finish, inside the fused runs too.
    {"workload": {"arrival": "closed-loop", "concurrency": 12, "requests": 120, "lengths": "chat"}},
    {"kv_cache_tokens": 20000, "request_overhead_s": 0.02,
     "workload": {"arrival": "closed-loop", "concurrency": 40, "requests": 150, "think_time_s": 0.5,
                  "lengths": "lognormal"}},
    {"batching": "static", "model": "llama-3.1-8b", "tp": 1,
     "workload": {"arrival": "closed-loop", "concurrency": 10, "requests": 40, "duration_s": 5}},
    {"request_overhead_s": 0.015, "workload": {"rate_per_s": 6, "requests": 100}},
    # TensorRT-LLM's in-flight batching (engine nim-trtllm): prompts admitted whole beside the decodes.
    {"engine": "nim-trtllm", "kv_cache_tokens": 60000, "max_num_batched_tokens": 8192,
     "workload": {"arrival": "closed-loop", "concurrency": 9, "requests": 60, "prompt_tokens": 3000,
                  "output_tokens": 60}},
    {"engine": "nim-trtllm", "kv_cache_tokens": 30000,
     "workload": {"rate_per_s": 10, "requests": 120, "lengths": "lognormal"}},
    # vLLM 0.6's multi-step windows (engine vllm-0.6-multistep, 10 steps): admission only at a window's end,
    # answers ending inside one computed on as phantoms; whole prompts (its rows), chunked with preemption, closed.
    {"engine": "vllm-0.6-multistep", "model": "llama-3.1-8b", "tp": 1, "chunked_prefill": False,
     "max_model_len": 4096, "workload": {"rate_per_s": 8, "requests": 150, "lengths": "lognormal"}},
    {"engine": "vllm-0.6-multistep", "kv_cache_tokens": 20000,
     "workload": {"rate_per_s": 12, "requests": 150, "lengths": "lognormal"}},
    {"engine": "vllm-0.6-multistep", "chunked_prefill": False, "max_model_len": 4096,
     "workload": {"arrival": "closed-loop", "concurrency": 16, "requests": 120, "lengths": "chat"}},
]

FLEETS = [
    {"kv_cache_tokens": 40000, "workload": {"rate_per_s": 10, "requests": 200, "lengths": "chat"},
     "fleet": {"replicas": 2, "router": "least-outstanding"}},
    {"workload": {"arrival": "all-at-once", "requests": 90}, "fleet": {"replicas": 3}},
    {"workload": {"rate_per_s": 12, "requests": 300},
     "fleet": {"replicas": 1, "autoscaler": {"signal": "queue_depth", "scale_up_above": 4, "interval_s": 2,
                                             "cooldown_s": 4, "max_replicas": 3}}},
    {"kv_cache_tokens": 40000, "workload": {"arrival": "closed-loop", "concurrency": 30, "requests": 200,
                                            "lengths": "chat", "duration_s": 20},
     "fleet": {"replicas": 2, "router": "least-outstanding"}},
    {"workload": {"arrival": "closed-loop", "concurrency": 24, "requests": 200},
     "fleet": {"replicas": 1, "autoscaler": {"signal": "queue_depth", "scale_up_above": 4, "interval_s": 2,
                                             "cooldown_s": 4, "max_replicas": 3}}},
]


def _runs(data: dict) -> tuple:
    if "fleet" in data:
        return (_dump(simulate_fleet(FleetScenario.from_dict(data))),)
    scenario = Scenario.from_dict(data)
    return _dump(simulate(scenario)), _dump(simulate_fleet(scenario)), _dump(simulate_fleet(scenario, time_series=False))


@pytest.mark.parametrize("data", SCENARIOS + FLEETS)
def test_fast_paths_give_the_general_run(data):
    fast_runs = _runs(data)
    with fast.general_paths():
        assert _runs(data) == fast_runs


@pytest.mark.parametrize("path", fast.PATHS)
@pytest.mark.parametrize("data", [SCENARIOS[1], SCENARIOS[2], SCENARIOS[4], SCENARIOS[10], SCENARIOS[15], FLEETS[1]])
def test_each_fast_path_alone_gives_the_general_run(path, data):
    fast_runs = _runs(data)
    with fast.general_paths(path):
        assert _runs(data) == fast_runs


def test_the_switch_reaches_every_path():
    scenario = Scenario.from_dict(SCENARIOS[0])
    with fast.general_paths():
        sim = Simulation(scenario)
        assert not sim._fleet_of_one and not sim._same_instant
        assert not sim.replica._fused_on and not sim.replica.sched.lazy
    sim = Simulation(scenario)
    assert sim._fleet_of_one and sim._same_instant and sim.replica._fused_on and sim.replica.sched.lazy
    assert fast.FAST_PATHS  # restored after the block


def test_the_environment_variable_selects_the_general_paths():
    code = "import calc.sim.fast as f; print(f.FAST_PATHS, f.enabled('fused_decode'))"
    env = dict(os.environ, CALC_SIM_FAST_PATHS="0")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, cwd=ROOT, env=env, timeout=60)
    assert out.stdout.split() == ["False", "False"]


def _state(engine) -> tuple:
    """Everything the replicas and their schedulers hold, as plain values (the fast paths must leave the same)."""
    reps = []
    for m in engine.members:
        rep = m.rep
        clock = tuple(getattr(rep, k) for k in (
            "busy_ns", "steps", "int_queue", "int_running", "int_used_blocks", "int_token_states", "_last_ns",
            "now_ns", "step_start_ns", "step_end_ns", "max_running", "max_queue", "sum_new_tokens", "sum_pairs"))
        plan = rep.plan
        planned = None if plan is None or not hasattr(plan, "prefills") else (
            plan.decode_seqs, plan.new_tokens, plan.kv_tokens_read, plan.attention_token_pairs, plan.decode_kv_tokens,
            [(s.rid, e) for s, e in plan.prefills], getattr(plan, "phantom_seqs", 0))
        sched = getattr(rep, "sched", None)
        if sched is None:
            reps.append((clock, rep.finished))
            continue
        scheduler = tuple(getattr(sched, k) for k in (
            "n_decoding", "ctx_ticks", "emitted_ticks", "step_index", "prefill_kv_tokens", "shared_running_tokens",
            "finished", "preemptions", "prefill_tokens_computed", "window_steps_left", "window_phantoms",
            "window_phantom_tokens"))
        seqs = [(s.rid, s.own_blocks, s.shared_blocks, s.computed, s.out_done, sched.seq_kv_tokens(s))
                for s in sched.running.values()]
        reps.append((clock, planned, scheduler, seqs, (rep.pool.free, rep.pool.evictable, rep.pool.peak_used)))
    return reps, engine.events, engine.now_ns, engine.maxima(), engine.done


def _slices(make, until_step_ns=None) -> list:
    engine = make()
    out = []
    k = 1
    while True:
        until = None if until_step_ns is None else (len(out) + 1) * until_step_ns
        done = engine.advance(max_events=k, until_ns=until)
        out.append(_state(engine))
        if done:
            return out
        k = k % 17 + 3


@pytest.mark.parametrize("data", SCENARIOS[:5] + SCENARIOS[8:])
def test_fast_paths_leave_the_same_state_at_every_slice(data):
    def make():
        return Simulation(Scenario.from_dict(data))

    fast_slices = _slices(make)
    with fast.general_paths():
        assert _slices(make) == fast_slices


@pytest.mark.parametrize("data", [SCENARIOS[0], SCENARIOS[3], SCENARIOS[9], SCENARIOS[10]] + FLEETS[:2] + FLEETS[3:])
def test_fleets_leave_the_same_state_at_every_slice_and_stop_time(data):
    def make():
        return Fleet(FleetScenario.from_dict(data) if "fleet" in data else Scenario.from_dict(data))

    fast_slices = _slices(make, until_step_ns=300_000_000), _slices(make)
    with fast.general_paths():
        assert (_slices(make, until_step_ns=300_000_000), _slices(make)) == fast_slices


def test_fast_paths_in_slices_and_fleets():
    data = FLEETS[0]

    def sliced():
        sim = Simulation(Scenario.from_dict({k: v for k, v in data.items() if k != "fleet"}))
        marks = []
        while not sim.advance(max_events=29, until_ns=(len(marks) + 1) * 700_000_000):
            marks.append((sim.events, sim.now_ns))
        return marks, _dump(sim.result()), _dump(simulate_fleet(FleetScenario.from_dict(data)))

    fast_run = sliced()
    with fast.general_paths():
        assert sliced() == fast_run


@settings(max_examples=25, deadline=None)
@given(seqs=st.integers(1, 64), kv=st.integers(2_000, 200_000), rate=st.floats(0.5, 30), chunked=st.booleans(),
       block=st.sampled_from([1, 8, 16, 32]), lengths=st.sampled_from(["fixed", "chat", "lognormal"]),
       seed=st.integers(0, 50), arrival=st.sampled_from(["poisson", "all-at-once", "closed-loop"]),
       concurrency=st.integers(1, 80), overhead_s=st.sampled_from([None, 0.0, 0.004]))
def test_fast_paths_on_random_replicas(seqs, kv, rate, chunked, block, lengths, seed, arrival, concurrency,
                                       overhead_s):
    data = {"max_num_seqs": seqs, "kv_cache_tokens": kv, "chunked_prefill": chunked, "block_size": block,
            "max_model_len": 4096, "seed": seed, "request_overhead_s": overhead_s,
            # a third with prompts admitted whole, a third in vLLM 0.6's multi-step windows
            "engine": ("nim-trtllm", "vllm-0.6-multistep", "vllm")[seed % 3],
            "workload": {"rate_per_s": rate, "requests": 40, "lengths": lengths, "prompt_tokens": 700,
                         "output_tokens": 90, "arrival": arrival, "concurrency": concurrency}}
    if not chunked:
        data["max_num_batched_tokens"] = 8192
    try:
        scenario = Scenario.from_dict(data)
    except ValueError:
        return
    fast_run = _dump(simulate(scenario))
    with fast.general_paths():
        assert _dump(simulate(scenario)) == fast_run
