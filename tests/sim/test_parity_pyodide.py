"""The golden scenarios give the same JSON, byte for byte, in Pyodide (CPython 3.14 in WebAssembly, under Node)
as in this CPython and as stored: integer-nanosecond event times, integer tick counts, math.fsum and
6-significant-digit rounding keep float differences between the versions out of the output."""

import json

import pytest

from tests.pyodide_runner import run_in_pyodide
from tests.sim import goldens

pytestmark = [pytest.mark.pyodide, pytest.mark.xdist_group("pyodide")]

SCRIPT = r'''
import json
from calc.sim import Scenario, simulate
cases = json.loads(%r)
out = {}
for name, data in cases.items():
    out[name] = json.dumps(simulate(Scenario.from_dict(data)).to_dict(), indent=1, sort_keys=True) + "\n"
print(json.dumps(out))
'''


@pytest.fixture(scope="module")
def pyodide_results():
    return json.loads(run_in_pyodide(SCRIPT % json.dumps(goldens.SCENARIOS)))


@pytest.mark.parametrize("name", sorted(goldens.SCENARIOS))
def test_pyodide_matches_golden(pyodide_results, name):
    with open(goldens.path(name), encoding="utf-8") as handle:
        stored = handle.read()
    assert pyodide_results[name] == stored
