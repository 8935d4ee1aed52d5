"""Widgets and facts of step 9, "Speculative decoding" (docs/lesson/09-speculative-decoding.md).

A small draft model guesses ``k`` tokens; the target checks them all in one
forward pass, keeps the longest accepted run and adds one token of its own. With
acceptance ``a`` per drafted token (Leviathan et al. 2023, Eq. 1):

    expected tokens per target step = (1 - a**(k+1)) / (1 - a)
    speed-up = that / (k c + 1),    c = draft step time / target step time

The output distribution is the target's, exactly: a drafted token ``x`` is kept
with probability min(1, p(x) / q(x)), and on rejection the target samples from
the normalised max(0, p - q) (Leviathan et al. 2023, Theorem 3.5; Chen et al. 2023).

The draft's cost ``c`` is priced from its own shape on the roofline
(:func:`calc.speculative.speedup_at_batch` with a :class:`calc.speculative.DraftShape`).

>>> round(expected_tokens_per_step(0.7, 4), 2), round(_cycle("llama-3.2-1b", 0.7, 4, 1)["draft_cost_ratio"], 3)
(2.77, 0.064)
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc import lesson
from calc.catalog import get_model
from calc.roofline import decode_step
from calc.sim import presets
from calc.sim_views import preset_summary
from calc.speculative import (
    EAGLE_LIKE, SEPARATE_DRAFT_LIKE, DraftShape, SpeculationConfig, best_k, cycle_times, emitted_distribution,
    expected_tokens_per_step, max_tokens_per_step, speedup, speedup_at_batch,
)
from calc.speculative import tokens_ceiling as ceiling_of_tokens
from calc.units import format_number, round_sig
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.lesson import DECODE_CONTEXT_TOKENS
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.simulation import scenario_for, simulation_views
from calc.widgets.views import share_text

__all__ = ["gain", "same_distribution", "light_traffic", "facts", "DRAFTS", "WORDS", "TARGET_P", "OTHER_P",
           "HEADLINE"]

#: Draft models that share Llama 3.1's tokenizer (128,256 tokens), each run on one GPU of the replica.
DRAFTS = (("llama-3.2-1b", "Llama 3.2 1B"), ("llama-3.2-3b", "Llama 3.2 3B"), ("llama-3.1-8b", "Llama 3.1 8B"))
DRAFT_TP = SEPARATE_DRAFT_LIKE.draft.draft_tp
#: The step's headline set-up, the one the cheat sheet borrows (facts ``headline_*``): a separate Llama 3.2 1B
#: draft, calc.speculative.SEPARATE_DRAFT_LIKE (an illustrative acceptance; measured per task in practice).
HEADLINE = SEPARATE_DRAFT_LIKE
#: Defaults of the controls: the headline's acceptance and draft length.
ACCEPTANCE, K = HEADLINE.acceptance, HEADLINE.k
ACCEPTANCE_CURVES = (0.5, 0.7, 0.9)
MAX_K = 16
#: The light load of the live simulation: the running example at a quarter of step 5's traffic.
SIM_PRESET, SIM_RATE_PER_S = "step05-paged", 2.0

# A toy next-token distribution (five words) for the distribution demo; OTHER_P is a draft that
# ranks the words the wrong way round. Illustrative numbers, not measurements.
WORDS = ("the", "a", "our", "this", "your")
TARGET_P = (0.45, 0.25, 0.15, 0.10, 0.05)
OTHER_P = tuple(reversed(TARGET_P))


def _target():
    return lesson.coefficients()


def _cycle(draft: str, acceptance: float, k: int, batch: int) -> dict:
    """One speculation cycle on the running example with ``draft`` (a catalog model on one GPU) as a chain of ``k``."""
    shape = DraftShape(key=draft, name=dict(DRAFTS)[draft], kind="model", draft_model=draft, draft_tp=DRAFT_TP,
                       source="a catalog model as the draft, on one GPU of the replica")
    config = SpeculationConfig(acceptance, k, None, source=f"{draft} draft on one H100, priced on calc.roofline",
                               draft=shape)
    return speedup_at_batch(_target(), batch=batch, context_tokens=DECODE_CONTEXT_TOKENS, config=config)


@widget
def gain(
    acceptance: Annotated[float, FloatRange(0.0, 0.99, 0.01, label="Acceptance rate a",
                                            help="chance the target keeps a drafted token")] = ACCEPTANCE,
    k: Annotated[int, IntRange(1, MAX_K, 1, "tokens", label="Drafted tokens k")] = K,
    draft: Annotated[str, Choice(DRAFTS, label="Draft model")] = DRAFTS[0][0],
    batch: Annotated[int, IntRange(1, 1024, 1, "sequences", label="Decode batch")] = 1,
):
    """Tokens per target step and the speed-up of speculative decoding on the running example.

    Formula speed-up ``(1 - a**(k+1)) / ((1 - a)(k c + 1))`` (Leviathan et al. 2023);
    the roofline speed-up also prices the verify step's ``k + 1`` tokens per
    sequence (:func:`calc.speculative.speedup_at_batch`).

    >>> out = gain()["outputs"]
    >>> out["tokens_per_step"]["text"], out["speedup_formula"]["text"], out["speedup_roofline"]["text"]
    ('2.77', '2.2x', '2.2x')
    """
    roof = _cycle(draft, acceptance, k, batch)
    c = roof["draft_cost_ratio"]
    expected = expected_tokens_per_step(acceptance, k)
    formula = speedup(acceptance, k, c)
    top = best_k(acceptance, c, MAX_K)
    ks = list(range(1, MAX_K + 1))
    curves = sorted(set(ACCEPTANCE_CURVES) | {round(acceptance, 2)})
    name = dict(DRAFTS)[draft]
    tokens_chart = line_chart(
        "Tokens per target step", "drafted tokens k", "tokens per step",
        {f"a = {a:g}": (ks, [expected_tokens_per_step(a, x) for x in ks]) for a in curves}, markers=True,
        summary=(f"At a = {acceptance:g}, k = {k}: {format_number(expected)} tokens per target step; "
                 f"the ceiling 1 / (1 - a) is {format_number(1 / (1 - acceptance))}."),
    )
    tokens_chart["data"].append({"type": "scatter", "mode": "lines", "name": "k + 1",
                                 "x": ks, "y": [x + 1 for x in ks], "hoverinfo": "skip",
                                 "line": {"color": "#999999", "width": 1.5, "dash": "dash"}})
    speed_chart = line_chart(
        f"Speed-up, {name} draft (c = {format_number(c)})", "drafted tokens k", "speed-up (x)",
        {f"a = {a:g}": (ks, [speedup(a, x, c) for x in ks]) for a in curves}, markers=True,
        summary=(f"With c = {format_number(c)}, a = {acceptance:g}: {format_number(formula)}x at k = {k}, "
                 f"best k = {top} ({format_number(speedup(acceptance, top, c))}x)."),
    )
    speed_chart["data"].append({"type": "scatter", "mode": "lines", "name": "1x", "x": [1, MAX_K],
                                "y": [1, 1], "hoverinfo": "skip",
                                "line": {"color": "#999999", "width": 1.5, "dash": "dot"}})
    for chart in (tokens_chart, speed_chart):
        chart["data"].append({"type": "scatter", "mode": "markers", "name": f"a = {acceptance:g}, k = {k}", "showlegend": False,
                              "x": [k], "y": [round_sig(expected if chart is tokens_chart else formula)],
                              "marker": {"color": PALETTE[5], "size": 11, "symbol": "diamond"}})
        chart["layout"]["yaxis"]["rangemode"] = "tozero"
        chart["layout"]["legend"]["y"] = -0.38  # below the axis title on a phone, where the legend wraps
    plain_ms = roof["plain_step_s"] * 1000
    per_token_ms = plain_ms / roof["speedup"]
    return view(
        outputs=[
            output("tokens_per_step", "Tokens per target step", expected, "tokens", text=format_number(expected)),
            output("draft_cost_ratio", "Draft cost c (draft step / target step)", c, "", text=format_number(c)),
            output("speedup_formula", "Speed-up, formula", formula, "", text=f"{format_number(formula)}x"),
            output("speedup_roofline", f"Speed-up on the roofline, batch {batch:,}", roof["speedup"], "",
                   text=f"{format_number(roof['speedup'])}x"),
            output("itl", "Time per output token", per_token_ms / 1000, "s",
                   text=f"{format_number(plain_ms)} ms → {format_number(per_token_ms)} ms"),
            output("best_k", "Best k at this a and c", top, "tokens",
                   text=f"{top} ({format_number(speedup(acceptance, top, c))}x)"),
        ],
        figures={"tokens": tokens_chart, "speedup": speed_chart},
    )


@widget
def same_distribution(
    mismatch: Annotated[float, FloatRange(0.0, 1.0, 0.05, label="Draft mismatch",
                                          help="0: the draft predicts like the target; 1: the other way round")] = 0.5,
):
    """A five-word next-token distribution: the target's, a draft's, and what speculative sampling emits.

    The draft is ``(1 - m) p + m r``, with ``r`` the target's probabilities in reverse
    order. Acceptance ``a = sum(min(p, q))``; emitted = :func:`emitted_distribution`.
    Source: Leviathan et al. 2023 (Theorem 3.5).

    >>> out = same_distribution()["outputs"]
    >>> out["acceptance"]["text"], out["max_difference"]["text"]
    ('72%', '0')
    """
    q = [(1 - mismatch) * p + mismatch * r for p, r in zip(TARGET_P, OTHER_P)]
    acceptance = math.fsum(min(p, x) for p, x in zip(TARGET_P, q))
    emitted = emitted_distribution(TARGET_P, q)
    difference = max(abs(e - p) for e, p in zip(emitted, TARGET_P))
    difference = 0.0 if difference < 1e-12 else difference  # float rounding, not a real difference
    figure = bar_chart(
        "Next-token probabilities", list(WORDS), "probability",
        {"target p": list(TARGET_P), "draft q": q, "emitted": emitted},
        summary=(f"Draft mismatch {mismatch:g}: the target keeps {acceptance * 100:.0f}% of drafted tokens, and the "
                 f"emitted probabilities equal the target's ({', '.join(f'{w} {p:g}' for w, p in zip(WORDS, TARGET_P))})."),
    )
    figure["layout"]["barmode"] = "group"
    figure["layout"]["height"] = 320
    figure["data"][2]["marker"] = {"color": PALETTE[2], "pattern": {"shape": "/"}}
    rows = [[w, f"{p:.3f}", f"{x:.3f}", f"{min(p, x):.3f}", f"{e - min(p, x):.3f}", f"{e:.3f}"]
            for w, p, x, e in zip(WORDS, TARGET_P, q, emitted)]
    return view(
        outputs=[
            output("acceptance", "Acceptance a = Σ min(p, q)", acceptance, "", text=f"{acceptance * 100:.0f}%"),
            output("tokens_per_step", f"Tokens per target step at k = {K}", expected_tokens_per_step(min(acceptance, 0.99), K),
                   "tokens", text=format_number(expected_tokens_per_step(min(acceptance, 0.99), K))),
            output("max_difference", "Largest |emitted − target|", difference, "", text=format_number(difference)),
        ],
        figures={"distribution": figure},
        tables={"mix": table(["Word", "Target p", "Draft q", "Kept draft: min(p, q)", "From rejections",
                              "Emitted"], rows, caption="Where each emitted probability comes from")},
    )


SPECULATION_CHOICES = (("eagle-like", "on: EAGLE-like drafter"), ("off", "off"))


@stream(budget_s=4.0)
def light_traffic(
    speculation: Annotated[str, Choice(SPECULATION_CHOICES, label="Speculative decoding")] = "eagle-like",
    rate_per_s: Annotated[float, FloatRange(0.5, 50, 0.5, "requests/s", label="Arrival rate")] = SIM_RATE_PER_S,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The running example at light traffic, live, with speculative decoding on or off.

    The scenario is the preset ``step05-paged`` (:mod:`calc.sim.presets`) at ``rate_per_s``
    with the simulator's EAGLE-like drafter (:data:`calc.speculative.EAGLE_LIKE`) or none.
    """
    yield from simulation_views(scenario_for(SIM_PRESET, rate_per_s=rate_per_s, speculation=speculation),
                                frame_interval_s)


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it; ``headline_*`` are the ones the cheat sheet borrows.
QUIZ_ACCEPTANCE, QUIZ_K = 0.6, 4


