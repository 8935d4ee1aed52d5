"""A first visit with the service worker on: nothing downloaded twice, no precache before Python is ready,
nothing cached that the site never loads, and the site readable offline afterwards.

The site is served by a recording server (on the built site's port, in place of the session's server) that
notes every response it sends: a file "downloaded" is a 200 from the server; what the browser takes from its
own HTTP cache or from Cache Storage never reaches it.
"""

from __future__ import annotations

import functools
import json
import os
import threading
import time
import urllib.parse

import pytest

from tests.browser.conftest import QuietHandler, QuietServer
from tests.browser.folds import open_folds
from tests.browser.helpers import SITE, recompute, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

FIRST_PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
NEVER_VISITED = "lesson/05-paged-attention/"
NEVER_VISITED_WIDGET = '[data-widget="paged_attention.allocation_shares"]'
OFFLINE_TIMEOUT_MS = 120_000  # the precache of ~30 MB on a loaded 2-core machine


class RecordingServer:
    """A built site (``directory``, this checkout's by default) on ``url``'s port, recording ``(time_s, path,
    status)`` for every response it sends."""

    def __init__(self, url: str, directory: str = SITE):
        parsed = urllib.parse.urlparse(url)
        self.url = url
        self.directory = directory
        self.address = (parsed.hostname, parsed.port or 80)
        self.responses: list[tuple[float, str, int]] = []
        self.httpd = None

    def start(self, wait_s: float = 60) -> None:
        responses = self.responses

        class Recording(QuietHandler):
            def send_response(self, code, message=None):
                responses.append((time.time(), urllib.parse.urlparse(self.path).path, int(code)))
                super().send_response(code, message)

        deadline = time.monotonic() + wait_s
        while True:
            try:
                self.httpd = QuietServer(self.address, functools.partial(Recording, directory=self.directory))
                break
            except OSError:
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.5)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self) -> None:
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None

    def downloads(self) -> dict[str, int]:
        """How many times each path was sent in full (status 200)."""
        counts: dict[str, int] = {}
        for _, path, status in self.responses:
            if status == 200:
                counts[path] = counts.get(path, 0) + 1
        return counts

    def first_sent_s(self, path: str) -> float | None:
        return next((at for at, sent, _ in self.responses if sent == path), None)


def wait_until_offline_ready(page) -> dict:
    """Wait until calc-offline.js reports the service worker's precache complete; return its report."""
    page.wait_for_function("() => window.calcOffline && ['ready', 'unavailable'].includes(calcOffline.state)",
                           timeout=OFFLINE_TIMEOUT_MS)
    offline = page.evaluate("() => window.calcOffline")
    assert offline["state"] == "ready", offline
    return offline


class ReaderVisit:
    """A fresh browser context as a reader's first visit has it: service workers on and the HTTP cache on.

    The session's ``visit`` routes every request to abort those leaving 127.0.0.1, and Playwright turns
    the HTTP cache off for a context with routes, so this one only watches: a request to another host
    fails the test all the same.
    """

    def __init__(self, browser, server):
        self.server = server
        self.context = browser.new_context(service_workers="allow", viewport={"width": 1280, "height": 900})
        self.external_requests: list[str] = []
        self.console_errors: list[str] = []
        self.context.on("request", self._watch)
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))

    def _watch(self, request):
        if not request.url.startswith(("data:", "blob:")) and urllib.parse.urlparse(request.url).hostname != "127.0.0.1":
            self.external_requests.append(request.url)

    def url(self, path: str) -> str:
        return urllib.parse.urljoin(self.server.url, path)


@pytest.fixture
def reader(browser, site_server):
    session = ReaderVisit(browser, site_server)
    yield session
    session.context.close()
    assert session.external_requests == [], f"requests left 127.0.0.1: {session.external_requests}"


@pytest.fixture
def recording_server(site_server):
    """Stands in for the session's server on the same port for one test, then gives it back."""
    site_server.stop()
    server = RecordingServer(site_server.url)
    server.start()
    try:
        yield server
    finally:
        server.stop()
        site_server.start()


def precache_list() -> dict:
    with open(os.path.join(SITE, "assets", "runtime", "precache.json"), encoding="utf-8") as handle:
        return json.load(handle)


