"""Views that several pages share: a replica's memory (step 1 and the playground), the live fleet (steps 14 and 15), the prefix cache's hit rate (steps 11 and 12), the on-call dashboard and its controls (steps 19 and 20).

A page module turns calc's science into a view; what more than one page shows the
same way lives here, so that no page module imports another. The simulation view
of a single replica is :mod:`calc.widgets.simulation`.

>>> first = next(fleet_views(fleet_scenario("step14-scale-on-gpu-util"), 30.0))
>>> sorted(first["figures"]), first["outputs"]["replicas"]["text"]
(['latency', 'queue', 'signals', 'traffic'], '1 / 2 / 1')
"""

from __future__ import annotations

from calc.allocation import contiguous_max_concurrency
from calc.catalog import get_gpu, get_model
from calc.lesson import LESSON_PARAM_DIGITS, MAX_MODEL_LEN, replica_capacity, vllm_maximum_concurrency
from calc.memory import WEIGHT_BITS, KVCapacity
from calc.incident import DOCUMENT_SHARE_MAX, incident_scenario, prompt_tokens_per_sample
from calc.sim.fleet import FleetScenario, fleet_requests
from calc.sim.live import live_frames
from calc.sim_views import fleet_scenario  # noqa: F401 (the doctest's scenario)
from calc.units import GB, GiB, MiB, format_bytes, format_number, round_sig
from calc.widgets.charts import PALETTE, bar_chart
from calc.widgets.framework import FloatRange, IntRange, output, table, view
from calc.widgets.simulation import metrics

__all__ = ["FLEET_CHARTS", "FLEET_METRICS", "fleet_views", "replica_memory_view", "with_hit_rate", "PANELS",
           "FLEET_PANELS", "dashboard_figures", "dashboard_outputs", "dashboard_views", "DOCUMENT_SHARE", "SEED",
           "FRAME", "seconds_text", "share_text", "percent_text", "signed_percent_text"]

#: Draw one bar per GPU up to this many; above it one bar stands for all (they are identical).
MAX_BARS = 8
_COLOURS = {"Weights": PALETTE[0], "Activation workspace": PALETTE[1], "Non-torch overhead": PALETTE[3],
            "KV cache": PALETTE[2], "Unclaimed (1 − utilization)": "#9e9e9e"}


def _gb(n_bytes: float) -> str:
    return format_number(n_bytes / GB)


def _gib(n_bytes: float) -> str:
    return format_number(n_bytes / GiB)


def _memory_text(cap: KVCapacity) -> str:
    gpu = get_gpu(cap.gpu_key)
    if cap.memory_basis == "runtime":
        return f"{_gb(cap.total_bytes)} GB = {gpu.memory_bytes_runtime / MiB:,.0f} MiB = {_gib(cap.total_bytes)} GiB"
    return f"{_gb(cap.total_bytes)} GB = {_gib(cap.total_bytes)} GiB"


def _weights_source(cap: KVCapacity, parameter_count: str) -> str:
    model = get_model(cap.model_key)
    bits = WEIGHT_BITS[cap.weights]
    per_weight = f"{bits // 8} B" if bits >= 8 else f"{bits} bits"
    if parameter_count == "lesson":
        params = round_sig(model.total_params, LESSON_PARAM_DIGITS)
        return f"{format_number(params / 1e9)} B params × {per_weight} / {cap.tp} GPUs"
    return f"{model.total_params:,} params × {per_weight} (+ scales, 16-bit embeddings) / {cap.tp} GPUs"


def _terms_table(cap: KVCapacity, parameter_count: str) -> dict:
    gpu = get_gpu(cap.gpu_key)
    where = (f"nvidia-smi: {gpu.memory_bytes_runtime / MiB:,.0f} MiB × 2²⁰" if cap.memory_basis == "runtime"
             else f"datasheet: {_gb(gpu.memory_bytes_marketed)} GB × 10⁹")
    rows = [
        ("GPU memory", cap.total_bytes, where),
        (f"× {format_number(cap.gpu_memory_utilization)} = vLLM's budget", cap.requested_bytes,
         "gpu_memory_utilization"),
        ("− weights", cap.weights_bytes, _weights_source(cap, parameter_count)),
        ("− activation workspace", cap.activation_bytes, "peak of vLLM's profiling pass (assumed)"),
        ("− non-torch overhead", cap.non_torch_bytes,
         "CUDA context" + (", NCCL buffers" if cap.tp > 1 else "") + " (assumed)"),
        ("= KV cache", cap.kv_cache_bytes, f"/ {cap.kv_bytes_per_token_per_gpu:,} B per token per GPU"),
        ("unclaimed", cap.unclaimed_bytes, "left to other processes (1 − utilization)"),
    ]
    return table(
        ["Per GPU", "Bytes", "GB (10⁹ B)", "GiB (2³⁰ B)", "From"],
        [[name, f"{round(value):,}", _gb(value), _gib(value), source] for name, value, source in rows],
        caption="Every term on one GPU",
    )


