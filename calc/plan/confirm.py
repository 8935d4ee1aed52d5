"""The simulator's word on the finalists: each runs in calc's discrete-event simulator at the peak rate.

The same engine the lesson runs (:mod:`calc.sim`: vLLM-like scheduler, paged KV, roofline step prices plus
the engine profile's), seeded, so a rerun gives the same numbers. A finalist's fleet is its replicas behind a
least-outstanding router (:mod:`calc.sim.router`), fed Poisson arrivals at the peak rate with the request's
lengths (or the trace, replayed). Starting from the screen's replica count, :func:`confirm` walks down while
the fleet still meets every target and up while it does not, so the count it returns is the simulator's.

A disaggregated unit runs as two fleets on the same requests: the prefill pool serves every prompt with a
one-token answer (its TTFT is the prompt's), and the decode pool serves the answers with each prompt's KV
arriving over the network instead of being computed (:func:`decode_pool_pricer`); TTFT adds the prefill
pool's, the KV transfer and the decode pool's wait for a slot, TPOT is the decode pool's. That is an
approximation of a disaggregated engine (vLLM's ``--kv-transfer-config``, DistServe), said in the answer.

:func:`confirm_all` runs the finalists in parallel across processes where the platform has them
(``concurrent.futures.ProcessPoolExecutor``), serially where it does not (Pyodide): the same numbers either way.
Elsewhere, a caller may hand the jobs to runners of its own (:func:`jobs_run_by`: the browser's Web Workers,
:mod:`calc.plan.pool`), a job and its result passing as JSON (:func:`job_to_json`, :func:`result_from_json`).

>>> from calc.plan.inputs import PlanRequest, Targets
>>> from calc.plan.space import candidates
>>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=4, requests=200,
...                   targets=Targets(ttft_p99_s=1, tpot_p99_s=0.05))
>>> c = next(c for c in candidates(req) if dict(c)["tp"] == 1 and dict(c)["max_num_seqs"] == 256)
>>> run = simulate_candidate(req, c, 1)
>>> run["meets"], run["replicas"], run["summary"]["requests_completed"]
(True, 1, 200)
"""

from __future__ import annotations

import contextlib
import dataclasses
import math
import os
import sys

from calc.errors import CalcError
from calc.plan.screen import scenario_of
from calc.plan.space import as_dict
from calc.server_layouts import NIC_BYTES_PER_S
from calc.sim.fleet import Fleet
from calc.sim.fleet_scenario import FleetScenario, fleet_requests
from calc.sim.hardware import replica_hardware
from calc.sim.workload import Request
from calc.units import NS_PER_S, round_sig

__all__ = ["ROUTER", "requests_for", "simulated_slice", "fleet_window_s", "simulate_candidate", "confirm",
           "confirm_all", "decode_pool_pricer", "SUMMARY_KEYS", "parallel_available", "jobs_run_by", "job_to_json",
           "job_from_json", "result_from_json", "run_job"]

#: The fleet's router: each request to the replica with the fewest outstanding (vLLM production stacks'
#: default, e.g. llm-d's and the vLLM router's least-loaded policy; :mod:`calc.sim.router`).
ROUTER = "least-outstanding"
#: Simulated seconds of traffic at the peak rate per run (and its bounds in requests): long enough for a p99
#: over thousands of requests, short enough for the planner's ten-second budget.
SIMULATED_S = 120.0
MIN_REQUESTS, MAX_REQUESTS = 1_000, 5_000
#: The most replicas one run simulates: a larger fleet runs as a slice of this many at their share of the
#: traffic (:func:`simulated_slice`; a run's cost grows faster than its replicas: 100 take 0.6 s, 1,000 take 40 s).
MAX_SIMULATED_REPLICAS = 64
#: What a run reports of the simulator's summary.
SUMMARY_KEYS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "requests_completed", "requests_rejected",
                "requests_unfinished", "preemptions", "running_mean", "queue_depth_max", "kv_use_peak",
                "throughput_output_tokens_per_s", "prefix_cache_hit_rate", "speculation_tokens_per_step")
_MAX_STEPS = 8
_SINGLE_STEPS = 4  # confirm's first steps, one replica each, before they double


def _requests(request, rate_factor: float = 1.0) -> int:
    if request.trace:
        return len(request.trace)
    if request.requests:
        return request.requests
    return max(MIN_REQUESTS, min(MAX_REQUESTS, round(request.peak_rate_per_s * rate_factor * SIMULATED_S)))