def test_a_first_visit_downloads_each_file_once_and_precaches_only_after_python_is_ready(recording_server, reader):
    page = reader.page
    page.goto(reader.url(FIRST_PAGE))
    wait_until_ready(page)
    ready_s = page.evaluate("() => (performance.timeOrigin + calcRuntime.readyAt) / 1000")
    offline = wait_until_offline_ready(page)

    downloads = recording_server.downloads()
    assert {path: n for path, n in downloads.items() if n > 1} == {}
    # The precache started after Python was ready: the service worker's script and its list came later.
    for path in ("/sw.js", "/assets/runtime/precache.json"):
        assert recording_server.first_sent_s(path) is not None, f"{path} was never requested"
        assert recording_server.first_sent_s(path) >= ready_s, f"{path} requested before Python was ready"
    # What the boot downloaded (Pyodide, the snapshot, the calc zip) came from the worker, not the network.
    boot_files = [path for path in downloads if path.startswith(("/assets/vendor/pyodide/", "/assets/runtime/calc-"))
                  and not path.endswith(".js")]
    assert len(boot_files) >= 4, downloads
    assert offline["report"]["handed_over"] >= len([p for p in boot_files if p.endswith((".wasm", ".zip", ".snapshot"))])
    # Every listed file is cached, and every one was sent once at most.
    listing = precache_list()
    assert offline["report"]["files"] == len(listing["urls"])
    cached = page.evaluate("async (name) => (await (await caches.open(name)).keys()).length", offline["report"]["cache"])
    assert cached >= len(listing["urls"])
    assert set(downloads) <= {"/" + url for url in listing["urls"]} | {"/sw.js", "/assets/runtime/precache.json"}
    # Nothing the site never loads was fetched: other languages' search files, source maps, font fallbacks.
    assert [p for p in downloads if "/lunr/" in p or p.endswith((".map", ".ttf", ".woff"))] == []

    # The next visit boots from the service worker's cache: the runtime's files are not sent again.
    sent_before = len(recording_server.responses)
    page.reload()
    wait_until_ready(page)
    report = wait_until_offline_ready(page)["report"]
    assert report["already_complete"]
    sent_again = [path for _, path, status in recording_server.responses[sent_before:] if status == 200]
    assert [p for p in sent_again if p.startswith("/assets/vendor/") or p.endswith((".snapshot", ".zip"))] == []
    assert reader.console_errors == []


def test_the_precache_leaves_out_what_the_site_never_loads():
    urls = precache_list()["urls"]
    assert not [u for u in urls if "/lunr/" in u or u.endswith((".map", ".gz", ".ttf", ".woff"))]
    # ...and keeps what a page does load: the search worker, every page, the runtime and its woff2 fonts.
    assert any(u.startswith("assets/javascripts/workers/search.") for u in urls)
    assert "lesson/05-paged-attention/" in urls and "" in urls and "sitemap.xml" in urls  # instant navigation reads it
    assert any(u.endswith(".woff2") for u in urls)
    assert any(u.endswith(".snapshot") for u in urls) and "assets/vendor/pyodide/pyodide.asm.wasm" in urls


def test_after_the_first_visit_a_page_never_opened_works_offline(recording_server, reader):
    page = reader.page
    page.goto(reader.url(FIRST_PAGE))
    wait_until_ready(page)
    wait_until_offline_ready(page)
    recording_server.stop()
    page.goto(reader.url(NEVER_VISITED))  # a full load, from the service worker's cache alone
    wait_until_ready(page)
    open_folds(page, NEVER_VISITED_WIDGET)  # the step keeps this calculator in a fold
    recompute(page, NEVER_VISITED_WIDGET, "paged_share", block_size="256")
    page.goto(reader.url(FIRST_PAGE))
    wait_until_ready(page)
    recompute(page, WIDGET, "kv_bytes_per_token", model="mixtral-8x7b")
    # Offline, the page still asks for the precache: the service worker answers from the cache it has.
    report = wait_until_offline_ready(page)["report"]
    assert report["already_complete"] and report["cache"] == f"site-{precache_list()['version']}"
    assert reader.console_errors == []