def _memory_figure(cap: KVCapacity) -> dict:
    model, gpu = get_model(cap.model_key), get_gpu(cap.gpu_key)
    bars = [f"GPU {i}" for i in range(cap.tp)] if cap.tp <= MAX_BARS else [f"each of {cap.tp} GPUs"]
    terms = {
        "Weights": cap.weights_bytes, "Activation workspace": cap.activation_bytes,
        "Non-torch overhead": cap.non_torch_bytes, "KV cache": cap.kv_cache_bytes,
        "Unclaimed (1 − utilization)": cap.unclaimed_bytes,
    }
    summary = f"{model.name} on {cap.tp} × {gpu.name}. " + (
        f"Each of the {cap.tp} GPUs: " if cap.tp > 1 else "The one GPU: ") + ", ".join(
        f"{name.split(' (')[0]} {_gb(value)} GB" for name, value in terms.items()
    ) + f", of {_gb(cap.total_bytes)} GB."
    figure = bar_chart(
        "Memory per GPU, GB (10⁹ bytes)", list(reversed(bars)), "",
        {name: [value / GB] * len(bars) for name, value in terms.items()}, horizontal=True, summary=summary,
    )
    for trace in figure["data"]:
        trace["marker"]["color"] = _COLOURS[trace["name"]]
        trace["hovertemplate"] = "%{x:.3~r} GB<extra>" + trace["name"] + "</extra>"
    layout = figure["layout"]
    layout["height"] = 190 + 32 * len(bars)
    layout["xaxis"] = {"automargin": True, "range": [0, round_sig(cap.total_bytes / GB * 1.02, 4)]}
    layout["legend"] = {"orientation": "h", "yanchor": "top", "y": -0.12, "traceorder": "normal"}
    layout["margin"] = {"l": 60, "r": 20, "t": 50, "b": 30}
    budget = round_sig(cap.requested_bytes / GB, 6)
    layout["shapes"] = [{"type": "line", "x0": budget, "x1": budget, "yref": "paper", "y0": 0, "y1": 1,
                         "line": {"dash": "dot", "width": 1.5, "color": "#757575"}}]
    layout["annotations"] = [{"x": budget, "y": 1, "yref": "paper", "yanchor": "bottom", "showarrow": False,
                              "text": f"vLLM's {format_number(cap.gpu_memory_utilization * 100)}%",
                              "font": {"size": 11}}]
    return figure


