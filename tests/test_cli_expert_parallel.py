"""--expert-parallel (--ep) on simulate and step: MoE experts split whole across the GPUs (calc.moe), named refusals."""

import json

from calc.cli import main
from calc.moe import expected_max_local_experts


def _json(capsys, argv):
    assert main(argv + ["--json"]) == 0
    return json.loads(capsys.readouterr().out)


def test_step_prices_the_busiest_gpus_experts(capsys):
    base = ["step", "--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--weights", "fp8"]
    tp, ep = _json(capsys, base), _json(capsys, base + ["--expert-parallel"])
    assert (tp["expert_parallel"], ep["expert_parallel"]) == (False, True)
    # One decode token touches 8 of 256 experts: tensor parallelism reads 1/8 of each on every GPU, expert
    # parallelism waits for the GPU holding most of them (expected max of 8 binomial counts, 2.54 of its 32).
    busiest = expected_max_local_experts(1, 256, 8, 8)
    assert 2.5 < busiest < 2.6
    assert 1.7 < ep["decode"]["bytes"] / tp["decode"]["bytes"] < 2.0
    assert ep["decode"]["time_s"] > 1.3 * tp["decode"]["time_s"]  # the weights dominate a decode step
    assert ep["engine_terms"]["decode_step_s"] > tp["engine_terms"]["decode_step_s"]
    # A 1,024-token prefill touches every expert: the two layouts read the same bytes.
    assert ep["prefill"]["bytes"] == tp["prefill"]["bytes"]
    assert _json(capsys, base + ["--ep"])["decode"] == ep["decode"]


def test_simulate_runs_expert_parallel_and_says_so(capsys):
    base = ["simulate", "--model", "mixtral-8x7b", "--tp", "2", "--requests", "12", "--rate", "0.5"]
    tp, ep = _json(capsys, base), _json(capsys, base + ["--ep"])
    assert (tp["expert_parallel"], ep["expert_parallel"]) == (False, True)
    # At a light load (a few sequences a step) the busiest GPU's experts cost more than 1/2 of the touched ones.
    assert ep["tpot_p50_s"] > 1.1 * tp["tpot_p50_s"]
    assert main(base[:-4] + ["--requests", "2", "--rate", "inf", "--ep"]) == 0
    assert "experts split whole across the GPUs" in capsys.readouterr().out


def test_dense_models_and_indivisible_experts_are_named_refusals(capsys):
    for argv in (["simulate", "--expert-parallel"], ["step", "--ep"],
                 ["simulate", "--model", "llama-3.1-8b", "--tp", "1", "--ep", "--requests", "2"]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert "expert_parallel needs a mixture-of-experts model" in err and "has no routed experts" in err
        assert "Traceback" not in err
    assert main(["step", "--model", "mixtral-8x7b", "--tp", "3", "--ep"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "tp" in err
