"""The primer's widget: one request's prefill and decode steps, priced on calc.roofline."""

import dataclasses
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import memory, roofline, timeline
from calc.catalog import get_model
from calc.errors import CalcError
from calc.widgets import framework, primer


@pytest.fixture(scope="module")
def lesson():
    return timeline.request_timeline_s()


def _step_by_step(model, gpu="h100-sxm-80gb", tp=1, prompt=1024, answer=256, weights="bf16", coef=None):
    """The slow, exact way: one roofline call per decode step (answer token k + 1 from a step over prompt + k)."""
    coef = coef or roofline.step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype="bf16")
    return [roofline.itl_s(coef, batch=1, context_tokens=prompt + k) for k in range(1, answer)]


def test_the_running_example_is_priced_on_the_roofline(lesson):
    coef = roofline.step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4, weights="bf16", kv_dtype="bf16")
    assert lesson["ttft_s"] == roofline.ttft_s(coef, prompt_tokens=1024)
    assert lesson["decode_steps"] == 255
    # Answer token k + 1 comes from a step over prompt + k tokens: the first at 1,025, the last at 1,279.
    assert lesson["decode_first"]["time_s"] == roofline.itl_s(coef, batch=1, context_tokens=1025)
    assert lesson["decode_last"]["time_s"] == roofline.itl_s(coef, batch=1, context_tokens=1279)
    steps = _step_by_step("llama-3.1-70b", tp=4)
    assert lesson["decode_s"] == pytest.approx(math.fsum(steps), rel=1e-12)
    assert lesson["e2e_s"] == pytest.approx(math.fsum([lesson["ttft_s"], *steps]), rel=1e-12)
    assert lesson["itl_mean_s"] == pytest.approx(math.fsum(steps) / 255, rel=1e-12)


@pytest.mark.parametrize("model, tp, prompt, answer", [
    ("llama-3.1-70b", 4, 1024, 256), ("llama-3.1-8b", 1, 1, 700), ("mistral-7b", 1, 3900, 500),  # crosses the window
    ("mistral-7b", 1, 5000, 40), ("mixtral-8x7b", 2, 300, 300), ("deepseek-v3", 8, 2000, 120),
    ("llama-3.2-1b", 1, 64, 2), ("qwen2.5-7b", 1, 7, 1)])
