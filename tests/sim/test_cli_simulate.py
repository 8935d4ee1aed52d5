"""python -m calc simulate: flags, --scenario files, --json keys, errors as messages."""

import json
import subprocess
import sys

from calc.cli import main

REQUIRED = ("requests_completed", "throughput_output_tokens_per_s", "ttft_p50_s", "ttft_p99_s", "itl_p50_s", "itl_p99_s")


def run_json(capsys, *args):
    assert main(["simulate", *args, "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_json_holds_the_issue_keys(capsys):
    out = run_json(capsys, "--model", "llama-3.1-8b", "--gpu", "h100-sxm-80gb", "--tp", "1", "--weights", "fp8",
                   "--kv-dtype", "fp8", "--prompt-tokens", "500", "--output-tokens", "50", "--requests", "30",
                   "--rate", "5", "--seed", "3")
    for key in REQUIRED:
        assert out[key] is not None, key
    assert out["requests_completed"] == 30 and out["output_tokens"] == 1500


def test_rate_inf_is_all_at_once_and_seed_changes_the_run(capsys):
    a = run_json(capsys, "--requests", "20", "--rate", "inf", "--lengths", "chat")
    b = run_json(capsys, "--requests", "20", "--rate", "inf", "--lengths", "chat", "--seed", "1")
    assert a["queue_depth_max"] >= 1 and a["output_tokens"] != b["output_tokens"]


def test_scenario_file_with_flags_on_top(tmp_path, capsys):
    path = tmp_path / "scenario.json"
    path.write_text(json.dumps({"model": "llama-3.1-8b", "tp": 1,
                                "workload": {"requests": 10, "prompt_tokens": 300, "output_tokens": 40}}))
    out = run_json(capsys, "--scenario", str(path), "--output-tokens", "20")
    assert out["model"] == "Llama 3.1 8B" and out["output_tokens"] == 200


def test_series_flag_adds_the_time_series(capsys):
    out = run_json(capsys, "--requests", "20", "--series")
    assert set(out["time_series"]) >= {"t_s", "queue_depth", "running", "kv_use", "gpu_util"}


def test_table_by_default(capsys):
    assert main(["simulate", "--requests", "10", "--prefix-tokens", "200", "--prefix-caching"]) == 0
    text = capsys.readouterr().out
    assert "TTFT p50 / p90 / p99" in text and "prefix cache hit rate" in text and "GPU-Util as reported" in text


def test_bad_input_is_a_message_and_status_2(capsys):
    assert main(["simulate", "--tp", "3"]) == 2
    assert "tp must" in capsys.readouterr().err
    assert main(["simulate", "--scenario", "/nonexistent.json"]) == 2
    assert "cannot be read" in capsys.readouterr().err
    assert main(["simulate", "--max-num-seqs", "9000"]) == 2
    assert "max_num_batched_tokens" in capsys.readouterr().err


def test_as_a_new_user_runs_it():
    done = subprocess.run([sys.executable, "-m", "calc", "simulate", "--requests", "50", "--rate", "4"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "Llama 3.1 70B on 4 x H100" in done.stdout and "cost per million output tokens" in done.stdout
