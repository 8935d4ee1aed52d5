"""A per-test timeline, to see where a test run's wall time goes: ``pytest -p tests.timeline --timeline=FILE``.

Each worker appends one JSON line per test to FILE: the worker, the node id, its start and end (wall clock,
seconds since the epoch), the CPU seconds the worker and every process under it (the Playwright driver,
Chromium, Node running Pyodide) spent during the test, and the browser contexts and Pyodide boots (the site's
worker started in a page) the test made. A test with much wall and little CPU is waiting.
``python -m tests.timeline FILE`` prints the busiest files, the idlest ones and each worker's span.

CPU: where the process may create a cgroup v1 ``cpuacct`` group (root in a container), each worker moves into
one of its own and a test's CPU is that group's usage, which counts every descendant, including the Chromium
renderers that exit mid-test (their parent does not reap them into its own totals, so a /proc walk loses
them: it once gave a test negative CPU). Elsewhere it falls back to the /proc walk (``cpu_from`` says which).
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections import defaultdict

import pytest

CLOCK_TICKS_PER_S = os.sysconf("SC_CLK_TCK") if hasattr(os, "sysconf") else 100
CPUACCT = "/sys/fs/cgroup/cpuacct"

#: Counted by the browser fixture (tests/browser/conftest.py): contexts made, and the site's Python worker
#: started in a page (one Pyodide boot each).
COUNTS = {"contexts": 0, "pyodide_boots": 0}


def own_cpuacct_group(name: str) -> str | None:
    """Move this process into a new cpuacct group ``name`` under its current one; its path, or None where that
    is not possible (no cgroup v1 cpuacct, not allowed)."""
    try:
        with open("/proc/self/cgroup", encoding="ascii") as handle:
            current = next(line.split(":", 2)[2].strip() for line in handle
                           if "cpuacct" in line.split(":", 2)[1].split(","))
        group = os.path.join(CPUACCT, current.lstrip("/"), name)
        os.makedirs(group, exist_ok=True)
        with open(os.path.join(group, "cgroup.procs"), "w", encoding="ascii") as handle:
            handle.write(str(os.getpid()))
        return group
    except (OSError, StopIteration, IndexError):
        return None


def group_cpu_s(group: str) -> float:
    with open(os.path.join(group, "cpuacct.usage"), encoding="ascii") as handle:
        return int(handle.read()) / 1e9


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
        # before any child starts (the browser, Node), so that they are born in it
        self.group = own_cpuacct_group(f"calc-timeline-{self.worker}-{os.getpid()}")

    def cpu_s(self) -> float:
        return group_cpu_s(self.group) if self.group else _tree_cpu_s(os.getpid())

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_protocol(self, item, nextitem):
        start_wall, start_cpu, start_counts = time.time(), self.cpu_s(), dict(COUNTS)
        yield
        end_wall, end_cpu = time.time(), self.cpu_s()
        with open(self.path, "a", encoding="utf-8") as handle:
            handle.write(json.dumps({"worker": self.worker, "nodeid": item.nodeid, "start": start_wall,
                                     "end": end_wall, "cpu_s": round(end_cpu - start_cpu, 3),
                                     "cpu_from": "cgroup" if self.group else "proc",
                                     **{name: COUNTS[name] - start_counts[name] for name in COUNTS}}) + "\n")


    def pytest_unconfigure(self, config):
        """Back into the parent group and the worker's own removed (it fails, harmlessly, while a child lives)."""
        if self.group:
            try:
                with open(os.path.join(os.path.dirname(self.group), "cgroup.procs"), "w", encoding="ascii") as handle:
                    handle.write(str(os.getpid()))
                os.rmdir(self.group)
            except OSError:
                pass


def pytest_configure(config):
    path = config.getoption("--timeline", None)
    if path:
        config.pluginmanager.register(Timeline(os.path.abspath(path)), "calc-timeline")


def summarize(path: str, top: int = 25) -> str:
    rows = [json.loads(line) for line in open(path, encoding="utf-8") if line.strip()]
    by_file = defaultdict(lambda: [0.0, 0.0, 0, 0, 0])
    spans = defaultdict(lambda: [float("inf"), 0.0, 0.0, 0.0])
    for row in rows:
        wall = row["end"] - row["start"]
        entry = by_file[row["nodeid"].split("::")[0]]
        entry[0] += wall
        entry[1] += row["cpu_s"]
        entry[2] += 1
        entry[3] += row.get("contexts", 0)
        entry[4] += row.get("pyodide_boots", 0)
        span = spans[row["worker"]]
        span[0], span[1] = min(span[0], row["start"]), max(span[1], row["end"])
        span[2] += wall
        span[3] += row["cpu_s"]
    lines = [f"{'file (by CPU)':60} {'tests':>5} {'wall_s':>8} {'cpu_s':>8} {'cpu/wall':>8} {'contexts':>8} {'boots':>5}"]
    for name, (wall, cpu, count, contexts, boots) in sorted(by_file.items(), key=lambda kv: -kv[1][1])[:top]:
        lines.append(f"{name:60} {count:5d} {wall:8.1f} {cpu:8.1f} {cpu / wall if wall else 0:8.2f} {contexts:8d} {boots:5d}")
    lines.append(f"{'all':60} {len(rows):5d} {sum(e[0] for e in by_file.values()):8.1f} "
                 f"{sum(e[1] for e in by_file.values()):8.1f} {'':8} {sum(e[3] for e in by_file.values()):8d} "
                 f"{sum(e[4] for e in by_file.values()):5d}")
    start = min(span[0] for span in spans.values())
    for worker, (first, last, wall, cpu) in sorted(spans.items()):
        lines.append(f"{worker}: from +{first - start:.0f} s to +{last - start:.0f} s, "
                     f"tests {wall:.0f} s wall, {cpu:.0f} s CPU")
    return "\n".join(lines)


if __name__ == "__main__":
    print(summarize(sys.argv[1], int(sys.argv[2]) if len(sys.argv) > 2 else 25))
