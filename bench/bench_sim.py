"""Benchmark of calc.sim: simulated requests and events per wall second, in CPython and in Pyodide under Node.

The standard scenario is the lesson's replica (Llama 3.1 70B, bf16, TP4 on H100s), 1,024 tokens in and 256
out, Poisson arrivals at 10 requests/s, 6,000 requests; then the same at 100,000 requests (cost must be
linear in requests), the standard scenario with the engine features on (prefix caching with a shared
system prompt; EAGLE-like speculation), and the same engine as a fleet (of one; of four replicas). Targets on the 2-core development machine (issue 5): the standard
scenario under 1 s in CPython and under 2 s in Pyodide.

Prints a table and writes bench-results/sim.json. Not a test: it measures, it does not assert. Wall time on
a loaded machine includes waiting for a CPU: compare CPU seconds. ``CALC_SIM_FAST_PATHS=0`` times the
general twins of the fast paths (:mod:`calc.sim.fast`).

    .venv/bin/python bench/bench_sim.py [--quick] [--no-pyodide] [--repeat N]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc.sim import Scenario, Simulation  # noqa: E402
from calc.sim.fleet import Fleet, FleetScenario  # noqa: E402

STANDARD = {"workload": {"arrival": "poisson", "rate_per_s": 10, "requests": 6000}}
CASES = [
    ("standard (6,000 requests)", STANDARD),
    ("standard at 100,000 requests", {"workload": {"arrival": "poisson", "rate_per_s": 10, "requests": 100_000}}),
    ("standard + prefix caching (2,500-token system prompt)",
     {"prefix_caching": True, "max_model_len": 16384,
      "workload": {"arrival": "poisson", "rate_per_s": 10, "requests": 6000, "prefix_tokens": 2500}}),
    ("standard + EAGLE-like speculation", {"speculation": "eagle-like", **STANDARD}),
    # The same engine as a fleet (calc.sim.fleet.Fleet): the lone replica with the fleet's series and summary,
    # and four replicas behind a router at four times the traffic (no fleet-of-one shortcut there).
    ("standard as a fleet of one", {"fleet": {"replicas": 1}, **STANDARD}),
    ("4 replicas, round-robin, 40 requests/s (24,000 requests)",
     {"fleet": {"replicas": 4}, "workload": {"arrival": "poisson", "rate_per_s": 40, "requests": 24000}}),
]


def time_case(data: dict, repeat: int) -> dict:
    best = None
    for _ in range(repeat):
        t0, c0 = time.perf_counter(), time.process_time()
        sim = Fleet(FleetScenario.from_dict(data)) if "fleet" in data else Simulation(Scenario.from_dict(data))
        sim.advance()
        summary = sim.result().summary
        wall, cpu = time.perf_counter() - t0, time.process_time() - c0
        if best is None or wall < best["wall_s"]:
            best = {"wall_s": wall, "cpu_s": cpu, "events": sim.events, "steps": summary["steps"],
                    "requests": summary["requests_total"], "requests_completed": summary["requests_completed"],
                    "simulated_s": summary["duration_s"],
                    "throughput_output_tokens_per_s": summary["throughput_output_tokens_per_s"]}
    best["requests_per_wall_s"] = best["requests"] / best["wall_s"]
    best["events_per_wall_s"] = best["events"] / best["wall_s"]
    return best


def pyodide_rows(sizes) -> dict | None:
    if not shutil.which("node") or not os.path.exists(os.path.join(ROOT, "node_modules", "pyodide", "pyodide.mjs")):
        return None
    done = subprocess.run(["node", os.path.join(ROOT, "bench", "bench_sim_pyodide.mjs"), *map(str, sizes)],
                          capture_output=True, text=True, cwd=ROOT, timeout=1800)
    if done.returncode != 0:
        return {"error": done.stderr[-2000:]}
    return json.loads(done.stdout.strip().splitlines()[-1])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="skip the 100,000-request runs")
    parser.add_argument("--no-pyodide", action="store_true", help="CPython only")
    parser.add_argument("--repeat", type=int, default=3, help="runs per case, best kept (default 3)")
    args = parser.parse_args(argv)

    cases = [c for c in CASES if not (args.quick and "100,000" in c[0])]
    rows = []
    print(f"calc.sim benchmark, CPython {platform.python_version()} on {platform.machine()}, {os.cpu_count()} CPUs")
    print(f"{'case':55} {'wall s':>8} {'CPU s':>7} {'requests/s':>11} {'events/s':>10} {'events':>8} {'simulated s':>11}")
    for name, data in cases:
        r = time_case(data, 1 if "100,000" in name else args.repeat)
        r["case"] = name
        rows.append(r)
        print(f"{name:55} {r['wall_s']:8.3f} {r['cpu_s']:7.3f} {r['requests_per_wall_s']:11,.0f} {r['events_per_wall_s']:10,.0f} "
              f"{r['events']:8,} {r['simulated_s']:11,.0f}")
    out = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "cpython": rows}
    std = rows[0]
    big = next((r for r in rows if r["requests"] == 100_000), None)
    print(f"\nstandard scenario: {std['wall_s']:.3f} s wall, {std['cpu_s']:.3f} s CPU in CPython (target < 1 s)")
    if big:
        ratio = big["cpu_s"] / std["cpu_s"]
        out["cpython_linearity"] = {"requests_ratio": big["requests"] / std["requests"], "cpu_ratio": ratio,
                                    "wall_ratio": big["wall_s"] / std["wall_s"]}
        print(f"linearity: {big['requests'] / std['requests']:.1f}x the requests took {ratio:.1f}x the CPU time")
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else None
    out["load_average_1min"] = load
    if load is not None and load > (os.cpu_count() or 1):
        print(f"note: load average {load:.1f} on {os.cpu_count()} CPUs: wall times include waiting for a CPU")

    if not args.no_pyodide:
        sizes = [6000] if args.quick else [6000, 100_000]
        py = pyodide_rows(sizes)
        out["pyodide"] = py
        if py is None:
            print("Pyodide: skipped (needs node and node_modules/pyodide: npm ci)")
        elif "error" in py:
            print("Pyodide run failed:\n" + py["error"])
        else:
            print(f"\nPyodide {py['python']} under Node (load {py['load_ms'] / 1000:.1f} s):")
            for r in py["rows"]:
                print(f"  {r['requests']:>7,} requests: {r['wall_s']:.3f} s wall, {r['cpu_s']:.3f} s CPU, "
                      f"{r['requests'] / r['wall_s']:,.0f} requests/s, {r['events'] / r['wall_s']:,.0f} events/s")
            p_std = py["rows"][0]
            print(f"standard scenario: {p_std['wall_s']:.3f} s wall, {p_std['cpu_s']:.3f} s CPU in Pyodide "
                  f"(target < 2 s), {p_std['cpu_s'] / std['cpu_s']:.1f}x CPython's CPU time")
            same = p_std["throughput_output_tokens_per_s"] == std["throughput_output_tokens_per_s"]
            print(f"same output tokens/s as CPython: {same}")
            if len(py["rows"]) > 1:
                p_big = py["rows"][1]
                print(f"linearity in Pyodide: {p_big['requests'] / p_std['requests']:.1f}x the requests took "
                      f"{p_big['cpu_s'] / p_std['cpu_s']:.1f}x the CPU time")
    os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
    path = os.path.join(ROOT, "bench-results", "sim.json")
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(out, handle, indent=2, sort_keys=True)
    print(f"\nwrote {os.path.relpath(path, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
