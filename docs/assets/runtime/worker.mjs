// The lesson's Python: one module Web Worker running Pyodide, started once per visit.
//
// It loads Pyodide from the site's own copy (assets/vendor/pyodide, never a CDN),
// unpacks the `calc` zip named in manifest.json, and answers each message (a JSON
// string with a call id) with calc.widgets.runtime.handle(), which dispatches only
// to the allow-listed widget functions. It posts status messages while it boots.

import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

const assets = new URL("../", import.meta.url);
const LIB_DIR = "/home/pyodide/lib";

function status(state, detail, progress) {
  self.postMessage(JSON.stringify({ type: "status", state, detail, progress }));
}

// calc's zip, named by manifest.json (no-cache: it names this build's zip), fetched while
// Pyodide itself loads and compiles.
async function fetchCalcZip() {
  const manifestResponse = await fetch(new URL("runtime/manifest.json", assets), { cache: "no-cache" });
  if (!manifestResponse.ok) throw new Error(`runtime/manifest.json: HTTP ${manifestResponse.status}`);
  const manifest = await manifestResponse.json();
  const zipResponse = await fetch(new URL(`runtime/${manifest.calc_zip}`, assets));
  if (!zipResponse.ok) throw new Error(`${manifest.calc_zip}: HTTP ${zipResponse.status}`);
  return zipResponse.arrayBuffer();
}

async function boot() {
  const started = performance.now();
  const phases = {}; // ms since the worker started, when each step ended (the site bench reads them)
  const mark = (name) => { phases[name] = Math.round(performance.now() - started); };
  status("loading", "Loading the Python runtime (Pyodide)", 0.1);
  const calcZip = fetchCalcZip();
  calcZip.catch(() => {}); // its error is reported where it is awaited
  const pyodide = await loadPyodide({
    indexURL: new URL("vendor/pyodide/", assets).href,
    packages: [],
    stdout: () => {},
    stderr: (line) => console.warn("[calc]", line),
  });
  mark("pyodide");
  status("loading", "Loading calc", 0.7);
  pyodide.unpackArchive(await calcZip, "zip", { extractDir: LIB_DIR });
  mark("calc_unpacked");
  pyodide.runPython(`import sys\nif ${JSON.stringify(LIB_DIR)} not in sys.path: sys.path.insert(0, ${JSON.stringify(LIB_DIR)})`);
  // Only the runtime now; each page's widget modules are imported when the page asks ("warm").
  const runtime = pyodide.pyimport("calc.widgets.runtime");
  mark("runtime_imported");
  self.postMessage(JSON.stringify({
    type: "status", state: "ready", progress: 1, phases,
    // When each file the boot fetched arrived (ms since the worker started): the bench's breakdown.
    fetched: performance.getEntriesByType("resource").map((entry) => ({
      name: entry.name.split("/").pop(), start: Math.round(entry.startTime), end: Math.round(entry.responseEnd),
    })),
    detail: `Python ${pyodide.version} ready in ${Math.round(performance.now() - started)} ms`,
  }));
  return runtime.handle;
}

const handlerReady = boot().catch((error) => {
  status("error", `The Python runtime failed to start: ${error && error.message ? error.message : error}`);
  return null;
});

self.onmessage = async (event) => {
  const handle = await handlerReady;
  if (!handle) return;
  let answer;
  try {
    answer = handle(event.data);
  } catch (error) {
    let id = null;
    try { id = JSON.parse(event.data).id; } catch (_) { /* keep null */ }
    answer = JSON.stringify({ id, ok: false, error: { kind: "internal", field: null, message: String(error) } });
  }
  self.postMessage(answer);
};