def _fleet_scenario(request, candidate, replicas: int, rate_factor: float = 1.0, **changes) -> FleetScenario:
    base = scenario_of(request, candidate, **changes).to_dict()
    base["workload"] = {"arrival": "poisson", "rate_per_s": request.peak_rate_per_s * rate_factor,
                        "requests": _requests(request, rate_factor),
                        "classes": [dataclasses.asdict(c) for c in request.classes]}
    base["fleet"] = {"replicas": replicas, "router": ROUTER}
    return FleetScenario.from_dict(base)


def requests_for(request, fs: FleetScenario, rate_factor: float = 1.0) -> list:
    """The run's requests: the trace's (arrival times divided by ``rate_factor``), else the scenario's draw.

    >>> from calc.plan.inputs import PlanRequest, TraceRow
    >>> req = PlanRequest(trace=(TraceRow(0.0, 100, 10, "a", 64), TraceRow(2.0, 120, 10, "", 0)))
    >>> [(r.arrival_ns, r.prefix_key, r.prefix_tokens) for r in requests_for(req, None, rate_factor=2.0)]
    [(0, 0, 64), (1000000000, -1, 0)]
    """
    if not request.trace:
        return fleet_requests(fs)
    groups = {g: i for i, g in enumerate(sorted({r.prefix_group for r in request.trace if r.prefix_group}))}
    start = request.trace[0].arrival_s
    out = []
    for i, r in enumerate(request.trace):
        key = groups[r.prefix_group] if r.prefix_group else -1
        out.append(Request(i, round((r.arrival_s - start) / rate_factor * NS_PER_S), r.prompt_tokens, r.answer_tokens,
                           0, key, r.prefix_tokens if r.prefix_group else 0))
    return out


def decode_pool_pricer(price):
    """A decode pool's step price: the step's sequences each compute one token; a new sequence's prompt KV
    arrives from the prefill pool instead of being computed (its transfer is charged to TTFT).

    ``price`` is a replica's :func:`calc.sim.hardware.step_pricer`. A step that takes a prompt in (more new
    tokens than sequences) is priced as the decode of its sequences, reading the KV it holds.

    >>> from calc.sim.hardware import step_pricer
    >>> from calc.roofline import step_coefficients
    >>> base = step_pricer(step_coefficients("llama-3.1-8b", "h100-sxm-80gb"))
    >>> pool = decode_pool_pricer(base)
    >>> pool(new_tokens=1024 + 8, kv_tokens_read=8000, attention_token_pairs=600000, sequences=9) == \\
    ...     base(new_tokens=9, kv_tokens_read=8000, attention_token_pairs=8009, sequences=9)
    True
    """
    positional = price.positional

    def pool_positional(new_tokens, kv_tokens_read, attention_token_pairs, sequences=0):
        if sequences and new_tokens > sequences:
            new_tokens = sequences
            attention_token_pairs = min(attention_token_pairs, kv_tokens_read + sequences)
        return positional(new_tokens, kv_tokens_read, attention_token_pairs, sequences)

    def step_time_s(*, new_tokens, kv_tokens_read, attention_token_pairs, sequences=0):
        return pool_positional(new_tokens, kv_tokens_read, attention_token_pairs, sequences)

    step_time_s.positional = pool_positional
    step_time_s.decode = price.decode
    step_time_s.takes_sequences = True
    return step_time_s


def _summary(result) -> dict:
    s = result.summary
    return {k: s.get(k) for k in SUMMARY_KEYS}


def _meets(summary: dict, targets) -> tuple[bool, dict]:
    misses = {}
    for k, v in targets.items():
        got = summary.get(k)
        if got is None or got > v:
            misses[k] = None if got is None else round_sig(got / v - 1, 4)
    ok = not misses and not summary.get("requests_rejected") and not summary.get("requests_unfinished")
    return ok, misses