def replica_memory_view(model: str, gpu: str, *, tp: int, weights: str = "bf16", kv_dtype: str = "bf16",
                        gpu_memory_utilization: float = 0.9, memory_basis: str = "marketed",
                        parameter_count: str = "lesson", request_tokens: int = 1_280) -> dict:
    """The memory of one replica per GPU: weights, workspace, overhead, KV cache, and what is left unclaimed.

    Step 1's view, which the playground shows too. Every term comes from
    :func:`calc.lesson.replica_capacity` (vLLM's ``determine_available_memory``);
    the requests that fit at once are tokens // request length (:func:`calc.allocation.contiguous_max_concurrency`).

    >>> out = replica_memory_view("llama-3.1-70b", "h100-sxm-80gb", tp=4, parameter_count="exact")["outputs"]
    >>> out["weights_bytes_per_gpu"]["text"], out["kv_cache_tokens"]["text"], out["max_requests"]["value"]
    ('35.3 GB', '399,452 tokens', 312)
    """
    cap = replica_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                           gpu_memory_utilization=gpu_memory_utilization, memory_basis=memory_basis,
                           parameter_count=parameter_count, max_model_len=request_tokens)
    other_count = "exact" if parameter_count == "lesson" else "lesson"
    other = replica_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                             gpu_memory_utilization=gpu_memory_utilization, memory_basis=memory_basis,
                             parameter_count=other_count)
    tokens = cap.kv_cache_tokens_raw
    change = (other.kv_cache_tokens_raw - tokens) / tokens * 100
    fits = contiguous_max_concurrency(tokens, request_tokens)
    logged = vllm_maximum_concurrency(MAX_MODEL_LEN, capacity=cap)  # vLLM divides by max_model_len, not a request
    per_token = cap.kv_bytes_per_token_per_gpu
    return view(
        outputs=[
            output("gpu_memory", "GPU memory counted", round(cap.total_bytes), "B", text=_memory_text(cap)),
            output("requested_bytes", "vLLM's budget per GPU", round(cap.requested_bytes), "B",
                   text=f"{_gb(cap.requested_bytes)} GB"),
            output("weights_bytes_per_gpu", "Weights per GPU", round(cap.weights_bytes), "B",
                   text=f"{_gb(cap.weights_bytes)} GB"),
            output("overhead_bytes", "Workspace + overhead per GPU", round(cap.activation_bytes + cap.non_torch_bytes), "B",
                   text=f"{_gb(cap.activation_bytes)} + {_gb(cap.non_torch_bytes)} GB"),
            output("kv_cache_bytes_per_gpu", "KV cache per GPU", round(cap.kv_cache_bytes), "B",
                   text=f"{_gb(cap.kv_cache_bytes)} GB"),
            output("kv_bytes_per_token_per_gpu", "KV per token per GPU", per_token, "B",
                   text=f"{per_token:,} B ({format_bytes(per_token, binary=True)})"),
            output("kv_bytes_per_token", "KV per token, whole replica", cap.kv_bytes_per_token, "B",
                   text=f"{cap.kv_bytes_per_token:,} B ({format_bytes(cap.kv_bytes_per_token, binary=True)})"),
            output("kv_cache_tokens", "KV cache of the replica", tokens, "tokens", text=f"{tokens:,} tokens"),
            output("other_count_tokens", "With the other parameter count", other.kv_cache_tokens_raw, "tokens",
                   text=f"{other.kv_cache_tokens_raw:,} ({change:+.2f}%)"),
            output("vllm_blocks", "As vLLM logs it", cap.kv_cache_tokens, "tokens",
                   text=f"{cap.kv_cache_blocks:,} blocks of {cap.block_size} = {cap.kv_cache_tokens:,}"),
            output("max_requests", "Requests of that length at once", fits, "requests", text=f"{fits:,}"),
            output("vllm_max_concurrency", f"vLLM logs: maximum concurrency for {MAX_MODEL_LEN:,} tokens per request",
                   round(logged, 2), "", text=f"{logged:,.2f}x"),
        ],
        figures={"memory": _memory_figure(cap)},
        tables={"terms": _terms_table(cap, parameter_count)},
    )



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


def with_hit_rate(views):
    """The simulation's views with a prefix-cache hit rate in every frame ("cache off" when there is none).

    The metrics panel lists the hit rate only when the cache is on, and the page
    keeps the outputs it was built with: a page built with the cache off would
    never show the rate, one built with it on would keep a stale rate after the
    reader turns it off. Source: :func:`calc.widgets.simulation.metrics`.

    >>> frame = next(with_hit_rate(iter([{"outputs": {}}])))
    >>> frame["outputs"]["prefix_cache_hit_rate"]["text"]
    'cache off'
    """
    for frame in views:
        frame["outputs"].setdefault("prefix_cache_hit_rate", output("prefix_cache_hit_rate", "Prefix cache hit rate",
                                                                    0, "", text="cache off"))
        yield frame


# --- steps 19 and 20: the on-call dashboard --------------------------------------------------------

#: Controls of the incident's traffic, the same on both pages.
DOCUMENT_SHARE = FloatRange(0.0, DOCUMENT_SHARE_MAX, 0.01, label="Long documents during the surge",
                            help="share of the requests in the surge minute; the request rate stays the same")
SEED = IntRange(0, 2**31 - 1, label="Seed", help="another draw of the same traffic")
FRAME = FloatRange(1, 60, 1, "s", label="Simulated seconds per frame")

