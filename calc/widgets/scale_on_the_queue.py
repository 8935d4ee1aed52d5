"""Widgets and facts of step 15, "Scale on the queue" (docs/lesson/15-scale-on-the-queue.md).

Scale an LLM service on a signal that rises only when a replica is really full:
requests waiting for admission (vLLM's ``num_requests_waiting``) or KV cache use
(``gpu_cache_usage_perc``). A new replica then serves only after

    scale-up delay = pod start + weights per GPU / load bandwidth

(the GPUs of a tensor-parallel replica read their shards at the same time), so the
replicas already running must carry the traffic that grows during that window:

    warm headroom = replicas for the load at the end of the window - replicas for the load now

>>> round(fleet_scale_up_delay_s(), 1)        # the simulator's fleet: 30 s pod start + 35.3 GB at 2 GB/s
47.6
>>> warm_headroom_view()["outputs"]["headroom_replicas"]["text"]
'1 replica (+21% load)'
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc import lesson
from calc.autoscale import ramp_headroom, scale_up_delay_s, steepest_ramp, warm_headroom
from calc.catalog import MODELS, get_gpu, get_model
from calc.cost import replica_usd_per_hour
from calc.errors import CalcError
from calc.memory import check_tp, weights_bytes_per_gpu
from calc.sim import presets
from calc.sim.autoscaler import AutoscalerConfig
from calc.sim.fleet import FleetScenario, simulate_fleet
from calc.units import GB, format_number
from calc.widgets.charts import bar_chart, line_chart
from calc.widgets.controls import Model, Weights, tensor_parallel
from calc.widgets.framework import REGISTRY, Choice, FloatRange, IntRange, output, stream, view, widget
from calc.sim_views import fleet_time_series, fleet_scale_up_delay_s, fleet_scenario, preset_summary, warm_fleet_scenario
from calc.widgets.views import fleet_views
from calc.gpu_util import replica_capacity_rps as _capacity_rps

__all__ = ["autoscaler_choice", "three_arms", "scale_up_delay", "warm_headroom_view", "queue_autoscaler", "autoscaler_label",
           "facts", "SCENARIOS"]

QUEUE, KV, HEADROOM, GPU_UTIL = ("step15-scale-on-queue", "step15-scale-on-kv", "step15-warm-headroom",
                                 "step14-scale-on-gpu-util")
SCENARIOS = (QUEUE, KV, HEADROOM, GPU_UTIL)
#: Load bandwidths drawn in the scale-up chart (GB/s): what-if values from a slow network volume to a fast
#: local NVMe array, not measurements; the reader's own value is added to them.
BANDWIDTHS_GB_PER_S = (0.5, 1, 2, 5, 10, 25)

_QUEUE_AUTO = presets.load_data(QUEUE)["fleet"]["autoscaler"]
_GPU = get_gpu(lesson.REPLICA["gpu"])


def _config(name: str) -> AutoscalerConfig:
    return AutoscalerConfig.from_dict(presets.load_data(name)["fleet"]["autoscaler"])


def autoscaler_choice(name: str) -> str:
    """A short name of a fleet preset's autoscaler, for the simulation's menu.

    >>> autoscaler_choice("step15-warm-headroom")
    'queue depth, at least 3 warm'
    """
    cfg = _config(name)
    if cfg.signal == "queue_depth":
        return "queue depth" + (f", at least {cfg.min_replicas} warm" if cfg.min_replicas > 1 else "")
    return "KV cache use" if cfg.signal == "kv_use" else "GPU-Util (step 14)"


def autoscaler_label(name: str) -> str:
    """The autoscaler of a fleet preset in words, from its settings (thresholds as the simulator applies them).

    >>> autoscaler_label("step15-scale-on-queue")
    'queue depth: up above 4 waiting per replica, down below 0.5'
    >>> autoscaler_label("step15-warm-headroom")
    'queue depth with warm headroom: at least 3 replicas, up above 4 waiting per replica'
    """
    cfg = _config(name)
    up, down = format_number(cfg.scale_up_above), format_number(cfg.scale_down_below)
    if cfg.signal == "queue_depth" and cfg.min_replicas > 1:
        return f"queue depth with warm headroom: at least {cfg.min_replicas} replicas, up above {up} waiting per replica"
    if cfg.signal == "queue_depth":
        return f"queue depth: up above {up} waiting per replica, down below {down}"
    kind = "KV cache use" if cfg.signal == "kv_use" else "GPU-Util (step 14)"
    return (f"{kind}: up above {format_number(cfg.scale_up_above * 100)}%, "
            f"down below {format_number(cfg.scale_down_below * 100)}%")


# --- widgets ------------------------------------------------------------------------------------



def _s(seconds: float) -> str:
    return f"{format_number(seconds)} s"


@widget
def scale_up_delay(
    model: Model = lesson.REPLICA["model"],
    weights: Weights = lesson.REPLICA["weights"],
    tp: tensor_parallel("GPUs per replica (tensor parallel)", unit="") = lesson.REPLICA["tp"],
    pod_start_s: Annotated[float, FloatRange(0, 1800, 5, "s", label="Pod start",
                                             help="scheduling, image pull, engine start, CUDA graphs")] =
        _QUEUE_AUTO["pod_start_s"],
    load_gb_per_s: Annotated[float, FloatRange(0.05, 200, 0.5, "GB/s", label="Load bandwidth per GPU")] =
        _QUEUE_AUTO["load_bytes_per_s"] / GB,
):
    """Seconds from "scale up" to a new replica serving: pod start plus each GPU's weight shard over the load bandwidth."""
    chosen = get_model(model)
    tp = check_tp(chosen, tp)
    per_gpu = weights_bytes_per_gpu(chosen, tp, weights)
    delay = scale_up_delay_s(pod_start_s=pod_start_s, weights_bytes=per_gpu, load_bytes_per_s=load_gb_per_s * GB)
    shared = scale_up_delay_s(pod_start_s=pod_start_s, weights_bytes=per_gpu * tp,
                              load_bytes_per_s=load_gb_per_s * GB)
    bandwidths = sorted(set(BANDWIDTHS_GB_PER_S) | {load_gb_per_s})
    names = [f"{format_number(b)} GB/s" + (" (yours)" if b == load_gb_per_s else "") for b in bandwidths]
    figure = bar_chart(
        f"Scale-up delay of {chosen.name} ({weights}, {tp} GPUs)", names, "seconds", {
            "pod start": [pod_start_s] * len(bandwidths),
            "loading the weights": [per_gpu / (b * GB) for b in bandwidths],
        }, horizontal=True,
        summary=(f"At {format_number(load_gb_per_s)} GB/s per GPU a new replica serves after {_s(delay)}: "
                 f"{_s(pod_start_s)} of pod start and {_s(delay - pod_start_s)} reading "
                 f"{format_number(per_gpu / GB)} GB per GPU."),
    )
    figure["layout"]["xaxis"]["title"] = {"text": "seconds until the new replica serves"}
    figure["layout"]["legend"].update(y=-0.35, yanchor="top", x=0)  # clear of the axis title
    figure["layout"]["yaxis"]["title"] = {"text": "load bandwidth per GPU"}
    return view(
        outputs=[
            output("weights_per_gpu", "Weights per GPU", per_gpu, "B", text=f"{format_number(per_gpu / GB)} GB"),
            output("load_s", "Reading them", delay - pod_start_s, "s", text=_s(delay - pod_start_s)),
            output("delay_s", "Scale-up delay", delay, "s", text=_s(delay)),
            output("shared_delay_s", "If the GPUs share one pipe", shared, "s", text=_s(shared),
                   note="the whole replica's weights through one link of that bandwidth"),
        ],
        figures={"delay": figure},
    )


