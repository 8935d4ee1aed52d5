"""The CLI's step, spec, prefix, context, scale and cost subcommands: help, tables, JSON, figures, errors."""

import json
from pathlib import Path

import pytest

from calc.cli import main
from calc.units import round_sig

CONFIGS = Path(__file__).parent / "data" / "configs"
SUBCOMMANDS = ("step", "spec", "prefix", "context", "scale", "cost")


def run_json(capsys, *argv):
    code = main([*argv, "--json"])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def run_table(capsys, *argv):
    code = main(list(argv))
    out = capsys.readouterr().out
    assert code == 0, out
    return out


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_help_and_table_and_json(capsys, name):
    assert main(["--help"]) == 0
    assert name in capsys.readouterr().out
    assert main([name, "--help"]) == 0
    assert "--json" in capsys.readouterr().out
    table = run_table(capsys, name)
    assert "---" in table and not table.lstrip().startswith("{")
    data = run_json(capsys, name)
    assert isinstance(data, dict) and data


def _floats(value):
    if isinstance(value, float):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _floats(v)
    elif isinstance(value, list):
        for v in value:
            yield from _floats(v)


@pytest.mark.parametrize("name", SUBCOMMANDS)
def test_json_floats_are_rounded_and_finite(capsys, name):
    data = run_json(capsys, name)
    for x in _floats(data):
        assert x == x and abs(x) != float("inf")
        assert round_sig(x) == x


def test_step_figures(capsys):
    r = run_json(capsys, "step")
    assert r["decode"]["bound"] == "memory" and r["prefill"]["bound"] == "compute"
    assert r["ridge_flops_per_byte"]["bf16"] == pytest.approx(295.224, rel=1e-5)
    assert r["efficiency"]["compute"] == 0.51 and "only" in r["efficiency"]["source"]


def test_step_calibration_reproduces_the_row_within_25_percent(capsys):
    r = run_json(capsys, "step", "--calibration")
    assert [row["published_tokens_per_s"] for row in r["calibration"]] == [28312, 15220, 9305, 1351]
    assert all(0.75 <= row["ratio"] <= 1.25 for row in r["calibration"])
    assert "ratio" in run_table(capsys, "step", "--calibration")


def test_spec_figures(capsys):
    r = run_json(capsys, "spec", "--acceptance", "0.8", "--k", "4", "--draft-cost-ratio", "0.05",
                 "--verify-tokens", "5", "--batches", "1,4096", "--context-tokens", "64")
    m = r["methods"][0]
    assert m["tokens_per_step"] == pytest.approx(3.3616) and m["draft_cost"] == "given"
    assert m["curve"][0]["speedup"] > 2 and m["curve"][1]["speedup"] < 1
    methods = {m["method"]: m for m in run_json(capsys, "spec")["methods"]}
    assert 16 <= methods["eagle"]["break_even_batch"] <= 32 and methods["eagle"]["draft_cost"].startswith("derived")
    assert methods["eagle3"]["break_even_batch"] > 64


def test_prefix_figures(capsys):
    r = run_json(capsys, "prefix", "--shared-tokens", "2500", "--variable-tokens", "200")
    stable, variable = r["orders"]
    assert (stable["order"], stable["hit_tokens"]) == ("stable-first", 2496)
    assert variable["hit_tokens"] == 0 and stable["prefill_s_cached"] < stable["prefill_s_uncached"]


def test_context_figures(capsys):
    r = run_json(capsys, "context", "--contexts", "1280,100000")
    assert r["displaced"]["conversations"] == 78
    assert r["curve"][1]["kv_bytes"] == pytest.approx(100_000 / 1280 * r["curve"][0]["kv_bytes"])


def test_scale_figures(capsys):
    r = run_json(capsys, "scale", "--weights-gb", "141", "--pod-start-s", "60", "--load-gb-per-s", "2")
    assert r["scale_up_delay_s"] == 130.5


def test_cost_figures(capsys):
    r = run_json(capsys, "cost")
    assert round(r["discount_1_to_10"], 1) == 9.7 and r["discount_10_to_100"] < 8.5
    assert r["usd_per_gpu_hour"] == 3.78 and "2026-05-07" in r["price_source"]
    r = run_json(capsys, "cost", "--usd-per-gpu-hour", "2", "--tokens-per-s", "1000")
    assert r["price"]["usd_per_million_tokens"] == pytest.approx(8 / 3.6, rel=1e-5)


def test_cost_with_the_prompts_prefill(capsys):
    # step 17's worked case: 50 ms, 1,024-token prompts and 256-token answers (context 1,152)
    decode = run_json(capsys, "cost")
    assert decode["prompt_tokens"] == 0 and decode["sustained"]["limited_by"] == "max_batch"
    r = run_json(capsys, "cost", "--prompt-tokens", "1024")
    assert (r["sustained"]["batch"], round(r["sustained"]["tokens_per_s"])) == (113, 2275)
    assert r["curve"] == decode["curve"]  # the cost-against-batch curve stays decode only
    assert "1,024-token prompts prefilled" in run_table(capsys, "cost", "--prompt-tokens", "1024")
    assert main(["cost", "--prompt-tokens", "1152"]) == 2
    assert "context_tokens" in capsys.readouterr().err


def test_model_from_a_config_json(capsys):
    path = next(iter(sorted(CONFIGS.glob("*.json"))), None)
    if path is None:
        pytest.skip("no config.json fixtures")
    r = run_json(capsys, "step", "--model", str(path), "--tp", "1")
    assert r["decode"]["time_s"] > 0


@pytest.mark.parametrize("argv, field", [
    (["step", "--tp", "3"], "tp"),
    (["step", "--batch", "0"], "batch"),
    (["spec", "--acceptance", "1.5"], "acceptance"),
    (["spec", "--batches", "1,two"], "batches"),
    (["prefix", "--block-size", "0"], "block_size_tokens"),
    (["context", "--long-tokens", "0"], "long_tokens"),
    (["scale", "--load-gb-per-s", "0"], "load_gb_per_s"),
    (["cost", "--gpu", "h200", "--model", "llama-3.1-8b", "--tp", "1"], "usd_per_gpu_hour"),
    (["cost", "--model", "no-such-model"], "model"),
])
def test_bad_input_exits_2_naming_the_field(capsys, argv, field):
    assert main(argv) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and field in err


def test_step_lists_each_engine_term_with_its_value_role_and_source():
    import io
    from contextlib import redirect_stdout

    from calc.cli import main
    from calc.engine_profiles import get_profile

    out = io.StringIO()
    with redirect_stdout(out):
        assert main(["step", "--engine", "sglang-0.3"]) == 0
    text = out.getvalue()
    assert "Engine terms the simulator adds to this roofline" in text
    for term, value, role, source in get_profile("sglang-0.3").term_rows():
        line = next(l for l in text.splitlines() if l.startswith(term))
        assert role in line and source[:40] in line, term
    assert "allreduce_latency_s" in text and "pull request #2904" in text
