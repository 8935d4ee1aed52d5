"""Benchmark of the built site as its readers feel it, in headless Chromium on 127.0.0.1.

Figures (targets of issue 11 on the 2-core development machine in brackets):

* cold load to ``data-pyodide=ready`` on a lesson page, fresh browser context each time [2.5 s], both with the
  service worker on, as a reader's first visit has it, and blocked, ``--runs`` of each (9), alternated with the
  order flipped every round, after one visit not counted [issue 17: on at most 1.5 s median, and no slower than
  blocked by more than 10%]; with it on, also when the precache is complete (the
  site readable offline) and how many files the server sent twice during the visit [0];
* navigation (instant) to the first live recompute on another page;
* widget recompute latency, p50 and p95 over every widget of every page [p95 50 ms], from a control's
  change event: to the numbers (the runtime's ``calc:answered`` event, fired once the answer is written),
  and to the charts drawn (``calc:drawn``; they follow the numbers, one per task); each widget's figure is
  its median over ``--sweeps`` fresh browser contexts;
* the longest main-thread task while a simulation plays [50 ms]; the replica panel's slowest frame while it
  plays on step 1 [50 ms];
* bytes of the first lesson page, gzip-compressed, with and without the Pyodide runtime [1 MB without];
* ``mkdocs build`` time.

Prints a table and writes bench-results/site.json. Not a test: it measures, it does not assert. A measurement
that fails is printed as FAILED with its reason (and kept under ``failures`` in the JSON), the others still run,
and the exit status is 1.

    .venv/bin/python bench/bench_site.py [--runs N] [--no-build] [--cold-only] [--ab OTHER_SITE]

``--ab OTHER_SITE`` (implies ``--cold-only``): a paired comparison of cold ready, OTHER_SITE (e.g. a copy of the
site built before a change) served on the next port and this site, alternated visit by visit in both modes, so
that both see the same load on a shared machine; prints both medians and per-phase splits, writes
bench-results/site-ab.json. With ``--cpu``, also the CPU time each thread of the page's renderer spent from
navigation to ready (a Chrome trace of more cold visits, service worker blocked): unlike wall-clock times on a
shared 2-core machine, it hardly moves with the other jobs' load.
"""

from __future__ import annotations

import argparse
import gzip
import json
import os
import statistics
import subprocess
import sys
import time
import urllib.parse

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
sys.path.insert(0, ROOT)

from tests.browser.conftest import CHROMIUM_FLAGS, built_site_url  # noqa: E402
from tests.browser.test_first_visit import RecordingServer  # noqa: E402


FIRST_PAGE = "lesson/01-a-70b-assistant/"
SECOND_PAGE = "lesson/02-kv-cache-arithmetic/"
# The Python runtime: Pyodide, its memory snapshot (when the build made one) and calc's zip and scripts.
RUNTIME_PREFIXES = ("assets/vendor/pyodide/", "assets/runtime/pyodide-", "assets/runtime/calc-")


def percentile(values, q):
    ordered = sorted(values)
    if not ordered:
        return None
    rank = max(0, min(len(ordered) - 1, round(q / 100 * (len(ordered) - 1))))
    return ordered[rank]


def timed_build() -> float:
    started = time.perf_counter()
    subprocess.run([os.path.join(ROOT, ".venv", "bin", "mkdocs"), "build", "--strict", "-q", "-d", SITE], cwd=ROOT, check=True,
                   env={**os.environ, "NO_MKDOCS_2_WARNING": "1"})
    return time.perf_counter() - started


def pages_with_widgets() -> list[str]:
    found = []
    for folder, _, files in os.walk(SITE):
        if "index.html" in files:
            with open(os.path.join(folder, "index.html"), encoding="utf-8") as handle:
                if 'data-kind="widget"' in handle.read():
                    found.append(os.path.relpath(folder, SITE).replace(os.sep, "/").strip(".") + "/")
    return sorted(p.lstrip("/") for p in found)


def new_context(browser):
    context = browser.new_context(service_workers="block")
    blocked = []
    context.route("**/*", lambda route: route.continue_() if urllib.parse.urlparse(route.request.url).hostname
                  in ("127.0.0.1", None) else (blocked.append(route.request.url), route.abort()))
    return context, blocked


COLD_READY_TARGET_MS = 1500  # issue 17: cold ready with the service worker on, median
SERVICE_WORKER_SLOWDOWN_TARGET = 1.10  # issue 17: on / blocked, medians


