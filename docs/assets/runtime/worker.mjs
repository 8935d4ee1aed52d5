// The lesson's Python: one module Web Worker running Pyodide, started once per visit.
//
// It loads Pyodide from the site's own copy (assets/vendor/pyodide, never a CDN),
// unpacks the `calc` zip named in manifest.json, and answers each message (a JSON
// string with a call id) with calc.widgets.runtime.handle(), which dispatches only
// to the allow-listed widget functions. It posts status messages while it boots.

import { loadPyodide } from "../vendor/pyodide/pyodide.mjs";

const assets = new URL("../", import.meta.url);
const LIB_DIR = "/home/pyodide/lib";

// Offline hand-over: the boot's fetches (Pyodide's too) are kept, so that once the page is idle
// calc-offline.js can have them put in the cache the service worker's precache reuses, instead
// of that precache downloading the 7 MB snapshot and the 10 MB wasm a second time.
const HANDOVER_CACHE = "calc-handover"; // sw.js and calc-offline.js use the same name
const bootResponses = new Map();
const networkFetch = self.fetch.bind(self);
self.fetch = async (input, init) => {
  const response = await networkFetch(input, init);
  if (response.ok && response.type === "basic") bootResponses.set(response.url, response.clone());
  return response;
};
const HANDOVER_WAIT_MS = 120000; // a page that never asks (no service worker) does not keep them all visit
function letGoOfBootResponses() {
  const responses = [...bootResponses];
  bootResponses.clear();
  self.fetch = networkFetch;
  return responses;
}
setTimeout(letGoOfBootResponses, HANDOVER_WAIT_MS);
new BroadcastChannel("calc-offline").onmessage = async (event) => {
  // Handed over, or not wanted (the service worker already serves this page): let go of them either way.
  const responses = letGoOfBootResponses();
  if (event.data !== "hand-over") return;
  try {
    const cache = await caches.open(HANDOVER_CACHE);
    await Promise.all(responses.map(([url, response]) => cache.put(url, response)));
  } finally {
    event.target.postMessage("handed-over"); // even on failure (storage full): the precache then fetches them
  }
};

function status(state, detail, progress) {
  self.postMessage(JSON.stringify({ type: "status", state, detail, progress }));
}

// manifest.json names this build's calc zip and Pyodide snapshot (no-cache: it changes with
// each build; the files it names have content hashes in their names and can be cached).
async function fetchManifest() {
  const response = await fetch(new URL("runtime/manifest.json", assets), { cache: "no-cache" });
  if (!response.ok) throw new Error(`runtime/manifest.json: HTTP ${response.status}`);
  return response.json();
}

async function fetchCalcZip(manifestPromise) {
  const manifest = await manifestPromise;
  const response = await fetch(new URL(`runtime/${manifest.calc_zip}`, assets));
  if (!response.ok) throw new Error(`${manifest.calc_zip}: HTTP ${response.status}`);
  return response.arrayBuffer();
}

// calc's zip written into Pyodide's file system from JavaScript: Python's zipfile would take
// ~0.1-0.3 s here, most of it compiling wasm functions that a restored snapshot has not run
// yet. The zip is the site's own (hooks/vendor.py: no zip64, stored or deflated), and
// anything else is refused, in which case Python's unpacker does it.
async function writeZipToFs(FS, zipBuffer, extractDir) {
  const bytes = new Uint8Array(zipBuffer);
  const view = new DataView(zipBuffer);
  let end = bytes.length - 22; // the end-of-central-directory record, before any comment
  while (end >= 0 && view.getUint32(end, true) !== 0x06054b50) end -= 1;
  if (end < 0) throw new Error("not a zip file");
  const count = view.getUint16(end + 10, true);
  let entry = view.getUint32(end + 16, true);
  const files = [];
  for (let index = 0; index < count; index += 1) {
    if (view.getUint32(entry, true) !== 0x02014b50) throw new Error("bad central directory");
    const method = view.getUint16(entry + 10, true);
    const compressedSize = view.getUint32(entry + 20, true);
    const nameLength = view.getUint16(entry + 28, true);
    const skip = nameLength + view.getUint16(entry + 30, true) + view.getUint16(entry + 32, true);
    const local = view.getUint32(entry + 42, true);
    const name = new TextDecoder().decode(bytes.subarray(entry + 46, entry + 46 + nameLength));
    if (view.getUint32(local, true) !== 0x04034b50 || (method !== 0 && method !== 8)) throw new Error(`cannot read ${name}`);
    if (name.includes("..") || name.startsWith("/")) throw new Error(`unsafe path ${name}`);
    const start = local + 30 + view.getUint16(local + 26, true) + view.getUint16(local + 28, true);
    files.push({ name, method, data: bytes.subarray(start, start + compressedSize) });
    entry += 46 + skip;
  }
  const contents = await Promise.all(files.map(({ method, data }) => method === 0 ? data
    : new Response(new Blob([data]).stream().pipeThrough(new DecompressionStream("deflate-raw"))).arrayBuffer()));
  files.forEach(({ name }, index) => {
    const path = `${extractDir}/${name}`;
    if (name.endsWith("/")) { FS.mkdirTree(path); return; }
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, new Uint8Array(contents[index]));
  });
}

