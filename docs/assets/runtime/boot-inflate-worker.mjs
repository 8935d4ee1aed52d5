// A thread for the boot's inflations (boot-inflate.mjs), started by worker.mjs: each request
// {id, task: "snapshot" | "zip", ...} is answered {id, result} or {id, error}, the buffers
// transferred, not copied.
import { inflateSnapshot, readZip } from "./boot-inflate.mjs";

self.onmessage = async ({ data: job }) => {
  try {
    if (job.task === "snapshot") {
      const memory = await inflateSnapshot(job.stream, new Uint8Array(job.size), job.name);
      self.postMessage({ id: job.id, result: memory }, [memory.buffer]);
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