# One cold boot on the page's clock (ms since navigation): the HTML, the head's worker start, each step the
# worker marked (its own clock, moved by the two time origins' difference) and when each file it fetched
# arrived; "ready" is when the page heard it. Files are keyed by a short name (the hashed ones by their kind).
BOOT_TIMELINE = """
() => {
  const nav = performance.getEntriesByType('navigation')[0];
  const profile = calcRuntime.bootProfile || {marks: {}, worker_origin_ms: performance.timeOrigin};
  const offset = profile.worker_origin_ms - performance.timeOrigin;
  const line = {html_received: nav.responseEnd, dom_content_loaded: nav.domContentLoadedEventEnd,
                worker_created: calcRuntime.bootStarted, ready: calcRuntime.readyAt};
  for (const [name, at] of Object.entries(profile.marks)) line[name] = at + offset;
  const short = (name) => name.replace(/^calc-[0-9a-f]+\\.zip$/, 'calc.zip')
    .replace(/^pyodide-[0-9a-f]+\\.snapshot$/, 'snapshot');
  for (const entry of calcRuntime.bootFetched || []) {
    line['fetch ' + short(entry.name) + ' start'] = entry.start + offset;
    line['fetch ' + short(entry.name) + ' end'] = entry.end + offset;
  }
  for (const key of Object.keys(line)) line[key] = line[key] == null ? null : Math.round(line[key]);
  return line;
}
"""


def median_timeline(runs: list[dict]) -> dict:
    """Each step's median over the runs (ms since navigation), in the order of the median run."""
    keys = {key for run in runs for key in run["timeline"]}
    medians = {key: statistics.median(values) for key in keys
               if (values := [run["timeline"][key] for run in runs if run["timeline"].get(key) is not None])}
    return dict(sorted(medians.items(), key=lambda item: item[1]))


def cold_ready_ms(browser, url: str, server: RecordingServer, service_workers: str) -> dict:
    """One first visit in a fresh context: ms from navigation to Python ready; with the service worker on, also
    to its precache complete, and which files the server sent more than once meanwhile.

    The context has no routes (Playwright turns the HTTP cache off in a context with routes, and a reader's
    browser has one); requests leaving 127.0.0.1 are watched instead, and fail the run."""
    context = browser.new_context(service_workers=service_workers)
    external = []
    context.on("request", lambda request: request.url.startswith(("data:", "blob:")) or
               urllib.parse.urlparse(request.url).hostname == "127.0.0.1" or external.append(request.url))
    page = context.new_page()
    sent_before = len(server.responses)
    page.goto(url)
    page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
    timing = page.evaluate("() => ({ready: calcRuntime.readyAt, workerStarted: calcRuntime.bootStarted,"
                           " phases: calcRuntime.bootPhases})")
    timing["timeline"] = page.evaluate(BOOT_TIMELINE)
    if service_workers == "allow":
        page.wait_for_function("() => window.calcOffline && ['ready', 'unavailable'].includes(calcOffline.state)",
                               timeout=180_000)
        offline = page.evaluate("() => window.calcOffline")
        timing["offline_ready"] = offline["doneAt"] if offline["state"] == "ready" else None
        timing["precache"] = offline["report"]
        sent = [path for _, path, status in server.responses[sent_before:] if status == 200]
        timing["downloaded_twice"] = sorted({path for path in sent if sent.count(path) > 1})
    context.close()
    if external:
        raise RuntimeError(f"requests left 127.0.0.1: {external}")
    return timing


def alternating_orders(items, rounds: int) -> list[list]:
    """The visits of each round: ``items`` in order, then reversed, then in order again, so that no item is
    always first (or last) after the same other visits.

    >>> alternating_orders(["on", "blocked"], 3)
    [['on', 'blocked'], ['blocked', 'on'], ['on', 'blocked']]
    """
    return [list(items) if round_index % 2 == 0 else list(reversed(items)) for round_index in range(rounds)]