@functools.cache
def _plain_step_s() -> float:
    return decode_step(_target(), batch=1, context_tokens=DECODE_CONTEXT_TOKENS)["time_s"]


@functools.cache
def _roof() -> dict:
    return _cycle(DRAFTS[0][0], ACCEPTANCE, K, 1)


def _c() -> float:
    return _roof()["draft_cost_ratio"]


def _times() -> dict:
    return cycle_times(_plain_step_s(), _c(), K, _roof()["speedup"])


@functools.cache
def _eagle_c() -> float:
    return speedup_at_batch(_target(), batch=1, context_tokens=DECODE_CONTEXT_TOKENS, config=EAGLE_LIKE)["draft_cost_ratio"]


def _sim(speculation: str) -> dict:
    return preset_summary(SIM_PRESET, SIM_RATE_PER_S, speculation=speculation)


def _x(value: float) -> str:
    return f"{format_number(value)}x"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


@fact("model")
def _model_name():
    return get_model(lesson.REPLICA["model"]).name


@fact
def draft():
    return dict(DRAFTS)[DRAFTS[0][0]]


@fact
def headline_draft():
    return dict(DRAFTS)[DRAFTS[0][0]]


@fact
def headline_acceptance():
    """>>> headline_acceptance(), headline_cost_ratio(), headline_speedup()
    ('0.7', '0.0644', '2.2x')
    """
    return f"{ACCEPTANCE:g}"


