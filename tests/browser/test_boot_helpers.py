"""The page's head starts two boot helpers beside the Python worker (overrides/main.html): one compiles the wasm,
one inflates the snapshot and reads calc's zip, each sending its result to the Python worker. The boot uses
their work (nothing fetched twice, the snapshot restored), and boots the same way, doing that work itself,
when the helpers cannot start."""

from __future__ import annotations

import urllib.parse

import pytest

from tests.browser.helpers import recompute, wait_until_live, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
RESTORED = "restored from the site's snapshot"
HELPER = "boot-inflate-worker.mjs"
# The files a helper fetches in place of the Python worker: each must leave once.
HELPED = ("pyodide.asm.wasm", ".snapshot", ".zip")


def _boot(visit) -> dict:
    page = visit.page
    workers, requests = [], []
    page.on("worker", lambda worker: workers.append(urllib.parse.urlparse(worker.url).path.rsplit("/", 1)[-1]))
    visit.context.on("request", lambda request: requests.append(urllib.parse.urlparse(request.url).path))
    page.goto(visit.url(PAGE))
    wait_until_ready(page)
    wait_until_live(page, WIDGET)
    # A model the page does not show at first: its answer comes from the worker, not the build.
    recompute(page, WIDGET, "kv_bytes_per_token", model="qwen2.5-72b")
    boot = page.evaluate("() => ({detail: calcRuntime.detail, boots: calcRuntime.boots,"
                         " fetched: (calcRuntime.bootFetched || []).map((entry) => entry.name)})")
    boot["workers"] = workers
    boot["requests"] = {suffix: sum(1 for path in requests if path.endswith(suffix)
                                    and (suffix != ".zip" or "/assets/runtime/calc-" in path)) for suffix in HELPED}
    return boot


def test_the_helpers_fetch_compile_and_inflate_for_the_python_worker(visit):
    boot = _boot(visit)
    assert boot["workers"].count(HELPER) == 2 and boot["workers"].count("worker.mjs") == 1, boot["workers"]
    assert RESTORED in boot["detail"] and boot["boots"] == 1
    assert boot["requests"] == {suffix: 1 for suffix in HELPED}
    # The helpers' downloads are reported with the worker's own (the bench's timeline).
    assert "pyodide.asm.wasm" in boot["fetched"] and any(name.endswith(".snapshot") for name in boot["fetched"])


def test_without_its_helpers_the_worker_does_their_work_itself(visit):
    visit.context.route(f"**/{HELPER}", lambda route: route.fulfill(status=404, body="gone"))
    boot = _boot(visit)
    assert "worker.mjs" in boot["workers"]
    assert RESTORED in boot["detail"] and boot["boots"] == 1
    assert boot["requests"] == {suffix: 1 for suffix in HELPED}