def cold_ready(browser, url: str, server: RecordingServer, runs: int) -> dict:
    """Cold ready with the service worker on and blocked, alternated so that both see the same load.

    The order of the two modes flips every round (on, blocked, blocked, on, ...), and one visit before the
    first round is not counted: the browser's first page starts its GPU and network processes, which a
    reader's running browser has already started; without it, the mode that goes first pays for them."""
    by_mode = {"allow": [], "block": []}
    cold_ready_ms(browser, url, server, "block")  # warms the browser's processes, not the site's caches
    for mode_order in alternating_orders(("allow", "block"), runs):
        for mode in mode_order:
            by_mode[mode].append(cold_ready_ms(browser, url, server, mode))
    results = {}
    for mode, colds in by_mode.items():
        median_run = sorted(colds, key=lambda run: run["ready"])[len(colds) // 2]
        results[mode] = {"median": statistics.median(run["ready"] for run in colds),
                         "runs": [run["ready"] for run in colds],
                         "worker_started": median_run["workerStarted"], "phases": median_run["phases"],
                         "timeline_median": median_timeline(colds)}
    on = by_mode["allow"]
    offline_after = [run["offline_ready"] - run["ready"] for run in on if run["offline_ready"] is not None]
    results["allow"].update({
        "offline_ready_median": statistics.median(run["offline_ready"] for run in on)
        if len(offline_after) == len(on) else None,
        "offline_ready_after_ready_median": statistics.median(offline_after) if offline_after else None,
        "precache_unavailable_runs": len(on) - len(offline_after),
        "downloaded_twice": sorted({path for run in on for path in run["downloaded_twice"]}),
        "precache": on[-1]["precache"],
    })
    results["on_over_blocked"] = results["allow"]["median"] / results["block"]["median"]
    return results


def cold_ready_paired(browser, sites: dict[str, tuple[str, RecordingServer]], runs: int) -> dict:
    """Cold ready of several sites (label -> (page url, its server)) in both modes, visits alternated site by
    site and mode by mode, so that every site sees the same load; per site, what ``cold_ready`` reports."""
    visits = {(label, mode): [] for label in sites for mode in ("allow", "block")}
    first_url, first_server = next(iter(sites.values()))
    cold_ready_ms(browser, first_url, first_server, "block")  # not counted: see cold_ready
    for order in alternating_orders([(label, mode) for label in sites for mode in ("allow", "block")], runs):
        for label, mode in order:
            url, server = sites[label]
            visits[(label, mode)].append(cold_ready_ms(browser, url, server, mode))
    results = {}
    for label in sites:
        results[label] = {}
        for mode in ("allow", "block"):
            colds = visits[(label, mode)]
            results[label][mode] = {"median": statistics.median(run["ready"] for run in colds),
                                    "runs": [run["ready"] for run in colds],
                                    "timeline_median": median_timeline(colds)}
        on = visits[(label, "allow")]
        results[label]["allow"]["downloaded_twice"] = sorted({path for run in on for path in run["downloaded_twice"]})
        results[label]["on_over_blocked"] = results[label]["allow"]["median"] / results[label]["block"]["median"]
    return results


def print_paired(results: dict) -> None:
    labels = list(results)
    print("cold load to Python ready, paired A/B (medians in ms; runs in brackets):")
    for label in labels:
        for mode, name in (("allow", "service worker on"), ("block", "service worker blocked")):
            entry = results[label][mode]
            print(f"  {label:>6} {name:<23} {entry['median']:7.0f}  ({', '.join(f'{r:.0f}' for r in entry['runs'])})")
        print(f"  {label:>6} on / blocked {results[label]['on_over_blocked']:.2f}; files downloaded twice: "
              f"{len(results[label]['allow']['downloaded_twice'])}")
    for mode, name in (("allow", "service worker on"), ("block", "service worker blocked")):
        steps = sorted({step for label in labels for step in results[label][mode]["timeline_median"]},
                       key=lambda step: results[labels[-1]][mode]["timeline_median"].get(step, 1e9))
        print(f"per-phase medians, {name}, ms since navigation: " + " / ".join(labels))
        for step in steps:
            cells = [results[label][mode]["timeline_median"].get(step) for label in labels]
            print("  " + "".join(f"{'-' if c is None else f'{c:.0f}':>8}" for c in cells) + f"  {step}")


# Stamps navigation's start and the moment the page hears Python is ready into the trace (console.timeStamp).
TRACE_STAMPS = """
console.timeStamp('calc-start');
const calcWatch = () => {
  const root = document.documentElement;
  if (!root) return false;
  new MutationObserver(() => {
    if (root.dataset.pyodide === 'ready' && !window.__calcStamped) { window.__calcStamped = 1; console.timeStamp('calc-ready'); }
  }).observe(root, {attributes: true, attributeFilter: ['data-pyodide']});
  return true;
};
if (!calcWatch()) new MutationObserver((_, observer) => { if (calcWatch()) observer.disconnect(); })
  .observe(document, {childList: true});
"""


def thread_cpu_ms(trace_path: str) -> dict[str, float]:
    """CPU ms of each thread of the page's renderer between the two stamps of TRACE_STAMPS, from the trace's
    thread clocks (top-level events only, so nothing is counted twice); workers by their script's name, the
    engine's pool threads together as ``threadpool``."""
    with open(trace_path, encoding="utf-8") as handle:
        trace = json.load(handle)
    events = trace["traceEvents"] if isinstance(trace, dict) else trace
    stamps = {}
    for event in events:
        if event.get("name") == "TimeStamp":
            message = event.get("args", {}).get("data", {}).get("message")
            if message in ("calc-start", "calc-ready"):
                stamps[message] = event
    start, ready = stamps["calc-start"]["ts"], stamps["calc-ready"]["ts"]
    renderer = stamps["calc-ready"]["pid"]
    names = {event["tid"]: event["args"]["name"] for event in events
             if event.get("ph") == "M" and event.get("name") == "thread_name" and event["pid"] == renderer}
    for event in events:
        if event.get("name") == "TracingSessionIdForWorker":
            data = event["args"]["data"]
            names[data["workerThreadId"]] = data["url"].split("/")[-1]
    by_thread: dict[int, list] = {}
    for event in events:
        if event.get("ph") == "X" and "tdur" in event and event["pid"] == renderer and start <= event["ts"] <= ready:
            by_thread.setdefault(event["tid"], []).append(event)
    cpu: dict[str, float] = {}
    for tid, thread_events in by_thread.items():
        thread_events.sort(key=lambda event: (event["ts"], -event["dur"]))
        total, covered_until = 0, -1
        for event in thread_events:
            if event["ts"] >= covered_until:  # not inside the last top-level event
                total += event["tdur"]
                covered_until = event["ts"] + event["dur"]
        role = names.get(tid, "?")
        role = "threadpool" if role.startswith("ThreadPool") else role
        cpu[role] = cpu.get(role, 0.0) + total / 1000
    return cpu


def boot_cpu_paired(browser, sites: dict[str, str], runs: int) -> dict:
    """Per site (label -> page url): the median CPU ms of each thread over ``runs`` traced cold visits, visits
    alternated site by site; service worker blocked (the precache after ready is not the boot)."""
    import tempfile

    samples: dict[str, list[dict]] = {label: [] for label in sites}
    with tempfile.TemporaryDirectory() as folder:
        for _ in range(runs):
            for label, url in sites.items():
                context = browser.new_context(service_workers="block")
                context.add_init_script(TRACE_STAMPS)
                page = context.new_page()
                path = os.path.join(folder, f"{label}.json")
                browser.start_tracing(page=page, path=path, categories=[
                    "devtools.timeline", "disabled-by-default-devtools.timeline", "v8", "toplevel"])
                page.goto(url)
                page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
                browser.stop_tracing()
                context.close()
                samples[label].append(thread_cpu_ms(path))
    results = {}
    for label, runs_cpu in samples.items():
        roles = sorted({role for cpu in runs_cpu for role in cpu})
        medians = {role: statistics.median(cpu.get(role, 0.0) for cpu in runs_cpu) for role in roles}
        results[label] = {"median_ms": {role: ms for role, ms in medians.items() if ms >= 5},
                          "total_median_ms": statistics.median(sum(cpu.values()) for cpu in runs_cpu)}
    return results


def print_cpu(results: dict) -> None:
    labels = list(results)
    print("CPU ms per thread, navigation to ready (medians; service worker blocked): " + " / ".join(labels))
    roles = sorted({role for label in labels for role in results[label]["median_ms"]},
                   key=lambda role: -max(results[label]["median_ms"].get(role, 0) for label in labels))
    for role in roles:
        print("  " + "".join(f"{results[label]['median_ms'].get(role, 0):8.0f}" for label in labels) + f"  {role}")
    print("  " + "".join(f"{results[label]['total_median_ms']:8.0f}" for label in labels) + "  all threads")


def main_ab(other_site: str, runs: int, cpu_runs: int = 0) -> int:
    """The paired comparison (``--ab``): OTHER_SITE on the next port as "before", this site as "after"."""
    from playwright.sync_api import sync_playwright

    url = built_site_url()
    parsed = urllib.parse.urlparse(url)
    other_url = f"{parsed.scheme}://{parsed.hostname}:{parsed.port + 1}/"
    servers = {"before": RecordingServer(other_url, directory=os.path.abspath(other_site)), "after": RecordingServer(url)}
    for server in servers.values():
        server.start()
    load_before = os.getloadavg()[0]
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"),
                                                 args=CHROMIUM_FLAGS)
            results = cold_ready_paired(browser, {label: (server.url + FIRST_PAGE, server)
                                                  for label, server in servers.items()}, runs)
            if cpu_runs:
                results["thread_cpu_ms"] = boot_cpu_paired(
                    browser, {label: server.url + FIRST_PAGE for label, server in servers.items()}, cpu_runs)
            browser.close()
    finally:
        for server in servers.values():
            server.stop()
    results["load_average"] = {"before": load_before, "after": os.getloadavg()[0]}
    print_paired({label: results[label] for label in servers})
    if "thread_cpu_ms" in results:
        print_cpu(results["thread_cpu_ms"])
    print(f"load average (1 min) before / after: {load_before:.1f} / {results['load_average']['after']:.1f}")
    os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
    with open(os.path.join(ROOT, "bench-results", "site-ab.json"), "w", encoding="utf-8") as handle:
        json.dump({**results, "before_site": os.path.abspath(other_site)}, handle, indent=2)
    return 0


