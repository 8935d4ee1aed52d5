"""The browser's worker pool, driven as calc-pool.js drives it: rounds of jobs from the main worker
(``plan.confirmed_jobs``), each job run by a pool worker (``plan.simulated_jobs``), its result passed back as the
text it came in; the answer the main worker then keeps is the CLI's, byte for byte."""

from __future__ import annotations

import json

import pytest

from calc.cli import main
from calc.errors import CalcError
from calc.widgets import plan as page


def _drive(args: dict) -> tuple[str, int]:
    """The pool's loop, in Python: (the plan's JSON as the page shows it, the rounds it took)."""
    page._answers.clear()
    rounds: list[str] = []
    while True:
        done = '{"for": ' + page.confirmed_jobs(**args)["outputs"]["for"]["text"] + ', "rounds": [' + \
            ", ".join(rounds) + "]}"
        jobs_text = page.confirmed_jobs(**args, done=done)["outputs"]["jobs"]["text"]
        jobs = json.loads(jobs_text)
        if not jobs:
            break
        # one job per call, as the pool hands them out; a result's text is kept as it came (never reparsed)
        results = [page.simulated_jobs(**args, jobs=json.dumps([job]))["outputs"]["results"]["text"][1:-1]
                   for job in jobs]
        rounds.append('{"jobs": ' + jobs_text + ', "results": [' + ", ".join(results) + "]}")
    return page.plan_json(**args)["outputs"]["json"]["text"], len(rounds)


def _cli(capsys, *flags: str) -> str:
    assert main(["plan", *flags, "--json"]) == 0
    return capsys.readouterr().out.removesuffix("\n")


@pytest.mark.parametrize("args, flags", [
    ({}, ("--preset", "lesson")),
    ({"preset": "chat", "rate": 3.0, "prices": "h200=4.5"}, ("--preset", "chat", "--rate", "3", "--price", "h200=4.5")),
])
def test_the_pools_rounds_give_the_clis_json(capsys, args, flags):
    text, rounds = _drive(args)
    assert rounds == 2  # the finalists (with the baseline), then the winner's sensitivity
    assert text == _cli(capsys, *flags)


def test_the_confirmed_widget_shows_the_answer_the_pool_completed():
    _drive({"preset": "batch"})
    kept = dict(page._answers)
    assert page.confirmed(preset="batch")["outputs"]["command"]["text"] == "python -m calc plan --preset batch --json"
    assert page._answers == kept  # served from what the pool completed, not simulated again


def test_a_round_for_other_inputs_is_refused_not_mixed():
    page._answers.clear()
    jobs_text = page.confirmed_jobs(preset="batch")["outputs"]["jobs"]["text"]
    jobs = json.loads(jobs_text)
    results = [page.simulated_jobs(preset="batch", jobs=json.dumps([j]))["outputs"]["results"]["text"][1:-1]
               for j in jobs]
    rounds = '[{"jobs": ' + jobs_text + ', "results": [' + ", ".join(results) + "]}]"
    done = '{"for": ["--preset", "batch"], "rounds": ' + rounds + "}"
    with pytest.raises(CalcError, match="rounds of other inputs"):
        page.confirmed_jobs(preset="batch", rate=0.2, done=done)
    with pytest.raises(CalcError, match="not the round this plan asks for"):
        page.confirmed_jobs(preset="batch", done=done.replace('"start": ', '"start": 1'))
    with pytest.raises(CalcError, match="needs 6 results"):
        page.confirmed_jobs(preset="batch", done='{"for": ["--preset", "batch"], "rounds": [{"jobs": ' + jobs_text
                            + ', "results": []}]}')


@pytest.mark.parametrize("text, words", [
    ("{", "must be JSON"), ("[]", "must be a JSON dict"), ('{"a": 1}', "must be {for, rounds}"),
    ('{"for": ["--preset", "batch"], "rounds": [{"jobs": []}]}', "each round done"),
])
def test_malformed_rounds_are_refused_naming_the_field(text, words):
    page._answers.clear()
    with pytest.raises(CalcError, match=words) as caught:
        page.confirmed_jobs(preset="batch", done=text)
    assert caught.value.field == "done"


@pytest.mark.parametrize("job", [
    {"candidate": [["gpu", "l4"]], "start": 1, "rate_factor": 1.0, "targets": None},
    {"candidate": [], "start": 0, "rate_factor": 1.0, "targets": None},
    {"bands": "vllm"}, [1, 2], "x",  # the error bands are no job any more
])
def test_malformed_jobs_are_refused(job):
    with pytest.raises(CalcError) as caught:
        page.simulated_jobs(preset="batch", jobs=json.dumps([job]))
    assert caught.value.field == "jobs"
