"""The lesson's simulation scenarios, one JSON file per step, under ``calc/sim/presets/``.

Each file is a scenario as :mod:`calc.sim.scenario` reads it (with a
``fleet`` part for the steps about fleets, :mod:`calc.sim.fleet`), plus the
lesson step it belongs to (``lesson_step``). ``load(name)`` returns a
:class:`~calc.sim.scenario.Scenario` for a single replica and a
:class:`~calc.sim.fleet.FleetScenario` otherwise; both run with
:func:`run` (or :func:`calc.sim.fleet.simulate_fleet`) and stream with
:func:`calc.sim.live.live_frames`. From a terminal:
``python -m calc simulate --preset NAME``.

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
"""

from __future__ import annotations

import json
import os

from calc.errors import CalcError
from calc.sim.fleet import FleetResult, FleetScenario, as_fleet_scenario, simulate_fleet
from calc.sim.scenario import Scenario

__all__ = ["PRESET_DIR", "names", "info", "load", "load_data", "run", "by_step", "run_cli", "render_fleet"]

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
    """The preset's raw JSON (``lesson_step`` included); CalcError naming the presets for an unknown name.

    ``name`` may also be the path of a JSON file in the same format (a copied and edited preset).

    >>> load_data("nope")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: unknown preset 'nope'; presets: step04-reserve-max, step05-paged, step06-twice-the-traffic, step10-speculation-at-saturation, step11-system-prompt, step12-prefix-caching, step14-scale-on-gpu-util, step15-scale-on-kv, step15-scale-on-queue, step15-warm-headroom, step19-incident-p99, step20-pools, step22-playground
    """
    if isinstance(name, str) and name.endswith(".json") and os.sep in name or os.path.isfile(str(name)):
        try:
            with open(name, encoding="utf-8") as handle:
                return json.loads(handle.read())
        except OSError as exc:
            raise CalcError(f"preset file {name} cannot be read: {exc.strerror}", "preset") from None
        except ValueError as exc:
            raise CalcError(f"preset file {name} is not valid JSON: {exc}", "preset") from None
    known = names()
    if name not in known:
        raise CalcError(f"unknown preset {name!r}; presets: {', '.join(known)}", "preset")
    with open(os.path.join(PRESET_DIR, name + ".json"), encoding="utf-8") as handle:
        return json.load(handle)


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
    8
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


# ------------------------------------------------------------------------------------------ command line
def run_cli(args) -> dict:
    """``python -m calc simulate --preset NAME [flags]``: the preset, any flags on top, run as a fleet.

    Flags change the replica's scenario as they do without a preset (see
    :mod:`calc.cli.simulate`); ``--preset list`` returns the presets instead.

    >>> import argparse
    >>> out = run_cli(argparse.Namespace(preset="step05-paged", requests=20, rate=None, series=False))
    >>> out["preset"], out["requests_completed"], out["replicas_max"]
    ('step05-paged', 20, 1)
    >>> run_cli(argparse.Namespace(preset="list"))["presets"][0]["name"]
    'step04-reserve-max'
    """
    import math

    from calc.cli.simulate import _CLASS, _TOP, _WORKLOAD

    name = args.preset
    if name == "list":
        return {"presets": [info(n) for n in names()]}
    if getattr(args, "scenario", None):
        raise CalcError("give --preset or --scenario, not both", "preset")
    data = as_fleet_scenario(load(name)).to_dict()
    for key in _TOP:
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    if getattr(args, "no_chunked_prefill", False):
        data["chunked_prefill"] = False
    if getattr(args, "prefix_caching", False):
        data["prefix_caching"] = True
    if getattr(args, "speculation", None):
        data["speculation"] = args.speculation
    wl = data["workload"]
    for key in _WORKLOAD:
        value = getattr(args, key, None)
        if value is not None:
            wl[key] = value
    rate = getattr(args, "rate", None)
    if data["fleet"]["traffic"]:
        for flag, value in (("--rate", rate), ("--duration-s", getattr(args, "duration_s", None)),
                            ("--arrival", getattr(args, "arrival", None))):
            if value is not None:
                raise CalcError(f"preset {name} sets its traffic over time (fleet.traffic); {flag} does not apply: "
                                f"copy {os.path.join(PRESET_DIR, name + '.json')}, edit its phases and pass "
                                "the copy to --preset", flag.lstrip("-"))
    if rate is not None:
        if math.isinf(rate):
            wl["arrival"] = "all-at-once"
        else:
            wl["rate_per_s"] = rate
    given = {key: getattr(args, key) for key in _CLASS if getattr(args, key, None) is not None}
    if given:
        if len(wl["classes"]) != 1:
            raise CalcError(f"--{next(iter(given)).replace('_', '-')} applies to a single request class; preset "
                            f"{name} has {len(wl['classes'])}", next(iter(given)))
        wl["classes"][0].update(given)
    result = simulate_fleet(FleetScenario.from_dict(data))
    out = {"preset": name}
    out.update(result.summary)
    if getattr(args, "series", False):
        out["time_series"] = result.time_series
    return out


def render_fleet(summary: dict) -> str:
    """The fleet part of a run's summary as text: replicas and cost, pools, scaling decisions.

    >>> print(render_fleet(run("step20-pools").summary))  # doctest: +ELLIPSIS
    replicas 6 at start, 6 at most, 6 at the end; ... replica-hours ...
    pool       classes   replicas (start/end)  TTFT p50  TTFT p99  queue max  GPU-Util
    ...
    """
    from calc.cli.table import format_table
    from calc.units import format_number

    def sec(v):
        return "-" if v is None else (f"{format_number(v)} s" if v >= 1 else f"{format_number(v * 1000)} ms")

    s = summary
    cost = f", ${format_number(s['cost_usd'])}" if s.get("cost_usd") is not None else ""
    lines = [f"replicas {s['replicas_initial']} at start, {s['replicas_max']} at most, {s['replicas_final']} at the "
             f"end; {format_number(s['replica_hours'])} replica-hours ({format_number(s['gpu_hours'])} GPU-hours"
             f"{cost}); arrivals {format_number(s['arrival_rate_per_s'] or 0)} requests/s"]
    lines.append(format_table(
        [(p["name"], ", ".join(p["classes"]), f"{p['replicas_initial']}/{p['replicas_final']}", sec(p["ttft_p50_s"]),
          sec(p["ttft_p99_s"]), f"{p['queue_depth_max']:,}", f"{format_number(100 * p['gpu_util_reported'])}%")
         for p in s["pools"]],
        headers=("pool", "classes", "replicas (start/end)", "TTFT p50", "TTFT p99", "queue max", "GPU-Util")))
    events = s.get("scale_events", [])
    if events:
        lines.append("")
        lines.append(format_table(
            [(sec(e["t_s"]), e["pool"], f"{e['signal']} = {format_number(e['value'])}", f"{e['from']} -> {e['to']}")
             for e in events], headers=("at", "pool", "signal", "replicas")))
    return "\n".join(lines)
