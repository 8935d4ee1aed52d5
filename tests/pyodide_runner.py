"""Run Python code inside Pyodide under Node (the npm package the site ships), with calc unpacked.

Used by the parity tests: the same code runs in CPython and in Pyodide, and the
outputs must be equal. A missing Node or Pyodide is a failure in CI, a skip elsewhere.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "hooks"))

from vendor import calc_zip_bytes  # noqa: E402


def require_pyodide() -> None:
    missing = []
    if not shutil.which("node"):
        missing.append("node")
    if not os.path.exists(os.path.join(ROOT, "node_modules", "pyodide", "pyodide.mjs")):
        missing.append("node_modules/pyodide (run `npm ci`)")
    if missing:
        message = f"Pyodide parity needs {', '.join(missing)}"
        if os.environ.get("CI"):
            pytest.fail(message)
        pytest.skip(message)


def run_in_pyodide(code: str, timeout_s: float = 300) -> str:
    """The stdout of ``code`` run in Pyodide; raises with its stderr when it fails."""
    require_pyodide()
    with tempfile.TemporaryDirectory() as folder:
        zip_path = os.path.join(folder, "calc.zip")
        script_path = os.path.join(folder, "script.py")
        with open(zip_path, "wb") as handle:
            handle.write(calc_zip_bytes(ROOT))
        with open(script_path, "w", encoding="utf-8") as handle:
            handle.write(code)
        done = subprocess.run(["node", os.path.join(ROOT, "tests", "pyodide", "run.mjs"), zip_path, script_path],
                              capture_output=True, text=True, timeout=timeout_s, cwd=ROOT)
    if done.returncode != 0:
        raise AssertionError(f"Pyodide run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout


def run_in_cpython(code: str, timeout_s: float = 300) -> str:
    """The stdout of ``code`` run in a fresh CPython with the project on its path."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    if done.returncode != 0:
        raise AssertionError(f"CPython run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout
