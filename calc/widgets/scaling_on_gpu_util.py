"""Widgets and facts of step 14, "Break it: scaling on GPU-Util" (docs/lesson/14-scaling-on-gpu-util.md).

GPU-Util, as ``nvidia-smi`` and DCGM report it, is the share of time at least
one kernel runs (NVML ``nvmlUtilization_t.gpu``). An LLM server runs a decode
step whenever any request is in flight, so GPU-Util measures the chance that
the replica is not empty, not how much more work it could take:

    requests in flight  L = arrival rate x time a request stays (TTFT + answer x ITL)
    GPU-Util           ~= 1 - exp(-L)        (Poisson arrivals, no queue: M/G/infinity)
    compute use         = arrival rate x FLOPs per request / peak FLOP/s

For the running example a 1,024 + 256-token request stays about 4 s, so two
requests a second keep eight in flight and GPU-Util reads 99.97 %, while the
tensor cores do a few per cent of what they could:

>>> r = gpu_util_at_rate(2.0)
>>> round(r["gpu_util"] * 100, 2), round(r["compute_utilization"] * 100, 1), round(r["in_flight"], 1)
(99.97, 9.1, 8.1)

The live part of the page is the fleet of :mod:`calc.sim.fleet` under an
autoscaler on GPU-Util (preset ``step14-scale-on-gpu-util``), streamed with
:func:`fleet_views`, which step 15 reuses for its own autoscalers.
"""

from __future__ import annotations

import copy
import functools
import math
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_range
from calc.roofline import itl_s, max_throughput, prefill_attention_pairs, step_coefficients, ttft_s
from calc.sim import presets
from calc.sim.autoscaler import DEFAULT_THRESHOLDS
from calc.sim.live import live_frames
from calc.units import format_number
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS, replica_capacity
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.framework import FloatRange, IntRange, output, stream, view, widget
from calc.widgets.simulation import metrics

__all__ = ["gpu_util_at_rate", "rate_for_gpu_util", "replica_capacity_rps", "lesson_coefficients", "fleet_views",
           "fleet_scenario", "gpu_util_vs_load", "gpu_util_autoscaler", "preset_summary", "facts", "PRESET"]

PRESET = "step14-scale-on-gpu-util"
#: The engine's running-request cap in the simulator (vLLM's ``max_num_seqs`` default).
MAX_NUM_SEQS = 256
_UP_DEFAULT, _DOWN_DEFAULT = DEFAULT_THRESHOLDS["gpu_util"]
_ITERATIONS = 60  # the fixed point in-flight <-> ITL settles in a handful; this is a hard stop


@functools.lru_cache(maxsize=None)
def lesson_coefficients():
    """The roofline of the running example (Llama 3.1 70B, bf16, TP 4 on H100 SXM), from :mod:`calc.roofline`.

    >>> lesson_coefficients().tp
    4
    """
    return step_coefficients(get_model(lesson.REPLICA["model"]), get_gpu(lesson.REPLICA["gpu"]),
                             tp=lesson.REPLICA["tp"], weights=lesson.REPLICA["weights"],
                             kv_dtype=lesson.REPLICA["kv_dtype"])


def _lengths(prompt_tokens: int, answer_tokens: int) -> tuple[int, int]:
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 100_000, integer=True)
    answer = check_range("answer_tokens", answer_tokens, 1, 32_000, integer=True)
    return prompt, answer


