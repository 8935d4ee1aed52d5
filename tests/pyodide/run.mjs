// Run a Python script inside Pyodide under Node, with calc unpacked from a zip.
// usage: node tests/pyodide/run.mjs CALC_ZIP SCRIPT_PY  -> the script's stdout on stdout.
// The same Pyodide files the site ships (node_modules/pyodide, pinned by package-lock.json).
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const { loadPyodide } = await import(path.join(here, "..", "..", "node_modules", "pyodide", "pyodide.mjs"));
const [zipPath, scriptPath] = process.argv.slice(2);
const pyodide = await loadPyodide({ packages: [], stdout: (line) => process.stdout.write(line + "\n"), stderr: (line) => process.stderr.write(line + "\n") });
pyodide.unpackArchive(new Uint8Array(readFileSync(zipPath)), "zip", { extractDir: "/home/pyodide/lib" });
pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/lib')");
try {
  await pyodide.runPythonAsync(readFileSync(scriptPath, "utf8"));
} catch (error) {
  process.stderr.write(String(error) + "\n");
  process.exit(1);
}
