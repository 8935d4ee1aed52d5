"""Step 8: every weight format side by side, the published accuracy deltas, fp8 KV cache, and the workshop's Mistral 7B."""

import pytest
from calc import lesson
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.quantization import ACCURACY
from calc.units import GB
from calc.widgets import framework
from calc.widgets import int8_and_4_bit as step

FORMATS = "int8_and_4_bit.formats"
ACC = "int8_and_4_bit.published_accuracy"
KV = "int8_and_4_bit.kv_formats"


def call(name, **args):
    return framework.call(name, args)


def test_mistral_7b_is_the_workshops_figure():
    # The workshop (Mistral-7B): 14.5 GB of bf16 weights; 3.6 GB at INT4 (the 4-bit payload alone, scales and 16-bit layers apart).
    f = step.facts()
    assert f["mistral_bf16"] == "14.5 GB"
    assert f["mistral_int4_nominal"] == "3.62 GB"  # 7.24e9 parameters x 4 bits: the workshop's "3.6 GB"
    assert f["mistral_int4_nominal_rounded"] == "3.6 GB"
    assert (f["mistral_int4_payload"], f["mistral_int4_scales"], f["mistral_int4_unquantized"]) == ("3.49 GB", "0.136 GB", "0.525 GB")
    assert f["mistral_int4_total"] == "4.15 GB"


def test_published_accuracy_deltas_with_sources():
    f = step.facts()
    assert (f["acc_70b_fp8"], f["acc_70b_int4"], f["acc_8b_fp8"], f["acc_8b_int4"]) == ("-0.11", "-0.13", "-0.35", "-1.75")
    assert (f["acc_70b_fp8_base"], f["acc_70b_fp8_quantized"]) == ("84.4", "84.29")
    view = call(ACC)
    rows = view["tables"]["cards"]["rows"]
    assert len(rows) == len(ACCURACY) == 4
    assert all(row[-1].startswith("RedHatAI/Meta-Llama-3.1-") for row in rows)
    assert view["outputs"]["largest_drop"]["value"] == pytest.approx(-1.75)
    assert [r[0] for r in call(ACC, model="llama-3.1-8b")["tables"]["cards"]["rows"]] == ["8B", "8B"]
    assert "2411.02355" in view["tables"]["study"]["caption"]


def test_formats_table_on_the_running_example():
    view = call(FORMATS)
    out = view["outputs"]
    assert (out["weights_bf16"]["text"], out["weights_fp8"]["text"], out["weights_int4"]["text"]) == (
        "35.3 GB", "18.2 GB", "9.94 GB")
    assert (out["speedup_fp8"]["text"], out["speedup_int4"]["text"]) == ("1.78x", "2.86x")
    assert (out["kv_tokens_bf16"]["value"], out["kv_tokens_int4"]["value"]) == (lesson.KV_CAPACITY_TOKENS, 708_716)  # bf16: step 1's capacity
    rows = view["tables"]["formats"]["rows"]
    assert [r[0] for r in rows] == ["bf16", "fp16", "fp8", "int8", "int4", "nf4"]
    assert rows[2][5] == "-0.11 points" and rows[3][5].startswith("study: ")
    # Quartering the weights does not quadruple the cache.
    assert out["kv_tokens_int4"]["value"] / out["kv_tokens_bf16"]["value"] < 2


def test_four_bit_stops_helping_at_a_full_batch():
    f = step.facts()
    assert (f["bf16_sat_step"], f["fp8_sat_step"], f["int4_sat_step"]) == ("31 ms", "22.1 ms", "31 ms")
    assert (f["sim_ttft_p99_bf16"], f["sim_ttft_p99_int4"], f["sim_ttft_p99_fp8"]) == ("56.9 s", "56.9 s", "7.54 s")
    p99 = {fmt: step.preset_summary(step.SIM_PRESET, weights=fmt)["ttft_p99_s"] for fmt in ("bf16", "int4", "fp8")}
    assert p99["int4"] == pytest.approx(p99["bf16"], rel=0.02)  # at saturation int4 ends where bf16 did
    assert p99["fp8"] < p99["bf16"] / 3  # step 7: fp8 falls behind far more slowly (its decode step ~0.7x, KV room 1.5x)
    curve = call(FORMATS)["figures"]["vs_batch"]
    by_name = {t["name"]: t for t in curve["data"]}
    assert by_name["int4"]["y"][0] < by_name["fp8"]["y"][0] < by_name["bf16"]["y"][0]  # batch 1
    assert by_name["int4"]["y"][-1] == pytest.approx(by_name["bf16"]["y"][-1])  # batch 512


def test_kv_cache_in_fp8_doubles_the_tokens():
    out = call(KV)["outputs"]
    assert (out["per_token_bf16"]["value"], out["per_token_fp8"]["value"]) == (81_920, 40_960)
    assert out["kv_tokens_fp8"]["value"] / out["kv_tokens_bf16"]["value"] == pytest.approx(2.0, rel=1e-4)
    assert out["speedup"]["text"] == "1.21x"
    assert step.facts()["kv_tokens_fp8_both"] == "1,216,532"


@settings(max_examples=20, deadline=None)
@given(replica=st.sampled_from(list(step.REPLICAS)), batch=st.integers(1, 1024))
def test_every_replica_and_batch_gives_ordered_weights(replica, batch):
    out = call(FORMATS, replica=replica, batch=str(batch))["outputs"]
    assert out["weights_int4"]["value"] < out["weights_fp8"]["value"] < out["weights_bf16"]["value"]
    assert out["kv_tokens_int4"]["value"] >= out["kv_tokens_fp8"]["value"] >= out["kv_tokens_bf16"]["value"]


@pytest.mark.parametrize("name, args, field", [
    (FORMATS, {"replica": "gpt-4"}, "replica"),
    (FORMATS, {"batch": "0"}, "batch"),
    (ACC, {"model": "llama-3.1-405b"}, "model"),
    (KV, {"weights": "int2"}, "weights"),
    (KV, {"context_tokens": "-5"}, "context_tokens"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args)
    assert caught.value.field == field


def test_int4_checkpoint_terms_add_up():
    f = step.facts()
    assert f["int4_total"] == "39.8 GB" and f["int4_nominal"] == "35.3 GB" and f["int4_effective_bits"] == "4.51"
    assert call(FORMATS)["outputs"]["weights_int4"]["value"] * 4 / GB == pytest.approx(39.77, abs=0.01)
