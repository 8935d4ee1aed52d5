"""A result cache for the browser tier only: a browser test that passed is reused ("cached pass") while nothing
it read has changed.

A test's key is everything it reads:

* the bytes of every file the browser fetched during the test: each URL a browser context requested (the
  ``request`` events of every context the ``browser`` fixture makes, service workers' requests included) and
  each path the test's HTTP servers sent, mapped to its file in ``site/`` (or its ``file://`` path);
* the bytes of every file the test process opened under the repository while the test ran (``open``), such as
  ``site/assets/runtime/precache.json`` or a page's built HTML;
* the bytes of every Python module of the repository loaded in the test process (the test file, its
  conftests and helpers, ``hooks`` it imported) and of every file of ``calc`` (its data files are read at
  import, before any test), the list of files under ``site/``
  (a page added or removed reruns the crawl), the Chromium and Playwright versions, Python's version and the
  environment variables the tests read.

A test whose browser requested a URL that maps to no file (another host, ``data:`` aside) is never reused.
Only passes are reused: a failed test reruns. ``FRESH=1`` (``make test-fresh``) reruns every test, and CI
(``CI`` set) never reuses. Records live in ``build/test-cache/`` (one file per xdist worker, merged on read).
"""

from __future__ import annotations

import builtins
import hashlib
import io
import json
import os
import sys
import threading
import time
import urllib.parse

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CACHE_DIR = os.environ.get("CALC_TEST_CACHE_DIR", os.path.join(ROOT, "build", "test-cache"))  # another for tests of it
ENV_READ = ("CALC_SITE_DIR", "CHROMIUM_PATH", "SITE_URL", "CALC_TEST_CACHE_DIR")
FORMAT = 1  # bump when the key's recipe changes: every record is then stale


def file_sha256(path: str) -> str | None:
    """The sha256 of ``path``'s bytes, or None if it is not a readable file.

    >>> file_sha256("/no/such/file") is None
    True
    """
    try:
        with _original_open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return None


_original_open = builtins.open


def reuse_allowed(environ=os.environ) -> bool:
    """Whether passes may be reused: never in CI, never with FRESH=1.

    >>> reuse_allowed({}), reuse_allowed({"CI": "true"}), reuse_allowed({"FRESH": "1"})
    (True, False, False)
    """
    return not environ.get("CI") and environ.get("FRESH", "") in ("", "0")


class Reads:
    """What one test read: files (absolute paths) and whether something unaccountable was fetched."""

    def __init__(self):
        self.files: set[str] = set()
        self.unaccountable: list[str] = []
        self.lock = threading.Lock()

    def add_file(self, path: str) -> None:
        with self.lock:
            self.files.add(os.path.realpath(path))

    def add_unaccountable(self, what: str) -> None:
        with self.lock:
            self.unaccountable.append(what)


class Recorder:
    """Collects the reads of the running test (None between tests: reads then belong to no test)."""

    def __init__(self, site_dir: str):
        self.site_dir = os.path.realpath(site_dir)
        self.current: Reads | None = None

    def site_file(self, url_path: str) -> str:
        """The file in site/ that a server sends for ``url_path`` (directories: their index.html)."""
        relative = urllib.parse.unquote(urllib.parse.urlparse(url_path).path).lstrip("/")
        path = os.path.join(self.site_dir, relative)
        if os.path.isdir(path):
            path = os.path.join(path, "index.html")
        return path

    def note_served(self, url_path: str) -> None:
        """A test server sent ``url_path`` of the site."""
        reads = self.current
        if reads is not None:
            reads.add_file(self.site_file(url_path))

    def note_url(self, url: str) -> None:
        """A browser context requested ``url``."""
        reads = self.current
        if reads is None or url.startswith(("data:", "blob:", "about:")):
            return
        parsed = urllib.parse.urlparse(url)
        if parsed.scheme == "file":
            reads.add_file(urllib.parse.unquote(parsed.path))
        elif parsed.scheme in ("http", "https") and parsed.hostname == "127.0.0.1":
            reads.add_file(self.site_file(parsed.path))
        else:
            reads.add_unaccountable(url)

    def note_open(self, file) -> None:
        reads = self.current  # once: the test may end (current = None) in another thread meanwhile
        if reads is None or not isinstance(file, (str, bytes, os.PathLike)):
            return
        path = os.path.realpath(os.fsdecode(file))
        if path.startswith(ROOT + os.sep) and os.sep + ".venv" + os.sep not in path:
            reads.add_file(path)

    def watch_context(self, context) -> None:
        context.on("request", lambda request: self.note_url(request.url))


