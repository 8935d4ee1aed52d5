"""Benchmark of the contributor's loop: builds, `make serve`'s edit-to-visible, and `make test`.

Figures (issue 17's targets on the 2-core development machine in brackets):

* cold ``mkdocs build`` (an empty build cache) [30 s] and warm ``mkdocs build`` (the cache the cold build filled);
* ``make serve`` (``mkdocs serve``) on that warm cache: first page served after start [15 s];
* a prose edit of a lesson page, from the file's save to the served page showing it [2 s];
* an edit to that page's widget module (``calc/widgets/<page>.py``: its ``facts()`` returns another text for
  one of the page's numbers), from the save to the served page showing it [10 s];
* the last ``make test`` (the Makefile records its duration in bench-results/test-time.json) [5 min].

The builds use a private cache folder (the project's build/calc-cache is left as it is). The edits are made to
the real files and undone in a ``finally``; the bench waits for the server to serve the restored page before it
stops. Prints a table and writes bench-results/loop.json. Not a test: it measures, it does not assert. A figure
that cannot be measured is printed as FAILED with its reason (``failures`` in the JSON), the others are still
measured, and the exit status is 1.

    .venv/bin/python bench/bench_loop.py [--port 8768] [--page lesson/02-kv-cache-arithmetic.md] [--no-build]
    .venv/bin/python bench/bench_loop.py record-test START_EPOCH_S EXIT_STATUS   (used by `make test`)
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RESULTS_DIR = os.path.join(ROOT, "bench-results")
TEST_TIME_FILE = os.path.join(RESULTS_DIR, "test-time.json")
MKDOCS = os.path.join(ROOT, ".venv", "bin", "mkdocs")
FACT = re.compile(r"\{\{\s*([a-z0-9_]+)\s*\}\}")  # a fact of the page's own module
TARGETS_S = {"cold_build_s": 30.0, "first_serve_s": 15.0, "prose_edit_s": 2.0, "widget_module_edit_s": 10.0,
             "test_s": 300.0, "ci_s": 600.0}
POLL_S = 0.05
TIMEOUT_S = 600


def _env(cache_dir: str, site_url: str) -> dict:
    return {**os.environ, "CALC_BUILD_CACHE_DIR": cache_dir, "SITE_URL": site_url, "NO_MKDOCS_2_WARNING": "1"}


def _children_cpu_s() -> float:
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime + usage.ru_stime


def timed_build(cache_dir: str, site_dir: str, site_url: str) -> tuple[float, float]:
    """(wall seconds, CPU seconds of the build and its workers): on a shared machine the CPU time says how
    much work there was, the wall time how long it took with the others' load."""
    started, cpu_before = time.perf_counter(), _children_cpu_s()
    subprocess.run([MKDOCS, "build", "--strict", "-q", "--site-dir", site_dir], cwd=ROOT, check=True,
                   env=_env(cache_dir, site_url), timeout=TIMEOUT_S)
    return time.perf_counter() - started, _children_cpu_s() - cpu_before


def fetch(url: str) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=5) as response:
            return response.read().decode("utf-8", "replace")
    except (urllib.error.URLError, OSError):
        return None


def wait_for(url: str, predicate, timeout_s: float = TIMEOUT_S) -> float:
    """Seconds until the page at ``url`` satisfies ``predicate`` (polled every 50 ms)."""
    started = time.perf_counter()
    while time.perf_counter() - started < timeout_s:
        text = fetch(url)
        if text is not None and predicate(text):
            return time.perf_counter() - started
        time.sleep(POLL_S)
    raise TimeoutError(f"{url} did not show the change within {timeout_s:.0f} s")


def timed_edit(path: str, change, url: str, marker: str) -> float:
    """Apply ``change`` to the file's text, time until ``marker`` is served, then restore the file and wait
    until the server serves the page without it."""
    with open(path, encoding="utf-8") as handle:
        original = handle.read()
    try:
        started = time.perf_counter()
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(change(original))
        wait_for(url, lambda text: marker in text)
        return time.perf_counter() - started
    finally:
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(original)
        try:
            wait_for(url, lambda text: marker not in text, timeout_s=120)
        except TimeoutError:
            print(f"warning: the served page still shows the edit to {os.path.relpath(path, ROOT)}", file=sys.stderr)


def page_module(page: str) -> str:
    stem = os.path.basename(page).removesuffix(".md")
    return re.sub(r"^\d+-", "", stem).replace("-", "_")


