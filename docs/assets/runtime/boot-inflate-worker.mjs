// @ts-check
// A thread for the boot's downloads and inflations (boot-inflate.mjs), beside the Python worker's.
//
// Two ways to start:
//   - by the page's head script (head.js), with the build's runtime files as its name (the same
//     facts the Python worker gets), at the same moment as the Python worker: it fetches the snapshot,
//     the wasm and calc's zip at once, inflates the snapshot, compiles the wasm as it streams in and
//     reads the zip, and sends each result to the Python worker over the MessageChannel port the page
//     hands it ({port}). That thread meanwhile only parses and starts Pyodide: its own fetches of these
//     files, and the work of each chunk of the 10 MB wasm stream, left late and waited for that work.
//   - by worker.mjs (no facts in its name, a page without the head script, a restarted worker): each
//     request {id, task: "snapshot" | "zip", ...} is answered {id, result} or {id, error}.
// Buffers are transferred, not copied; a compiled WebAssembly.Module is shared, not copied.
import { inflateSnapshot, readZip } from "./boot-inflate.mjs";

const assets = new URL("../", import.meta.url);
const WASM_URL = new URL("vendor/pyodide/pyodide.asm.wasm", assets).href;
/** @param {string} name */
const runtimeFile = (name) => new URL(`runtime/${name}`, assets).href;
/**
 * What a job sends back: its result, and the buffers moved (not copied) with it.
 * @typedef {{result: object, transfer: Transferable[]}} Answer
 */

// Its headers as sent, less those that described the bytes on the wire (the kept copy is what was unpacked).
/** @param {Response} response @returns {Array<[string, string]>} */
const keptHeaders = (response) => [...response.headers]
  .filter(([key]) => !["content-encoding", "content-length"].includes(key));

// The snapshot: fetched here, not by the Python worker (see above). The compressed bytes go back too,
// for the offline hand-over (worker.mjs).
/**
 * @param {{url: string, size: number, name: string}} job
 * @returns {Promise<Answer>}
 */
async function snapshot({ url, size, name }) {
  const response = await fetch(url, { priority: "high" }); // before the page's images and fonts
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  const responseAt = performance.now();
  const [forMemory, forCache] = response.body.tee();
  const kept = new Response(forCache).arrayBuffer();
  kept.catch(() => {});
  const memory = await inflateSnapshot(forMemory, new Uint8Array(size), name);
  const compressed = await kept;
  const result = { memory, compressed, headers: keptHeaders(response),
    timing: { origin: performance.timeOrigin, response: responseAt, unpacked: performance.now() } };
  return { result, transfer: [memory.buffer, compressed] };
}

// The wasm, compiled while it downloads (on the engine's threads, each chunk handed over from this one),
// and its bytes, kept for the offline hand-over.
/** @returns {Promise<Answer>} */
async function wasm() {
  const response = await fetch(WASM_URL, { priority: "high" });
  if (!response.ok) throw new Error(`pyodide.asm.wasm: HTTP ${response.status}`);
  const bytes = response.clone().arrayBuffer();
  bytes.catch(() => {});
  // compileStreaming needs the wasm MIME type; a server that sends another gets the slower path.
  const streaming = (response.headers.get("Content-Type") || "").split(";")[0].trim() === "application/wasm";
  const module = await (streaming ? WebAssembly.compileStreaming(response)
    : response.arrayBuffer().then((buffer) => WebAssembly.compile(buffer)));
  const kept = await bytes;
  return { result: { module, bytes: kept, headers: keptHeaders(response),
    timing: { origin: performance.timeOrigin, compiled: performance.now() } }, transfer: [kept] };
}

// calc's zip, read into its files; the zip's bytes too, for the offline hand-over.
/** @param {string} name @returns {Promise<Answer>} */
async function calcZip(name) {
  const response = await fetch(runtimeFile(name));
  if (!response.ok) throw new Error(`${name}: HTTP ${response.status}`);
  const zip = await response.arrayBuffer();
  const files = await readZip(zip.slice(0)); // a copy: the zip's own bytes go to the hand-over
  return { result: { files, zip, headers: keptHeaders(response) },
    transfer: [zip, ...files.map(({ data }) => data.buffer)] };
}

// The page's facts, or null (started by worker.mjs).
function facts() {
  try {
    const named = JSON.parse(self.name || "null");
    if (named && typeof named.calc_zip === "string") return named;
  } catch (error) { /* not ours */ }
  return null;
}

const named = facts();
if (named) {
  // Everything leaves now; each answer waits only for the port (the page sends it right after starting us).
  /** @type {(port: MessagePort) => void} */
  let sendTo;
  /** @type {Promise<MessagePort>} */
  const port = new Promise((resolve) => { sendTo = resolve; });
  self.onmessage = ({ data }) => { if (data && data.port) sendTo(data.port); };
  // Each answer carries when this thread's downloads so far arrived, on its clock (the bench's breakdown).
  const fetched = () => ({ origin: performance.timeOrigin,
    entries: /** @type {PerformanceResourceTiming[]} */ (performance.getEntriesByType("resource"))
      .map((entry) => ({ name: entry.name.split("/").pop(), start: entry.startTime, end: entry.responseEnd })) });
  /** @param {string} job @param {Promise<Answer>} work */
  const answer = (job, work) => work.then(
    ({ result, transfer }) => port.then((to) => to.postMessage({ job, result, fetched: fetched() }, transfer)),
    (error) => port.then((to) => to.postMessage({ job, error: error && error.message ? error.message : String(error),
      fetched: fetched() })),
  );
  // Its share of the work: the page starts two, one for the wasm's compile (whose stream hands each chunk
  // to the thread that compiles it), one for the snapshot and calc's zip, so that neither waits for the other.
  const jobsOf = named.jobs || ["wasm", "calc", "snapshot"];
  const jobs = [];
  if (jobsOf.includes("wasm")) jobs.push(answer("wasm", wasm()));
  if (jobsOf.includes("calc")) jobs.push(answer("calc", calcZip(named.calc_zip)));
  if (jobsOf.includes("snapshot") && named.pyodide_snapshot && named.pyodide_snapshot_bytes) {
    jobs.push(answer("snapshot", snapshot({ url: runtimeFile(named.pyodide_snapshot),
      size: named.pyodide_snapshot_bytes, name: named.pyodide_snapshot })));
  }
  Promise.all(jobs).then(() => setTimeout(() => self.close(), 1000)); // nothing more to do, once its answers have left
} else {
  self.onmessage = async ({ data: job }) => {
    try {
      if (job.task === "snapshot") {
        const { result, transfer } = await snapshot(job);
        self.postMessage({ id: job.id, result }, transfer);
      } else if (job.task === "zip") {
        const files = await readZip(job.zip);
        self.postMessage({ id: job.id, result: files }, files.map(({ data }) => data.buffer));
      } else {
        throw new Error(`unknown task ${job.task}`);
      }
    } catch (error) {
      self.postMessage({ id: job.id, error: error && error.message ? error.message : String(error) });
    }
  };
}
