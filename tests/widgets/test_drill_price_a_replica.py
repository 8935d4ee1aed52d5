"""Step 17: sustained tokens/s at a latency target, the price of a replica, and the three drills."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.cost import price_replica
from calc.errors import CalcError
from calc.memory import kv_capacity
from calc.widgets import drill_price_a_replica as step
from calc.widgets import framework
from calc.widgets.runtime import handle

DRILLS = ["drill_price_a_replica.price_drill", "drill_price_a_replica.latency_table_drill",
          "drill_price_a_replica.monthly_bill_drill"]


def ask(**request):
    return json.loads(handle(json.dumps(request)))


def test_sustained_at_the_target_decode_only_and_with_prefill():
    out = framework.call("drill_price_a_replica.sustained_at_target", {})["outputs"]
    assert out["decode_tokens_per_s"]["text"] == "8,266 tokens/s (batch 256, the batch cap)"
    assert out["decode_usd_per_million"]["text"] == "$0.508 per million output tokens"
    assert out["prefill_tokens_per_s"]["text"] == "2,275 tokens/s (batch 113)"
    assert out["prefill_usd_per_million"]["text"] == "$1.85 per million output tokens"


def test_a_target_no_batch_can_meet():
    out = framework.call("drill_price_a_replica.sustained_at_target", {"itl_target_ms": "5"})["outputs"]
    assert out["prefill_tokens_per_s"]["value"] == 0
    assert out["prefill_tokens_per_s"]["text"].startswith("none: one sequence already takes")


def test_price_from_measurements_defaults():
    out = framework.call("drill_price_a_replica.price_from_measurements", {})["outputs"]
    assert out["usd_per_hour"]["text"] == "$15.12 (4 GPU-hours × $3.78)"
    assert out["usd_per_month"]["text"] == "$11,038 (730 h)"
    assert out["usd_per_million_tokens"]["text"] == "$1.85"
    assert out["tokens_per_hour"]["value"] == 2270 * 3600


@pytest.mark.parametrize("name, args, field", [
    ("drill_price_a_replica.price_from_measurements", {"sustained_tokens_per_s": "0"}, "sustained_tokens_per_s"),
    ("drill_price_a_replica.price_from_measurements", {"gpus": "0"}, "gpus"),
    ("drill_price_a_replica.sustained_at_target", {"tp": "5"}, "tp"),
    ("drill_price_a_replica.sustained_at_target", {"itl_target_ms": "0"}, "itl_target_ms"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args)
    assert caught.value.field == field


@pytest.mark.parametrize("name, answer, text", [
    (DRILLS[0], 1.850, "1.850 USD per million output tokens"),
    (DRILLS[1], 1.927, "1.927 USD per million output tokens (batch 48)"),
    (DRILLS[2], 22_075, "22,075 USD a month (2 replicas)"),
])
def test_worked_cases(name, answer, text):
    q = framework.REGISTRY[name].function(seed=0)
    assert q["answer"] == pytest.approx(answer, rel=1e-3)
    assert q["answer_text"] == text
    assert framework.REGISTRY[name].kind == "drill"


def test_answers_in_usd_with_or_without_the_unit():
    for typed, correct in (("1.85", True), ("1.85 USD", True), ("1.86", True), ("1.9", False), ("2.1", False), ("0.185", False)):
        verdict = ask(id=1, op="check", fn=DRILLS[0], args={"seed": 0}, answer=typed)["result"]
        assert verdict["correct"] is correct, typed
    assert ask(id=1, op="check", fn=DRILLS[2], args={"seed": 0}, answer="22k")["result"]["correct"]


def test_the_table_drill_picks_the_last_row_within_the_target():
    q = framework.REGISTRY[DRILLS[1]].function(seed=0)
    assert "48 → 22 ms, 2,180" in q["question"] and "at most 25 ms" in q["question"]
    assert q["answer"] == pytest.approx(price_replica(usd_per_gpu_hour=3.78, gpus=4, sustained_tokens_per_s=2180)
                                        ["usd_per_million_tokens"])


@settings(max_examples=40, deadline=None)
@given(st.integers(min_value=1, max_value=1_000_000))
def test_every_variant_is_answerable(seed):
    for name in DRILLS:
        q = framework.check_view(framework.REGISTRY[name].function(seed=seed))
        assert q["answer"] > 0 and q["unit"] == "USD"
        assert q["question"].endswith("in USD?")
        shown = float(q["answer_text"].split(" USD")[0].replace(",", ""))
        assert shown == pytest.approx(q["answer"], rel=0.01)  # the answer text is the answer
    table = framework.REGISTRY[DRILLS[1]].function(seed=seed)
    batch = int(table["answer_text"].split("(batch ")[1].rstrip(")"))
    target = float(table["question"].split("at most ")[1].split(" ms")[0])
    rows = table["question"].split("output tokens/s): ")[1].split(". Your target")[0].split(" · ")
    itls = {int(r.split(" → ")[0]): float(r.split(" → ")[1].split(" ms")[0]) for r in rows}
    assert itls[batch] <= target or batch == min(itls)
    assert all(itl > target for b, itl in itls.items() if b > batch)


def test_priced_replicas_all_fit():
    for model, gpu, tp in step.PRICED_REPLICAS:
        assert kv_capacity(model, gpu, tp=tp).kv_cache_tokens > 16_000, (model, gpu, tp)


def test_facts():
    f = {key: value.replace("&#36;", "$") for key, value in step.facts().items()}
    assert (f["decode_tps"], f["prefill_tps"], f["prefill_batch"]) == ("8,266", "2,275", "113")
    assert (f["decode_usd"], f["prefill_usd"], f["prefill_over_decode"]) == ("$0.508", "$1.85", "3.6")
    assert (f["tight_usd"], f["loose_usd"], f["tight_batch"]) == ("$3.39", "$1.81", "21")
    assert f["listings"] == "Lambda $3.78, Modal $3.95, Replicate $5.49"
    assert f["monthly_answer"] == "22,075 USD a month (2 replicas)"