def test_closed_form_decode_equals_pricing_every_step(model, tp, prompt, answer):
    gpu, weights = ("h200", "fp8") if model == "deepseek-v3" else ("h100-sxm-80gb", "bf16")  # MLA, 256 experts
    t = timeline.request_timeline_s(model, gpu, tp=tp, weights=weights, prompt_tokens=prompt, answer_tokens=answer)
    steps = _step_by_step(model, gpu, tp, prompt, answer, weights)
    assert t["decode_s"] == pytest.approx(math.fsum(steps), rel=1e-12, abs=1e-15)
    for i in sorted({0, 1, 2, answer // 3, answer // 2, answer - 1, answer}):
        if i <= answer:
            exact = 0.0 if i == 0 else math.fsum([t["ttft_s"], *steps[:i - 1]])
            assert timeline.elapsed_s(t, i) == pytest.approx(exact, rel=1e-12)


def test_closed_form_follows_attention_onto_its_compute_roof():
    # Make attention's FLOPs a hair slower than its KV read per token: the step turns compute-bound at about
    # 1,000 tokens of context, a break inside the run that decode_runs must find.
    coef = roofline.step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    kv_per_token_s = coef.kv_bytes_per_token / (coef.hbm_bytes_per_s * coef.efficiency.memory)
    slow = dataclasses.replace(coef, attention_flops_per_s=coef.attention_flops_per_pair / (
        coef.efficiency.compute * 1.001 * kv_per_token_s))
    runs = timeline.decode_runs(slow, 500, 1500)
    assert len(runs) == 2 and runs[0][1] + 1 == runs[1][0] and 990 <= runs[0][1] <= 1010
    steps = _step_by_step(None, coef=slow, prompt=499, answer=1002)
    assert timeline._runs_sum_s(runs, 1500) == pytest.approx(math.fsum(steps), rel=1e-12)
    assert timeline._runs_sum_s(runs, 1200) == pytest.approx(math.fsum(steps[:701]), rel=1e-12)


def test_a_32k_answer_costs_a_handful_of_roofline_calls_and_a_few_hundred_points():
    t = timeline.request_timeline_s(answer_tokens=timeline.MAX_ANSWER_TOKENS)
    assert len(t["runs"]) == 1  # the 70B on four H100s: attention reads KV at every context
    trace = primer.timeline_figure(t)["data"][0]
    assert len(trace["x"]) == len(trace["y"]) <= primer.MAX_POINTS <= 500
    assert trace["y"][-1] == timeline.MAX_ANSWER_TOKENS and trace["x"][-1] == round(t["e2e_s"], 6)


def test_prefill_is_compute_bound_and_decode_memory_bound(lesson):
    assert lesson["prefill"]["bound"] == "compute"
    assert lesson["decode_first"]["bound"] == lesson["decode_last"]["bound"] == "memory"
    assert lesson["prefill"]["intensity_flops_per_byte"] > lesson["prefill"]["ridge_flops_per_byte"]
    assert lesson["decode_first"]["intensity_flops_per_byte"] < 2


def test_kv_held_by_the_request(lesson):
    # 2 x 80 layers x 8 KV heads x 128 x 2 bytes = 327,680 B per token, 1,280 tokens at the end.
    assert lesson["kv_held_bytes"] == 327_680 * 1_280 == 419_430_400
    view = framework.call("primer.request_timeline", {})
    assert view["outputs"]["kv_held_bytes"]["text"] == "419 MB (400 MiB)"


def test_widget_outputs_agree_with_the_timeline(lesson):
    view = framework.call("primer.request_timeline", {})
    out = view["outputs"]
    assert out["ttft_s"]["value"] == pytest.approx(lesson["ttft_s"], rel=1e-8)
    assert out["e2e_s"]["value"] == pytest.approx(lesson["e2e_s"], rel=1e-8)
    decode = math.fsum(_step_by_step("llama-3.1-70b", tp=4))
    assert out["decode_share"]["value"] == pytest.approx(decode / lesson["e2e_s"], rel=1e-8)
    assert out["tokens_per_s"]["value"] == pytest.approx(255 / decode, rel=1e-8)
    assert out["decode_intensity"]["text"].endswith("memory-bound")
    rows = view["tables"]["steps"]["rows"]
    assert [r[0] for r in rows] == ["Prefill", "Decode step 1 of 255", "Decode step 255 of 255"]


def test_the_timeline_chart_starts_at_zero_and_ends_at_the_last_token(lesson):
    figure = primer.timeline_figure(lesson)
    trace = figure["data"][0]
    assert trace["x"][0] == 0 and trace["y"][0] == 0
    assert trace["y"][-1] == 256 and trace["x"][-1] == pytest.approx(lesson["e2e_s"], rel=1e-6)
    assert len(trace["x"]) <= primer.MAX_POINTS
    assert trace["x"] == sorted(trace["x"])
    assert figure["layout"]["shapes"][0]["x1"] == pytest.approx(lesson["ttft_s"], rel=1e-6)
    assert "81.8 ms" in figure["summary"] or figure["summary"].count("ms") >= 1


def test_a_one_token_answer_is_all_prefill():
    t = timeline.request_timeline_s(answer_tokens=1)
    assert t["runs"] == [] and t["decode_s"] == 0.0 and t["e2e_s"] == t["ttft_s"]
    view = framework.call("primer.request_timeline", {"answer_tokens": 1})
    assert view["outputs"]["itl_first_s"]["text"] == "none: one-token answer"
    assert len(view["tables"]["steps"]["rows"]) == 1


def test_faster_hbm_speeds_up_decode_not_prefill(lesson):
    h200 = timeline.request_timeline_s(gpu="h200")
    assert h200["ttft_s"] == pytest.approx(lesson["ttft_s"], rel=1e-9)  # same tensor cores
    assert h200["decode_first"]["time_s"] < lesson["decode_first"]["time_s"]


def test_fp8_weights_nearly_halve_a_decode_step(lesson):
    fp8 = timeline.request_timeline_s(weights="fp8")
    assert 0.5 < fp8["decode_first"]["time_s"] / lesson["decode_first"]["time_s"] < 0.65


def test_a_model_that_does_not_fit_names_the_tp_control():
    with pytest.raises(CalcError) as err:
        framework.call("primer.request_timeline", {"tp": "1"})
    assert err.value.field == "tp"
    assert "does not fit on 1 x H100 SXM 80GB" in str(err.value)


def test_a_request_longer_than_the_kv_cache_is_refused():
    with pytest.raises(CalcError) as err:
        timeline.request_timeline_s("llama-3.1-8b", "l4", tp=1, prompt_tokens=131_072, answer_tokens=32_768)
    assert err.value.field == "prompt_tokens" and "163,840 tokens" in str(err.value)


@pytest.mark.parametrize("args, field", [
    ({"tp": "3"}, "tp"), ({"prompt_tokens": "0"}, "prompt_tokens"), ({"answer_tokens": "40000"}, "answer_tokens"),
    ({"weights": "fp4"}, "weights"), ({"model": "gpt-5"}, "model"),
])
def test_bad_input_raises_calc_error_naming_the_field(args, field):
    with pytest.raises(CalcError) as err:
        framework.call("primer.request_timeline", args)
    assert err.value.field == field


@settings(max_examples=25, deadline=None)
@given(prompt=st.integers(1, 16_384), answer=st.integers(1, 600), extra=st.integers(1, 400))
def test_more_tokens_never_finish_sooner(prompt, answer, extra):
    base = timeline.request_timeline_s(prompt_tokens=prompt, answer_tokens=answer)
    longer_answer = timeline.request_timeline_s(prompt_tokens=prompt, answer_tokens=answer + extra)
    longer_prompt = timeline.request_timeline_s(prompt_tokens=prompt + extra, answer_tokens=answer)
    assert longer_answer["e2e_s"] > base["e2e_s"]
    assert longer_answer["ttft_s"] == base["ttft_s"]
    assert longer_prompt["ttft_s"] > base["ttft_s"]
    times = [timeline.elapsed_s(base, i) for i in range(answer + 1)]
    assert all(later > earlier for earlier, later in zip(times, times[1:]))


@settings(max_examples=20, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "mistral-7b", "qwen2.5-7b", "llama-3.2-3b"]),
       prompt=st.integers(1, 8_192), answer=st.integers(1, 300))
