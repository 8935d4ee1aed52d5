"""Step 18: prefill and decode pools sized separately; TP across servers against TP in a server and PP across."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import get_gpu, get_model
from calc.errors import CalcError
from calc.parallel import allreduce_time_s, pipeline_bubble_fraction, pipeline_step_time_s
from calc.roofline import decode_step, step_coefficients, ttft_s
from calc.widgets import disaggregation as step
from calc.widgets import framework

SIZING = "disaggregation.pool_sizing"
SPLIT = "disaggregation.tp_or_pp"


def outputs(name, **args):
    return framework.call(name, args)["outputs"]


@pytest.fixture(scope="module")
def facts():
    return step.facts()


def test_facts_are_the_roofline_numbers(facts):
    assert facts["prefill_intensity"] == "1,029"  # a 1,024-token prefill: far above the ridge point
    assert facts["decode_intensity"] == "1.02"  # one sequence decoding: about one FLOP per byte
    assert facts["ridge"] == "295"  # 989e12 / 3.35e12
    assert facts["stall_8192_ms"] == "681"
    assert facts["allreduces_405b"] == "252"  # 2 per layer x 126 layers
    assert facts["kv_request"] == "336 MB"  # 1,024 tokens x 327,680 B
    assert facts["weights_405b"] == "812 GB" and facts["weights_405b_16"] == "50.7 GB"
    assert facts["tp16_itl"] == "60.1 ms" and facts["pp2_itl"] == "49.9 ms"
    assert facts["tp16_ttft"] == "3,522 ms" and facts["pp2_ttft"] == "1,245 ms"
    assert facts["pp2_bubble"] == "20%"  # (2 - 1) / (4 + 2 - 1)
    assert facts["distserve_requests"] == "7.4" and facts["distserve_slo"] == "12.6"


def test_pipeline_holds_twice_the_kv_of_tp16_for_405b(facts):
    tp16 = int(facts["tp16_kv"].replace(",", ""))
    pp2 = int(facts["pp2_kv"].replace(",", ""))
    assert pp2 == 2 * tp16  # one KV head on half the layers against one head (replicated) on all of them


def test_pool_sizing_defaults():
    out = outputs(SIZING)
    assert out["prefill_s"]["text"] == "81.8 ms"
    assert out["prefill_replicas"]["value"] == 2  # ceil(10 x 0.0818 / 0.7)
    assert out["decode_batch"]["value"] == 256  # vLLM's max_num_seqs binds before the 50 ms target
    assert out["decode_replicas"]["value"] == 1
    assert out["gpus_split"]["value"] == 12
    assert out["colocated_replicas"]["value"] == 2
    assert out["stall_s"]["value"] > 10 * 0.031  # a step full of prefill stalls every sequence
    assert out["kv_transfer"]["text"] == "336 MB per request, 1.75 ms over 4 × 48 GB/s"


def test_pool_sizing_follows_its_formula():
    args = {"rate_per_s": 37.0, "prompt_tokens": 3000, "output_tokens": 400, "busy_max": 0.6}
    out = outputs(SIZING, **args)
    coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    prefill = ttft_s(coef, prompt_tokens=3000, chunk_tokens=3000)
    assert out["prefill_s"]["value"] == pytest.approx(prefill, rel=1e-6)
    assert out["prefill_replicas"]["value"] == math.ceil(37 * prefill / 0.6)


def test_long_prompts_grow_the_prefill_pool_and_shrink_the_decode_batch():
    chat = outputs(SIZING, rate_per_s=5)
    docs = outputs(SIZING, rate_per_s=5, prompt_tokens=16000, output_tokens=500)
    assert docs["prefill_replicas"]["value"] > chat["prefill_replicas"]["value"]
    assert docs["decode_batch"]["value"] < chat["decode_batch"]["value"]
    assert "KV room" in docs["decode_batch"]["text"]


@settings(max_examples=15, deadline=None)
@given(rate=st.floats(0.1, 200), busy=st.floats(0.1, 1.0))
def test_more_traffic_never_needs_fewer_replicas(rate, busy):
    low = framework.call(SIZING, {"rate_per_s": rate, "busy_max": busy})["outputs"]
    high = framework.call(SIZING, {"rate_per_s": min(500, rate * 2), "busy_max": busy})["outputs"]
    for key in ("prefill_replicas", "decode_replicas", "gpus_split"):
        assert high[key]["value"] >= low[key]["value"] >= 1


def test_the_stall_chart_rises_with_prefill_tokens():
    figure = framework.call(SIZING, {})["figures"]["stall"]
    ys = figure["data"][0]["y"]
    assert ys == sorted(ys) and ys[-1] > 20 * ys[0]


@pytest.mark.parametrize("args, field", [
    ({"itl_target_ms": 5}, "itl_target_ms"),  # one sequence's step takes longer than that
    ({"rate_per_s": 0}, "rate_per_s"),
    ({"busy_max": 1.5}, "busy_max"),
])
def test_pool_sizing_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(SIZING, args)
    assert caught.value.field == field
    assert field in str(caught.value)


def test_split_layouts_use_calc_parallel():
    r = step.split_layouts()
    pp = r["pp"]
    model, gpu = get_model("llama-3.1-405b"), get_gpu("h100-sxm-80gb")
    full = decode_step(step_coefficients(model, gpu, tp=8), batch=32, context_tokens=8192)
    hop = step.INTER_SERVER_LATENCY_S + 32 * model.hidden_size * 2 / step.NIC_BYTES_PER_S
    assert pp["itl_s"] == pytest.approx(pipeline_step_time_s(full["time_s"] / 2, 2, 1, hop_s=hop))
    assert pp["bubble"] == pipeline_bubble_fraction(2, 4)
    tp = r["tp"]
    one = allreduce_time_s(64 * model.hidden_size * 2, 16, step.NIC_BYTES_PER_S, latency_s=step.INTER_SERVER_LATENCY_S)
    assert tp["allreduce_s"] == pytest.approx(one)
    assert tp["decode_parts_s"]["all-reduce across servers"] == pytest.approx(252 * one)


@settings(max_examples=10, deadline=None)
@given(link=st.floats(5, 800))
def test_a_faster_network_never_slows_tp_across_servers(link):
    slow = step.split_layouts(inter_server_bytes_per_s=link * 1e9)["tp"]["itl_s"]
    fast = step.split_layouts(inter_server_bytes_per_s=link * 2e9)["tp"]["itl_s"]
    assert fast <= slow


def test_tp_or_pp_defaults_and_table():
    view = framework.call(SPLIT, {})
    assert view["outputs"]["itl_tp_s"]["text"] == "60.1 ms"
    assert view["outputs"]["itl_pp_s"]["text"] == "49.9 ms"
    assert view["tables"]["layouts"]["columns"] == ["", "TP 16 across servers", "TP 8 × PP 2: pipeline across servers"]
    assert [t["name"] for t in view["figures"]["decode"]["data"]] == [
        "math and memory", "all-reduce in a server", "all-reduce across servers", "pipeline hops"]


def test_three_servers_rule_out_tp24_but_not_the_pipeline():
    out = outputs(SPLIT, servers=3)
    assert out["itl_tp_s"]["text"] == "not possible"
    assert out["note"]["text"].startswith("TP 24 is not possible")
    assert outputs(SPLIT)["note"]["text"] == "both possible: TP 16 across servers, or TP 8 × PP 2"
    assert out["itl_pp_s"]["value"] > 0


def test_one_server_shows_one_layout():
    view = framework.call(SPLIT, {"servers": 1, "weights": "fp8"})
    assert view["tables"]["layouts"]["columns"] == ["", "TP 8 in one server"]
    assert view["outputs"]["itl_tp_s"]["value"] == view["outputs"]["itl_pp_s"]["value"]


@pytest.mark.parametrize("args, field", [
    ({"servers": 1}, "servers"),  # 405B in bf16 does not fit one server of eight H100s
    ({"gpus_per_server": 3}, "gpus_per_server"),
    ({"servers": 9}, "servers"),
])
def test_tp_or_pp_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(SPLIT, args)
    assert caught.value.field == field
