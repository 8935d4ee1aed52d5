"""The worker restores the build's Pyodide snapshot instead of starting CPython, and boots the ordinary
way, with the same answers, when the snapshot is missing, damaged or of the wrong size."""

from __future__ import annotations

import gzip
import json
import os

import pytest

from tests.browser.helpers import SITE, recompute, wait_until_live, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
RESTORED = "restored from the site's snapshot"


def _manifest() -> dict:
    with open(os.path.join(SITE, "assets", "runtime", "manifest.json"), encoding="utf-8") as handle:
        return json.load(handle)


def _boot(visit) -> dict:
    page = visit.page
    page.goto(visit.url(PAGE))
    wait_until_ready(page)
    wait_until_live(page, WIDGET)
    # A model the page does not show at first: its answer comes from the worker, not the build.
    recompute(page, WIDGET, "kv_bytes_per_token", model="qwen2.5-72b")
    recompute(page, WIDGET, "kv_bytes_per_token", model="custom", layers="61", kv_heads="4", head_dim="96")
    return page.evaluate("() => ({detail: calcRuntime.detail, phases: calcRuntime.bootPhases})")


def test_the_worker_restores_the_snapshot_the_manifest_names(visit):
    assert _manifest()["pyodide_snapshot"], "the build made no Pyodide snapshot"
    boot = _boot(visit)
    assert RESTORED in boot["detail"]
    assert boot["phases"]["snapshot_fetched"] <= boot["phases"]["pyodide"] <= boot["phases"]["runtime_imported"]


def test_a_missing_snapshot_means_an_ordinary_boot(visit):
    visit.context.route("**/*.snapshot", lambda route: route.fulfill(status=404, body="gone"))
    boot = _boot(visit)
    assert RESTORED not in boot["detail"] and "ready in" in boot["detail"]
    assert "snapshot_fetched" not in boot["phases"]


def _shipped_snapshot_half() -> bytes:
    with open(os.path.join(SITE, "assets", "runtime", _manifest()["pyodide_snapshot"]), "rb") as handle:
        shipped = handle.read()
    return shipped[: len(shipped) // 2]


# Half a download fails gzip's own check; a whole gzip file of the wrong size fails the worker's.
@pytest.mark.parametrize("damage", ["half a download", "the wrong size"])
def test_a_damaged_snapshot_means_an_ordinary_boot(visit, damage):
    body = _shipped_snapshot_half() if damage == "half a download" else gzip.compress(bytes(65536 * 4))
    visit.context.route("**/*.snapshot", lambda route: route.fulfill(status=200, body=body))
    boot = _boot(visit)
    assert RESTORED not in boot["detail"] and "ready in" in boot["detail"]
