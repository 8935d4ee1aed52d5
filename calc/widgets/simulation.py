"""The live simulation view's Python side: a lesson preset run as a stream of views.

:func:`replica` is the stream the pages embed (``/// simulation | simulation.replica``);
its controls change the preset's scenario and rerun it. The first view carries the
charts (empty traces that name their series in ``meta``) and every view carries
the metrics so far, the new time-series points and the KV block map of one replica
(see :func:`calc.sim.live.live_frames`). The build folds all views into the page
(:func:`calc.widgets.framework.collect_stream`); the browser animates them.

>>> views = list(replica(preset="step05-paged", frame_interval_s=30.0))
>>> views[0]["figures"]["latency"]["data"][0]["meta"]
'ttft_p50_s'
>>> views[-1]["done"], views[-1]["outputs"]["requests_completed"]["value"] > 0
(True, True)
"""

from __future__ import annotations

from typing import Annotated

from calc.sim import presets
from calc.sim.live import live_frames
from calc.units import format_number
from calc.sim_views import KEEP, kv_cache_shares, scenario_for  # kv_cache_shares: the KV chart's bands
from calc.widgets.charts import PALETTE
from calc.widgets.framework import Choice, FloatRange, IntRange, output, stream, view

PRESET_CHOICES = tuple((name, f"Step {int(name[4:6])}: {name[7:].replace('-', ' ')}") for name in presets.names())

# (figure key, title, y-axis title, y tick format, [(series key, trace name)])
CHARTS = (
    ("load", "Queue and running batch", "requests", None,
     [("queue_depth", "waiting in the queue"), ("running", "running (the batch)")]),
    ("kv", "KV cache", "share of the KV cache", ".0%",
     [("kv_token_fraction", "holding tokens"), ("kv_reserved_empty_fraction", "reserved, holding no token"),
      ("kv_free_fraction", "free")]),
    ("latency", "Latency (trailing window)", "seconds", None,
     [("ttft_p50_s", "TTFT p50"), ("ttft_p99_s", "TTFT p99"), ("itl_p50_s", "ITL p50"), ("itl_p99_s", "ITL p99")]),
    ("throughput", "Output tokens per second", "tokens/s", None, [("output_tokens_per_s", "output tokens/s")]),
    ("utilization", "GPU-Util as reported against real compute use", "share of time / of peak FLOP/s", ".0%",
     [("gpu_util_reported", "GPU-Util (a kernel is running)"), ("compute_utilization", "compute utilization")]),
    ("replicas", "Replicas", "replicas", None, [("replicas", "replicas")]),
)


#: The KV chart's bands, bottom to top: the colours of step 4's cache chart (free in the palette's grey).
KV_COLOURS = (PALETTE[0], PALETTE[1], PALETTE[-1])
KV_SUMMARY = ("KV cache against simulated time, as shares of the whole cache stacked bottom to top: holding tokens, "
              "reserved but holding no token, and free; they add up to 100%, and the top of the reserved band is "
              "the cache in use, what a dashboard's KV cache usage reports.")


