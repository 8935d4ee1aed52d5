"""The planner in two stages: screen the whole space analytically, then confirm the finalists in the simulator.

1. :func:`screen_all` screens every candidate of :func:`calc.plan.space.candidates` (:mod:`calc.plan.screen`).
2. :func:`finalists` keeps the cheapest distinct screen results (candidates whose screen answers are the same
   are one finalist: the one nearest vLLM's defaults).
3. :func:`plan` confirms them (:mod:`calc.plan.confirm`, in parallel where processes exist), with the baseline
   beside them (the error bands read from the stored held-out record), then the winner's sensitivity,
   and hands everything to :func:`calc.plan.explain.answer`. ``confirm=False`` stops after the screen: the
   first answer.

>>> from calc.plan.inputs import PlanRequest, Targets
>>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, requests=150,
...                   weights=("fp8",), kv_dtypes=("fp8",), targets=Targets(ttft_p99_s=1, tpot_p99_s=0.04))
>>> out = plan(req, parallel=False, finalist_count=2, bands=False)
>>> out["status"], out["best"]["gpus"], out["best"]["confirmed"]
('confirmed', 1, True)
"""

from __future__ import annotations

from calc.plan import explain
from calc.plan.bands import residuals
from calc.plan.confirm import confirm_all
from calc.plan.screen import screen
from calc.plan.space import as_dict, candidates

__all__ = ["FINALISTS", "screen_all", "finalists", "plan", "DEFAULTS", "SENSITIVITY"]

#: Finalists the simulator confirms: the cheapest distinct screen answers (six keep the CLI well within its
#: ten-second budget on two cores with the baseline and the sensitivity runs beside them; the
#: screen's TPOT is within a few percent of the simulator's, so the winner is among the first few).
FINALISTS = 6
#: vLLM's defaults, which a finalist is chosen nearest to among candidates the screen cannot tell apart.
DEFAULTS = {"max_num_seqs": 256, "max_num_batched_tokens": 8192, "speculation": "off", "layout": "aggregated"}
#: The sensitivity runs: the arrival rate 20% higher, every target 20% tighter.
SENSITIVITY = (("rate_plus_20_percent", 1.2, 1.0), ("targets_minus_20_percent", 1.0, 0.8))


#: The last few requests' screens (request -> rows): the page asks for the first answer, then the confirmed one
#: (and its worker pool asks again each round) with equal requests; the screen is a pure function of the request.
_SCREENED: dict = {}
_SCREENS_KEPT = 2


def screen_all(request) -> list:
    """Every candidate screened, cheapest first (ties: fewer GPUs, fewer moving parts, the key), refusals last.

    >>> from calc.plan.inputs import PlanRequest
    >>> rows = screen_all(PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=20, weights=("fp8",), kv_dtypes=("fp8",)))
    >>> rows[0].ok, rows[-1].ok
    (True, False)
    """
    from calc.plan.space import complexity, key

    if request in _SCREENED:
        return list(_SCREENED[request])
    rows = [screen(request, c) for c in candidates(request)]
    rows.sort(key=lambda r: (not r.ok, r.usd_per_hour, r.gpus, complexity(r.candidate), key(r.candidate)))
    while len(_SCREENED) >= _SCREENS_KEPT:
        _SCREENED.pop(next(iter(_SCREENED)))
    _SCREENED[request] = tuple(rows)
    return rows


def _distance_to_defaults(candidate) -> int:
    c = as_dict(candidate)
    return sum(1 for k, v in DEFAULTS.items() if c.get(k, v) != v)


def finalists(screened, count: int = FINALISTS) -> list:
    """The cheapest ``count`` distinct screen answers, one candidate each (the nearest to vLLM's defaults).

    >>> from calc.plan.inputs import PlanRequest
    >>> picked = finalists(screen_all(PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=20, weights=("fp8",), kv_dtypes=("fp8",))), 3)
    >>> len(picked), picked[0].usd_per_hour <= picked[-1].usd_per_hour
    (3, True)
    """
    groups: dict = {}
    order = []
    for r in screened:
        if not r.ok:
            continue
        sig = (r.usd_per_hour, r.gpus, tuple(sorted((k, round(v, 6)) for k, v in r.predicted.items())))
        if sig not in groups:
            if len(order) == count:
                continue
            groups[sig] = r
            order.append(sig)
        elif _distance_to_defaults(r.candidate) < _distance_to_defaults(groups[sig].candidate):
            groups[sig] = r
    return [groups[s] for s in order]


def _baseline_candidate(request, baseline: dict | None):
    if not baseline:
        return None
    from calc.plan.space import DIMENSIONS

    return tuple((d.name, baseline[d.name]) for d in DIMENSIONS if d.name in baseline)


def plan(request, *, baseline: dict | None = None, confirm: bool = True, parallel: bool = True,
         finalist_count: int = FINALISTS, bands: bool = True) -> dict:
    """The plan for ``request`` as JSON-ready data (:func:`calc.plan.explain.answer`; ``--json`` prints it).

    ``baseline`` is a hand-made deployment (dimension -> value, e.g. :func:`calc.plan.presets.baseline`)
    that the answer compares with; ``confirm`` False gives the screen's answer alone; ``parallel`` runs the
    simulations across processes where there are any; ``bands`` False leaves the error bands out (read from the
    stored leave-one-source-out record: cheap).

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> req = PlanRequest(model="llama-3.1-8b", gpus=("h100-sxm-80gb",), peak_rate_per_s=2, weights=("fp8",),
    ...                   kv_dtypes=("fp8",), targets=Targets(tpot_p99_s=0.0005))
    >>> out = plan(req, confirm=False)
    >>> out["status"], out["best"], out["space"]["refusals"]["decode bandwidth"]["example"][:40]
    ('screened', None, 'decode bandwidth: one sequence alone tak')
    """
    screened = screen_all(request)
    picked = finalists(screened, finalist_count)
    base = _baseline_candidate(request, baseline)
    base_screen = screen(request, base) if base else None
    if not confirm:
        return explain.answer(request, screened, picked, None, base_screen, None, None, None)
    jobs = [(r.candidate, r.replicas, 1.0, None) for r in picked]
    if base_screen is not None and base_screen.ok:
        jobs.append((base, base_screen.replicas, 1.0, None))
    results = confirm_all(request, jobs, parallel=parallel)
    # The bands are the stored leave-one-source-out errors (calc/data/latency_loso.json): a read, not a run.
    table = residuals(request.engine) if bands else None
    confirmed = list(zip(picked, results[:len(picked)]))
    base_confirmed = results[len(picked)] if len(results) > len(picked) else None
    if base_confirmed is not None and base not in {r.candidate for r in picked}:
        confirmed.append((base_screen, base_confirmed))  # the baseline is in the space: it may win
    best = explain.cheapest_confirmed(request, confirmed)
    sensitivity = None
    if best is not None:
        screen_row, outcome = best
        sens_jobs = [(screen_row.candidate, outcome["replicas"], factor,
                      request.targets.scaled(tighten) if tighten != 1.0 else None)
                     for _, factor, tighten in SENSITIVITY]
        sens = confirm_all(request, sens_jobs, parallel=parallel)
        sensitivity = dict(zip((name for name, _, _ in SENSITIVITY), sens))
    return explain.answer(request, screened, picked, confirmed, base_screen, base_confirmed, table, sensitivity)