def first_page_bytes(browser, url: str) -> dict:
    """gzip size of every file the first page loads, split into runtime (Pyodide, calc) and the rest."""
    context, _ = new_context(browser)
    page = context.new_page()
    paths = []
    page.on("request", lambda request: paths.append(urllib.parse.urlparse(request.url).path))
    page.goto(url)
    page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
    page.wait_for_timeout(1000)
    context.close()
    totals = {"runtime": 0, "page": 0}
    for path in set(paths):
        relative = path.lstrip("/")
        local = os.path.join(SITE, relative, "index.html") if relative.endswith("/") or not relative else \
            os.path.join(SITE, relative)
        if not os.path.isfile(local):
            continue
        with open(local, "rb") as handle:
            size = len(gzip.compress(handle.read(), 6))
        totals["runtime" if relative.startswith(RUNTIME_PREFIXES) else "page"] += size
    return totals


# Changes the widget's first visible select or number input by one step and fires its change event;
# stamps widget.__t0 (performance.now()) just before the event, so timings start at the change itself
# and not at this script's round trip from Playwright.
CHANGE_ONE_CONTROL = """
(widget) => {
  const controls = [...widget.querySelectorAll('form select, form input[type=number]')]
      .filter(c => c.offsetParent !== null && !c.name.startsWith('__'));
  for (const control of controls) {
    if (control.tagName === 'SELECT') {
      if (control.options.length < 2) continue;
      control.selectedIndex = (control.selectedIndex + 1) % control.options.length;
    } else {
      const step = Number(control.step) || 1, max = Number(control.max), value = Number(control.value);
      const next = value + step <= max ? value + step : value - step;
      control.value = String(next);
    }
    widget.__t0 = performance.now();
    control.dispatchEvent(new Event('change', {bubbles: true}));
    return true;
  }
  return false;
}
"""


