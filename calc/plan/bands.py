"""How far off the simulator has been: error bands from the accuracy page's held-out residuals.

The accuracy page (:mod:`calc.latency_accuracy`) predicts published online-serving runs and reports, per
metric, the relative error ``(predicted - measured) / measured`` of the ``validation`` rows (never fitted
to). A plan's predicted TTFT and TPOT carry the band those residuals give for the plan's engine: if calc
was between ``e_min`` and ``e_max`` off on the engine's held-out runs, the measured value behind a
prediction ``p`` lies, by the same record, between ``p / (1 + e_max)`` and ``p / (1 + e_min)``. Where the
engine has no held-out row for a metric, every engine's rows for that metric give the band, and the band
says so (``engines`` "all").

>>> band_of(0.05, [-0.1, 0.05, 0.2])["low"], band_of(0.05, [-0.1, 0.05, 0.2])["high"]
(0.0416667, 0.0555556)
"""

from __future__ import annotations

import functools

from calc.accuracy import median
from calc.units import round_sig

__all__ = ["PLAN_METRICS", "residuals", "band_of", "bands_for"]

#: The plan's metrics and the accuracy page's metric that holds their residuals.
PLAN_METRICS = {"ttft": "ttft", "tpot": "tpot_itl"}


@functools.lru_cache(maxsize=16)
def residuals(engine: str) -> dict:
    """Per plan metric: the engine's held-out relative errors (sorted), and whose rows they are.

    Each validation row of the engine is predicted again by :func:`calc.latency_accuracy.predict_row` (the
    simulator as it stands), so the band follows the engine profiles as they are fitted.

    >>> r = residuals("vllm")
    >>> r["tpot"]["engines"], r["tpot"]["n"] >= 5, r["tpot"]["errors"] == sorted(r["tpot"]["errors"])
    ('vllm', True, True)
    """
    from calc import latency_accuracy

    rows = [r for r in latency_accuracy.load_rows() if r["role"] == "validation"]
    out = {}
    for metric, page_metric in PLAN_METRICS.items():
        mine = [r for r in rows if latency_accuracy.metric_of(r) == page_metric
                and r["inputs"].get("engine_profile") == engine]
        engines = engine
        if not mine:
            mine = [r for r in rows if latency_accuracy.metric_of(r) == page_metric]
            engines = "all"
        errors = sorted(round_sig(latency_accuracy.predict_row(r).error) for r in mine)
        out[metric] = {"errors": errors, "n": len(errors), "engines": engines,
                       "ids": sorted(r["id"] for r in mine)}
    return out


def band_of(predicted: float, errors) -> dict:
    """The measured-value band behind ``predicted`` given past relative errors (see the module docstring).

    >>> band_of(1.0, [])
    {'low': None, 'high': None, 'n': 0, 'median_error': None}
    >>> band_of(2.0, [0.25])["low"], band_of(2.0, [0.25])["high"]
    (1.6, 1.6)
    """
    errors = list(errors)
    if not errors or predicted is None:
        return {"low": None, "high": None, "n": len(errors), "median_error": None}
    low = predicted / (1 + max(errors))
    high = predicted / (1 + min(errors))
    return {"low": round_sig(low), "high": round_sig(high), "n": len(errors),
            "median_error": round_sig(median(errors))}


def bands_for(engine: str, predicted: dict, table: dict | None = None) -> dict:
    """Bands for a plan's predicted ``ttft_p50_s``, ``ttft_p99_s``, ``tpot_p50_s``, ``tpot_p99_s``.

    ``table`` is :func:`residuals`'s (computed when not given: a second or so of simulation).

    >>> table = {"ttft": {"errors": [-0.2, 0.1], "n": 2, "engines": "vllm", "ids": []},
    ...          "tpot": {"errors": [0.0], "n": 1, "engines": "vllm", "ids": []}}
    >>> bands_for("vllm", {"ttft_p99_s": 1.0, "tpot_p99_s": 0.05}, table)["ttft_p99_s"]["high"]
    1.25
    """
    table = residuals(engine) if table is None else table
    out = {}
    for key, value in sorted(predicted.items()):
        metric = key.split("_")[0]
        if metric in table and value is not None:
            out[key] = dict(band_of(value, table[metric]["errors"]), engines=table[metric]["engines"])
    return out
