"""calc.latency_loso: the accuracy page's leave-one-source-out figures equal a fresh computation."""

import json

import pytest

from calc import engine_profiles, latency_accuracy, latency_loso
from calc.widgets import accuracy as page
from tests.once import computed_once, reused_across_runs

STORED = latency_loso.stored()
# About 45 CPU s (every profile refitted once per source), computed on first use and reused by a later local run
# while calc is unchanged (tests/once.py).
FRESH = computed_once(reused_across_runs("latency-loso", lambda: json.loads(json.dumps(latency_loso.compute(),
                                                                                       sort_keys=True))))


def test_the_stored_file_equals_a_fresh_computation():
    # Rerun `python -m calc.latency_loso --write` after a change to calc moves it.
    assert dict(FRESH) == STORED


def test_the_pages_table_is_the_one_a_fresh_computation_renders():
    facts = page.latency_facts()
    assert facts["latency_summary_table"] == latency_loso.summary_table(dict(FRESH))
    for m in latency_accuracy.METRICS:
        assert facts[f"lat_median_{m}"] == page.percent(latency_loso.summary(dict(FRESH))[m]["all"]["loso"]["median_abs_error"])


def test_each_row_is_predicted_without_its_own_source():
    rows = {r["id"]: r for r in latency_accuracy.load_rows()}
    assert [r["id"] for r in STORED["rows"]] == list(rows)
    for r in STORED["rows"]:
        assert r["source"] == latency_accuracy.source_of(rows[r["id"]])
    # In every fold an engine with no rows left keeps none of its own: it is priced on vLLM's refit.
    sglang = STORED["folds"]["SGLang benchmark_vllm_060"]
    assert sglang["sglang-0.3"]["own_rows"] == 0
    vllm = engine_profiles.get_profile("vllm")  # vLLM has no SGLang rows: its refit there is its full fit
    for term in ("step_overhead_s", "tp_step_overhead_s", "seq_overhead_s", "request_overhead_s"):
        assert sglang["sglang-0.3"][term] == getattr(vllm, term)
    nightly = STORED["folds"]["vLLM nightly benchmark"]["vllm"]
    assert 0 < nightly["own_rows"] < len([r for r in rows.values() if r["role"] == "calibration"
                                          and r["inputs"]["engine_profile"] == "vllm"])


def test_in_sample_errors_are_todays_predictions():
    by_id = {r.id: r for r in latency_accuracy.evaluate()}
    for r in STORED["rows"]:
        assert r["in_sample_error"] == round(by_id[r["id"]].error, 6) or \
            abs(r["in_sample_error"] - by_id[r["id"]].error) < 1e-5 * max(1.0, abs(by_id[r["id"]].error))


def test_the_summary_counts_rows_and_sources_and_the_table_shows_every_metric():
    s = latency_loso.summary(STORED)
    validation = [r for r in STORED["rows"] if r["role"] == "validation"]
    for m in latency_accuracy.METRICS:
        chosen = [r for r in validation if r["metric"] == m]
        assert s[m]["all"]["loso"]["n"] == len(chosen) == s[m]["all"]["in_sample"]["n"]
        assert s[m]["all"]["loso"]["sources"] == len({r["source"] for r in chosen})
        assert sum(cell["loso"]["n"] for key, cell in s[m].items() if key != "all") == len(chosen)
    table = latency_loso.summary_table(STORED)
    assert table.count("**all engines**") == len(latency_accuracy.METRICS)


def test_a_change_in_one_rows_loso_error_changes_the_page_table():
    moved = json.loads(json.dumps(STORED))
    for r in moved["rows"]:
        if r["role"] == "validation" and r["metric"] == "ttft":
            r["loso_error"] += 0.5
    assert latency_loso.summary_table(moved) != latency_loso.summary_table(STORED)


def test_refused_rows_are_stored_apart_with_their_reason_and_count_in_no_median():
    assert STORED["refused"] == [dict(r) for r in latency_accuracy.refused()]
    refused = {r["id"] for r in STORED["refused"]}
    assert refused and refused.isdisjoint(r["id"] for r in STORED["rows"])
    listed = latency_loso.refused_list(STORED)
    for source in {r["source"] for r in STORED["refused"]}:
        n = sum(r["source"] == source for r in STORED["refused"])
        assert f"**{source}**" in listed and f"{n} figures" in listed
    assert page.latency_facts()["lat_refused_list"] == listed


