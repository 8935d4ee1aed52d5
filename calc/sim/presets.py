"""The lesson's simulation scenarios, one JSON file per step, under ``calc/sim/presets/``.

Each file is a scenario as :mod:`calc.sim.scenario` reads it (with a
``fleet`` part for the steps about fleets, :mod:`calc.sim.fleet`), plus the
lesson step it belongs to (``lesson_step``), read over the lesson's base
:data:`calc.lesson.SCENARIO_BASE` (the weights weighed as step 1 weighs them,
so every simulated replica of the lesson holds step 1's KV cache; a file may
set its own). ``load(name)`` returns a
:class:`~calc.sim.scenario.Scenario` for a single replica and a
:class:`~calc.sim.fleet.FleetScenario` otherwise; both run with
:func:`run` (or :func:`calc.sim.fleet.simulate_fleet`) and stream with
:func:`calc.sim.live.live_frames`. From a terminal:
``python -m calc simulate --preset NAME`` (flags on top: :mod:`calc.cli.simulate`).

Every preset is sized to run in well under two seconds of CPython (they also
run at site build and in the browser), with the request counts and durations
the effect needs and no more. Sources: the lesson's steps (seed
``000_783e2c6cc1bfcb77.txt``), each preset's ``description``.

>>> names()[:3]
['step04-reserve-max', 'step05-paged', 'step06-twice-the-traffic']
>>> load("step05-paged").allocation
'paged'
>>> type(load("step14-scale-on-gpu-util")).__name__
'FleetScenario'
>>> info("step19-incident-p99")["lesson_step"]
19
>>> load("step22-playground").parameter_count, load("step14-scale-on-gpu-util").scenario.parameter_count
('lesson', 'lesson')
"""

from __future__ import annotations

import json
import os

from calc.errors import CalcError
from calc.lesson import SCENARIO_BASE
from calc.sim.fleet import FleetResult, FleetScenario, simulate_fleet
from calc.sim.scenario import Scenario

__all__ = ["PRESET_DIR", "names", "info", "load", "load_data", "run", "by_step"]

PRESET_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "presets")
_META_KEYS = ("lesson_step",)


def names() -> list[str]:
    """The preset names, sorted (file names without ``.json``).

    >>> "step20-pools" in names()
    True
    """
    try:
        files = os.listdir(PRESET_DIR)
    except OSError:
        return []
    return sorted(f[:-5] for f in files if f.endswith(".json"))


def load_data(name: str) -> dict:
    """The preset's JSON (``lesson_step`` included) over :data:`calc.lesson.SCENARIO_BASE`; CalcError naming the
    presets for an unknown name.

    ``name`` may also be the path of a JSON file in the same format (a copied and edited preset).

    >>> load_data("nope")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: unknown preset 'nope'; presets: step04-reserve-max, step05-paged, step06-twice-the-traffic, step10-speculation-at-saturation, step11-system-prompt, step12-prefix-caching, step14-scale-on-gpu-util, step15-scale-on-kv, step15-scale-on-queue, step15-warm-headroom, step19-incident-p99, step20-pools, step22-playground
    """
    if isinstance(name, str) and name.endswith(".json") and os.sep in name or os.path.isfile(str(name)):
        try:
            with open(name, encoding="utf-8") as handle:
                return _over_base(json.loads(handle.read()), name)
        except OSError as exc:
            raise CalcError(f"preset file {name} cannot be read: {exc.strerror}", "preset") from None
        except ValueError as exc:
            raise CalcError(f"preset file {name} is not valid JSON: {exc}", "preset") from None
    known = names()
    if name not in known:
        raise CalcError(f"unknown preset {name!r}; presets: {', '.join(known)}", "preset")
    with open(os.path.join(PRESET_DIR, name + ".json"), encoding="utf-8") as handle:
        return _over_base(json.load(handle), name)


def _over_base(data, name: str) -> dict:
    """A preset file's object with the lesson's base keys it does not set (a new dict; the base is not shared)."""
    if not isinstance(data, dict):
        raise CalcError(f"preset file {name} must hold a JSON object; got {type(data).__name__}", "preset")
    return {**SCENARIO_BASE, **data}


def info(name: str) -> dict:
    """Name, lesson step, description, and whether it is a fleet.

    >>> info("step12-prefix-caching")["fleet"]
    False
    """
    data = load_data(name)
    return {"name": name, "lesson_step": data.get("lesson_step"), "description": data.get("description", ""),
            "fleet": "fleet" in data}


def by_step() -> dict[int, list[str]]:
    """Preset names per lesson step.

    >>> by_step()[15]
    ['step15-scale-on-kv', 'step15-scale-on-queue', 'step15-warm-headroom']
    """
    out: dict[int, list[str]] = {}
    for name in names():
        out.setdefault(info(name)["lesson_step"], []).append(name)
    return out


def load(name: str):
    """The preset as a scenario: a :class:`Scenario` for one replica, a :class:`FleetScenario` for a fleet.

    >>> load("step04-reserve-max").workload.rate_per_s
    6
    """
    data = {k: v for k, v in load_data(name).items() if k not in _META_KEYS}
    if "fleet" in data:
        return FleetScenario.from_dict(data)
    return Scenario.from_dict(data)


def run(name: str) -> FleetResult:
    """Run the preset to the end (one replica runs as a fleet of one: the numbers of :func:`calc.sim.run.simulate`).

    >>> run("step12-prefix-caching").summary["prefix_cache_hit_rate"] > 0.5
    True
    """
    return simulate_fleet(load(name))