# Listens for the widget's next answer (calc:answered: the runtime has written the numbers of the call
# the change made) and for its charts catching up (calc:drawn), each timed from widget.__t0.
LISTEN_FOR_ANSWER = """
(w) => {
  w.__t0 = null; w.__done = null; w.__drawn = null; w.__ok = null;
  w.__hasCharts = !!w.querySelector('[data-chart]');
  w.addEventListener('calc:answered', (event) => { w.__done = performance.now() - w.__t0; w.__ok = event.detail.ok; },
                     {once: true});
  w.addEventListener('calc:drawn', () => { w.__drawn = performance.now() - w.__t0; }, {once: true});
}
"""


def recompute_latencies(browser, base: str, pages: list[str]) -> dict[str, dict]:
    """For each widget: change one control, then time (a) until its numbers are live again (the worker's
    answer written into the outputs: the runtime's ``calc:answered`` event) and (b) until its charts have
    caught up (the ``calc:drawn`` event; charts are drawn one per task after the numbers). Both from the
    change event.

    Each page is measured once it has settled (runtime ready, the page's modules imported, its
    pre-rendered charts drawn), as a reader who scrolls to a widget meets it; the cold start is
    measured on its own. Keyed ``page#index name`` so the slow tail can be named."""
    context, _ = new_context(browser)
    page = context.new_page()
    latencies = {}
    for path in pages:
        page.goto(base + path)
        page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
        page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length"
                               " && !document.querySelector('[data-chart][data-pending]')", timeout=120_000)
        count = page.locator('[data-kind="widget"]').count()
        for index in range(count):
            widget = page.locator('[data-kind="widget"]').nth(index)
            widget.scroll_into_view_if_needed()
            handle = widget.element_handle()
            key = f"{path}#{index} {widget.get_attribute('data-widget')}"
            page.evaluate(LISTEN_FOR_ANSWER, handle)
            if not page.evaluate(CHANGE_ONE_CONTROL, handle):
                continue
            try:
                page.wait_for_function("(w) => w.__done !== null && (!w.__hasCharts || w.__drawn !== null || !w.__ok)",
                                       arg=handle, timeout=30_000)
            except Exception:  # a widget that did not answer in 30 s is reported as such
                latencies[key] = {"numbers": 30_000.0, "charts": 30_000.0}
                continue
            numbers, drawn = page.evaluate("(w) => [w.__done, w.__drawn]", handle)
            latencies[key] = {"numbers": numbers, "charts": drawn if drawn is not None else numbers}
    context.close()
    return latencies


def primary_widget(path: str, kind: str = "widget") -> str:
    """The ``data-widget`` name of a built page's primary block of ``kind`` (widget, simulation): the first one
    outside every ``<details>`` (a step keeps its secondary blocks in folds, closed by default)."""
    from html.parser import HTMLParser

    class Finder(HTMLParser):
        depth, found = 0, None

        def handle_starttag(self, tag, attrs):
            attributes = dict(attrs)
            if tag == "details":
                self.depth += 1
            elif self.found is None and not self.depth and attributes.get("data-kind") == kind:
                self.found = attributes.get("data-widget")

        def handle_endtag(self, tag):
            if tag == "details":
                self.depth -= 1

    finder = Finder()
    with open(os.path.join(SITE, path, "index.html"), encoding="utf-8") as handle:
        finder.feed(handle.read())
    if finder.found is None:
        raise RuntimeError(f"{path} has no {kind} outside a fold")
    return finder.found


