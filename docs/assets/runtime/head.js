// @ts-check
// The boot's head script: the one inline script of a page with a widget, in the head's first block
// (overrides/main.html's `site_meta`). The build minifies it (hooks/head_script.py, with esbuild) and the
// template inlines that text; the site's CSP lists its hash, computed from the built page (hooks/security.py).
// This file itself is not part of the site (mkdocs.yml: exclude_docs).
//
// Why from the head: an inline script in the head runs while the body is still being parsed, so the Python
// worker (worker.mjs) starts before the body's parse and scripts, not after them as from calc-runtime.js. It
// sits before the theme's stylesheets: an inline script after a stylesheet waits for that stylesheet.
//
// THE BOOT, IN ONE PLACE: its combinations, what it patches, and the test of each: "B file::name" a browser
// test in tests/browser/ (a name's start), "U title" a unit test of this script without a browser
// (tests/js/head.test.mjs, run by tests/test_head_script.py on this source and on the minified text, which
// also checks that every test named here exists).
//
// What it reads, from its own element (the text is the same on every page, so the CSP lists one hash):
//   data-calc-worker  the address of worker.mjs
//   data-calc-helper  the address of boot-inflate-worker.mjs
//   data-calc-boot    the build's runtime files, {calc_zip, pyodide_snapshot, pyodide_snapshot_bytes} as JSON,
//                     written in at the end of the build from the manifest (hooks/vendor.py: name_boot_files)
//
// Its combinations:
//   1. Not http(s) (a page opened from a file) or no Worker: it does nothing, and calc-runtime.js says why the
//      widgets stay as built; Material's search worker is not held back either.
//        B test_file_protocol.py
//        B test_boot_combinations.py::test_without_worker
//        U "from a file, or without Worker, it does nothing"
//   2. The early worker: it starts worker.mjs with the boot facts as the worker's name, so the worker fetches
//      the snapshot and calc's zip from its first block instead of after a round trip for manifest.json.
//      calc-runtime.js adopts it (window.calcEarlyWorker) and replays what it said before that.
//        B test_boot_helpers.py::test_the_helpers_fetch (one worker, one boot)
//        U "what the early worker says before calc-runtime.js listens"
//      Without this script (a page without widgets reached first, then instant navigation to one; a worker
//      restarted after a call past its budget), calc-runtime.js starts worker.mjs itself, with no name: the
//      worker reads the manifest and starts its own inflate thread (boot-inflate-worker.mjs, unnamed mode).
//        B test_boot_combinations.py::test_after_instant_navigation
//        B test_runtime_guards.py::test_a_call_past_its_budget (boots == 2)
//   3. The boot helpers: with MessageChannel and facts that parse, it also starts boot-inflate-worker.mjs
//      twice (`jobs`: one compiles the wasm as it streams in, one inflates the snapshot and reads calc's zip)
//      and links each to the Python worker with a MessageChannel; `helper: true` in the Python worker's name
//      says they come. A helper that cannot start (its constructor throws, or its script fails to load:
//      onerror) is reported to the Python worker ({calcBootHelperGone}), which then does that work itself.
//        B test_boot_helpers.py::test_the_helpers_fetch
//        B test_boot_helpers.py::test_without_its_helpers
//        U "the Python worker first"
//        U "a helper that cannot start"
//      Facts that do not parse (or no MessageChannel): no helpers, and the worker gets the attribute's text
//      as its name (worker.mjs ignores a name it cannot read and asks the manifest).
//        B test_boot_combinations.py::test_boot_facts_the_worker_cannot_read
//        U "facts that do not parse"
//   4. The snapshot: present, the worker restores it; missing or damaged (HTTP error, cut short, the wrong
//      size), the worker boots CPython the ordinary way with the same answers (worker.mjs: fillSnapshot,
//      boot). Nothing here depends on it.
//        B test_pyodide_snapshot.py::test_the_worker_restores
//        B test_pyodide_snapshot.py::test_a_missing_snapshot
//        B test_pyodide_snapshot.py::test_a_damaged_snapshot (half a download; the wrong size)
//   5. Material's search worker is held back while Python boots (its start-up, ~0.1 s of a thread, and
//      building the index, ~2 s of CPU on a loaded 2-core machine, would compete with the boot): Material
//      gets a stand-in that keeps what it posts, and the real worker starts, with those messages, at the
//      first of: Python ready or failed (calc-runtime.js calls window.calcSearchRelease), the reader
//      focusing the search box, or RELEASE_AFTER_MS. Any other worker is started at once.
//        B test_boot_combinations.py::test_the_search_worker_waits_for_python
//        B test_boot_combinations.py::test_a_focus_on_the_search_box
//        B test_boot_combinations.py::test_without_python_or_a_focus
//        U "the search worker's stand-in keeps what Material posts"
//        U "the release comes on focus in the search box, or after 15 s"
//        U "other workers start at once"
//   6. Anything here that throws while starting the Python worker: the script stops, and calc-runtime.js
//      starts the worker as in 2 (the search worker is then not held back).
//        U "a Python worker that cannot start"
//   The inline script, as minified, and its hash in the CSP:
//        B test_offline_and_csp.py::test_pages_carry_a_policy (nothing breaks the policy)
//        tests/site/test_head_script_built.py
//
// What it patches (and who reads it):
//   window.calcEarlyWorker    the early worker, with `startedAt` (performance.now() at its start), `early`
//                             (messages it sent before calc-runtime.js listened) and `failed` (its error's
//                             message, if it failed then); calc-runtime.js takes it once and sets it to null.
//   window.calcSearchRelease  starts the held search worker; calc-runtime.js calls it once Python is ready
//                             or failed; after the first call it does nothing.
//   window.Worker             the constructor Material calls for its search worker: the stand-in below for
//                             /workers/search.*.js until the release, the real Worker otherwise (its
//                             prototype is the real one, so `instanceof Worker` still holds).
//   (worker.mjs patches its own thread's self.fetch and WebAssembly.instantiateStreaming, and hands Pyodide a
//   snapshot through its options `_loadSnapshot` and `createPyodideModule` and the module's
//   `API.restoreSnapshot`: see its header. tsc checks those against Pyodide's own types, tsconfig.workers.json.)

