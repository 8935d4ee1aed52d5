"""Deep dive "Attention and the KV cache": KV per token by attention kind, requests that fit, FlashAttention traffic."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import deep_attention as page
from calc.widgets import framework


def test_facts():
    f = page.facts()
    assert (f["mha"], f["gqa"], f["mqa"], f["mla"]) == ("524,288 B", "131,072 B", "16,384 B", "36,864 B")
    assert (f["mha_requests"], f["gqa_requests"], f["mqa_requests"], f["mla_requests"]) == ("25", "101", "812", "361")
    assert f["mla_deepseek"] == "70,272 B"
    assert (f["scratch"], f["traffic_ratio"]) == ("1.28 TB", "1,043")
    # The quiz's replica is the lesson's, with its one capacity (calc.lesson): 311 requests as on step 1.
    assert (f["quiz_gqa_requests"], f["quiz_mla_requests"], f["quiz_mha_requests"]) == ("311", "277", "38")


def test_kv_widget_defaults_and_the_real_model_marked():
    view = framework.call("deep_attention.kv_per_kind", {})
    assert view["outputs"]["gqa_bytes"]["text"] == "131,072 B · 101 requests"
    assert view["figures"]["per_token"]["data"][0]["x"][1] == "GQA (this model)"
    deepseek = framework.call("deep_attention.kv_per_kind", {"model": "deepseek-v3", "tp": "8", "gpu": "b200"})
    assert deepseek["figures"]["per_token"]["data"][0]["x"][3] == "MLA (this model)"
    assert deepseek["outputs"]["mla_bytes"]["text"].startswith("70,272 B · ")
    too_big = framework.call("deep_attention.kv_per_kind", {"model": "deepseek-v3", "tp": "8"})["outputs"]
    assert too_big["mla_bytes"]["text"] == "70,272 B · the weights do not fit"


def test_tensor_parallel_copies_mqa_and_mla():
    rows = page.kv_by_kind("llama-3.1-70b", "h100-sxm-80gb", tp=4, context_tokens=1280)
    assert rows["gqa"]["kv_bytes_per_token_per_gpu"] == rows["gqa"]["kv_bytes_per_token"] // 4
    assert rows["mqa"]["kv_bytes_per_token_per_gpu"] == rows["mqa"]["kv_bytes_per_token"]
    assert rows["mla"]["kv_bytes_per_token_per_gpu"] == rows["mla"]["kv_bytes_per_token"]


def test_flash_widget_defaults():
    out = framework.call("deep_attention.flash_attention", {})["outputs"]
    assert out["scratch"]["text"] == "1.28 TB" and out["ratio"]["text"] == "1,043×"
    assert out["attention_share"]["text"] == "49%"


@settings(max_examples=30, deadline=None)
@given(n=st.integers(1, 300_000))
def test_unfused_traffic_always_exceeds_the_fused_floor(n):
    t = page.attention_traffic("llama-3.1-8b", n)
    assert t["unfused_bytes"] > t["fused_minimum_bytes"] > 0


@pytest.mark.parametrize("name, args, field", [
    ("deep_attention.kv_per_kind", {"tp": "3"}, "tp"),
    ("deep_attention.kv_per_kind", {"kv_dtype": "int4"}, "kv_dtype"),
    ("deep_attention.flash_attention", {"prompt_tokens": "0"}, "prompt_tokens"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as error:
        framework.call(name, args)
    assert error.value.field == field
