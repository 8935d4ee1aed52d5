"""calc.latency_fit: the engine profiles' constants are a fresh joint fit on calibration rows only."""

import math

import pytest

from calc import engine_profiles, latency_fit
from calc.errors import CalcError
from calc.latency_accuracy import load_rows, predict_row, source_of
from tests.once import computed_once, reused_across_runs


def _fresh_fit() -> dict:
    return latency_fit.fit()


# About 20 CPU s, so computed on first use (not at every xdist worker's collection), and reused by a later
# local run while calc's sources and data are unchanged (never in CI): tests/once.py.
FRESH = computed_once(reused_across_runs("latency-fit-joint", _fresh_fit))
ROWS = {r["id"]: r for r in load_rows()}


def test_the_stored_constants_equal_a_fresh_fit():
    assert latency_fit._terms_only(FRESH) == latency_fit.stored()


def test_every_engine_is_fitted_on_all_of_its_calibration_rows_and_only_those():
    for key, terms in FRESH.items():
        fitted_on = terms["_fit"]["rows"]
        assert fitted_on == [r["id"] for r in load_rows() if r["role"] == "calibration"
                             and r["inputs"]["engine_profile"] == key]
        assert all(ROWS[i]["role"] == "calibration" for i in fitted_on)


def test_a_calibration_role_needs_three_rows_from_two_sources_else_it_is_an_assumption():
    for key, terms in FRESH.items():
        for term in engine_profiles.TERMS:
            e = terms[term]
            behind = [ROWS[i] for i in terms["_fit"]["rows"] if latency_fit.rows_behind(term, ROWS[i])]
            sources = {source_of(r) for r in behind}
            if e["role"] == "calibration":
                assert len(behind) >= latency_fit.MIN_ROWS and len(sources) >= latency_fit.MIN_SOURCES, (key, term)
                assert e["rows"] == len(behind) and e["sources"] == sorted(sources)
            else:
                assert e["role"] == "assumption" and e["source"], (key, term)
    # Only vLLM has two sources; the other engines' terms are assumptions, said so.
    assert all(FRESH["vllm"][t]["role"] == "calibration" for t in engine_profiles.TERMS)
    for key in ("vllm-0.6-multistep", "sglang-0.3", "nim-trtllm"):
        assert all(FRESH[key][t]["role"] == "assumption" for t in engine_profiles.TERMS)
        assert any("one source" in FRESH[key][t]["source"] for t in engine_profiles.TERMS)


def test_a_term_no_row_can_identify_is_inherited_and_a_sourced_zero_stays_zero():
    # NIM runs only on two GPUs: its step and tensor-parallel costs cannot be told apart, so the latter is vLLM's.
    nim = FRESH["nim-trtllm"]
    assert nim["tp_step_overhead_s"]["value"] == FRESH["vllm"]["tp_step_overhead_s"]["value"]
    assert "inherited from engine profile 'vllm'" in nim["tp_step_overhead_s"]["source"]
    assert "tp_step_overhead_s" not in nim["_fit"]["free"]
    for key in latency_fit.ZERO:
        for term, why in latency_fit.ZERO[key].items():
            assert FRESH[key][term]["value"] == 0.0 and FRESH[key][term]["source"] == f"0: {why}"


def test_the_joint_fit_is_a_least_squares_optimum_no_term_moves_lower():
    # Moving any fitted vLLM term by 10% either way raises the sum of squared log errors.
    rows = latency_fit.calibration_rows("vllm")
    best = engine_profiles.get_profile("vllm")

    def loss(profile):
        return math.fsum(v * v for v in latency_fit._residuals(rows, profile))

    at_best = loss(best)
    for term in FRESH["vllm"]["_fit"]["free"]:
        for factor in (0.9, 1.1):
            assert loss(best.with_terms(**{term: getattr(best, term) * factor})) > at_best, (term, factor)


