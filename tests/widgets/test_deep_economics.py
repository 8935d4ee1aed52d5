"""Deep dive "Economics of inference": GPT-3's training bill, cost per query, the two claims, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import deep_economics as page
from calc.widgets import framework


def test_gpt3_training_reproduces_lambdas_estimate():
    t = page.gpt3_training()
    assert round(t["gpu_years"]) == 355                      # Lambda: 355 GPU-years at 28 TFLOP/s
    assert t["implied_usd_per_gpu_hour"] == pytest.approx(1.48, abs=0.005)


def test_facts():
    f = page.facts()
    assert (f["chat_cents"], f["chat_usd_per_million"], f["chat_days"]) == ("0.0464 ¢", "$1.81", "991")
    assert f["chatgpt_days"] == "6.57"
    assert (f["extra_cents"], f["implied_volume_t"], f["volume_ratio"], f["margin_cents"]) == \
        ("0.36 ¢", "10", "3.03", "0.55 ¢")
    assert (f["long70_implied"], f["long405_implied"], f["short70_ms"]) == ("$16.4B", "$61.2B", "$1.7B")
    assert (f["max_calc"], f["paged_calc"]) == ("24%", "98.5%")
    assert f["quiz_ratio"] == "1.3"


def test_widget_defaults():
    bill = framework.call("deep_economics.inference_bill", {})["outputs"]
    assert bill["cents_per_query"]["text"] == "0.0464 ¢" and bill["break_even_days"]["text"] == "991 days"
    claim = framework.call("deep_economics.search_claim", {})["outputs"]
    assert claim["bill"]["text"] == "$5.4B"
    assert claim["implied_volume"]["text"] == "10 trillion"
    paged = framework.call("deep_economics.paged_claim", {})["outputs"]
    assert paged["paged"]["text"] == "98.5% / 96.3%"


def test_free_gpus_never_break_even():
    out = framework.call("deep_economics.inference_bill", {"usd_per_gpu_hour": "0"})["outputs"]
    assert out["break_even_days"]["text"] == "never (free GPUs)"


@settings(max_examples=30, deadline=None)
@given(utilization=st.floats(0.05, 1.0))
def test_idle_gpus_raise_the_cost_per_query_in_proportion(utilization):
    full = page.query_cost("llama-3.1-8b")["usd_per_query"]
    part = page.query_cost("llama-3.1-8b", utilization=utilization)["usd_per_query"]
    assert part == pytest.approx(full / utilization)


@pytest.mark.parametrize("name, args, field", [
    ("deep_economics.inference_bill", {"replica": "gpt-5"}, "replica"),
    ("deep_economics.inference_bill", {"utilization": "0"}, "utilization"),
    ("deep_economics.search_claim", {"output_tokens": "0"}, "output_tokens"),
    ("deep_economics.paged_claim", {"max_model_len": "10"}, "max_model_len"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as error:
        framework.call(name, args)
    assert error.value.field == field


def test_the_maximum_length_control_starts_where_the_sample_fits():
    # The sample's mean answer (338 tokens) must fit the maximum: the control starts at the first 256-token step
    # that holds it, and every value it offers from there draws the sample (no error at the low end).
    assert page.MIN_PAGED_CLAIM_LEN == 512
    with pytest.raises(CalcError):
        page.kv_utilization(max_model_len=256)
    low = framework.call("deep_economics.paged_claim", {"max_model_len": "512"})["outputs"]
    assert low["paged"]["text"] == "97.3% / 96.3%" and low["max"]["text"] == "53% / 20.4%"
    with pytest.raises(CalcError) as error:
        framework.call("deep_economics.paged_claim", {"max_model_len": "256"})
    assert error.value.field == "max_model_len" and "512" in str(error.value)
    for length in (768, 32_768):
        shares = framework.call("deep_economics.paged_claim", {"max_model_len": str(length)})["outputs"]
        assert shares["paged"]["value"] > 0.95 > shares["max"]["value"]
