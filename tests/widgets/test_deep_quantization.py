"""Deep dive "Quantization": Mistral-7B from 14.5 GB to 3.6 GB term by term, NF4 levels, rounding error, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import quantization
from calc.errors import CalcError
from calc.widgets import deep_quantization as page
from calc.widgets import framework


def test_workshop_figures_and_the_terms_a_checkpoint_adds():
    f = page.facts()
    assert (f["bf16"], f["int4_nominal_short"]) == ("14.5 GB", "3.6 GB")   # the workshop's figures
    assert (f["int4_payload"], f["int4_scales"], f["kept_16bit"], f["int4_total"]) == \
        ("3.49 GB", "136 MB", "525 MB", "4.15 GB")
    assert (f["users_bf16"], f["users_int8"], f["users_int4"]) == ("7", "20", "26")
    assert (f["lesson_fp8_speedup"], f["lesson_fp8_kv_gain"]) == ("1.78", "1.52")
    assert (f["fp8_70b_loss"], f["int4_8b_loss"]) == ("0.11", "1.75")


def test_formats_widget_defaults():
    view = framework.call("deep_quantization.formats", {})
    out = view["outputs"]
    assert out["int4_total"]["text"] == "4.15 GB"
    assert out["users"]["text"] == "7 → 26"
    rows = {r[0]: r for r in view["tables"]["formats"]["rows"]}
    assert rows["int4"][5] == "not published for this model" and rows["bf16"][5] == "reference"
    llama = framework.call("deep_quantization.formats", {"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb", "tp": "4"})
    rows = {r[0]: r for r in llama["tables"]["formats"]["rows"]}
    assert rows["fp8"][5] == "-0.11 points"


def test_nf4_levels_match_qlora():
    levels = quantization.nf4_levels()
    assert len(levels) == 16 and levels[0] == -1.0 and levels[-1] == 1.0 and 0.0 in levels
    assert [round(v, 4) for v in levels[8:11]] == [0.0796, 0.1609, 0.2461]


def test_nf4_beats_int4_on_normal_weights():
    assert quantization.rounding_error("nf4")["relative_rms_error"] < quantization.rounding_error("int4")["relative_rms_error"]
    assert quantization.rounding_error("int8")["relative_rms_error"] < 0.01


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=64),
       scheme=st.sampled_from(["int8", "int4"]))
def test_absmax_error_is_at_most_half_a_step(values, scheme):
    stored, scale = quantization.quantize_group(values, scheme)
    for w, s in zip(values, stored):
        assert abs(w - s) <= scale / 2 + 1e-5


@pytest.mark.parametrize("args, field", [({"group_size": "100"}, "group_size"), ({"tp": "3"}, "tp"),
                                         ({"context_tokens": "0"}, "context_tokens")])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as error:
        framework.call("deep_quantization.formats", args)
    assert error.value.field == field


def test_rounding_rejects_a_bad_scheme():
    with pytest.raises(CalcError) as error:
        framework.call("deep_quantization.rounding", {"scheme": "fp4"})
    assert error.value.field == "scheme"


def test_rounding_facts_on_the_page():
    f = page.facts()
    assert (f["int4_error"], f["nf4_error"], f["int8_error"], f["int4_zero_share"]) == ("10.6%", "9.0%", "0.6%", "14%")
    assert (f["sample_groups"], f["sample_group_size"], f["sample_weights"]) == ("200", "64", "12,800")


def test_normal_sample_is_the_gauss_stream():
    import random

    gauss = random.Random(7).gauss
    assert quantization.normal_sample(1001, seed=7) == [gauss(0.0, 1.0) for _ in range(1001)]
    assert quantization.normal_sample(0) == []


@settings(max_examples=200, deadline=None)
@given(st.lists(st.floats(-1, 1, allow_nan=False), min_size=1, max_size=50))
def test_nf4_nearest_level_by_bisection_is_the_nearest_level(scaled):
    levels = quantization.nf4_levels()
    for x, i in zip(scaled, quantization._nf4_indices(scaled)):
        assert abs(levels[i] - x) == min(abs(level - x) for level in levels)


@pytest.mark.parametrize("group_size, groups, seed", [(16, 10, 0), (2, 30, 3), (100, 3, 11)])
def test_shared_sample_errors_equal_quantizing_group_by_group(group_size, groups, seed):
    # The slow way: quantize_group on each group (its output is rounded to 6 decimals for display).
    import math

    weights = quantization.normal_sample(group_size * groups, seed)
    fast = quantization.rounding_errors(group_size=group_size, groups=groups, seed=seed)
    for scheme in quantization.ROUNDING_SCHEMES:
        stored = []
        for start in range(0, len(weights), group_size):
            stored += quantization.quantize_group(weights[start:start + group_size], scheme)[0]
        error = math.sqrt(math.fsum((w - s) ** 2 for w, s in zip(weights, stored)) / math.fsum(w * w for w in weights))
        assert fast[scheme]["relative_rms_error"] == pytest.approx(error, rel=1e-5)
        assert fast[scheme]["zero_share"] == sum(1 for s in stored if s == 0) / len(weights)
        assert quantization.rounding_error(scheme, group_size=group_size, groups=groups, seed=seed) == fast[scheme]


@pytest.mark.parametrize("group_size", [2, 63, 64, 65, 128, 1000, 1024])
def test_the_widget_prices_about_12800_weights_at_most(group_size):
    groups = quantization.sample_groups(group_size)
    assert groups == quantization.SAMPLE_GROUPS if group_size <= 64 else groups < quantization.SAMPLE_GROUPS
    assert groups * group_size < quantization.SAMPLE_WEIGHTS + group_size
    view = framework.call("deep_quantization.rounding", {"group_size": group_size})
    expected = quantization.rounding_errors(group_size=group_size, groups=groups)["int4"]["relative_rms_error"]
    assert view["outputs"]["relative_rms_error"]["value"] == pytest.approx(expected, rel=1e-8)
    assert len(view["tables"]["group"]["rows"]) == min(group_size, 16)


def test_int4_error_grows_with_the_group_as_the_page_says():
    at = {g: framework.call("deep_quantization.rounding", {"group_size": g})["outputs"]["relative_rms_error"]["text"]
          for g in (64, 1024)}
    assert at == {64: "10.6%", 1024: "13.5%"}