def navigation_to_live_ms(browser, base: str) -> float:
    """From the click on the footer's next link (Material's instant navigation, the worker kept) to the
    answer of the first recompute of the next page's primary widget: it must go live (the runtime wires the
    new page), then answer a changed control. The widget is found by name: the URL changes before the new
    page's content replaces the old one, so "the first widget" may still be the last page's."""
    selector = f'[data-kind="widget"][data-widget="{primary_widget(SECOND_PAGE)}"]'
    context, _ = new_context(browser)
    try:
        page = context.new_page()
        page.goto(base + FIRST_PAGE)
        page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
        page.wait_for_load_state("networkidle")
        started = time.perf_counter()
        page.click("a.md-footer__link--next")
        page.wait_for_url(f"**/{SECOND_PAGE}")
        widget = page.locator(f'{selector}[data-state="live"]').first
        widget.wait_for(timeout=60_000)
        handle = widget.element_handle()
        page.evaluate(LISTEN_FOR_ANSWER, handle)
        if not page.evaluate(CHANGE_ONE_CONTROL, handle):
            raise RuntimeError(f"{SECOND_PAGE}: its primary widget {selector} has no visible select or number "
                               f"input to change")
        page.wait_for_function("(w) => w.__done !== null", arg=handle, timeout=60_000)
        return (time.perf_counter() - started) * 1000
    finally:
        context.close()


SIMULATION_PAGE = "lesson/22-playground/"


def simulation_long_tasks(browser, base: str) -> float:
    """The longest main-thread task (Long Tasks API: those over 50 ms) while the playground's own simulation,
    its primary one, plays to its end at the speed a reader gets."""
    sim = f'[data-kind="simulation"][data-widget="{primary_widget(SIMULATION_PAGE, "simulation")}"]'
    context, _ = new_context(browser)
    try:
        page = context.new_page()
        page.goto(base + SIMULATION_PAGE)
        page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
        page.wait_for_selector(f'{sim}[data-state="live"]', timeout=60_000)
        page.evaluate("() => { window.__long = []; new PerformanceObserver(l => l.getEntries().forEach(e =>"
                      " window.__long.push(e.duration))).observe({type: 'longtask'}); }")
        page.locator(f'{sim} [data-action="play"]').click()
        page.wait_for_function("(sel) => document.querySelector(sel).dataset.simState === 'done'", arg=sim,
                               timeout=180_000)
        return page.evaluate("() => Math.max(0, ...window.__long)")
    finally:
        context.close()


REPLICA_PAGE = "lesson/01-a-70b-assistant/"


def replica_panel_slowest_frame_ms(browser, base: str) -> dict:
    """The replica panel's slowest frame (its own handling of one frame: text, the six sparklines, localStorage,
    ``window.calcReplica.slowestFrameMs``) while it plays 12 simulated seconds on step 1 with its views drawn, and
    the frames it handled."""
    context, _ = new_context(browser)
    try:
        page = context.new_page()
        page.goto(base + REPLICA_PAGE)
        page.wait_for_selector("html[data-pyodide=ready]", timeout=120_000)
        page.wait_for_function("() => !calcRuntime.inFlight && calcRuntime.queue.length === 0", timeout=60_000)
        panel = page.locator("[data-replica]")
        panel.get_by_role("button", name="My replica", exact=True).click()
        panel.get_by_role("button", name="Play", exact=True).click()
        page.wait_for_function("() => Number(document.querySelector('[data-replica]').dataset.simTimeS) > 12",
                               timeout=120_000)
        replica = page.evaluate("() => window.calcReplica")
        return {"slowest_ms": replica["slowestFrameMs"], "frames": replica["frames"]}
    finally:
        context.close()


def failure_reason(error: BaseException) -> str:
    """One line: the error's type and the first line of its message (Playwright's call logs follow it)."""
    lines = str(error).strip().splitlines()
    return f"{type(error).__name__}: {lines[0][:300] if lines else ''}".rstrip(": ")


class Measurements:
    """Runs each measurement on its own: one that fails is recorded with its reason, the others still run."""

    def __init__(self):
        self.failures: dict[str, str] = {}

    def run(self, name: str, measure, *args):
        try:
            return measure(*args)
        except KeyboardInterrupt:
            raise
        except BaseException as error:  # also pytest.fail's Failed (built_site_url), which is no Exception
            self.failures[name] = failure_reason(error)
            print(f"bench_site: {name} failed: {self.failures[name]}", file=sys.stderr)
            return None


