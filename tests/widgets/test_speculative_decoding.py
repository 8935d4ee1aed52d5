"""Step 9: tokens per target step, the speed-up with a draft, and the output distribution left unchanged."""

import random

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim_views import preset_summary
from calc.speculative import emitted_distribution, expected_tokens_per_step
from calc.widgets import framework
from calc.widgets import speculative_decoding as step

GAIN = "speculative_decoding.gain"
DIST = "speculative_decoding.same_distribution"
SIM = "speculative_decoding.light_traffic"


def outputs(name, **args):
    return framework.call(name, args)["outputs"]


def test_leviathan_formula_figures():
    # Step 9: expected tokens per target step (1 - a^(k+1)) / (1 - a) (Leviathan et al. 2023).
    assert expected_tokens_per_step(0.7, 4) == pytest.approx((1 - 0.7 ** 5) / 0.3)
    assert expected_tokens_per_step(0.8, 4) == pytest.approx(3.3616)
    assert expected_tokens_per_step(0.0, 4) == 1.0


@settings(max_examples=60, deadline=None)
@given(a=st.floats(0.0, 0.99), k=st.integers(1, 16))
def test_tokens_per_step_lies_between_one_and_k_plus_one_and_grows(a, k):
    t = expected_tokens_per_step(a, k)
    assert 1.0 <= t <= k + 1 + 1e-9
    assert expected_tokens_per_step(a, min(k + 1, 16)) >= t - 1e-12
    assert t < 1 / (1 - a) + 1e-9  # the ceiling as k grows


def test_gain_defaults_on_the_running_example():
    out = outputs(GAIN)
    assert out["tokens_per_step"]["text"] == "2.77"
    assert out["draft_cost_ratio"]["text"] == "0.0644"
    assert out["speedup_formula"]["text"] == "2.2x"
    assert out["speedup_roofline"]["value"] == pytest.approx(out["speedup_formula"]["value"], rel=0.02)
    assert out["best_k"]["value"] == 5
    assert out["itl"]["text"] == "15.3 ms → 6.95 ms"


def test_the_gain_fades_with_the_batch():
    small = outputs(GAIN, batch="1")["speedup_roofline"]["value"]
    large = outputs(GAIN, batch="256")["speedup_roofline"]["value"]
    assert small > 2 and large < 1


def test_facts():
    f = step.facts()
    assert (f["tokens_default"], f["speedup_default"], f["cost_ratio"], f["best_k"]) == ("2.77", "2.2x", "0.0644", "5")
    assert (f["quiz_tokens"], f["quiz_speedup"], f["quiz_a0_speedup"]) == ("2.31", "1.83x", "0.795x")
    assert (f["eagle_tokens"], f["eagle_cost_ratio"], f["eagle_speedup"]) == ("1.83", "0.0276", "1.69x")
    assert (f["sim_itl_on"], f["sim_itl_off"]) == ("13.6 ms", "21 ms")
    # The headline the cheat sheet borrows is the page's own worked example.
    assert (f["headline_acceptance"], f["headline_cost_ratio"], f["headline_speedup"]) == \
        (f["acceptance"], f["cost_ratio"], f["speedup_default"])


@settings(max_examples=50, deadline=None)
@given(weights=st.lists(st.floats(0.01, 1.0), min_size=2, max_size=8),
       other=st.lists(st.floats(0.01, 1.0), min_size=8, max_size=8))
def test_emitted_distribution_is_the_target(weights, other):
    p = [w / sum(weights) for w in weights]
    q = [o / sum(other[:len(p)]) for o in other[:len(p)]]
    assert emitted_distribution(p, q) == pytest.approx(p, abs=1e-12)


def test_sampling_by_the_rule_reproduces_the_target():
    # The acceptance rule itself, run: x ~ q, keep with min(1, p/q), else resample from max(0, p - q).
    p, q = list(step.TARGET_P), [0.5 * a + 0.5 * b for a, b in zip(step.TARGET_P, step.OTHER_P)]
    leftover = [max(0.0, a - b) for a, b in zip(p, q)]
    rng = random.Random(7)
    counts = [0] * len(p)
    n = 60_000
    for _ in range(n):
        x = rng.choices(range(len(q)), weights=q)[0]
        if rng.random() >= min(1.0, p[x] / q[x]):
            x = rng.choices(range(len(p)), weights=leftover)[0]
        counts[x] += 1
    assert [c / n for c in counts] == pytest.approx(p, abs=0.01)
    out = outputs(DIST)
    assert out["acceptance"]["value"] == pytest.approx(sum(min(a, b) for a, b in zip(p, q)))
    assert out["max_difference"]["value"] == 0


def test_a_perfect_draft_is_always_accepted():
    out = outputs(DIST, mismatch="0")
    assert out["acceptance"]["text"] == "100%"


def test_light_traffic_simulation_matches_its_facts():
    entry, bound = framework.bind(SIM, {})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    on, off = preset_summary(step.SIM_PRESET, step.SIM_RATE_PER_S, speculation="eagle-like"), preset_summary(step.SIM_PRESET, step.SIM_RATE_PER_S, speculation="off")
    assert final["outputs"]["itl_p50_s"]["value"] == pytest.approx(on["itl_p50_s"])
    assert on["itl_p50_s"] < off["itl_p50_s"]
    assert on["compute_utilization"] > off["compute_utilization"]


@pytest.mark.parametrize("name, args, field", [
    (GAIN, {"acceptance": "1.5"}, "acceptance"),
    (GAIN, {"k": "0"}, "k"),
    (GAIN, {"draft": "gpt-2"}, "draft"),
    (DIST, {"mismatch": "-0.1"}, "mismatch"),
    (SIM, {"speculation": "medusa"}, "speculation"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.bind(name, args)
    assert caught.value.field == field