RECORDER: Recorder | None = None  # set while the plugin is active (tests/browser/conftest.py reports to it)


def static_key(extra: dict) -> str:
    """The part of every key that is not a file a test read: site/'s listing (a page added or removed reruns the
    crawl), Python's version, the environment the tests read, the browser versions (in ``extra``)."""
    listing = []
    site = RECORDER.site_dir if RECORDER else os.path.join(ROOT, "site")
    for folder, _, files in os.walk(site):
        listing.extend(os.path.relpath(os.path.join(folder, name), site) for name in files)
    payload = {"format": FORMAT, "site_files": sorted(listing), "python": sys.version,
               "env": {name: os.environ.get(name) for name in ENV_READ}, **extra}
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()


def load_records(cache_dir: str = CACHE_DIR) -> dict:
    """Every worker's records merged: the latest record of each test wins."""
    merged: dict = {}
    if not os.path.isdir(cache_dir):
        return merged
    for name in sorted(os.listdir(cache_dir)):
        if not name.endswith(".json"):
            continue
        try:
            with _original_open(os.path.join(cache_dir, name), encoding="utf-8") as handle:
                records = json.load(handle)
        except (OSError, ValueError):
            continue
        for nodeid, record in records.items():
            if nodeid not in merged or record["at"] > merged[nodeid]["at"]:
                merged[nodeid] = record
    return merged


def still_valid(record: dict | None, key: str) -> bool:
    """Whether ``record`` is a pass under the same static key whose every file still has the recorded bytes.

    >>> import tempfile
    >>> folder = tempfile.mkdtemp(); page = os.path.join(folder, "index.html")
    >>> _ = open(page, "w").write("<p>1</p>")
    >>> record = {"outcome": "passed", "key": "k", "files": {page: file_sha256(page)}}
    >>> still_valid(record, "k"), still_valid(record, "other key")
    (True, False)
    >>> _ = open(page, "w").write("<p>2</p>")  # the page's bytes changed: the test reruns
    >>> still_valid(record, "k")
    False
    """
    if not record or record.get("outcome") != "passed" or record.get("key") != key:
        return False
    return all(file_sha256(path) == sha for path, sha in record["files"].items())


def _is_browser_test(item) -> bool:
    return item.get_closest_marker("browser") is not None


