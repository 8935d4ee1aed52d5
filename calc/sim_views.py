"""Lesson presets with a page's changes applied, and the numbers of their finished runs.

A page's live simulation reruns a lesson preset (:mod:`calc.sim.presets`) with a
few fields changed (the arrival rate, the allocation, prefix caching, the weight
format, an autoscaler's thresholds). The same scenario, run to its end, gives the
figures the page's prose quotes. Both live here, so that every page (and the
command line, the notebooks and the tests) builds a changed preset the same way.
Runs are deterministic (seeded), so their summaries are computed once per process.

>>> preset_summary("step04-reserve-max")["running_max"]
48
"""

from __future__ import annotations

import copy
import functools

from calc.errors import CalcError
from calc.sim import presets
from calc.sim.fleet import simulate_fleet

__all__ = ["KEEP", "scenario_for", "preset_summary", "fleet_scenario"]

#: A control left at this value keeps the preset's own setting.
KEEP = "preset"


def scenario_for(preset: str, *, rate_per_s: float = 0, allocation: str = KEEP, prefix_caching: str = KEEP,
                 speculation: str = KEEP, max_num_seqs: int = 0, seed: int = -1) -> dict:
    """The preset's scenario with the page's overrides (``preset``/0/-1 keep the preset's value).

    >>> scenario_for("step05-paged", allocation="contiguous")["allocation"]
    'contiguous'
    >>> scenario_for("step14-scale-on-gpu-util", rate_per_s=3)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rate_per_s cannot change step14-scale-on-gpu-util: its traffic follows phases over time; leave the rate at 0 (the preset's own)
    """
    data = copy.deepcopy(presets.load_data(preset))
    for meta_key in ("lesson_step", "title"):
        data.pop(meta_key, None)
    if allocation != KEEP:
        data["allocation"] = allocation
    if prefix_caching != KEEP:
        data["prefix_caching"] = prefix_caching == "on"
    if speculation != KEEP:
        data["speculation"] = None if speculation == "off" else speculation
    if max_num_seqs:
        data["max_num_seqs"] = max_num_seqs
    if seed >= 0:
        data["seed"] = seed
    if rate_per_s:
        if "traffic" in data.get("fleet", {}):
            raise CalcError(f"rate_per_s cannot change {preset}: its traffic follows phases over time; "
                            f"leave the rate at 0 (the preset's own)", "rate_per_s")
        data.setdefault("workload", {})["rate_per_s"] = rate_per_s
    return data


@functools.lru_cache(maxsize=64)
def preset_summary(name: str, rate_per_s: float = 0, weights: str | None = None) -> dict:
    """The summary of a lesson preset run to its end, at its own arrival rate or at ``rate_per_s``.

    ``weights`` replaces the replica's weight format (step 7 replays step 6's
    traffic in fp8). Source: :func:`calc.sim.fleet.simulate_fleet` on
    :func:`scenario_for` (the scenario the page's live simulation runs).

    >>> preset_summary("step04-reserve-max", 4)["queue_depth_max"]
    3
    >>> s = preset_summary("step06-twice-the-traffic", weights="fp8")
    >>> s["requests_completed"], s["ttft_p99_s"] < preset_summary("step06-twice-the-traffic")["ttft_p99_s"] / 10
    (1200, True)
    """
    data = scenario_for(name, rate_per_s=rate_per_s)
    if weights is not None:
        data["weights"] = weights
    return dict(simulate_fleet(data).summary)


def fleet_scenario(preset: str, **autoscaler) -> dict:
    """The preset's fleet scenario as data, with any autoscaler settings replaced (CalcError if it is no fleet).

    >>> fleet_scenario("step14-scale-on-gpu-util", scale_down_below=0.5)["fleet"]["autoscaler"]["scale_down_below"]
    0.5
    >>> fleet_scenario("step05-paged")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: preset must be a fleet with an autoscaler; step05-paged has none
    """
    data = copy.deepcopy(presets.load_data(preset))
    data.pop("lesson_step", None)
    if "fleet" not in data or "autoscaler" not in data["fleet"]:
        raise CalcError(f"preset must be a fleet with an autoscaler; {preset} has none", "preset")
    data["fleet"]["autoscaler"].update(autoscaler)
    return data
