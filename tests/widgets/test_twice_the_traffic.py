"""Step 6: a saturated decode step is weights + the batch's KV + prefill work; the roofline places each kernel."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.roofline import decode_step, steady_state_step
from calc.widgets import framework
from calc.widgets import twice_the_traffic as step

ROOF = "twice_the_traffic.roofline"
COST = "twice_the_traffic.step_cost"


def test_roofline_defaults_decode_below_and_prefill_above_the_ridge():
    view = framework.call(ROOF, {})
    out = view["outputs"]
    assert out["ridge"]["text"] == "295 FLOP/B"  # 989 TFLOP/s / 3.35 TB/s
    assert out["achieved_ridge"]["text"] == "198 FLOP/B"
    assert out["decode_intensity"]["value"] == pytest.approx(154, abs=1)
    assert out["matmul_intensity"]["value"] == pytest.approx(256, abs=1)  # about the batch, in bf16
    assert out["attention_intensity"]["value"] == pytest.approx(8, abs=0.05)  # GQA: 64 query heads per 8 KV heads
    assert out["decode_intensity"]["value"] < out["ridge"]["value"] < out["prefill_intensity"]["value"]
    assert out["prefill_ms"]["text"] == "81.8 ms (compute-bound)"
    figure = view["figures"]["roofline"]
    roof = figure["data"][0]
    assert roof["x"][1] == pytest.approx(295.224, rel=1e-5) and roof["y"][1] == 989.0
    assert figure["layout"]["xaxis"]["type"] == "log" and figure["layout"]["yaxis"]["type"] == "log"
    # Every kernel point sits on or under the datasheet roof.
    for trace in figure["data"][2:]:
        x, y = trace["x"][0], trace["y"][0]
        assert y <= min(989.0, x * 3.35) * 1.0001, trace["name"]


def test_decode_points_move_with_batch_and_context():
    def intensity(**args):
        return framework.call(ROOF, args)["outputs"]["decode_intensity"]["value"]

    assert intensity(batch=1) == pytest.approx(1.02, abs=0.01)
    assert intensity(batch=1) < intensity(batch=64) < intensity(batch=256) < intensity(batch=1024)
    assert intensity(batch=8, context_tokens=32_768) == pytest.approx(8, abs=0.1)
    assert framework.call(ROOF, {"weights": "fp8"})["outputs"]["ridge"]["text"] == "591 FLOP/B"


def test_step_cost_split_adds_up_to_the_steady_state_step():
    out = framework.call(COST, {})["outputs"]
    assert out["step_ms"]["text"] == "111 ms"
    parts = sum(out[k]["value"] for k in ("weights_ms", "kv_ms", "prefill_ms", "comm_ms"))
    assert parts == pytest.approx(out["step_ms"]["value"], rel=1e-6)
    assert out["weights_ms"]["text"] == "17.6 ms" and out["kv_ms"]["text"] == "9.5 ms"
    assert out["prefill_tokens"]["value"] == 1_024  # 256 x 1,024 / 256
    assert out["tokens_per_s"]["text"] == "2,317 tokens/s"
    fp8 = framework.call(COST, {"weights": "fp8"})["outputs"]
    assert fp8["weights_ms"]["value"] == pytest.approx(out["weights_ms"]["value"] / 2, rel=0.01)


@settings(max_examples=25, deadline=None)
@given(batch=st.integers(1, 1024), prompt=st.integers(1, 8192), answer=st.integers(1, 2048))
def test_split_is_never_negative_and_sums_to_the_step(batch, prompt, answer):
    coef = step.replica_coefficients()
    split = step.cost_split(coef, batch=batch, prompt_tokens=prompt, answer_tokens=answer)
    assert all(v >= 0 for v in split.values())
    total = split["weights"] + split["kv"] + split["prefill"] + split["comm"]
    assert total == pytest.approx(split["step"], rel=1e-9)
    assert split["step"] == pytest.approx(
        steady_state_step(coef, batch=batch, input_tokens=prompt, output_tokens=answer)["time_s"])
    assert split["step"] >= decode_step(coef, batch=batch, context_tokens=prompt + answer // 2)["weights_s"]


def test_facts():
    f = step.facts()
    assert (f["ridge"], f["weights_floor_ms"], f["max_tokens_per_s_per_request"]) == ("295", "13.6 ms", "73.3")
    assert (f["decode1_intensity"], f["decode_full_intensity"], f["prefill_intensity"]) == ("1.02", "154", "1,029")
    assert f["split_step"] == "111 ms" and f["fp8_step"] == "66.4 ms"
    assert f["needed_tokens_per_s"] == "3,072 tokens/s"
    # The simulator agrees with the formula plus the engine's step costs within a few percent on throughput ...
    assert f["sim_running_max"] == "256" and f["sim_queue_max"] == "432"
    sim = float(f["sim_throughput"].split()[0].replace(",", ""))
    formula = float(f["steady_tokens_per_s"].split()[0].replace(",", ""))
    with_engine = float(f["engine_tokens_per_s"].split()[0].replace(",", ""))
    # ... once the formula pays the engine's own per-step costs as the simulated replica does; the bare roofline is
    # faster by those costs (fixed + per sequence, 38 ms at 256 sequences).
    assert sim == pytest.approx(with_engine, rel=0.05) and with_engine < sim * 1.05 < formula
    assert f["engine_overhead_ms"] == "26.8 ms" and f["engine_split_step"] == "137 ms"
    assert f["capped_queue_max"] == "649"


@pytest.mark.parametrize("name, args, field", [
    (ROOF, {"gpu": "l4"}, "tp"),              # the 70B's weights do not fit four L4s
    (ROOF, {"batch": 0}, "batch"),
    (ROOF, {"gpu": "tpu"}, "gpu"),
    (COST, {"answer_tokens": 0}, "answer_tokens"),
    (COST, {"weights": "int4"}, "weights"),
])
def test_bad_input_is_a_calc_error_naming_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args)
    assert caught.value.field == field