def simulated_slice(request, replicas: int, rate_factor: float = 1.0) -> int:
    """How many of a fleet's ``replicas`` (units, for pools) one run simulates, at their share of the traffic.

    All of them when :data:`SIMULATED_S` of the peak traffic fits in :data:`MAX_REQUESTS` and they are at most
    :data:`MAX_SIMULATED_REPLICAS`; else the most that fit both (at least one). A run of a large fleet capped at
    5,000 requests would see only seconds of traffic at 1,000 requests/s: replicas that start empty never fill
    their batches, and the run meets targets the steady state misses (65 replicas where about 165 are needed).
    A slice of ``k`` replicas at ``k / replicas`` of the rate runs the full two minutes; with fewer replicas
    behind the router it pools less, so it errs on the side of more replicas. A run with a set number of
    requests has them cover the same two minutes where it can; a trace is thinned to the slice's share
    (:func:`_thinned`).

    >>> from calc.plan.inputs import PlanRequest
    >>> simulated_slice(PlanRequest(peak_rate_per_s=20), 3), simulated_slice(PlanRequest(peak_rate_per_s=1000), 190)
    (3, 7)
    >>> simulated_slice(PlanRequest(peak_rate_per_s=20_000, requests=3_000), 3_484)
    4
    """
    if request.trace:
        return min(replicas, MAX_SIMULATED_REPLICAS)
    requests_per_replica = request.peak_rate_per_s * rate_factor / replicas * SIMULATED_S
    budget = request.requests or MAX_REQUESTS
    return max(1, min(replicas, MAX_SIMULATED_REPLICAS, int(budget // requests_per_replica)))


def fleet_window_s(request, rate_factor: float = 1.0) -> float:
    """The seconds of traffic one run's requests would cover if the whole fleet were simulated.

    >>> from calc.plan.inputs import PlanRequest
    >>> fleet_window_s(PlanRequest(peak_rate_per_s=20)), fleet_window_s(PlanRequest(peak_rate_per_s=1000))
    (120.0, 5.0)
    """
    if request.trace:
        return (request.trace[-1].arrival_s - request.trace[0].arrival_s) / rate_factor
    return _requests(request, rate_factor) / (request.peak_rate_per_s * rate_factor)


def _thinned(requests: list, simulated: int, replicas: int) -> list:
    """Every request a slice of ``simulated`` of ``replicas`` replicas gets: ``simulated / replicas`` of them,
    spread evenly through the run (their arrival times kept), numbered anew.

    >>> reqs = [Request(i, i * 10, 100, 10, 0, -1, 0) for i in range(6)]
    >>> [(r.rid, r.arrival_ns) for r in _thinned(reqs, 1, 3)]
    [(0, 20), (1, 50)]
    """
    if simulated == replicas:
        return requests
    kept = [r for i, r in enumerate(requests) if (i + 1) * simulated // replicas > i * simulated // replicas]
    return [Request(n, r.arrival_ns, r.prompt_tokens, r.output_tokens, r.class_index, r.prefix_key, r.prefix_tokens)
            for n, r in enumerate(kept)]


def simulate_candidate(request, candidate, replicas: int, *, rate_factor: float = 1.0, targets=None) -> dict:
    """One simulated run of ``candidate`` on ``replicas`` replicas (units, for pools) at the peak x ``rate_factor``.

    Returns ``{"replicas", "simulated_replicas" (:func:`simulated_slice`), "meets", "misses" (metric ->
    relative excess), "summary" (of the replicas simulated)}``.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> from calc.plan.space import candidates
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=8, requests=200,
    ...                   targets=Targets(tpot_p99_s=0.001))
    >>> run = simulate_candidate(req, next(c for c in candidates(req) if dict(c)["tp"] == 1), 1)
    >>> run["meets"], run["misses"]["tpot_p99_s"] > 1   # a 1 ms TPOT: missed by more than twice
    (False, True)
    """
    targets = dict((targets or request.targets).items())
    c = as_dict(candidate)
    layout = c.get("layout", "aggregated")
    simulated = simulated_slice(request, replicas, rate_factor)
    # The slice's share of the traffic: a drawn workload at that share of the rate, a trace thinned to it.
    share = rate_factor if request.trace else rate_factor * simulated / replicas
    if layout == "aggregated":
        fs = _fleet_scenario(request, candidate, simulated, share)
        reqs = requests_for(request, fs, share)
        if request.trace:
            reqs = _thinned(reqs, simulated, replicas)
        summary = _summary(Fleet(fs, time_series=False, requests=reqs).run())
    else:
        summary = _simulate_pools(request, candidate, simulated, share, layout, replicas)
    ok, misses = _meets(summary, targets)
    return {"replicas": replicas, "simulated_replicas": simulated, "meets": ok, "misses": misses,
            "summary": {k: (round_sig(v) if isinstance(v, float) else v) for k, v in summary.items()}}


def _simulate_pools(request, candidate, units: int, rate_factor: float, layout: str, fleet_units: int) -> dict:
    p, d = (int(x) for x in layout.split()[1].split(":"))
    fs_prefill = _fleet_scenario(request, candidate, units * p, rate_factor)
    reqs = requests_for(request, fs_prefill, rate_factor)
    if request.trace:
        reqs = _thinned(reqs, units, fleet_units)
    prompts = [Request(r.rid, r.arrival_ns, r.prompt_tokens, 1, r.class_index, r.prefix_key, r.prefix_tokens)
               for r in reqs]
    pre = Fleet(fs_prefill, time_series=False, requests=prompts).run().summary
    # The decode pool takes whole prompts in one step (their KV arrives), so its budget holds the longest.
    longest = max(r.prompt_tokens for r in reqs) + as_dict(candidate)["max_num_seqs"]
    fs_decode = _fleet_scenario(request, candidate, units * d, rate_factor,
                                max_num_batched_tokens=max(longest, as_dict(candidate)["max_num_batched_tokens"]))
    hardware = replica_hardware(fs_decode.scenario)
    pricer = decode_pool_pricer(hardware.price_step)
    dec = Fleet(fs_decode, time_series=False, step_time_s=pricer, hardware=hardware,
                requests=[Request(r.rid, r.arrival_ns, r.prompt_tokens, r.output_tokens, r.class_index, r.prefix_key,
                                  r.prefix_tokens) for r in reqs]).run().summary
    from calc.catalog import get_model
    from calc.memory import kv_bytes_per_token
    c = as_dict(candidate)
    prompt_mean = math.fsum(r.prompt_tokens for r in reqs) / len(reqs)
    transfer_s = kv_bytes_per_token(get_model(request.model), c["kv_dtype"]) * prompt_mean / (c["tp"] * NIC_BYTES_PER_S)
    overhead_s = hardware.request_overhead_s
    out = {k: dec.get(k) for k in SUMMARY_KEYS}
    for q in ("p50", "p99"):
        wait = max(0.0, (dec.get(f"ttft_{q}_s") or 0.0) - overhead_s)  # the decode pool's queue for a slot
        out[f"ttft_{q}_s"] = (pre.get(f"ttft_{q}_s") or math.inf) + transfer_s + wait
    out["requests_rejected"] = (pre.get("requests_rejected") or 0) + (dec.get("requests_rejected") or 0)
    out["requests_unfinished"] = (pre.get("requests_unfinished") or 0) + (dec.get("requests_unfinished") or 0)
    out["preemptions"] = (pre.get("preemptions") or 0) + (dec.get("preemptions") or 0)
    return out


def confirm(request, candidate, start_replicas: int, *, rate_factor: float = 1.0, targets=None,
            max_replicas: int | None = None) -> dict:
    """The fewest replicas (from ``start_replicas``, searching down or up) with which the simulator meets every target.

    Returns ``{"replicas" (None: none up to ``max_replicas``, by default twice the start plus eight), "run" (the
    meeting run), "cheaper" (the run with one replica fewer, which failed: how far each metric missed), "runs"
    (every count tried)}``.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> from calc.plan.space import candidates
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=4, requests=200,
    ...                   targets=Targets(ttft_p99_s=1, tpot_p99_s=0.05))
    >>> c = next(c for c in candidates(req) if dict(c)["tp"] == 1 and dict(c)["max_num_seqs"] == 256)
    >>> out = confirm(req, c, 2)
    >>> out["replicas"], sorted(out["runs"])
    (1, [1, 2])
    """
    runs = {}

    def run(n):
        if n not in runs:
            runs[n] = simulate_candidate(request, candidate, n, rate_factor=rate_factor, targets=targets)
        return runs[n]

    n = max(1, start_replicas)
    limit = max_replicas or (2 * n + _MAX_STEPS)
    # From the screen's count, one replica at a time for the first few steps (the screen is usually that close),
    # then in doubling steps, to a count that meets and one that fails; then bisect between them. A few runs
    # whatever the fleet's size: one replica at a time from the screen's 175 replicas at 1,000 requests/s ran
    # dozens of simulations. Assumes more replicas never meet less.
    meets, fails = None, 0  # fails: the largest count known to miss (0: none)
    if run(n)["meets"]:
        meets = n
        for step in _steps():
            if meets == 1:
                break
            probe = max(1, meets - step)
            if not run(probe)["meets"]:
                fails = probe
                break
            meets = probe
    else:
        fails = n
        for step in _steps():
            if fails >= limit:
                break
            probe = min(limit, fails + step)
            if run(probe)["meets"]:
                meets = probe
                break
            fails = probe
    while meets is not None and fails and meets - fails > 1:
        middle = (fails + meets) // 2
        if run(middle)["meets"]:
            meets = middle
        else:
            fails = middle
    found = meets
    return {"replicas": found, "run": runs.get(found), "cheaper": runs.get(found - 1) if found else None,
            "runs": runs}


def _steps():
    """The search's step sizes: one replica :data:`_SINGLE_STEPS` times, then doubling (2, 4, 8, ...).

    >>> import itertools
    >>> list(itertools.islice(_steps(), 8))
    [1, 1, 1, 1, 2, 4, 8, 16]
    """
    yield from [1] * _SINGLE_STEPS
    step = 2
    while True:
        yield step
        step *= 2


def _task(args):
    request, candidate, start, rate_factor, targets = args
    return confirm(request, candidate, start, rate_factor=rate_factor, targets=targets)


def parallel_available() -> bool:
    """Whether this platform can run the finalists in other processes (not in Pyodide's WebAssembly).

    >>> isinstance(parallel_available(), bool)
    True
    """
    return sys.platform not in ("emscripten", "wasi") and (os.cpu_count() or 1) > 1


def confirm_all(request, jobs, *, parallel: bool = True) -> list:
    """:func:`confirm` on every ``(candidate, start_replicas, rate_factor, targets)`` job, in order.

    With ``parallel`` (and :func:`parallel_available`), the jobs run across a process pool of the machine's
    cores. Any failure to start processes falls back to running serially: the same results.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> from calc.plan.space import candidates
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, requests=100,
    ...                   targets=Targets(tpot_p99_s=0.05))
    >>> c = next(candidates(req))
    >>> results = confirm_all(req, [(c, 1, 1.0, None)], parallel=False)
    >>> results[0]["replicas"]
    1
    """
    if _RUNNERS:
        return _RUNNERS[-1](request, jobs)
    tasks = [(request, cand, start, factor, targets) for cand, start, factor, targets in jobs]
    if parallel and parallel_available() and len(tasks) > 1:
        try:
            from concurrent.futures import ProcessPoolExecutor

            with ProcessPoolExecutor(max_workers=min(os.cpu_count() or 1, len(tasks))) as pool:
                return list(pool.map(_task, tasks, chunksize=1))
        except (ImportError, NotImplementedError, OSError, RuntimeError, PermissionError):
            pass  # no processes here: the same work, serially
    return [_task(t) for t in tasks]


_RUNNERS: list = []


@contextlib.contextmanager
def jobs_run_by(runner):
    """Within the block, :func:`confirm_all` hands its jobs to ``runner(request, jobs)`` (which returns
    what :func:`confirm_all` would: the results in order) instead of running them.

    >>> from calc.plan.inputs import PlanRequest
    >>> with jobs_run_by(lambda request, jobs: ["ran elsewhere"] * len(jobs)):
    ...     confirm_all(PlanRequest(), [((("gpu", "l4"),), 1, 1.0, None)])
    ['ran elsewhere']
    """
    _RUNNERS.append(runner)
    try:
        yield runner
    finally:
        _RUNNERS.remove(runner)


def job_to_json(job) -> dict:
    """A :func:`confirm_all` job ``(candidate, start_replicas, rate_factor, targets)`` as JSON-ready data.

    >>> from calc.plan.inputs import Targets
    >>> job_to_json(((("gpu", "l4"), ("tp", 2)), 3, 1.2, Targets(tpot_p99_s=0.04)))
    {'candidate': [['gpu', 'l4'], ['tp', 2]], 'start': 3, 'rate_factor': 1.2, 'targets': {'tpot_p99_s': 0.04}}
    """
    candidate, start, factor, targets = job
    return {"candidate": [[name, value] for name, value in candidate], "start": start, "rate_factor": factor,
            "targets": None if targets is None else dict(targets.items())}


_NEEDED = ("gpu", "tp", "weights", "kv_dtype", "max_num_seqs", "max_num_batched_tokens")


def _check(condition: bool, what: str, value) -> None:
    if not condition:
        raise CalcError(f"a planner job's {what} is malformed; got {str(value)[:80]!r}", "jobs")


def job_from_json(data) -> tuple:
    """:func:`job_to_json`'s inverse, checked (a malformed job raises :class:`calc.errors.CalcError`).

    >>> job = ((("gpu", "l4"), ("tp", 2), ("weights", "fp8"), ("kv_dtype", "fp8"), ("max_num_seqs", 64),
    ...         ("max_num_batched_tokens", 2048)), 3, 1.2, None)
    >>> job_from_json(job_to_json(job)) == job
    True
    >>> job_from_json({"candidate": [["gpu", "l4"]], "start": 1, "rate_factor": 1, "targets": None})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: a planner job's candidate is malformed; got "[['gpu', 'l4']]"
    """
    from calc.plan.inputs import Targets
    from calc.plan.space import BY_NAME

    _check(isinstance(data, dict) and set(data) == {"candidate", "start", "rate_factor", "targets"}, "shape", data)
    candidate = data["candidate"]
    _check(isinstance(candidate, list) and all(isinstance(p, list) and len(p) == 2 and p[0] in BY_NAME
                                               and isinstance(p[1], (str, int, bool)) for p in candidate)
           and set(_NEEDED) <= {p[0] for p in candidate}, "candidate", candidate)
    start, factor, targets = data["start"], data["rate_factor"], data["targets"]
    _check(isinstance(start, int) and not isinstance(start, bool) and 1 <= start <= 100_000, "start", start)
    _check(isinstance(factor, (int, float)) and not isinstance(factor, bool) and 0 < factor <= 10, "rate_factor",
           factor)
    if targets is not None:
        names = {f.name for f in dataclasses.fields(Targets)}
        _check(isinstance(targets, dict) and set(targets) <= names
               and all(isinstance(v, (int, float)) and not isinstance(v, bool) and v > 0 for v in targets.values()),
               "targets", targets)
        targets = Targets(**targets)
    return tuple((name, value) for name, value in candidate), start, factor, targets


def _run_from_json(run) -> dict:
    _check(isinstance(run, dict) and set(run) == {"replicas", "simulated_replicas", "meets", "misses", "summary"},
           "run", run)
    _check(isinstance(run["replicas"], int) and isinstance(run["simulated_replicas"], int)
           and isinstance(run["meets"], bool), "run", run)
    _check(isinstance(run["misses"], dict) and all(v is None or isinstance(v, (int, float))
                                                   for v in run["misses"].values()), "misses", run["misses"])
    summary = run["summary"]
    _check(isinstance(summary, dict) and set(summary) == set(SUMMARY_KEYS)
           and all(v is None or (isinstance(v, (int, float)) and not isinstance(v, bool)) for v in summary.values()),
           "summary", summary)
    return run


def result_from_json(data) -> dict:
    """A :func:`confirm` result read back from JSON (``runs`` keyed by replica count again), checked.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> from calc.plan.space import candidates
    >>> import json
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, requests=100,
    ...                   targets=Targets(tpot_p99_s=0.05))
    >>> result = confirm(req, next(candidates(req)), 2)
    >>> result_from_json(json.loads(json.dumps(result))) == result
    True
    """
    _check(isinstance(data, dict) and set(data) == {"replicas", "run", "cheaper", "runs"}, "result", data)
    _check(data["replicas"] is None or (isinstance(data["replicas"], int) and not isinstance(data["replicas"], bool)),
           "replicas", data["replicas"])
    runs = data["runs"]
    _check(isinstance(runs, dict) and all(isinstance(k, str) and k.isdigit() for k in runs), "runs", runs)
    out = {"replicas": data["replicas"],
           "run": None if data["run"] is None else _run_from_json(data["run"]),
           "cheaper": None if data["cheaper"] is None else _run_from_json(data["cheaper"]),
           "runs": {int(k): _run_from_json(v) for k, v in runs.items()}}
    return out


def run_job(request, job: dict) -> dict:
    """Run one JSON job (:func:`job_to_json`) of ``request``: :func:`confirm`'s result, JSON-ready.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> from calc.plan.space import candidates
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, requests=100,
    ...                   targets=Targets(tpot_p99_s=0.05))
    >>> job = job_to_json((next(candidates(req)), 1, 1.0, None))
    >>> run_job(req, job)["replicas"], sorted(run_job(req, job)["runs"])
    (1, ['1'])
    """
    candidate, start, factor, targets = job_from_json(job)
    result = confirm(request, candidate, start, rate_factor=factor, targets=targets)
    return {**result, "runs": {str(n): run for n, run in result["runs"].items()}}
