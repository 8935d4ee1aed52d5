// Build step: a memory snapshot of Pyodide with calc's runtime already imported.
//
// A cold Pyodide start spends most of its time starting CPython (about 1.5 s of CPU on a
// 2-core laptop), and each page then imports its widget modules; restoring a snapshot of the
// interpreter's memory taken after all that takes ~0.15-0.3 s. The site's worker restores
// this snapshot when the manifest names one and boots the ordinary way when it does not, or
// when the restore fails.
//
// usage: node hooks/pyodide_snapshot.mjs PYODIDE_DIR CALC_ZIP LIB_DIR OUT_FILE
//   PYODIDE_DIR  node_modules/pyodide (the very files the site serves: a snapshot only fits them)
//   CALC_ZIP     the calc zip the site serves (the worker unpacks the same zip after restoring,
//                since the file system is not part of the snapshot, only the interpreter's memory)
//   LIB_DIR      where the worker unpacks it (/home/pyodide/lib)
//   OUT_FILE     gzip-compressed snapshot to write, sparse: what is gzipped is the header
//                "PYSNAP01", the memory's size and the page size (u32 little-endian each), a
//                bitmap of the pages stored (bit i of byte i >> 3: page i), then those pages in
//                order (the last one cut at the memory's end). Pages of zeros, 45% of the memory,
//                are left out: the worker's buffer starts zeroed, and inflating them took more
//                than half of the inflate's CPU (hooks/vendor.py and boot-inflate.mjs read it).
// Prints one JSON line: raw, stored and compressed sizes, the time to make it.
//
// Pyodide's snapshot API (`_makeSnapshot`, `makeMemorySnapshot`, `_loadSnapshot`) is marked
// experimental; package-lock.json pins Pyodide, and the browser tests boot from the snapshot
// and, with the snapshot blocked, without it.
import { readFileSync, writeFileSync } from "node:fs";
import path from "node:path";
import { gzipSync } from "node:zlib";

const [pyodideDir, calcZip, libDir, outFile] = process.argv.slice(2);
if (!outFile) {
  console.error("usage: node hooks/pyodide_snapshot.mjs PYODIDE_DIR CALC_ZIP LIB_DIR OUT_FILE");
  process.exit(2);
}

const started = performance.now();
const { loadPyodide } = await import(path.resolve(pyodideDir, "pyodide.mjs"));
// The same options as the worker, so the interpreter state matches what the worker would build.
const pyodide = await loadPyodide({
  indexURL: path.resolve(pyodideDir) + "/", packages: [], _makeSnapshot: true,
  stdout: () => {}, stderr: (line) => console.error(line),
});
pyodide.unpackArchive(new Uint8Array(readFileSync(calcZip)), "zip", { extractDir: libDir });
// Import the runtime and every page's widget modules (+0.6 MB compressed, and no page waits for
// its imports), and touch nothing of JavaScript's from Python: a snapshot may hold no
// references to JS objects. Nothing is computed: calc's caches start empty, as in a plain boot.
pyodide.runPython(
  `import sys\nif ${JSON.stringify(libDir)} not in sys.path: sys.path.insert(0, ${JSON.stringify(libDir)})\n`
  + "import calc.widgets.runtime\nimport calc.widgets\ncalc.widgets.load_all()\n",
);
const snapshot = pyodide.makeMemorySnapshot();
const PAGE_BYTES = 4096;

function sparse(memory) {
  const pageCount = Math.ceil(memory.length / PAGE_BYTES);
  const bitmap = new Uint8Array(Math.ceil(pageCount / 8));
  const stored = [];
  for (let page = 0; page < pageCount; page += 1) {
    const bytes = memory.subarray(page * PAGE_BYTES, Math.min(memory.length, (page + 1) * PAGE_BYTES));
    if (bytes.some((byte) => byte !== 0)) {
      bitmap[page >> 3] |= 1 << (page & 7);
      stored.push(bytes);
    }
  }
  const header = Buffer.alloc(16);
  header.write("PYSNAP01", 0, "latin1");
  header.writeUInt32LE(memory.length, 8);
  header.writeUInt32LE(PAGE_BYTES, 12);
  return Buffer.concat([header, bitmap, ...stored]);
}

const stored = sparse(snapshot);
const compressed = gzipSync(stored, { level: 6 });
writeFileSync(outFile, compressed);
console.log(JSON.stringify({
  raw_bytes: snapshot.length, stored_bytes: stored.length, gzip_bytes: compressed.length,
  made_in_ms: Math.round(performance.now() - started),
}));
