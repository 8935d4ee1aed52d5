"""Memory as the engine sees it (issue #33): KV capacity within 3% of every published start-up log."""

import pytest

from calc import accuracy, engine_memory, kv_logs, lesson, memory
from calc.catalog import model_from_config
from calc.units import GiB

ROWS = [m for m in accuracy.load_measurements() if m["kind"] == "kv_capacity"]


def _memory_model(engine_text: str) -> str:
    return engine_memory.memory_model_for(engine_text)


def engine_prediction(row: dict) -> float:
    """The row's KV capacity on the engine basis, from calc's own figures (no log term used)."""
    return kv_logs.logged_kv_prediction(row["inputs"], row["figure"]["unit"])


def test_the_engine_basis_errors_are_these_predictions():
    errors = accuracy.logged_kv_errors()
    assert list(errors) == [r["id"] for r in ROWS]
    for row in ROWS:
        assert errors[row["id"]] == engine_prediction(row) / row["figure"]["value"] - 1


def test_each_logs_engine_maps_to_the_memory_model_of_its_version():
    by_engine = {r["inputs"]["engine"]: _memory_model(r["inputs"]["engine"]) for r in ROWS}
    assert by_engine["vLLM v0.19.0"] == "vllm-v1"
    assert {m for e, m in by_engine.items() if "0.6" in e or "2031" in e} == {"vllm-v0"}
    assert {m for e, m in by_engine.items() if "Model Runner V2" in e} == {"vllm-v1-mrv2"}
    # Before 0.8 the version alone says V0, but a log that ran V1 (VLLM_USE_V1=1) is sized by V1's rule.
    assert {m for e, m in by_engine.items() if "V1 engine" in e and "Model Runner V2" not in e} == {"vllm-v1"}
    assert {m for e, m in by_engine.items() if "0.7.1" in e} == {"vllm-v0"}


#: Logs the engine basis misses by more than 3%, with what is known of why. They stay in the data and on the
#: accuracy page; the xfail is strict, so a change that brings one within 3% fails here until its entry is removed.
KNOWN_MISSES: dict[str, str] = {
    "vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.25": (
        "3.6% short. This server's 0.5 and 0.25 logs fix CUDA's total at 79.28 GiB between them, where calc "
        "assumes 79.56 for an A100 80GB (no log of its own total), and then leave 0.62 GiB for the profiling pass "
        "and the memory outside PyTorch, where calc subtracts 0.87: two errors that cancel at half the card "
        "(0.4% short) and not at a quarter, where the pool is 5 GiB. Which term vLLM 0.10.1.1 profiles smaller "
        "is not found (test_the_pair_of_logs_places_the_miss_in_two_terms)"),
}


def _param(row):
    if row["id"] in KNOWN_MISSES:
        return pytest.param(row, id=row["id"], marks=pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[row["id"]]))
    return pytest.param(row, id=row["id"])


@pytest.mark.parametrize("row", [_param(r) for r in ROWS])
def test_engine_basis_lands_within_3_percent_of_the_start_up_log(row):
    predicted = engine_prediction(row)
    assert predicted == pytest.approx(row["figure"]["value"], rel=0.03), (predicted, row["figure"]["value"])


def test_the_logs_cover_four_gpu_models_and_the_known_misses_are_rows():
    ids = {r["id"] for r in ROWS}
    assert set(KNOWN_MISSES) <= ids and len(ids - set(KNOWN_MISSES)) >= 11
    assert len({r["inputs"]["gpu"] for r in ROWS}) >= 4


def _with_memory_model(row, memory_model):
    return engine_prediction({**row, "inputs": {**row["inputs"], "engine": memory_model}})


def test_model_runner_v2_explains_the_rtx_4090_logs_where_v1s_rule_left_them_short():
    # Qwen3 on vLLM of July 2026 runs Model Runner V2: its profile run samples after the forward pass, so the
    # peak is the larger of the two. V1's rule (their sum, a sampler sorting for top-k/top-p) leaves both
    # pools 5-9% short; V2's lands within 1%, and the 8,192-token budget costs the pool what the log says.
    by_id = {r["id"]: r for r in ROWS}
    low, high = by_id["vllm-qwen3-8b-bf16-rtx4090-tp1-mnbt2048"], by_id["vllm-qwen3-8b-bf16-rtx4090-tp1-mnbt8192"]
    for row in (low, high):
        assert _memory_model(row["inputs"]["engine"]) == "vllm-v1-mrv2"
        logged = row["figure"]["value"]
        assert -0.09 < _with_memory_model(row, "vllm V1") / logged - 1 < -0.05
        assert abs(engine_prediction(row) / logged - 1) < 0.01
    assert engine_prediction(low) - engine_prediction(high) == pytest.approx(
        low["figure"]["value"] - high["figure"]["value"], rel=0.03)


