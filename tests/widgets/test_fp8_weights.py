"""Step 7: fp8 weights on the running example - the memory they free, the decode step they shorten, the replay of step 6."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.errors import CalcError
from calc.memory import WEIGHT_FORMATS
from calc.units import GB
from calc.sim_views import preset_summary
from calc.widgets import a_70b_assistant, fp8_weights as step
from calc.widgets import framework

MEMORY = "fp8_weights.memory_before_after"
STEP = "fp8_weights.step_before_after"
SIM = "fp8_weights.twice_the_traffic"


def outputs(name, **args):
    return framework.call(name, args)["outputs"]


def test_facts_are_the_running_example_with_fp8_weights():
    f = step.facts()
    assert (f["weights_before"], f["weights_after"]) == ("35.3 GB", "18.2 GB")
    assert (f["kv_per_gpu_before"], f["kv_per_gpu_after"]) == ("32.7 GB", "49.8 GB")
    assert (f["kv_tokens_before"], f["kv_tokens_after"], f["kv_gain_pct"]) == ("399,169", "608,266", "+52%")
    assert (f["requests_before"], f["requests_after"]) == ("311", "475")
    assert (f["step_before"], f["step_after"], f["step_ratio"]) == ("15.3 ms", "8.58 ms", "1.78x")
    assert (f["comm_ms"], f["ttft_before"], f["ttft_after"]) == ("1.61 ms", "81.8 ms", "46.5 ms")
    assert (f["sim_ttft_p99_before"], f["sim_ttft_p99_after"]) == ("56.9 s", "7.54 s")
    assert (f["sim_queue_max_before"], f["sim_queue_max_after"], f["sat_batch"]) == ("432", "89", "256")


def test_bf16_replica_is_step_ones_capacity():
    # One story: the bf16 replica is step 1's 399,169 tokens (the lesson's count), not the exact count's 399,452.
    assert lesson.kv_capacity(weights="bf16").kv_cache_tokens_raw == lesson.KV_CAPACITY_TOKENS == 399_169
    assert step.facts()["kv_tokens_before"] == a_70b_assistant.facts()["kv_tokens"]
    # fp8 is weighed tensor by tensor (16-bit embeddings and head, scales), never with the rounded count.
    assert lesson.kv_capacity(weights="fp8").kv_cache_tokens_raw == lesson.kv_capacity(
        weights="fp8", rounded_params=False).kv_cache_tokens_raw == 608_266


def test_memory_view_defaults_and_byte_for_byte_transfer():
    out = outputs(MEMORY)
    assert out["weights_before"]["text"] == "35.3 GB" and out["weights_after"]["text"] == "18.2 GB (fp8)"
    assert out["kv_tokens_after"]["value"] == 608_266 and out["requests_after"]["value"] == 475
    before, after = lesson.kv_capacity(weights="bf16"), lesson.kv_capacity(weights="fp8")
    freed = before.weights_bytes - after.weights_bytes
    assert out["freed"]["value"] == round(freed)
    assert after.kv_cache_bytes - before.kv_cache_bytes == pytest.approx(freed)  # the weights' loss is the KV's gain
    # The fp8 checkpoint is not exactly half: 16-bit embeddings and head, plus scales.
    assert 0.5 < after.weights_bytes / before.weights_bytes < 0.52
    figure = framework.call(MEMORY, {})["figures"]["memory"]
    assert [t["name"] for t in figure["data"]][0] == "Weights"
    assert sum(t["x"][1] for t in figure["data"]) == pytest.approx(80.0)  # the bf16 bar stacks to 80 GB


def test_step_view_defaults_and_the_saturated_batch():
    out = outputs(STEP)
    assert (out["step_before"]["text"], out["step_after"]["text"], out["speedup"]["text"]) == ("15.3 ms", "8.58 ms (fp8)", "1.78x")
    assert out["bound"]["text"] == "memory → memory"
    full = outputs(STEP, batch="256")
    assert full["bound"]["text"] == "compute → memory"
    assert full["step_before"]["text"] == "31 ms" and full["step_after"]["text"] == "22.1 ms (fp8)"
    # 4-bit weights multiply in 16 bits: at a full batch no faster than bf16.
    four = outputs(STEP, weights="int4", batch="256")
    assert four["step_after"]["value"] == pytest.approx(four["step_before"]["value"])


@settings(max_examples=25, deadline=None)
@given(fmt=st.sampled_from(WEIGHT_FORMATS), batch=st.integers(1, 1024), context=st.integers(1, 32_768))
def test_fewer_bits_never_make_the_step_slower_or_the_cache_smaller(fmt, batch, context):
    out = outputs(STEP, weights=fmt, batch=str(batch), context_tokens=str(context))
    assert out["step_after"]["value"] <= out["step_before"]["value"] * (1 + 1e-9)
    mem = outputs(MEMORY, weights=fmt)
    assert mem["kv_tokens_after"]["value"] >= mem["kv_tokens_before"]["value"]


def test_live_simulation_ends_on_the_facts():
    entry, bound = framework.bind(SIM, {})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    summary = preset_summary(step.SIM_PRESET, weights="fp8")
    assert final["outputs"]["ttft_p99_s"]["value"] == pytest.approx(summary["ttft_p99_s"])
    assert final["outputs"]["requests_completed"]["text"] == "1,200 of 1,200"
    assert preset_summary(step.SIM_PRESET, weights="bf16")["kv_cache_tokens"] < summary["kv_cache_tokens"]


@pytest.mark.parametrize("name, args, field", [
    (MEMORY, {"weights": "fp4"}, "weights"),
    (STEP, {"batch": "0"}, "batch"),
    (STEP, {"context_tokens": "lots"}, "context_tokens"),
    (SIM, {"rate_per_s": "500"}, "rate_per_s"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.bind(name, args)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_units_are_decimal_gb():
    out = outputs(MEMORY)
    assert out["weights_after"]["value"] / GB == pytest.approx(18.17, abs=0.01)


def test_the_after_side_names_the_format_chosen_in_its_text_not_its_label():
    """The page rewrites an output's text, never its label: a label naming fp8 stayed when int4 was chosen."""
    for name in ("fp8_weights.memory_before_after", "fp8_weights.step_before_after"):
        fp8, int4 = (framework.call(name, {"weights": w})["outputs"] for w in ("fp8", "int4"))
        assert {k: o["label"] for k, o in fp8.items()} == {k: o["label"] for k, o in int4.items()}
        after = [k for k in int4 if k.endswith("_after")]
        assert after and all("(int4)" in int4[k]["text"] and "(fp8)" in fp8[k]["text"] for k in after)
        assert not any("fp8" in o["label"] or "int4" in o["label"] for o in int4.values())
