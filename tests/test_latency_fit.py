"""calc.latency_fit: the engine profiles' constants are a fresh fit on calibration rows only."""

import pytest

from calc import engine_profiles, latency_fit
from calc.errors import CalcError
from calc.latency_accuracy import load_rows

FRESH = latency_fit.fit()


def test_the_stored_constants_equal_a_fresh_fit():
    assert {k: {t: v[0] for t, v in terms.items()} for k, terms in FRESH.items()} == \
        {k: {t: v[0] for t, v in terms.items()} for k, terms in latency_fit.stored().items()}
    assert FRESH == latency_fit.stored()


def test_every_term_is_fitted_on_its_own_engines_calibration_row_or_inherited_and_said_so():
    rows = {r["id"]: r for r in load_rows()}
    for key, terms in FRESH.items():
        for term, (value, role, source) in terms.items():
            how, what = latency_fit.PLAN[key][term]
            if how == "row":
                assert role == "calibration" and what in source
                assert rows[what]["role"] == "calibration" and rows[what]["inputs"]["engine_profile"] == key
            else:
                assert role == "assumption" and value == FRESH[what][term][0] and what in source


def test_the_fitted_terms_are_positive_milliseconds():
    vllm = FRESH["vllm"]
    assert 0.0005 < vllm["step_overhead_s"][0] < 0.005  # issue 18: 1.9-2.5 ms above the roofline at TP1
    assert 0 < vllm["tp_step_overhead_s"][0] < vllm["step_overhead_s"][0]
    assert all(0 < terms["request_overhead_s"][0] < 0.1 for terms in FRESH.values())


def test_a_validation_row_or_another_engines_row_is_refused():
    rows = {r["id"]: r for r in load_rows()}
    vllm = engine_profiles.get_profile("vllm")
    with pytest.raises(CalcError) as err:
        latency_fit.fit_term(vllm, "step_overhead_s", rows["vllm-nightly-latency-llama8b-tp1-h200"])
    assert err.value.field == "role"
    with pytest.raises(CalcError) as err:
        latency_fit.fit_term(vllm, "request_overhead_s", rows["nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-ttft"])
    assert err.value.field == "engine"


def test_the_fit_leaves_the_max_throughput_efficiency_alone():
    from calc.roofline import CALIBRATED, calibrate

    fit = calibrate(compute_grid=[CALIBRATED.compute], memory_grid=[CALIBRATED.memory], overhead_grid_s=[0.0])
    assert fit["efficiency"].step_overhead_s == CALIBRATED.step_overhead_s == 0.0
    assert engine_profiles.efficiency_for(engine_profiles.get_profile("vllm")).compute == CALIBRATED.compute
