"""Widgets and facts of the deep dive "The trade-off triangle" (docs/deep-dives/trade-off-triangle.md).

Latency, quality, throughput: pick two (the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah)). On one
replica the batch trades latency for throughput: every extra sequence shares
the step's weight reads (more tokens/s) but lengthens the step (a slower
stream for everyone). Fewer bits per weight move the whole frontier toward
faster and cheaper, at an accuracy cost the published deltas quantify
(:func:`calc.quantization.accuracy_deltas`). The frontier is measured in the
simulator (:mod:`calc.sim`): the running example's replica with the engine's
cap on running sequences (``max_num_seqs``) swept, per weight format.

>>> pts = frontier("llama-3.1-70b", weights=("bf16",), caps=(1, 64))
>>> [(p["max_num_seqs"], round(p["itl_p50_s"] * 1000, 1), round(p["tokens_per_s"])) for p in pts["bf16"]]
[(1, 19.4, 51), (64, 28.7, 1321)]
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from calc.catalog import get_gpu
from calc.errors import CalcError
from calc.quantization import STUDY_SUMMARY, accuracy_deltas
from calc.sim import Scenario, simulate
from calc.tradeoff import CAPS, FORMATS, REPLICAS, _check_replica, best_under, corners, frontier
from calc.units import format_number, ms_to_s, ratio
from calc.widgets.charts import line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.simulation import simulation_views

__all__ = ["triangle", "operating_point", "facts"]

ITL_TARGET_MS = 25.0  # 40 tokens/s per stream: bf16 meets it at a cap of 16, fp8 at 64
#: The live run's traffic: near what one bf16 replica sustains, so a small cap queues and a large one keeps up.
LIVE_RATE, LIVE_REQUESTS = 6.0, 600
MS = 1_000


def _accuracy(model: str, weights: str) -> str:
    if weights == "bf16":
        return "reference"
    rows = accuracy_deltas(model, weights)
    if rows:
        return f"{rows[0]['delta_points']:+.2f} points (OpenLLM v1)"
    return STUDY_SUMMARY.get(weights, "not published")


@widget(budget_s=15.0)
def triangle(
    replica: Annotated[str, Choice(tuple((k, v["label"]) for k, v in REPLICAS.items()), label="Replica")]
    = "llama-3.1-70b",
    itl_target_ms: Annotated[float, FloatRange(1, 1000, 1, "ms", label="Latency target: median ITL")] = ITL_TARGET_MS,
):
    """The latency-throughput frontier per weight format (simulated), and the three corners of the triangle."""
    spec = _check_replica(replica)
    target = itl_target_ms / MS
    f = frontier(replica)
    series = {}
    for fmt in FORMATS:
        series[f"{fmt} weights"] = ([p["tokens_per_s"] for p in f[fmt]], [p["itl_p50_s"] * MS for p in f[fmt]])
    top = max(p["tokens_per_s"] for pts in f.values() for p in pts)
    series["latency target"] = ([0, top], [itl_target_ms, itl_target_ms])
    chart = line_chart(
        f"{spec['label']}: latency against throughput", "output tokens/s (replica)", "median ITL (ms)", series,
        markers=True, log_y=True,
        summary=("Each line is one weight format; its points are caps of 1, 4, 16, 64 and 256 running sequences. "
                 "Bigger batches move right (more tokens/s) and up (slower tokens); fewer bits move the line right "
                 f"and down. The dashed line is the {format_number(itl_target_ms)} ms target."))
    for trace, fmt in zip(chart["data"], FORMATS):
        trace["text"] = [f"cap {p['max_num_seqs']}" for p in f[fmt]]
        trace["hovertemplate"] = "%{text}: %{x:.0f} tokens/s, ITL %{y:.1f} ms<extra></extra>"
    chart["data"][-1]["line"] = {"color": "#757575", "width": 1.5, "dash": "dash"}
    chart["data"][-1]["mode"] = "lines"
    c = corners(replica, target)
    names = {"latency_quality": "latency + quality", "throughput_quality": "throughput + quality",
             "latency_throughput": "latency + throughput"}

    def row(key):
        p = c[key]
        if p is None:
            return [names[key], "no point meets the target", "", "", "", ""]
        return [names[key], f"{p['weights']}, cap {p['max_num_seqs']}", f"{format_number(p['itl_p50_s'] * MS)} ms",
                format_number(p["tokens_per_s"]), f"${p['usd_per_million']:,.2f}",
                _accuracy(spec["model"], p["weights"])]

    corners_table = table(["you keep", "setting", "median ITL", "tokens/s", "$ per M output tokens", "accuracy"],
                          [row(k) for k in names],
                          caption=(f"Cost at the catalog's {get_gpu(spec['gpu']).price_date} price of "
                                   f"${get_gpu(spec['gpu']).price_usd_per_hour}/GPU-hour, replica fully busy."))
    outputs = []
    for fmt in FORMATS:
        best = best_under(f[fmt], target)
        outputs.append(output(f"best_{fmt}", f"{fmt}: most tokens/s at ITL ≤ {format_number(itl_target_ms)} ms",
                              best["tokens_per_s"] if best else 0, "tokens/s",
                              text="none meets the target" if best is None
                              else f"{format_number(best['tokens_per_s'])} tokens/s (cap {best['max_num_seqs']})"))
    return view(outputs=outputs, figures={"frontier": chart}, tables={"corners": corners_table})


@stream(budget_s=4.0)
def operating_point(
    weights: Annotated[str, Choice(FORMATS, label="Weights")] = "bf16",
    max_num_seqs: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Cap on running sequences")] = 256,
    rate_per_s: Annotated[float, FloatRange(0.5, 100, 0.5, "requests/s", label="Arrival rate")] = LIVE_RATE,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The running example near one bf16 replica's capacity, live: one operating point of the triangle."""
    scenario = {"name": "deep dive: trade-off triangle", "weights": weights, "max_num_seqs": max_num_seqs,
                "workload": {"rate_per_s": rate_per_s, "requests": LIVE_REQUESTS}}
    yield from simulation_views(scenario, frame_interval_s)


