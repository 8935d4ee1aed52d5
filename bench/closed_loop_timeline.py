"""The simulated timeline of one closed-loop row of calc/data/measurements.json (issue 18): who waits for whom.

For each request of the row's run (the client's warm-up first, then the measured ones, as
:func:`calc.latency_accuracy.simulate_row` runs them) it prints when it was sent, its TTFT, when its first
token came and when it finished, and per round of N requests the mean TTFT. The rounds show what a mean
hides: an idle start queues the first round's prompts behind each other, and with fixed lengths requests
whose first tokens came one prefill step apart finish one decode step apart, so their successors queue
again (latency_accuracy's module docstring). Not a test: it prints, it asserts nothing.

    .venv/bin/python bench/closed_loop_timeline.py nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-5000-500-c5-ttft [--show 30]
"""

from __future__ import annotations

import argparse
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc import latency_accuracy  # noqa: E402
from calc.sim import Scenario  # noqa: E402
from calc.sim.arrivals import ProfiledSink  # noqa: E402
from calc.sim.fleet import Fleet  # noqa: E402
from calc.sim.scheduler import TICKS  # noqa: E402


class _Recorder(ProfiledSink):
    """A :class:`ProfiledSink` that also keeps each request's send, first-token and finish times (ns)."""

    def __init__(self, ticks, warmup_requests):
        super().__init__(ticks, warmup_requests)
        self.events: dict[int, list] = {}

    def first_token(self, req, now_ns):
        self.events[req.rid] = [req.arrival_ns, now_ns, None]
        super().first_token(req, now_ns)

    def finish(self, req, now_ns):
        self.events[req.rid][2] = now_ns
        super().finish(req, now_ns)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("row", help="id of a closed_loop row of calc/data/measurements.json")
    parser.add_argument("--show", type=int, default=30, help="requests to print one by one (default 30)")
    args = parser.parse_args(argv)
    rows = {r["id"]: r for r in latency_accuracy.load_rows()}
    row = rows.get(args.row)
    if row is None or row["inputs"]["client"]["kind"] != "closed_loop":
        parser.error(f"row must be the id of a closed_loop row; got {args.row!r}")
    n = row["inputs"]["client"]["concurrency"]
    warmup = latency_accuracy.warmup_requests(row)
    sink = _Recorder(TICKS, warmup)
    run = Fleet(Scenario.from_dict(latency_accuracy.scenario_for(row)), time_series=False, sink=sink)
    run.advance()
    print(f"{row['id']}: {n} clients, {warmup} warm-up requests then {len(sink.events) - warmup} measured; "
          f"measured {row['figure']['metric']} {row['figure']['value']}")
    print(f"{'rid':>5} {'sent s':>9} {'TTFT s':>8} {'first s':>9} {'done s':>9}")
    for rid in sorted(sink.events)[:args.show]:
        sent, first, done = sink.events[rid]
        mark = "  (warm-up)" if rid < warmup else ""
        print(f"{rid:>5} {sent / 1e9:>9.3f} {(first - sent) / 1e9:>8.3f} {first / 1e9:>9.3f} {done / 1e9:>9.3f}{mark}")
    print("\nround  mean TTFT s  (a round: the next N requests sent)")
    rids = sorted(sink.events)
    for k in range(0, len(rids), n):
        chunk = [sink.events[r] for r in rids[k:k + n]]
        mean = sum(first - sent for sent, first, _ in chunk) / len(chunk) / 1e9
        print(f"{k // n:>5} {mean:>12.3f}{'  (warm-up)' if k < warmup else ''}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
