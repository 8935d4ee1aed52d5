"""The answer's form: deterministic JSON (rounded floats, sorted keys), the screen-only first answer, the CLI."""

from __future__ import annotations

import json

import pytest

from calc.cli import main
from calc.plan import presets
from calc.plan.explain import pareto_front, tidy
from calc.plan.search import plan

ARGS = ["plan", "--model", "llama-3.1-8b", "--rate", "3", "--gpus", "h100-sxm-80gb", "--weights", "fp8",
        "--kv-dtypes", "fp8", "--requests", "300", "--ttft-p99-s", "0.5", "--tpot-p99-s", "0.02"]


def _cli(capsys, *extra):
    code = main([*ARGS, *extra])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_cli_json_is_the_same_bytes_every_run_and_serial_or_parallel(capsys):
    code, first, _ = _cli(capsys, "--json")
    assert code == 0
    _, again, _ = _cli(capsys, "--json", "--serial")
    assert first == again
    data = json.loads(first)
    assert data["status"] == "confirmed" and data["best"]["confirmed"]
    assert json.dumps(data, indent=2, sort_keys=True) + "\n" == first
    assert data["request"]["peak_rate_per_s"] == 3 and data["targets"] == {"ttft_p99_s": 0.5, "tpot_p99_s": 0.02}


def test_cli_table_and_screen_only(capsys):
    code, out, _ = _cli(capsys, "--screen-only")
    assert code == 0 and out.startswith("Plan (screened): Serve Llama 3.1 8B at 3 requests/s")
    assert "vllm serve meta-llama/Llama-3.1-8B" in out and "vllm bench serve" in out


@pytest.mark.parametrize("argv, flag", [
    (["--rate", "0"], "--rate"), (["--tpot-p99-s", "-1"], "--tpot-p99-s"), (["--gpus", "a100"], "--gpus"),
    (["--gpu-budget", "0"], "--gpu-budget"), (["--prefix-share", "2"], "--prefix-share"),
    (["--owned", "h200=1,2"], "--owned"), (["--preset", "nope"], "--preset"), (["--trace", "/no/such.csv"], "--trace"),
    (["--acceptance", "1.5"], "--acceptance"), (["--weights", "int3"], "--weights"),
])
def test_bad_flags_exit_2_naming_the_flag(capsys, argv, flag):
    code = main(["plan", *argv, "--screen-only"])
    err = capsys.readouterr().err
    assert code == 2 and err.startswith("error: ") and flag in err and "Traceback" not in err


def test_screen_only_answer_ranks_as_the_screen_does():
    request = presets.request("lesson")
    first = plan(request, baseline=presets.baseline("lesson"), confirm=False)
    assert first["status"] == "screened" and first["best"]["source"] == "screen"
    assert first["best"]["usd_per_hour"] <= min(e["usd_per_hour"] for e in first["runners_up"])
    assert first["baseline"]["gpus"] > first["best"]["gpus"]


def test_tidy_and_front():
    assert tidy({"x": 2 / 3, "y": float("inf"), "z": (1, True)}) == {"x": 0.66667, "y": None, "z": [1, True]}
    points = [{"key": k, "usd_per_million": x, "m": y} for k, x, y in
              (("a", 1.0, 5.0), ("b", 1.0, 4.0), ("c", 2.0, 4.5), ("d", 3.0, 1.0))]
    assert pareto_front(points, "m") == ["b", "d"]


def test_a_model_no_priced_server_holds_is_told_what_would_help_not_to_relax_a_target(capsys):
    # DeepSeek-V3 in fp8 is 84 GB a GPU at TP 8: no priced server of the default GPUs holds it, every candidate
    # needs pipeline stages across servers (refused: topology), and no target had a say.
    code = main(["plan", "--model", "deepseek-v3", "--weights", "fp8", "--rate", "5", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["best"] is None
    assert set(data["space"]["refusals"]) == {"topology"}
    verdict = data["verdict"]
    assert "pipeline stages across servers" in verdict and "relax a target" not in verdict
    assert "h200" in verdict and "rtx-4090" not in verdict  # the unpriced GPUs a price would let in, only those


def test_plan_takes_a_config_json_path(capsys, tmp_path):
    # The planner screens with step coefficients that carry only the model's key: an imported model must resolve.
    path = tmp_path / "qwen3-8b.json"
    path.write_text(json.dumps({"model_type": "qwen3", "num_hidden_layers": 36, "hidden_size": 4096,
                                "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
                                "intermediate_size": 12288, "vocab_size": 151936, "tie_word_embeddings": False}))
    code = main(["plan", "--model", str(path), "--rate", "5", "--gpus", "h100-sxm-80gb", "--screen-only", "--json"])
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and data["best"] is not None and data["best"]["config"]["tp"] == 1