# (figure key, title, y-axis title, tick format, [(series key, trace name)])
PANELS = (
    ("requests", "Requests per second", "requests/s", None, [("requests_per_s", "arriving")]),
    ("gpu_util", "GPU-Util", "reported busy", ".0%", [("gpu_util_reported", "GPU-Util")]),
    ("ttft", "TTFT, 10 s window", "seconds", None,
     [("ttft_p99_s", "p99"), ("ttft_p50_s", "p50")]),
    ("prompt", "Prompt tokens per request", "tokens (mean)", None,
     [("prompt_tokens_per_request", "arriving requests")]),
    ("queue", "Queue depth", "requests waiting", None, [("queue_depth", "waiting")]),
    ("kv", "KV cache use", "share of the KV cache", ".0%", [("kv_use_fraction", "in use")]),
    ("running", "Requests running", "requests in the batches", None, [("running", "running")]),
    ("preemptions", "Preemptions", "requests evicted (total)", None, [("preemptions", "preempted so far")]),
)
REPLICAS_PANEL = ("replicas", "Replicas", "replicas", None, [("replicas", "serving or starting")])
#: Step 20's dashboard compares layouts on the same traffic: latency, queue, KV cache and replicas only.
FLEET_PANELS = tuple(p for p in PANELS if p[0] in ("ttft", "queue", "kv")) + (REPLICAS_PANEL,)


def dashboard_figures(panels=PANELS) -> dict:
    """Empty dashboard charts whose traces name the series that fill them (``meta``).

    Compact panels (two to a row on a wide screen), each a Plotly figure dict
    like :mod:`calc.widgets.charts` makes; frames append points to them.

    >>> figures = dashboard_figures()
    >>> list(figures)[:3], figures["ttft"]["data"][0]["meta"]
    (['requests', 'gpu_util', 'ttft'], 'ttft_p99_s')
    """
    figures = {}
    for key, title, y_title, tick_format, traces in panels:
        yaxis = {"title": {"text": y_title}, "automargin": True, "rangemode": "tozero"}
        if tick_format:
            yaxis["tickformat"] = tick_format
        many = len(traces) > 1
        figures[key] = {
            "data": [{"type": "scatter", "mode": "lines", "name": name, "meta": series, "x": [], "y": [],
                      "line": {"color": PALETTE[i % len(PALETTE)], "width": 2}}
                     for i, (series, name) in enumerate(traces)],
            "layout": {"title": {"text": title, "font": {"size": 13}},
                       "xaxis": {"title": {"text": "time (s)"}, "automargin": True},
                       "yaxis": yaxis, "showlegend": many,
                       # inside the plot's top-left corner: above it, on a phone's narrow panel, it hid the title
                       "legend": {"orientation": "h", "y": 1, "yanchor": "top", "x": 0, "xanchor": "left",
                                  "bgcolor": "rgba(0,0,0,0)", "font": {"size": 11}},
                       "margin": {"l": 55, "r": 10, "t": 36, "b": 40}, "height": 240},
            "x_series": "t_s",
            "summary": f"{title} against simulated time.",
        }
    return figures


def seconds_text(value) -> str:
    """``'12.3 s'``, or ``'n/a'`` for a metric with no value yet."""
    return "n/a" if value is None else f"{format_number(value)} s"


def share_text(value) -> str:
    """A share as a whole percentage (``None`` is 0%)."""
    return f"{(value or 0) * 100:.0f}%"


def percent_text(fraction: float, digits: int = 3) -> str:
    """A fraction as a percentage for prose, ``digits`` significant digits (:func:`calc.units.format_number`).

    >>> percent_text(0.9), percent_text(0.073741824, 2)
    ('90%', '7.4%')
    """
    return f"{format_number(fraction * 100, digits)}%"


def signed_percent_text(fraction: float) -> str:
    """A change as a signed percentage with two decimals.

    >>> signed_percent_text(0.000707), signed_percent_text(-0.05)
    ('+0.07%', '-5.00%')
    """
    return f"{fraction * 100:+.2f}%"


