"""Cached passes for the browser tier, by the build cache's rule: a key known before the test runs.

A browser test that passed is reported as a cached pass while its key is unchanged. The key is coarse, like the
build cache's (hooks/build_cache.py), and is never learnt from what the test touched:

* the test's code: its own file and every helper and conftest of ``tests/`` and of its folder (every ``.py``
  file whose name does not start with ``test_``);
* what the built site is made of: the build cache's digests of ``calc`` (each page module and the rest), and
  the digest of the other sources of the site (``hooks/``, ``docs/``, ``overrides/``, ``mkdocs.yml``, the pins
  of the runtime and of the Python packages);
* Chromium's and Playwright's versions, Python's, and the environment variables the tests read.

So a prose edit reruns every browser test, and so does a calc edit; an edit to one browser test's file reruns
that file's tests. Only passes are reused: a failed test reruns. ``FRESH=1`` (``make test-fresh``) reruns every
test, and CI (``CI`` set) never reuses. Records live in ``build/test-cache/`` (one file per xdist worker,
merged on read).
"""

from __future__ import annotations

import functools
import hashlib
import json
import os
import sys
import time

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_DIR = os.environ.get("CALC_TEST_CACHE_DIR", os.path.join(ROOT, "build", "test-cache"))  # another for tests of it
SITE_ROOT = os.environ.get("CALC_TEST_SITE_ROOT", ROOT)  # the project whose site the tests load (another for tests of it)
SITE_SOURCES = ("hooks", "docs", "overrides", "mkdocs.yml", "package-lock.json", "requirements.txt")
ENV_READ = ("CALC_SITE_DIR", "CHROMIUM_PATH", "SITE_URL", "CALC_TEST_CACHE_DIR", "CALC_TEST_SITE_ROOT")
FORMAT = 2  # bump when the key's recipe changes: every record is then stale


def reuse_allowed(environ=os.environ) -> bool:
    """Whether passes may be reused: never in CI, never with FRESH=1.

    >>> reuse_allowed({}), reuse_allowed({"CI": "true"}), reuse_allowed({"FRESH": "1"})
    (True, False, False)
    """
    return not environ.get("CI") and environ.get("FRESH", "") in ("", "0")