def edited_fact(source: str, name: str, value: str) -> str:
    r"""A page module's source with fact ``name`` returning ``value``: the edit a contributor makes to a fact.

    A fact is a function under ``@fact`` (or ``@fact("name")``): its body gets a first ``return``. A module that
    still has one ``facts()`` dict gets a ``facts()`` that adds the value.

    >>> src = 'from x import fact\n\n\n@fact\ndef kv_tokens() -> str:\n    "Doc."\n    return "1"\n'
    >>> print(edited_fact(src, "kv_tokens", "B").splitlines()[5])
        return 'B'  # bench/bench_loop.py: a visible edit, undone at once
    >>> "_bench_facts()" in edited_fact("def facts():\n    return {}\n", "x", "B")
    True
    """
    named = re.compile(r'^@fact(?:\(\s*["\']' + re.escape(name) + r'["\']\s*\))?\n(?:@.*\n)*def (\w+)\(\)[^\n]*:\n',
                       re.M)
    for match in named.finditer(source):
        if match.group(0).startswith("@fact(") or match.group(1) == name:
            return (source[:match.end()] + f"    return {value!r}  # bench/bench_loop.py: a visible edit, undone "
                    "at once\n" + source[match.end():])
    return (source + f"\n\n_bench_facts = facts  # bench/bench_loop.py: a visible edit, undone at once\n\n\n"
            f"def facts():\n    return {{**_bench_facts(), {name!r}: {value!r}}}\n")


def failure_reason(error: BaseException) -> str:
    if isinstance(error, subprocess.CalledProcessError):
        return f"{os.path.basename(str(error.cmd[0]))} exited with status {error.returncode}"
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


def attempt(failures: dict, name: str, measure, *args):
    """``measure(*args)``, or None with the reason in ``failures[name]``: one failing figure stops no other."""
    try:
        return measure(*args)
    except KeyboardInterrupt:
        raise
    except Exception as error:
        failures[name] = failure_reason(error)
        print(f"bench_loop: {name} failed: {failures[name]}", file=sys.stderr)
        return None


def serve_loop(port: int, page: str, cache_dir: str, failures: dict) -> dict:
    url_base = f"http://127.0.0.1:{port}/"
    page_url = url_base + page.removesuffix(".md") + "/"
    page_path = os.path.join(ROOT, "docs", page)
    module = page_module(page)
    module_path = os.path.join(ROOT, "calc", "widgets", f"{module}.py")
    with open(page_path, encoding="utf-8") as handle:
        fact = FACT.search(handle.read())
    nonce = f"{os.getpid()}{int(time.time())}"
    log_file = tempfile.TemporaryFile()
    started = time.perf_counter()
    server = subprocess.Popen(["make", "--no-print-directory", "serve", "HOST=127.0.0.1", f"PORT={port}"], cwd=ROOT,
                              env=_env(cache_dir, url_base), stdout=log_file, stderr=subprocess.STDOUT,
                              start_new_session=True)
    results: dict = {"page": page, "widget_module": os.path.relpath(module_path, ROOT)}
    try:
        if attempt(failures, "first_serve_s", wait_for, page_url, lambda text: "<article" in text) is None:
            failures.setdefault("prose_edit_s", "not measured: the server never served the page")
            failures.setdefault("widget_module_edit_s", "not measured: the server never served the page")
            return results
        results["first_serve_s"] = time.perf_counter() - started
        time.sleep(1.0)  # let the watcher settle after the first build

        prose_marker = f"Benchmark{nonce}prose"
        prose_s = attempt(failures, "prose_edit_s", timed_edit, page_path,
                          lambda text: text.rstrip("\n") + f"\n\n{prose_marker}\n", page_url, prose_marker)
        if prose_s is not None:
            results["prose_edit_s"] = prose_s
        if not fact or not os.path.exists(module_path):
            failures["widget_module_edit_s"] = f"not measured: {page} has no fact of {module_path} to change"
            return results
        module_marker = f"Benchmark{nonce}module"
        name = fact.group(1)
        module_s = attempt(failures, "widget_module_edit_s", timed_edit, module_path,
                           lambda text: edited_fact(text, name, module_marker), page_url, module_marker)
        if module_s is not None:
            results["widget_module_edit_s"] = module_s
            results["widget_module_fact"] = name
    finally:
        os.killpg(server.pid, signal.SIGINT)
        try:
            server.wait(timeout=30)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()
        log_file.seek(0)
        results["serve_log_tail"] = log_file.read().decode("utf-8", "replace").splitlines()[-5:]
    return results


def record_test(start_epoch_s: str, status: str) -> int:
    """Called by `make test` when it ends: how long it took (build included) and whether it passed."""
    os.makedirs(RESULTS_DIR, exist_ok=True)
    seconds = time.time() - float(start_epoch_s)
    with open(TEST_TIME_FILE, "w", encoding="utf-8") as handle:
        json.dump({"seconds": round(seconds, 1), "exit_status": int(status), "ended": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
                   "ci": bool(os.environ.get("CALC_CI"))}, handle, indent=2)
    # Silent: pytest's summary stays the last line `make test` prints (CI reads it).
    return 0