_DEFAULT_WINDOW_S = round(fleet_scale_up_delay_s() + _QUEUE_AUTO["interval_s"], 1)
_DEFAULT_CAPACITY_RPS = round(_capacity_rps(), 2)


@widget
def warm_headroom_view(
    load_rps: Annotated[float, FloatRange(0.1, 10_000, 1, "requests/s", label="Traffic now")] = 20.0,
    growth_pct_per_min: Annotated[float, FloatRange(0, 500, 1, "% per minute", label="Traffic growth")] = 20.0,
    window_s: Annotated[float, FloatRange(0, 3600, 1, "s", label="Window to cover",
                                          help="autoscaler interval + scale-up delay")] = _DEFAULT_WINDOW_S,
    replica_capacity_rps: Annotated[float, FloatRange(0.01, 10_000, 0.1, "requests/s",
                                                      label="One replica sustains")] = _DEFAULT_CAPACITY_RPS,
    target_utilization_pct: Annotated[float, FloatRange(5, 100, 5, "%", label="Run replicas at")] = 80.0,
    usd_per_gpu_hour: Annotated[float, FloatRange(0, 100, 0.01, "USD", label="Price per GPU-hour")] =
        _GPU.price_usd_per_hour,
):
    """Replicas to keep warm so that traffic growing through the scale-up window is served."""
    result = warm_headroom(load_rps=load_rps, growth_per_min=growth_pct_per_min / 100, delay_s=window_s,
                           replica_capacity_rps=replica_capacity_rps,
                           target_utilization=target_utilization_pct / 100)
    per_replica = replica_capacity_rps * target_utilization_pct / 100
    gpus = lesson.REPLICA["tp"]
    headroom_usd = replica_usd_per_hour(usd_per_gpu_hour, gpus) * result["headroom_replicas"]
    times = [window_s * i / 40 for i in range(41)]
    loads = [load_rps * (1 + growth_pct_per_min / 100) ** (t / 60) for t in times]
    now, end = result["replicas_now"], result["replicas_at_end"]
    figure = line_chart(
        "Traffic through the scale-up window", "seconds from the moment traffic starts to grow", "requests/s", {
            "traffic": (times, loads),
            f"{now} replicas carry": ([0, window_s], [now * per_replica] * 2),
            f"{end} replicas carry": ([0, window_s], [end * per_replica] * 2),
        },
        summary=(f"Traffic grows from {format_number(load_rps)} to {format_number(result['load_at_end_rps'])} "
                 f"requests/s in {_s(window_s)}; {now} replicas at {format_number(target_utilization_pct)}% carry "
                 f"{format_number(now * per_replica)} requests/s, {end} carry {format_number(end * per_replica)}."),
    )
    for trace in figure["data"][1:]:
        trace["line"]["dash"] = "dash"
    if now == end:  # one line would hide the other
        figure["data"].pop()
    figure["layout"]["yaxis"]["rangemode"] = "tozero"
    figure["layout"]["legend"]["y"] = -0.38  # clear of the axis title
    headroom = result["headroom_replicas"]
    return view(
        outputs=[
            output("load_at_end_rps", "Traffic at the end of the window", result["load_at_end_rps"], "requests/s"),
            output("replicas_now", "Replicas for today's traffic", now, "replicas"),
            output("replicas_at_end", "Replicas for the end of the window", end, "replicas"),
            output("headroom_replicas", "Warm headroom", headroom, "replicas",
                   text=f"{headroom} replica{'' if headroom == 1 else 's'} "
                        f"(+{format_number(result['headroom_fraction'] * 100)}% load)"),
            output("headroom_usd_per_hour", "Headroom costs", headroom_usd, "USD/h",
                   text=f"${headroom_usd:,.2f} per hour ({headroom} × {gpus} GPUs × ${usd_per_gpu_hour:,.2f})"),
        ],
        figures={"window": figure},
    )


