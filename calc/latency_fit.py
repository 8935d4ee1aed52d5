"""Fit each engine profile's step and request costs jointly on all of its ``calibration`` rows, and only on them.

Rerun: ``python -m calc.latency_fit`` prints each term with its standard error, the rows and sources behind it
and the stored constants' agreement; ``--write`` stores the fit in ``calc/data/engine_profiles.json`` (what
:mod:`calc.engine_profiles` reads; tests/test_latency_fit.py checks that the stored constants equal a fresh fit).

The model. A row's simulated figure (:func:`calc.latency_accuracy.predict_row`, the simulator driven the way the
row's client drove the engine) depends on the engine's four terms (:data:`calc.engine_profiles.TERMS`). For each
engine, the terms are chosen together to minimise the sum over its calibration rows of the squared log error,
``log(predicted / measured)`` (a relative error, the same weight for a 12 ms ITL and a 90 s TTFT), by
Levenberg-Marquardt (:func:`levenberg_marquardt`: Gauss-Newton steps on a forward-difference Jacobian, damped
until the loss falls, terms kept >= 0), from fixed seeds (:data:`SEED_S`), so the result is deterministic and
a rerun gives the stored constants. Never one term per row.

Which terms are fitted (a rule, not a choice per row):

* a term is *behind* a row when the row's figure moves with it by structure (:func:`rows_behind`): every row
  pays the step cost; only rows on more than one GPU the tensor-parallel one; only served rows that run several
  sequences at once (and report a decode or a whole-run figure) the per-sequence one; only TTFT and end-to-end
  rows the request cost;
* a term is fitted only where the rows can tell it from the terms before it (:func:`identifiable`: its
  Jacobian column is not, within :data:`COLLINEAR_R2`, a combination of theirs; and the tensor-parallel cost
  only where the rows run on at least two GPU counts: on rows that all run on two GPUs it cannot be told from
  the step cost). A term the rows cannot identify keeps
  its seed: the fallback profile's value (:data:`FALLBACK`, an ``assumption`` said in the profile), or a sourced
  0 (:data:`ZERO`);
* a fitted term's role is ``calibration`` only with at least :data:`MIN_ROWS` rows from at least
  :data:`MIN_SOURCES` independent sources behind it (:func:`calc.latency_accuracy.source_of`: vLLM's nightly
  runs on three GPUs are one source); fitted on fewer, its role is ``assumption`` and its source says so
  (one source's quirks cannot be told apart from the engine's).

Each term carries its standard error from the Jacobian at the optimum (``s^2 (J^T J)^-1`` with ``s^2`` the
residual variance, where there are more rows than fitted terms) and, from
:mod:`calc.latency_loso`'s leave-one-source-out fits, its spread when a whole source is left out.

>>> SEED_S["step_overhead_s"], FALLBACK["nim-trtllm"]
(0.001, 'vllm')
"""

from __future__ import annotations

import argparse
import json
import math
import os
import sys

from calc import engine_profiles
from calc.errors import CalcError
from calc.units import round_sig

__all__ = ["FIT_ORDER", "FALLBACK", "ZERO", "SEED_S", "SCALE_S", "MIN_ROWS", "MIN_SOURCES", "COLLINEAR_R2",
           "rows_behind", "calibration_rows", "term_spread", "LOSO_PATH", "identifiable", "levenberg_marquardt", "fit_engine", "fit", "stored",
           "write", "main"]

#: Fitted in this order: each profile after the one it falls back to.
FIT_ORDER = ("vllm", "vllm-0.6-multistep", "sglang-0.3", "nim-trtllm")
#: The profile whose fitted term a profile takes where its own rows cannot identify one (an assumption: the
#: nearest engine fitted on other sources; vLLM 0.6 and SGLang 0.3 are Python engines of vLLM's design, NIM's
#: TensorRT-LLM the nearest with a fit). vLLM itself falls back to :data:`SEED_S`.
FALLBACK = {"vllm": None, "vllm-0.6-multistep": "vllm", "sglang-0.3": "vllm", "nim-trtllm": "vllm"}
ZERO_MULTISTEP = ("vLLM v0.6.0's multi-step scheduling prepares the inputs once per window of "
                  "--num-scheduler-steps steps and its asynchronous output processing runs beside the GPU's "
                  "work (vLLM blog 'vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction', "
                  "2024-09-05); no own row at a larger batch is calibration")