@fact
def headline_k():
    return str(K)


@fact
def headline_cost_ratio():
    return format_number(_c())


@fact
def headline_tokens():
    return format_number(expected_tokens_per_step(ACCEPTANCE, K))


@fact
def headline_speedup():
    return _x(speedup(ACCEPTANCE, K, _c()))


@fact
def acceptance():
    return f"{ACCEPTANCE:g}"


@fact
def k():
    return str(K)


@fact
def k_plus_1():
    return str(max_tokens_per_step(K))


@fact
def tokens_default():
    return format_number(expected_tokens_per_step(ACCEPTANCE, K))


@fact
def tokens_ceiling():
    return format_number(ceiling_of_tokens(ACCEPTANCE))


@fact
def tokens_max():
    return str(max_tokens_per_step(K))


@fact
def cost_ratio():
    return format_number(_c())


@fact
def target_step():
    return _ms(_plain_step_s())


@fact
def draft_step():
    return _ms(_times()["draft_step_s"])


@fact
def cycle():
    return _ms(_times()["cycle_s"])


@fact
def speedup_default():
    return _x(speedup(ACCEPTANCE, K, _c()))


@fact
def per_token_after():
    return _ms(_times()["per_token_s"])


@fact("best_k")
def _best_k():
    return str(best_k(ACCEPTANCE, _c(), MAX_K))


