// @ts-check
// The lesson's Python: one module Web Worker running Pyodide, started once per visit.
//
// It loads Pyodide from the site's own copy (assets/vendor/pyodide, never a CDN),
// unpacks the `calc` zip named in manifest.json, and answers each message (a JSON
// string with a call id) with calc.widgets.runtime.handle(), which dispatches only
// to the allow-listed widget functions. It posts status messages while it boots.
//
// A cold boot waits for its slowest download and for the CPU work on each file, so everything
// starts at once: on a page with the head script, the page's boot helper (boot-inflate-worker.mjs,
// started beside this worker) fetches the snapshot, the wasm and calc's zip and inflates, compiles and
// reads them while this thread parses and starts Pyodide; otherwise this module's first block starts
// them (the snapshot on an inflate thread of its own). Pyodide's standard library and lock file and
// its scripts leave from the first block; the manifest only confirms the names.
// Left to itself, Pyodide would fetch its standard library only once its script had run, start
// compiling the wasm only once the whole snapshot is in memory, and unpack calc only after the restore.

const assets = new URL("../", import.meta.url);
const PYODIDE_DIR = new URL("vendor/pyodide/", assets).href;
const WASM_URL = new URL("pyodide.asm.wasm", PYODIDE_DIR).href;
// Files Pyodide itself fetches while it starts: fetched here from the first block instead, and the
// response handed to Pyodide's own request (see self.fetch below).
const STDLIB_URL = new URL("python_stdlib.zip", PYODIDE_DIR).href;
const LOCK_URL = new URL("pyodide-lock.json", PYODIDE_DIR).href;
const LIB_DIR = "/home/pyodide/lib";

// The boot's profile for the site bench: when each step ended, in ms since this worker's time
// origin (sent along, so that the page can put them on its own clock: ms since navigation).
/** @type {{worker_origin_ms: number, marks: Record<string, number>}} */
const profile = { worker_origin_ms: performance.timeOrigin, marks: { worker_module_run: Math.round(performance.now()) } };
/** @param {string} name */
const profileMark = (name) => { profile.marks[name] ??= Math.round(performance.now()); };

/**
 * The build's runtime files, as the page names them (head.js: BootFacts) and as manifest.json has them.
 * @typedef {{calc_zip: string, pyodide_snapshot: string | null, pyodide_snapshot_bytes: number | null,
 *   helper?: boolean}} BootFacts
 */
/** A file of calc's zip, read (boot-inflate.mjs: readZip). @typedef {{name: string, data: Uint8Array}} ZipFile */

// What the page names: the page's head script (docs/assets/runtime/head.js) starts this worker with the manifest's facts as its name
// (written into each page at build, hooks/vendor.py), so the 7 MB snapshot and calc's zip leave now,
// not a round trip and this module's first tasks later, after manifest.json. null when started
// without them (calc-runtime.js's own start, `mkdocs serve`): then the manifest names them.
/** @returns {BootFacts | null} */
function namedByPage() {
  try {
    const facts = JSON.parse(self.name || "null");
    if (facts && typeof facts.calc_zip === "string") return facts;
  } catch (error) { /* not ours: the manifest names them */ }
  return null;
}
const named = namedByPage();
/** @param {string} name */
const runtimeFile = (name) => new URL(`runtime/${name}`, assets).href;

