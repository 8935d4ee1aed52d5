"""Baseline error report of calc against published online-serving runs (issue 18).

Predicts every ``online_latency`` row of ``calc/data/measurements.json`` with the current simulator
(:mod:`calc.latency_accuracy`: batch and all-at-once clients as run, closed-loop rows with one client
exactly, with more clients through a Little's-law Poisson stand-in, flagged) and prints, per metric (TTFT,
TPOT/ITL, end to end, throughput) and separately for calibration and validation rows, the number of
figures, the median absolute error, the median signed error and how many are optimistic. ``--rows`` adds
every figure; ``--json PATH`` writes the results and the summary. Not a test: it measures, it does not
assert (tests/test_latency_accuracy.py does).

    .venv/bin/python bench/latency_report.py [--rows] [--json bench-results/latency.json] [--write-baseline]

``--write-baseline`` records the validation medians, in-sample and leave-one-source-out (the generated
``calc/data/latency_loso.json``, :mod:`calc.latency_loso`), in ``tests/data/latency_baseline.json``, which
tests/test_latency_targets.py holds calc to (no median may get worse). The report ends with the
leave-one-source-out table the accuracy page shows.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc import latency_accuracy, latency_loso  # noqa: E402


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rows", action="store_true", help="print every figure beside calc's")
    parser.add_argument("--json", metavar="PATH", help="also write results and summary as JSON")
    parser.add_argument("--write-baseline", action="store_true",
                        help="record the validation medians in tests/data/latency_baseline.json")
    args = parser.parse_args(argv)
    results = latency_accuracy.evaluate()
    print(latency_accuracy.report(results, rows=args.rows))
    loso = latency_loso.stored()
    print("\nvalidation rows, in-sample beside leave-one-source-out (calc/data/latency_loso.json):")
    print(latency_loso.summary_table(loso))
    if args.json:
        os.makedirs(os.path.dirname(os.path.abspath(args.json)), exist_ok=True)
        with open(args.json, "w", encoding="utf-8") as handle:
            json.dump({"summary": latency_accuracy.summary(results), "results": [r.to_dict() for r in results]},
                      handle, indent=1, sort_keys=True)
            handle.write("\n")
    if args.write_baseline:
        s = latency_loso.summary(loso)
        baseline = {kind: {m: {"n": s[m]["all"][kind]["n"],
                               "median_abs_error": round(s[m]["all"][kind]["median_abs_error"], 12)}
                           for m in latency_accuracy.METRICS} for kind in ("in_sample", "loso")}
        # The same over the sources the page had before issue 33's added ones (latency_loso.ADDED_SOURCES).
        before = latency_loso.before_after(loso)
        baseline["before_added_sources"] = {
            kind: {m: {"n": before[m]["all"]["before"][kind]["n"],
                       "median_abs_error": round(before[m]["all"]["before"][kind]["median_abs_error"], 12)}
                   for m in latency_accuracy.METRICS} for kind in ("in_sample", "loso")}
        with open(os.path.join(ROOT, "tests", "data", "latency_baseline.json"), "w", encoding="utf-8") as handle:
            json.dump(baseline, handle, indent=1, sort_keys=True)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
