// Run Python scripts inside Pyodide under Node, with calc unpacked from a zip.
// The same Pyodide files the site ships (node_modules/pyodide, pinned by package-lock.json).
//
// usage: node tests/pyodide/run.mjs CALC_ZIP SCRIPT_PY   -> the script's stdout on stdout (exit 1 if it raised)
//        node tests/pyodide/run.mjs CALC_ZIP --session   -> one boot for many scripts: each line on stdin is a
//          JSON string (a script's source); each answer is one JSON line on stdout, {ok, stdout, error}. Every
//          script runs in fresh globals; imported modules stay imported, as in the site's worker.
import { readFileSync } from "node:fs";
import { createInterface } from "node:readline";
import { fileURLToPath } from "node:url";
import path from "node:path";

const here = path.dirname(fileURLToPath(import.meta.url));
const { loadPyodide } = await import(path.join(here, "..", "..", "node_modules", "pyodide", "pyodide.mjs"));
const [zipPath, scriptPath] = process.argv.slice(2);
const session = scriptPath === "--session";
let captured = [];
const pyodide = await loadPyodide({
  packages: [],
  stdout: (line) => (session ? captured.push(line) : process.stdout.write(line + "\n")),
  stderr: (line) => process.stderr.write(line + "\n"),
});
pyodide.unpackArchive(new Uint8Array(readFileSync(zipPath)), "zip", { extractDir: "/home/pyodide/lib" });
pyodide.runPython("import sys; sys.path.insert(0, '/home/pyodide/lib')");

if (!session) {
  try {
    await pyodide.runPythonAsync(readFileSync(scriptPath, "utf8"));
  } catch (error) {
    process.stderr.write(String(error) + "\n");
    process.exit(1);
  }
} else {
  process.stdout.write(JSON.stringify({ ready: true }) + "\n");
  for await (const line of createInterface({ input: process.stdin, crlfDelay: Infinity })) {
    if (!line.trim()) continue;
    captured = [];
    const globals = pyodide.globals.get("dict")();
    let answer;
    try {
      await pyodide.runPythonAsync(JSON.parse(line), { globals });
      answer = { ok: true, stdout: captured.join("\n") + (captured.length ? "\n" : ""), error: null };
    } catch (error) {
      answer = { ok: false, stdout: captured.join("\n"), error: String(error) };
    } finally {
      globals.destroy();
    }
    process.stdout.write(JSON.stringify(answer) + "\n");
  }
}
