// The boot's two inflations: the Pyodide snapshot (7 MB gzip to 31 MB of memory) and calc's zip.
// Pure functions, run on a thread of their own by boot-inflate-worker.mjs (the Python worker's
// thread meanwhile parses Pyodide's scripts and restores the snapshot), or by worker.mjs itself
// where a worker cannot start a worker of its own or hand it a stream.

// The snapshot's bytes (a stream) into `memory`, which they must fill exactly: inflated as they arrive when they
// are gzip (a server that sends them with Content-Encoding: gzip has unpacked them already, hence
// the look at the first two bytes). Pyodide hangs on a memory image that does not fit its module,
// so a wrong size stops here.
export async function inflateSnapshot(stream, memory, name) {
  const reader = stream.getReader();
  const head = [];
  let headLength = 0;
  while (headLength < 2) {
    const { done, value } = await reader.read();
    if (done) break;
    head.push(value);
    headLength += value.length;
  }
  const first = head.length === 1 ? head[0] : Uint8Array.from(head.flatMap((chunk) => [...chunk]));
  const gzipped = first[0] === 0x1f && first[1] === 0x8b;
  const body = new ReadableStream({
    start(controller) { head.forEach((chunk) => controller.enqueue(chunk)); },
    async pull(controller) {
      const { done, value } = await reader.read();
      if (done) controller.close();
      else controller.enqueue(value);
    },
    cancel(reason) { return reader.cancel(reason); },
  });
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
  return memory;
}

// calc's zip read from JavaScript: Python's zipfile would take ~0.1-0.3 s in a restored Pyodide,
// most of it compiling wasm functions that the snapshot has not run yet. The zip is the site's
// own (hooks/vendor.py: no zip64, stored or deflated); anything else is refused, and then
// Pyodide's unpacker does it. Returns [{name, data}], a folder's data empty.
export async function readZip(zipBuffer) {
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
    if (method === 0) return data.slice();
    const inflate = new DecompressionStream("deflate-raw");
    const writer = inflate.writable.getWriter();
    writer.write(data).catch(() => {}); // a damaged entry fails the readable side, reported there
    writer.close().catch(() => {});
    return new Response(inflate.readable).arrayBuffer().then((buffer) => new Uint8Array(buffer));
  }));
  return files.map(({ name }, index) => ({ name, data: contents[index] }));
}
