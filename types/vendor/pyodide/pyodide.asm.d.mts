// Pyodide's Emscripten module factory (pyodide.asm.mjs ships no types of its own): the type loadPyodide's
// option `createPyodideModule` takes, from the npm package.
import type { PyodideConfig } from "pyodide";

declare const createPyodideModule: NonNullable<PyodideConfig["createPyodideModule"]>;
export default createPyodideModule;