def main() -> int:
    from playwright.sync_api import sync_playwright

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=9,
                        help="cold loads to time in each mode, service worker on and blocked (median reported)")
    parser.add_argument("--sweeps", type=int, default=3, help="recompute sweeps over every widget (median per widget)")
    parser.add_argument("--no-build", action="store_true", help="use site/ as it is")
    parser.add_argument("--cold-only", action="store_true",
                        help="measure only the cold loads (and update only their figures in bench-results/site.json)")
    parser.add_argument("--ab", metavar="OTHER_SITE",
                        help="paired cold-ready comparison: OTHER_SITE (before) against this site (after)")
    parser.add_argument("--cpu", type=int, default=0, metavar="N",
                        help="with --ab: also N traced cold visits per site, CPU ms per thread until ready")
    args = parser.parse_args()
    if args.ab:
        return main_ab(args.ab, args.runs, args.cpu)

    results: dict = {}
    measurements = Measurements()
    if not args.no_build:
        build_s = measurements.run("build_s", timed_build)
        if build_s is not None:
            results["build_s"] = build_s
    url = measurements.run("site", built_site_url)
    server = RecordingServer(url) if url else None
    if server is not None:
        measurements.run("server", server.start)
        if "server" in measurements.failures:
            server = None
    try:
        with sync_playwright() as playwright:
            browser = measurements.run("browser", lambda: playwright.chromium.launch(
                executable_path=os.environ.get("CHROMIUM_PATH", "/usr/bin/chromium"), args=CHROMIUM_FLAGS))
            if browser is not None and server is not None:
                measure_in_browser(browser, server, args, results, measurements)
                browser.close()
    finally:
        if server is not None:
            server.stop()

    rows = [("mkdocs build", f"{results['build_s']:.1f} s" if "build_s" in results else
             "FAILED" if "build_s" in measurements.failures else "skipped", "")]
    rows += cold_rows(results)
    if not args.cold_only:
        rows += other_rows(results)
    for name, reason in measurements.failures.items():
        rows.append((f"FAILED: {name}", "", reason))
    width = max(len(r[0]) for r in rows)
    for name, value, note in rows:
        print(f"{name.ljust(width)}  {value.rjust(10)}  {note}")
    if results.get("recompute_by_widget_ms"):
        print("slowest recomputes (numbers / charts):", ", ".join(
            f"{key.split(' ')[-1]} {t['numbers']:.0f}/{t['charts']:.0f} ms"
            for key, t in list(results["recompute_by_widget_ms"].items())[:5]))
    if "cold_ready_ms" in results:
        print("cold boot phases (ms from the worker's start):", results["cold_ready_ms"]["phases"])
        for label, key in (("service worker on", "cold_ready_ms"), ("service worker blocked", "cold_ready_blocked_ms")):
            print(f"cold boot timeline, {label}, medians in ms since navigation:")
            for step, at in results[key]["timeline_median"].items():
                print(f"  {at:7.0f}  {step}")
    results["failures"] = measurements.failures
    os.makedirs(os.path.join(ROOT, "bench-results"), exist_ok=True)
    path = os.path.join(ROOT, "bench-results", "site.json")
    if args.cold_only and os.path.exists(path):  # keep the other figures of the last full run
        with open(path, encoding="utf-8") as handle:
            results = {**json.load(handle), **results}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(results, handle, indent=2)
    if measurements.failures:
        print(f"bench_site: {len(measurements.failures)} measurement(s) failed: {', '.join(measurements.failures)}",
              file=sys.stderr)
    return 1 if measurements.failures else 0


def measure_in_browser(browser, server, args, results: dict, measurements: Measurements) -> None:
    load_before = os.getloadavg()  # the machine is shared: a cold boot is CPU-bound, so its figures move with the load
    colds = measurements.run("cold_ready_ms", cold_ready, browser, server.url + FIRST_PAGE, server, args.runs)
    results["cold_ready_load_average"] = {"before": load_before[0], "after": os.getloadavg()[0]}
    if colds is not None:
        results["cold_ready_ms"] = colds["allow"]  # as readers get it: the service worker on
        results["cold_ready_blocked_ms"] = colds["block"]
        results["cold_ready_on_over_blocked"] = colds["on_over_blocked"]
        results["cold_ready_targets"] = {"service_worker_on_median_ms": COLD_READY_TARGET_MS,
                                         "on_over_blocked": SERVICE_WORKER_SLOWDOWN_TARGET}
    if args.cold_only:
        return
    navigation = measurements.run("navigation_to_live_ms", navigation_to_live_ms, browser, server.url)
    if navigation is not None:
        results["navigation_to_live_ms"] = navigation
    recomputes = measurements.run("recompute_ms", recompute_summary, browser, server.url, args.sweeps)
    if recomputes is not None:
        results.update(recomputes)
    longest = measurements.run("simulation_longest_task_ms", simulation_long_tasks, browser, server.url)
    if longest is not None:
        results["simulation_longest_task_ms"] = longest
    panel = measurements.run("replica_panel_frame_ms", replica_panel_slowest_frame_ms, browser, server.url)
    if panel is not None:
        results["replica_panel_frame_ms"] = panel
    page_bytes = measurements.run("first_page_gzip_bytes", first_page_bytes, browser, server.url + FIRST_PAGE)
    if page_bytes is not None:
        results["first_page_gzip_bytes"] = page_bytes