ZERO_TRTLLM = ("TensorRT-LLM's runtime is C++ (its batch manager schedules and samples without a Python loop "
               "over the sequences; TensorRT-LLM docs, 'Overview'); no NIM row at a large batch is "
               "calibration (its rows at concurrency 100-250 are over-predicted, not short)")
#: Terms set to a sourced 0 instead of fitted.
ZERO = {"vllm-0.6-multistep": {"seq_overhead_s": ZERO_MULTISTEP}, "nim-trtllm": {"seq_overhead_s": ZERO_TRTLLM}}
#: Where the fit starts for vLLM (and what a term no row identifies keeps): round orders of magnitude, an
#: assumption. vLLM's v0.6.0 post (2024-09-05) puts a Python engine's CPU work per step in the milliseconds;
#: LMDeploy's static benchmark gives 0.05-0.13 ms per sequence (see :mod:`calc.engine_profiles`).
SEED_S = {"step_overhead_s": 1e-3, "tp_step_overhead_s": 5e-4, "seq_overhead_s": 1e-4, "request_overhead_s": 1e-2}
#: The fit's units: each term is solved for in multiples of these (they make the Jacobian's columns comparable).
SCALE_S = dict(SEED_S)
#: Each term's probe for the forward-difference Jacobian, as a share of its scale.
_PROBE = 0.1
#: Each term rounded to this (s): below it the simulated figures do not resolve it.
ROUND_S = {"step_overhead_s": 1e-6, "tp_step_overhead_s": 1e-6, "seq_overhead_s": 1e-7, "request_overhead_s": 1e-5}
_MAX_ITERATIONS = 25
MIN_ROWS, MIN_SOURCES = 3, 2
#: A term whose Jacobian column is explained to this share (R^2) by the columns of the terms fitted before it
#: cannot be told from them on these rows.
COLLINEAR_R2 = 0.98
#: A term that moves no row's log figure by more than this for a move of one scale is not identified either.
_MIN_COLUMN_NORM = 1e-3


def _client_runs_several(row: dict) -> bool:
    client = row["inputs"]["client"]
    kind = client["kind"]
    if kind == "batch":
        return client["batch"] > 1
    if kind == "all_at_once":
        return client["requests"] > 1
    if kind == "closed_loop":
        return client["concurrency"] > 1
    return True  # Poisson arrivals overlap


def rows_behind(term: str, row: dict) -> bool:
    """Whether ``row``'s figure moves with ``term`` by structure (see the module's docstring).

    >>> from calc.latency_accuracy import load_rows
    >>> first = load_rows()[0]   # vLLM nightly, one batch of 8 on one GPU, end to end
    >>> [t for t in engine_profiles.TERMS if rows_behind(t, first)]
    ['step_overhead_s', 'seq_overhead_s', 'request_overhead_s']
    """
    from calc.latency_accuracy import frontend_of

    quantity = row["figure"]["quantity"]
    if term == "step_overhead_s":
        return True
    if term == "tp_step_overhead_s":
        return row["inputs"]["tp"] > 1
    if term == "seq_overhead_s":
        return frontend_of(row) == "api-server" and _client_runs_several(row) and quantity != "ttft"
    if term == "request_overhead_s":
        return quantity in ("ttft", "e2e")
    raise CalcError(f"term must be one of {', '.join(engine_profiles.TERMS)}; got {term!r}", "term")


def calibration_rows(engine: str, *, exclude_source: str | None = None) -> list:
    """The engine's ``calibration`` rows, in the data file's order, without those of ``exclude_source``.

    >>> len(calibration_rows("vllm")) >= 4, calibration_rows("vllm", exclude_source="vLLM nightly benchmark")[0]["id"][:10]
    (True, 'vllm-azure')
    """
    from calc.latency_accuracy import load_rows, source_of

    return [r for r in load_rows() if r["role"] == "calibration" and r["inputs"].get("engine_profile") == engine
            and (exclude_source is None or source_of(r) != exclude_source)]


