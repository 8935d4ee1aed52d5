"""How far off the simulator has been: error bands from the accuracy page's held-out residuals.

The accuracy page predicts published online-serving runs and reports, per metric, the relative error
``(predicted - measured) / measured`` of the ``validation`` rows, each predicted by a fit that excluded the
row's whole source (leave-one-source-out, stored in ``calc/data/latency_loso.json`` by
:mod:`calc.latency_loso`). A plan's predicted TTFT and TPOT carry the band those held-out errors give for the
plan's engine: if calc was between ``e_min`` and ``e_max`` off on the engine's held-out runs, the measured value
behind a prediction ``p`` lies, by the same record, between ``p / (1 + e_max)`` and ``p / (1 + e_min)``.

Where the engine profile has no held-out row for a metric, the rows of its engine family (vLLM, SGLang,
TensorRT-LLM: :data:`calc.engine_versions.VERSIONS`) give the band, and only where the family has none, every
engine's rows; the band says whose rows it used (``engines``: the profile, ``family:<name>`` or ``all``). A
family's record says more about a new version of the same engine than another engine's runs of another
model do (the pooled rows hold, for example, a DeepSeek-V3 run on SGLang calc prices 99% short).

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


@functools.lru_cache(maxsize=1)
def _held_out_rows() -> tuple:
    """The validation rows of the stored leave-one-source-out record (engine, metric, id, held-out error)."""
    from calc import latency_loso

    rows = latency_loso.stored()["rows"]
    return tuple((r["engine"], r["metric"], r["id"], r["loso_error"]) for r in rows
                 if r["role"] == "validation" and r["loso_error"] is not None)


@functools.lru_cache(maxsize=16)
def residuals(engine: str) -> dict:
    """Per plan metric: the held-out relative errors (sorted) of the engine's rows, else its family's, else all.

    >>> r = residuals("vllm")
    >>> r["tpot"]["engines"], r["tpot"]["n"] >= 5, r["tpot"]["errors"] == sorted(r["tpot"]["errors"])
    ('vllm', True, True)
    >>> residuals("trtllm-serve")["ttft"]["engines"], residuals("vllm-mrv2")["ttft"]["engines"]
    ('family:trtllm', 'family:vllm')
    >>> residuals("vllm-v1")["ttft"]["engines"]   # V1 has TTFT rows of its own (the L4 sweep)
    'vllm-v1'
    """
    from calc.engine_versions import VERSIONS

    family_of = {key: spec[0] for key, spec in VERSIONS.items()}
    rows = _held_out_rows()
    out = {}
    for metric, page_metric in PLAN_METRICS.items():
        of_metric = [r for r in rows if r[1] == page_metric]
        for engines, keep in ((engine, lambda r: r[0] == engine),
                              (f"family:{family_of.get(engine)}", lambda r: family_of.get(r[0]) == family_of.get(engine)),
                              ("all", lambda r: True)):
            mine = [r for r in of_metric if keep(r)]
            if mine:
                break
        out[metric] = {"errors": sorted(round_sig(r[3]) for r in mine), "n": len(mine), "engines": engines,
                       "ids": sorted(r[2] for r in mine)}
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

    ``table`` is :func:`residuals`'s (read from the stored record when not given).

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
