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
    replica_coefficients, speedup_at_batch, speedup_curve,
)
from calc.units import format_number, round_sig
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, output, stream, table, view, widget
from calc.widgets.simulation import scenario_for, simulation_views

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


def facts() -> dict[str, str]:
    """Numbers quoted in the step's prose, computed from calc.

    >>> f = facts()
    >>> f["break_even_8b"], f["published_below"], f["sim_rate"], f["sim_ttft_p99_off"]
    ('20', '24', '13', '0.248 s')
    """
    c8 = replica_coefficients(REPLICAS[0][0])
    at = {b: speedup_at_batch(c8, batch=b, context_tokens=CONTEXT_TOKENS) for b in (1, 2, 64, 256)}
    e3 = {b: speedup_at_batch(c8, batch=b, context_tokens=CONTEXT_TOKENS, config=EAGLE3_LIKE) for b in (2, 64)}
    on, off = preset_summary(SIM_PRESET, speculation="eagle-like"), preset_summary(SIM_PRESET, speculation="off")
    on3 = preset_summary(SIM_PRESET, speculation="eagle3-like")
    low_rate = SIM_RATE_PER_S / 4
    low_on, low_off = (preset_summary(SIM_PRESET, low_rate, speculation="eagle-like"),
                       preset_summary(SIM_PRESET, low_rate, speculation="off"))
    lesson_rate = presets.load_data(LESSON_PRESET)["workload"]["rate_per_s"]
    l_on, l_off = preset_summary(LESSON_PRESET, speculation="eagle-like"), preset_summary(LESSON_PRESET, speculation="off")
    gpu = get_gpu(lesson.REPLICA["gpu"])
    evens = {name: {m: break_even(m, config) for m, _ in REPLICAS}
             for name, config in (("eagle", EAGLE_LIKE), ("eagle3", EAGLE3_LIKE), ("draft", SEPARATE_DRAFT_LIKE))}
    seventy = REPLICAS[1][0]
    return {
        "model_8b": get_model(REPLICAS[0][0]).name,
        "model_70b": get_model(seventy).name,
        "gpu": gpu.name,
        "context": f"{CONTEXT_TOKENS:,}",
        "eagle_k": str(EAGLE_LIKE.k),
        "eagle_verify": str(EAGLE_LIKE.verify_tokens),
        "eagle_acceptance": f"{EAGLE_LIKE.acceptance:g}",
        "eagle_cost": format_number(at[1]["draft_cost_ratio"]),
        "eagle_cost_64": format_number(at[64]["draft_cost_ratio"]),
        "eagle_tokens": format_number(EAGLE_LIKE.tokens_per_step),
        "eagle3_k": str(EAGLE3_LIKE.k),
        "eagle3_verify": str(EAGLE3_LIKE.verify_tokens),
        "eagle3_acceptance": f"{EAGLE3_LIKE.acceptance:g}",
        "eagle3_batch_2": f"{format_number(e3[2]['speedup'])}x",
        "eagle3_batch_64": f"{format_number(e3[64]['speedup'])}x",
        "eagle3_published_64": f"{PUBLISHED['eagle3']['points'][64]:.2f}x",
        "eagle3_break_even_8b": _even_text(evens["eagle3"][REPLICAS[0][0]]),
        "draft_model": get_model(SEPARATE_DRAFT_LIKE.draft.draft_model).name,
        "draft_break_even_70b": _even_text(evens["draft"][seventy]),
        "break_even_8b": str(evens["eagle"][REPLICAS[0][0]]),
        "break_even_70b": str(evens["eagle"][seventy]),
        "published_below": str(PUBLISHED["eagle"]["below_one_from_batch"]),
        "published_batch_2": f"{PUBLISHED['eagle']['points'][2]:.2f}x",
        "published_batch_64": f"{PUBLISHED['eagle']['points'][64]:.2f}x",
        "calc_batch_1": f"{format_number(at[1]['speedup'])}x",
        "calc_batch_2": f"{format_number(at[2]['speedup'])}x",
        "calc_batch_64": f"{format_number(at[64]['speedup'])}x",
        "calc_batch_256": f"{format_number(at[256]['speedup'])}x",
        "plain_64": _ms(at[64]["plain_step_s"]),
        "verify_64": _ms(at[64]["verify_step_s"]),
        "plain_1": _ms(at[1]["plain_step_s"]),
        "verify_1": _ms(at[1]["verify_step_s"]),
        "ridge": format_number(gpu.ridge_point_flops_per_byte("bf16")),
        "verify_tokens_64": f"{64 * EAGLE_LIKE.verify_tokens:,}",
        "slo": f"{format_number(TTFT_SLO_S)} s",
        "sim_rate": format_number(SIM_RATE_PER_S),
        "sim_prompt_tokens": f"{presets.load_data(SIM_PRESET)['workload']['classes'][0]['prompt_tokens']:,}",
        "sim_batch_on": format_number(on["running_mean"]),
        "sim_batch_off": format_number(off["running_mean"]),
        "sim_tokens_on": format_number(on["throughput_output_tokens_per_s"]),
        "sim_tokens_off": format_number(off["throughput_output_tokens_per_s"]),
        "sim_ttft_p99_on": f"{format_number(on['ttft_p99_s'])} s",
        "sim_ttft_p99_off": f"{format_number(off['ttft_p99_s'])} s",
        "sim_ttft_p99_eagle3": f"{format_number(on3['ttft_p99_s'])} s",
        "sim_itl_on": f"{format_number(on['itl_p50_s'] * 1000)} ms",
        "sim_itl_off": f"{format_number(off['itl_p50_s'] * 1000)} ms",
        "sim_itl_eagle3": f"{format_number(on3['itl_p50_s'] * 1000)} ms",
        "sim_queue_on": f"{on['queue_depth_max']:,}",
        "sim_queue_off": f"{off['queue_depth_max']:,}",
        "sim_compute_on": f"{on['compute_utilization'] * 100:.0f}%",
        "sim_compute_off": f"{off['compute_utilization'] * 100:.0f}%",
        "sim_cost_on": f"${on['cost_usd_per_million_output_tokens']:,.2f}",
        "sim_cost_off": f"${off['cost_usd_per_million_output_tokens']:,.2f}",
        "low_rate": format_number(low_rate),
        "low_itl_on": f"{format_number(low_on['itl_p50_s'] * 1000)} ms",
        "low_itl_off": f"{format_number(low_off['itl_p50_s'] * 1000)} ms",
        "low_batch_off": format_number(low_off["running_mean"], 2),
        "lesson_rate": format_number(lesson_rate),
        "lesson_ttft_p99_on": f"{format_number(l_on['ttft_p99_s'])} s",
        "lesson_ttft_p99_off": f"{format_number(l_off['ttft_p99_s'])} s",
        "lesson_batch_off": format_number(l_off["running_mean"]),
        "lesson_batch_on": format_number(l_on["running_mean"]),
    }
