"""Deep dive "The GPU memory equation": the workshop's Mistral-7B figures, the widget's defaults, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.units import GB
from calc.widgets import deep_memory_equation as page
from calc.widgets import framework

WIDGET = "deep_memory_equation.budget"


def test_workshop_figures():
    f = page.facts()
    assert f["weights_bf16"] == "14.5 GB"            # the workshop: 14.5 GB of 16-bit weights
    assert f["kv_per_token"] == "131,072 bytes"      # the workshop: 131 KB per token
    assert f["kv_per_token_kb"] == "131 KB"
    assert f["kv_per_user"] == "537 MB"              # 4,096 x 131,072 B
    assert (f["users_small_gpu"], f["users_big_gpu"], f["quiz_users"]) == ("7", "101", "50")
    assert f["kv_equals_weights_tokens"] == "110,500"


def test_default_widget_is_sixteen_users_on_an_l4():
    out = framework.call(WIDGET, {})["outputs"]
    assert out["weights_bytes"]["text"] == "14.5 GB"
    assert out["kv_bytes"]["value"] == 16 * 4096 * 131_072
    assert out["verdict"]["text"] == "does not fit: 4.47 GB short"
    assert out["max_users"]["value"] == 7
    assert out["max_context_tokens"]["value"] == (21.6 * GB - 14_483_464_192 - 3 * GB) // (16 * 131_072)


def test_whole_card_and_window():
    whole = framework.call(WIDGET, {"gpu": "h100-sxm-80gb", "gpu_memory_utilization": "1.0"})["outputs"]
    assert whole["max_users"]["value"] == 116
    windowed = framework.call(WIDGET, {"context_tokens": "32768", "honour_window": "true", "users": "1"})["outputs"]
    assert windowed["kv_bytes"]["value"] == 4096 * 131_072  # Mistral keeps its last 4,096 tokens only


def test_chart_lines_cross_the_gpu_where_users_stop_fitting():
    figure = framework.call(WIDGET, {})["figures"]["growth"]
    names = [t["name"] for t in figure["data"]]
    assert names[-1] == "L4 24GB: 90% of 24 GB"
    assert figure["data"][-1]["y"][0] == pytest.approx(21.6)


@pytest.mark.parametrize("field, value", [("users", "-1"), ("context_tokens", "0"), ("gpu", "rtx-2080"),
                                          ("gpu_memory_utilization", "1.5"), ("overhead_gb", "abc")])
def test_bad_input_names_the_field(field, value):
    with pytest.raises(CalcError) as error:
        framework.call(WIDGET, {field: value})
    assert error.value.field == field
    assert field in str(error.value)


@settings(max_examples=40, deadline=None)
@given(users=st.integers(0, 2000), context=st.integers(1, 200_000))
def test_total_is_the_sum_of_its_terms_and_fits_iff_users_fit(users, context):
    b = page.memory_budget("mistral-7b", "h100-sxm-80gb", users=users, context_tokens=context)
    assert b["total_bytes"] == pytest.approx(b["weights_bytes"] + b["kv_bytes"] + b["overhead_bytes"])
    assert b["fits"] == (users <= b["max_users"])
