"""The plan request: presets built from the lesson's own definitions, validation naming field and range, traces."""

from __future__ import annotations

import pytest

from calc import lesson
from calc.cost import ITL_TARGET_S
from calc.errors import CalcError
from calc.incident import TTFT_ALERT_S
from calc.plan import presets
from calc.plan.inputs import OwnedGPU, PlanRequest, read_trace, request_from_dict, trace_rates, TraceRow
from calc.plan.prices import gpu_hour_price
from calc.sim import presets as sim_presets


def test_lesson_preset_is_the_running_example_at_its_ramp_peak():
    r = presets.request("lesson")
    phases = sim_presets.load_data(presets.LESSON_TRAFFIC_PRESET)["fleet"]["traffic"]
    assert r.peak_rate_per_s == max(p.get("end_rate_per_s", p["rate_per_s"]) for p in phases) == 20
    assert 2 < r.mean_rate_per_s < r.peak_rate_per_s  # the ramp spends most of its time below the peak
    assert (r.model, r.classes[0].prompt_tokens, r.classes[0].output_tokens) == \
        (lesson.MODEL, lesson.PROMPT_TOKENS, lesson.ANSWER_TOKENS)
    assert (r.targets.ttft_p99_s, r.targets.tpot_p99_s) == (TTFT_ALERT_S, ITL_TARGET_S)
    base = presets.baseline("lesson")
    assert (base["gpu"], base["tp"], base["weights"]) == (lesson.GPU, lesson.TP, lesson.WEIGHTS)


def test_service_presets_take_step20s_classes():
    data = sim_presets.load_data(presets.POOLS_PRESET)
    chat = presets.request("chat")
    doc = presets.request("long-document")
    batch = presets.request("batch")
    total = data["workload"]["rate_per_s"]
    assert chat.peak_rate_per_s == pytest.approx(total * 0.98)
    assert doc.classes[0].prompt_tokens == data["workload"]["classes"][1]["prompt_tokens"] and doc.peak_rate_per_s == pytest.approx(total * 0.08)
    assert batch.classes[0].output_tokens == 1000 and batch.targets.tpot_p99_s > chat.targets.tpot_p99_s


@pytest.mark.parametrize("data, field, words", [
    ({"peak_rate_per_s": 0}, "peak_rate_per_s", "between 0.001 and 100000"),
    ({"peak_rate_per_s": 2, "mean_rate_per_s": 3}, "mean_rate_per_s", "at most peak_rate_per_s"),
    ({"targets": {"tpot_p99_s": -1}}, "tpot_p99_s", "between 0.001 and 3600"),
    ({"targets": {"p999": 1}}, "targets", "unknown target"),
    ({"gpus": ["h100"]}, "gpus", "catalog GPUs"),
    ({"gpu_budget": 0}, "gpu_budget", "between 1 and 100000"),
    ({"weights": ["int3"]}, "weights", "one of bf16"),
    ({"speculation_acceptance": 1.5}, "speculation_acceptance", "between 0 and 0.99"),
    ({"owned": {"h200": {"purchase_usd": 1, "lifetime_years": 0, "power_w": 1, "usd_per_kwh": 0}}},
     "owned.h200.lifetime_years", "between 0.25 and 30"),
    ({"colour": "red"}, "colour", "unknown key"),
    ({"model": "no-such-model"}, None, "no-such-model"),
])
def test_bad_requests_name_the_field_and_range(data, field, words):
    with pytest.raises(CalcError) as info:
        request_from_dict(data)
    assert words in str(info.value)
    if field is not None:
        assert info.value.field == field


def test_owned_gpu_price_is_depreciation_plus_power():
    owned = OwnedGPU(purchase_usd=25_000, lifetime_years=5, power_w=700, usd_per_kwh=0.15, pue=1.3)
    expected = 25_000 / (5 * 8760) + 0.7 * 1.3 * 0.15
    assert owned.usd_per_hour() == pytest.approx(expected)
    req = request_from_dict({"owned": {"h100-sxm-80gb": {"purchase_usd": 25_000, "lifetime_years": 5, "power_w": 700,
                                                         "usd_per_kwh": 0.15, "pue": 1.3}}})
    price = gpu_hour_price(req, "h100-sxm-80gb")
    assert price["basis"] == "owned" and price["usd_per_gpu_hour"] == pytest.approx(expected)
    # a given price wins over the catalog's dated listing, and an unpriced GPU stays unpriced
    given = request_from_dict({"prices_usd_per_gpu_hour": {"h100-sxm-80gb": 2.0}})
    assert gpu_hour_price(given, "h100-sxm-80gb")["usd_per_gpu_hour"] == 2.0
    assert gpu_hour_price(PlanRequest(), "h200") is None


def test_trace_csv_rates_and_means():
    rows = ["arrival_s,prompt_tokens,answer_tokens,prefix_group,prefix_tokens"]
    rows += [f"{i * 0.25},{1000 + i % 2 * 200},{100},{'a' if i % 2 else ''},{500 if i % 2 else 0}" for i in range(400)]
    req = request_from_dict({"trace": read_trace("\n".join(rows))})
    assert req.peak_rate_per_s == pytest.approx(4.0, rel=0.02) and req.mean_rate_per_s == pytest.approx(4.0, rel=0.01)
    assert req.prompt_answer_means() == (1100.0, 100.0)
    assert req.shared_prefix_tokens() == 250.0
    with pytest.raises(CalcError, match="trace line 3: answer_tokens is missing"):
        read_trace("arrival_s,prompt_tokens,answer_tokens\n0,1,2\n1,2,")


def test_trace_peak_is_the_busiest_minute():
    calm = [TraceRow(t * 1.0, 10, 10) for t in range(120)]          # 1 request/s for two minutes
    burst = [TraceRow(120 + t * 0.1, 10, 10) for t in range(600)]   # then 10 requests/s for a minute
    mean, peak = trace_rates(calm + burst)
    assert peak == pytest.approx(10, rel=0.02)
    assert mean == pytest.approx(719 / 179.9, rel=0.01)
