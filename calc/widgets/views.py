"""Views that several pages share: the live fleet's charts and metrics (steps 14, 15, 19 and 20 use them).

A page module turns calc's science into a view; what more than one page shows the
same way lives here, so that no page module imports another. The simulation view
of a single replica is :mod:`calc.widgets.simulation`.

>>> first = next(fleet_views(fleet_scenario("step14-scale-on-gpu-util"), 30.0))
>>> sorted(first["figures"]), first["outputs"]["replicas"]["text"]
(['latency', 'queue', 'signals', 'traffic'], '1 / 2 / 1')
"""

from __future__ import annotations

from calc.sim.live import live_frames
from calc.sim_views import fleet_scenario  # noqa: F401 (the doctest's scenario)
from calc.units import format_number
from calc.widgets.charts import PALETTE
from calc.widgets.framework import output, view
from calc.widgets.simulation import metrics

__all__ = ["FLEET_CHARTS", "FLEET_METRICS", "fleet_views"]

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

    >>> views = list(fleet_views(fleet_scenario("step15-scale-on-queue"), 60.0))
    >>> len(views[0]["figures"]), len(views[1]["figures"]), views[-1]["done"]
    (4, 0, True)
    """
    first = True
    for frame in live_frames(scenario, frame_interval_s=frame_interval_s):
        extra = {"figures": _fleet_figures()} if first else {}
        first = False
        yield view(outputs=_fleet_outputs(frame["summary"]), series=frame["points"], blockmap=frame["blockmap"],
                   t_s=frame["t_s"], done=frame["done"], **extra)
