// Offline after the first visit, without slowing the first one down.
//
// The service worker (sw.js at the site's root) caches the whole site for offline reading. Its
// precache must not compete with the page's own boot, nor download again what the boot already
// downloaded, so this script:
//   1. waits until the page has loaded, its Python runtime is ready (or the page has none) and the
//      main thread is idle;
//   2. on a visit the service worker does not serve yet, asks the Python worker (worker.mjs) to hand
//      over the files its boot fetched (Pyodide, the snapshot, the calc zip), which it puts in the
//      cache the service worker copies from; on other visits tells it to let go of them;
//   3. registers the service worker and asks it to precache; sets data-offline="ready" on <html>
//      (and window.calcOffline) once every file is cached.
// A classic script, loaded after calc-runtime.js; nothing here runs from file://.
(function () {
  "use strict";

  var root = document.documentElement;
  var script = document.currentScript;
  var SW_URL = new URL("../../sw.js", script ? script.src : location.href).href; // the site's root: scope is the site
  var CHANNEL = "calc-offline"; // worker.mjs listens on it
  var HANDOVER_TIMEOUT_MS = 10000; // a worker that never answers (none on this page, or it died) is not waited for
  var IDLE_TIMEOUT_MS = 3000; // requestIdleCallback's deadline: a page that is never idle still gets its precache

  var offline = { state: "waiting", report: null, error: null, startedAt: null, doneAt: null };
  window.calcOffline = offline;

  function mark(state) {
    offline.state = state;
    root.dataset.offline = state;
  }

  function tellWorker(message) {
    var channel;
    try {
      channel = new BroadcastChannel(CHANNEL);
    } catch (error) { // no BroadcastChannel, or an origin that may not have one
      return Promise.resolve(false);
    }
    if (message !== "hand-over") {
      channel.postMessage(message);
      channel.close();
      return Promise.resolve(false);
    }
    return new Promise(function (resolve) {
      var timer = setTimeout(function () { channel.close(); resolve(false); }, HANDOVER_TIMEOUT_MS);
      channel.onmessage = function (event) {
        if (event.data !== "handed-over") return;
        clearTimeout(timer);
        channel.close();
        resolve(true);
      };
      channel.postMessage(message);
    });
  }

  // The site's Python worker exists only on pages with widgets; "loading" is its boot (or a restart).
  function whenRuntimeSettled(callback) {
    if (root.dataset.pyodide !== "loading") { callback(); return; }
    var observer = new MutationObserver(function () {
      if (root.dataset.pyodide === "loading") return;
      observer.disconnect();
      callback();
    });
    observer.observe(root, { attributes: true, attributeFilter: ["data-pyodide"] });
  }

  function whenIdle(callback) {
    if (typeof requestIdleCallback === "function") requestIdleCallback(callback, { timeout: IDLE_TIMEOUT_MS });
    else setTimeout(callback, 200);
  }

  function askToPrecache(serviceWorker) {
    return new Promise(function (resolve, reject) {
      var channel = new MessageChannel();
      channel.port1.onmessage = function (event) {
        if (event.data && event.data.ok) resolve(event.data.report);
        else reject(new Error(event.data ? event.data.error : "no answer"));
      };
      serviceWorker.postMessage({ type: "precache" }, [channel.port2]);
    });
  }

  function start() {
    offline.startedAt = performance.now();
    mark("precaching");
    var container = navigator.serviceWorker;
    // Served by the service worker already: the boot's files came from its cache (or went into it).
    var handOver = !container.controller && root.dataset.pyodide === "ready";
    (handOver ? tellWorker("hand-over") : tellWorker("drop"))
      .then(function () { return container.register(SW_URL); })
      .then(function () { return container.ready; })
      .then(function (registration) { return askToPrecache(registration.active); })
      .then(function (report) {
        offline.report = report;
        offline.doneAt = performance.now();
        mark("ready");
      })
      .catch(function (error) {
        offline.error = error && error.message ? error.message : String(error);
        mark("unavailable");
        console.warn("[calc] offline cache unavailable:", offline.error);
      });
  }

  if (!("serviceWorker" in navigator) || !/^https?:$/.test(location.protocol)) {
    tellWorker("drop");
    mark("unavailable");
    return;
  }
  function afterLoad() {
    whenIdle(function () { whenRuntimeSettled(function () { whenIdle(start); }); });
  }
  if (document.readyState === "complete") afterLoad();
  else window.addEventListener("load", afterLoad, { once: true });
})();