def test_model_runner_v2_peak_is_the_larger_of_forward_and_sampler_not_their_sum():
    qwen = model_from_config(next(r for r in ROWS if "rtx4090" in r["id"])["inputs"]["model"]["config"])
    for tokens in (2048, 8192):
        forward = tokens * engine_memory.forward_peak_bytes_per_token(qwen)
        sampler = engine_memory.mrv2_sampler_phase_bytes(qwen, max_num_batched_tokens=tokens, max_num_seqs=256)
        v2 = engine_memory.activation_peak_bytes(qwen, memory_model="vllm-v1-mrv2", max_num_batched_tokens=tokens,
                                                 max_num_seqs=256)
        v1 = engine_memory.activation_peak_bytes(qwen, memory_model="vllm-v1", max_num_batched_tokens=tokens,
                                                 max_num_seqs=256)
        assert v2 == max(forward, sampler) and v1 > v2
    # At 2,048 tokens the sampler's rows (256 x 151,936 logits, 6 bytes each) outweigh the forward's; at 8,192
    # the forward's activations do.
    assert engine_memory.mrv2_sampler_phase_bytes(qwen, max_num_batched_tokens=2048, max_num_seqs=256) > \
        2048 * engine_memory.forward_peak_bytes_per_token(qwen)
    assert engine_memory.mrv2_sampler_phase_bytes(qwen, max_num_batched_tokens=8192, max_num_seqs=256) < \
        8192 * engine_memory.forward_peak_bytes_per_token(qwen)
    rows = engine_memory.mrv2_sampler_phase_bytes(qwen, max_num_batched_tokens=100, max_num_seqs=256)
    assert rows == 2 * 4096 * 200 + 100 * 151_936 * engine_memory.MRV2_SAMPLER_BYTES_PER_LOGIT  # 100 rows, not 256


def test_the_consumer_card_was_about_half_on_the_lesson_basis_and_is_not_on_the_engine_basis():
    row = next(r for r in ROWS if r["id"] == "vllm-llama-3.1-8b-bf16-rtx3090-tp1-len20k")
    x = row["inputs"]
    lesson_basis = memory.kv_capacity(x["model"], x["gpu"], max_model_len=x["max_model_len"]).kv_cache_blocks
    assert lesson_basis / row["figure"]["value"] < 0.7  # the card as 24e9 bytes, a fixed 3 GB workspace
    assert abs(engine_prediction(row) / row["figure"]["value"] - 1) < 0.03


def test_the_lesson_keeps_its_teaching_figure_on_its_named_basis():
    cap = lesson.kv_capacity(rounded_params=True)
    assert cap.memory_basis == "marketed" and cap.total_bytes == 80e9 and cap.gpu_memory_utilization == 0.9
    assert cap.kv_cache_tokens_raw == 399_169
    engine = memory.kv_capacity("llama-3.1-70b", "h100-sxm-80gb", tp=4, memory_basis="engine")
    assert engine.memory_basis == "engine" and engine.total_bytes == pytest.approx(79.19 * GiB, abs=1)
    assert engine.kv_cache_tokens_raw != cap.kv_cache_tokens_raw


def test_workspace_grows_with_the_token_budget_and_the_sampler_with_the_sequence_cap():
    small = engine_memory.activation_peak_bytes("llama-3.1-8b", memory_model="vllm-v1",
                                                max_num_batched_tokens=2048, max_num_seqs=256)
    big = engine_memory.activation_peak_bytes("llama-3.1-8b", memory_model="vllm-v1",
                                              max_num_batched_tokens=16384, max_num_seqs=256)
    assert big - small == pytest.approx((16384 - 2048) * engine_memory.forward_peak_bytes_per_token("llama-3.1-8b"))
    more_seqs = engine_memory.activation_peak_bytes("llama-3.1-8b", memory_model="vllm-v1",
                                                    max_num_batched_tokens=2048, max_num_seqs=1024)
    assert more_seqs - small == pytest.approx(768 * 128_256 * engine_memory.SAMPLER_BYTES_PER_LOGIT)


def test_engine_rules_differ_where_the_engines_do():
    args = dict(tp=1, gpu_memory_utilization=0.9, memory_basis="engine", max_num_batched_tokens=8192,
                max_num_seqs=1024)
    vllm = memory.kv_capacity("llama-3.1-8b", "h100-sxm-80gb", memory_model="vllm-v1", **args).kv_cache_bytes
    sglang = memory.kv_capacity("llama-3.1-8b", "h100-sxm-80gb", memory_model="sglang", **args).kv_cache_bytes
    trtllm = memory.kv_capacity("llama-3.1-8b", "h100-sxm-80gb", memory_model="trtllm", **args).kv_cache_bytes
    # SGLang does not subtract the activation peak from its pool; TensorRT-LLM takes 0.9 of what is free.
    assert sglang > vllm and sglang == pytest.approx(0.9 * 79.19 * GiB - memory.weights_bytes_per_gpu("llama-3.1-8b") - 0.25 * GiB)
    free = 79.19 * GiB - memory.weights_bytes_per_gpu("llama-3.1-8b") - 0.25 * GiB
    assert trtllm == pytest.approx(0.9 * (free - engine_memory.activation_peak_bytes(
        "llama-3.1-8b", memory_model="trtllm", max_num_batched_tokens=8192, max_num_seqs=1024)), rel=1e-9)


def test_the_pair_of_logs_places_the_miss_in_two_terms():
    # Two logs of one server a quarter of the card apart imply CUDA's total whatever vLLM subtracts; calc's total
    # for the card is higher and its subtraction larger, by amounts that cancel at half the card only.
    from calc.widgets.accuracy import PAIR

    pair = accuracy.pair_terms_gib(*PAIR)
    assert 79.2 < pair["total"] < 79.35 < pair["calc_total"] - 0.1
    assert pair["calc_overhead"] - pair["overhead"] > 0.2
    half, quarter = (accuracy.logged_kv_errors()[k] for k in PAIR)
    assert abs(half) < 0.01 and quarter < -0.03
