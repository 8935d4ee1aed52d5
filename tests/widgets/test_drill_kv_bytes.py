"""Step 3's drills: the worked answers of seed 0, and properties of every variant."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.answers import check_answer
from calc.memory import kv_capacity
from calc.widgets import drill_kv_bytes as drills
from calc.widgets import framework
from calc.widgets.runtime import handle

NAMES = [
    "drill_kv_bytes.bytes_per_token_drill", "drill_kv_bytes.conversation_drill",
    "drill_kv_bytes.conversations_fit_drill", "drill_kv_bytes.per_gpu_drill", "drill_kv_bytes.fp8_capacity_drill",
]


def question(name, seed=0):
    return framework.REGISTRY[name].function(seed=seed)


def ask(**request):
    return json.loads(handle(json.dumps(request)))


def test_every_drill_is_registered_as_a_drill():
    framework.get(NAMES[0])
    assert all(framework.REGISTRY[name].kind == "drill" for name in NAMES)


@pytest.mark.parametrize("name, answer, unit", [
    ("drill_kv_bytes.bytes_per_token_drill", 131_072, "bytes"),  # Llama 3.1 8B: 128 KiB
    ("drill_kv_bytes.conversation_drill", 524_288_000, "bytes"),  # 4,000 tokens: 524 MB
    ("drill_kv_bytes.conversations_fit_drill", 76, "conversations"),  # 40 GB / 524 MB
    ("drill_kv_bytes.per_gpu_drill", 81_920, "bytes"),  # 70B at TP 4
    ("drill_kv_bytes.fp8_capacity_drill", 798_339, "tokens"),  # 32.7 GB / 40,960 B
])
def test_seed_zero_is_the_worked_case(name, answer, unit):
    q = question(name)
    assert q["answer"] == answer
    assert q["unit"] == unit


@pytest.mark.parametrize("typed, correct", [
    ("128 KiB", True), ("131072", True), ("0.125 MiB", True), ("131 KB", True), ("131,072 B", True),
    ("64 KiB", False), ("128 KB", False), ("256 KiB", False),
])
def test_bytes_answers_in_any_unit(typed, correct):
    verdict = ask(id=1, op="check", fn=NAMES[0], args={"seed": 0}, answer=typed)
    assert verdict["ok"] and verdict["result"]["correct"] is correct, typed
    assert "131,072 B" in verdict["result"]["explanation"]


def test_conversation_accepts_half_a_gibibyte_and_524_mb():
    for typed in ("524 MB", "500 MiB", "0.5 GiB", "524288000"):
        assert ask(id=1, op="check", fn=NAMES[1], args={"seed": 0}, answer=typed)["result"]["correct"], typed
    assert not ask(id=1, op="check", fn=NAMES[1], args={"seed": 0}, answer="0.4 GB")["result"]["correct"]


def test_counts_are_plain_numbers_rounded_down():
    for typed, correct in (("76", True), ("76 conversations", True), ("81", False), ("70", False)):
        verdict = ask(id=1, op="check", fn=NAMES[2], args={"seed": 0}, answer=typed)["result"]
        assert verdict["correct"] is correct, typed
    tokens = ask(id=1, op="check", fn=NAMES[4], args={"seed": 0}, answer="798,339 tokens")["result"]
    assert tokens["correct"]
    assert not ask(id=1, op="check", fn=NAMES[4], args={"seed": 0}, answer="399169")["result"]["correct"]


def test_per_gpu_variants_cover_replicated_heads():
    replicated = [s for s in range(1, 200) if "replicated" in question(NAMES[3], s)["explanation"]]
    assert replicated, "no seed asks about TP beyond the KV heads"
    q = question(NAMES[3], replicated[0])
    assert "TP" in q["explanation"]


def test_fp8_replicas_all_fit_in_bf16_at_85_percent():
    for model, gpu, tp in drills.FP8_REPLICAS:
        assert kv_capacity(model, gpu, tp=tp, gpu_memory_utilization=0.85).kv_cache_tokens > 0


def test_facts():
    f = drills.facts()
    assert f["kv_per_token_8b"] == "131,072 bytes"
    assert f["kv_per_token_8b_kib"] == "128 KiB"
    assert f["kv_per_token_8b_mib"] == "0.125 MiB"
    assert f["conversation_8b"] == "524 MB"
    assert f["conversation_8b_mib"] == "500 MiB"
    assert f["fit_8b"] == "76"
    assert f["kv_per_gpu_70b_tp4"] == "81,920 bytes"
    assert f["tokens_bf16"] == "399,169"
    assert f["tokens_fp8"] == "798,339"


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), seed=st.integers(0, 1_000_000))
def test_every_variant_is_answerable(name, seed):
    q = framework.check_view(question(name, seed))
    assert q["answer"] > 0
    assert isinstance(q["answer"], int)
    assert q["question"].endswith("?")
    assert q["answer_text"] in q["explanation"]
    assert check_answer(q["answer_text"], q["answer"], q["unit"], q["tolerance"])["correct"]
    # A typo of ten times too much is never right.
    wrong = check_answer(str(q["answer"] * 10), q["answer"], q["unit"], q["tolerance"])
    assert not wrong["correct"]
    # The same seed gives the same question (deterministic, no hash()).
    assert question(name, seed) == question(name, seed)


@settings(max_examples=25, deadline=None)
@given(name=st.sampled_from(NAMES), seed=st.integers(1, 1_000_000))
def test_worker_checks_the_answer_text(name, seed):
    q = ask(id=1, op="drill", fn=name, args={"seed": seed})["result"]
    verdict = ask(id=2, op="check", fn=name, args={"seed": seed}, answer=q["answer_text"])["result"]
    assert verdict["correct"] and verdict["explanation"] == q["explanation"]


def test_what_step_2_teaches_is_accepted_for_the_worked_conversation():
    # Step 2 says a 4,000-token conversation on the 8B is "about half a gigabyte": that answer is right here.

    q = drills.conversation_drill(0)
    for typed in ("0.5 GB", "0.5 GiB", "524 MB", "500 MiB"):
        assert check_answer(typed, q["answer"], q["unit"], q["tolerance"])["correct"], typed
    for typed in ("0.4 GB", "0.6 GB", "1 GB"):
        assert not check_answer(typed, q["answer"], q["unit"], q["tolerance"])["correct"], typed