def test_every_view_is_finite_json_and_sums_up(model, prompt, answer):
    view = framework.call("primer.request_timeline",
                          {"model": model, "tp": "1", "prompt_tokens": prompt, "answer_tokens": answer})
    t = timeline.request_timeline_s(model, tp=1, prompt_tokens=prompt, answer_tokens=answer)
    assert view["outputs"]["e2e_s"]["value"] == pytest.approx(t["e2e_s"], rel=1e-8)
    assert t["kv_held_bytes"] == memory.kv_bytes_per_request(get_model(model), prompt + answer)
    assert view["figures"]["timeline"]["data"][0]["y"][-1] == answer


def test_facts_quote_the_running_example():
    facts = primer.facts()
    t = timeline.request_timeline_s()
    assert facts["decode_steps"] == "255"
    assert facts["kv_per_token"] == "327,680 bytes (320 KiB)"
    assert facts["kv_per_token_per_gpu"] == "81,920 bytes"
    assert facts["weights_per_gpu"] == "35.3 GB"
    assert facts["kv_held"] == "419 MB"
    assert facts["ridge"] == "295"
    assert facts["ttft"] == f"{round(t['ttft_s'] * 1000, 1):g} ms" or facts["ttft"].endswith(" s")
    assert facts["weights_read_floor"] == "10.5 ms"  # 35.28 GB / 3.35 TB/s
    assert float(facts["busy_over_alone"]) < 2  # 64 requests cost far less than 64 times one


@settings(max_examples=20, deadline=None)
@given(model=st.sampled_from(["llama-3.1-8b", "mistral-7b", "llama-3.2-1b"]),
       prompt=st.integers(1, 8_192), answer=st.integers(1, 400))
def test_closed_form_matches_every_step_at_random_lengths(model, prompt, answer):
    t = timeline.request_timeline_s(model, tp=1, prompt_tokens=prompt, answer_tokens=answer)
    steps = _step_by_step(model, prompt=prompt, answer=answer)
    assert t["decode_s"] == pytest.approx(math.fsum(steps), rel=1e-12, abs=1e-15)
    assert timeline.elapsed_s(t, answer) == t["e2e_s"] == pytest.approx(math.fsum([t["ttft_s"], *steps]), rel=1e-12)
