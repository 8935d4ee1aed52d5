"""What the NIM closed-loop rows would read under the client and server facts read in sources (issue 18).

Each ``nim-`` row of calc/data/measurements.json is one figure (TTFT, ITL, throughput) of one run (shape and
concurrency); this runs each run once per variant and prints every figure beside the published one:

* ``as-run``: what :mod:`calc.latency_accuracy` does (the client's warm-up first, then the profiled
  requests, the clients going on from the warm-up without a pause);
* ``idle-start``: the profiled requests from an idle server, every client sending at once, none measured
  before them: AIPerf waits for every warm-up response before its profiling phase starts
  (ai-dynamo/aiperf docs/tutorials/warmup.md, "Grace Period");
* ``template+N``: every prompt N tokens longer: a chat endpoint wraps the synthetic prompt in the model's
  chat template, which AIPerf's synthetic ISL leaves out unless ``--apply-chat-template`` is given (AIPerf
  docs, "Input Sequence Length (ISL) Tokenization"); N is a stand-in (Llama 3.3's template count is not
  read), so this variant is a sensitivity, never a prediction.

Not a test and not a model change: it measures, it asserts nothing. The role column says which rows are
calibration: a variant that moves them (``template+N`` moves the c1 TTFT that ``request_overhead_s`` is
fitted on) would move the fit too, which this script does not redo.

    .venv/bin/python bench/nim_closed_loop_variants.py [--variant as-run idle-start template+30]
"""

from __future__ import annotations

import argparse
import copy
import os
import re
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc import latency_accuracy  # noqa: E402

_TEMPLATE = re.compile(r"^template\+(\d+)$")


def _runs(rows: list) -> dict:
    """The NIM rows grouped by run: id without its figure suffix -> rows (one per figure)."""
    runs: dict = {}
    for row in rows:
        if row["id"].startswith("nim-") and row["inputs"]["client"]["kind"] == "closed_loop":
            runs.setdefault(row["id"].rsplit("-", 1)[0], []).append(row)
    return runs


def predict_run(rows: list, variant: str) -> dict:
    """Each row's predicted figure (its unit) for one run under ``variant``: row id -> value."""
    row = copy.deepcopy(rows[0])
    template = _TEMPLATE.match(variant)
    if template:
        row["inputs"]["lengths"]["input_tokens"] += int(template.group(1))
    elif variant not in ("as-run", "idle-start"):
        raise SystemExit(f"--variant must be as-run, idle-start or template+N; got {variant!r}")
    scenario = latency_accuracy.scenario_for(row)
    warmup = latency_accuracy.warmup_requests(row)
    if variant == "idle-start":
        scenario["workload"]["requests"] = latency_accuracy._closed_requests(row)  # the profiled ones only
        warmup = 0
    summary = latency_accuracy._run(scenario, warmup)
    return {r["id"]: latency_accuracy._predicted(r, summary) for r in rows}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--variant", nargs="+", default=["as-run", "idle-start", "template+30"])
    args = parser.parse_args(argv)
    runs = _runs(latency_accuracy.load_rows())
    header = f"{'row (nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-)':<44} {'role':<5} {'measured':>10}"
    print(header + "".join(f" {v:>20}" for v in args.variant))
    for rows in runs.values():
        predicted = {v: predict_run(rows, v) for v in args.variant}
        for row in rows:
            measured = row["figure"]["value"]
            cells = "".join(f" {predicted[v][row['id']]:>10.1f} ({(predicted[v][row['id']] - measured) / measured:+6.1%})"
                            for v in args.variant)
            print(f"{row['id'][len('nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-'):]:<44} {row['role'][:5]:<5} "
                  f"{measured:>10.1f}{cells}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
