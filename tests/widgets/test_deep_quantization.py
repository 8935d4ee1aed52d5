"""Deep dive "Quantization": Mistral-7B from 14.5 GB to 3.6 GB term by term, NF4 levels, rounding error, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import deep_quantization as page
from calc.widgets import framework


def test_workshop_figures_and_the_terms_a_checkpoint_adds():
    f = page.facts()
    assert (f["bf16"], f["int4_nominal_short"]) == ("14.5 GB", "3.6 GB")   # seeds/003
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
    levels = page.nf4_levels()
    assert len(levels) == 16 and levels[0] == -1.0 and levels[-1] == 1.0 and 0.0 in levels
    assert [round(v, 4) for v in levels[8:11]] == [0.0796, 0.1609, 0.2461]


def test_nf4_beats_int4_on_normal_weights():
    assert page.rounding_error("nf4")["relative_rms_error"] < page.rounding_error("int4")["relative_rms_error"]
    assert page.rounding_error("int8")["relative_rms_error"] < 0.01


@settings(max_examples=60, deadline=None)
@given(values=st.lists(st.floats(-100, 100, allow_nan=False), min_size=1, max_size=64),
       scheme=st.sampled_from(["int8", "int4"]))
def test_absmax_error_is_at_most_half_a_step(values, scheme):
    stored, scale = page.quantize_group(values, scheme)
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