// The page's boot helpers (boot-inflate-worker.mjs, started by the page's head with the same facts, and
// `helper` in them to say so): they send each of their results (the wasm's module, the snapshot's memory,
// calc's files, each with the bytes fetched) over the ports the page posts here first ({calcBootHelper}).
// fromHelper(job) is the promise of one.
const withHelper = Boolean(named && named.helper);
/** @typedef {{answer: Promise<any>, resolve: (result: any) => void, reject: (error: Error) => void}} HelperAnswer */
/** @type {Map<string, HelperAnswer>} */
const helperAnswers = new Map();
/** @param {string} job @returns {HelperAnswer} */
function helperAnswer(job) {
  if (!helperAnswers.has(job)) {
    const entry = /** @type {HelperAnswer} */ ({});
    entry.answer = new Promise((resolve, reject) => Object.assign(entry, { resolve, reject }));
    entry.answer.catch(() => {}); // reported where awaited
    if (helperGone) entry.reject(helperGone);
    helperAnswers.set(job, entry);
  }
  return helperAnswers.get(job);
}
/** @param {string} job */
const fromHelper = (job) => helperAnswer(job).answer;
// It could not start (the page says so): what it was to send fails, and each is then done here.
class HelperGone extends Error {}
/** @type {HelperGone | null} */
let helperGone = null;
function helperFailed() {
  helperGone = new HelperGone("the boot helper did not start");
  for (const entry of helperAnswers.values()) entry.reject(helperGone);
}
/** @param {MessagePort} port */
function listenToHelper(port) {
  port.onmessage = ({ data }) => {
    const { origin, entries } = data.fetched;
    for (const { name, start, end } of entries) {
      if (!helperFetched.some((known) => known.name === name)) {
        helperFetched.push({ name, start: onOurClock(origin, start), end: onOurClock(origin, end) });
      }
    }
    const entry = helperAnswer(data.job);
    if (data.error) entry.reject(new Error(data.error));
    else entry.resolve(data.result);
  };
}
// A time on another thread's clock, on this worker's (ms since its time origin).
/** @param {number} origin @param {number} at */
const onOurClock = (origin, at) => Math.round(origin + at - performance.timeOrigin);
// When the helpers' files arrived (each result says which have so far): the bench's breakdown.
/** @type {Array<{name: string, start: number, end: number}>} */
const helperFetched = [];

