"""A per-test timeline, to see where a test run's wall time goes: ``pytest -p tests.timeline --timeline=FILE``.

Each worker appends one JSON line per test to FILE: the worker, the node id, its start and end (wall clock,
seconds since the epoch) and the CPU seconds the worker and every process under it (the Playwright driver,
Chromium, Node running Pyodide) spent during the test. A test with much wall and little CPU is waiting.
``python -m tests.timeline FILE`` prints the busiest files, the idlest ones and each worker's span.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import pytest

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100


def _tree_cpu_s(root_pid: int) -> float:
    """CPU seconds (user + system) of ``root_pid`` and every live process under it, read from /proc."""
    parents, cpu_ticks = {}, {}
    for name in os.listdir("/proc"):
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", encoding="ascii", errors="replace") as handle:
                fields = handle.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # ended while we looked
        # after the name: state ppid ... utime (12th) stime (13th) cutime cstime
        parents[int(name)] = int(fields[1])
        cpu_ticks[int(name)] = sum(int(value) for value in fields[11:15])
    total = 0
    for pid, ticks in cpu_ticks.items():
        ancestor = pid
        while ancestor and ancestor != root_pid:
            ancestor = parents.get(ancestor, 0)
        if ancestor == root_pid:
            total += ticks
    return total / CLOCK_TICKS_PER_S


def pytest_addoption(parser):
    parser.addoption("--timeline", default=None, help="append a JSON line per test (wall and CPU) to this file")


class Timeline:
    def __init__(self, path: str):
        self.path = path
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start_wall, start_cpu = time.time(), _tree_cpu_s(os.getpid())
        yield
        end_wall, end_cpu = time.time(), _tree_cpu_s(os.getpid())
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"worker": self.worker, "nodeid": item.nodeid, "start": start_wall,
                                     "end": end_wall, "cpu_s": round(end_cpu - start_cpu, 3)}) + "\n")


def pytest_configure(config):
    path = config.getoption("--timeline", None)
    if path:
        config.pluginmanager.register(Timeline(os.path.abspath(path)), "calc-timeline")


def summarize(path: str, top: int = 25) -> str:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    by_file = defaultdict(lambda: [0.0, 0.0, 0])
    spans = defaultdict(lambda: [float("inf"), 0.0, 0.0, 0.0])
    for row in rows:
        wall = row["end"] - row["start"]
        entry = by_file[row["nodeid"].split("::")[0]]
        entry[0] += wall
        entry[1] += row["cpu_s"]
        entry[2] += 1
        span = spans[row["worker"]]
        span[0], span[1] = min(span[0], row["start"]), max(span[1], row["end"])
        span[2] += wall
        span[3] += row["cpu_s"]
    lines = [f"{'file':60} {'tests':>5} {'wall_s':>8} {'cpu_s':>8} {'cpu/wall':>8}"]
    for name, (wall, cpu, count) in sorted(by_file.items(), key=lambda kv: -kv[1][0])[:top]:
        lines.append(f"{name:60} {count:5d} {wall:8.1f} {cpu:8.1f} {cpu / wall if wall else 0:8.2f}")
    start = min(span[0] for span in spans.values())
    for worker, (first, last, wall, cpu) in sorted(spans.items()):
        lines.append(f"{worker}: from +{first - start:.0f} s to +{last - start:.0f} s, "
                     f"tests {wall:.0f} s wall, {cpu:.0f} s CPU")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25))