def _figures(fleet_run: bool) -> dict:
    figures = {}
    for key, title, y_title, tick_format, traces in CHARTS:
        if key == "replicas" and not fleet_run:
            continue
        yaxis = {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"}
        if tick_format:
            yaxis["tickformat"] = tick_format
        data = [{"type": "scatter", "mode": "lines", "name": name, "meta": series, "x": [], "y": [],
                 "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}}
                for i, (series, name) in enumerate(traces)]
        summary = f"{title} against simulated time."
        if key == "kv":  # one whole, stacked: every band is a share of the cache, as the axis says
            for trace, colour in zip(data, KV_COLOURS):
                trace.update(stackgroup="kv", line={"color": colour, "width": 1})
            yaxis["range"] = [0, 1.02]
            summary = KV_SUMMARY
        figures[key] = {
            "data": data,
            "layout": {"title": {"text": title, "font": {"size": 14}},
                       "xaxis": {"title": {"text": "simulated time (s)"}, "automargin": True},
                       "yaxis": yaxis, "legend": {"orientation": "h", "y": -0.42, "yanchor": "top", "x": 0},
                       "margin": {"l": 60, "r": 20, "t": 40, "b": 70}, "height": 320},
            "x_series": "t_s",
            "summary": summary,
        }
    return figures


def _seconds(value) -> str:
    return "n/a" if value is None else f"{format_number(value)} s"


def metrics(summary: dict, fleet: bool = False) -> list[dict]:
    """The metrics panel of a run so far, from its summary.

    >>> [m["text"] for m in metrics({"requests_completed": 10, "requests_total": 12, "ttft_p50_s": 0.2})][:2]
    ['10 of 12', '0.2 s']
    """
    get = summary.get
    panel = [
        output("requests_completed", "Requests done", get("requests_completed", 0), "",
               text=f"{get('requests_completed', 0):,} of {get('requests_total', 0):,}"),
        output("ttft_p50_s", "TTFT p50", get("ttft_p50_s") or 0, "s", text=_seconds(get("ttft_p50_s"))),
        output("ttft_p99_s", "TTFT p99", get("ttft_p99_s") or 0, "s", text=_seconds(get("ttft_p99_s"))),
        output("itl_p50_s", "ITL p50", get("itl_p50_s") or 0, "s", text=_seconds(get("itl_p50_s"))),
        output("itl_p99_s", "ITL p99", get("itl_p99_s") or 0, "s", text=_seconds(get("itl_p99_s"))),
        output("throughput_output_tokens_per_s", "Output tokens/s", get("throughput_output_tokens_per_s") or 0,
               "tokens/s"),
        output("running_max", "Largest batch", get("running_max", 0), "requests"),
        output("queue_depth_max", "Longest queue", get("queue_depth_max", 0), "requests"),
        output("kv_token_share", "KV memory holding tokens", get("kv_token_share") or 0, "",
               text=f"{(get('kv_token_share') or 0) * 100:.1f}%"),
        output("preemptions", "Preemptions", get("preemptions", 0), ""),
        output("gpu_util_reported", "GPU-Util (reported)", get("gpu_util_reported") or 0, "",
               text=f"{(get('gpu_util_reported') or 0) * 100:.0f}%"),
        output("compute_utilization", "Compute utilization", get("compute_utilization") or 0, "",
               text=f"{(get('compute_utilization') or 0) * 100:.0f}%"),
    ]
    # Always present: the page updates only the outputs it was built with, and a reader may turn caching on.
    hit_rate = get("prefix_cache_hit_rate")
    panel.append(output("prefix_cache_hit_rate", "Prefix cache hit rate", hit_rate or 0, "",
                        text="cache off" if hit_rate is None else f"{hit_rate * 100:.0f}%"))
    cost = get("cost_usd_per_million_output_tokens")
    panel.append(output("cost_usd_per_million_output_tokens", "Cost per million output tokens", cost or 0, "USD",
                        text="no GPU price" if cost is None else f"${cost:,.2f}"))
    if fleet and get("replicas_max") is not None:
        panel.append(output("replicas", "Replicas (start / peak / end)", get("replicas_max"), "",
                            text=f"{get('replicas_initial')} / {get('replicas_max')} / {get('replicas_final')}"))
    return panel


def simulation_views(scenario: dict, frame_interval_s: float):
    """Views of a live run of ``scenario``: charts first, then metrics, points and the block map per frame."""
    fleet_run = "fleet" in scenario
    first = True
    for frame in live_frames(scenario, frame_interval_s=frame_interval_s):
        extra = {"figures": _figures(fleet_run)} if first else {}
        first = False
        points = frame["points"]
        series = {**points, **kv_cache_shares(points["kv_use_fraction"], points["kv_waste_fraction"])}
        yield view(outputs=metrics(frame["summary"], fleet_run), series=series, blockmap=frame["blockmap"],
                   t_s=frame["t_s"], done=frame["done"], **extra)


@stream(budget_s=4.0)
def replica(
    preset: Annotated[str, Choice(PRESET_CHOICES, label="Scenario")] = "step05-paged",
    rate_per_s: Annotated[float, FloatRange(0, 200, 0.5, "requests/s", label="Arrival rate",
                                            help="0 keeps the scenario's own")] = 0,
    allocation: Annotated[str, Choice(((KEEP, "as in the scenario"), ("paged", "paged blocks"),
                                       ("contiguous", "reserve the maximum")), label="KV allocation")] = KEEP,
    prefix_caching: Annotated[str, Choice(((KEEP, "as in the scenario"), ("on", "on"), ("off", "off")),
                                          label="Prefix caching")] = KEEP,
    speculation: Annotated[str, Choice(((KEEP, "as in the scenario"), ("off", "off"), ("eagle-like", "EAGLE-like")),
                                       label="Speculative decoding")] = KEEP,
    max_num_seqs: Annotated[int, IntRange(0, 4096, label="Max running requests", help="0 keeps the scenario's")] = 0,
    seed: Annotated[int, IntRange(-1, 2**31 - 1, label="Seed", help="-1 keeps the scenario's")] = -1,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """One lesson scenario, live: queue, batch, KV cache, latency, throughput and the block map."""
    scenario = scenario_for(preset, rate_per_s=rate_per_s, allocation=allocation, prefix_caching=prefix_caching,
                            speculation=speculation, max_num_seqs=max_num_seqs, seed=seed)
    yield from simulation_views(scenario, frame_interval_s)
