"""The GB-against-GiB note: the converter, the GPU readings and the facts its prose quotes."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc import memory
from calc.catalog import GPUS
from calc.errors import CalcError
from calc.widgets import framework, gb_vs_gib


def texts(view):
    return {key: item["text"] for key, item in view["outputs"].items()}


def test_the_h100_datasheet_figure_in_every_unit():
    out = texts(framework.call("gb_vs_gib.convert", {"value": "80", "unit": "GB"}))
    assert out["B"] == "80,000,000,000 B"
    assert out["GB"] == "80 GB"
    assert out["GiB"] == "74.5058 GiB"
    assert out["MiB"] == "76,293.9 MiB"
    assert out["TB"] == "0.08 TB"


def test_the_nvidia_smi_reading_in_every_unit():
    out = texts(framework.call("gb_vs_gib.convert", {"value": "81,559", "unit": "MiB"}))
    assert out["B"] == "85,520,809,984 B"
    assert out["GB"] == "85.5208 GB"
    assert out["GiB"] == "79.6475 GiB"
    assert out["MiB"] == "81,559 MiB"


def test_vllm_gb_are_gib():
    out = texts(framework.call("gb_vs_gib.convert", {"value": "14.9888", "unit": "GiB"}))
    assert out["GB"] == "16.0941 GB"


@pytest.mark.parametrize("args, field", [
    ({"value": "-1"}, "value"), ({"value": "lots"}, "value"), ({"unit": "gb"}, "unit"),
    ({"value": "1e15", "unit": "TiB"}, "value"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as err:
        framework.call("gb_vs_gib.convert", args)
    assert err.value.field == field


@settings(max_examples=60, deadline=None)
@given(value=st.floats(0, 9e5, allow_nan=False), unit=st.sampled_from(list(gb_vs_gib.UNITS)))
def test_every_output_is_the_same_number_of_bytes(value, unit):
    view = framework.call("gb_vs_gib.convert", {"value": value, "unit": unit})
    n_bytes = gb_vs_gib.to_bytes(value, unit)
    for name, size in gb_vs_gib.UNITS.items():
        assert view["outputs"][name]["value"] == pytest.approx(n_bytes / size, rel=1e-8, abs=1e-300)
    # the binary number is always the smaller one: 2**30 > 10**9
    assert view["outputs"]["GiB"]["value"] <= view["outputs"]["GB"]["value"]


@given(amount=st.floats(1e-3, 1e15, allow_nan=False))
def test_amount_text_keeps_six_significant_digits(amount):
    text = gb_vs_gib.amount_text(amount)
    assert float(text.replace(",", "")) == pytest.approx(amount, rel=1e-5)


def test_gpu_memory_shows_both_readings():
    out = texts(framework.call("gb_vs_gib.gpu_memory", {}))
    assert out["marketed_gb"] == "80 GB" and out["marketed_gib"] == "74.51 GiB"
    assert out["runtime_mib"] == "81,559 MiB" and out["runtime_gb"] == "85.52 GB"
    assert out["difference"].startswith("+6.9%")
    rows = framework.call("gb_vs_gib.gpu_memory", {"gpu": "a100-40gb"})["tables"]["all_gpus"]["rows"]
    assert len(rows) == len(GPUS)
    assert ["A100 SXM 40GB", "40 GB = 37.25 GiB", "40,960 MiB = 42.95 GB", "+7.4%"] in rows


def test_facts_reproduce_the_lesson_and_the_runtime_capacity():
    facts = gb_vs_gib.facts()
    assert facts["h100_gib"] == "74.5 GiB"
    assert facts["smi_gb"] == "85.5 GB"
    assert facts["kv_tokens_marketed"] == "399,169"  # the lesson's figure
    runtime = lesson.kv_capacity(rounded_params=True, memory_basis="runtime").kv_cache_tokens_raw
    assert facts["kv_tokens_runtime"] == f"{runtime:,}"
    assert facts["kv_tokens_gain"] == "15.2%"
    assert facts["gap_gb"] == "7.4%" and facts["gap_kb"] == "2.4%" and facts["gap_tb"] == "10%"
    assert facts["weights_8b_gib"] == "14.96 GiB"  # what vLLM's log calls "14.9888 GB"
    assert facts["kv_8b_kib"] == "128 KiB" and facts["kv_8b_kb"] == "131 KB"
    assert facts["gib_in_gb"] == "1.0737" and facts["gb_in_gib"] == "0.9313"
