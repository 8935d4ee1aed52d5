// worker.mjs imports Pyodide from the site's copy (../vendor/pyodide/, vendored at build from node_modules):
// its types are the npm package's own (tsconfig.workers.json: rootDirs maps the site's folder onto this one).
export * from "pyodide";