def _stay_s(coef, prompt: int, answer: int, in_flight: float) -> float:
    """Seconds one request stays in the replica with ``in_flight`` others decoding beside it."""
    batch = max(1, round(in_flight))
    return ttft_s(coef, prompt_tokens=prompt) + (answer - 1) * itl_s(coef, batch=batch,
                                                                      context_tokens=prompt + answer // 2)


@functools.lru_cache(maxsize=256)
def replica_capacity_rps(prompt_tokens: int = PROMPT_TOKENS, answer_tokens: int = ANSWER_TOKENS) -> float:
    """Requests per second the running example's replica completes when flooded: its saturation point.

    Output tokens/s of :func:`calc.roofline.max_throughput` (prefill mixed into
    decode, at most 256 running, the replica's KV cache from step 1) divided by
    the answer length. Source: :mod:`calc.roofline`; the simulator's step 6
    preset saturates at the same rate.

    >>> round(replica_capacity_rps(), 2)
    9.05
    """
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    kv_tokens = replica_capacity().kv_cache_tokens_raw
    run = max_throughput(lesson_coefficients(), input_tokens=prompt, output_tokens=answer,
                         kv_capacity_tokens=kv_tokens, max_running=MAX_NUM_SEQS)
    return run["output_tokens_per_s"] / answer


def gpu_util_at_rate(rate_per_s: float, *, prompt_tokens: int = PROMPT_TOKENS,
                     answer_tokens: int = ANSWER_TOKENS) -> dict:
    """What GPU-Util reads, and the compute really used, for one replica of the running example at ``rate_per_s``.

    ``in_flight = rate x stay`` (Little's law), with ``stay = TTFT + (answer - 1)
    x ITL`` at a batch of ``in_flight`` (a fixed point: more in flight, slower
    steps, longer stays). With Poisson arrivals and no queue the number in flight
    is Poisson (M/G/infinity), so the replica is empty ``exp(-in_flight)`` of the
    time and GPU-Util, the share of time a kernel runs, is ``1 - exp(-in_flight)``.
    Compute utilization is the FLOPs the requests need over the GPU's peak.
    At or beyond the replica's capacity a queue forms: GPU-Util is 1 and the
    compute used stops at what the capacity needs (``saturated`` is True).
    Sources: NVML ``nvmlUtilization_t.gpu`` ("percent of time over the past sample
    period during which one or more kernels was executing"); Little's law
    (Little, Operations Research 1961); the M/G/infinity queue (Kleinrock,
    *Queueing Systems* vol. 1, 1975); step times from :mod:`calc.roofline`. The
    simulator agrees within a few points (tests/widgets/test_scaling_on_gpu_util.py).

    >>> r = gpu_util_at_rate(0.1)
    >>> round(r["gpu_util"], 2), round(r["stay_s"], 2)
    (0.33, 3.98)
    >>> gpu_util_at_rate(50)["saturated"]
    True
    >>> gpu_util_at_rate(-1)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rate_per_s must be between 0.001 and 1000; got -1
    """
    rate = check_range("rate_per_s", rate_per_s, 0.001, 1000)
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    coef = lesson_coefficients()
    capacity = replica_capacity_rps(prompt, answer)
    saturated = rate >= capacity
    served = min(rate, capacity)
    in_flight = 0.0
    stay = _stay_s(coef, prompt, answer, 1)
    for _ in range(_ITERATIONS):
        stay = _stay_s(coef, prompt, answer, in_flight)
        updated = served * stay
        if abs(updated - in_flight) < 1e-9:
            break
        in_flight = updated
    flops = coef.flops(new_tokens=prompt + answer, attention_token_pairs=prefill_attention_pairs(prompt + answer))
    return {
        "rate_per_s": rate,
        "capacity_rps": capacity,
        "load_fraction": rate / capacity,
        "stay_s": stay,
        "in_flight": in_flight,
        "gpu_util": 1.0 if saturated else 1.0 - math.exp(-in_flight),
        "compute_utilization": served * flops / coef.linear_flops_per_s,
        "saturated": saturated,
    }


def rate_for_gpu_util(gpu_util: float, *, prompt_tokens: int = PROMPT_TOKENS,
                      answer_tokens: int = ANSWER_TOKENS) -> float:
    """The arrival rate (requests/s) at which GPU-Util reads ``gpu_util`` on one replica of the running example.

    Inverts :func:`gpu_util_at_rate`: ``in_flight = -ln(1 - gpu_util)``, then
    ``rate = in_flight / stay`` at that batch.
    Source: as :func:`gpu_util_at_rate`.

    >>> round(rate_for_gpu_util(0.8), 3), round(rate_for_gpu_util(0.3), 3)
    (0.403, 0.09)
    """
    util = check_range("gpu_util", gpu_util, 0.0001, 0.9999)
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    in_flight = -math.log(1.0 - util)
    return in_flight / _stay_s(lesson_coefficients(), prompt, answer, in_flight)


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

# (figure key, title, y title, tick format, [(series, trace name, axis)])
FLEET_CHARTS = (
    ("traffic", "Arrivals and replicas", "requests/s", None,
     [("requests_per_s", "arrivals (requests/s)", "y"), ("replicas", "replicas paid for (right axis)", "y2")]),
    ("signals", "What an autoscaler can read", "share", ".0%",
     [("gpu_util_reported", "GPU-Util", "y"), ("compute_utilization", "compute utilization", "y"),
      ("kv_use_fraction", "KV cache in use", "y")]),
    ("queue", "Waiting and running requests (all replicas)", "requests", None,
     [("queue_depth", "waiting in the queue", "y"), ("running", "running", "y")]),
    ("latency", "Time to first token (trailing window)", "seconds", None,
     [("ttft_p50_s", "TTFT p50", "y"), ("ttft_p99_s", "TTFT p99", "y")]),
)
#: The metrics of :func:`calc.widgets.simulation.metrics` that matter for autoscaling.
FLEET_METRICS = ("requests_completed", "ttft_p50_s", "ttft_p99_s", "queue_depth_max", "gpu_util_reported",
                 "compute_utilization", "cost_usd_per_million_output_tokens", "replicas")


def _fleet_figures() -> dict:
    figures = {}
    for key, title, y_title, tick_format, traces in FLEET_CHARTS:
        yaxis = {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"}
        if tick_format:
            yaxis["tickformat"] = tick_format
        layout = {"title": {"text": title, "font": {"size": 14}},
                  "xaxis": {"title": {"text": "simulated time (s)"}, "automargin": True},
                  "yaxis": yaxis, "legend": {"orientation": "h", "y": -0.42, "yanchor": "top", "x": 0},
                  "margin": {"l": 60, "r": 50, "t": 40, "b": 60}, "height": 340}
        data = []
        for i, (series, name, axis) in enumerate(traces):
            trace = {"type": "scatter", "mode": "lines", "name": name, "meta": series, "x": [], "y": [],
                     "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}}
            if axis == "y2":
                trace["yaxis"] = "y2"
                trace["line"]["shape"] = "hv"
                layout["yaxis2"] = {"title": {"text": "replicas"}, "overlaying": "y", "side": "right",
                                    "rangemode": "tozero", "dtick": 1, "showgrid": False, "automargin": True}
            data.append(trace)
        figures[key] = {"data": data, "layout": layout, "x_series": "t_s",
                        "summary": f"{title} against simulated time."}
    return figures


def _fleet_outputs(summary: dict) -> list[dict]:
    panel = [o for o in metrics(summary, fleet=True) if o["key"] in FLEET_METRICS]
    hours = summary.get("replica_hours") or 0.0
    ups, downs = summary.get("scale_ups", 0), summary.get("scale_downs", 0)
    panel.append(output("replica_hours", "Replica-hours paid", hours, "h",
                        text=f"{format_number(hours)} h ({format_number(summary.get('gpu_hours') or 0.0)} GPU-hours)"))
    panel.append(output("scale_changes", "Scale-ups / scale-downs", ups, "", text=f"{ups} / {downs}"))
    return panel


def fleet_views(scenario: dict, frame_interval_s: float):
    """Views of a live fleet run: four charts first, then per frame the autoscaling metrics and new points.

    The charts: arrivals with the replicas paid for, the signals an autoscaler can
    read (GPU-Util, compute utilization, KV use), the queue, and TTFT. Source:
    :func:`calc.sim.live.live_frames` (one slice of work per frame).

    >>> first = next(fleet_views(fleet_scenario(PRESET), 30.0))
    >>> sorted(first["figures"]), first["outputs"]["replicas"]["text"]
    (['latency', 'queue', 'signals', 'traffic'], '1 / 2 / 1')
    """
    first = True
    for frame in live_frames(scenario, frame_interval_s=frame_interval_s):
        extra = {"figures": _fleet_figures()} if first else {}
        first = False
        yield view(outputs=_fleet_outputs(frame["summary"]), series=frame["points"], blockmap=frame["blockmap"],
                   t_s=frame["t_s"], done=frame["done"], **extra)


def fleet_scenario(preset: str, **autoscaler) -> dict:
    """The preset's fleet scenario as data, with any autoscaler settings replaced (CalcError if it is no fleet).

    >>> fleet_scenario(PRESET, scale_down_below=0.5)["fleet"]["autoscaler"]["scale_down_below"]
    0.5
    """
    data = copy.deepcopy(presets.load_data(preset))
    data.pop("lesson_step", None)
    if "fleet" not in data or "autoscaler" not in data["fleet"]:
        raise CalcError(f"preset must be a fleet with an autoscaler; {preset} has none", "preset")
    data["fleet"]["autoscaler"].update(autoscaler)
    return data


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
def preset_summary(name: str) -> dict:
    """The summary of a preset run (:func:`calc.sim.presets.run`), computed once per process.

    >>> preset_summary(PRESET)["replicas_final"]
    4
    """
    return presets.run(name).summary


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


def _no_math_dollars(facts: dict[str, str]) -> dict[str, str]:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return {key: value.replace("$", "&#36;") for key, value in facts.items()}


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, from calc and from the preset's run.

    >>> f = {key: value.replace("&#36;", "$") for key, value in facts().items()}
    >>> f["util_at_2"], f["rate_for_80"], f["replicas_final"], f["last_phase_util"]
    ('99.97%', '0.403 requests/s', '4', '97.2%')
    """
    summary = preset_summary(PRESET)
    queue = preset_summary("step15-scale-on-queue")
    data = presets.load_data(PRESET)
    phases = data["fleet"]["traffic"]
    auto = data["fleet"]["autoscaler"]
    last = _last_phase(PRESET)
    capacity = replica_capacity_rps()
    at_2 = gpu_util_at_rate(2.0)
    up_rate, down_rate = rate_for_gpu_util(auto.get("scale_up_above", _UP_DEFAULT)), rate_for_gpu_util(
        auto.get("scale_down_below", _DOWN_DEFAULT))
    peak_rate = max(max(p["rate_per_s"], p.get("end_rate_per_s", p["rate_per_s"])) for p in phases)
    first_event = summary["scale_events"][0]
    return _no_math_dollars({
        "capacity_rps": _rate(capacity),
        "stay_s": f"{format_number(at_2['stay_s'])} s",
        "stay_idle_s": f"{format_number(gpu_util_at_rate(0.01)['stay_s'])} s",
        "in_flight_at_2": format_number(at_2["in_flight"]),
        "util_at_2": _pct(at_2["gpu_util"]),
        "compute_at_2": _pct(at_2["compute_utilization"]),
        "share_at_2": _pct(at_2["load_fraction"]),
        "rate_for_80": _rate(up_rate),
        "rate_for_80_share": _pct(up_rate / capacity),
        "rate_for_30": _rate(down_rate),
        "rate_for_30_share": _pct(down_rate / capacity),
        "up_pct": f"{format_number(auto.get('scale_up_above', _UP_DEFAULT) * 100)}%",
        "down_pct": f"{format_number(auto.get('scale_down_below', _DOWN_DEFAULT) * 100)}%",
        "interval_s": f"{format_number(auto['interval_s'])} s",
        "cooldown_s": f"{format_number(auto['cooldown_s'])} s",
        "max_replicas": str(auto["max_replicas"]),
        "start_rate": _rate(phases[0]["rate_per_s"]),
        "peak_rate": _rate(peak_rate),
        "end_rate": _rate(phases[-1]["rate_per_s"]),
        "run_s": f"{format_number(math.fsum(p['duration_s'] for p in phases))} s",
        "first_scale_up_s": f"{format_number(first_event['t_s'])} s",
        "scale_ups": str(summary["scale_ups"]),
        "scale_downs": str(summary["scale_downs"]),
        "replicas_final": str(summary["replicas_final"]),
        "replicas_max": str(summary["replicas_max"]),
        "gpu_util_run": _pct(summary["gpu_util_reported"]),
        "compute_run": _pct(summary["compute_utilization"]),
        "ttft_p99": f"{format_number(summary['ttft_p99_s'])} s",
        "replica_hours": f"{format_number(summary['replica_hours'])}",
        "cost_usd": f"${summary['cost_usd']:.2f}",
        "last_phase_start_s": f"{format_number(last['start_s'])} s",
        "last_phase_s": f"{format_number(phases[-1]['duration_s'])} s",
        "last_phase_util": _pct(last["gpu_util"]),
        "last_phase_compute": _pct(last["compute_utilization"]),
        "last_phase_per_replica": _rate(last["rate_per_s"] / last["replicas"]),
        "last_phase_per_replica_share": _pct(last["rate_per_s"] / last["replicas"] / capacity),
        "queue_replica_hours": f"{format_number(queue['replica_hours'])}",
        "extra_hours_pct": _pct(summary["replica_hours"] / queue["replica_hours"] - 1),
    })