def _predict(row: dict, profile) -> float:
    from calc.latency_accuracy import predict_row

    if row["role"] != "calibration":
        raise CalcError(f"row {row['id']} is a {row['role']} row; only calibration rows are fitted", "role")
    if row["inputs"].get("engine_profile") != profile.key:
        raise CalcError(f"row {row['id']} ran engine {row['inputs'].get('engine_profile')!r}, not {profile.key!r}",
                        "engine")
    saved = dict(engine_profiles._TRIAL)
    try:
        engine_profiles._TRIAL[profile.key] = profile
        return predict_row(row).predicted
    finally:
        engine_profiles._TRIAL.clear()
        engine_profiles._TRIAL.update(saved)


def _residuals(rows: list, profile) -> list[float]:
    return [math.log(_predict(r, profile) / float(r["figure"]["value"])) for r in rows]


def _with(profile, free: list[str], x: list[float]):
    return profile.with_terms(**{t: round(round(max(0.0, xi) * SCALE_S[t] / ROUND_S[t]) * ROUND_S[t], 9)
                                 for t, xi in zip(free, x)})


def _jacobian(rows: list, profile, free: list[str], base: list[float]) -> list[list[float]]:
    """d log(figure) / d (term / scale) per row and free term, by forward differences of :data:`_PROBE`."""
    columns = []
    for t in free:
        probe = profile.with_terms(**{t: getattr(profile, t) + _PROBE * SCALE_S[t]})
        columns.append([(a - b) / _PROBE for a, b in zip(_residuals(rows, probe), base)])
    return [list(row) for row in zip(*columns)] if columns else [[] for _ in rows]


def _solve(matrix: list[list[float]], vector: list[float]) -> list[float] | None:
    """``matrix x = vector`` by Gauss-Jordan elimination with partial pivoting; None if singular.

    >>> _solve([[2.0, 0.0], [0.0, 4.0]], [2.0, 2.0])
    [1.0, 0.5]
    >>> _solve([[1.0, 1.0], [1.0, 1.0]], [1.0, 1.0]) is None
    True
    """
    n = len(vector)
    a = [list(map(float, matrix[i])) + [float(vector[i])] for i in range(n)]
    scale = max((abs(v) for row in matrix for v in row), default=0.0) or 1.0
    for col in range(n):
        pivot = max(range(col, n), key=lambda i: abs(a[i][col]))
        if abs(a[pivot][col]) <= 1e-12 * scale:
            return None
        a[col], a[pivot] = a[pivot], a[col]
        for i in range(n):
            if i != col:
                f = a[i][col] / a[col][col]
                a[i] = [x - f * y for x, y in zip(a[i], a[col])]
    return [a[i][n] / a[i][i] for i in range(n)]


def _normal(jac: list[list[float]], p: int) -> list[list[float]]:
    return [[math.fsum(row[i] * row[j] for row in jac) for j in range(p)] for i in range(p)]


def identifiable(jac_columns: dict) -> list[str]:
    """The terms the rows can tell apart, taken in :data:`calc.engine_profiles.TERMS` order.

    ``jac_columns``: per term its Jacobian column (d log figure / d term in scale units, one entry a row). A
    term joins unless its column is nearly 0 or is explained to :data:`COLLINEAR_R2` by those already taken.

    >>> identifiable({"step_overhead_s": [1.0, 1.0], "tp_step_overhead_s": [7.0, 7.0], "request_overhead_s": [1.0, 0.0]})
    ['step_overhead_s', 'request_overhead_s']
    """
    taken: list[str] = []
    for term in engine_profiles.TERMS:
        if term not in jac_columns:
            continue
        y = jac_columns[term]
        norm2 = math.fsum(v * v for v in y)
        if math.sqrt(norm2) < _MIN_COLUMN_NORM:
            continue
        if taken:
            cols = [jac_columns[t] for t in taken]
            gram = [[math.fsum(a * b for a, b in zip(ci, cj)) for cj in cols] for ci in cols]
            coef = _solve(gram, [math.fsum(a * b for a, b in zip(ci, y)) for ci in cols])
            if coef is not None:
                fitted = [math.fsum(c * col[k] for c, col in zip(coef, cols)) for k in range(len(y))]
                explained = 1 - math.fsum((a - b) ** 2 for a, b in zip(y, fitted)) / norm2
                if explained > COLLINEAR_R2:
                    continue
        taken.append(term)
    return taken


