"""The controls many pages share are annotated once (calc/widgets/controls.py), and the GQA rule is written once
(calc.memory.gqa_kv_heads): issue 31."""

from __future__ import annotations

import pathlib
import re

from calc.catalog import GPUS, MODELS, get_model
from calc.memory import gqa_kv_heads
from calc.widgets import controls, framework

CALC = pathlib.Path(__file__).resolve().parents[2] / "calc"
#: Pages another engineer edits this session: they take the shared controls when that work merges.
OWNED_ELSEWHERE = {"accuracy", "plan"}
CATALOG_CHOICES = re.compile(r"\(\(key, \w+\.name\) for key, \w+ in (MODELS|GPUS)\.items\(\)\)")


def test_no_page_module_restates_the_catalog_choices():
    restated = sorted(path.stem for path in (CALC / "widgets").glob("*.py")
                      if path.stem not in OWNED_ELSEWHERE | {"controls"}
                      and CATALOG_CHOICES.search(path.read_text(encoding="utf-8")))
    assert not restated, f"use calc.widgets.controls (Model, Gpu, ...) instead of restating the catalog: {restated}"


def test_the_shared_controls_offer_the_whole_catalog_in_its_order():
    assert [key for key, _ in controls.MODEL_CHOICES] == list(MODELS)
    assert [key for key, _ in controls.GPU_CHOICES] == list(GPUS)
    step1 = {c["name"]: c for c in framework.describe("a_70b_assistant.memory_view")["controls"]}
    assert [o[0] for o in step1["model"]["options"]] == list(MODELS) and step1["model"]["label"] == "Model"
    assert (step1["tp"]["kind"], step1["tp"]["min"], step1["tp"]["max"], step1["tp"]["unit"]) == ("int", 1, 64, "GPUs")


def test_a_page_keeps_its_own_label_through_the_factories():
    cost = {c["name"]: c for c in framework.describe("cost_per_million_tokens.cost_by_batch")["controls"]}
    assert cost["tp"]["label"] == "GPUs per replica (tensor parallel)" and cost["tp"]["unit"] == ""
    roofline = {c["name"]: c for c in framework.describe("deep_roofline.roofline")["controls"]}
    assert roofline["tp"]["kind"] == "choice" and roofline["weights"]["label"] == "Weights"


def test_the_gqa_rule_is_written_once():
    """The KV heads of "this model with GQA": the model's own, else one per 8 query heads, in calc.memory only."""
    rule = re.compile(r"attention_heads\s*//\s*8|heads\s*//\s*8")
    written = sorted(str(path.relative_to(CALC)) for path in CALC.rglob("*.py") if rule.search(path.read_text()))
    assert written == [], f"the GQA fallback restated: {written} (call calc.memory.gqa_kv_heads)"
    assert gqa_kv_heads(get_model("llama-3.1-70b")) == 8 and gqa_kv_heads(get_model("llama-2-7b")) == 4
    from calc.widgets.kv_cache_arithmetic import attention_variants

    assert "GQA (4 KV heads)" in attention_variants(get_model("llama-2-7b"))