def figure(value: float | None, target_s: float) -> str:
    if value is None:
        return "not measured".ljust(13) + f"target {target_s:g} s"
    verdict = "ok" if value <= target_s else "OVER"
    return f"{value:8.1f} s   target {target_s:g} s   {verdict}"


def main() -> int:
    if len(sys.argv) > 1 and sys.argv[1] == "record-test":
        return record_test(*sys.argv[2:4])
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=int(os.environ.get("BENCH_LOOP_PORT", "8768")))
    parser.add_argument("--page", default="lesson/02-kv-cache-arithmetic.md", help="the page edited (under docs/)")
    parser.add_argument("--no-build", action="store_true", help="skip the cold and warm builds")
    args = parser.parse_args()

    results: dict = {"machine_cpus": os.cpu_count(), "load_average_before": os.getloadavg()}
    failures: dict[str, str] = {}
    cache_dir = tempfile.mkdtemp(prefix="calc-cache-bench-")
    site_dir = tempfile.mkdtemp(prefix="site-bench-")
    site_url = f"http://127.0.0.1:{args.port}/"
    try:
        if args.no_build:
            shutil.rmtree(cache_dir)
            attempt(failures, "build cache copy", shutil.copytree, os.path.join(ROOT, "build", "calc-cache"), cache_dir)
            os.makedirs(cache_dir, exist_ok=True)
        else:
            for name in ("cold_build", "warm_build"):  # the warm build reuses what the cold one stored
                timing = attempt(failures, f"{name}_s", timed_build, cache_dir, site_dir, site_url)
                if timing is not None:
                    results[f"{name}_s"], results[f"{name}_cpu_s"] = timing
        results.update(serve_loop(args.port, args.page, cache_dir, failures))
    finally:
        shutil.rmtree(cache_dir, ignore_errors=True)
        shutil.rmtree(site_dir, ignore_errors=True)
    if os.path.exists(TEST_TIME_FILE):
        with open(TEST_TIME_FILE, encoding="utf-8") as handle:
            last = json.load(handle)
        results["test_s"] = last["seconds"]
        results["test_exit_status"] = last["exit_status"]
        results["test_ci"] = last.get("ci", False)
        results["test_ended"] = last.get("ended")
    results["load_average_after"] = os.getloadavg()
    results["failures"] = failures

    def row(label: str, key: str, note: str = "") -> str:
        if key in failures:
            return f"  {label.ljust(32)}{'FAILED'.rjust(8)}     {failures[key]}"
        target = TARGETS_S.get(key)
        if target is None:
            value = results.get(key)
            return f"  {label.ljust(32)}{'not measured' if value is None else f'{value:8.1f} s'}{note}"
        return f"  {label.ljust(32)}{figure(results.get(key), target)}{note}"

    print(f"The contributor's loop ({results['machine_cpus']} CPUs, load average "
          f"{results['load_average_before'][0]:.1f} before, {results['load_average_after'][0]:.1f} after)")
    cpu = lambda key: f"   ({results[key]:.0f} CPU s)" if key in results else ""  # noqa: E731
    if not args.no_build:
        print(row("cold build (empty cache)", "cold_build_s", cpu("cold_build_cpu_s")))
        print(row("warm build", "warm_build_s", cpu("warm_build_cpu_s")))
    print(row("make serve: first page served", "first_serve_s", "   (warm cache)"))
    print(row("prose edit to visible", "prose_edit_s", f"   ({args.page})"))
    print(row("widget module edit to visible", "widget_module_edit_s", f"   ({results.get('widget_module')})"))
    if "test_s" in results:
        kind = ".ci/run" if results["test_ci"] else "make test"
        passed = "passed" if results["test_exit_status"] == 0 else f"FAILED (exit {results['test_exit_status']})"
        target = TARGETS_S["ci_s" if results["test_ci"] else "test_s"]
        print(f"  {f'last {kind}'.ljust(32)}{figure(results['test_s'], target)}"
              f"   ({passed}, ended {results['test_ended']})")
    else:
        print(f"  {'last make test'.ljust(32)}{figure(None, TARGETS_S['test_s'])}   (run make test first)")
    os.makedirs(RESULTS_DIR, exist_ok=True)
    with open(os.path.join(RESULTS_DIR, "loop.json"), "w", encoding="utf-8") as handle:
        json.dump({**results, "targets_s": TARGETS_S}, handle, indent=2)
    if failures:
        print(f"bench_loop: {len(failures)} measurement(s) failed: {', '.join(failures)}", file=sys.stderr)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
