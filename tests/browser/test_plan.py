""""Plan a deployment" live in headless Chromium, offline: reached from the home page, controls recompute both
answers, the inputs go to the address, and the permalink's JSON is what ``python -m calc plan --json`` prints."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.browser.conftest import Visit
from tests.browser.helpers import ROOT, choose, output_text, wait_until_live, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "plan/"
FIRST = '[data-widget="plan.first_answer"]'
CONFIRMED = '[data-widget="plan.confirmed"]'
JSON = '[data-widget="plan.plan_json"]'
PLAN_TIMEOUT_MS = 240_000  # the simulator's answer in Pyodide on a loaded 2-core machine

_OUTPUT_IS = """([widget, key, want]) => {
  const el = document.querySelector(`${widget} [data-output="${key}"]`);
  return el && el.textContent === want && !document.querySelector(`${widget}[aria-busy="true"]`);
}"""


# Counts, from the first script on, the page's requests to its Python workers (op, fn), the Python workers it
# starts (worker.mjs: the page's own, then the planner's pool) and those it terminates.
COUNT_WORKERS = """
(() => {
  window.__calls = []; window.__started = 0; window.__terminated = 0; window.__restored = [];
  const W = window.Worker, proto = W.prototype, post = proto.postMessage, terminate = proto.terminate;
  window.Worker = function (url, options) {
    const worker = new W(url, options);
    if (/\\/worker\\.mjs/.test(String(url))) {
      window.__started += 1;
      worker.__python = true;
      worker.addEventListener("message", (event) => {  // each Python worker's ready status: restored or booted?
        try { const m = JSON.parse(event.data); if (m.type === "status" && m.state === "ready") window.__restored.push(m.snapshot); }
        catch (e) { /* an answer */ }
      });
    }
    return worker;
  };
  window.Worker.prototype = proto;
  proto.postMessage = function (data, ...rest) {
    if (typeof data === "string") { try { const m = JSON.parse(data); window.__calls.push([m.op, m.fn || ""]); }
                                    catch (e) { /* not a request */ } }
    return post.call(this, data, ...rest);
  };
  proto.terminate = function () { if (this.__python) window.__terminated += 1; return terminate.call(this); };
})();
"""


def _counts(page) -> dict:
    return page.evaluate("() => ({calls: window.__calls.slice(), started: window.__started,"
                         " terminated: window.__terminated, restored: window.__restored.slice(),"
                         " cores: navigator.hardwareConcurrency})")


def _plan_calls(counts: dict, fn: str | None = None) -> list:
    return [c for c in counts["calls"] if c[1].startswith("plan.") and (fn is None or c[1] == fn)]


def _cli_stdout(*flags: str) -> str:
    done = subprocess.run([sys.executable, "-m", "calc", "plan", *flags, "--json"], cwd=ROOT, capture_output=True,
                          text=True, check=True, env={**os.environ, "PYTHONPATH": ROOT})
    return done.stdout


def _wait_for_output(page, widget: str, key: str, want: str) -> None:
    page.wait_for_function(_OUTPUT_IS, arg=[widget, key, want], timeout=PLAN_TIMEOUT_MS)


def _no_overflow(page) -> bool:
    return page.evaluate("() => document.documentElement.scrollWidth <= document.documentElement.clientWidth + 1")


def _drive(page) -> float:
    """Choose the batch preset in the first widget: both answers recompute; return the seconds to the confirmed one."""
    started = time.perf_counter()
    choose(page, FIRST, "preset", "batch")
    _wait_for_output(page, FIRST, "command", "python -m calc plan --preset batch --screen-only --json")
    first_s = time.perf_counter() - started
    _wait_for_output(page, CONFIRMED, "command", "python -m calc plan --preset batch --json")
    confirmed_s = time.perf_counter() - started
    print(f"\nplan page recompute (batch preset): first answer {first_s:.1f} s, confirmed {confirmed_s:.1f} s")
    assert first_s < confirmed_s
    assert page.locator(f"{CONFIRMED}[data-state='live']").count() == 1
    assert "preset=batch" in page.url  # the address is the permalink
    assert page.locator(f'{CONFIRMED} [data-table="words"] tbody tr').first.inner_text().startswith("Serve ")
    assert page.locator(f'{CONFIRMED} [data-table="top"] tbody tr').first.inner_text().startswith("plan")
    return confirmed_s


def test_reached_from_home_live_offline_and_the_controls_recompute_both_answers(visit):
    page = visit.page
    page.add_init_script(COUNT_WORKERS)
    page.goto(visit.url(""))
    page.locator("article a[href$='plan/']").first.click()
    page.wait_for_url("**/plan/")
    wait_until_ready(page)
    wait_until_live(page, FIRST, CONFIRMED)
    # pre-rendered at build for the lesson preset, and not recomputed on the way in: no planner call, no pool
    assert output_text(page, CONFIRMED, "command") == "python -m calc plan --preset lesson --json"
    page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length")
    page.wait_for_timeout(500)
    loaded = _counts(page)
    assert _plan_calls(loaded) == [] and loaded["started"] == 1, loaded
    assert _no_overflow(page)
    _drive(page)
    # the confirmed answer's simulations ran across the pool: one Python worker per core (at most four)
    driven = _counts(page)
    pool = driven["started"] - 1
    assert pool == max(1, min(4, driven["cores"])), driven
    assert len(_plan_calls(driven, "plan.simulated_jobs")) >= 6  # six finalists, then the sensitivity
    assert len(_plan_calls(driven, "plan.confirmed_jobs")) >= 3
    assert driven["restored"] == [True] * (1 + pool), driven  # every one restored from the build's snapshot
    # leaving the page (instant navigation) terminates the pool, not the page's own worker
    page.locator("a.md-header__button.md-logo").first.click()
    page.wait_for_function("(n) => window.__terminated === n", arg=pool)
    assert page.evaluate("() => calcRuntime.mounted().every((c) => c.kind !== 'plan-pool')")
    assert visit.console_errors == []


def test_the_permalink_reproduces_the_clis_json(visit):
    page = visit.page
    page.add_init_script(COUNT_WORKERS)
    page.goto(visit.url(PAGE + "?preset=chat&rate=3&prices=h200%3D4.5"))
    wait_until_ready(page)
    expected = _cli_stdout("--preset", "chat", "--rate", "3", "--price", "h200=4.5")
    _wait_for_output(page, JSON, "json", expected.removesuffix("\n"))
    # merged in Python from the pool workers' results: the main worker simulated nothing itself
    assert len(_plan_calls(_counts(page), "plan.simulated_jobs")) >= 7
    # in the closed fold "The plan as JSON": read its text, not what is rendered
    command = page.locator(f'{JSON} [data-output="command"]').text_content()
    assert command == "python -m calc plan --preset chat --rate 3 --price h200=4.5 --json"
    assert page.locator(f'{FIRST} select[name="preset"]').input_value() == "chat"


def test_live_at_a_phones_width(browser, site_server):
    phone = Visit(browser, site_server, viewport={"width": 390, "height": 844})
    try:
        page = phone.page
        page.goto(phone.url(PAGE))
        wait_until_ready(page)
        wait_until_live(page, FIRST, CONFIRMED)
        assert _no_overflow(page)
        _drive(page)
        assert _no_overflow(page)
        assert phone.console_errors == []
    finally:
        phone.close()
    assert phone.external_requests == []
