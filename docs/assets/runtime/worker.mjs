// The lesson's Python: one module Web Worker running Pyodide, started once per visit.
//
// It loads Pyodide from the site's own copy (assets/vendor/pyodide, never a CDN),
// unpacks the `calc` zip named in manifest.json, and answers each message (a JSON
// string with a call id) with calc.widgets.runtime.handle(), which dispatches only
// to the allow-listed widget functions. It posts status messages while it boots.
//
// A cold boot waits for its slowest download and for the CPU work on each file, so everything
// starts at once, before Pyodide's own script is imported: the manifest, then the snapshot and
// calc's zip (each unpacked as its bytes arrive, on this thread), and the wasm, compiled as it
// streams in on the engine's background threads. Left to itself, Pyodide would start compiling
// the wasm only once the whole snapshot is in memory, and unpack calc only after the restore.

const assets = new URL("../", import.meta.url);
const PYODIDE_DIR = new URL("vendor/pyodide/", assets).href;
const WASM_URL = new URL("pyodide.asm.wasm", PYODIDE_DIR).href;
const LIB_DIR = "/home/pyodide/lib";

// The boot's profile for the site bench: when each step ended, in ms since this worker's time
// origin (sent along, so that the page can put them on its own clock: ms since navigation).
const profile = { worker_origin_ms: performance.timeOrigin, marks: { worker_module_run: Math.round(performance.now()) } };
const profileMark = (name) => { profile.marks[name] ??= Math.round(performance.now()); };

// Offline hand-over: the boot's fetches (Pyodide's too) are kept, so that once the page is idle
// calc-offline.js can have them put in the cache the service worker's precache reuses, instead
// of that precache downloading the 7 MB snapshot and the 10 MB wasm a second time.
const HANDOVER_CACHE = "calc-handover"; // sw.js and calc-offline.js use the same name
const bootResponses = new Map();
let keepingBootResponses = true;
const networkFetch = self.fetch.bind(self);
let wasmForPyodide = null; // a copy of the wasm response started below, for Pyodide's own request
self.fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (url === WASM_URL && wasmForPyodide) {
    const copy = wasmForPyodide; // once: a second boot (the ordinary one, after a failed restore) asks again
    wasmForPyodide = null;
    return copy;
  }
  const response = await networkFetch(input, init);
  if (keepingBootResponses && response.ok && response.type === "basic") bootResponses.set(response.url, response.clone());
  return response;
};
const HANDOVER_WAIT_MS = 120000; // a page that never asks (no service worker) does not keep them all visit
function letGoOfBootResponses() {
  const responses = [...bootResponses];
  bootResponses.clear();
  keepingBootResponses = false;
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

// The wasm, compiled while it downloads. Pyodide instantiates it with instantiateStreaming on its
// own request, which gets a copy of this response (no second download) and, below, this module.
const wasmResponse = self.fetch(WASM_URL);
wasmForPyodide = wasmResponse.then((response) => response.clone()); // before the compile reads the body
wasmForPyodide.catch(() => {});
const compiledWasm = wasmResponse.then((response) => {
  if (!response.ok) throw new Error(`pyodide.asm.wasm: HTTP ${response.status}`);
  // compileStreaming needs the wasm MIME type; a server that sends another gets the slower path.
  if ((response.headers.get("Content-Type") || "").split(";")[0].trim() === "application/wasm") {
    return WebAssembly.compileStreaming(response);
  }
  return response.arrayBuffer().then((bytes) => WebAssembly.compile(bytes));
}).then((module) => { profileMark("wasm_compiled"); return module; });
compiledWasm.catch(() => {}); // then Pyodide compiles its own copy
const instantiateStreaming = WebAssembly.instantiateStreaming;
WebAssembly.instantiateStreaming = async (source, imports) => {
  const response = await source;
  if (response.url === WASM_URL) {
    let module = null;
    try {
      module = await compiledWasm;
    } catch (error) {
      console.warn("[calc] early wasm compile failed, Pyodide compiles it:", error && error.message ? error.message : error);
    }
    if (module) {
      if (response.body) response.body.cancel().catch(() => {}); // its bytes are the module's
      const instance = await WebAssembly.instantiate(module, imports);
      profileMark("wasm_instantiated");
      return { module, instance };
    }
  }
  return instantiateStreaming(response, imports);
};


function status(state, detail, progress) {
  self.postMessage(JSON.stringify({ type: "status", state, detail, progress }));
}

// manifest.json names this build's calc zip and Pyodide snapshot (no-cache: it changes with
// each build; the files it names have content hashes in their names and can be cached).
async function fetchManifest() {
  const response = await fetch(new URL("runtime/manifest.json", assets), { cache: "no-cache" });
  if (!response.ok) throw new Error(`runtime/manifest.json: HTTP ${response.status}`);
  const manifest = await response.json();
  profileMark("manifest");
  return manifest;
}

async function fetchCalcZip(manifestPromise) {
  const manifest = await manifestPromise;
  const response = await fetch(new URL(`runtime/${manifest.calc_zip}`, assets));
  if (!response.ok) throw new Error(`${manifest.calc_zip}: HTTP ${response.status}`);
  const zip = await response.arrayBuffer();
  profileMark("calc_zip_fetched");
  return zip;
}

// calc's zip read from JavaScript: Python's zipfile would take ~0.1-0.3 s here, most of it
// compiling wasm functions that a restored snapshot has not run yet. The zip is the site's own
// (hooks/vendor.py: no zip64, stored or deflated), and anything else is refused, in which case
// Python's unpacker does it. Read (and inflated) while Pyodide loads; written once it has.
async function readZip(zipBuffer) {
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
  // One DecompressionStream per file, written to directly: through a Blob's stream each took ~3x longer.
  const contents = await Promise.all(files.map(({ method, data }) => {
    if (method === 0) return data;
    const inflate = new DecompressionStream("deflate-raw");
    const writer = inflate.writable.getWriter();
    writer.write(data).catch(() => {}); // a damaged entry fails the readable side, reported there
    writer.close().catch(() => {});
    return new Response(inflate.readable).arrayBuffer();
  }));
  profileMark("calc_zip_read");
  return files.map(({ name }, index) => ({ name, data: new Uint8Array(contents[index]) }));
}

function writeFilesToFs(FS, files, extractDir) {
  for (const { name, data } of files) {
    const path = `${extractDir}/${name}`;
    if (name.endsWith("/")) { FS.mkdirTree(path); continue; }
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, data);
  }
}

