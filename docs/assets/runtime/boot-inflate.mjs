// @ts-check
// The boot's two inflations: the Pyodide snapshot (7 MB gzip to the 17 MB of non-zero pages of a 31 MB
// memory) and calc's zip.
// Pure functions, run on a thread of their own by boot-inflate-worker.mjs (the Python worker's
// thread meanwhile parses Pyodide's scripts and restores the snapshot), or by worker.mjs itself
// where a worker cannot start a worker of its own or hand it a stream.

// The snapshot's bytes (a stream) into `memory` (zeroed), inflated as they arrive when they are gzip (a
// server that sends them with Content-Encoding: gzip has unpacked them already, hence the look at the
// first two bytes). What they unpack to is sparse (hooks/pyodide_snapshot.mjs): a 16-byte header
// ("PYSNAP01", the memory's size, the page size), a bitmap of the pages stored, then those pages;
// the pages of zeros left out are already zero in `memory`. Pyodide hangs on a memory image that does
// not fit its module, so anything that does not fill exactly the pages the bitmap names stops here.
const SNAPSHOT_MAGIC = "PYSNAP01";
const HEADER_BYTES = 16;

/**
 * @param {ReadableStream<Uint8Array>} stream the snapshot's bytes as they arrive
 * @param {Uint8Array} memory zeroed, of the size the manifest gives
 * @param {string} name the snapshot's file name, for the errors
 * @returns {Promise<Uint8Array>} `memory`, filled
 */
export async function inflateSnapshot(stream, memory, name) {
  const reader = stream.getReader();
  /** @type {Uint8Array[]} */
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
  const unpacked = (gzipped ? body.pipeThrough(new DecompressionStream("gzip")) : body).getReader();
  const header = new Uint8Array(HEADER_BYTES);
  let headerFilled = 0;
  let bitmap = null;
  let bitmapFilled = 0;
  let pageBytes = 0;
  let pageStarts = null; // where each stored page goes in `memory`, once the bitmap is in
  let page = 0;
  let pageFilled = 0;
  /** @param {string} problem @returns {never} */
  const fail = (problem) => {
    unpacked.cancel().catch(() => {});
    throw new Error(`${name}: ${problem}`);
  };
  for (;;) {
    const { done, value } = await unpacked.read();
    if (done) break;
    let at = 0;
    while (at < value.length) {
      if (headerFilled < HEADER_BYTES) {
        const take = Math.min(HEADER_BYTES - headerFilled, value.length - at);
        header.set(value.subarray(at, at + take), headerFilled);
        headerFilled += take;
        at += take;
        if (headerFilled < HEADER_BYTES) continue;
        const view = new DataView(header.buffer);
        if (String.fromCharCode(...header.subarray(0, 8)) !== SNAPSHOT_MAGIC) fail("not a sparse Pyodide snapshot");
        const memoryBytes = view.getUint32(8, true);
        pageBytes = view.getUint32(12, true);
        if (memoryBytes !== memory.length) fail(`a memory of ${memoryBytes} bytes, expected ${memory.length}`);
        if (pageBytes < 512 || pageBytes > 1 << 20 || (pageBytes & (pageBytes - 1))) fail(`page size ${pageBytes}`);
        bitmap = new Uint8Array(Math.ceil(Math.ceil(memoryBytes / pageBytes) / 8));
      } else if (bitmapFilled < bitmap.length) {
        const take = Math.min(bitmap.length - bitmapFilled, value.length - at);
        bitmap.set(value.subarray(at, at + take), bitmapFilled);
        bitmapFilled += take;
        at += take;
        if (bitmapFilled < bitmap.length) continue;
        pageStarts = [];
        const pages = Math.ceil(memory.length / pageBytes);
        for (let index = 0; index < pages; index += 1) {
          if (bitmap[index >> 3] & (1 << (index & 7))) pageStarts.push(index * pageBytes);
        }
      } else {
        if (page >= pageStarts.length) fail(`more than the ${pageStarts.length} pages its bitmap names`);
        const start = pageStarts[page];
        const size = Math.min(pageBytes, memory.length - start);
        const take = Math.min(size - pageFilled, value.length - at);
        memory.set(value.subarray(at, at + take), start + pageFilled);
        pageFilled += take;
        at += take;
        if (pageFilled === size) { page += 1; pageFilled = 0; }
      }
    }
  }
  if (!pageStarts || page !== pageStarts.length) {
    throw new Error(`${name}: cut short (${pageStarts ? `${page} of ${pageStarts.length} pages` : "no bitmap"})`);
  }
  return memory;
}

// calc's zip read from JavaScript: Python's zipfile would take ~0.1-0.3 s in a restored Pyodide,
// most of it compiling wasm functions that the snapshot has not run yet. The zip is the site's
// own (hooks/vendor.py: no zip64, stored or deflated); anything else is refused, and then
// Pyodide's unpacker does it. Returns [{name, data}], a folder's data empty.
/**
 * @param {ArrayBuffer} zipBuffer
 * @returns {Promise<Array<{name: string, data: Uint8Array}>>}
 */
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