/**
 * The early worker, as calc-runtime.js adopts it.
 * @typedef {Worker & {startedAt: number, early: unknown[], failed?: string}} EarlyWorker
 */
/**
 * The page's window, with what this script adds to it.
 * @typedef {Window & typeof globalThis & {calcEarlyWorker?: EarlyWorker | null, calcSearchRelease?: () => void}}
 *   CalcWindow
 */
/**
 * The boot facts of data-calc-boot, as the workers read them from their names.
 * @typedef {{calc_zip: string, pyodide_snapshot: string | null, pyodide_snapshot_bytes: number | null,
 *   helper?: boolean, jobs?: string[]}} BootFacts
 */

(function () {
  const page = /** @type {CalcWindow} */ (window);
  const script = /** @type {HTMLScriptElement} */ (document.currentScript);
  const SEARCH_WORKER = /\/workers\/search\.[^/]*\.js/;
  const SEARCH_INPUT = "input.md-search__input";
  const RELEASE_AFTER_MS = 15000;
  // Each helper's share of the work: the wasm's compile alone (its stream hands each chunk to the thread
  // that compiles it), the snapshot and calc's zip together, so that neither waits for the other.
  const HELPER_JOBS = [["wasm"], ["snapshot", "calc"]];

  if (!/^https?:$/.test(location.protocol) || typeof Worker === "undefined") return;

  try {
    const bootText = script.dataset.calcBoot || "";
    /** @type {BootFacts | null} */
    let facts = null;
    if (bootText && typeof MessageChannel !== "undefined") {
      try {
        facts = JSON.parse(bootText);
        /** @type {BootFacts} */ (facts).helper = true;
      } catch (error) {
        facts = null;
      }
    }
    // The Python worker first: its own start-up (its script, then Pyodide's) is the boot's critical path.
    const worker = /** @type {EarlyWorker} */ (new Worker(new URL(script.dataset.calcWorker || "", location.href),
      { type: "module", name: facts ? JSON.stringify(facts) : bootText }));
    if (facts) {
      const helperFacts = facts;
      delete helperFacts.helper;
      HELPER_JOBS.forEach(function (jobs) {
        try {
          helperFacts.jobs = jobs;
          const helper = new Worker(new URL(script.dataset.calcHelper || "", location.href),
            { type: "module", name: JSON.stringify(helperFacts) });
          const channel = new MessageChannel();
          helper.onerror = function () { worker.postMessage({ calcBootHelperGone: true }); };
          helper.postMessage({ port: channel.port1 }, [channel.port1]);
          worker.postMessage({ calcBootHelper: channel.port2 }, [channel.port2]);
        } catch (error) {
          worker.postMessage({ calcBootHelperGone: true });
        }
      });
    }
    // Kept until calc-runtime.js listens (it replays them in order).
    worker.startedAt = performance.now();
    worker.early = [];
    worker.onmessage = function (event) { worker.early.push(event.data); };
    worker.onerror = function (event) { worker.failed = (event && event.message) || "worker error"; };
    page.calcEarlyWorker = worker;
  } catch (error) {
    return;
  }

  // Material's search worker, held back (combination 5). `held` lists the starts of the workers held so far;
  // null once released.
  const RealWorker = page.Worker;
  /** @type {Array<() => void> | null} */
  let held = [];
  function release() {
    const starts = held;
    held = null;
    page.calcSearchRelease = function () {};
    if (starts) starts.forEach(function (start) { start(); });
  }
  page.calcSearchRelease = release;
  setTimeout(release, RELEASE_AFTER_MS);
  document.addEventListener("focusin", function (event) {
    const target = /** @type {Element | null} */ (event.target);
    if (target && target.matches && target.matches(SEARCH_INPUT)) release();
  });

  /**
   * The Worker constructor Material's bundle finds: a stand-in for the search worker until the release.
   * Material only posts to its worker, listens for "message" and may terminate it: an EventTarget with
   * postMessage and terminate is enough. Messages posted before the release are kept and posted, in order,
   * to the real worker when it starts; one terminated before then is never started.
   * @param {string | URL} url
   * @param {WorkerOptions} [options]
   */
  function HeldWorker(url, options) {
    if (!held || !SEARCH_WORKER.test(String(url))) return new RealWorker(url, options);
    const standIn = /** @type {EventTarget & {postMessage: (...args: any[]) => void, terminate: () => void}} */ (
      new EventTarget());
    /** @type {Worker | null} */
    let real = null;
    /** @type {any[][] | null} */
    let posted = [];
    let terminated = false;
    held.push(function () {
      if (terminated) return;
      const started = new RealWorker(url, options);
      real = started;
      started.onmessage = function (event) { standIn.dispatchEvent(new MessageEvent("message", { data: event.data })); };
      started.onerror = function () { standIn.dispatchEvent(new Event("error")); };
      (posted || []).forEach(function (args) { started.postMessage.apply(started, /** @type {any} */ (args)); });
      posted = null;
    });
    standIn.postMessage = function () {
      if (real) real.postMessage.apply(real, /** @type {any} */ (arguments));
      else if (posted) posted.push(Array.prototype.slice.call(arguments));
    };
    standIn.terminate = function () {
      terminated = true;
      if (real) real.terminate();
    };
    return standIn;
  }
  HeldWorker.prototype = RealWorker.prototype;
  page.Worker = /** @type {typeof Worker} */ (/** @type {unknown} */ (HeldWorker));
})();
