"""Widgets and facts of step 10, "Break it: speculation at saturation" (docs/lesson/10-speculation-at-saturation.md).

Speculation spends compute a memory-bound step leaves idle. As the batch grows
the verify step, which computes ``verify_tokens`` positions for every sequence,
turns compute-bound, and each rejected candidate costs full price: the speed-up
falls below 1x (:func:`calc.speculative.speedup_at_batch`,
:func:`calc.speculative.break_even`). The draft's cost comes from its own shape
(:func:`calc.speculative.draft_coefficients`). Published for comparison: EAGLE and
EAGLE-3 on Llama 3.1 8B, one H100, SGLang (:data:`PUBLISHED`, read from
calc/data/measurements.json). This module keeps only the views; the numbers are
calc.speculative's and calc.sim's.

>>> sorted(PUBLISHED)
['eagle', 'eagle3']
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc import lesson
from calc.accuracy import load_measurements
from calc.catalog import get_gpu, get_model
from calc.sim import presets
from calc.sim.speculation import TTFT_SLO_S
from calc.sim_views import preset_summary
from calc.speculative import (
    DRAFT_SHAPES, EAGLE3_LIKE, EAGLE_LIKE, PUBLISHED_SETUP, SEPARATE_DRAFT_LIKE, SpeculationConfig, break_even,
    replica_coefficients, speedup_at_batch, speedup_curve, verify_tokens_in_batch,
)
from calc.units import format_number, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.simulation import scenario_for, simulation_views
from calc.widgets.views import share_text

__all__ = ["PUBLISHED", "REPLICAS", "speedup_vs_batch", "saturated", "facts", "SIM_PRESET"]


def _published() -> dict:
    """The published SGLang speed-ups by method: {batch: speed-up} and the first batch below 1x, from the data file."""
    out = {"eagle": {"points": {}, "below_one_from_batch": None}, "eagle3": {"points": {}, "below_one_from_batch": None}}
    for m in load_measurements(kinds=("speculative",)):
        x = m["inputs"]
        if not m["id"].startswith("eagle3-paper-"):
            continue
        if x["mode"] == "break_even_batch":
            out[x["method"]]["below_one_from_batch"] = int(m["figure"]["value"])
        else:
            out[x["method"]]["points"][x["batch"]] = m["figure"]["value"]
    return out


#: Published speed-ups of EAGLE (the first version) and EAGLE-3 on Llama 3.1 8B Instruct, one H100, SGLang.
PUBLISHED = _published()
PUBLISHED_SOURCE = ("Li et al. 2025, 'EAGLE-3: Scaling up Inference Acceleration of Large Language Models via "
                    "Training-Time Test', arXiv 2503.01840 (SGLang, 1x H100, Llama 3.1 8B)")
#: The two replicas on the chart: the published set-up (8B on one H100) and the running example (70B on four).
REPLICAS = (
    (PUBLISHED_SETUP["model"], "8B, 1 × H100 (published set-up)"),
    (lesson.REPLICA["model"], "70B, 4 × H100 (running example)"),
)
#: Short prompts, as in the chat benchmarks the published figures come from (the methods are calibrated at 512).
CONTEXT_TOKENS = PUBLISHED_SETUP["context_tokens"]
BATCH_POINTS = (1, 2, 4, 8, 12, 16, 20, 24, 28, 32, 48, 64, 96, 128, 192, 256)
SIM_PRESET = "step10-speculation-at-saturation"
#: The running example at step 5's traffic, the page's second example of speculation at a full batch.
LESSON_PRESET = "step05-paged"
DRAFT_CHOICES = tuple((key, shape.name) for key, shape in DRAFT_SHAPES.items())
#: A tree's branching when more candidates are verified than a chain of k has (SGLang's EAGLE example: top-4).
TREE_BRANCHING = EAGLE_LIKE.branching


def _config(acceptance: float, k: int, verify_tokens: int, draft: str) -> SpeculationConfig:
    branching = TREE_BRANCHING if verify_tokens > k + 1 else 1
    return SpeculationConfig(acceptance, k, None, source="chosen on the page", verify_tokens=verify_tokens,
                             draft=DRAFT_SHAPES[draft], branching=branching)


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _even_text(value) -> str:
    return "never (up to 4,096)" if value is None else f"{value:,}"


@widget
def speedup_vs_batch(
    acceptance: Annotated[float, FloatRange(0.0, 0.99, 0.01, label="Acceptance rate a",
                                            help="per drafted depth")] = EAGLE_LIKE.acceptance,
    k: Annotated[int, IntRange(1, 16, 1, "tokens", label="Draft depth k")] = EAGLE_LIKE.k,
    verify_tokens: Annotated[int, IntRange(2, 64, 1, "tokens", label="Tokens verified per sequence",
                                           help="k + 1 for a chain; more for a tree of candidates")] = EAGLE_LIKE.verify_tokens,
    draft: Annotated[str, Choice(DRAFT_CHOICES, label="Draft",
                                 help="its cost is priced from its own shape")] = EAGLE_LIKE.draft.key,
    batch: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Batch for the breakdown")] = 64,
    context_tokens: Annotated[int, IntRange(1, 131_072, 64, "tokens", label="Context per sequence")] = CONTEXT_TOKENS,
):
    """Speed-up of speculative decoding against batch size, on the 8B published set-up and on the running example.

    Per batch: speed-up = tokens per verify step x plain step / (verify step + k
    draft steps), every step on the roofline, the draft's from its own shape
    (:func:`calc.speculative.speedup_curve`); the break-even batch from
    :func:`calc.speculative.break_even`. Also drawn: calc's EAGLE and EAGLE-3 on the
    8B against their published points (:data:`PUBLISHED`).

    >>> out = speedup_vs_batch()["outputs"]
    >>> out["break_even_8b"]["text"], out["break_even_70b"]["text"], out["speedup_8b_batch_2"]["text"]
    ('20', '21', '1.4x')
    """
    config = _config(acceptance, k, verify_tokens, draft)
    xs = sorted(set(BATCH_POINTS) | {batch})
    series, evens = {}, {}
    for model, label in REPLICAS:
        rows = speedup_curve(replica_coefficients(model), batches=xs, context_tokens=context_tokens, config=config)
        series[f"{label.split(' (')[0]}: yours"] = (xs, [r["speedup"] for r in rows])  # short: a phone's legend
        evens[model] = break_even(model, config, context_tokens)
    eight = replica_coefficients(REPLICAS[0][0])
    for name, method in (("EAGLE", EAGLE_LIKE), ("EAGLE-3", EAGLE3_LIKE)):
        rows = speedup_curve(eight, batches=xs, context_tokens=context_tokens, config=method)
        series[f"calc {name}, 8B"] = (xs, [r["speedup"] for r in rows])
    figure = line_chart(
        "Speculation speed-up against batch", "sequences in the batch", "speed-up (x)", series,
        log_x=True, markers=True,
        summary=(f"Tokens per verify step {format_number(config.tokens_per_step)}. This set-up stops paying at batch "
                 + " and ".join(f"{_even_text(evens[m])} ({get_model(m).name})" for m, _ in REPLICAS)
                 + f"; published on the 8B: EAGLE below 1x from batch {PUBLISHED['eagle']['below_one_from_batch']}, "
                 f"EAGLE-3 {PUBLISHED['eagle3']['points'][64]:.2f}x at batch 64."),
    )
    for i in (2, 3):  # calc's published methods: dashed, behind the reader's set-up
        figure["data"][i]["line"] = {**figure["data"][i].get("line", {}), "dash": "dash", "width": 1.5}
    for name, key, symbol in (("published EAGLE, 8B", "eagle", "diamond-open"),
                              ("published EAGLE-3, 8B", "eagle3", "square-open")):
        points = sorted(PUBLISHED[key]["points"].items())
        figure["data"].append({"type": "scatter", "mode": "markers", "name": name,
                               "x": [b for b, _ in points], "y": [v for _, v in points],
                               "marker": {"color": PALETTE[5 if key == "eagle" else 4], "size": 11, "symbol": symbol,
                                          "line": {"width": 2}}})
    figure["data"].append({"type": "scatter", "mode": "lines", "name": "1x", "x": [xs[0], xs[-1]], "y": [1, 1],
                           "hoverinfo": "skip", "line": {"color": "#999999", "width": 1.5, "dash": "dot"}})
    below = PUBLISHED["eagle"]["below_one_from_batch"]
    layout = figure["layout"]
    layout["xaxis"]["dtick"] = 1
    layout["yaxis"]["rangemode"] = "tozero"
    layout["height"] = 500
    layout["legend"]["y"] = -0.3
    # A fixed range: Plotly would stretch an automatic one to make room for the annotation's text on a phone.
    layout["xaxis"]["range"] = [round_sig(math.log10(xs[0]) - 0.1, 6), round_sig(math.log10(xs[-1]) + 0.1, 6)]
    layout["shapes"] = [{"type": "line", "x0": below, "x1": below, "yref": "paper", "y0": 0, "y1": 1,
                         "line": {"dash": "dash", "width": 1, "color": PALETTE[5]}}]
    # On a log axis an annotation's x is log10 of the value.
    layout["annotations"] = [{"x": round_sig(math.log10(below), 6), "xref": "x", "y": 0.02, "yref": "paper",
                              "yanchor": "bottom", "xanchor": "left", "showarrow": False, "font": {"size": 11},
                              "text": f" EAGLE: below 1x from {below}"}]
    b8 = speedup_at_batch(eight, batch=batch, context_tokens=context_tokens, config=config)
    b70 = speedup_at_batch(replica_coefficients(REPLICAS[1][0]), batch=batch, context_tokens=context_tokens,
                           config=config)
    rows = []
    for (_, label), b in zip(REPLICAS, (b8, b70)):
        rows.append([label.split(" (")[0], _ms(b["plain_step_s"]), _ms(b["verify_step_s"]),
                     f"{_ms(b['draft_steps_s'])} (c = {format_number(b['draft_cost_ratio'])})",
                     f"{format_number(b['plain_tokens_per_s'])} → {format_number(b['speculative_tokens_per_s'])}",
                     f"{format_number(b['speedup'])}x"])
    at2 = speedup_at_batch(eight, batch=2, context_tokens=context_tokens, config=config)
    at64 = speedup_at_batch(eight, batch=64, context_tokens=context_tokens, config=config)
    return view(
        outputs=[
            output("tokens_per_step", "Tokens per verify step", config.tokens_per_step, "tokens",
                   text=format_number(config.tokens_per_step)),
            output("draft_cost_ratio", f"Draft cost c at batch {batch:,}, 8B / 70B", b8["draft_cost_ratio"], "",
                   text=f"{format_number(b8['draft_cost_ratio'])} / {format_number(b70['draft_cost_ratio'])}"),
            output("break_even_8b", "Below 1x from batch, 8B on 1 H100", evens[REPLICAS[0][0]] or 0, "sequences",
                   text=_even_text(evens[REPLICAS[0][0]])),
            output("break_even_70b", "Below 1x from batch, 70B on 4 H100", evens[REPLICAS[1][0]] or 0, "sequences",
                   text=_even_text(evens[REPLICAS[1][0]])),
            output("speedup_8b_batch_2", "8B speed-up at batch 2", at2["speedup"], "", text=f"{format_number(at2['speedup'])}x"),
            output("speedup_8b_batch_64", "8B speed-up at batch 64", at64["speedup"], "",
                   text=f"{format_number(at64['speedup'])}x"),
            output("speedup_at_batch", f"Speed-up at batch {batch:,}, 8B / 70B", b8["speedup"], "",
                   text=f"{format_number(b8['speedup'])}x / {format_number(b70['speedup'])}x"),
        ],
        figures={"vs_batch": figure},
        tables={"cycle": table(
            ["Replica", "Plain step", "Verify step", f"{k} draft steps", "Tokens/s, without → with", "Speed-up"], rows,
            caption=f"One speculation cycle at batch {batch:,}, {context_tokens:,} tokens of context")},
    )


SPECULATION_CHOICES = (("eagle-like", "on: EAGLE-like drafter"), ("eagle3-like", "on: EAGLE-3-like drafter"),
                       ("off", "off"))
SIM_RATE_PER_S = float(presets.load_data(SIM_PRESET)["workload"]["rate_per_s"])


@stream(budget_s=4.0)
def saturated(
    speculation: Annotated[str, Choice(SPECULATION_CHOICES, label="Speculative decoding")] = "eagle-like",
    rate_per_s: Annotated[float, FloatRange(0.5, 100, 0.5, "requests/s", label="Arrival rate")] = SIM_RATE_PER_S,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """Llama 3.1 8B on one H100 at the highest load it serves within the SLO without speculation, live.

    The scenario is the preset ``step10-speculation-at-saturation`` (:mod:`calc.sim.presets`; its rate is
    :func:`calc.sim.speculation.healthy_rate_without_speculation`) at ``rate_per_s``, with an EAGLE-like or
    EAGLE-3-like drafter, or none.
    """
    yield from simulation_views(scenario_for(SIM_PRESET, rate_per_s=rate_per_s, speculation=speculation),
                                frame_interval_s)


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it; the runs are cached (calc.sim_views.preset_summary).
LOW_RATE_PER_S = SIM_RATE_PER_S / 4  # the try-this's quiet traffic: a quarter of the saturating rate
_BREAK_EVEN_CONFIGS = {"eagle": EAGLE_LIKE, "eagle3": EAGLE3_LIKE, "draft": SEPARATE_DRAFT_LIKE}
_MODEL_8B, _MODEL_70B = REPLICAS[0][0], REPLICAS[1][0]


@functools.cache
def _at(batch: int, method: str = "eagle") -> dict:
    config = {"eagle": None, "eagle3": EAGLE3_LIKE}[method]
    c8 = replica_coefficients(_MODEL_8B)
    if config is None:
        return speedup_at_batch(c8, batch=batch, context_tokens=CONTEXT_TOKENS)
    return speedup_at_batch(c8, batch=batch, context_tokens=CONTEXT_TOKENS, config=config)


@functools.cache
def _even(method: str, model: str):
    return break_even(model, _BREAK_EVEN_CONFIGS[method])


def _sim(speculation: str, preset: str = SIM_PRESET, rate: float | None = None) -> dict:
    return preset_summary(preset, speculation=speculation) if rate is None else preset_summary(preset, rate, speculation=speculation)


def _x(value: float) -> str:
    return f"{format_number(value)}x"


def _s(seconds: float) -> str:
    return f"{format_number(seconds)} s"


@fact
def model_8b():
    return get_model(_MODEL_8B).name


@fact
def model_70b():
    return get_model(_MODEL_70B).name


@fact
def gpu():
    return get_gpu(lesson.REPLICA["gpu"]).name


@fact
def context():
    return f"{CONTEXT_TOKENS:,}"


@fact
def eagle_k():
    return str(EAGLE_LIKE.k)


@fact
def eagle_verify():
    return str(EAGLE_LIKE.verify_tokens)


@fact
def eagle_acceptance():
    return f"{EAGLE_LIKE.acceptance:g}"


@fact
def eagle_cost():
    return format_number(_at(1)["draft_cost_ratio"])


@fact
def eagle_cost_64():
    return format_number(_at(64)["draft_cost_ratio"])


@fact
def eagle_tokens():
    return format_number(EAGLE_LIKE.tokens_per_step)


@fact
def eagle3_k():
    return str(EAGLE3_LIKE.k)


@fact
def eagle3_verify():
    return str(EAGLE3_LIKE.verify_tokens)


@fact
def eagle3_acceptance():
    return f"{EAGLE3_LIKE.acceptance:g}"


@fact
def eagle3_batch_2():
    return _x(_at(2, "eagle3")["speedup"])


@fact
def eagle3_batch_64():
    return _x(_at(64, "eagle3")["speedup"])


@fact
def eagle3_published_64():
    return f"{PUBLISHED['eagle3']['points'][64]:.2f}x"


@fact
def eagle3_break_even_8b():
    return _even_text(_even("eagle3", _MODEL_8B))


@fact
def draft_model():
    return get_model(SEPARATE_DRAFT_LIKE.draft.draft_model).name


@fact
def draft_break_even_70b():
    return _even_text(_even("draft", _MODEL_70B))


@fact
def break_even_8b():
    """The batch from which EAGLE-like speculation slows the 8B down, against the paper's.

    >>> break_even_8b(), published_below()
    ('20', '24')
    """
    return str(_even("eagle", _MODEL_8B))


@fact
def break_even_70b():
    return str(_even("eagle", _MODEL_70B))


@fact
def published_below():
    return str(PUBLISHED["eagle"]["below_one_from_batch"])


@fact
def published_batch_2():
    return f"{PUBLISHED['eagle']['points'][2]:.2f}x"


@fact
def published_batch_64():
    return f"{PUBLISHED['eagle']['points'][64]:.2f}x"


@fact
def calc_batch_1():
    return _x(_at(1)["speedup"])


@fact
def calc_batch_2():
    return _x(_at(2)["speedup"])


@fact
def calc_batch_64():
    return _x(_at(64)["speedup"])


@fact
def calc_batch_256():
    return _x(_at(256)["speedup"])


@fact
def plain_64():
    return _ms(_at(64)["plain_step_s"])


@fact
def verify_64():
    return _ms(_at(64)["verify_step_s"])


@fact
def plain_1():
    return _ms(_at(1)["plain_step_s"])


@fact
def verify_1():
    return _ms(_at(1)["verify_step_s"])


@fact
def ridge():
    return format_number(get_gpu(lesson.REPLICA["gpu"]).ridge_point_flops_per_byte("bf16"))


@fact
def verify_tokens_64():
    return f"{verify_tokens_in_batch(EAGLE_LIKE, 64):,}"


@fact
def slo():
    return _s(TTFT_SLO_S)


@fact
def sim_rate():
    """>>> sim_rate(), sim_ttft_p99_off()
    ('13', '0.248 s')
    """
    return format_number(SIM_RATE_PER_S)


@fact
def sim_prompt_tokens():
    return f"{presets.load_data(SIM_PRESET)['workload']['classes'][0]['prompt_tokens']:,}"


@fact
def sim_batch_on():
    return format_number(_sim("eagle-like")["running_mean"])


@fact
def sim_batch_off():
    return format_number(_sim("off")["running_mean"])


@fact
def sim_tokens_on():
    return format_number(_sim("eagle-like")["throughput_output_tokens_per_s"])


@fact
def sim_tokens_off():
    return format_number(_sim("off")["throughput_output_tokens_per_s"])


@fact
def sim_ttft_p99_on():
    return _s(_sim("eagle-like")["ttft_p99_s"])


@fact
def sim_ttft_p99_off():
    return _s(_sim("off")["ttft_p99_s"])


@fact
def sim_ttft_p99_eagle3():
    return _s(_sim("eagle3-like")["ttft_p99_s"])


@fact
def sim_itl_on():
    return _ms(_sim("eagle-like")["itl_p50_s"])


@fact
def sim_itl_off():
    return _ms(_sim("off")["itl_p50_s"])


@fact
def sim_itl_eagle3():
    return _ms(_sim("eagle3-like")["itl_p50_s"])


@fact
def sim_queue_on():
    return f"{_sim('eagle-like')['queue_depth_max']:,}"


@fact
def sim_queue_off():
    return f"{_sim('off')['queue_depth_max']:,}"


@fact
def sim_compute_on():
    return share_text(_sim("eagle-like")["compute_utilization"])


@fact
def sim_compute_off():
    return share_text(_sim("off")["compute_utilization"])


@fact
def sim_cost_on():
    return f"${_sim('eagle-like')['cost_usd_per_million_output_tokens']:,.2f}"


@fact
def sim_cost_off():
    return f"${_sim('off')['cost_usd_per_million_output_tokens']:,.2f}"


@fact
def low_rate():
    return format_number(LOW_RATE_PER_S)


@fact
def low_itl_on():
    return _ms(_sim("eagle-like", rate=LOW_RATE_PER_S)["itl_p50_s"])


@fact
def low_itl_off():
    return _ms(_sim("off", rate=LOW_RATE_PER_S)["itl_p50_s"])


@fact
def low_batch_off():
    return format_number(_sim("off", rate=LOW_RATE_PER_S)["running_mean"], 2)


@fact
def lesson_rate():
    return format_number(presets.load_data(LESSON_PRESET)["workload"]["rate_per_s"])


@fact
def lesson_ttft_p99_on():
    return _s(_sim("eagle-like", LESSON_PRESET)["ttft_p99_s"])


@fact
def lesson_ttft_p99_off():
    return _s(_sim("off", LESSON_PRESET)["ttft_p99_s"])


@fact
def lesson_batch_off():
    return format_number(_sim("off", LESSON_PRESET)["running_mean"])


@fact
def lesson_batch_on():
    return format_number(_sim("eagle-like", LESSON_PRESET)["running_mean"])


facts = facts_of(__name__)
