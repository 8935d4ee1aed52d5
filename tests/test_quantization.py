"""Quantization: Mistral-7B 14.5 GB -> 3.6 GB, the formats table, KV formats, sourced accuracy deltas, bad input."""

import math

import pytest

from calc.catalog import get_model
from calc.errors import CalcError
from calc.memory import WEIGHT_FORMATS, weight_bytes
from calc.quantization import ACCURACY, accuracy_deltas, kv_formats_table, weight_formats_table


def test_mistral_7b_from_14_5_gb_to_3_6_gb():
    # The workshop: 14.5 GB of bf16 weights; 3.6 GB at INT4 (the 4-bit figure: every parameter at 4 bits).
    rows = {r["weights"]: r for r in weight_formats_table("mistral-7b", "h100-sxm-80gb")}
    assert round(rows["bf16"]["total_bytes"] / 1e9, 1) == 14.5
    assert round(rows["int4"]["nominal_bytes"] / 1e9, 1) == 3.6
    # The payload of the quantized layers, its scales and the 16-bit layers are separate terms.
    int4 = rows["int4"]
    assert round(int4["payload_bytes"] / 1e9, 2) == 3.49
    assert int4["payload_bytes"] + int4["scale_bytes"] + int4["unquantized_bytes"] == int4["total_bytes"]
    assert int4["total_bytes"] == weight_bytes(get_model("mistral-7b"), "int4").total_bytes


def test_table_has_every_format_and_sensible_trends():
    rows = weight_formats_table("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    assert [r["weights"] for r in rows] == list(WEIGHT_FORMATS)
    by = {r["weights"]: r for r in rows}
    assert by["bf16"]["decode_speedup"] == 1.0 and by["bf16"]["kv_room_gain"] == 1.0
    # fp8: half the bytes per weight, nearly half the decode step, and the freed memory becomes KV cache
    assert 1.6 < by["fp8"]["decode_speedup"] < 2.0
    assert by["fp8"]["kv_room_gain"] > 1.4
    assert by["int4"]["decode_speedup"] > by["fp8"]["decode_speedup"]
    assert by["int4"]["effective_bits_per_weight"] > 4  # scales and 16-bit embeddings add to the 4 bits
    assert by["fp8"]["accuracy"] and "RedHatAI" in by["fp8"]["accuracy"][0]["source"]


def test_weights_that_do_not_fit_get_no_kv_room():
    rows = {r["weights"]: r for r in weight_formats_table("llama-3.1-70b", "h100-sxm-80gb", tp=1)}
    assert rows["bf16"]["kv_tokens"] is None and rows["int4"]["kv_tokens"] > 0


def test_published_accuracy_deltas():
    assert len(ACCURACY) == 4 and all(r["source"] for r in ACCURACY)
    d = {(r["model"], r["weights"]): r["delta_points"] for r in accuracy_deltas()}
    assert math.isclose(d[("llama-3.1-70b", "fp8")], 84.29 - 84.40)
    assert math.isclose(d[("llama-3.1-8b", "int4")], 67.57 - 69.32)
    assert accuracy_deltas("mistral-7b") == []


def test_kv_formats():
    rows = {r["kv_dtype"]: r for r in kv_formats_table("llama-3.1-8b", "h100-sxm-80gb")}
    assert rows["bf16"]["kv_bytes_per_token"] == 131_072 and rows["fp8"]["kv_bytes_per_token"] == 65_536
    assert round(rows["fp8"]["kv_room_gain"], 2) == 2.0
    assert rows["fp8"]["decode_speedup"] > 1.3  # KV-heavy batch: 64 x 4,096 tokens


@pytest.mark.parametrize("call, field", [
    (lambda: weight_formats_table("llama-3.1-8b", "h100-sxm-80gb", batch=0), "batch"),
    (lambda: weight_formats_table("llama-3.1-8b", "nope"), "gpu"),
    (lambda: kv_formats_table("llama-3.1-8b", "h100-sxm-80gb", context_tokens=0), "context_tokens"),
    (lambda: kv_formats_table("llama-3.1-70b", "h100-sxm-80gb", tp=3), "tp"),
    (lambda: accuracy_deltas(weights="int3"), "weights"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field
