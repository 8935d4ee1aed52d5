"""The page "Plan a deployment": its JSON is the CLI's byte for byte, its views read off the plan's answer."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from calc.plan.explain import LESSON_STEPS
from calc.widgets import framework
from calc.widgets import plan as page

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _cli_stdout(command: str) -> str:
    """What the page's command prints in a terminal (a fresh process, processes allowed: parallel = serial)."""
    argv = command.split()
    assert argv[:3] == ["python", "-m", "calc"]
    done = subprocess.run([sys.executable, *argv[1:]], cwd=ROOT, capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": ROOT})
    return done.stdout


@pytest.mark.parametrize("controls", [{}, {"preset": "chat", "rate": "3", "prices": "h200=4.5"}],
                         ids=["lesson", "chat-with-a-price"])
def test_the_pages_json_is_the_clis_stdout_byte_for_byte(controls):
    shown = framework.call("plan.plan_json", controls)["outputs"]
    command = shown["command"]["text"]
    stdout = _cli_stdout(command)
    assert stdout == shown["json"]["text"] + "\n"
    # and the inputs are the ones asked for: the command carries each changed control as its flag
    for flag, value in (("--preset", controls.get("preset", "lesson")), ("--rate", controls.get("rate")),
                        ("--price", controls.get("prices"))):
        if value is not None:
            assert f"{flag} {value}" in command
    result = json.loads(stdout)
    assert result["status"] == "confirmed" and result["best"]["confirmed"] is True
    if controls.get("rate"):
        assert result["request"]["peak_rate_per_s"] == float(controls["rate"])
    if controls.get("prices"):
        assert "h200" not in result["space"]["unpriced_gpus"]


def test_the_lesson_plan_on_the_page_meets_its_targets_and_names_its_lesson_step():
    view = framework.call("plan.confirmed", {})
    result = page._answer(["--preset", "lesson"], screen_only=False)
    best = result["best"]
    for metric, target in result["targets"].items():
        assert best["predicted"][metric] <= target
    constraint = best["binding"]["constraint"]
    step = int(LESSON_STEPS[constraint].split("/")[-1][:2])
    assert view["outputs"]["binding"]["text"].startswith(f"{constraint}: taught in step {step} of the lesson")
    assert view["tables"]["words"]["rows"] == [[line] for line in result["explanation"]]
    assert view["outputs"]["verdict"]["text"] == result["verdict"] and result["verdict"].startswith("Beats")
    assert view["tables"]["commands"]["rows"][0][1] == best["commands"]["serve"]
    assert view["tables"]["commands"]["rows"][0][1].startswith("vllm serve meta-llama/Llama-3.1-70B")
    # the table: the plan first, at most five ranked rows, then the hand-made deployment it beats on $/M
    rows = view["tables"]["top"]["rows"]
    ranked = [r for r in rows if r[0] != "hand-made"]
    assert ranked[0][0] == "plan" and ranked[0][1] == best["label"] and 2 <= len(ranked) <= 5
    assert rows[-1][0] == "hand-made" and rows[-1][1] == result["baseline"]["label"]
    assert best["usd_per_million"]["all_at_peak"] < result["baseline"]["usd_per_million"]["all_at_peak"]
    assert rows[0][2].endswith(f"= {best['gpus']}, ${best['usd_per_hour']:,.2f}/h")


def test_the_pareto_chart_plots_every_simulated_point_and_joins_each_front():
    result = page._answer(["--preset", "lesson"], screen_only=False)
    figure = framework.call("plan.confirmed", {})["figures"]["pareto"]
    traces = {t["name"]: t for t in figure["data"]}
    points = result["pareto"]["points"]
    assert traces["p99 TTFT"]["x"] == [p["usd_per_million"] for p in points]
    assert traces["p99 TPOT"]["y"] == [p["tpot_p99_s"] for p in points]
    by_key = {p["key"]: p for p in points}
    assert traces["p99 TPOT front"]["y"] == [by_key[k]["tpot_p99_s"] for k in result["pareto"]["front_tpot_p99"]]
    # a front never rises as the price falls... it falls as the price rises
    ys = traces["p99 TPOT front"]["y"]
    assert all(a > b for a, b in zip(ys, ys[1:]))
    assert traces["p99 TPOT target"]["y"] == [result["targets"]["tpot_p99_s"]] * 2


def test_the_first_answer_is_the_screens_and_says_the_command_that_prints_it():
    view = framework.call("plan.first_answer", {"preset": "batch", "gpus": "h100-sxm-80gb"})
    command = view["outputs"]["command"]["text"]
    assert command == "python -m calc plan --preset batch --gpus h100-sxm-80gb --screen-only --json"
    screened = json.loads(_cli_stdout(command))
    assert screened["status"] == "screened"
    assert view["tables"]["words"]["rows"] == [[line] for line in screened["explanation"]]
    assert f"{screened['space']['candidates']:,} configurations screened" in view["outputs"]["searched"]["text"]


def test_zero_and_empty_fields_are_the_presets_and_bad_prices_name_the_field():
    assert page._flags("chat", 0.0, 0.0, 0.0, "", "", "", 0, "") == ["--preset", "chat"]
    assert page._flags("lesson", 25.0, 2.0, 0.04, "l40s", "fp8", "", 8, "l40s=1.5; h200 = 4") == [
        "--preset", "lesson", "--rate", "25", "--ttft-p99-s", "2", "--tpot-p99-s", "0.04", "--gpus", "l40s",
        "--weights", "fp8", "--gpu-budget", "8", "--price", "l40s=1.5", "--price", "h200=4"]
    for text, needle in (("h200", "GPU=USD"), ("tpu=3", "not a catalog GPU"), ("h200=abc", "--price")):
        with pytest.raises(Exception) as caught:
            framework.call("plan.first_answer", {"prices": text})
        assert needle in str(caught.value)


def test_every_binding_links_to_its_lesson_step_and_the_priced_gpus_are_listed():
    facts = page.facts()
    for constraint, path in LESSON_STEPS.items():
        assert f"**{constraint}**: [step {int(path.split('/')[-1][:2])}]({path})" in facts["binding_steps"]
    assert "H100 SXM 80GB $3.78 (Lambda, 2026-05-07)" in facts["priced_gpus"]
    assert "L4 24GB $0.7992 (Modal, 2026-05-07)" in facts["priced_gpus"]
