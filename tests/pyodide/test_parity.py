"""calc inside Pyodide (CPython 3.14 in WebAssembly, as the browser runs it) gives CPython's answers.

Two checks: every doctest of calc passes there too (the same number of examples),
and every widget and drill on the site returns the same JSON for the same inputs.

CPython's side of the doctests is counted, not run again: pytest's ``--doctest-modules`` runs every one of
them in this CPython (pyproject.toml), with the same option flags, and fails on any failure.
"""

import json

import pytest

from tests.pyodide_runner import run_in_cpython, run_in_pyodide

# Two groups, so that under ``-n 2`` the doctests and the widgets run on different workers (each worker has its
# own Pyodide process: tests/pyodide_runner.py); tests/conftest.py starts both first.
pytestmark = [pytest.mark.pyodide]

DOCTESTS = r'''
import contextlib, doctest, importlib, io, json, pkgutil, calc
results = {}
noise = io.StringIO()
names = ["calc"] + [m.name for m in pkgutil.walk_packages(calc.__path__, "calc.")]
for name in sorted(names):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder()
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    with contextlib.redirect_stdout(noise):
        for test in finder.find(module, name):
            runner.run(test, out=lambda text: None)
        summary = runner.summarize(verbose=False)
    results[name] = [summary.failed, summary.attempted]
print(json.dumps(results, sort_keys=True))
'''

# The examples CPython finds in each module: a doctest runner attempts every example of every test it runs,
# so Pyodide's ``attempted`` must equal these counts.
DOCTEST_COUNTS = r'''
import doctest, importlib, json, pkgutil, calc
names = ["calc"] + [m.name for m in pkgutil.walk_packages(calc.__path__, "calc.")]
counts = {}
for name in sorted(names):
    module = importlib.import_module(name)
    counts[name] = sum(len(test.examples) for test in doctest.DocTestFinder().find(module, name))
print(json.dumps(counts, sort_keys=True))
'''

WIDGETS = r'''
import json
from calc.widgets import framework, allowed_names
from calc.widgets.runtime import handle
out = {}
for name in allowed_names():
    entry = framework.REGISTRY[name]
    if entry.kind == "widget":
        out[name] = json.loads(handle(json.dumps({"id": 1, "op": "call", "fn": name, "args": {}})))
    elif entry.kind == "stream":
        started = json.loads(handle(json.dumps({"id": 1, "op": "stream_start", "fn": name, "args": {}})))
        frames = []
        while started["ok"]:
            step = json.loads(handle(json.dumps({"id": 2, "op": "stream_next", "stream": started["result"]["stream"], "frames": 50})))
            frames.extend(step["result"]["frames"])
            if step["result"]["done"]:
                break
        out[name] = {"ok": started["ok"], "frames": frames}
    elif entry.kind == "drill":
        for seed in (0, 1, 2, 3, 99):
            out[f"{name}#{seed}"] = json.loads(handle(json.dumps({"id": 1, "op": "drill", "fn": name, "args": {"seed": seed}})))
print(json.dumps(out, sort_keys=True))
'''


@pytest.fixture(scope="module")
def doctest_results():
    return json.loads(run_in_cpython(DOCTEST_COUNTS)), json.loads(run_in_pyodide(DOCTESTS))


@pytest.mark.xdist_group("pyodide_doctests")
def test_doctests_pass_in_pyodide(doctest_results):
    cpython, pyodide = doctest_results
    failures = {name: counts for name, counts in pyodide.items() if counts[0]}
    assert not failures, f"doctests failing in Pyodide: {failures}"


@pytest.mark.xdist_group("pyodide_doctests")
def test_pyodide_ran_the_same_doctests(doctest_results):
    cpython_examples, pyodide = doctest_results
    assert sum(cpython_examples.values()) > 50
    assert {k: v[1] for k, v in pyodide.items()} == cpython_examples


@pytest.mark.xdist_group("pyodide_widgets")
def test_widgets_and_drills_give_the_same_json():
    cpython = json.loads(run_in_cpython(WIDGETS))
    pyodide = json.loads(run_in_pyodide(WIDGETS))
    assert cpython, "no widgets registered"
    assert all(answer["ok"] for answer in cpython.values()), [k for k, a in cpython.items() if not a["ok"]]
    assert pyodide == cpython