def dashboard_outputs(summary: dict, *, costs: bool = False) -> list[dict]:
    """The metrics under the dashboard, from a fleet run's summary (so far).

    With ``costs`` (step 20 compares layouts on these), the traffic's own
    numbers give way to each request class's TTFT p99, the replicas, the
    replica-hours and what they cost.

    >>> [o["text"] for o in dashboard_outputs({"arrival_rate_per_s": 15.2, "ttft_p99_s": 32.17})][:3]
    ['15.2 /s', '0%', 'n/a']
    """
    get = summary.get
    panel = [
        output("arrival_rate_per_s", "Requests arriving", get("arrival_rate_per_s") or 0, "/s",
               text=f"{format_number(get('arrival_rate_per_s') or 0)} /s"),
        output("gpu_util_reported", "GPU-Util (reported)", get("gpu_util_reported") or 0, "",
               text=share_text(get("gpu_util_reported"))),
        output("ttft_p50_s", "TTFT p50", get("ttft_p50_s") or 0, "s", text=seconds_text(get("ttft_p50_s"))),
        output("ttft_p99_s", "TTFT p99", get("ttft_p99_s") or 0, "s", text=seconds_text(get("ttft_p99_s"))),
        output("itl_p99_s", "ITL p99", get("itl_p99_s") or 0, "s", text=seconds_text(get("itl_p99_s"))),
        output("prompt_tokens_mean", "Prompt tokens per request", get("prompt_tokens_mean") or 0, "tokens",
               text=f"{format_number(round(get('prompt_tokens_mean') or 0))} tokens"),
        output("queue_depth_max", "Longest queue", get("queue_depth_max", 0), "requests"),
        output("kv_use_peak", "KV cache use, peak", get("kv_use_peak") or 0, "", text=share_text(get("kv_use_peak"))),
        output("preemptions", "Preemptions", get("preemptions", 0), ""),
        output("requests_completed", "Requests done", get("requests_completed", 0), "",
               text=f"{get('requests_completed', 0):,} of {get('requests_total', 0):,}"),
    ]
    if costs:
        same_traffic = ("arrival_rate_per_s", "prompt_tokens_mean", "requests_completed", "gpu_util_reported")
        panel = [o for o in panel if o["key"] not in same_traffic]
        by_class = {c["name"]: c for c in get("classes") or []}
        for name, label in (("chat", "Chat TTFT p99"), ("document", "Documents TTFT p99"),
                            ("batch", "Batch jobs TTFT p99")):
            value = by_class.get(name, {}).get("ttft_p99_s")
            panel.append(output(f"{name}_ttft_p99_s", label, value or 0, "s", text=seconds_text(value)))
        panel.append(output("replicas", "Replicas (start / peak / end)", get("replicas_max") or 0, "",
                            text=f"{get('replicas_initial', 0)} / {get('replicas_max', 0)} / {get('replicas_final', 0)}"))
        hours = get("replica_hours") or 0
        panel.append(output("replica_hours", "Replica-hours", hours, "h", text=f"{format_number(hours)} h"))
        cost = get("cost_usd")
        panel.append(output("cost_usd", "GPU cost of the run", cost or 0, "USD",
                            text="no GPU price" if cost is None else f"${cost:,.2f}"))
    return panel


def dashboard_views(scenario: dict, frame_interval_s: float, *, panels=PANELS, costs: bool = False):
    """Views of a live run of a fleet ``scenario``: the dashboard's charts first, then per frame its
    metrics, its new points (the fleet's series plus prompt tokens per request) and one replica's block map.

    Source: :func:`calc.sim.live.live_frames`; :func:`prompt_tokens_per_sample`.

    >>> views = list(dashboard_views(incident_scenario(seed=1), 60))
    >>> sorted(views[0]["figures"])[:2], views[-1]["done"]
    (['gpu_util', 'kv'], True)
    >>> tokens = [x for v in views for x in v["series"]["prompt_tokens_per_request"]]
    >>> len(tokens) == len([t for v in views for t in v["series"]["t_s"]]), tokens[0]
    (True, 1116.55)
    """
    requests = fleet_requests(FleetScenario.from_dict(scenario))
    interval_s = None
    first = True
    for frame in live_frames(scenario, frame_interval_s=frame_interval_s):
        points = dict(frame["points"])
        times = points["t_s"]
        if times and interval_s is None:
            interval_s = times[0]  # the first sample falls one sample interval after the start
        points["prompt_tokens_per_request"] = prompt_tokens_per_sample(requests, times, interval_s or 1.0)
        extra = {"figures": dashboard_figures(panels)} if first else {}
        first = False
        yield view(outputs=dashboard_outputs(frame["summary"], costs=costs), series=points,
                   blockmap=frame["blockmap"], t_s=frame["t_s"], done=frame["done"], **extra)
