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
from calc.autoscale import (
    first_scale_up, headroom_comparison, ramp_headroom, scale_up_delay_s, steepest_ramp, warm_headroom,
)
from calc.catalog import MODELS, get_gpu, get_model
from calc.cost import replica_usd_per_hour
from calc.errors import CalcError
from calc.memory import check_tp, weights_bytes_per_gpu
from calc.sim import presets
from calc.sim.autoscaler import AutoscalerConfig
from calc.sim.fleet import FleetScenario, simulate_fleet
from calc.units import GB, format_number, per_minute
from calc.widgets.charts import bar_chart, line_chart
from calc.widgets.controls import Model, Weights, tensor_parallel
from calc.widgets.framework import REGISTRY, Choice, FloatRange, IntRange, fact, facts_of, output, stream, view, widget
from calc.sim_views import fleet_time_series, fleet_scale_up_delay_s, fleet_scenario, preset_summary, warm_fleet_scenario
from calc.widgets.views import fleet_views, percent_text
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
# Each fact is computed alone when a page names it; the presets' runs are cached (calc.sim_views.preset_summary).

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


def _row_text(name: str) -> list[str]:
    s = preset_summary(name)
    return [autoscaler_label(name), _s(s["ttft_p50_s"]), _s(s["ttft_p99_s"]),
            f"{s['replicas_initial']} / {s['replicas_max']} / {s['replicas_final']}",
            format_number(s["replica_hours"]), f"${s['cost_usd']:.2f}"]


def comparison_rows() -> list[list[str]]:
    """One row per autoscaler of the page: TTFT p50 and p99, replicas (start/peak/end), replica-hours, cost.

    >>> comparison_rows()[0][0]
    'queue depth: up above 4 waiting per replica, down below 0.5'
    """
    return [_row_text(name) for name in SCENARIOS]


def _no_math_dollars(text: str) -> str:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return text.replace("$", "&#36;")


def _gb(n_bytes: float) -> str:
    return format_number(n_bytes / GB)


def _replicas_text(count: int) -> str:
    return f"{count} replica" + ("" if count == 1 else "s")


def _queue_run() -> dict:
    return preset_summary(QUEUE)


def _warm_run() -> dict:
    return preset_summary(HEADROOM)


def _gpu_run() -> dict:
    return preset_summary(GPU_UTIL)


@functools.cache
def _first_up() -> dict:
    return first_scale_up(_queue_run(), presets.load_data(QUEUE)["fleet"]["traffic"],
                          delay_s=fleet_scale_up_delay_s(), replica_capacity_rps=_DEFAULT_CAPACITY_RPS)


@functools.cache
def _ramp() -> dict:
    return steepest_ramp(presets.load_data(QUEUE)["fleet"]["traffic"])


@functools.cache
def _sizing() -> dict:
    ramp = _ramp()
    return ramp_headroom(start_rps=ramp["start_rps"], slope_rps_per_s=ramp["slope_rps_per_s"],
                         window_s=_DEFAULT_WINDOW_S, replica_capacity_rps=_DEFAULT_CAPACITY_RPS)


def _headroom() -> dict:
    return headroom_comparison(_warm_run(), _queue_run(), _gpu_run())


@functools.cache
def _widget_outputs() -> dict:
    return warm_headroom_view()["outputs"]


@fact
def delay_s():
    """>>> delay_s(), delay_60_s()
    ('47.6 s', '77.6 s')
    """
    return _s(fleet_scale_up_delay_s())


@fact
def delay_60_s():
    return _s(fleet_scale_up_delay_s(60, 2))


@fact
def pod_start_s():
    return _s(_config(QUEUE).pod_start_s)


@fact
def load_gb_per_s():
    return f"{_gb(_config(QUEUE).load_bytes_per_s)} GB/s"


@fact
def weights_per_gpu():
    model = get_model(lesson.REPLICA["model"])
    return f"{_gb(weights_bytes_per_gpu(model, lesson.REPLICA['tp'], lesson.REPLICA['weights']))} GB"


@fact
def interval_s():
    return _s(_config(QUEUE).interval_s)


@fact
def cooldown_s():
    return _s(_config(QUEUE).cooldown_s)


@fact
def window_s():
    return _s(_DEFAULT_WINDOW_S)


@fact
def capacity_rps():
    return f"{format_number(_DEFAULT_CAPACITY_RPS)} requests/s"


@fact
def queue_up():
    return format_number(_config(QUEUE).scale_up_above)


@fact
def queue_down():
    return format_number(_config(QUEUE).scale_down_below)


@fact
def kv_up():
    return percent_text(_config(KV).scale_up_above)


@fact
def kv_down():
    return percent_text(_config(KV).scale_down_below)


