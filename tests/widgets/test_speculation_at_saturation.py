"""Step 10: the speed-up of speculation against batch crossing 1x (published: EAGLE below 1x from batch 24), and the
simulation at saturation."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.speculative import EAGLE_LIKE, SpeculationConfig
from calc.widgets import framework
from calc.widgets import speculation_at_saturation as step

CURVE = "speculation_at_saturation.speedup_vs_batch"
SIM = "speculation_at_saturation.saturated"


def test_break_even_batch_against_the_published_figure():
    # Published (EAGLE-3 paper, SGLang, 1x H100, Llama 3.1 8B): EAGLE below 1x from batch 24; step 10's prose: 24-32.
    ours = step.break_even("llama-3.1-8b")
    assert ours == 23
    assert abs(ours - step.PUBLISHED_EAGLE["below_one_from_batch"]) <= 2
    assert step.break_even("llama-3.1-70b") == 21


def test_small_batch_speedup_is_the_published_one():
    out = framework.call(CURVE, {})["outputs"]
    assert out["speedup_8b_batch_2"]["value"] == pytest.approx(dict(step.PUBLISHED_EAGLE["points"])[2], abs=0.02)
    assert out["speedup_8b_batch_64"]["value"] < 1
    assert (out["break_even_8b"]["text"], out["break_even_70b"]["text"]) == ("23", "21")
    assert out["tokens_per_step"]["text"] == "2.73"


def test_curve_crosses_one_where_calc_says():
    figure = framework.call(CURVE, {})["figures"]["vs_batch"]
    eight = figure["data"][0]
    pairs = dict(zip(eight["x"], eight["y"]))
    assert pairs[20] > 1 > pairs[24]
    published = figure["data"][2]
    assert list(zip(published["x"], published["y"])) == [(2, 1.4), (64, 0.99)]


def test_a_chain_crosses_later_than_a_tree():
    chain = SpeculationConfig(EAGLE_LIKE.acceptance, EAGLE_LIKE.k, EAGLE_LIKE.draft_cost_ratio, "chain", verify_tokens=4)
    assert step.break_even("llama-3.1-8b", chain) > 3 * step.break_even("llama-3.1-8b")
    # Long contexts keep decode memory-bound for longer.
    assert step.break_even("llama-3.1-8b", context_tokens=8192) > step.break_even("llama-3.1-8b")


@settings(max_examples=20, deadline=None)
@given(a=st.floats(0.05, 0.95), k=st.integers(1, 8), c=st.floats(0.0, 0.5))
def test_speedup_never_rises_with_the_batch(a, k, c):
    out = framework.call(CURVE, {"acceptance": a, "k": k, "draft_cost_ratio": c, "verify_tokens": k + 1})
    ys = out["figures"]["vs_batch"]["data"][0]["y"]
    assert all(later <= earlier + 1e-6 for earlier, later in zip(ys, ys[1:]))


def test_saturation_facts_and_the_simulation():
    f = step.facts()
    assert (f["sim_tokens_on"], f["sim_tokens_off"]) == ("2,820", "4,626")
    assert (f["sim_ttft_p99_on"], f["sim_ttft_p99_off"]) == ("74.7 s", "27.3 s")
    assert (f["low_itl_on"], f["low_itl_off"]) == ("5.95 ms", "8.46 ms")  # at low load speculation still helps
    assert (f["lesson_ttft_p99_off"], f["lesson_ttft_p99_on"]) == ("0.959 s", "39.7 s")
    entry, bound = framework.bind(SIM, {})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    assert final["outputs"]["throughput_output_tokens_per_s"]["text"] == "2,820 tokens/s"


@pytest.mark.parametrize("name, args, field", [
    (CURVE, {"k": "5", "verify_tokens": "4"}, "verify_tokens"),
    (CURVE, {"acceptance": "1"}, "acceptance"),
    (CURVE, {"batch": "0"}, "batch"),
    (SIM, {"rate_per_s": "0"}, "rate_per_s"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args) if name == CURVE else framework.bind(name, args)
    assert caught.value.field == field