def test_the_source_table_counts_each_sources_validation_rows():
    s = latency_loso.by_source(STORED)
    validation = [r for r in STORED["rows"] if r["role"] == "validation"]
    assert sum(cell["n"] for cell in s.values()) == len(validation)
    assert set(s) == {r["source"] for r in validation}
    table = latency_loso.source_table(STORED)
    assert len(table.splitlines()) == len(s) + 2
    assert page.latency_facts()["lat_source_table"] == table


def test_before_the_added_sources_is_the_other_sources_rows_and_now_is_every_row():
    s = latency_loso.before_after(STORED)
    validation = [r for r in STORED["rows"] if r["role"] == "validation"]
    now = latency_loso.summary(STORED)
    for m in latency_accuracy.METRICS:
        before = [r for r in validation if r["metric"] == m and r["source"] not in latency_loso.ADDED_SOURCES]
        assert s[m]["all"]["before"]["loso"]["n"] == len(before)
        assert s[m]["all"]["now"] == now[m]["all"]
    # Where a reading changed a row, its as-received errors are stored beside and differ from today's.
    changed = [r for r in STORED["rows"] if "loso_error_as_received" in r]
    assert changed and {r["source"] for r in changed} == {"TensorRT-LLM perf overview",
                                                          "LambdaLabsML vllm-benchmark (vLLM 0.5.4, H100 SXM)"}
    changed = [r for r in changed if r["source"] == "TensorRT-LLM perf overview"]
    # It moves the runs whose batch the simulator's cap held (most on eight H200s); where the KV cache binds first
    # (eight H100s, 405B's weights leave little room) the two readings nearly agree.
    moved = {r["id"] for r in changed if abs(r["loso_error_as_received"] - r["loso_error"]) > 0.01}
    assert "trtllm-perf-overview-llama-3.1-405b-fp8-h200-tp8-128-128-throughput" in moved
    assert len(moved) >= len(changed) // 2
    assert set(latency_loso.ADDED_SOURCES) <= {r["source"] for r in STORED["rows"]} | {r["source"] for r in STORED["refused"]}
    assert page.latency_facts()["lat_before_after_table"] == latency_loso.before_after_table(STORED)


def test_v1s_first_token_at_low_load_misses_on_small_models_not_on_a_72b_one():
    # The page's vllm-v1 TTFT miss (calc.widgets.accuracy.ENGINE_MISS_MECHANISMS): on the L4 sweep's 0.5B model at
    # one and two clients calc's first token is far short while its decode step is within a fifth of the measured
    # one; on a 72B model on four H100s the same inherited request cost puts the first token at one client within
    # a seventh, long, as its decode step is there: a fixed time on V1's request path a 72B prefill hides.
    by_id = {r["id"]: r for r in STORED["rows"]}
    l4 = "wmx-vllm-0.23.0-qwen2.5-0.5b-bf16-l4-tp1-256-128-c"
    assert by_id[l4 + "1-ttft-p50"]["loso_error"] < -0.4 and by_id[l4 + "2-ttft-p50"]["loso_error"] < -0.4
    assert abs(by_id[l4 + "1-itl-p50"]["loso_error"]) < 0.2
    # calc prefills the two clients' prompts in one step: its TTFT is the same at one and two clients.
    assert by_id[l4 + "2-ttft-p50"]["loso"] == by_id[l4 + "1-ttft-p50"]["loso"]
    ib = "inferencebench-vllm-0.22.1-qwen2.5-72b-bf16-h100-tp4-chat-40-128-c"
    assert 0 < by_id[ib + "1-ttft-p50"]["loso_error"] < 0.15
    assert by_id[ib + "1-ttft-p50"]["loso_error"] < by_id[ib + "1-tpot-p50"]["loso_error"]
    misses = page.latency_facts()["lat_engine_misses"]
    assert "its TTFT rows are three runs" in misses and "a host of 64 CPUs" in misses
    # The second small model (Qwen3 0.6B on an H100 at 16 req/s) misses the same way: first token far short, time
    # per token within a tenth.
    kv = "kvcached-vllm-0.19.0-qwen3-0.6b-bf16-h100-tp1-512-128-rps16-"
    assert by_id[kv + "ttft-p50"]["loso_error"] < -0.5 and abs(by_id[kv + "tpot-p50"]["loso_error"]) < 0.1