def levenberg_marquardt(rows: list, profile, free: list[str]) -> tuple:
    """(profile at the optimum, its residuals, its Jacobian, iterations) of the log-error least squares.

    Starts from ``profile``'s values of the ``free`` terms; every other term stays as it is. Each iteration
    solves ``(J^T J + lambda diag(J^T J)) d = -J^T r``, takes the step if the loss falls (lambda / 3), else
    raises lambda tenfold; stops when a step moves no term by its rounding (:data:`ROUND_S`).
    """
    x = [getattr(profile, t) / SCALE_S[t] for t in free]
    profile = _with(profile, free, x)
    r = _residuals(rows, profile)
    cost = math.fsum(v * v for v in r)
    lam = 1e-3
    jac = _jacobian(rows, profile, free, r)
    iterations = 0
    for iterations in range(1, _MAX_ITERATIONS + 1):
        p = len(free)
        a = _normal(jac, p)
        g = [math.fsum(row[i] * v for row, v in zip(jac, r)) for i in range(p)]
        moved = False
        while lam < 1e8:
            damped = [[a[i][j] + (lam * (a[i][i] + 1e-9) if i == j else 0.0) for j in range(p)] for i in range(p)]
            step = _solve(damped, [-v for v in g])
            if step is None:
                lam *= 10
                continue
            trial = _with(profile, free, [xi + di for xi, di in zip(x, step)])
            if all(getattr(trial, t) == getattr(profile, t) for t in free):
                break  # converged: the step rounds to nothing
            r_trial = _residuals(rows, trial)
            cost_trial = math.fsum(v * v for v in r_trial)
            if cost_trial < cost:
                profile, r, cost, lam, moved = trial, r_trial, cost_trial, lam / 3, True
                x = [getattr(profile, t) / SCALE_S[t] for t in free]
                break
            lam *= 10
        if not moved:
            break
        jac = _jacobian(rows, profile, free, r)
    return profile, r, jac, iterations


def _standard_errors(jac: list[list[float]], r: list[float], free: list[str]) -> dict:
    """Per free term, its standard error in seconds (``s^2 (J^T J)^-1``), or None without spare rows."""
    n, p = len(r), len(free)
    if n <= p or not p:
        return {t: None for t in free}
    s2 = math.fsum(v * v for v in r) / (n - p)
    a = _normal(jac, p)
    out = {}
    for i, t in enumerate(free):
        unit = [1.0 if j == i else 0.0 for j in range(p)]
        column = _solve(a, unit)
        out[t] = None if column is None else round_sig(math.sqrt(max(0.0, s2 * column[i])) * SCALE_S[t], 3)
    return out


