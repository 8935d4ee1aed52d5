"""calc.sim: a discrete-event simulator of LLM serving replicas, in pure Python.

One replica of a vLLM-like engine at iteration level: a workload of requests
(:mod:`~calc.sim.workload`), a scheduler over a paged KV block pool
(:mod:`~calc.sim.scheduler`, :mod:`~calc.sim.kv_blocks`, :mod:`~calc.sim.prefix_cache`),
step times from the roofline (:mod:`~calc.sim.hardware`), speculative
decoding (:mod:`~calc.sim.speculation`), the static-batching baseline
(:mod:`~calc.sim.static_batching`), metrics (:mod:`~calc.sim.metrics`) and
scenarios as JSON (:mod:`~calc.sim.scenario`, :mod:`~calc.sim.fleet_scenario`).
One engine runs them (:mod:`~calc.sim.fleet`: one event loop, one summary,
one ``until`` rule); a single replica is a fleet of one
(:class:`~calc.sim.run.Simulation`). Its fast paths and their general twins
are in :mod:`~calc.sim.fast`. Deterministic: the same scenario gives the same
JSON in CPython and in Pyodide. Nothing here imports from :mod:`calc.cli` or
:mod:`calc.widgets` (tested).

>>> result = simulate(Scenario.from_dict({"workload": {"requests": 5}}))
>>> result.summary["requests_completed"]
5
"""

from calc.sim.run import Result, Simulation, simulate
from calc.sim.scenario import Scenario, load_scenario

__all__ = ["Result", "Scenario", "Simulation", "load_scenario", "simulate"]