def test_v1s_decode_step_is_long_on_both_current_runs_and_hiding_its_costs_splits_them():
    # The page's vllm-v1 end-to-end miss: calc adds V0's fitted step costs to the GPU's time; at 0.14 and later
    # V1 overlaps scheduling with the GPU. Both current V1 runs' decode figures come out long at every load, and
    # with the step costs taken off entirely the four H100s' step lands within 5% while the L4's goes over a
    # tenth short: the data cannot say how much the overlap hides.
    by_id = {r["id"]: r for r in STORED["rows"]}
    ib = "inferencebench-vllm-0.22.1-qwen2.5-72b-bf16-h100-tp4-chat-40-128-c"
    l4 = "wmx-vllm-0.23.0-qwen2.5-0.5b-bf16-l4-tp1-256-128-c"
    assert all(0.15 < by_id[f"{ib}{c}-tpot-p50"]["loso_error"] < 0.3 for c in (1, 4, 16))
    assert all(0.1 < by_id[f"{l4}{c}-itl-p50"]["loso_error"] < 0.3 for c in (1, 2, 4, 8, 16, 32))
    from calc.widgets.accuracy import _step_with_costs_hidden
    ib1, l41 = by_id[ib + "1-tpot-p50"], by_id[l4 + "1-itl-p50"]
    rows = {r["id"]: r for r in latency_accuracy.load_rows()}
    assert abs(_step_with_costs_hidden(ib1, rows[ib1["id"]]) / ib1["measured"] - 1) < 0.05
    assert _step_with_costs_hidden(l41, rows[l41["id"]]) / l41["measured"] - 1 < -0.1
    assert "async scheduling, on by default since 0.14.0" in page.latency_facts()["lat_engine_misses"]


KV_INF = "kvcached-vllm-0.19.0-qwen3-0.6b-bf16-h100-tp1-512-128-inf-"


def test_v1s_api_server_caps_the_output_of_500_prompts_at_once_near_one_token_per_serving_cost():
    # The page's vllm-v1 time-per-token and throughput misses: V1 pays the per-sequence serving cost (fitted on V0
    # servers, where it lengthened every step) in its API server process, where it caps the output rate instead.
    # The 500-at-once run streamed within a tenth of one API server's cap at that cost, while calc, charging it in
    # every step of ~240 running sequences, is a third short in throughput and several times long per token.
    from calc.engine_profiles import get_profile

    by_id = {r["id"]: r for r in STORED["rows"]}
    cap_tok_s = 1 / get_profile("vllm").seq_overhead_s
    assert abs(by_id[KV_INF + "throughput"]["measured"] / cap_tok_s - 1) < 0.1
    assert by_id[KV_INF + "throughput"]["loso_error"] < -0.3
    assert by_id[KV_INF + "tpot-p50"]["loso_error"] > 2
    # Output rate x time per token: the requests in flight at a time, far below the 500 sent.
    assert by_id[KV_INF + "throughput"]["measured"] * by_id[KV_INF + "tpot-p50"]["measured"] / 1000 < 100
    misses = page.latency_facts()["lat_engine_misses"]
    assert "caps the server's output instead" in misses


@pytest.mark.xfail(strict=True, reason="calc's simulator has no V1 API server process: it charges the per-sequence "
                   "serving cost inside each engine step (the page's vllm-v1 time-per-token miss)")
def test_v1_500_prompts_at_once_throughput_and_time_per_token_within_a_fifth():
    by_id = {r["id"]: r for r in STORED["rows"]}
    assert abs(by_id[KV_INF + "throughput"]["loso_error"]) < 0.2 and abs(by_id[KV_INF + "tpot-p50"]["loso_error"]) < 0.2