class NoSnapshot extends Error {}

// The interpreter's memory after CPython started and imported calc's widgets, made at build
// (hooks/pyodide_snapshot.mjs): restoring it skips CPython's start-up, most of a cold boot.
// Stored gzip-compressed; a server that sends it with Content-Encoding: gzip has already
// unpacked it, hence the look at the first two bytes.
async function fetchSnapshot(manifestPromise) {
  const manifest = await manifestPromise;
  if (!manifest.pyodide_snapshot) throw new NoSnapshot("this build has no Pyodide snapshot");
  const response = await fetch(new URL(`runtime/${manifest.pyodide_snapshot}`, assets));
  if (!response.ok) throw new Error(`${manifest.pyodide_snapshot}: HTTP ${response.status}`);
  const bytes = new Uint8Array(await response.arrayBuffer());
  if (bytes[0] !== 0x1f || bytes[1] !== 0x8b) return checkedSize(bytes, manifest);
  const unpacked = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
  return checkedSize(new Uint8Array(await new Response(unpacked).arrayBuffer()), manifest);
}

// Pyodide hangs on a memory image that does not fit its module, so a wrong size stops here.
function checkedSize(memory, manifest) {
  if (memory.length !== manifest.pyodide_snapshot_bytes) {
    throw new Error(`${manifest.pyodide_snapshot}: ${memory.length} bytes, expected ${manifest.pyodide_snapshot_bytes}`);
  }
  return memory;
}

async function boot() {
  const started = performance.now();
  const phases = {}; // ms since the worker started, when each step ended (the site bench reads them)
  const mark = (name) => { phases[name] = Math.round(performance.now() - started); };
  status("loading", "Loading the Python runtime (Pyodide)", 0.1);
  const manifest = fetchManifest();
  const calcZip = fetchCalcZip(manifest);
  calcZip.catch(() => {}); // its error is reported where it is awaited
  const options = {
    indexURL: new URL("vendor/pyodide/", assets).href,
    packages: [],
    stdout: () => {},
    stderr: (line) => console.warn("[calc]", line),
  };
  const snapshot = fetchSnapshot(manifest).then((bytes) => { mark("snapshot_fetched"); return bytes; });
  snapshot.catch(() => {}); // handled where loadPyodide awaits it
  let pyodide;
  let snapshotUsed = false;
  let snapshotProblem = null;
  try {
    pyodide = await loadPyodide({ ...options, _loadSnapshot: snapshot });
    snapshotUsed = true;
  } catch (error) {
    // No snapshot, or it failed to load or restore: start CPython the ordinary way.
    snapshotProblem = error && error.message ? error.message : String(error);
    if (!(error instanceof NoSnapshot)) console.warn("[calc] Pyodide snapshot not used:", snapshotProblem);
    pyodide = await loadPyodide(options);
  }
  mark("pyodide");
  status("loading", "Loading calc", 0.7);
  const calcZipBuffer = await calcZip;
  try {
    await writeZipToFs(pyodide.FS, calcZipBuffer, LIB_DIR);
  } catch (error) {
    console.warn("[calc] unpacking calc with Python:", error && error.message ? error.message : error);
    pyodide.unpackArchive(calcZipBuffer, "zip", { extractDir: LIB_DIR });
  }
  mark("calc_unpacked");
  pyodide.runPython(`import sys\nif ${JSON.stringify(LIB_DIR)} not in sys.path: sys.path.insert(0, ${JSON.stringify(LIB_DIR)})`);
  // Only the runtime now; each page's widget modules are imported when the page asks ("warm").
  const runtime = pyodide.pyimport("calc.widgets.runtime");
  mark("runtime_imported");
  self.postMessage(JSON.stringify({
    type: "status", state: "ready", progress: 1, phases, snapshot: snapshotUsed, snapshotProblem,
    // When each file the boot fetched arrived (ms since the worker started): the bench's breakdown.
    fetched: performance.getEntriesByType("resource").map((entry) => ({
      name: entry.name.split("/").pop(), start: Math.round(entry.startTime), end: Math.round(entry.responseEnd),
    })),
    detail: `Python ${pyodide.runPython("import sys; sys.version.split()[0]")} (Pyodide ${pyodide.version}) `
      + `ready in ${Math.round(performance.now() - started)} ms`
      + (snapshotUsed ? ", restored from the site's snapshot" : ""),
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
