"""Step 10: the speed-up of speculation against batch crossing 1x (published: EAGLE below 1x from batch 24), and the
simulation at saturation."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim.speculation import TTFT_SLO_S, healthy_rate_without_speculation
from calc.sim_views import preset_summary
from calc.speculative import EAGLE_LIKE, break_even
from calc.widgets.simulation import scenario_for
from calc.widgets import framework
from calc.widgets import speculation_at_saturation as step

CURVE = "speculation_at_saturation.speedup_vs_batch"
SIM = "speculation_at_saturation.saturated"


def test_break_even_batch_against_the_published_figure():
    # Published (EAGLE-3 paper, SGLang, 1x H100, Llama 3.1 8B): EAGLE below 1x from batch 24.
    ours = break_even("llama-3.1-8b")
    assert abs(ours - step.PUBLISHED["eagle"]["below_one_from_batch"]) <= 5
    assert 16 <= break_even("llama-3.1-70b") <= 32
    assert step.PUBLISHED["eagle3"]["points"] == {2: 1.81, 64: 1.38}


def test_small_batch_speedup_is_the_published_one():
    out = framework.call(CURVE, {})["outputs"]
    assert out["speedup_8b_batch_2"]["value"] == pytest.approx(step.PUBLISHED["eagle"]["points"][2], abs=0.02)
    assert out["speedup_8b_batch_64"]["value"] < 1
    assert out["break_even_8b"]["text"] == str(break_even("llama-3.1-8b"))
    assert out["tokens_per_step"]["text"] == "1.83"


def test_curve_crosses_one_where_calc_says_and_shows_both_published_curves():
    figure = framework.call(CURVE, {})["figures"]["vs_batch"]
    eight = figure["data"][0]
    pairs = dict(zip(eight["x"], eight["y"]))
    even = break_even("llama-3.1-8b")
    below = max(x for x in pairs if x < even)
    assert pairs[below] > 1 > pairs[min(x for x in pairs if x >= even)]
    names = [trace["name"] for trace in figure["data"]]
    eagle = figure["data"][names.index("published EAGLE, 8B")]
    eagle3 = figure["data"][names.index("published EAGLE-3, 8B")]
    assert list(zip(eagle["x"], eagle["y"])) == [(2, 1.4), (64, 0.99)]
    assert list(zip(eagle3["x"], eagle3["y"])) == [(2, 1.81), (64, 1.38)]
    calc3 = dict(zip(*(figure["data"][names.index("calc EAGLE-3, 8B")][axis] for axis in ("x", "y"))))
    assert calc3[64] > 1.2


def test_a_chain_crosses_later_than_a_tree():
    chain = step._config(EAGLE_LIKE.acceptance, EAGLE_LIKE.k, 4, "eagle")
    assert break_even("llama-3.1-8b", chain) > 3 * break_even("llama-3.1-8b")
    # Long contexts keep decode memory-bound for longer.
    assert break_even("llama-3.1-8b", context_tokens=8192) > break_even("llama-3.1-8b")


@settings(max_examples=20, deadline=None)
@given(a=st.floats(0.05, 0.95), k=st.integers(1, 8), draft=st.sampled_from(["eagle", "eagle3", "llama-3.2-1b"]))
def test_speedup_barely_rises_and_falls_past_the_ridge(a, k, draft):
    # While memory-bound the draft's cost ratio c shrinks a little as the batch's KV grows the plain step;
    # once the verify step is compute-bound the speed-up falls.
    out = framework.call(CURVE, {"acceptance": a, "k": k, "draft": draft, "verify_tokens": k + 1})
    ys = out["figures"]["vs_batch"]["data"][0]["y"]
    assert max(ys) <= ys[0] * 1.06 and ys[-1] < ys[0]


def test_the_break_happens_where_the_arm_without_speculation_is_healthy():
    f = step.facts()
    scenario = scenario_for(step.SIM_PRESET)
    assert float(f["sim_rate"]) == healthy_rate_without_speculation(scenario)
    off = preset_summary(step.SIM_PRESET, speculation="off")
    on = preset_summary(step.SIM_PRESET, speculation="eagle-like")
    eagle3 = preset_summary(step.SIM_PRESET, speculation="eagle3-like")
    assert off["ttft_p99_s"] <= TTFT_SLO_S < on["ttft_p99_s"]          # healthy without, broken with EAGLE-like
    assert on["throughput_output_tokens_per_s"] < off["throughput_output_tokens_per_s"]
    assert eagle3["ttft_p99_s"] < 2 * TTFT_SLO_S                          # EAGLE-3's chain still copes
    assert float(f["low_itl_on"].split()[0]) < float(f["low_itl_off"].split()[0])  # at low load it still helps
    entry, bound = framework.bind(SIM, {})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    assert final["outputs"]["throughput_output_tokens_per_s"]["text"] == f"{f['sim_tokens_on']} tokens/s"


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
