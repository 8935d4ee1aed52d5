"""Headless Chromium against the built site, served on 127.0.0.1 where the build says it lives.

Every request that is not to 127.0.0.1 is aborted and counted; a test fails if any
was made.

Under pytest-xdist every worker serves the site on a port of its own (the first on the build's
site_url port, the others on a free one: only the pages' canonical links name the port), so the
browser tests are spread over the workers file by file instead of all running on one. The browser is Debian's
chromium-headless-shell (CHROMIUM_PATH, else :func:`chromium_path`), or Playwright's own on a GitHub runner. A missing
browser fails: it is never a skip.
"""

from __future__ import annotations

import functools
import http.server
import io
import json
import os
import threading
import sys
import time
import urllib.parse
import zipfile

import pytest

pytest.register_assert_rewrite("tests.browser.helpers")  # its asserts explain themselves like a test's

from tests import timeline  # noqa: E402
from tests.browser.helpers import SITE  # noqa: E402 (after the rewrite is registered)

#: The test-only widgets (a call that runs past its budget): served inside the calc zip only to tests that take
#: the ``with_test_widgets`` fixture, never built into the site.
TEST_WIDGETS = {"calc/widgets/diagnostics.py": os.path.join(os.path.dirname(__file__), "diagnostics_widget.py")}
collect_ignore = ["diagnostics_widget.py"]  # importing it would register its widget in the test process

#: Where the tests look for a browser when CHROMIUM_PATH is not set, first found first. The headless shell is the
#: same Blink and V8 as the desktop browser without its windowing and UI layers (what Playwright itself runs for
#: ``headless=True``): measured on this site, a page load costs 1.5-1.8 CPU s in it against 3.1-3.8 in chromium,
#: a load with a Pyodide boot 3.7-4.4 against 5.4-5.8. `make bench` measures readers' figures in chromium.
CHROMIUM_CANDIDATES = ("/usr/bin/chromium-headless-shell", "/usr/bin/chromium")


def chromium_path() -> str:
    """The browser the tests drive: CHROMIUM_PATH, else the first of :data:`CHROMIUM_CANDIDATES` on disk (the
    first, if none is: the error then names it)."""
    if os.environ.get("CHROMIUM_PATH"):
        return os.environ["CHROMIUM_PATH"]
    return next((path for path in CHROMIUM_CANDIDATES if os.path.exists(path)), CHROMIUM_CANDIDATES[0])


CHROMIUM_FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync", "--disable-default-apps", "--disable-dev-shm-usage",
]


def built_site_url() -> str:
    manifest = os.path.join(SITE, "assets", "runtime", "manifest.json")
    if not os.path.exists(manifest):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    with open(manifest, encoding="utf-8") as handle:
        return json.load(handle)["site_url"]


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map = {**http.server.SimpleHTTPRequestHandler.extensions_map,
                      ".mjs": "text/javascript", ".wasm": "application/wasm", ".js": "text/javascript"}

    def __init__(self, *args, site_server=None, **kwargs):
        self.site_server = site_server
        super().__init__(*args, **kwargs)

    def log_message(self, *args):
        pass

    def do_GET(self):
        zip_bytes = self.site_server.calc_zip_with_test_widgets(self.path) if self.site_server else None
        sitemap = self.site_server.sitemap_on_this_port(self.path) if self.site_server else None
        if zip_bytes is None and sitemap is None:
            return super().do_GET()
        self.send_response(200)
        self.send_header("Content-Type", "application/zip" if sitemap is None else "application/xml")
        body = zip_bytes if sitemap is None else sitemap
        self.send_header("Content-Length", str(len(body)))
        self.send_header("Cache-Control", "no-store")
        self.end_headers()
        self.wfile.write(body)


class QuietServer(http.server.ThreadingHTTPServer):
    """The test server, silent when the browser drops a connection mid-response (the worker aborts a fetch it
    no longer needs, a page closes while a file streams): that is the client's choice, not a server error."""

    allow_reuse_address = True

    def handle_error(self, request, client_address):
        if isinstance(sys.exc_info()[1], (BrokenPipeError, ConnectionResetError)):
            return
        super().handle_error(request, client_address)


