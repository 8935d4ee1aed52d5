// Time calc.sim inside Pyodide under Node: the same scenarios bench/bench_sim.py times in CPython.
// usage: node bench/bench_sim_pyodide.mjs [REQUESTS ...]   (default: 6000 100000)
// Prints one JSON object: Pyodide's Python version, load time, and per scenario the wall time and counts.
// calc is copied file by file from the checkout into Pyodide's file system (no network, no CDN).
import { readFileSync, readdirSync, statSync } from "node:fs";
import { fileURLToPath } from "node:url";
import path from "node:path";

const root = path.join(path.dirname(fileURLToPath(import.meta.url)), "..");
const { loadPyodide } = await import(path.join(root, "node_modules", "pyodide", "pyodide.mjs"));
const sizes = process.argv.slice(2).map(Number).filter((n) => n > 0);
const requests = sizes.length ? sizes : [6000, 100000];

const t0 = performance.now();
const pyodide = await loadPyodide({ packages: [] });
const loadMs = performance.now() - t0;

function copyTree(src, dest) {
  pyodide.FS.mkdirTree(dest);
  for (const name of readdirSync(src)) {
    const from = path.join(src, name);
    const to = `${dest}/${name}`;
    if (statSync(from).isDirectory()) {
      if (name !== "__pycache__") copyTree(from, to);
    } else if (name.endsWith(".py") || name.endsWith(".json")) {
      pyodide.FS.writeFile(to, readFileSync(from));
    }
  }
}
copyTree(path.join(root, "calc"), "/home/pyodide/bench/calc");

const code = `
import json, sys, time
sys.path.insert(0, "/home/pyodide/bench")
from calc.sim import Scenario, Simulation
rows = []
for n in ${JSON.stringify(requests)}:
    scenario = Scenario.from_dict({"workload": {"requests": n, "rate_per_s": 10}})
    t0, c0 = time.perf_counter(), time.process_time()
    sim = Simulation(scenario)
    sim.advance()
    summary = sim.result().summary
    wall, cpu = time.perf_counter() - t0, time.process_time() - c0
    rows.append({"requests": n, "wall_s": wall, "cpu_s": cpu, "events": sim.events, "steps": summary["steps"],
                 "requests_completed": summary["requests_completed"],
                 "throughput_output_tokens_per_s": summary["throughput_output_tokens_per_s"]})
json.dumps({"python": sys.version.split()[0], "rows": rows})
`;
const out = JSON.parse(pyodide.runPython(code));
out.load_ms = loadMs;
process.stdout.write(JSON.stringify(out) + "\n");