def fit_engine(engine: str, seeds: dict, *, exclude_source: str | None = None, seed_sources: dict | None = None) -> dict:
    """One engine's terms fitted jointly on its calibration rows (without ``exclude_source``'s).

    ``seeds``: each term's starting value (s), kept where the rows cannot identify it; ``seed_sources`` says
    where each seed comes from. Returns ``{term: {"value", "role", "source", "standard_error_s", "rows",
    "sources"}}`` plus ``"_fit"``: the rows, log residuals and iterations.
    """
    from calc.latency_accuracy import source_of

    rows = calibration_rows(engine, exclude_source=exclude_source)
    zero = ZERO.get(engine, {})
    profile = engine_profiles.get_profile(engine).with_terms(
        **{t: (0.0 if t in zero else seeds[t]) for t in engine_profiles.TERMS})
    candidates = [t for t in engine_profiles.TERMS if t not in zero and any(rows_behind(t, r) for r in rows)]
    if len({r["inputs"]["tp"] for r in rows}) < 2:
        # Rows all on one GPU count price the tensor-parallel cost and the step cost as one sum: by structure, not
        # only to the Jacobian's precision (whose finite differences of the simulator are not exactly proportional).
        candidates = [t for t in candidates if t != "tp_step_overhead_s"]
    free: list[str] = []
    if rows and candidates:
        base = _residuals(rows, profile)
        jac = _jacobian(rows, profile, candidates, base)
        free = identifiable({t: [row[i] for row in jac] for i, t in enumerate(candidates)})
    profile, residuals, jac, iterations = (levenberg_marquardt(rows, profile, free) if free
                                           else (profile, _residuals(rows, profile) if rows else [], [], 0))
    errors = _standard_errors(jac, residuals, free) if free else {}
    out = {}
    for t in engine_profiles.TERMS:
        behind = [r for r in rows if rows_behind(t, r)]
        groups = sorted({source_of(r) for r in behind})
        entry = {"value": getattr(profile, t), "standard_error_s": errors.get(t), "rows": len(behind) if t in free else 0,
                 "sources": groups if t in free else []}
        if t in zero:
            entry.update(role="assumption", source=f"0: {zero[t]}")
        elif t not in free:
            why = ("no calibration row moves it" if not behind else
                   f"its {len(behind)} calibration rows cannot tell it from the terms fitted before it")
            entry.update(role="assumption", source=f"{(seed_sources or {}).get(t, 'the fit seed')} ({why})")
        else:
            role = "calibration" if len(behind) >= MIN_ROWS and len(groups) >= MIN_SOURCES else "assumption"
            where = "; ".join(groups)
            text = (f"fitted jointly with the engine's other terms on {len(behind)} calibration "
                    f"row{'s' if len(behind) != 1 else ''} from {len(groups)} source{'s' if len(groups) != 1 else ''} "
                    f"({where})")
            if role == "assumption":
                text += (f": fewer than {MIN_ROWS} rows from {MIN_SOURCES} independent sources, so an assumption "
                         "(one source's quirks cannot be told from the engine's)")
            entry.update(role=role, source=text)
        out[t] = entry
    out["_fit"] = {"rows": [r["id"] for r in rows], "log_residuals": [round_sig(v, 4) for v in residuals],
                   "iterations": iterations, "free": free}
    return out


def _seeds_for(engine: str, done: dict) -> tuple[dict, dict]:
    fallback = FALLBACK[engine]
    if fallback is None:
        return dict(SEED_S), {t: f"the fit's seed, {round_sig(v * 1000, 3)} ms (an order of magnitude, "
                                 "calc.latency_fit.SEED_S)" for t, v in SEED_S.items()}
    return ({t: done[fallback][t]["value"] for t in engine_profiles.TERMS},
            {t: f"inherited from engine profile '{fallback}'" for t in engine_profiles.TERMS})


def fit(exclude_source: str | None = None) -> dict:
    """Every profile fitted in :data:`FIT_ORDER`: ``{engine: {term: entry}}`` (see :func:`fit_engine`).

    ``exclude_source``: leave that source's rows out of every fit (:mod:`calc.latency_loso`). Slow: a few
    hundred simulations.
    """
    done: dict = {}
    for key in FIT_ORDER:
        seeds, seed_sources = _seeds_for(key, done)
        done[key] = fit_engine(key, seeds, exclude_source=exclude_source, seed_sources=seed_sources)
    return done


def _terms_only(result: dict) -> dict:
    return {k: {t: {f: e[f] for f in ("value", "role", "source", "standard_error_s", "rows", "sources")}
                for t, e in terms.items() if t in engine_profiles.TERMS} for k, terms in result.items()}


def stored() -> dict:
    """The stored constants and their fit metadata, in the shape of :func:`fit` (without ``_fit``).

    >>> stored()["vllm"]["step_overhead_s"]["role"]
    'calibration'
    """
    with open(engine_profiles.PROFILES_PATH, encoding="utf-8") as handle:
        data = json.load(handle)
    out = {}
    for key, p in data["profiles"].items():
        out[key] = {t: {"value": p[t], "role": p["terms"][t]["role"], "source": p["terms"][t]["source"],
                        "standard_error_s": p["terms"][t].get("standard_error_s"),
                        "rows": p["terms"][t].get("rows", 0), "sources": p["terms"][t].get("sources", [])}
                    for t in engine_profiles.TERMS}
    return out


