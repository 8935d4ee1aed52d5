// A thread for the boot's inflations (boot-inflate.mjs), started by worker.mjs: each request
// {id, task: "snapshot" | "zip", ...} is answered {id, result} or {id, error}, the buffers
// transferred, not copied. The snapshot's job names its URL: this thread fetches it.
import { inflateSnapshot, readZip } from "./boot-inflate.mjs";

self.onmessage = async ({ data: job }) => {
  try {
    if (job.task === "snapshot") {
      // Fetched here, not by the Python worker: a stream handed over from there is pumped by that
      // thread, which is busy parsing and starting Pyodide, and the inflate waited for it (~1.5 s on
      // a loaded machine). The compressed bytes go back too, for the offline hand-over (worker.mjs).
      const response = await fetch(job.url, { priority: "high" }); // before the page's images and fonts
      if (!response.ok) throw new Error(`${job.name}: HTTP ${response.status}`);
      const responseAt = performance.now();
      const [forMemory, forCache] = response.body.tee();
      const kept = new Response(forCache).arrayBuffer();
      kept.catch(() => {});
      const memory = await inflateSnapshot(forMemory, new Uint8Array(job.size), job.name);
      const compressed = await kept;
      // Its headers as sent, less those that described the bytes on the wire.
      const headers = [...response.headers].filter(([key]) => !["content-encoding", "content-length"].includes(key));
      const result = { memory, compressed, headers,
        timing: { origin: performance.timeOrigin, response: responseAt, unpacked: performance.now() } };
      self.postMessage({ id: job.id, result }, [memory.buffer, compressed]);
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
