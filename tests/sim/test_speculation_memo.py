"""The draft phase's speed trick (calc.sim.speculative_step.draft_phase_pricer) equals its plain twin bit for bit.

The twin is :func:`calc.speculative.draft_phase_s`, which prices every draft step on the draft's
whole roofline. The memoized pricer must give the same float for every batch and context, on its
first call and from its memo, for every draft shape (an EAGLE head, an EAGLE-3 head, a separate
draft model; chains and trees); and a whole run with the trick must be the run without it
(``calc.sim.fast.general_paths()`` switches it off with the other fast paths), as
tests/sim/test_fast_paths.py checks for the engine's other fast paths.
"""

import dataclasses
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.roofline import step_coefficients
from calc.sim import Scenario, fast, simulate
from calc.sim.fleet import FleetScenario, simulate_fleet
from calc.sim.hardware import replica_hardware
from calc.sim.speculative_step import bound_speculation, draft_phase_pricer, speculative_step_time_s
from calc.speculative import EAGLE3_LIKE, EAGLE_LIKE, SEPARATE_DRAFT_LIKE, draft_phase_s

TARGETS = [step_coefficients("llama-3.1-8b", "h100-sxm-80gb"),
           step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4),
           step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4, weights="fp8", kv_dtype="fp8")]
CONFIGS = [EAGLE_LIKE, EAGLE3_LIKE, SEPARATE_DRAFT_LIKE,
           dataclasses.replace(EAGLE_LIKE, k=6, branching=8, verify_tokens=64),   # a wide, deep tree
           dataclasses.replace(EAGLE3_LIKE, k=1, verify_tokens=None)]              # a single draft step


@settings(max_examples=300, deadline=None)
@given(target=st.integers(0, len(TARGETS) - 1), config=st.integers(0, len(CONFIGS) - 1),
       sequences=st.integers(0, 1024), kv_tokens=st.integers(0, 4_000_000), again=st.integers(0, 1024))
def test_the_memoized_draft_phase_is_the_plain_one_bit_for_bit(target, config, sequences, kv_tokens, again):
    bound = CONFIGS[config].bound(TARGETS[target])
    phase = draft_phase_pricer(bound, bound.draft_coefficients)
    # First call, another batch, then the same batch from the memo; the context need not be whole tokens per sequence.
    for seqs, kv in ((sequences, kv_tokens), (again, kv_tokens // 3), (sequences, kv_tokens + 1)):
        plain = draft_phase_s(bound, bound.draft_coefficients, sequences=seqs, kv_tokens=kv)
        assert phase(seqs, kv) == plain  # the same float: ==, not approx


def test_a_step_is_priced_the_same_with_and_without_the_memo():
    hw = replica_hardware(Scenario.from_dict({"model": "llama-3.1-8b", "tp": 1}))
    memo = bound_speculation(EAGLE_LIKE, hw)
    with fast.general_paths():
        plain = bound_speculation(EAGLE_LIKE, hw)
    assert memo == plain  # the memo is no field of the config
    args = dict(decode_seqs=48, decode_kv_tokens=48 * 1300, new_tokens=48 * 16 + 512, kv_tokens_read=48 * 1300,
                attention_token_pairs=48 * 16 * 1300 + 512 * 256)
    fast_s = speculative_step_time_s(hw.price_step, memo, **args)
    assert fast_s == speculative_step_time_s(hw.price_step, plain, **args) > 0


def test_the_switch_reaches_the_draft_phase():
    hw = replica_hardware(Scenario.from_dict({"model": "llama-3.1-8b", "tp": 1}))
    assert callable(bound_speculation(EAGLE_LIKE, hw).__dict__["_draft_phase_s"])
    with fast.general_paths():
        assert bound_speculation(EAGLE_LIKE, hw).__dict__["_draft_phase_s"] is None


RUNS = [
    {"speculation": "eagle-like", "workload": {"rate_per_s": 10, "requests": 200}},
    {"speculation": "eagle3-like", "model": "llama-3.1-8b", "tp": 1, "kv_cache_tokens": 30000,
     "workload": {"rate_per_s": 12, "requests": 200, "lengths": "lognormal"}},
    {"speculation": "draft-1b", "workload": {"arrival": "all-at-once", "requests": 96, "lengths": "chat"}},
    {"speculation": {"k": 5, "branching": 2, "verify_tokens": 12}, "model": "llama-3.1-8b", "tp": 1,
     "workload": {"arrival": "closed-loop", "concurrency": 16, "requests": 120}},
    {"speculation": "eagle-like", "workload": {"rate_per_s": 16, "requests": 300},
     "fleet": {"replicas": 2, "router": "least-outstanding"}},
]


def _run(data: dict) -> str:
    result = simulate_fleet(FleetScenario.from_dict(data)) if "fleet" in data else simulate(Scenario.from_dict(data))
    return json.dumps(result.to_dict(), sort_keys=True)


@pytest.mark.parametrize("data", RUNS)
def test_a_run_with_the_memo_is_the_run_without_it(data):
    memoized = _run(data)
    with fast.general_paths():
        assert _run(data) == memoized