def write(result: dict, path: str | None = None) -> None:
    """Store a :func:`fit` result in ``calc/data/engine_profiles.json`` (labels, scheduler and other fields kept)."""
    path = path or engine_profiles.PROFILES_PATH
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    data["about"] = ("Engine profiles: each engine's fixed step and request costs (s), fitted jointly by "
                     "`python -m calc.latency_fit --write` on its calibration rows of calc/data/measurements.json "
                     "only, each with its role, source, standard error and the rows and sources behind it "
                     "(calc/latency_fit.py says how); read by calc/engine_profiles.py.")
    for key, terms in _terms_only(result).items():
        p = data["profiles"][key]
        for term, entry in terms.items():
            p[term] = entry["value"]
            p["terms"][term] = {f: entry[f] for f in ("role", "source", "standard_error_s", "rows", "sources")}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, ensure_ascii=False)
        handle.write("\n")


def _shown(term: str, value: float | None) -> str:
    if value is None:
        return "-"
    return f"{round_sig(value * 1e6, 4)} us" if term == "seq_overhead_s" else f"{round_sig(value * 1000, 4)} ms"


LOSO_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "latency_loso.json")


def term_spread(loso: dict) -> dict:
    """Per engine and term, the values it took in the leave-one-source-out folds whose rows fitted it.

    ``loso``: the generated file of :mod:`calc.latency_loso` (its ``folds``); a term a fold's rows could not
    identify (it kept its seed there) is left out.

    >>> term_spread({"folds": {"a": {"vllm": {"fitted": ["step_overhead_s"], "step_overhead_s": 0.001,
    ...     "request_overhead_s": 0.01}}, "b": {"vllm": {"fitted": []}}}})
    {'vllm': {'step_overhead_s': [0.001]}}
    """
    out: dict = {}
    for engines in loso["folds"].values():
        for key, terms in engines.items():
            for t in terms.get("fitted", []):
                out.setdefault(key, {}).setdefault(t, []).append(terms[t])
    return out


def render(result: dict, spread: dict | None = None) -> str:
    """The fit as text: each term's value, standard error, leave-one-source-out range, role, rows and sources.

    ``spread``: per engine and term, the values the term took in the leave-one-source-out fits
    (:func:`calc.latency_loso.term_spread`).
    """
    lines = [f"{'engine':<20} {'term':<20} {'value':>10} {'+/- s.e.':>10} {'LOSO range':>21}  {'role':<12} "
             "rows  sources"]
    for key, terms in result.items():
        for term in engine_profiles.TERMS:
            e = terms[term]
            values = (spread or {}).get(key, {}).get(term)
            loso = f"{_shown(term, min(values))} - {_shown(term, max(values))}" if values else "-"
            lines.append(f"{key:<20} {term:<20} {_shown(term, e['value']):>10} {_shown(term, e['standard_error_s']):>10} "
                         f"{loso:>21}  {e['role']:<12} {e['rows']:>4}  {'; '.join(e['sources']) or '-'}")
            lines.append(f"{'':<42}{e['source']}")
        fit_info = terms.get("_fit")
        if fit_info:
            lines.append(f"{'':<42}fit: {len(fit_info['rows'])} rows, {fit_info['iterations']} iterations, "
                         f"log residuals {fit_info['log_residuals']}")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m calc.latency_fit [--write]``: fit, print, and optionally store."""
    parser = argparse.ArgumentParser(prog="python -m calc.latency_fit", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the fit in calc/data/engine_profiles.json")
    args = parser.parse_args(argv)
    result = fit()
    try:
        with open(LOSO_PATH, encoding="utf-8") as handle:
            spread = term_spread(json.load(handle))
    except (OSError, KeyError, ValueError):
        spread = None  # no generated file yet: python -m calc.latency_loso --write
    print(render(result, spread))
    same = _terms_only(result) == stored()
    if args.write:
        write(result)
        print("\nstored in calc/data/engine_profiles.json")
    else:
        print("\nthe stored constants " + ("equal this fit" if same else "differ: rerun with --write"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
