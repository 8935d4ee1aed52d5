"""Step 21: the cheat sheet's numbers are calc's, the lesson's figures among them, and the page uses only real facts."""

import importlib
import os
import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.errors import CalcError
from calc.sim_views import fleet_scale_up_delay_s
from calc.widgets import a_70b_assistant, drill_kv_bytes, drill_price_a_replica, int8_and_4_bit, twice_the_traffic
from calc.widgets import cheat_sheet as sheet
from calc.widgets import framework

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
PAGE = os.path.join(ROOT, "docs", "lesson", "21-cheat-sheet.md")
WIDGET = "cheat_sheet.your_replica"


@pytest.fixture(scope="module")
def facts():
    return sheet.facts()


def _borrowed(page_text):
    """(module, name) of every {{ module:name }} on the page."""
    return re.findall(r"\{\{\s*([a-z0-9_]+):([a-z0-9_]+)\s*\}\}", page_text)


def _page():
    with open(PAGE, encoding="utf-8") as handle:
        return handle.read()


def test_the_sheet_borrows_each_steps_figures():
    """One story: the figures a step states are that step's facts, not the sheet's recomputation."""
    borrowed = {(m, n) for m, n in _borrowed(_page())}
    for fact in [("a_70b_assistant", "kv_tokens"), ("fp8_weights", "weights_after"), ("fp8_weights", "kv_tokens_after"),
                 ("scale_on_the_queue", "delay_s"), ("drill_price_a_replica", "prefill_usd"),
                 ("long_context", "scores_layer_gpu"), ("speculative_decoding", "speedup_default"),
                 ("incident_p99_ttft", "gpu_util_run"), ("the_fix", "pools_ttft_p99")]:
        assert fact in borrowed, fact
    modules = {m for m, _ in borrowed}
    known = {m: importlib.import_module(f"calc.widgets.{m}").facts() for m in modules}
    assert not [(m, n) for m, n in borrowed if n not in known[m]]


def test_the_sheets_own_figures(facts):
    assert facts["ridge_fp8"] == "591" and facts["itl_b64"] == "18.2 ms"
    assert facts["hit_tokens_wrong_order"] == "0"
    from calc.speculative import break_even  # step 10's figure, derived (it moves with the step cost)
    assert facts["break_even"] == str(break_even("llama-3.1-8b")) and facts["break_even_published"] == "24"
    assert facts["bubble_one"] == "75%" and facts["bubble_many"] == "15.8%"
    assert facts["scores_per_layer_all_heads"] == "1.28 TB"  # all 64 heads; step 13 quotes one GPU's 16: 320 GB
    assert facts["util_replicas"].endswith("→ 4 → 4")  # scaled up on GPU-Util, never down
    # Warm headroom over step 15's own delay, not a delay recomputed with other inputs.
    assert float(facts["headroom"].rstrip("%")) == pytest.approx(
        (1.05 ** (fleet_scale_up_delay_s() / 60) - 1) * 100, abs=0.05)
    assert not {"kv_tokens", "kv_tokens_exact", "fp8_weights_per_gpu", "scale_delay", "spec_speedup"} & set(facts)


def test_quiz_answer_adds_up(facts):
    need = int(facts["quiz_conversations"]) * 4_000
    assert facts["quiz_tokens"] == f"{need:,}"
    assert int(facts["quiz_fit_bf16"]) == 399_169 // 4_000 < int(facts["quiz_conversations"])
    assert int(facts["quiz_fit_fp8_kv"]) + int(facts["quiz_short_fp8"]) == int(facts["quiz_conversations"])
    assert int(facts["quiz_fit_fp8_both"]) > int(facts["quiz_conversations"])
    # the quiz's capacities are those steps 3 and 8 quote
    assert drill_kv_bytes.facts()["tokens_fp8"] == f"{lesson.kv_capacity(kv_dtype='fp8').kv_cache_tokens_raw:,}"
    both = int8_and_4_bit.facts()["kv_tokens_fp8_both"]
    assert int(facts["quiz_fit_fp8_both"]) == int(both.replace(",", "")) // 4_000


def test_every_number_on_the_page_is_a_fact(facts):
    text = _page()
    names = re.findall(r"\{\{\s*([a-z0-9_]+)\s*\}\}", text)
    assert names and not [n for n in names if n not in facts]
    prose = re.sub(r"\{\{[^}]*\}\}|\$[^$]*\$|`[^`]*`|\[\d+(, \d+)?\]|<[^>]*>|^\| [\d, ]+ \|", "",
                   text.split("---", 2)[2], flags=re.M)  # the sheet's first column is the step a row comes from
    # No derived number typed by hand: the digits left are the step's number, names (8B, H100, bf16, W4A16, p99),
    # the batch sizes the sheet quotes at (1, 10, 64) and the years of the sources.
    leftovers = {n.rstrip(".,") for n in re.findall(r"\d[\d,.]*", prose)}
    assert leftovers <= {"21", "8", "3.1", "70", "16", "4", "10", "1", "2", "3", "64", "99", "100",
                         "2023", "2009", "2022", "2025"}, leftovers


def test_your_replica_defaults_are_the_sheets_numbers(facts):
    out = framework.call(WIDGET, {})["outputs"]
    step1, step17 = a_70b_assistant.facts(), drill_price_a_replica.facts()
    assert out["kv_tokens"]["text"] == step1["kv_tokens"] + " tokens"
    assert out["requests_fit"]["value"] == 311 and out["contiguous_fit"]["value"] == 48
    assert out["itl_batch_1_s"]["text"] == twice_the_traffic.facts()["decode1_ms"]
    assert out["usd_per_hour"]["text"] == "$15.12"
    # step 17's quote (prefill included, at most max_num_seqs running), never batch 311 decode-only
    assert out["batch_at_target"]["value"] == int(step17["prefill_batch"]) <= 256
    assert out["usd_per_million"]["text"] == "$64.24 / " + step17["prefill_usd"].replace("&#36;", "$")


def test_your_replica_recomputes():
    fp8 = framework.call(WIDGET, {"weights": "fp8", "kv_dtype": "fp8"})["outputs"]
    assert fp8["kv_bytes_per_token"]["text"] == "160 KiB (40 KiB)"
    assert fp8["kv_tokens"]["value"] > 2 * 399_169
    l4 = framework.call(WIDGET, {"model": "llama-3.1-8b", "gpu": "h200", "tp": "1"})["outputs"]
    assert l4["usd_per_hour"]["text"] == "no price: enter one"
    priced = framework.call(WIDGET, {"model": "llama-3.1-8b", "gpu": "h200", "tp": "1", "gpu_price_usd_per_hour": "0.8"})
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