@fact
def best_speedup():
    return _x(speedup(ACCEPTANCE, best_k(ACCEPTANCE, _c(), MAX_K), _c()))


@fact
def quiz_a():
    return f"{QUIZ_ACCEPTANCE:g}"


@fact
def quiz_k():
    return str(QUIZ_K)


@fact
def quiz_k_plus_1():
    return str(max_tokens_per_step(QUIZ_K))


@fact
def quiz_tokens():
    """>>> quiz_tokens()
    '2.31'
    """
    return format_number(expected_tokens_per_step(QUIZ_ACCEPTANCE, QUIZ_K))


@fact
def quiz_speedup():
    return _x(speedup(QUIZ_ACCEPTANCE, QUIZ_K, _c()))


@fact
def quiz_a0_speedup():
    return _x(speedup(0.0, QUIZ_K, _c()))


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
def eagle_tokens():
    return format_number(EAGLE_LIKE.tokens_per_step)


@fact
def eagle_cost_ratio():
    return format_number(_eagle_c())


@fact
def eagle_speedup():
    return _x(speedup(EAGLE_LIKE.acceptance, EAGLE_LIKE.k, _eagle_c()))


@fact
def sim_rate():
    return format_number(SIM_RATE_PER_S)


@fact
def step5_rate():
    return format_number(presets.load_data(SIM_PRESET)["workload"]["rate_per_s"])


@fact
def sim_itl_on():
    return _ms(_sim("eagle-like")["itl_p50_s"])


@fact
def sim_itl_off():
    return _ms(_sim("off")["itl_p50_s"])


@fact
def sim_e2e_on():
    return f"{format_number(_sim('eagle-like')['e2e_p50_s'])} s"


@fact
def sim_e2e_off():
    return f"{format_number(_sim('off')['e2e_p50_s'])} s"


@fact
def sim_batch_on():
    return format_number(_sim("eagle-like")["running_mean"])


@fact
def sim_batch_off():
    return format_number(_sim("off")["running_mean"])


@fact
def sim_compute_on():
    return share_text(_sim("eagle-like")["compute_utilization"])


@fact
def sim_compute_off():
    return share_text(_sim("off")["compute_utilization"])


facts = facts_of(__name__)