class BrowserCache:
    def __init__(self, config):
        self.config = config
        self.reuse = reuse_allowed()
        self.records = load_records()
        self.new_records: dict = {}
        self.worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.key = None
        self.deselected: set[str] = set()
        self.known: set[str] | None = None

    def current_key(self) -> str:
        if self.key is None:  # once per process: the versions and site/'s listing do not change during a run
            self.key = static_key({"versions": installed_versions()})
        return self.key

    def pytest_deselected(self, items):
        self.deselected.update(item.nodeid for item in items)

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session):
        """Forget the records of tests this collection does not know (renamed, removed, or recorded under another
        node id, such as without xdist's group suffix): each holds the files of a run long past, and one whose
        files changed would keep every test of its module from being reused (:meth:`module_files`)."""
        known = {item.nodeid for item in session.items} | self.deselected
        self.records = {nodeid: record for nodeid, record in self.records.items() if nodeid in known}
        self.known = known

    def module_files(self, nodeid: str) -> dict | None:
        """The files every recorded test of ``nodeid``'s module read: a module- or session-scoped fixture's reads
        land in the test that set it up, yet every test of the module depends on them."""
        module = nodeid.split("::")[0]
        files: dict = {}
        for other, record in self.records.items():
            if other.split("::")[0] == module:
                files.update(record.get("files", {}))
        return files

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_protocol(self, item, nextitem):
        if not self.reuse or not _is_browser_test(item):
            return None
        record = self.records.get(item.nodeid)
        if still_valid(record, self.current_key()) and \
                still_valid({**record, "files": self.module_files(item.nodeid)}, self.current_key()):
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
    def pytest_runtest_setup(self, item):
        if _is_browser_test(item) and RECORDER is not None:
            RECORDER.current = Reads()
            item.stash[READS_KEY] = RECORDER.current
            item.stash[FAILED_KEY] = False
        yield

    @pytest.hookimpl(hookwrapper=True)
    def pytest_runtest_makereport(self, item, call):
        outcome = yield
        report = outcome.get_result()
        reads = item.stash.get(READS_KEY, None)
        if reads is None:
            return
        failed = item.stash[FAILED_KEY] or report.outcome != "passed"
        item.stash[FAILED_KEY] = failed
        if call.when != "teardown":
            return
        RECORDER.current = None
        roots = (ROOT + os.sep, os.path.realpath(str(item.config.rootpath)) + os.sep)
        borrowed = modules_borrowed_from(getattr(item, "module", None))
        for module in list(sys.modules.values()):  # the test file, its conftests and helpers, calc, hooks
            path = getattr(module, "__file__", None)
            if path and os.path.realpath(path).startswith(roots) and os.sep + ".venv" + os.sep not in path:
                if is_test_module(path) and getattr(module, "__name__", "") not in borrowed:
                    continue  # another test file, imported only to be collected: an edit to it changes nothing here
                reads.add_file(path)
        reads.add_file(str(item.path))
        for folder, _, files in os.walk(os.path.join(ROOT, "calc")):  # its data files were read at import time
            reads.files.update(os.path.join(folder, name) for name in files if not name.endswith(".pyc"))
        passed = not failed and not reads.unaccountable
        self.new_records[item.nodeid] = {
            "outcome": "passed" if passed else "not reusable", "key": self.current_key(), "at": time.time(),
            "files": {path: file_sha256(path) for path in sorted(reads.files)},
        }

    def pytest_sessionfinish(self, session):
        if not self.new_records:
            return
        os.makedirs(CACHE_DIR, exist_ok=True)
        mine = os.path.join(CACHE_DIR, f"{self.worker}.json")
        kept = {}
        try:
            with _original_open(mine, encoding="utf-8") as handle:
                kept = json.load(handle)
        except (OSError, ValueError):
            pass
        if self.known is not None:  # what this collection does not know is stale (pytest_collection_finish)
            kept = {nodeid: record for nodeid, record in kept.items() if nodeid in self.known}
        kept.update(self.new_records)
        with _original_open(mine + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(kept, handle, sort_keys=True)
        os.replace(mine + ".tmp", mine)


def is_test_module(path: str) -> bool:
    """Whether ``path`` is a test file (``test_*.py``), which pytest imports in every process to collect it.

    >>> is_test_module("/repo/tests/browser/test_crawl.py"), is_test_module("/repo/tests/browser/helpers.py")
    (True, False)
    """
    return os.path.basename(path).startswith("test_") and path.endswith(".py")


def modules_borrowed_from(module) -> set[str]:
    """The modules whose functions or classes ``module``'s globals hold (those a test file imports from, such as
    another test file's helper), and the module itself.

    >>> import tests.browser_cache as me
    >>> sorted(n for n in modules_borrowed_from(me) if n.startswith("tests"))
    ['tests.browser_cache']
    """
    if module is None:
        return set()
    names = {module.__name__}
    for value in vars(module).values():
        owner = getattr(value, "__module__", None)
        if isinstance(owner, str) and callable(value):
            names.add(owner)
    return names


FAILED_KEY = pytest.StashKey[bool]()
READS_KEY = pytest.StashKey[Reads]()


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


def _recording_open(file, *args, **kwargs):
    if RECORDER is not None:
        RECORDER.note_open(file)
    return _original_open(file, *args, **kwargs)


def pytest_configure(config):
    global RECORDER
    from tests.browser.helpers import SITE

    RECORDER = Recorder(SITE)
    builtins.open = _recording_open
    io.open = _recording_open
    config.pluginmanager.register(BrowserCache(config), "calc-browser-cache")


def pytest_unconfigure(config):
    builtins.open = _original_open
    io.open = _original_open


def pytest_terminal_summary(terminalreporter):
    cached = [report for report in terminalreporter.stats.get("passed", [])
              if report.when == "call" and ("cached_pass", True) in [tuple(p) for p in report.user_properties]]
    if cached or os.environ.get("FRESH") or os.environ.get("CI"):
        why = "CI never reuses" if os.environ.get("CI") else "FRESH=1 reruns every test" if os.environ.get("FRESH") \
            else "their inputs are unchanged; FRESH=1 (make test-fresh) reruns them"
        terminalreporter.write_line(f"browser result cache: {len(cached)} cached passes ({why})")
