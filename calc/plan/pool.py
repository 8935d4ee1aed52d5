"""The planner's simulations run by other workers: the browser's Web Workers (``docs/assets/runtime/calc-pool.js``).

In the browser the page's Python runs in one Web Worker, which cannot wait inside a call for other workers. So
the confirmed answer is driven in rounds, each a batch of :func:`calc.plan.confirm.confirm_all` jobs:

1. :func:`next_jobs` runs the plan, the CLI's own code (:func:`calc.plan.search.plan`), with the rounds done so
   far (their jobs and results, as JSON) standing in for the simulations; at the first round not done it stops
   and returns that round's jobs (the finalists and the baseline, then the winner's sensitivity runs);
2. the page runs each job in a worker of its pool (:func:`run_jobs`: :func:`calc.plan.confirm.run_job`, the
   same :func:`calc.plan.confirm.confirm` the CLI's processes run, seeded);
3. and asks again with one more round done. Once every round is done the plan completes with those results,
   so its JSON is what ``python -m calc plan --json`` prints for the same inputs, byte for byte.

A round's jobs are sent back with its results and must be the jobs this replay asks for (inputs changed
meanwhile give other jobs: refused, never mixed).

>>> from calc.plan.inputs import PlanRequest, Targets
>>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, requests=100,
...                   weights=("fp8",), kv_dtypes=("fp8",), targets=Targets(ttft_p99_s=1, tpot_p99_s=0.04))
>>> from calc.plan.search import plan
>>> run = lambda: plan(req, finalist_count=2, bands=False)
>>> done = []
>>> while (jobs := next_jobs(run, done)[0]):
...     done.append({"jobs": jobs, "results": run_jobs(req, jobs)})
>>> len(done), next_jobs(run, done)[1] == plan(req, finalist_count=2, bands=False, parallel=False)
(2, True)
"""

from __future__ import annotations

from calc.errors import CalcError
from calc.plan.confirm import job_to_json, jobs_run_by, result_from_json, run_job

__all__ = ["JobsWanted", "next_jobs", "run_jobs", "MAX_JOBS"]

#: Jobs in one round at most (six finalists and the baseline; two sensitivity runs).
MAX_JOBS = 64


class JobsWanted(Exception):
    """The plan needs these jobs' results (JSON) before it can go on."""

    def __init__(self, jobs: list):
        super().__init__(f"{len(jobs)} jobs wanted")
        self.jobs = jobs


def _replayer(done: list):
    """A :func:`calc.plan.confirm.jobs_run_by` runner that serves round i from ``done[i]``, then wants the next."""
    rounds = iter(done)

    def runner(request, jobs):
        wanted = [job_to_json(job) for job in jobs]
        entry = next(rounds, None)
        if entry is None:
            raise JobsWanted(wanted)
        if not isinstance(entry, dict) or set(entry) != {"jobs", "results"}:
            raise CalcError("each round done must be {jobs, results}", "done")
        if entry["jobs"] != wanted:
            raise CalcError("a round done is not the round this plan asks for (its inputs changed?)", "done")
        results = entry["results"]
        if not isinstance(results, list) or len(results) != len(wanted):
            raise CalcError(f"a round of {len(wanted)} jobs needs {len(wanted)} results", "done")
        return [result_from_json(r) for r in results]

    return runner


def next_jobs(run_plan, done: list) -> tuple[list, dict | None]:
    """``(jobs, None)``: the next round's jobs of ``run_plan()`` given the rounds ``done``; ``([], answer)`` once
    every round is done (``run_plan`` is a plan call, e.g. :func:`calc.cli.plan.run` on the page's flags).
    See the module's example."""
    if not isinstance(done, list):
        raise CalcError("done must be a list of rounds", "done")
    try:
        with jobs_run_by(_replayer(done)):
            answer = run_plan()
    except JobsWanted as wanted:
        return wanted.jobs, None
    return [], answer


def run_jobs(request, jobs) -> list:
    """The results of a list of JSON jobs of ``request`` (what a worker of the page's pool runs), as JSON data.

    A job is :func:`calc.plan.confirm.job_to_json`'s: one candidate confirmed in the simulator, seeded.

    >>> from calc.plan.inputs import PlanRequest
    >>> run_jobs(PlanRequest(), [{"bands": "vllm"}])
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: a planner job's shape is malformed; got "{'bands': 'vllm'}"
    """
    if not isinstance(jobs, list) or len(jobs) > MAX_JOBS:
        raise CalcError(f"jobs must be a list of at most {MAX_JOBS} planner jobs", "jobs")
    return [run_job(request, job) for job in jobs]
