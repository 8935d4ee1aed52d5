"""Run Python code inside Pyodide under Node (the npm package the site ships), with calc unpacked.

Used by the parity tests: the same code runs in CPython and in Pyodide, and the
outputs must be equal. A missing Node or Pyodide is a failure in CI, a skip elsewhere.

Pyodide boots once per test process (about 3.5 s of CPU): every script after the first runs in the
same Node process (``run.mjs --session``), in fresh globals, as the site's worker runs every call.
"""

from __future__ import annotations

import atexit
import json
import os
import selectors
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


class PyodideSession:
    """One Node process with Pyodide booted and calc unpacked, running scripts sent on its stdin."""

    def __init__(self, timeout_s: float = 300):
        self.folder = tempfile.mkdtemp(prefix="calc-pyodide-")
        zip_path = os.path.join(self.folder, "calc.zip")
        with open(zip_path, "wb") as handle:
            handle.write(calc_zip_bytes(ROOT))
        self.stderr = tempfile.TemporaryFile(dir=self.folder)
        self.process = subprocess.Popen(["node", os.path.join(ROOT, "tests", "pyodide", "run.mjs"), zip_path, "--session"],
                                        stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.stderr, cwd=ROOT,
                                        text=True, bufsize=1)
        self._answer(timeout_s)  # {"ready": true} once booted

    def _stderr_tail(self) -> str:
        self.stderr.seek(0)
        return self.stderr.read().decode("utf-8", "replace")[-4000:]

    def _answer(self, timeout_s: float) -> dict:
        with selectors.DefaultSelector() as selector:
            selector.register(self.process.stdout, selectors.EVENT_READ)
            if not selector.select(timeout_s):
                self.close()
                raise AssertionError(f"Pyodide did not answer within {timeout_s:.0f} s")
        line = self.process.stdout.readline()
        if not line:
            code = self.process.wait()
            raise AssertionError(f"Pyodide's Node process ended ({code}):\n{self._stderr_tail()}")
        return json.loads(line)

    def run(self, code: str, timeout_s: float) -> str:
        self.process.stdin.write(json.dumps(code) + "\n")
        self.process.stdin.flush()
        answer = self._answer(timeout_s)
        if not answer["ok"]:
            raise AssertionError(f"Pyodide run failed:\n{answer['error'][-4000:]}\n{self._stderr_tail()}")
        return answer["stdout"]

    def alive(self) -> bool:
        return self.process.poll() is None

    def close(self) -> None:
        if self.process.poll() is None:
            self.process.kill()
            self.process.wait()
        shutil.rmtree(self.folder, ignore_errors=True)


_session: PyodideSession | None = None


def _close_session() -> None:
    if _session is not None:
        _session.close()


atexit.register(_close_session)


def run_in_pyodide(code: str, timeout_s: float = 300) -> str:
    """The stdout of ``code`` run in Pyodide (this process's one boot, see :class:`PyodideSession`); raises
    with its error when it fails."""
    global _session
    require_pyodide()
    if _session is None or not _session.alive():
        _session = PyodideSession(timeout_s)
    return _session.run(code, timeout_s)


def run_in_cpython(code: str, timeout_s: float = 300) -> str:
    """The stdout of ``code`` run in a fresh CPython with the project on its path."""
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=timeout_s, cwd=ROOT,
                          env={**os.environ, "PYTHONPATH": ROOT})
    if done.returncode != 0:
        raise AssertionError(f"CPython run failed ({done.returncode}):\n{done.stderr[-4000:]}")
    return done.stdout
