"""Roofline: the calibration row within 25%, held-out validation, monotone step times, FLOP/byte counts, bad input."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import MODELS, get_gpu, get_model
from calc.errors import CalcError
from calc.memory import kv_bytes_per_token_per_gpu, weight_bytes
from calc.roofline import (
    CALIBRATED, CALIBRATION_ROW, CALIBRATION_SETUP, VALIDATION_ROWS, Efficiency, arithmetic_intensity, calibrate,
    calibration_report, compute_dtype, decode_step, itl_s, max_throughput, prefill_attention_pairs, prefill_chunk,
    ridge_point_flops_per_byte, steady_state_step, step_coefficients, ttft_s,
)

H100 = get_gpu("h100-sxm-80gb")
C70 = step_coefficients("llama-3.1-70b", H100, tp=4)
C8 = step_coefficients("llama-3.1-8b", H100)
MIXTRAL = step_coefficients("mixtral-8x7b", H100, tp=2)


# ---- calibration: fitted on the TensorRT-LLM row only, reproduced within 25% -------------

def test_calibration_row_is_the_published_one():
    assert CALIBRATION_ROW == ((128, 128, 28_312), (1000, 1000, 15_220), (2048, 2048, 9_305), (20000, 2000, 1_351))
    assert (CALIBRATION_SETUP["model"], CALIBRATION_SETUP["gpu"], CALIBRATION_SETUP["weights"]) == (
        "llama-3.1-8b", "h100-sxm-80gb", "fp8")
    assert "TensorRT-LLM" in CALIBRATED.source and "only" in CALIBRATED.source


def test_calibration_row_reproduced_within_25_percent():
    report = calibration_report()
    assert [(r["input_tokens"], r["output_tokens"]) for r in report] == [(i, o) for i, o, _ in CALIBRATION_ROW]
    for r in report:
        assert 0.75 <= r["ratio"] <= 1.25, r
    # In fact the fit is much closer than the bound asks.
    assert max(abs(math.log(r["ratio"])) for r in report) < 0.06


def test_the_fit_reproduces_the_stored_constants():
    fit = calibrate()
    e = fit["efficiency"]
    assert (e.compute, e.memory, e.step_overhead_s) == (CALIBRATED.compute, CALIBRATED.memory, CALIBRATED.step_overhead_s)
    assert fit["loss"] < 0.01


def test_held_out_rows_validate_without_fitting():
    report = calibration_report(validation=True)
    assert len(report) == len(VALIDATION_ROWS)
    assert {r["gpu"] for r in report} == {"h100-sxm-80gb", "h200"}
    for r in report:
        assert 0.8 <= r["ratio"] <= 1.2, r


def test_calibration_batches_follow_kv_room_and_the_running_cap():
    by_shape = {(r["input_tokens"], r["output_tokens"]): r for r in calibration_report()}
    assert by_shape[(128, 128)]["batch"] == 4096  # trtllm-bench's cap binds: 1.06M tokens / 256 > 4,096
    assert by_shape[(20000, 2000)]["batch"] == 1_064_480 // 22_000
    assert by_shape[(128, 128)]["bound"] == "compute" and by_shape[(2048, 2048)]["bound"] == "memory"


# ---- FLOPs, bytes, intensity, ridge ---------------------------------------------------

def test_flops_per_token_is_two_per_active_parameter_with_the_head():
    m = MODELS["llama-3.1-8b"]
    other = m.other_params()
    expected = 2 * (m.total_params - other["embed_tokens"] - other["norms"])
    assert C8.flops(new_tokens=1, attention_token_pairs=0) == expected
    assert C8.attention_flops_per_pair == 4 * 32 * 32 * 128


def test_moe_uses_active_params_for_flops_and_touched_experts_for_bytes():
    mixtral = MODELS["mixtral-8x7b"]
    per_token = MIXTRAL.linear_flops_per_token * 2  # back to the whole replica
    head = mixtral.vocab_size * mixtral.hidden_size
    active_linear = mixtral.active_params - mixtral.other_params()["embed_tokens"] - head - mixtral.other_params()["norms"] - mixtral.other_params()["router"]
    assert math.isclose(per_token, 2 * (active_linear + head), rel_tol=1e-9)
    one, many = MIXTRAL.weight_bytes_read(1), MIXTRAL.weight_bytes_read(4096)
    total = (weight_bytes(mixtral, "bf16").total_bytes - 2 * mixtral.other_params()["embed_tokens"]) / 2
    assert one < 0.35 * total  # 2 of 8 experts plus attention
    assert math.isclose(many, total, rel_tol=1e-6)  # every expert touched


def test_ridge_points():
    assert round(ridge_point_flops_per_byte("h100-sxm-80gb", "bf16")) == 295
    assert round(ridge_point_flops_per_byte("h100-sxm-80gb", "fp8")) == 591
    assert round(ridge_point_flops_per_byte("a100-80gb", "bf16")) == 153


def test_decode_is_memory_bound_and_prefill_compute_bound():
    d = decode_step(C70, batch=1, context_tokens=1152)
    p = prefill_chunk(C70, chunk_tokens=1024)
    assert d["bound"] == "memory" and d["intensity_flops_per_byte"] < 2
    assert p["bound"] == "compute" and p["intensity_flops_per_byte"] > d["ridge_flops_per_byte"]
    assert arithmetic_intensity(d["flops"], d["bytes"]) == d["intensity_flops_per_byte"]


def test_decode_step_of_the_lesson_replica_reads_its_35_gb():
    d = decode_step(C70, batch=1, context_tokens=1152)
    weights_read = d["bytes"] - (1152 + 1) * kv_bytes_per_token_per_gpu(get_model("llama-3.1-70b"), 4)
    # 35.3 GB per GPU less the input embedding gathered row by row (2 x 128256 x 8192 / 4 bytes).
    assert round(weights_read / 1e9, 2) == round((35.28e9 - 2 * 128256 * 8192 / 4) / 1e9, 2)


def test_prefill_attention_pairs_are_quadratic():
    assert prefill_attention_pairs(1000) == 1000 * 1001 // 2
    assert prefill_attention_pairs(2000) > 3.9 * prefill_attention_pairs(1000)
    assert prefill_attention_pairs(10, sliding_window=4) == 1 + 2 + 3 + 4 * 7
    # chunking does not change the total
    assert prefill_attention_pairs(600) == prefill_attention_pairs(300) + prefill_attention_pairs(600, start_tokens=300)


def test_compute_dtype_follows_the_weights_and_the_gpu():
    assert compute_dtype("fp8", H100) == "fp8"
    assert compute_dtype("int4", H100) == "bf16"
    assert compute_dtype("nf4", H100) == "bf16"
    assert compute_dtype("fp8", get_gpu("a100-80gb")) == "bf16"  # no FP8 tensor cores: weight-only


def test_fp8_nearly_halves_the_decode_step():
    bf16 = itl_s(step_coefficients("llama-3.1-8b", H100), batch=1, context_tokens=1024)
    fp8 = itl_s(step_coefficients("llama-3.1-8b", H100, weights="fp8"), batch=1, context_tokens=1024)
    assert 1.7 < bf16 / fp8 < 2.0


def test_ttft_grows_faster_than_the_prompt_and_chunking_costs_a_little():
    short, long = ttft_s(C8, prompt_tokens=8192), ttft_s(C8, prompt_tokens=65536)
    assert long > 8 * short
    assert ttft_s(C8, prompt_tokens=65536, chunk_tokens=8192) >= long


def test_tensor_parallel_adds_all_reduce_and_splits_the_work():
    d = C70.breakdown(new_tokens=1, kv_tokens_read=1000, attention_token_pairs=1000)
    assert d["comm_s"] > 0 and C8.comm_s(1) == 0
    assert C70.allreduces_per_step == 160


def test_max_throughput_reports_what_limits_the_batch():
    c = step_coefficients("llama-3.1-8b", H100, weights="fp8", kv_dtype="fp8")
    r = max_throughput(c, input_tokens=128, output_tokens=128, kv_capacity_tokens=1_000_000, max_running=256)
    assert (r["batch"], r["limited_by"]) == (256, "max_running")
    r = max_throughput(c, input_tokens=2000, output_tokens=2000, kv_capacity_tokens=400_000, max_running=256)
    assert (r["batch"], r["limited_by"]) == (100, "kv_cache")


# ---- properties ----------------------------------------------------------------------

@settings(max_examples=200, deadline=None)
@given(
    model=st.sampled_from(sorted(MODELS)),
    new=st.integers(0, 20_000), kv=st.integers(0, 5_000_000), pairs=st.integers(0, 50_000_000),
    dn=st.integers(0, 5_000), dk=st.integers(0, 1_000_000), dp=st.integers(0, 10_000_000),
)
def test_step_time_never_falls_when_any_argument_grows(model, new, kv, pairs, dn, dk, dp):
    gpu = "h200" if model in ("deepseek-v3", "llama-3.1-405b") else "h100-sxm-80gb"
    tp = 8 if model in ("deepseek-v3", "llama-3.1-405b", "qwen2.5-72b", "llama-3.1-70b", "mixtral-8x7b") else 1
    c = step_coefficients(model, gpu, tp=tp)
    base = c.step_time_s(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs)
    assert c.step_time_s(new_tokens=new + dn, kv_tokens_read=kv, attention_token_pairs=pairs) >= base
    assert c.step_time_s(new_tokens=new, kv_tokens_read=kv + dk, attention_token_pairs=pairs) >= base
    assert c.step_time_s(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs + dp) >= base
    assert math.isfinite(base) and base >= 0


@settings(max_examples=150, deadline=None)
@given(batch=st.integers(1, 2048), context=st.integers(1, 200_000), db=st.integers(0, 512), dc=st.integers(0, 50_000))
def test_decode_step_never_falls_as_batch_or_context_grows(batch, context, db, dc):
    base = itl_s(C70, batch=batch, context_tokens=context)
    assert itl_s(C70, batch=batch + db, context_tokens=context) >= base
    assert itl_s(C70, batch=batch, context_tokens=context + dc) >= base


@settings(max_examples=100, deadline=None)
@given(batch=st.integers(1, 512), isl=st.integers(1, 20_000), osl=st.integers(1, 4_000))
def test_steady_state_is_finite_and_positive(batch, isl, osl):
    s = steady_state_step(C8, batch=batch, input_tokens=isl, output_tokens=osl)
    assert s["time_s"] > 0 and math.isfinite(s["output_tokens_per_s"])


# ---- bad input -----------------------------------------------------------------------

@pytest.mark.parametrize("kwargs, field", [
    ({"new_tokens": -1, "kv_tokens_read": 0, "attention_token_pairs": 0}, "new_tokens"),
    ({"new_tokens": 1, "kv_tokens_read": 1.5, "attention_token_pairs": 0}, "kv_tokens_read"),
    ({"new_tokens": 1, "kv_tokens_read": 0, "attention_token_pairs": float("nan")}, "attention_token_pairs"),
    ({"new_tokens": True, "kv_tokens_read": 0, "attention_token_pairs": 0}, "new_tokens"),
])
def test_step_rejects_bad_counts(kwargs, field):
    with pytest.raises(CalcError) as err:
        C8.step_time_s(**kwargs)
    assert err.value.field == field and field in str(err.value)


@pytest.mark.parametrize("call, field", [
    (lambda: step_coefficients("llama-3.1-70b", H100, tp=3), "tp"),
    (lambda: step_coefficients("llama-3.1-8b", H100, weights="fp4"), "weights"),
    (lambda: step_coefficients("llama-3.1-8b", H100, kv_dtype="int4"), "kv_dtype"),
    (lambda: step_coefficients("llama-3.1-8b", "rtx-2080"), "gpu"),
    (lambda: Efficiency(compute=1.5, memory=0.5, step_overhead_s=0), "compute"),
    (lambda: decode_step(C8, batch=0, context_tokens=10), "batch"),
    (lambda: prefill_chunk(C8, chunk_tokens=0), "chunk_tokens"),
    (lambda: ttft_s(C8, prompt_tokens=-5), "prompt_tokens"),
    (lambda: arithmetic_intensity(1.0, 0), "bytes_moved"),
    (lambda: max_throughput(C8, input_tokens=1000, output_tokens=1000, kv_capacity_tokens=100), "kv_capacity_tokens"),
    (lambda: calibrate(compute_grid=[]), "grid"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field


# ------------------------------------------------------------------ prefill-sized all-reduces (issue 18)

def test_the_prefill_allreduce_share_is_the_measured_two_stage_kernel():
    from calc.engine_profiles import ALLREDUCE_BUS_EFFICIENCY, ALLREDUCE_PREFILL_MEASURED_S
    from calc.parallel import allreduce_time_s

    assert ALLREDUCE_BUS_EFFICIENCY == pytest.approx(0.401, abs=0.001)
    # The alpha-beta model with that share gives back each measured time within 4%.
    for size, measured_s in ALLREDUCE_PREFILL_MEASURED_S.items():
        priced = allreduce_time_s(size, 4, 450e9 * ALLREDUCE_BUS_EFFICIENCY, latency_s=9.2e-6)
        assert priced == pytest.approx(measured_s, rel=0.04), size


def test_the_engine_prices_prefill_allreduces_slower_and_the_lesson_keeps_the_link_figure():
    from calc.engine_profiles import engine_coefficients

    engine = engine_coefficients("llama-3.1-70b", H100, tp=4)
    lesson = step_coefficients("llama-3.1-70b", H100, tp=4, allreduce_latency_s=engine.allreduce_latency_s)
    # Decode-sized (one-stage kernel, 8 tokens = 128 KiB) and NCCL-sized (8,192 tokens = 128 MiB): unchanged.
    assert engine.comm_s(8) == lesson.comm_s(8)
    assert engine.comm_s(8192) == lesson.comm_s(8192)
    # 256 tokens = 4 MiB: 160 all-reduces of 9.2 us + 6.29 MB at 180.5 GB/s, against 450 GB/s on the lesson's.
    assert engine.comm_s(256) * 1000 == pytest.approx(160 * (9.2e-3 + 6.291456e6 / 180.5e9 * 1000), rel=0.01)
    assert lesson.comm_s(256) * 1000 == pytest.approx(160 * (9.2e-3 + 6.291456e6 / 450e9 * 1000), rel=0.001)
    # The lesson's roofline and its dict stay as they were.
    assert "prefill_allreduce_bus_efficiency" not in C70.to_dict()
    assert C70.prefill_allreduce_max_bytes == 0.0


@pytest.mark.parametrize("gpu, tp", [("a100-40gb", 8), ("h100-sxm-80gb", 2), ("h100-pcie-80gb", 4)])
def test_no_measured_share_where_none_was_measured(gpu, tp):
    from calc.engine_profiles import engine_coefficients

    model = "llama-3.1-70b"
    engine = engine_coefficients(model, gpu, tp=tp)
    lesson = step_coefficients(model, gpu, tp=tp, allreduce_latency_s=engine.allreduce_latency_s)
    assert engine.comm_s(256) == lesson.comm_s(256)


@pytest.mark.parametrize("kwargs, field", [({"prefill_allreduce_bus_efficiency": 0.0}, "prefill_allreduce_bus_efficiency"),
                                           ({"prefill_allreduce_bus_efficiency": 1.5}, "prefill_allreduce_bus_efficiency"),
                                           ({"prefill_allreduce_max_bytes": -1}, "prefill_allreduce_max_bytes"),
                                           ({"prefill_allreduce_min_bytes": float("nan")}, "prefill_allreduce_min_bytes")])
def test_prefill_allreduce_terms_reject_bad_input(kwargs, field):
    with pytest.raises(CalcError) as info:
        step_coefficients("llama-3.1-70b", H100, tp=4, **kwargs)
    assert info.value.field == field


# ------------------------------------------------------------------ per-sequence step cost (issue 18)

def _engine_70b(seq_overhead_s=0.0001):
    eff = Efficiency(compute=0.51, memory=0.76, step_overhead_s=0.002, tp_step_overhead_s=0.0005,
                     seq_overhead_s=seq_overhead_s)
    return step_coefficients("llama-3.1-70b", H100, tp=4, efficiency=eff)


def test_each_scheduled_sequence_adds_its_cost_to_the_step():
    c = _engine_70b()
    args = dict(new_tokens=64, kv_tokens_read=64 * 1152, attention_token_pairs=64 * 1152)
    alone = c.step_time_s(**args)
    assert c.step_time_s(sequences=64, **args) - alone == pytest.approx(64 * 0.0001, rel=1e-9)
    assert c.breakdown(sequences=64, **args)["overhead_s"] == pytest.approx(0.002 + 3 * 0.0005 + 0.0064, rel=1e-12)
    # decode_step counts its batch: a batch of 64 pays 6.4 ms more than the same step priced without sequences.
    d = decode_step(c, batch=64, context_tokens=1152)
    assert d["time_s"] - alone == pytest.approx(0.0064, rel=1e-9)


def test_the_lessons_roofline_has_no_per_sequence_cost():
    args = dict(new_tokens=64, kv_tokens_read=64 * 1152, attention_token_pairs=64 * 1152)
    assert CALIBRATED.seq_overhead_s == 0.0
    assert C70.step_time_s(sequences=64, **args) == C70.step_time_s(**args)
    assert decode_step(C70, batch=64, context_tokens=1152)["time_s"] == C70.step_time_s(**args)


@settings(max_examples=60, deadline=None)
@given(st.integers(0, 8192), st.integers(0, 2_000_000), st.integers(0, 20_000_000), st.integers(0, 512))
def test_the_simulators_pricer_equals_the_roofline_bit_for_bit_with_sequences(new, kv, pairs, seqs):
    from calc.sim.hardware import step_pricer

    c = _engine_70b()
    price = step_pricer(c)
    exact = c.step_time_s(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs, sequences=seqs)
    assert price(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs, sequences=seqs) == exact
    assert price.positional(new, kv, pairs, seqs) == exact
    if new:
        decode_exact = c.step_time_s(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=kv, sequences=new)
        assert price.decode(new)(kv) == decode_exact


def test_the_engine_passes_each_steps_sequence_count():
    from calc.sim.engine import Replica
    from calc.sim.scheduler import SchedulerConfig
    from calc.sim.workload import Request

    seen = []

    def price(*, new_tokens, kv_tokens_read, attention_token_pairs, sequences=0):
        seen.append((new_tokens, sequences))
        return 0.01
    price.takes_sequences = True
    rep = Replica(SchedulerConfig(max_model_len=4096), kv_cache_blocks=1000, step_time_s=price)
    for rid in range(3):
        rep.submit(Request(rid, 0, 40, 3), 0)
    end = rep.start_step(0)
    rep.end_step(end)
    rep.start_step(end)
    # First step: three prompts of 40 tokens (three sequences); then three decoding sequences of one token each.
    assert seen == [(120, 3), (3, 3)]


@pytest.mark.parametrize("call, field", [
    (lambda: Efficiency(compute=0.5, memory=0.5, step_overhead_s=0, seq_overhead_s=-1e-6), "seq_overhead_s"),
    (lambda: Efficiency(compute=0.5, memory=0.5, step_overhead_s=0, seq_overhead_s=0.5), "seq_overhead_s"),
    (lambda: C8.step_time_s(new_tokens=1, kv_tokens_read=1, attention_token_pairs=1, sequences=-1), "sequences"),
    (lambda: C8.step_time_s(new_tokens=1, kv_tokens_read=1, attention_token_pairs=1, sequences=2.5), "sequences"),
])
def test_per_sequence_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field and field in str(err.value)


def test_the_pricer_refuses_a_bad_sequence_count_by_name():
    from calc.sim.hardware import step_pricer

    price = step_pricer(_engine_70b())
    with pytest.raises(CalcError) as err:
        price(new_tokens=8, kv_tokens_read=80, attention_token_pairs=80, sequences=-3)
    assert err.value.field == "sequences"


# ------------------------------------------------- the per-sequence cost is the serving path's (issue 18)

def _replicas(**keys):
    from calc.sim.hardware import replica_hardware
    from calc.sim.scenario import Scenario

    return tuple(replica_hardware(Scenario.from_dict({"frontend": f, **keys})) for f in ("api-server", "offline"))


@settings(max_examples=40, deadline=None)
@given(st.integers(1, 8192), st.integers(0, 2_000_000), st.integers(0, 20_000_000), st.integers(1, 512))
def test_an_offline_scenario_prices_no_per_sequence_cost_and_a_served_one_does_bit_for_bit(new, kv, pairs, seqs):
    from calc.engine_profiles import engine_coefficients, get_profile

    served, offline = _replicas()
    args = dict(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs)
    # The roofline with the engine's terms, with and without the per-sequence one.
    with_term = engine_coefficients("llama-3.1-70b", H100, tp=4)
    assert with_term.efficiency.seq_overhead_s == get_profile("vllm").seq_overhead_s > 0
    assert served.step_time_s(sequences=seqs, **args) == with_term.step_time_s(sequences=seqs, **args)
    # Offline: every count prices as the roofline's step with no sequence counted at all.
    assert offline.step_time_s(sequences=seqs, **args) == with_term.step_time_s(**args)
    assert offline.step_time_s(sequences=seqs, **args) == offline.step_time_s(**args)
    assert offline.price_step.decode(new)(kv) == with_term.step_time_s(new_tokens=new, kv_tokens_read=kv,
                                                                      attention_token_pairs=kv)
    assert served.step_time_s(sequences=seqs, **args) - offline.step_time_s(sequences=seqs, **args) == \
        pytest.approx(seqs * get_profile("vllm").seq_overhead_s, rel=1e-6)


def test_offline_keeps_every_other_engine_term_and_the_request_cost():
    served, offline = _replicas(model="llama-3.1-8b", tp=1)
    assert served.coefficients.efficiency.step_overhead_s == offline.coefficients.efficiency.step_overhead_s > 0
    assert offline.coefficients.efficiency.seq_overhead_s == 0.0
    assert served.request_overhead_s == offline.request_overhead_s > 0


def test_an_offline_run_is_faster_than_the_same_run_served_and_the_default_is_served():
    from calc.sim import simulate
    from calc.sim.scenario import Scenario

    base = {"model": "llama-3.1-8b", "tp": 1,
            "workload": {"arrival": "all-at-once", "requests": 64, "prompt_tokens": 128, "output_tokens": 64}}
    default = simulate(Scenario.from_dict(base)).summary
    served = simulate(Scenario.from_dict({**base, "frontend": "api-server"})).summary
    offline = simulate(Scenario.from_dict({**base, "frontend": "offline"})).summary
    assert default == served
    # 64 sequences decoding together: each step of the served run pays 64 x 138 us more.
    assert offline["throughput_output_tokens_per_s"] > 1.3 * served["throughput_output_tokens_per_s"]
    assert offline["output_tokens"] == served["output_tokens"]


@pytest.mark.parametrize("value", ["server", "", None, 1, "API-SERVER"])
def test_a_bad_frontend_is_refused_by_name(value):
    from calc.sim.scenario import Scenario

    with pytest.raises(CalcError) as err:
        Scenario.from_dict({"frontend": value})
    assert err.value.field == "frontend"
    assert "api-server, offline" in str(err.value)


def test_only_the_benchmark_throughput_rows_run_offline():
    from calc.latency_accuracy import frontend_of, load_rows, scenario_for

    rows = load_rows()
    offline = [r["id"] for r in rows if frontend_of(r) == "offline"]
    assert offline and all(i.startswith("vllm-nightly-throughput-") for i in offline)
    assert len(offline) == sum(1 for r in rows if r["id"].startswith("vllm-nightly-throughput-"))
    for r in rows:
        assert scenario_for(r).get("frontend", "api-server") == frontend_of(r)
    # Served at rate infinity is still served: the SGLang README's "offline" tables and Azure's QPS inf.
    assert frontend_of(next(r for r in rows if r["id"].endswith("offline-throughput"))) == "api-server"