class SiteServer:
    """A static server for site/ that can be stopped and started again (offline tests)."""

    def __init__(self, url: str, port: int | None = None):
        """``port`` 0 serves on a free port (chosen at the first start, kept by later ones)."""
        parsed = urllib.parse.urlparse(url)
        self.host, self.port, self.base_path = parsed.hostname, parsed.port or 80, parsed.path or "/"
        if port is not None:
            self.port = port
        self.url = url
        self.httpd = None
        self.test_widgets = False  # set by the with_test_widgets fixture

    def calc_zip_with_test_widgets(self, request_path: str) -> bytes | None:
        """The built calc zip with :data:`TEST_WIDGETS` added, for a request of it while a test asks for them."""
        path = urllib.parse.urlparse(request_path).path
        if not self.test_widgets or not (path.startswith(self.base_path.rstrip("/") + "/assets/runtime/calc-")
                                         and path.endswith(".zip")):
            return None
        built = os.path.join(SITE, os.path.relpath(path, self.base_path).lstrip("./"))
        if not os.path.exists(built):
            return None
        buffer = io.BytesIO()
        with zipfile.ZipFile(built) as original, zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as patched:
            for info in original.infolist():
                patched.writestr(info, original.read(info))
            for arcname, source in TEST_WIDGETS.items():
                with open(source, "rb") as handle:
                    patched.writestr(zipfile.ZipInfo(arcname, (2020, 1, 1, 0, 0, 0)), handle.read(), zipfile.ZIP_DEFLATED)
        return buffer.getvalue()

    def sitemap_on_this_port(self, request_path: str) -> bytes | None:
        """sitemap.xml with its URLs on this server's port, when it serves on another port than the build's
        site_url (a second xdist worker): Material's instant navigation follows only the links its sitemap
        lists, so with the build's port in it every click would load a whole new page."""
        built = built_site_url()
        if urllib.parse.urlparse(request_path).path != self.base_path.rstrip("/") + "/sitemap.xml" or \
                urllib.parse.urlparse(built).port == self.port:
            return None
        with open(os.path.join(SITE, "sitemap.xml"), "rb") as handle:
            text = handle.read()
        here = urllib.parse.urlunparse(("http", f"{self.host}:{self.port}", self.base_path, "", "", ""))
        return text.replace(built.encode(), here.encode())

    def start(self, wait_s: float = 60):
        handler = functools.partial(QuietHandler, directory=SITE, site_server=self)
        http.server.ThreadingHTTPServer.allow_reuse_address = True
        deadline = time.monotonic() + wait_s
        while True:  # the port is fixed by the build's site_url; wait out another test run that holds it
            try:
                self.httpd = QuietServer((self.host, self.port), handler)
                if self.port == 0:  # a free port: the same one from now on (a restart keeps the origin)
                    self.port = self.httpd.server_address[1]
                    self.url = urllib.parse.urlunparse(("http", f"{self.host}:{self.port}", self.base_path, "", "", ""))
                break
            except OSError as exc:
                if time.monotonic() > deadline:
                    pytest.fail(f"cannot serve the site on {self.host}:{self.port} (from site_url): {exc}")
                time.sleep(1)
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def stop(self):
        if self.httpd:
            self.httpd.shutdown()
            self.httpd.server_close()
            self.httpd = None


@pytest.fixture(scope="session")
def site_server():
    url = built_site_url()
    if urllib.parse.urlparse(url).path not in ("", "/"):
        pytest.fail(f"browser tests serve the site at the root; site_url is {url}")
    worker = os.environ.get("PYTEST_XDIST_WORKER", "gw0")
    server = SiteServer(url, port=None if worker == "gw0" else 0)
    server.start()
    yield server
    server.stop()


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node id suffixes
def pytest_collection_modifyitems(config, items):
    """One xdist group per browser test file (each worker has its own server): ``--dist loadgroup`` then
    hands the files to whichever worker is free, instead of the whole ``browser`` group to one."""
    here = os.path.dirname(os.path.abspath(__file__))
    for item in items:
        if os.path.dirname(str(item.path)) == here and any(
                (mark.args or [mark.kwargs.get("name")])[0] == "browser" for mark in item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(f"browser-{item.path.stem}"))


