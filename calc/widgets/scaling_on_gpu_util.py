"""Widgets and facts of step 14, "Break it: scaling on GPU-Util" (docs/lesson/14-scaling-on-gpu-util.md).

The model of what GPU-Util reads against the compute really used is
:mod:`calc.gpu_util` (``python -m calc gpu-util``); this page turns it into a
chart of GPU-Util against load with an autoscaler's thresholds:

>>> gpu_util_vs_load()["outputs"]["gpu_util"]["text"]
'100.00%'

The live part of the page is the fleet of :mod:`calc.sim.fleet` under an
autoscaler on GPU-Util (preset ``step14-scale-on-gpu-util``), streamed with
:func:`calc.widgets.views.fleet_views`, which step 15 uses for its own autoscalers.
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc.errors import CalcError
from calc.gpu_util import gpu_util_at_rate, rate_for_gpu_util, replica_capacity_rps
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.sim import presets
from calc.sim.autoscaler import DEFAULT_THRESHOLDS
from calc.sim_views import fleet_scenario, preset_summary
from calc.units import format_number, ratio, relative_change
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.framework import FloatRange, IntRange, fact, facts_of, output, stream, view, widget
from calc.widgets.views import fleet_views, percent_text

__all__ = ["gpu_util_vs_load", "gpu_util_autoscaler", "facts", "PRESET"]

PRESET = "step14-scale-on-gpu-util"
_UP_DEFAULT, _DOWN_DEFAULT = DEFAULT_THRESHOLDS["gpu_util"]


# --- the widget ---------------------------------------------------------------------------------

def _pct(fraction: float, digits: int = 3) -> str:
    value = fraction * 100
    if value >= 99.95 and value < 100:
        return f"{value:.2f}%"
    return f"{format_number(value, digits)}%"


def _rate(rate: float) -> str:
    return f"{format_number(rate)} requests/s"


@widget
def gpu_util_vs_load(
    rate_per_s: Annotated[float, FloatRange(0.01, 100, 0.01, "requests/s", label="Arrival rate")] = 2.0,
    scale_up_above_pct: Annotated[float, FloatRange(1, 99.99, 1, "%", label="Scale up above")] = round(_UP_DEFAULT * 100),
    scale_down_below_pct: Annotated[float, FloatRange(0.01, 99, 1, "%", label="Scale down below")] = round(_DOWN_DEFAULT * 100),
    prompt_tokens: Annotated[int, IntRange(16, 32_000, 16, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(16, 8_192, 16, "tokens", label="Answer")] = ANSWER_TOKENS,
):
    """GPU-Util and real compute use of one replica against its arrival rate, with an autoscaler's thresholds."""
    if scale_down_below_pct >= scale_up_above_pct:
        raise CalcError(f"Scale down below (scale_down_below_pct) must be under the scale-up threshold "
                        f"({format_number(scale_up_above_pct)}%); got {format_number(scale_down_below_pct)}%",
                        "scale_down_below_pct")
    here = gpu_util_at_rate(rate_per_s, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)
    capacity = here["capacity_rps"]
    up_rate = rate_for_gpu_util(scale_up_above_pct / 100, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens)
    down_rate = rate_for_gpu_util(scale_down_below_pct / 100, prompt_tokens=prompt_tokens,
                                  answer_tokens=answer_tokens)
    low = min(0.01, rate_per_s, down_rate / 2)
    high = max(capacity, rate_per_s)
    points = [low * (high / low) ** (i / 60) for i in range(61)]
    rows = [gpu_util_at_rate(x, prompt_tokens=prompt_tokens, answer_tokens=answer_tokens) for x in points]
    figure = line_chart(
        "GPU-Util against the work done", "arrival rate (requests/s, log scale)",
        "share", {
            "GPU-Util (a kernel is running)": (points, [r["gpu_util"] for r in rows]),
            "compute utilization (FLOPs / peak)": (points, [r["compute_utilization"] for r in rows]),
            f"scale up above {format_number(scale_up_above_pct)}%": ([points[0], points[-1]],
                                                                    [scale_up_above_pct / 100] * 2),
            f"scale down below {format_number(scale_down_below_pct)}%": ([points[0], points[-1]],
                                                                        [scale_down_below_pct / 100] * 2),
        }, log_x=True,
        summary=(f"GPU-Util passes {format_number(scale_up_above_pct)}% at {_rate(up_rate)} "
                 f"({_pct(up_rate / capacity)} of the replica's capacity of {_rate(capacity)}) and stays above "
                 f"{format_number(scale_down_below_pct)}% down to {_rate(down_rate)}; compute utilization reaches "
                 f"{_pct(rows[-1]['compute_utilization'])} at capacity."),
    )
    for trace in figure["data"][2:]:
        trace["line"]["dash"] = "dash"
        trace["line"]["width"] = 1.5
    figure["data"].append({"type": "scatter", "mode": "markers", "name": "your arrival rate",
                           "x": [here["rate_per_s"]],
                           "y": [here["gpu_util"]], "marker": {"color": PALETTE[5], "size": 11}})
    figure["layout"]["yaxis"].update(tickformat=".0%", range=[0, 1.05])
    figure["layout"]["legend"]["y"] = -0.38  # clear of the axis title
    return view(
        outputs=[
            output("gpu_util", "GPU-Util reads", here["gpu_util"], "", text=_pct(here["gpu_util"])),
            output("compute_utilization", "Compute really used", here["compute_utilization"], "",
                   text=_pct(here["compute_utilization"])),
            output("in_flight", "Requests in flight (mean)", here["in_flight"], "requests",
                   text=format_number(here["in_flight"])),
            output("load_fraction", "Share of the replica's capacity", here["load_fraction"], "",
                   text=f"{_pct(min(here['load_fraction'], 1.0))} of {_rate(capacity)}"
                        + (" (saturated: a queue grows)" if here["saturated"] else "")),
            output("scale_up_rate", f"GPU-Util passes {format_number(scale_up_above_pct)}% from", up_rate,
                   "requests/s", text=f"{_rate(up_rate)} ({_pct(up_rate / capacity)} of capacity)"),
            output("scale_down_rate", f"It drops under {format_number(scale_down_below_pct)}% only below",
                   down_rate, "requests/s", text=f"{_rate(down_rate)} ({_pct(down_rate / capacity)} of capacity)"),
        ],
        figures={"gpu_util": figure},
    )