def recompute_summary(browser, base: str, sweeps_count: int) -> dict:
    # Each sweep in a fresh context (its own worker, cold caches): a widget's figure is its median over the
    # sweeps, which damps one-off pauses (GC, tier-up) without warming any cache.
    pages = pages_with_widgets()
    sweeps = [recompute_latencies(browser, base, pages) for _ in range(sweeps_count)]
    by_widget = {key: {part: statistics.median(sweep[key][part] for sweep in sweeps if key in sweep)
                       for part in ("numbers", "charts")} for key in sweeps[0]}
    summary = {}
    for part in ("numbers", "charts"):
        values = [timing[part] for timing in by_widget.values()]
        summary[f"recompute_{part}_ms"] = {"widgets": len(values), "p50": percentile(values, 50),
                                           "p95": percentile(values, 95), "max": max(values, default=None)}
    summary["recompute_by_widget_ms"] = dict(sorted(by_widget.items(), key=lambda kv: -kv[1]["charts"]))
    return summary


def cold_rows(results: dict) -> list[tuple[str, str, str]]:
    if "cold_ready_ms" not in results:
        return []
    cold, blocked = results["cold_ready_ms"], results["cold_ready_blocked_ms"]
    ratio = results["cold_ready_on_over_blocked"]
    return [
        ("cold load to Python ready, service worker on", f"{cold['median']:.0f} ms",
         f"target {COLD_READY_TARGET_MS:,} ms: {'met' if cold['median'] <= COLD_READY_TARGET_MS else 'MISSED'}"
         f" (runs {', '.join(f'{r:.0f}' for r in cold['runs'])})"),
        ("cold load to Python ready, service worker blocked", f"{blocked['median']:.0f} ms",
         f"(runs {', '.join(f'{r:.0f}' for r in blocked['runs'])})"),
        ("load average (1 min) before / after the cold loads",
         f"{results['cold_ready_load_average']['before']:.1f}/{results['cold_ready_load_average']['after']:.1f}",
         "2 cores: above ~2 the cold figures measure the other jobs too"),
        ("cold ready, on / blocked", f"{ratio:.2f}",
         f"target {SERVICE_WORKER_SLOWDOWN_TARGET:.2f}: {'met' if ratio <= SERVICE_WORKER_SLOWDOWN_TARGET else 'MISSED'}"),
        ("offline ready (precache done) after ready",
         "n/a" if cold["offline_ready_after_ready_median"] is None else f"{cold['offline_ready_after_ready_median']:.0f} ms",
         f"{cold['precache']['files']} files, {cold['precache']['handed_over']} handed over by the worker"),
        ("files downloaded twice, first visit", f"{len(cold['downloaded_twice'])}",
         "target 0" + (f": {', '.join(cold['downloaded_twice'])}" if cold["downloaded_twice"] else "")),
    ]


def other_rows(results: dict) -> list[tuple[str, str, str]]:
    rows = []
    if "navigation_to_live_ms" in results:
        rows.append(("navigation to first live recompute", f"{results['navigation_to_live_ms']:.0f} ms", ""))
    if "recompute_numbers_ms" in results:
        numbers, charts = results["recompute_numbers_ms"], results["recompute_charts_ms"]
        rows += [
            ("widget recompute p50, numbers", f"{numbers['p50']:.0f} ms", f"{numbers['widgets']} widgets"),
            ("widget recompute p95, numbers", f"{numbers['p95']:.0f} ms", "target 50 ms"),
            ("widget recompute p50, charts drawn", f"{charts['p50']:.0f} ms", ""),
            ("widget recompute p95, charts drawn", f"{charts['p95']:.0f} ms",
             "no target: drawn after the numbers, one chart per task"),
        ]
    if "simulation_longest_task_ms" in results:
        longest = results["simulation_longest_task_ms"]
        rows.append(("longest main-thread task, simulation",
                     # the Long Tasks API reports only tasks over 50 ms: none reported reads as such, not as 0 ms
                     "none > 50 ms" if not longest else f"{longest:.0f} ms",
                     "target 50 ms"))
    if "replica_panel_frame_ms" in results:
        panel = results["replica_panel_frame_ms"]
        rows.append(("replica panel, slowest frame while playing", f"{panel['slowest_ms']:.0f} ms",
                     f"target 50 ms, over {panel['frames']} frames"))
    if "first_page_gzip_bytes" in results:
        page_bytes = results["first_page_gzip_bytes"]
        rows += [("first page, gzip, without runtime", f"{page_bytes['page'] / 1e6:.2f} MB", "target 1 MB"),
                 ("first page, gzip, with runtime", f"{(page_bytes['page'] + page_bytes['runtime']) / 1e6:.2f} MB", "")]
    return rows


if __name__ == "__main__":
    sys.exit(main())