def _count_pyodide_boot(worker) -> None:
    if urllib.parse.urlparse(worker.url).path.endswith("/assets/runtime/worker.mjs"):  # the site's Python worker (not Material's search)
        timeline.COUNTS["pyodide_boots"] += 1


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    executable = chromium_path()
    if not os.path.exists(executable):
        pytest.fail(f"no Chromium at {executable}: install Debian's chromium-headless-shell (make test does it as "
                    f"root) or set CHROMIUM_PATH")
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=executable, headless=True, args=CHROMIUM_FLAGS)
        new_context = browser.new_context

        def new_watched_context(*args, **kwargs):
            context = new_context(*args, **kwargs)
            timeline.COUNTS["contexts"] += 1  # and each context and Pyodide boot into the timeline's counts
            context.on("page", lambda page: page.on("worker", _count_pyodide_boot))
            return context

        browser.new_context = new_watched_context
        yield browser
        browser.close()


@functools.lru_cache(maxsize=1)
def _search_index_without_documents() -> bytes:
    """The built search index with its settings and no documents: what Material's search worker gets in a test
    that does not search (:class:`Visit`)."""
    with open(os.path.join(SITE, "search", "search_index.json"), encoding="utf-8") as handle:
        settings = json.load(handle)["config"]
    return json.dumps({"config": settings, "docs": []}).encode()


class Visit:
    """One browser context: its page, the requests it tried to send off the machine, and console errors."""

    def __init__(self, browser, server, color_scheme="light", viewport=None, service_workers="block",
                 search: bool = False):
        """``service_workers="allow"`` lets the site's service worker run, as readers have it (tests marked
        ``service_worker`` get that from the fixtures below). Blocked otherwise: once Python is ready and the page
        idle, its precache downloads the whole site (109 files, 30 MB) through this context's route, which cost
        1.4 CPU s and 3.6 s a test on widget pages (tests/browser timed both ways, 2026-12-02) and shows nothing
        on the page (``data-offline`` only).

        ``search=False`` (tests not marked ``search``, with the service worker blocked): Material's search worker
        gets the index with no documents. It fetches and indexes the whole site's text (430 kB) on every page
        load, about 0.3 CPU s of the renderer's each time (measured per process, 2026-12-02), and only a test
        that searches looks at it."""
        self.server = server
        self.context = browser.new_context(color_scheme=color_scheme, viewport=viewport or {"width": 1280, "height": 900},
                                           service_workers=service_workers)
        self.external_requests: list[str] = []
        self.console_errors: list[str] = []
        self.context.route("**/*", self._route)
        if not search and service_workers == "block":
            self.context.route("**/search/search_index.json", lambda route: route.fulfill(
                status=200, content_type="application/json", body=_search_index_without_documents()))
        self.page = self.context.new_page()
        self.page.set_default_timeout(60_000)  # generous: a loaded 2-core machine is slow, and slowness is the bench's to judge
        self.page.on("console", lambda m: m.type == "error" and self.console_errors.append(m.text))
        self.page.on("pageerror", lambda e: self.console_errors.append(str(e)))

    def _route(self, route):
        host = urllib.parse.urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:", "file:")) or host == "127.0.0.1":
            route.continue_()
        else:
            self.external_requests.append(route.request.url)
            route.abort()

    def url(self, path: str) -> str:
        return urllib.parse.urljoin(self.server.url, path)

    def close(self):
        self.context.close()


@pytest.fixture
def with_test_widgets(site_server):
    """Serve the test-only widgets (``diagnostics.busy``) inside the calc zip for this test only."""
    site_server.test_widgets = True
    yield
    site_server.test_widgets = False


def _service_workers(request) -> str:
    return "allow" if request.node.get_closest_marker("service_worker") else "block"


def _searches(request) -> bool:
    return request.node.get_closest_marker("search") is not None


@pytest.fixture
def visit(browser, site_server, request):
    session = Visit(browser, site_server, service_workers=_service_workers(request), search=_searches(request))
    yield session
    session.close()
    assert session.external_requests == [], f"requests left 127.0.0.1: {session.external_requests}"


@pytest.fixture(scope="module")
def module_visit(browser, site_server, request):
    """One browser context shared by the tests of a module, for tests that drive one page and leave it as the
    next expects: every fresh context costs about 2 CPU s before its page, and its page's Python boot about 2 s
    more, which on this 2-core machine is most of the browser tier's time. The module's tests run in file order
    on one xdist worker (one group per file, above); a test that needs a page no other test touched takes
    ``visit``. The module's last test fails in teardown if any request left 127.0.0.1."""
    session = Visit(browser, site_server, service_workers=_service_workers(request), search=_searches(request))
    yield session
    session.close()
    assert session.external_requests == [], f"requests left 127.0.0.1: {session.external_requests}"