# --- the live fleet -----------------------------------------------------------------------------

_PRESET_AUTOSCALER = presets.load_data(PRESET)["fleet"]["autoscaler"]
#: Upper end of the scale-down threshold in the live fleet. The simulator's first GPU-Util reading of a
#: replica that has just become ready counts almost none of its busy time (calc/sim/fleet.py, _signal), so a
#: scale-down threshold near 100 % would fire on that artefact; below 80 % it never does in this scenario.
_DOWN_MAX_PCT = 75


@stream(budget_s=4.0)
def gpu_util_autoscaler(
    scale_up_above_pct: Annotated[float, FloatRange(1, 99.99, 0.5, "%", label="Scale up above (GPU-Util)")] =
        round(_UP_DEFAULT * 100),
    scale_down_below_pct: Annotated[float, FloatRange(0, _DOWN_MAX_PCT, 0.5, "%", label="Scale down below (GPU-Util)")] =
        round(_DOWN_DEFAULT * 100),
    max_replicas: Annotated[int, IntRange(1, 6, label="Most replicas")] = _PRESET_AUTOSCALER["max_replicas"],
    frame_interval_s: Annotated[float, FloatRange(1, 60, 1, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The fleet of step 14 under an autoscaler on GPU-Util: traffic ramps up and back down, replicas do not."""
    if scale_down_below_pct >= scale_up_above_pct:
        raise CalcError(f"Scale down below (scale_down_below_pct) must be under the scale-up threshold "
                        f"({format_number(scale_up_above_pct)}%); got {format_number(scale_down_below_pct)}%",
                        "scale_down_below_pct")
    scenario = fleet_scenario(PRESET, signal="gpu_util", scale_up_above=scale_up_above_pct / 100,
                              scale_down_below=scale_down_below_pct / 100, max_replicas=max_replicas)
    yield from fleet_views(scenario, frame_interval_s)


# --- facts --------------------------------------------------------------------------------------

@functools.lru_cache(maxsize=None)
def _last_phase(name: str) -> dict:
    """Means of GPU-Util and compute use over the preset's last traffic phase (the fleet at its final size)."""
    result = presets.run(name)
    phases = presets.load_data(name)["fleet"]["traffic"]
    start_s = math.fsum(p["duration_s"] for p in phases[:-1])
    end_s = start_s + phases[-1]["duration_s"]
    series = result.time_series
    picked = [i for i, t in enumerate(series["t_s"]) if start_s < t <= end_s]
    mean = lambda key: math.fsum(series[key][i] for i in picked) / len(picked)  # noqa: E731
    return {"start_s": start_s, "rate_per_s": phases[-1]["rate_per_s"], "gpu_util": mean("gpu_util_reported"),
            "compute_utilization": mean("compute_utilization"), "replicas": series["replicas"][picked[-1]]}


# Each fact is computed alone when a page names it ({{ scaling_on_gpu_util:name }} elsewhere: 4 uses); the
# preset's run is cached (calc.sim_views.preset_summary).
def _no_math_dollars(text: str) -> str:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return text.replace("$", "&#36;")


def _run() -> dict:
    return preset_summary(PRESET)


def _phases() -> list:
    return presets.load_data(PRESET)["fleet"]["traffic"]


def _auto() -> dict:
    return presets.load_data(PRESET)["fleet"]["autoscaler"]


def _up() -> float:
    return _auto().get("scale_up_above", _UP_DEFAULT)


def _down() -> float:
    return _auto().get("scale_down_below", _DOWN_DEFAULT)


@functools.cache
def _at(rate_per_s: float) -> dict:
    return gpu_util_at_rate(rate_per_s)


@functools.cache
def _rate_for(gpu_util: float) -> float:
    return rate_for_gpu_util(gpu_util)


def _last() -> dict:
    return _last_phase(PRESET)


def _last_per_replica() -> float:
    return ratio(_last()["rate_per_s"], _last()["replicas"])


@fact
def capacity_rps():
    return _rate(replica_capacity_rps())


@fact
def stay_s():
    return f"{format_number(_at(2.0)['stay_s'])} s"


@fact
def stay_idle_s():
    return f"{format_number(_at(0.01)['stay_s'])} s"


@fact
def in_flight_at_2():
    return format_number(_at(2.0)["in_flight"])


@fact
def util_at_2():
    """GPU-Util reads full at a small share of what the replica can serve.

    >>> util_at_2(), rate_for_80()
    ('100.00%', '0.317 requests/s')
    """
    return _pct(_at(2.0)["gpu_util"])


@fact
def compute_at_2():
    return _pct(_at(2.0)["compute_utilization"])


@fact
def share_at_2():
    return _pct(_at(2.0)["load_fraction"])


@fact
def rate_for_80():
    return _rate(_rate_for(_up()))


@fact
def rate_for_80_share():
    return _pct(ratio(_rate_for(_up()), replica_capacity_rps()))


@fact
def rate_for_30():
    return _rate(_rate_for(_down()))


@fact
def rate_for_30_share():
    return _pct(ratio(_rate_for(_down()), replica_capacity_rps()))


@fact
def up_pct():
    return percent_text(_up())


@fact
def down_pct():
    return percent_text(_down())


@fact
def interval_s():
    return f"{format_number(_auto()['interval_s'])} s"


@fact
def cooldown_s():
    return f"{format_number(_auto()['cooldown_s'])} s"


@fact
def max_replicas():
    return str(_auto()["max_replicas"])


@fact
def start_rate():
    return _rate(_phases()[0]["rate_per_s"])


@fact
def peak_rate():
    return _rate(max(max(p["rate_per_s"], p.get("end_rate_per_s", p["rate_per_s"])) for p in _phases()))


@fact
def end_rate():
    return _rate(_phases()[-1]["rate_per_s"])


@fact
def run_s():
    return f"{format_number(math.fsum(p['duration_s'] for p in _phases()))} s"


@fact
def first_scale_up_s():
    return f"{format_number(_run()['scale_events'][0]['t_s'])} s"


@fact
def scale_ups():
    return str(_run()["scale_ups"])


@fact
def scale_downs():
    return str(_run()["scale_downs"])


@fact
def replicas_final():
    """>>> replicas_final(), last_phase_util()
    ('4', '98.8%')
    """
    return str(_run()["replicas_final"])


@fact
def replicas_max():
    return str(_run()["replicas_max"])


@fact
def gpu_util_run():
    return _pct(_run()["gpu_util_reported"])


@fact
def compute_run():
    return _pct(_run()["compute_utilization"])


@fact
def ttft_p99():
    return f"{format_number(_run()['ttft_p99_s'])} s"


@fact
def replica_hours():
    return f"{format_number(_run()['replica_hours'])}"


@fact
def cost_usd():
    return _no_math_dollars(f"${_run()['cost_usd']:.2f}")


@fact
def last_phase_start_s():
    return f"{format_number(_last()['start_s'])} s"


@fact
def last_phase_s():
    return f"{format_number(_phases()[-1]['duration_s'])} s"


@fact
def last_phase_util():
    return _pct(_last()["gpu_util"])


@fact
def last_phase_compute():
    return _pct(_last()["compute_utilization"])


@fact
def last_phase_per_replica():
    return _rate(_last_per_replica())


@fact
def last_phase_per_replica_share():
    return _pct(ratio(_last_per_replica(), replica_capacity_rps()))


@fact
def queue_replica_hours():
    return f"{format_number(preset_summary('step15-scale-on-queue')['replica_hours'])}"


@fact
def extra_hours_pct():
    return _pct(relative_change(_run()["replica_hours"], preset_summary("step15-scale-on-queue")["replica_hours"]))


facts = facts_of(__name__)
