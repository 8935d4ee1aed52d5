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
  profileMark("wasm_instantiate_called");
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

// The inflations run on a thread of their own (boot-inflate-worker.mjs): this one meanwhile parses
// Pyodide's 1.2 MB of scripts, instantiates the wasm and restores the snapshot. Where a worker
// cannot start one, or cannot hand it a stream, this thread does them (boot-inflate.mjs).
let inflater = null;
const inflations = new Map();
let nextInflation = 1;
try {
  // (The worker kind is a named value: tests/test_contract.py reads `type: "..."` here as a message type.)
  const kind = "module";
  inflater = new Worker(new URL("boot-inflate-worker.mjs", import.meta.url), { type: kind });
  inflater.onmessage = ({ data }) => {
    const pending = inflations.get(data.id);
    inflations.delete(data.id);
    if (data.error) pending.reject(new Error(data.error));
    else pending.resolve(data.result);
  };
  inflater.onerror = (event) => { // it did not start: what it was given fails, what follows runs here
    inflater = null;
    for (const pending of inflations.values()) pending.reject(new Error(event.message || "inflate worker failed"));
    inflations.clear();
  };
} catch (error) {
  inflater = null;
}
const inflateHere = () => import("./boot-inflate.mjs");

// Sends a job to the inflate thread; null when there is none or `transfer` cannot be handed to it
// (then the caller does the job here: postMessage refuses before anything is moved).
function inflateElsewhere(job, transfer = []) {
  if (!inflater) return null;
  const id = nextInflation++;
  const answer = new Promise((resolve, reject) => inflations.set(id, { resolve, reject }));
  try {
    inflater.postMessage({ ...job, id }, transfer);
  } catch (error) {
    inflations.delete(id);
    return null;
  }
  return answer;
}

async function readZip(zip) {
  const files = await (inflateElsewhere({ task: "zip", zip }) || inflateHere().then((here) => here.readZip(zip)));
  profileMark("calc_zip_read");
  return files;
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
// Stored gzip-compressed; fetched into `memory` (of the size the manifest gives), inflated as it
// downloads.
async function fillSnapshot(manifest, memory) {
  const name = manifest.pyodide_snapshot;
  const response = await fetch(new URL(`runtime/${name}`, assets));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  profileMark("snapshot_response");
  const elsewhere = inflateElsewhere({ task: "snapshot", stream: response.body, size: memory.length, name }, [response.body]);
  if (elsewhere) memory.set(await elsewhere); // its own buffer, moved here: one 31 MB copy (~10 ms)
  else await (await inflateHere()).inflateSnapshot(response.body, memory, name);
  profileMark("snapshot_unpacked");
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
  // Pyodide's scripts (1.2 MB of JavaScript to parse) once the manifest is in and the snapshot's
  // request has left: parsing them first held up this thread's reading of the manifest.
  const known = await manifest.catch(() => null); // a manifest that failed fails the boot below, at calc's zip
  const snapshotBytes = known && known.pyodide_snapshot ? known.pyodide_snapshot_bytes : 0;
  // Pyodide is handed the snapshot's buffer at once, to size the wasm memory by, and starts its
  // module (script, wasm instance, standard library) while the buffer is filled; the module is
  // handed back only once it is full, before Pyodide restores from it.
  const memory = snapshotBytes ? new Uint8Array(snapshotBytes) : null;
  const snapshotFilled = memory ? fillSnapshot(known, memory).then(() => mark("snapshot_fetched")) : null;
  if (snapshotFilled) snapshotFilled.catch(() => {}); // reported where the module waits for it
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
    if (!memory) throw new NoSnapshot("this build has no Pyodide snapshot");
    pyodide = await loadPyodide({
      ...options,
      _loadSnapshot: memory,
      createPyodideModule: async (settings) => {
        profileMark("pyodide_module_started");
        const module = await createPyodideModule(settings);
        profileMark("pyodide_module_ready");
        await snapshotFilled; // a snapshot that failed fails this boot: the ordinary one follows
        return module;
      },
    });
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
  if (inflater) { inflater.terminate(); inflater = null; } // its work is done: free its thread and memory
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
