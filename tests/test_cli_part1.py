"""The CLI's model, kv and memory subcommands: tables, JSON keys, the lesson's figures, the vLLM log, errors."""

import json
from pathlib import Path

import pytest

from calc.catalog.gpus import GPUS
from calc.catalog.models import MODELS
from calc.cli import main

CONFIGS = Path(__file__).parent / "data" / "configs"
VLLM_LOG = ["memory", "--model", "llama-3.1-8b", "--tp", "1", "--gpu-memory-utilization", "0.90",
            "--gpu-memory-gib", "23.58", "--weights-gib", "14.9888", "--activation-gib", "2.07",
            "--non-torch-gib", "0.35", "--max-model-len", "20000"]


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def test_help_lists_the_subcommands(capsys):
    assert main(["--help"]) == 0
    out = capsys.readouterr().out
    for name in ("model", "kv", "memory"):
        assert name in out
    for name in ("model", "kv", "memory"):
        assert main([name, "--help"]) == 0
    assert "--gpu-memory-gib" in capsys.readouterr().out


def test_memory_defaults_are_the_lesson(capsys):
    r = run_json(capsys, "memory", "--max-model-len", "8192")
    for key in ("kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "weights_bytes_per_gpu", "kv_cache_tokens",
                "kv_cache_tokens_raw", "kv_cache_blocks", "max_concurrency"):
        assert key in r
    assert r["kv_bytes_per_token"] == 327_680 and r["kv_bytes_per_token_per_gpu"] == 81_920
    assert round(r["weights_bytes_per_gpu"] / 1e9, 1) == 35.3
    assert r["requested_bytes"] == 72e9 and r["activation_bytes"] + r["non_torch_bytes"] == 4e9
    assert round(r["kv_cache_bytes"] / 1e9, 1) == 32.7
    assert abs(r["kv_cache_tokens"] / 399_169 - 1) < 0.001 and r["kv_cache_tokens_raw"] == 399_452
    assert r["kv_cache_tokens"] == r["kv_cache_blocks"] * 16
    assert int(r["max_concurrency"]) == 48


def test_memory_rounded_params_gives_399169(capsys):
    r = run_json(capsys, "memory", "--rounded-params")
    assert r["kv_cache_tokens_raw"] == 399_169 and r["max_concurrency"] is None


def test_memory_table_shows_every_term(capsys):
    assert main(["memory"]) == 0
    out = capsys.readouterr().out
    for text in ("weights", "activation workspace", "non-torch overhead", "KV cache", "left unclaimed (10%)",
                 "399,440", "35.28 GB", "memory basis: marketed", "GiB"):
        assert text in out


def test_runtime_basis(capsys):
    r = run_json(capsys, "memory", "--memory-basis", "runtime")
    assert r["total_bytes"] == 81_559 * 2**20 and r["memory_basis"] == "runtime"


def test_vllm_log_reproduced(capsys):
    r = run_json(capsys, *VLLM_LOG)
    assert abs(r["kv_cache_gib"] / 3.81 - 1) < 0.01
    assert abs(r["kv_cache_blocks"] / 1952 - 1) < 0.01 and r["kv_cache_blocks"] == 1952
    assert abs(r["max_concurrency"] / 1.56 - 1) < 0.01
    assert r["kv_cache_tokens"] == 1952 * 16
    assert main(VLLM_LOG) == 0
    out = capsys.readouterr().out
    assert "1.56x" in out and "1,952 blocks" in out and "3.813 GiB" in out


def test_kv_cache_gib_given_directly(capsys):
    r = run_json(capsys, "memory", "--model", "llama-3.1-8b", "--tp", "1", "--kv-cache-gib", "3.81",
                 "--max-model-len", "20000")
    assert r["kv_cache_blocks"] == 1950


def test_kv_subcommand(capsys):
    assert run_json(capsys, "kv", "--model", "llama-3.1-8b")["kv_bytes_per_token"] == 131_072
    r = run_json(capsys, "kv", "--model", "llama-3.1-70b", "--tp", "4", "--kv-dtype", "fp8")
    assert r["kv_bytes_per_token"] == 163_840 and r["kv_bytes_per_token_per_gpu"] == 40_960
    r = run_json(capsys, "kv", "--model", "llama-3.1-8b", "--context-tokens", "4000")
    assert r["kv_bytes_per_request"] == 524_288_000
    r = run_json(capsys, "kv", "--model", "mistral-7b", "--context-tokens", "100000")
    assert r["kv_tokens_per_request"] == 4096
    assert main(["kv", "--model", "llama-3.1-8b"]) == 0
    assert "128 KiB" in capsys.readouterr().out


def test_model_subcommand(capsys):
    r = run_json(capsys, "model", "--model", "deepseek-v3")
    assert r["attention"] == "mla" and r["experts"] == 256 and r["total_params"] > r["active_params"]
    listing = run_json(capsys, "model")
    assert len(listing["models"]) == len(MODELS) >= 12 and len(listing["gpus"]) == len(GPUS) >= 9
    assert main(["model"]) == 0
    assert "h100-sxm-80gb" in capsys.readouterr().out


@pytest.mark.parametrize("sub", ["model", "kv", "memory"])
def test_model_from_a_config_path(capsys, sub):
    path = str(CONFIGS / "mistral-7b.json")
    argv = [sub, "--model", path] + (["--tp", "1", "--gpu", "a100-80gb"] if sub == "memory" else [])
    r = run_json(capsys, *argv)
    if sub == "model":
        assert r["total_params"] == 7_241_732_096 and r["sliding_window"] == 4096
    else:
        assert r["kv_bytes_per_token"] == 131_072


@pytest.mark.parametrize("argv,needle", [
    (["memory", "--tp", "3"], "tp must divide"),
    (["memory", "--model", "llama-3.1-405b"], "does not fit"),
    (["memory", "--gpu", "rtx-2080"], "gpu must be one of"),
    (["memory", "--gpu-memory-gib", "-1"], "gpu_memory_gib"),
    (["memory", "--gpu-memory-gib", "nan"], "gpu_memory_gib"),
    (["memory", "--weights-gib", "-3"], "weights_gib"),
    (["memory", "--gpu-memory-utilization", "0"], "gpu_memory_utilization"),
    (["memory", "--block-size", "0"], "block_size"),
    (["memory", "--max-model-len", "-5"], "max_model_len"),
    (["memory", "--gpu-memory-utilization", "0.48"], "no memory left"),
    (["kv", "--model", "no-such-model"], "model must be one of"),
    (["kv", "--tp", "0"], "tp"),
    (["kv", "--context-tokens", "-1"], "context_tokens"),
    (["model", "--model", "{\"hidden_size\": 1"], "not valid JSON"),
])
def test_errors_are_one_line_with_status_2(capsys, argv, needle):
    assert main(argv) == 2
    captured = capsys.readouterr()
    assert needle in captured.err and "Traceback" not in captured.err
    assert captured.err.startswith("error: ")


def test_malformed_config_file(capsys, tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text('{"num_hidden_layers": 2, "hidden_size": 0}')
    assert main(["model", "--model", str(bad)]) == 2
    err = capsys.readouterr().err
    assert "hidden_size" in err


def test_argparse_choices_reject_unknown_formats(capsys):
    assert main(["memory", "--weights", "int3"]) == 2
    assert "invalid choice" in capsys.readouterr().err