@fact
def warm_min():
    return str(_config(HEADROOM).min_replicas)


@fact
def warm_up():
    return format_number(_config(HEADROOM).scale_up_above)


@fact
def max_replicas():
    return str(_config(QUEUE).max_replicas)


@fact
def first_up_s():
    """The queue autoscaler's first scale-up, and when the new replica serves.

    >>> first_up_s(), first_ready_s()
    ('120 s', '168 s')
    """
    return _s(_first_up()["up_s"])


@fact
def first_up_queue():
    return format_number(_first_up()["value"])


@fact
def first_ready_s():
    return _s(_first_up()["ready_s"])


@fact
def rate_at_first_up():
    return f"{format_number(_first_up()['rate_at_up_rps'])} requests/s"


@fact
def rate_at_first_ready():
    return f"{format_number(_first_up()['rate_at_ready_rps'])} requests/s"


@fact
def queue_max():
    return f"{_queue_run()['queue_depth_max']:,}"


@fact
def queue_ttft_p50():
    return _s(_queue_run()["ttft_p50_s"])


@fact
def queue_ttft_p99():
    """>>> queue_ttft_p99(), headroom_ttft_p99()
    ('64.5 s', '0.472 s')
    """
    return _s(_queue_run()["ttft_p99_s"])


@fact
def queue_replica_hours():
    return format_number(_queue_run()["replica_hours"])


@fact
def queue_final():
    return _replicas_text(_queue_run()["replicas_final"])


@fact
def first_ready_multiple():
    return f"{format_number(_first_up()['ready_multiple'], 2)} times"


@fact
def queue_downs():
    return str(_queue_run()["scale_downs"])


@fact
def kv_vs_queue():
    return _kv_vs_queue(_queue_run(), preset_summary(KV))


@fact
def headroom_ttft_p99():
    return _s(_warm_run()["ttft_p99_s"])


@fact
def headroom_replica_hours():
    return format_number(_warm_run()["replica_hours"])


@fact
def headroom_extra_pct():
    return percent_text(_headroom()["extra_hours_fraction"])


@fact
def gpu_ttft_p99():
    return _s(_gpu_run()["ttft_p99_s"])


@fact
def gpu_replica_hours():
    return format_number(_gpu_run()["replica_hours"])


@fact
def ramp_start_rps():
    return f"{format_number(_ramp()['start_rps'])} requests/s"


@fact
def ramp_end_rps():
    return f"{format_number(_ramp()['end_rps'])} requests/s"


@fact
def ramp_slope_per_min():
    return f"{format_number(per_minute(_ramp()['slope_rps_per_s']))} requests/s"


@fact
def ramp_growth_rps():
    """>>> ramp_growth_rps(), ramp_growth_replicas(), _ramp_headroom_replicas(), ramp_floor()
    ('7.51 requests/s', '1.03', '2 replicas', '3')
    """
    return f"{format_number(_sizing()['growth_rps'])} requests/s"


@fact
def ramp_growth_replicas():
    return format_number(_sizing()["growth_replicas"], 3)


@fact("ramp_headroom")
def _ramp_headroom_replicas():
    return _replicas_text(_sizing()["headroom_replicas"])


@fact
def ramp_start_replicas():
    return str(_sizing()["replicas_at_start"])


@fact
def ramp_floor():
    return str(_sizing()["warm_floor"])


@fact
def headroom_saving_pct():
    return percent_text(_headroom()["hours_saving_fraction"])


@fact
def headroom_p99_ratio():
    return f"{format_number(_headroom()['p99_ratio'], 2)} times"


@fact
def widget_headroom():
    return _widget_outputs()["headroom_replicas"]["text"]


@fact
def widget_load():
    return f"{format_number(_WIDGET_DEFAULTS['load_rps'])} requests/s"


@fact
def widget_growth():
    return f"{format_number(_WIDGET_DEFAULTS['growth_pct_per_min'])}%"


@fact
def widget_now():
    return str(_widget_outputs()["replicas_now"]["value"])


@fact
def widget_end():
    return str(_widget_outputs()["replicas_at_end"]["value"])


def _row_fact(row: int, column: int) -> None:
    """Register ``row{row}_{column}``: one cell of the comparison table (the autoscaler SCENARIOS[row], _row_text)."""
    def value():
        return _no_math_dollars(_row_text(SCENARIOS[row])[column])

    value.__name__ = value.__qualname__ = f"row{row}_{column}"
    value.__module__ = __name__
    fact(value)


for _row in range(len(SCENARIOS)):
    for _column in range(6):  # label, TTFT p50, TTFT p99, replicas, replica-hours, cost: _row_text
        _row_fact(_row, _column)


facts = facts_of(__name__)
