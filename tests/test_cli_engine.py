"""The CLI says what it did (issue #33): --engine, --frontend, the profile list, the memory basis, ShareGPT means."""

import json

from calc.cli import main
from calc.sim.workload import sharegpt_bench_means


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_simulate_names_engine_frontend_and_memory_basis(capsys):
    lesson = _json(capsys, ["simulate", "--requests", "10", "--rate", "inf"])
    assert (lesson["engine"], lesson["memory_basis"], lesson["frontend"]) == ("vllm", "marketed", "api-server")
    other = _json(capsys, ["simulate", "--model", "llama-3.1-8b", "--tp", "1", "--gpu", "rtx-3090",
                           "--engine", "vllm", "--engine-version", "0.10", "--frontend", "offline",
                           "--requests", "10", "--rate", "inf"])
    assert (other["engine"], other["memory_basis"], other["frontend"]) == ("vllm-v1", "engine", "offline")
    assert other["memory_model"] == "vllm-v1" and "max_num_batched_tokens" in other["engine_defaults_applied"]
    assert other["max_num_batched_tokens"] == 8192  # vLLM V1's LLM-class default on a small GPU


def test_engine_list_is_reachable_from_both_commands(capsys):
    sim = _json(capsys, ["simulate", "--engine", "list"])
    step = _json(capsys, ["step", "--engine", "list"])
    assert [e["engine"] for e in sim["engines"]] == [e["engine"] for e in step["engines"]]
    assert {"vllm-v1", "sglang-0.4", "trtllm-serve"} <= {e["engine"] for e in sim["engines"]}


def test_help_lists_engine_and_frontend(capsys):
    for command in ("simulate", "step"):
        try:
            main([command, "--help"])
        except SystemExit:
            pass
        text = capsys.readouterr().out
        assert "--engine" in text and "--frontend" in text and "--memory-basis" in text


def test_step_names_the_engine_and_its_kv_basis(capsys):
    out = _json(capsys, ["step", "--model", "llama-3.1-8b", "--tp", "1", "--gpu", "rtx-3090"])
    assert out["engine"] == "vllm" and out["memory_basis"] == "engine" and out["kv_cache_tokens"] > 40_000
    assert _json(capsys, ["step"])["memory_basis"] == "marketed"


def test_sharegpt_without_prompt_tokens_uses_the_datasets_means(capsys):
    out = _json(capsys, ["simulate", "--model", "llama-3.1-8b", "--tp", "1", "--lengths", "sharegpt",
                         "--requests", "300", "--rate", "inf"])
    prompt_mean, _ = sharegpt_bench_means("llama3")
    mean = out["input_tokens"] / out["requests_completed"]
    assert 0.7 * prompt_mean < mean < 1.3 * prompt_mean  # not the 1,024 default scaled up (about 7,700 before)
