"""Re-tune step 19's incident after the engine's constants change: scan the tuning knob, print each peak.

The knob is the long documents' mean prompt in ``calc/sim/presets/step19-incident-p99.json``
(:data:`calc.incident.TUNING_KNOB`); the target is the TTFT panel's peak (p99 over the trailing
10 s window) rounding to the lesson's 36 s (:data:`calc.incident.TITLE_PEAK_S`) on the preset's seed.
The peak is the worst window of a p99, so it jumps by several seconds between neighbouring
values: scan, pick a value that hits, write it into the preset (and the copies the tests name),
re-bless the goldens of step19-incident-p99 and step20-pools.

    .venv/bin/python scripts/tune_incident.py                 # 15,000 to 18,000 tokens in steps of 100
    .venv/bin/python scripts/tune_incident.py 16000 17000 50  # start, stop, step
"""

from __future__ import annotations

import os
import sys

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from calc.incident import TITLE_PEAK_S, TUNING_KNOB, incident_scenario, peak_scan, request_class  # noqa: E402


def main(argv: list[str]) -> int:
    start, stop, step = (int(a) for a in argv) if len(argv) == 3 else (15_000, 18_000, 100)
    name, field = TUNING_KNOB
    current = request_class(incident_scenario(), name)[field]
    print(f"knob: {name}.{field} (now {current:,}); target: peak rounding to {TITLE_PEAK_S} s")
    hits = []
    for tokens, peak in peak_scan(range(start, stop + 1, step)):
        hit = round(peak) == TITLE_PEAK_S
        hits += [tokens] if hit else []
        print(f"{tokens:>7,} tokens  peak {peak:7.2f} s{'  <- hits' if hit else ''}", flush=True)
    print("values that hit:", ", ".join(f"{t:,}" for t in hits) or "none; widen the range or refine the step")
    return 0 if hits else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