// Offline hand-over: the boot's fetches (Pyodide's too) are kept, so that once the page is idle
// calc-offline.js can have them put in the cache the service worker's precache reuses, instead
// of that precache downloading the 7 MB snapshot and the 10 MB wasm a second time.
const HANDOVER_CACHE = "calc-handover"; // sw.js and calc-offline.js use the same name
/** @type {Map<string, Response>} */
const bootResponses = new Map();
let keepingBootResponses = true;
const networkFetch = self.fetch.bind(self);
/** @type {Promise<Response> | null} */
let wasmForPyodide = null; // a copy of the wasm response started below, for Pyodide's own request
/** @type {Map<string, Promise<Response>>} */
const fetchedAhead = new Map(); // url -> the response of a fetch started below, for Pyodide's own request of it
self.fetch = async (input, init) => {
  const url = input instanceof Request ? input.url : String(input);
  if (url === WASM_URL && wasmForPyodide) {
    const copy = wasmForPyodide; // once: a second boot (the ordinary one, after a failed restore) asks again
    wasmForPyodide = null;
    return copy;
  }
  const ahead = fetchedAhead.get(url);
  if (ahead) {
    fetchedAhead.delete(url); // once, like the wasm
    return ahead;
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
const offlineChannel = new BroadcastChannel("calc-offline");
offlineChannel.onmessage = async (event) => {
  // Handed over, or not wanted (the service worker already serves this page): let go of them either way.
  const responses = letGoOfBootResponses();
  if (event.data !== "hand-over") return;
  try {
    const cache = await caches.open(HANDOVER_CACHE);
    await Promise.all(responses.map(([url, response]) => cache.put(url, response)));
  } finally {
    offlineChannel.postMessage("handed-over"); // even on failure (storage full): the precache then fetches them
  }
};

// The wasm, compiled while it downloads, by the helper or here. Pyodide instantiates it with
// instantiateStreaming on its own request, which gets a copy of this response (no second download),
// or with the helper a stand-in, and (below) this module.
const wasmStandIns = new WeakSet();
/** @type {Promise<WebAssembly.Module>} */
let compiledWasm;
if (withHelper) {
  compiledWasm = fromHelper("wasm").then(({ module, bytes, headers, timing }) => {
    if (keepingBootResponses) bootResponses.set(WASM_URL, new Response(bytes, { status: 200, headers }));
    profile.marks.wasm_compiled = onOurClock(timing.origin, timing.compiled);
    return module;
  });
  // The network only if the helper failed (then Pyodide compiles it itself).
  wasmForPyodide = compiledWasm.then(() => {
    const standIn = new Response(new Uint8Array(0), { headers: { "Content-Type": "application/wasm" } });
    wasmStandIns.add(standIn);
    return standIn;
  }, () => networkFetch(WASM_URL));
} else {
  const wasmResponse = self.fetch(WASM_URL);
  wasmForPyodide = wasmResponse.then((response) => response.clone()); // before the compile reads the body
  compiledWasm = wasmResponse.then((response) => {
    if (!response.ok) throw new Error(`pyodide.asm.wasm: HTTP ${response.status}`);
    // compileStreaming needs the wasm MIME type; a server that sends another gets the slower path.
    if ((response.headers.get("Content-Type") || "").split(";")[0].trim() === "application/wasm") {
      return WebAssembly.compileStreaming(response);
    }
    return response.arrayBuffer().then((bytes) => WebAssembly.compile(bytes));
  }).then((module) => { profileMark("wasm_compiled"); return module; });
}
wasmForPyodide.catch(() => {});
compiledWasm.catch(() => {}); // then Pyodide compiles its own copy
for (const url of [STDLIB_URL, LOCK_URL]) {
  const response = self.fetch(url);
  response.catch(() => {}); // Pyodide's own request gets the same failure
  fetchedAhead.set(url, response);
}

// calc's zip: the helper reads it; without one it leaves now, for this module's inflate thread.
const calcZipAhead = named && !withHelper ? self.fetch(runtimeFile(named.calc_zip)) : null;
if (calcZipAhead) calcZipAhead.catch(() => {}); // reported where awaited (see fetchCalcZip)
const instantiateStreaming = WebAssembly.instantiateStreaming;
WebAssembly.instantiateStreaming = async (source, imports) => {
  profileMark("wasm_instantiate_called");
  const response = await source;
  if (response.url === WASM_URL || wasmStandIns.has(response)) {
    /** @type {WebAssembly.Module | null} */
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


/** @param {"loading" | "ready" | "error"} state @param {string} detail @param {number} [progress] */
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

// calc's files (or, when they could not be read in JavaScript, its zip): the helper's when the manifest
// names the page's zip, read here otherwise.
/**
 * @param {Promise<BootFacts>} manifestPromise
 * @returns {Promise<ZipFile[] | ArrayBuffer>}
 */
async function calcFilesFromHelper(manifestPromise) {
  const manifest = await manifestPromise;
  if (named.calc_zip !== manifest.calc_zip) return readCalcZip(fetchCalcZip(manifestPromise));
  try {
    const { files, zip, headers } = await fromHelper("calc");
    if (keepingBootResponses) bootResponses.set(runtimeFile(named.calc_zip), new Response(zip, { status: 200, headers }));
    profileMark("calc_zip_read");
    return files;
  } catch (error) {
    console.warn("[calc] the boot helper did not read calc's zip:", error && error.message ? error.message : error);
    return readCalcZip(fetchCalcZip(manifestPromise));
  }
}

/** @param {Promise<ArrayBuffer>} zipPromise @returns {Promise<ZipFile[] | ArrayBuffer>} */
function readCalcZip(zipPromise) {
  return zipPromise.then((zip) => readZip(zip).catch((error) => {
    console.warn("[calc] unpacking calc with Python:", error && error.message ? error.message : error);
    return zip; // the raw zip: Pyodide's unpacker takes it
  }));
}

/** @param {Promise<BootFacts>} manifestPromise @returns {Promise<ArrayBuffer>} */
async function fetchCalcZip(manifestPromise) {
  const manifest = await manifestPromise;
  const response = await (calcZipAhead && named.calc_zip === manifest.calc_zip ? calcZipAhead : fetch(runtimeFile(manifest.calc_zip)));
  if (!response.ok) throw new Error(`${manifest.calc_zip}: HTTP ${response.status}`);
  const zip = await response.arrayBuffer();
  profileMark("calc_zip_fetched");
  return zip;
}

// The inflations run on a thread of their own (boot-inflate-worker.mjs): this one meanwhile parses
// Pyodide's 1.2 MB of scripts, instantiates the wasm and restores the snapshot. Where a worker
// cannot start one, or cannot hand it a stream, this thread does them (boot-inflate.mjs).
/** @type {Worker | null} */
let inflater = null;
/** @type {Map<number, {resolve: (result: any) => void, reject: (error: Error) => void}>} */
const inflations = new Map();
let nextInflation = 1;
if (!withHelper) try {
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
/**
 * @param {{task: "zip", zip: ArrayBuffer} | {task: "snapshot", url: string, size: number, name: string}} job
 * @param {Transferable[]} [transfer]
 * @returns {Promise<any> | null}
 */
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

/** @param {ArrayBuffer} zip @returns {Promise<ZipFile[]>} */
async function readZip(zip) {
  const files = await (inflateElsewhere({ task: "zip", zip }) || inflateHere().then((here) => here.readZip(zip)));
  profileMark("calc_zip_read");
  return files;
}

/**
 * @param {import("pyodide").PyodideAPI["FS"]} FS
 * @param {ZipFile[]} files
 * @param {string} extractDir
 */
function writeFilesToFs(FS, files, extractDir) {
  for (const { name, data } of files) {
    const path = `${extractDir}/${name}`;
    if (name.endsWith("/")) { FS.mkdirTree(path); continue; }
    FS.mkdirTree(path.slice(0, path.lastIndexOf("/")));
    FS.writeFile(path, data);
  }
}

class NoSnapshot extends Error {}

// The resource timings of this thread's downloads (getEntriesByType's type is the general PerformanceEntry).
const resourceTimings = () => /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByType("resource"));

// The interpreter's memory after CPython started and imported calc's widgets, made at build
// (hooks/pyodide_snapshot.mjs): restoring it skips CPython's start-up, most of a cold boot.
// Stored gzip-compressed; fetched into `memory` (of the size the manifest gives), inflated as it
// downloads.
// The helper or the inflate thread fetches it itself (boot-inflate-worker.mjs): its download and
// inflation do not wait for this thread, busy meanwhile with Pyodide's scripts and module. Resolves to
// the memory filled: `memory` itself, or the other thread's buffer (moved here, not copied).
/** @param {string} name @param {Uint8Array} memory @returns {Promise<Uint8Array>} */
async function fillSnapshot(name, memory) {
  const url = runtimeFile(name);
  const elsewhere = withHelper && named.pyodide_snapshot === name
    ? fromHelper("snapshot").catch(/** @returns {null} */ (error) => { if (error instanceof HelperGone) return null; throw error; })
    : inflateElsewhere({ task: "snapshot", url, size: memory.length, name });
  const answer = elsewhere && await elsewhere;
  if (answer) {
    const { memory: filled, compressed, headers, timing } = answer;
    if (filled.length !== memory.length) throw new Error(`${name}: ${filled.length} bytes, expected ${memory.length}`);
    // Kept for the offline hand-over, as self.fetch keeps the other boot files.
    if (keepingBootResponses) bootResponses.set(url, new Response(compressed, { status: 200, headers }));
    for (const step of /** @type {const} */ (["response", "unpacked"])) {
      profile.marks[`snapshot_${step}`] = Math.round(timing.origin + timing[step] - performance.timeOrigin);
    }
    return filled;
  }
  const response = await fetch(url);
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  profileMark("snapshot_response");
  await (await inflateHere()).inflateSnapshot(response.body, memory, name);
  profileMark("snapshot_unpacked");
  return memory;
}

// Pyodide sizes the module's memory by the snapshot (INITIAL_MEMORY), but its wasm starts at a fixed
// memory (30 MiB in 314.0.7) whatever it is told: a snapshot taken after Python's heap grew past that
// ("offset is out of bounds" in restoreSnapshot) needs the memory grown to the heap it holds first.
// Pyodide's snapshot is a header (its length in the second word) and then the heap.
/**
 * @param {{HEAP8: {length: number}, growMemory: (bytes: number) => void}} module
 * @param {Uint8Array} snapshot
 */
function growToSnapshot(module, snapshot) {
  const headerBytes = new Uint32Array(snapshot.buffer, snapshot.byteOffset, 2)[1];
  const heapBytes = snapshot.length - headerBytes;
  if (module.HEAP8.length < heapBytes) module.growMemory(heapBytes);
}

// The snapshot the manifest names, with its size: the page's names when the manifest says the same (a
// page from an older build, kept in a cache, names files the server may no longer have).
/**
 * @param {Promise<BootFacts>} manifestPromise
 * @returns {Promise<{name: string, size: number, same: boolean} | null>}
 */
async function snapshotToRestore(manifestPromise) {
  const manifest = await manifestPromise;
  if (!manifest.pyodide_snapshot) return null;
  const same = named && named.pyodide_snapshot === manifest.pyodide_snapshot
    && named.pyodide_snapshot_bytes === manifest.pyodide_snapshot_bytes;
  return { name: manifest.pyodide_snapshot, size: manifest.pyodide_snapshot_bytes, same };
}

async function boot() {
  const started = performance.now();
  /** @type {Record<string, number>} */
  const phases = {}; // ms since the worker started, when each step ended (the site bench reads them)
  /** @param {string} name */
  const mark = (name) => { phases[name] = Math.round(performance.now() - started); profileMark(name); };
  status("loading", "Loading the Python runtime (Pyodide)", 0.1);
  const manifest = fetchManifest();
  const calcFiles = withHelper ? calcFilesFromHelper(manifest) : readCalcZip(fetchCalcZip(manifest));
  calcFiles.catch(() => {}); // its error is reported where it is awaited
  // The snapshot to restore: the page's, at once (the manifest confirms it before the restore), or
  // the manifest's once it is in. A manifest that failed fails the boot below, at calc's zip.
  const fromPage = named && named.pyodide_snapshot && named.pyodide_snapshot_bytes
    ? { name: named.pyodide_snapshot, size: named.pyodide_snapshot_bytes } : null;
  const snapshot = fromPage || await snapshotToRestore(manifest).catch(/** @returns {null} */ () => null);
  // Pyodide is handed the snapshot's buffer at once, to size the wasm memory by, and starts its
  // module (script, wasm instance, standard library) while the buffer is filled; the module is
  // handed back only once it is full, before Pyodide restores from it.
  // (Zeros the system hands out as they are touched: when another thread fills the memory, its buffer is
  // restored instead, see restoreSnapshot below, and this one is never written.)
  const memory = snapshot ? new Uint8Array(snapshot.size) : null;
  const snapshotFilled = memory ? fillSnapshot(snapshot.name, memory).then(async (filled) => {
    if (fromPage) { // the page's names: restore only what the manifest names too
      const confirmed = await snapshotToRestore(manifest);
      if (!confirmed || !confirmed.same) throw new Error("the page names another snapshot than the manifest");
    }
    mark("snapshot_fetched");
    return filled;
  }) : null;
  if (snapshotFilled) snapshotFilled.catch(() => {}); // reported where the module waits for it
  // Pyodide's scripts (1.2 MB of JavaScript to parse on this thread) meanwhile.
  const [{ loadPyodide }, { default: createPyodideModule }] = await Promise.all([
    import("../vendor/pyodide/pyodide.mjs"), import("../vendor/pyodide/pyodide.asm.mjs")]);
  profileMark("pyodide_scripts");
  const options = {
    indexURL: PYODIDE_DIR,
    createPyodideModule, // imported above, while the downloads ran
    packages: /** @type {string[]} */ ([]),
    stdout: () => {},
    stderr: (/** @type {string} */ line) => console.warn("[calc]", line),
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
        const filled = await snapshotFilled; // a snapshot that failed fails this boot: the ordinary one follows
        // growMemory is Emscripten's export on every Pyodide module, left out of Pyodide's own types.
        growToSnapshot(/** @type {typeof module & {growMemory: (bytes: number) => void}} */ (module), filled);
        if (filled !== memory) { // restore the buffer filled, not the one Pyodide was handed to size the memory by
          const restore = module.API.restoreSnapshot;
          module.API.restoreSnapshot = () => restore(filled);
        }
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
    fetched: [...resourceTimings().map((entry) => ({
      name: entry.name.split("/").pop(), start: Math.round(entry.startTime), end: Math.round(entry.responseEnd),
    })), ...helperFetched],
    detail: `Python ${pyodide.runPython("import sys; sys.version.split()[0]")} (Pyodide ${pyodide.version}) `
      + `ready in ${Math.round(performance.now() - started)} ms`
      + (snapshotUsed ? ", restored from the site's snapshot" : ""),
  }));
  return runtime.handle;
}

const handlerReady = boot().catch(/** @returns {null} */ (error) => {
  status("error", `The Python runtime failed to start: ${error && error.message ? error.message : error}`);
  return null;
});

self.onmessage = async (event) => {
  if (event.data && typeof event.data === "object") { // the page's, about its boot helper
    if (event.data.calcBootHelper) listenToHelper(event.data.calcBootHelper);
    if (event.data.calcBootHelperGone) helperFailed();
    return;
  }
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