class NoSnapshot extends Error {}

// The interpreter's memory after CPython started and imported calc's widgets, made at build
// (hooks/pyodide_snapshot.mjs): restoring it skips CPython's start-up, most of a cold boot.
// Stored gzip-compressed and inflated as it downloads, straight into a buffer of its size (the
// manifest's); a server that sends it with Content-Encoding: gzip has already unpacked it,
// hence the look at the first two bytes.
async function fetchSnapshot(manifestPromise) {
  const manifest = await manifestPromise;
  if (!manifest.pyodide_snapshot) throw new NoSnapshot("this build has no Pyodide snapshot");
  const name = manifest.pyodide_snapshot;
  const response = await fetch(new URL(`runtime/${name}`, assets));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  profileMark("snapshot_response");
  const reader = response.body.getReader();
  const head = [];
  let headLength = 0;
  while (headLength < 2) {
    const { done, value } = await reader.read();
    if (done) break;
    head.push(value);
    headLength += value.length;
  }
  const headBytes = head.length === 1 ? head[0] : new Uint8Array(head.flatMap((chunk) => [...chunk]));
  const gzipped = headBytes[0] === 0x1f && headBytes[1] === 0x8b;
  const body = new ReadableStream({
    start(controller) { head.forEach((chunk) => controller.enqueue(chunk)); },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) { return reader.cancel(reason); },
  });
  // Pyodide hangs on a memory image that does not fit its module, so a wrong size stops here.
  const memory = new Uint8Array(manifest.pyodide_snapshot_bytes);
  let filled = 0;
  const unpacked = (gzipped ? body.pipeThrough(new DecompressionStream("gzip")) : body).getReader();
  for (;;) {
    const { done, value } = await unpacked.read();
    if (done) break;
    if (filled + value.length > memory.length) {
      unpacked.cancel().catch(() => {});
      throw new Error(`${name}: more than the ${memory.length} bytes expected`);
    }
    memory.set(value, filled);
    filled += value.length;
  }
  if (filled !== memory.length) throw new Error(`${name}: ${filled} bytes, expected ${memory.length}`);
  profileMark("snapshot_unpacked");
  return memory;
}

async function boot() {
  const started = performance.now();
  const phases = {}; // ms since the worker started, when each step ended (the site bench reads them)
  const mark = (name) => { phases[name] = Math.round(performance.now() - started); profileMark(name); };
  status("loading", "Loading the Python runtime (Pyodide)", 0.1);
  const manifest = fetchManifest();
  const calcFiles = fetchCalcZip(manifest).then((zip) => readZip(zip).catch((error) => {
    console.warn("[calc] unpacking calc with Python:", error && error.message ? error.message : error);
    return zip; // the raw zip: Pyodide's unpacker takes it
  }));
  calcFiles.catch(() => {}); // its error is reported where it is awaited
  const snapshot = fetchSnapshot(manifest).then((bytes) => { mark("snapshot_fetched"); return bytes; });
  snapshot.catch(() => {}); // handled where loadPyodide awaits it
  // Pyodide's scripts (1.2 MB of JavaScript to parse) once the manifest is in and the snapshot's
  // request has left: parsing them first held up this thread's reading of the manifest.
  await manifest.catch(() => {});
  const [{ loadPyodide }, { default: createPyodideModule }] = await Promise.all([
    import("../vendor/pyodide/pyodide.mjs"), import("../vendor/pyodide/pyodide.asm.mjs")]);
  profileMark("pyodide_scripts");
  const options = {
    indexURL: PYODIDE_DIR,
    createPyodideModule, // imported above, while the downloads ran
    packages: [],
    stdout: () => {},
    stderr: (line) => console.warn("[calc]", line),
  };
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
  const files = await calcFiles;
  if (files instanceof ArrayBuffer) pyodide.unpackArchive(files, "zip", { extractDir: LIB_DIR });
  else writeFilesToFs(pyodide.FS, files, LIB_DIR);
  mark("calc_unpacked");
  pyodide.runPython(`import sys\nif ${JSON.stringify(LIB_DIR)} not in sys.path: sys.path.insert(0, ${JSON.stringify(LIB_DIR)})`);
  // Only the runtime now; each page's widget modules are imported when the page asks ("warm").
  const runtime = pyodide.pyimport("calc.widgets.runtime");
  mark("runtime_imported");
  self.postMessage(JSON.stringify({
    type: "status", state: "ready", progress: 1, phases, profile, snapshot: snapshotUsed, snapshotProblem,
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
