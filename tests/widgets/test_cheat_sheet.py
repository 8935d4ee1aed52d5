"""Step 21: the cheat sheet's numbers are calc's, the lesson's figures among them, and the page uses only real facts."""

import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import cheat_sheet as sheet
from calc.widgets import framework

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "lesson", "21-cheat-sheet.md")
WIDGET = "cheat_sheet.your_replica"


@pytest.fixture(scope="module")
def facts():
    return sheet.facts()


def test_the_lessons_figures(facts):
    """The figures the cheat sheet (docs/lesson/21-cheat-sheet.md) quotes, reproduced from calc."""
    assert facts["weights_per_gpu"] == "35.3 GB"
    assert facts["requested"] == "72 GB"
    assert facts["kv_per_gpu"] == "32.7 GB"
    assert facts["kv_tokens"] == "399,169" and facts["kv_tokens_exact"] == "399,452"
    assert facts["kv_per_token_8b"] == "131,072 B" and facts["kv_per_token_8b_kib"] == "128 KiB"
    assert facts["kv_per_token_70b_kib"] == "320 KiB" and facts["kv_per_token_70b_gpu"] == "81,920 B"
    assert facts["conversation_8b"] == "524 MB"
    assert facts["contiguous_fit"] == "48"
    assert facts["conversations_per_100k"] == "78"
    assert facts["discount_1_to_10"] == "9.7"
    assert (facts["orca_max_pct"], facts["orca_oracle_pct"], facts["vllm_paged_pct"]) == ("20.4%", "38.2%", "96.3%")
    assert (facts["spec_tokens"], facts["spec_speedup"]) == ("3.36", "2.8")  # (1 - 0.8^5) / 0.2, / (4 x 0.05 + 1)


def test_rules_of_thumb(facts):
    assert facts["ridge_bf16"] == "295" and facts["ridge_fp8"] == "591"
    assert facts["decode_intensity"] == "1.02" and facts["prefill_intensity"] == "1,029"
    assert facts["itl_b1"] == "15.3 ms" and facts["fp8_itl_b1"] == "8.58 ms"
    assert facts["hit_tokens"] == "2,496" and facts["hit_tokens_wrong_order"] == "0"
    assert facts["prefill_saved"] == "70.8%"
    from calc.speculative import break_even  # step 10's figure, derived (it moves with the step cost)
    assert facts["break_even"] == str(break_even("llama-3.1-8b")) and facts["break_even_published"] == "24"
    assert facts["bubble_one"] == "75%" and facts["bubble_many"] == "15.8%"
    assert facts["scale_delay"] == "131 s"  # 60 s + 141 GB / 2 GB/s
    assert facts["usd_per_hour"] == r"\$15.12"  # 4 x $3.78, the dollar escaped for the page's math
    assert facts["batching_limit"] == "38"


def test_simulated_figures_come_from_the_presets(facts):
    assert facts["reserve_running_max"] == facts["contiguous_fit"]  # the simulation stops where the formula says
    assert float(facts["incident_ttft_p99"].split()[0]) > 25
    assert float(facts["fixed_ttft_p99"].split()[0]) < 5
    assert facts["util_replicas"].endswith("→ 4 → 4")  # scaled up on GPU-Util, never down


def test_quiz_answer_adds_up(facts):
    need = int(facts["quiz_conversations"]) * 4_000
    assert facts["quiz_tokens"] == f"{need:,}"
    assert int(facts["quiz_fit_bf16"]) == 399_169 // 4_000 < int(facts["quiz_conversations"])
    assert int(facts["quiz_fit_fp8_kv"]) + int(facts["quiz_short_fp8"]) == int(facts["quiz_conversations"])
    assert int(facts["quiz_fit_fp8_both"]) > int(facts["quiz_conversations"])


def test_every_number_on_the_page_is_a_fact(facts):
    with open(PAGE, encoding="utf-8") as handle:
        text = handle.read()
    names = re.findall(r"\{\{\s*([a-z0-9_]+)\s*\}\}", text)
    assert names and not [n for n in names if n not in facts]
    prose = re.sub(r"\{\{[^}]*\}\}|\$[^$]*\$|`[^`]*`|\[\d+(, \d+)?\]|<[^>]*>", "", text.split("---", 2)[2])
    # No derived number typed by hand: the digits left are the step's number, names (8B, H100, bf16, W4A16, p99),
    # the batch sizes the sheet quotes at (1, 10, 64) and the years of the sources.
    leftovers = {n.rstrip(".,") for n in re.findall(r"\d[\d,.]*", prose)}
    assert leftovers <= {"21", "8", "3.1", "70", "16", "4", "10", "1", "2", "3", "64", "99", "100",
                         "2023", "2009", "2022", "2025"}, leftovers


def test_your_replica_defaults_are_the_sheets_numbers(facts):
    out = framework.call(WIDGET, {})["outputs"]
    assert out["kv_tokens"]["text"] == facts["kv_tokens"] + " tokens"
    assert out["requests_fit"]["value"] == 311 and out["contiguous_fit"]["value"] == 48
    assert out["itl_batch_1_s"]["text"] == facts["itl_b1"]
    assert out["usd_per_hour"]["text"] == "$15.12"
    assert out["usd_per_million"]["text"] == "$64.24 / $0.503"


def test_your_replica_recomputes():
    fp8 = framework.call(WIDGET, {"weights": "fp8", "kv_dtype": "fp8"})["outputs"]
    assert fp8["kv_bytes_per_token"]["text"] == "160 KiB (40 KiB)"
    assert fp8["kv_tokens"]["value"] > 2 * 399_169
    l4 = framework.call(WIDGET, {"model": "llama-3.1-8b", "gpu": "l4", "tp": "1"})["outputs"]
    assert l4["usd_per_hour"]["text"] == "no price: enter one"
    priced = framework.call(WIDGET, {"model": "llama-3.1-8b", "gpu": "l4", "tp": "1", "gpu_price_usd_per_hour": "0.8"})
    assert priced["outputs"]["usd_per_hour"]["text"] == "$0.8"


@pytest.mark.parametrize("args, field", [
    ({"tp": "3"}, "tp"),
    ({"prompt_tokens": "9000"}, "max_model_len"),
    ({"model": "llama-3.1-405b", "tp": "1"}, "tp"),
    ({"gpu_memory_utilization": "2"}, "gpu_memory_utilization"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(WIDGET, args)
    assert caught.value.field == field and field in str(caught.value)


@settings(max_examples=15, deadline=None)
@given(low=st.floats(0.75, 0.9), high=st.floats(0.91, 1.0))
def test_more_memory_for_vllm_means_more_kv_and_never_a_smaller_batch(low, high):
    a = sheet.replica_numbers(gpu_memory_utilization=low)
    b = sheet.replica_numbers(gpu_memory_utilization=high)
    assert b["kv_tokens"] > a["kv_tokens"] and b["requests_fit"] >= a["requests_fit"]
    assert b["itl_batch_1_s"] == a["itl_batch_1_s"]  # memory left over does not change a step's bytes
