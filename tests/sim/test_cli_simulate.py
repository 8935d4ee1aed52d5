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


def test_concurrency_is_the_closed_loop_and_tpot_is_printed_beside_itl(capsys):
    out = run_json(capsys, "--concurrency", "8", "--requests", "40", "--think-time-s", "0.1")
    assert out["requests_completed"] == 40 and out["running_max"] == 8
    assert out["tpot_p50_s"] is not None and out["tpot_p90_s"] >= out["tpot_p50_s"]
    assert main(["simulate", "--concurrency", "8", "--requests", "40"]) == 0
    text = capsys.readouterr().out
    lines = text.splitlines()
    itl = next(i for i, line in enumerate(lines) if line.startswith("ITL p50 / p90 / p99"))
    assert lines[itl + 1].startswith("TPOT p50 / p90 / p99") and "ms" in lines[itl + 1]


def test_concurrency_runs_the_same_as_the_scenario_it_makes(capsys):
    from calc.sim import Scenario, simulate

    out = run_json(capsys, "--concurrency", "5", "--requests", "30", "--request-overhead-s", "0.02")
    direct = simulate(Scenario.from_dict({"request_overhead_s": 0.02, "workload": {
        "arrival": "closed-loop", "concurrency": 5, "requests": 30}})).summary
    # the CLI adds what ran (engine profile, frontend, memory basis: calc.cli.simulate.what_ran) to the summary
    assert {k: out[k] for k in direct} == json.loads(json.dumps(direct))
    assert (out["engine"], out["memory_basis"], out["frontend"]) == ("vllm", "marketed", "api-server")


def test_rate_and_concurrency_exclude_each_other(capsys):
    assert main(["simulate", "--concurrency", "4", "--rate", "2"]) == 2
    assert "give --rate (requests arriving at a rate, or inf for all at once) or --concurrency" in capsys.readouterr().err
    assert main(["simulate", "--concurrency", "4", "--rate", "inf"]) == 2
    assert "not both" in capsys.readouterr().err
    assert main(["simulate", "--concurrency", "4", "--arrival", "bursty"]) == 2
    assert "--arrival bursty is an open one" in capsys.readouterr().err
    assert main(["simulate", "--concurrency", "0"]) == 2
    assert "workload.concurrency must be a whole number between 1 and 100000" in capsys.readouterr().err
    assert main(["simulate", "--arrival", "closed-loop"]) == 2
    assert "workload.concurrency (the closed loop's clients) must be" in capsys.readouterr().err
    assert main(["simulate", "--preset", "step14-scale-on-gpu-util", "--concurrency", "4"]) == 2
    assert "--concurrency does not apply" in capsys.readouterr().err


def test_a_rate_on_a_closed_loop_file_makes_it_poisson(tmp_path, capsys):
    path = tmp_path / "closed.json"
    path.write_text(json.dumps({"workload": {"arrival": "closed-loop", "concurrency": 4, "requests": 12}}))
    closed = run_json(capsys, "--scenario", str(path))
    opened = run_json(capsys, "--scenario", str(path), "--rate", "3")
    assert closed["running_max"] == 4
    assert opened["running_max"] > 4 and closed["duration_s"] != opened["duration_s"]  # at 3/s about 15 in flight