@lru_cache(maxsize=8)
def _live(weights: str, max_num_seqs: int) -> dict:
    scenario = {"weights": weights, "max_num_seqs": max_num_seqs,
                "workload": {"rate_per_s": LIVE_RATE, "requests": LIVE_REQUESTS}}
    return simulate(Scenario.from_dict(scenario)).summary


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it; the frontier, the corners and the live runs once each.
@lru_cache(maxsize=None)
def _frontier_bf16() -> dict:
    return {p["max_num_seqs"]: p for p in frontier("llama-3.1-70b")["bf16"]}


@lru_cache(maxsize=None)
def _corners() -> dict:
    c = corners("llama-3.1-70b", ms_to_s(ITL_TARGET_MS))
    if c["latency_throughput"] is None or c["latency_quality"] is None:
        raise CalcError("the page's ITL target must be met by bf16 and by a lower-bit format", "itl_target_ms")
    return c


@lru_cache(maxsize=None)
def _live_run(weights: str, max_num_seqs: int) -> dict:
    return _live(weights, max_num_seqs)


def _small() -> dict:
    return _frontier_bf16()[CAPS[0]]


def _big() -> dict:
    return _frontier_bf16()[CAPS[-1]]


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * MS)} ms"


def _usd(point: dict) -> str:
    return f"${point['usd_per_million']:,.2f}"


def _s(seconds: float) -> str:
    return f"{format_number(seconds)} s"


@fact
def itl_target():
    return f"{format_number(ITL_TARGET_MS)} ms"


@fact
def caps():
    return ", ".join(str(cap) for cap in CAPS)


@fact
def bf16_cap1_itl():
    """>>> bf16_cap1_itl(), corner_lt_weights()
    ('19.4 ms', 'fp8')
    """
    return _ms(_small()["itl_p50_s"])


@fact
def bf16_cap1_tps():
    return format_number(_small()["tokens_per_s"])


@fact
def bf16_cap1_usd():
    return _usd(_small())


@fact
def bf16_cap256_itl():
    return _ms(_big()["itl_p50_s"])


@fact
def bf16_cap256_tps():
    return format_number(_big()["tokens_per_s"])


@fact
def bf16_cap256_usd():
    return _usd(_big())


@fact
def cost_ratio():
    return format_number(ratio(_small()["usd_per_million"], _big()["usd_per_million"]))


@fact
def corner_lq_cap():
    return str(_corners()["latency_quality"]["max_num_seqs"])


@fact
def corner_lq_itl():
    return _ms(_corners()["latency_quality"]["itl_p50_s"])


@fact
def corner_lq_tps():
    return format_number(_corners()["latency_quality"]["tokens_per_s"])


@fact
def corner_lq_usd():
    return _usd(_corners()["latency_quality"])


@fact
def corner_tq_itl():
    return _ms(_corners()["throughput_quality"]["itl_p50_s"])


@fact
def corner_tq_tps():
    return format_number(_corners()["throughput_quality"]["tokens_per_s"])


@fact
def corner_lt_weights():
    return _corners()["latency_throughput"]["weights"]


@fact
def corner_lt_cap():
    return str(_corners()["latency_throughput"]["max_num_seqs"])


@fact
def corner_lt_itl():
    return _ms(_corners()["latency_throughput"]["itl_p50_s"])


@fact
def corner_lt_tps():
    return format_number(_corners()["latency_throughput"]["tokens_per_s"])


@fact
def corner_lt_usd():
    return _usd(_corners()["latency_throughput"])


@fact
def corner_lt_delta():
    return f"{accuracy_deltas('llama-3.1-70b', _corners()['latency_throughput']['weights'])[0]['delta_points']:+.2f}"


@fact
def fp8_70b_delta():
    return f"{accuracy_deltas('llama-3.1-70b', 'fp8')[0]['delta_points']:+.2f}"


@fact
def fp8_70b_loss():
    return f"{-accuracy_deltas('llama-3.1-70b', 'fp8')[0]['delta_points']:.2f}"


@fact
def int4_8b_loss():
    return f"{-accuracy_deltas('llama-3.1-8b', 'int4')[0]['delta_points']:.2f}"


@fact
def live_rate():
    return format_number(LIVE_RATE)


@fact
def live_small_ttft():
    return _s(_live_run("bf16", 32)["ttft_p50_s"])


@fact
def live_small_queue():
    return f"{_live_run('bf16', 32)['queue_depth_max']:,}"


@fact
def live_bf16_ttft():
    return _s(_live_run("bf16", 256)["ttft_p50_s"])


@fact
def live_bf16_itl():
    return _ms(_live_run("bf16", 256)["itl_p50_s"])


@fact
def live_fp8_ttft():
    return _s(_live_run("fp8", 256)["ttft_p50_s"])


@fact
def live_fp8_itl():
    return _ms(_live_run("fp8", 256)["itl_p50_s"])


facts = facts_of(__name__)