def files_digest(root: str, paths, keep=lambda name: True) -> str:
    """One digest of the files under ``paths`` (relative to ``root``; folders walked, ``__pycache__`` left out),
    each by its path and bytes; a missing path counts as missing.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp(); _ = open(os.path.join(folder, "a.txt"), "w").write("1")
    >>> first = files_digest(folder, ["a.txt", "b"])
    >>> _ = open(os.path.join(folder, "a.txt"), "w").write("2")
    >>> first == files_digest(folder, ["a.txt", "b"])
    False
    """
    digest = hashlib.sha256()
    for path in paths:
        full = os.path.join(root, path)
        if os.path.isdir(full):
            found = sorted(os.path.join(base, name) for base, dirs, names in os.walk(full)
                           if "__pycache__" not in base for name in names if keep(name) and not name.endswith(".pyc"))
        else:
            found = [full]
        for file in found:
            digest.update(os.path.relpath(file, root).encode() + b"\0")
            try:
                with open(file, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
            except OSError:
                digest.update(b"missing")
    return digest.hexdigest()


def is_helper(name: str) -> bool:
    """A test's helper or conftest (not another test file, which pytest imports only to collect it).

    >>> is_helper("helpers.py"), is_helper("conftest.py"), is_helper("test_crawl.py"), is_helper("page.html")
    (True, True, False, False)
    """
    return name.endswith(".py") and not name.startswith("test_")


def site_digest(root: str = SITE_ROOT) -> str:
    """What the built site is made of: the build cache's digests of calc and the other sources of the site."""
    hooks_dir = os.path.join(ROOT, "hooks")
    if hooks_dir not in sys.path:
        sys.path.insert(0, hooks_dir)
    import build_cache

    calc = build_cache.project_digests(root)
    return hashlib.sha256(json.dumps({"calc": calc.calc, "pages": calc.pages,
                                      "sources": files_digest(root, SITE_SOURCES)}, sort_keys=True).encode()).hexdigest()


@functools.lru_cache(maxsize=None)
def code_digest(test_file: str) -> str:
    """The test's own file and the helpers of ``tests/`` and of the test's folder."""
    folder = os.path.dirname(test_file)
    helpers = files_digest(ROOT, ["tests"], is_helper)
    beside = files_digest(folder, sorted(n for n in os.listdir(folder) if is_helper(n)))
    return hashlib.sha256(f"{helpers}\n{beside}\n{files_digest(folder, [os.path.basename(test_file)])}".encode()
                          ).hexdigest()


def load_records(cache_dir: str = CACHE_DIR) -> dict:
    """Every worker's records merged: the latest record of each test wins."""
    merged: dict = {}
    if not os.path.isdir(cache_dir):
        return merged
    for name in sorted(os.listdir(cache_dir)):
        if not (name.endswith(".json") and name.startswith("browser-")):
            continue
        try:
            with open(os.path.join(cache_dir, name), encoding="utf-8") as handle:
                records = json.load(handle)
        except (OSError, ValueError):
            continue
        for nodeid, record in records.items():
            if nodeid not in merged or record["at"] > merged[nodeid]["at"]:
                merged[nodeid] = record
    return merged


def _is_browser_test(item) -> bool:
    return item.get_closest_marker("browser") is not None


class BrowserCache:
    def __init__(self):
        self.reuse = reuse_allowed()
        self.records = load_records()
        self.new_records: dict = {}
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self._static = None

    def key(self, item) -> str:
        if self._static is None:  # once per process: the sources and versions do not change during a run
            self._static = json.dumps({"format": FORMAT, "site": site_digest(), "python": sys.version,
                                       "versions": installed_versions(),
                                       "env": {name: os.environ.get(name) for name in ENV_READ}}, sort_keys=True)
        code = code_digest(os.path.realpath(str(item.path)))
        return hashlib.sha256(f"{self._static}\n{code}".encode()).hexdigest()

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.reuse or not _is_browser_test(item):
            return None
        record = self.records.get(item.nodeid)
        if record and record.get("outcome") == "passed" and record.get("key") == self.key(item):
            self._report_cached_pass(item, nextitem)
            return True
        return None

    def _report_cached_pass(self, item, nextitem):
        from _pytest.reports import TestReport

        item.ihook.pytest_runtest_logstart(nodeid=item.nodeid, location=item.location)
        for when in ("setup", "call", "teardown"):
            report = TestReport(item.nodeid, item.location, dict.fromkeys(item.keywords, 1), "passed", None, when,
                                user_properties=[("cached_pass", True)])
            item.ihook.pytest_runtest_logreport(report=report)
        item.session._setupstate.teardown_exact(nextitem)  # what the previous test kept for this one
        item.ihook.pytest_runtest_logfinish(nodeid=item.nodeid, location=item.location)

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        if not _is_browser_test(item):
            return
        report = outcome.get_result()
        failed = item.stash.get(FAILED_KEY, False) or report.outcome != "passed"
        item.stash[FAILED_KEY] = failed
        if call.when == "teardown":
            self.new_records[item.nodeid] = {"outcome": "failed" if failed else "passed", "key": self.key(item),
                                             "at": time.time()}

    def pytest_sessionfinish(self, session):
        if not self.new_records:
            return
        os.makedirs(CACHE_DIR, exist_ok=True)
        mine = os.path.join(CACHE_DIR, f"browser-{self.worker}.json")
        kept = {}
        try:
            with open(mine, encoding="utf-8") as handle:
                kept = json.load(handle)
        except (OSError, ValueError):
            pass
        kept.update(self.new_records)
        with open(mine + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(kept, handle, sort_keys=True)
        os.replace(mine + ".tmp", mine)


FAILED_KEY = pytest.StashKey[bool]()


def installed_versions() -> dict:
    """Chromium's and Playwright's versions as installed, without launching a browser.

    >>> sorted(installed_versions())
    ['chromium', 'playwright']
    """
    import subprocess
    from importlib.metadata import version

    from tests.browser.conftest import chromium_path

    executable = chromium_path()
    try:
        chromium = subprocess.run([executable, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        chromium = "unknown"
    return {"chromium": chromium, "playwright": version("playwright")}


def pytest_configure(config):
    config.pluginmanager.register(BrowserCache(), "calc-browser-cache")


def pytest_terminal_summary(terminalreporter):
    cached = [report for report in terminalreporter.stats.get("passed", [])
              if report.when == "call" and ("cached_pass", True) in [tuple(p) for p in report.user_properties]]
    if cached or os.environ.get("FRESH") or os.environ.get("CI"):
        why = "CI never reuses" if os.environ.get("CI") else "FRESH=1 reruns every test" if os.environ.get("FRESH") \
            else "their code and the site's sources are unchanged; FRESH=1 (make test-fresh) reruns them"
        terminalreporter.write_line(f"browser result cache: {len(cached)} cached passes ({why})")