_SCENARIO_CHOICES = tuple((name, autoscaler_choice(name)) for name in SCENARIOS)


@stream(budget_s=4.0)
def queue_autoscaler(
    scenario: Annotated[str, Choice(_SCENARIO_CHOICES, label="Autoscaler")] = QUEUE,
    min_replicas: Annotated[int, IntRange(0, 4, label="Replicas kept warm", help="0 keeps the scenario's")] = 0,
    pod_start_s: Annotated[float, FloatRange(0, 600, 5, "s", label="Pod start")] = _QUEUE_AUTO["pod_start_s"],
    load_gb_per_s: Annotated[float, FloatRange(0.1, 100, 0.5, "GB/s", label="Load bandwidth per GPU")] =
        _QUEUE_AUTO["load_bytes_per_s"] / GB,
    frame_interval_s: Annotated[float, FloatRange(1, 60, 1, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The day's ramp under an autoscaler on the queue, the KV cache or GPU-Util, with the scale-up delay you set."""
    data = warm_fleet_scenario(scenario, min_replicas) if min_replicas else fleet_scenario(scenario)
    data["fleet"]["autoscaler"].update(pod_start_s=pod_start_s, load_bytes_per_s=load_gb_per_s * GB)
    yield from fleet_views(data, frame_interval_s)


#: The page's before/after: the wrong signal (step 14), the right one, and the right one with warm headroom.
ARMS = ((GPU_UTIL, "GPU-Util (step 14)"), (QUEUE, "queue depth"), (HEADROOM, "queue depth + warm headroom"))
ARM_METRICS = (("ttft_p99_s", "TTFT p99, 10 s window"), ("replicas", "Replicas paid for"))


@widget
def three_arms():
    """Step 14's autoscaler, the queue's, and the queue's with warm headroom on the same day, each metric one chart.

    The queue fixes the bill (replicas come back down), warm headroom fixes the latency the
    scale-up window leaves. Every curve is a preset's finished run (:func:`calc.sim_views.fleet_time_series`);
    the widget has no controls, so the browser shows what the build drew and runs no fleet again.

    >>> v = three_arms()
    >>> [t["name"] for t in v["figures"]["replicas"]["data"]]
    ['GPU-Util (step 14)', 'queue depth', 'queue depth + warm headroom']
    >>> v["outputs"]["headroom_ttft_p99_s"]["text"], v["outputs"]["queue_replica_hours"]["text"]
    ('0.472 s', '0.321')
    """
    summaries = {name: preset_summary(name) for name, _ in ARMS}
    figures = {}
    for metric, label in ARM_METRICS:
        series = {}
        for name, arm in ARMS:
            ts = fleet_time_series(name)
            points = [(t, v) for t, v in zip(ts["t_s"], ts[metric]) if v is not None]
            series[arm] = ([t for t, _ in points], [v for _, v in points])
        figure = line_chart(label, "time (s)", label, series,  # a short title: it must fit a phone's width
                            summary=", ".join(f"{arm}: TTFT p99 {_s(summaries[name]['ttft_p99_s'])}, "
                                              f"{format_number(summaries[name]['replica_hours'])} replica-hours"
                                              for name, arm in ARMS) + ".")
        figure["layout"]["height"] = 320
        figure["layout"]["legend"]["y"] = -0.36  # below the axis title, not on it
        figure["layout"]["margin"]["b"] = 95
        figures["ttft" if metric == "ttft_p99_s" else "replicas"] = figure
    outputs = []
    for name, arm in ARMS:
        key = {GPU_UTIL: "gpu", QUEUE: "queue", HEADROOM: "headroom"}[name]
        s = summaries[name]
        outputs += [output(f"{key}_ttft_p99_s", f"{arm}: TTFT p99", s["ttft_p99_s"], "s", text=_s(s["ttft_p99_s"])),
                    output(f"{key}_replica_hours", f"{arm}: replica-hours", s["replica_hours"], "h",
                           text=format_number(s["replica_hours"]))]
    return view(outputs=outputs, figures=figures)


_WIDGET_DEFAULTS = REGISTRY["scale_on_the_queue.warm_headroom_view"].defaults


# --- facts --------------------------------------------------------------------------------------

def _rate_at(phases: list, t_s: float) -> float:
    """The scenario's arrival rate at ``t_s`` (linear within a phase)."""
    start = 0.0
    for p in phases:
        end = start + p["duration_s"]
        if t_s <= end:
            stop = p.get("end_rate_per_s", p["rate_per_s"])
            return p["rate_per_s"] + (stop - p["rate_per_s"]) * (t_s - start) / p["duration_s"]
        start = end
    return phases[-1].get("end_rate_per_s", phases[-1]["rate_per_s"])


def _ticks(summary: dict) -> list[tuple]:
    return [(e["t_s"], e["from"], e["to"]) for e in summary["scale_events"]]


def _kv_vs_queue(queue: dict, kv: dict) -> str:
    """One sentence comparing the KV-use run with the queue-depth run."""
    if _ticks(queue) == _ticks(kv):
        return ("On this traffic the KV cache crosses its line at the very ticks the queue crosses its own, so "
                "the two runs make the same decisions and end with the same numbers")
    times = ", ".join(_s(e["t_s"]) for e in kv["scale_events"])
    return (f"On this traffic the KV autoscaler decides at other ticks ({times}); its TTFT p99 is "
            f"{_s(kv['ttft_p99_s'])}")


def comparison_rows() -> list[list[str]]:
    """One row per autoscaler of the page: TTFT p50 and p99, replicas (start/peak/end), replica-hours, cost.

    >>> comparison_rows()[0][0]
    'queue depth: up above 4 waiting per replica, down below 0.5'
    """
    rows = []
    for name in SCENARIOS:
        s = preset_summary(name)
        rows.append([autoscaler_label(name), _s(s["ttft_p50_s"]), _s(s["ttft_p99_s"]),
                     f"{s['replicas_initial']} / {s['replicas_max']} / {s['replicas_final']}",
                     format_number(s["replica_hours"]), f"${s['cost_usd']:.2f}"])
    return rows


def _no_math_dollars(facts: dict[str, str]) -> dict[str, str]:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return {key: value.replace("$", "&#36;") for key, value in facts.items()}


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, from calc and from the presets' runs.

    >>> f = {key: value.replace("&#36;", "$") for key, value in facts().items()}
    >>> f["delay_s"], f["first_up_s"], f["first_ready_s"], f["queue_ttft_p99"], f["headroom_ttft_p99"]
    ('47.6 s', '120 s', '168 s', '64.5 s', '0.472 s')
    >>> f["ramp_growth_rps"], f["ramp_growth_replicas"], f["ramp_headroom"], f["ramp_floor"]
    ('7.51 requests/s', '1.03', '2 replicas', '3')
    """
    queue, kv, warm, gpu = (preset_summary(n) for n in SCENARIOS)
    data = presets.load_data(QUEUE)
    phases = data["fleet"]["traffic"]
    cfg = _config(QUEUE)
    delay = fleet_scale_up_delay_s()
    first = queue["scale_events"][0]
    model = get_model(lesson.REPLICA["model"])
    per_gpu = weights_bytes_per_gpu(model, lesson.REPLICA["tp"], lesson.REPLICA["weights"])
    widget_defaults = warm_headroom_view()["outputs"]
    ramp = steepest_ramp(phases)
    sizing = ramp_headroom(start_rps=ramp["start_rps"], slope_rps_per_s=ramp["slope_rps_per_s"],
                           window_s=_DEFAULT_WINDOW_S, replica_capacity_rps=_DEFAULT_CAPACITY_RPS)
    headroom = sizing["headroom_replicas"]
    out = {
        "delay_s": _s(delay),
        "delay_60_s": _s(fleet_scale_up_delay_s(60, 2)),
        "pod_start_s": _s(cfg.pod_start_s),
        "load_gb_per_s": f"{format_number(cfg.load_bytes_per_s / GB)} GB/s",
        "weights_per_gpu": f"{format_number(per_gpu / GB)} GB",
        "interval_s": _s(cfg.interval_s),
        "cooldown_s": _s(cfg.cooldown_s),
        "window_s": _s(_DEFAULT_WINDOW_S),
        "capacity_rps": f"{format_number(_DEFAULT_CAPACITY_RPS)} requests/s",
        "queue_up": format_number(cfg.scale_up_above),
        "queue_down": format_number(cfg.scale_down_below),
        "kv_up": f"{format_number(_config(KV).scale_up_above * 100)}%",
        "kv_down": f"{format_number(_config(KV).scale_down_below * 100)}%",
        "warm_min": str(_config(HEADROOM).min_replicas),
        "warm_up": format_number(_config(HEADROOM).scale_up_above),
        "max_replicas": str(cfg.max_replicas),
        "first_up_s": _s(first["t_s"]),
        "first_up_queue": format_number(first["value"]),
        "first_ready_s": _s(first["t_s"] + delay),
        "rate_at_first_up": f"{format_number(_rate_at(phases, first['t_s']))} requests/s",
        "rate_at_first_ready": f"{format_number(_rate_at(phases, first['t_s'] + delay))} requests/s",
        "queue_max": f"{queue['queue_depth_max']:,}",
        "queue_ttft_p50": _s(queue["ttft_p50_s"]),
        "queue_ttft_p99": _s(queue["ttft_p99_s"]),
        "queue_replica_hours": format_number(queue["replica_hours"]),
        "queue_final": f"{queue['replicas_final']} replica" + ("" if queue["replicas_final"] == 1 else "s"),
        "first_ready_multiple": f"{format_number(_rate_at(phases, first['t_s'] + delay) / _DEFAULT_CAPACITY_RPS, 2)} times",
        "queue_downs": str(queue["scale_downs"]),
        "kv_vs_queue": _kv_vs_queue(queue, kv),
        "headroom_ttft_p99": _s(warm["ttft_p99_s"]),
        "headroom_replica_hours": format_number(warm["replica_hours"]),
        "headroom_extra_pct": f"{format_number((warm['replica_hours'] / queue['replica_hours'] - 1) * 100)}%",
        "gpu_ttft_p99": _s(gpu["ttft_p99_s"]),
        "gpu_replica_hours": format_number(gpu["replica_hours"]),
        "ramp_start_rps": f"{format_number(ramp['start_rps'])} requests/s",
        "ramp_end_rps": f"{format_number(ramp['end_rps'])} requests/s",
        "ramp_slope_per_min": f"{format_number(ramp['slope_rps_per_s'] * 60)} requests/s",
        "ramp_growth_rps": f"{format_number(sizing['growth_rps'])} requests/s",
        "ramp_growth_replicas": format_number(sizing["growth_replicas"], 3),
        "ramp_headroom": f"{headroom} replica" + ("" if headroom == 1 else "s"),
        "ramp_start_replicas": str(sizing["replicas_at_start"]),
        "ramp_floor": str(sizing["warm_floor"]),
        "headroom_saving_pct": f"{format_number((1 - warm['replica_hours'] / gpu['replica_hours']) * 100)}%",
        "headroom_p99_ratio": f"{format_number(gpu['ttft_p99_s'] / warm['ttft_p99_s'], 2)} times",
        "widget_headroom": widget_defaults["headroom_replicas"]["text"],
        "widget_load": f"{format_number(_WIDGET_DEFAULTS['load_rps'])} requests/s",
        "widget_growth": f"{format_number(_WIDGET_DEFAULTS['growth_pct_per_min'])}%",
        "widget_now": str(widget_defaults["replicas_now"]["value"]),
        "widget_end": str(widget_defaults["replicas_at_end"]["value"]),
    }
    for i, row in enumerate(comparison_rows()):
        for j, cell in enumerate(row):
            out[f"row{i}_{j}"] = cell
    return _no_math_dollars(out)
