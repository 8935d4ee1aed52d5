"""hooks/vendor.py: the Pyodide snapshot is started with the build and taken at its end, when calc is unchanged.

A stand-in for hooks/pyodide_snapshot.mjs (a Node script that writes its output file and counts its runs)
keeps these tests to a second: the real one takes Node about 7 s of CPU."""

from __future__ import annotations

import json
import os
import shutil
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
STAND_IN = """import { appendFileSync, writeFileSync } from "node:fs";
const [pyodideDir, zipPath, libDir, out] = process.argv.slice(2);
appendFileSync(process.env.RUNS_FILE, "run\\n");
writeFileSync(out, "snapshot of " + zipPath.length);
console.log(JSON.stringify({made: true}));
"""


@pytest.fixture
def vendor(tmp_path, monkeypatch):
    """hooks/vendor.py on a small project in tmp_path: calc (two files), node_modules/pyodide, the stand-in."""
    if shutil.which("node") is None:
        pytest.skip("no Node.js")
    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import vendor as module
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    (tmp_path / "calc").mkdir()
    (tmp_path / "calc" / "__init__.py").write_text('"""calc."""\n')
    (tmp_path / "calc" / "units.py").write_text("GIB = 2**30\n")
    pyodide = tmp_path / "node_modules" / "pyodide"
    pyodide.mkdir(parents=True)
    (pyodide / "package.json").write_text(json.dumps({"version": "0.0.1"}))
    (pyodide / "pyodide.asm.wasm").write_bytes(b"\0asm")
    script = tmp_path / "stand_in.mjs"
    script.write_text(STAND_IN)
    monkeypatch.setattr(module, "SNAPSHOT_SCRIPT", str(script))
    monkeypatch.setenv("RUNS_FILE", str(tmp_path / "runs.txt"))
    monkeypatch.delenv("CALC_PYODIDE_SNAPSHOT", raising=False)
    module._early.clear()
    yield module
    module.stop_early_snapshots()


def _runtime_with_zip(vendor, project) -> tuple[str, str]:
    runtime = project / "site" / "assets" / "runtime"
    runtime.mkdir(parents=True, exist_ok=True)
    (runtime / "calc-x.zip").write_bytes(vendor.calc_zip_bytes(str(project)))
    return str(runtime), "calc-x.zip"


def _runs(project) -> int:
    path = project / "runs.txt"
    return len(path.read_text().splitlines()) if path.exists() else 0


def test_a_snapshot_started_early_is_the_one_the_build_ends_with(vendor, tmp_path):
    assert not vendor.snapshot_is_cached(str(tmp_path))
    name = vendor.start_pyodide_snapshot(str(tmp_path))
    assert name is not None and name in vendor._early
    runtime, zip_name = _runtime_with_zip(vendor, tmp_path)
    assert vendor.pyodide_snapshot(str(tmp_path), runtime, zip_name, "0.0.1") == name
    assert _runs(tmp_path) == 1 and vendor._early == {}  # Node ran once: the early run was taken
    assert os.path.isfile(os.path.join(runtime, name))
    assert os.path.isfile(tmp_path / "build" / "pyodide-snapshot" / name)
    # Cached now (`make serve` uses it): the next build starts nothing and copies it.
    assert vendor.snapshot_is_cached(str(tmp_path))
    assert vendor.start_pyodide_snapshot(str(tmp_path)) is None
    assert vendor.pyodide_snapshot(str(tmp_path), runtime, zip_name, "0.0.1") == name and _runs(tmp_path) == 1


def test_calc_changed_after_the_start_makes_the_snapshot_of_what_is_built(vendor, tmp_path):
    early = vendor.start_pyodide_snapshot(str(tmp_path))
    (tmp_path / "calc" / "units.py").write_text("GIB = 2**30\nGB = 10**9\n")  # an edit while the build runs
    runtime, zip_name = _runtime_with_zip(vendor, tmp_path)
    name = vendor.pyodide_snapshot(str(tmp_path), runtime, zip_name, "0.0.1")
    assert name is not None and name != early
    assert vendor._early == {}  # the early one stopped, its partial file gone
    assert sorted(os.listdir(tmp_path / "build" / "pyodide-snapshot")) == [name]


def test_a_failed_build_stops_the_early_snapshot(vendor, tmp_path):
    name = vendor.start_pyodide_snapshot(str(tmp_path))
    process = vendor._early[name][0]
    vendor.stop_early_snapshots()
    assert process.poll() is not None and vendor._early == {}
    assert not os.path.exists(tmp_path / "build" / "pyodide-snapshot" / (name + ".part"))


def test_no_snapshot_asked_for_starts_nothing(vendor, tmp_path, monkeypatch):
    monkeypatch.setenv("CALC_PYODIDE_SNAPSHOT", "0")
    assert vendor.start_pyodide_snapshot(str(tmp_path)) is None and vendor._early == {}