def test_the_fitted_vllm_terms_are_positive_and_each_term_says_its_uncertainty():
    vllm = FRESH["vllm"]
    assert 0.0002 < vllm["step_overhead_s"]["value"] < 0.005  # issue 18: 1.9-2.5 ms above the roofline at TP1, batch 8
    # Each GPU beyond the first costs less than the one-GPU batch-8 residual (its step cost and 8 sequences' cost).
    assert 0 < vllm["tp_step_overhead_s"]["value"] < vllm["step_overhead_s"]["value"] + 8 * vllm["seq_overhead_s"]["value"]
    # Between LMDeploy's 0.05 ms (7B TP1) and SGLang's 0.2 ms per extra sequence (issue 18).
    assert 0.00005 < vllm["seq_overhead_s"]["value"] < 0.0002
    assert all(0 < terms["request_overhead_s"]["value"] < 0.1 for terms in FRESH.values())
    for key, terms in FRESH.items():
        spare = len(terms["_fit"]["rows"]) > len(terms["_fit"]["free"])
        for term in terms["_fit"]["free"]:
            se = terms[term]["standard_error_s"]
            # A standard error from the Jacobian where there are more rows than fitted terms, else none.
            assert (se is not None and se > 0) if spare else se is None, (key, term)
    # Beside it, the leave-one-source-out fits (where a fold's rows identify the term).
    from calc import latency_loso

    spread = latency_loso.term_spread(latency_loso.stored())
    # One value per source with vLLM rows: refitted without either of its two calibration sources, and the full
    # fit's value where the left-out source has no calibration row (Lambda's vLLM 0.5.4 rows are validation only).
    data = latency_loso.stored()
    vllm_sources = {r["source"] for r in data["rows"] if r["engine"] == "vllm"}
    calibration_sources = {r["source"] for r in data["rows"] if r["engine"] == "vllm" and r["role"] == "calibration"}
    assert len(calibration_sources) == 2 and len(vllm_sources) > 2
    assert len(spread["vllm"]["step_overhead_s"]) == len(vllm_sources)
    held_out = {data["folds"][s]["vllm"]["step_overhead_s"] for s in calibration_sources}
    assert FRESH["vllm"]["step_overhead_s"]["value"] not in held_out  # each refit without a source moves the term
    assert all(values for values in spread["vllm"].values())


def test_the_fit_residuals_are_small_on_every_vllm_calibration_row():
    assert max(abs(v) for v in FRESH["vllm"]["_fit"]["log_residuals"]) < 0.1
    for rid, residual in zip(FRESH["vllm"]["_fit"]["rows"], FRESH["vllm"]["_fit"]["log_residuals"]):
        assert math.log(1 + predict_row(ROWS[rid]).error) == pytest.approx(residual, abs=1e-3)


def test_a_validation_row_or_another_engines_row_is_refused():
    vllm = engine_profiles.get_profile("vllm")
    with pytest.raises(CalcError) as err:
        latency_fit._predict(ROWS["vllm-nightly-latency-mixtral8x7b-tp2-h200"], vllm)
    assert err.value.field == "role"
    with pytest.raises(CalcError) as err:
        latency_fit._predict(ROWS["nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-ttft"], vllm)
    assert err.value.field == "engine"


def test_leaving_a_source_out_removes_its_rows_from_every_fit():
    rows = latency_fit.calibration_rows("vllm", exclude_source="vLLM nightly benchmark")
    assert rows and all(source_of(r) != "vLLM nightly benchmark" for r in rows)
    assert latency_fit.calibration_rows("sglang-0.3", exclude_source="SGLang benchmark_vllm_060") == []


def test_the_fit_leaves_the_max_throughput_efficiency_alone():
    from calc.roofline import CALIBRATED, calibrate

    fit = calibrate(compute_grid=[CALIBRATED.compute], memory_grid=[CALIBRATED.memory], overhead_grid_s=[0.0])
    assert fit["efficiency"].step_overhead_s == CALIBRATED.step_overhead_s == 0.0
    assert engine_profiles.efficiency_for(engine_profiles.get_profile("vllm")).compute == CALIBRATED.compute


def test_the_stored_profile_prices_the_per_sequence_cost_in_the_simulators_steps():
    from calc.sim.hardware import replica_hardware
    from calc.sim.scenario import Scenario

    hw = replica_hardware(Scenario())  # the lesson's replica: vLLM, Llama 3.1 70B, TP4 H100
    seq_s = engine_profiles.get_profile("vllm").seq_overhead_s
    price = hw.price_step
    args = dict(new_tokens=64, kv_tokens_read=64 * 1152, attention_token_pairs=64 * 1152)
    assert price(sequences=64, **args) - price(**args) == pytest.approx(64 * seq_s, rel=1e-9)
    assert price.decode(64)(64 * 1152) == price(sequences=64, **args)
