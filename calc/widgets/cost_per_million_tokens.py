"""Widgets and facts of step 16, "Cost per million tokens" (docs/lesson/16-cost-per-million-tokens.md).

A replica is paid by the hour, busy or not, so what a token costs is the hourly
price over the tokens it produces (the lesson's step 16):

    USD per million tokens = USD per hour / (tokens/s x 3,600) x 10^6

and a decode step of ``b`` sequences produces ``b`` tokens in about the time of one
while it is memory-bound (the weights are read once for the whole batch). For the
running example at Lambda's listed H100 price:

>>> rows = decode_rows(batches=(1, 10))
>>> [round(r["usd_per_million_tokens"], 2) for r in rows], round(rows[0]["usd_per_million_tokens"] / rows[1]["usd_per_million_tokens"], 2)
([64.24, 6.6], 9.74)
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc import lesson
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.cost import (
    H100_LISTINGS, batching_discount, batching_limit, cost_ratio, cost_vs_batch, free_batching_usd,
    replica_usd_per_hour, steady_batching_limit, usd_per_million_tokens, usd_per_month,
)
from calc.cost import _POWERS, MAX_NUM_SEQS, _coefficients, decode_rows, prefill_rows
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, DECODE_CONTEXT_TOKENS, PROMPT_TOKENS, REQUEST_TOKENS, kv_batch_limit, replica_capacity
from calc.roofline import first_compute_bound_batch, first_compute_bound_steady_batch
from calc.units import format_number, ratio
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import Gpu, Model, Weights, tensor_parallel
from calc.widgets.framework import FloatRange, IntRange, Toggle, fact, facts_of, output, table, view, widget
from calc.widgets.views import percent_text

__all__ = ["LESSON_CONTEXT_TOKENS", "EFFICIENCY_FLOOR", "decode_rows", "prefill_rows", "price_note", "cost_by_batch",
           "facts"]

#: Context a decoding sequence of the running example holds on average: the prompt plus half the answer.
LESSON_CONTEXT_TOKENS = DECODE_CONTEXT_TOKENS
#: "Nearly ten times cheaper" holds while batching is at least this efficient (step(1) / step(b)).
EFFICIENCY_FLOOR = 0.9
MAX_BATCH = 4096
_GPU = get_gpu(lesson.REPLICA["gpu"])
def price_note(gpu: str, usd_per_gpu_hour: float) -> str:
    """Where a price per GPU-hour comes from: the catalog's dated listing, or the reader's own figure.

    >>> price_note("h100-sxm-80gb", 3.78)
    'Lambda on-demand, listed 2026-05-07'
    >>> price_note("h100-sxm-80gb", 2.5), price_note("h200", 0.8)
    ('as entered', 'as entered (no public price in the catalog)')
    """
    g = get_gpu(gpu)
    if g.price_usd_per_hour is None:
        return "as entered (no public price in the catalog)"
    if math.isclose(usd_per_gpu_hour, g.price_usd_per_hour):
        seller = g.price_source.split(" per GPU-hour")[0].replace(" H100 SXM", "")
        return f"{seller}, listed {g.price_date}"
    return "as entered"


# --- the widget ---------------------------------------------------------------------------------



def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.995 else f"${value:.3f}"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


@widget
def cost_by_batch(
    model: Model = lesson.REPLICA["model"],
    gpu: Gpu = lesson.REPLICA["gpu"],
    tp: tensor_parallel("GPUs per replica (tensor parallel)", unit="") = lesson.REPLICA["tp"],
    weights: Weights = lesson.REPLICA["weights"],
    usd_per_gpu_hour: Annotated[float, FloatRange(0.01, 100, 0.01, "USD", label="Price per GPU-hour")] =
        _GPU.price_usd_per_hour,
    prompt_tokens: Annotated[int, IntRange(1, 100_000, 64, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(2, 32_000, 64, "tokens", label="Answer")] = ANSWER_TOKENS,
    batch: Annotated[int, IntRange(1, MAX_BATCH, 1, "sequences", label="Your batch")] = 10,
    include_prefill: Annotated[bool, Toggle(label="Count the prompts' prefill in the same steps")] = False,
):
    """Cost per million output tokens against the decode batch, and where batching stops being nearly free."""
    coef = _coefficients(model, gpu, tp, weights)
    usd_hour = replica_usd_per_hour(usd_per_gpu_hour, tp)
    kv_limit = kv_batch_limit(model=model, gpu=gpu, tp=tp, weights=weights,
                              request_tokens=prompt_tokens + answer_tokens)
    if kv_limit < 1:
        raise CalcError(f"Prompt (prompt_tokens) plus answer must fit in the replica's KV cache "
                        f"({replica_capacity(model, gpu, tp=tp, weights=weights).kv_cache_tokens_raw:,} tokens); "
                        f"got {prompt_tokens + answer_tokens:,}", "prompt_tokens")
    context = prompt_tokens + answer_tokens // 2
    top = min(MAX_BATCH, max(kv_limit, batch))
    if include_prefill:
        compute_from = first_compute_bound_steady_batch(coef, input_tokens=prompt_tokens, output_tokens=answer_tokens, max_batch=top)
        limit = steady_batching_limit(coef, input_tokens=prompt_tokens, output_tokens=answer_tokens, efficiency_floor=EFFICIENCY_FLOOR, max_batch=MAX_BATCH)
        what = "with prefill"
    else:
        compute_from = first_compute_bound_batch(coef, context_tokens=context, max_batch=top)
        limit = batching_limit(coef, context_tokens=context, efficiency_floor=EFFICIENCY_FLOOR, max_batch=MAX_BATCH)
        what = "decode only"
    marks = {10, kv_limit, batch, top, limit, compute_from or top}
    batches = sorted(b for b in set(_POWERS) | marks if 1 <= b <= top)
    if include_prefill:
        rows = prefill_rows(model=model, gpu=gpu, tp=tp, weights=weights, usd_per_gpu_hour=usd_per_gpu_hour,
                            prompt_tokens=prompt_tokens, answer_tokens=answer_tokens, batches=batches)
    else:
        rows = cost_vs_batch(coef, usd_per_hour=usd_hour, context_tokens=context, batches=batches)
    by_batch = {r["batch"]: r for r in rows}
    one, ten, yours = by_batch[1], by_batch[10], by_batch[batch]
    floor = by_batch[kv_limit] if kv_limit <= top else rows[-1]
    ideal = [one["usd_per_million_tokens"] / b for b in batches]
    fits = [b for b in batches if b <= kv_limit]
    figure = line_chart(
        f"Cost per million output tokens ({what})",
        "batch (log scale)", "USD per million tokens", {
            "calc's roofline": (fits, [by_batch[b]["usd_per_million_tokens"] for b in fits]),
            "if batching were free (cost at batch 1 / batch)": (batches, ideal),
        }, log_x=True, log_y=True, markers=True,
        summary=(f"{get_model(model).name} on {tp} × {get_gpu(gpu).name}, {what}: "
                 f"{_usd(one['usd_per_million_tokens'])} per million tokens at batch 1, "
                 f"{_usd(ten['usd_per_million_tokens'])} at batch 10 "
                 f"({format_number(one['usd_per_million_tokens'] / ten['usd_per_million_tokens'], 3)} times cheaper), "
                 f"{_usd(floor['usd_per_million_tokens'])} at batch {floor['batch']:,}; batching stays within "
                 f"{format_number(EFFICIENCY_FLOOR * 100)}% of free up to batch {limit:,}."),
    )
    figure["data"][1]["line"].update(dash="dash", width=1.5)
    figure["layout"]["legend"]["y"] = -0.38  # clear of the axis title
    figure["data"][1]["mode"] = "lines"
    figure["data"].append({"type": "scatter", "mode": "markers", "name": f"your batch ({batch:,})", "x": [batch],
                           "y": [yours["usd_per_million_tokens"]], "marker": {"color": PALETTE[5], "size": 12}})
    bound = "compute-bound" if yours["bound"] == "compute" else "memory-bound"
    outputs = [
        output("replica_usd_per_hour", "The replica costs", usd_hour, "USD/h",
               text=f"{_usd(usd_hour)} per hour ({tp} × {_usd(usd_per_gpu_hour)})"),
        output("price_note", "Price per GPU-hour", usd_per_gpu_hour, "USD",
               text=f"{_usd(usd_per_gpu_hour)}, {price_note(gpu, usd_per_gpu_hour)}"),
        # Labels are fixed (the page rewrites only an output's text): the batch a number is for is in its text.
        output("itl_s", "Step time at your batch", yours["step_s"], "s",
               text=f"{_ms(yours['step_s'])} at batch {batch:,} ({bound})"),
        output("tokens_per_s", "Output tokens/s at your batch", yours["tokens_per_s"], "tokens/s",
               text=f"{format_number(yours['tokens_per_s'])} tokens/s at batch {batch:,}"),
        output("usd_per_million_tokens", "Cost at your batch", yours["usd_per_million_tokens"], "USD",
               text=f"{_usd(yours['usd_per_million_tokens'])} per million output tokens at batch {batch:,}"
                    + ("" if batch <= kv_limit else f" (but only {kv_limit:,} requests fit in the KV cache)")),
        output("discount_1_to_10", "Batch 10 against batch 1", one["usd_per_million_tokens"] /
               ten["usd_per_million_tokens"], "x",
               text=f"{format_number(one['usd_per_million_tokens'] / ten['usd_per_million_tokens'], 3)} times cheaper"),
        output("batching_limit", f"Batching stays {format_number(EFFICIENCY_FLOOR * 100)}% efficient up to", limit,
               "sequences", text=f"batch {limit:,}"),
        output("compute_bound_from", "Compute-bound from", compute_from or 0, "sequences",
               text=f"not up to batch {top:,}" if compute_from is None else f"batch {compute_from:,}"),
        output("kv_limit", "Requests that fit in the KV cache", kv_limit, "requests",
               text=f"{kv_limit:,} of {prompt_tokens + answer_tokens:,} tokens"),
        output("floor_usd", "Cost with the KV cache full", floor["usd_per_million_tokens"], "USD",
               text=f"{_usd(floor['usd_per_million_tokens'])} per million output tokens at batch {floor['batch']:,}"),
    ]
    shown = [b for b in batches if b in {1, 2, 4, 16, 32, 64, 128, 256, 1024, 4096} | marks]
    rows_table = table(
        ["batch", "step (ITL)", "output tokens/s", "USD per million", "bound"],
        [[f"{b:,}", _ms(by_batch[b]["step_s"]), format_number(by_batch[b]["tokens_per_s"]),
          _usd(by_batch[b]["usd_per_million_tokens"]), by_batch[b]["bound"]] for b in shown if b in by_batch],
        caption=f"Per step of the whole replica, {what}; context {context:,} tokens per sequence on average.",
    )
    return view(outputs=outputs, figures={"cost": figure}, tables={"batches": rows_table})


# --- facts --------------------------------------------------------------------------------------

# Each fact is computed alone when a page names it ({{ cost_per_million_tokens:name }} elsewhere: 8 uses).
def _no_math_dollars(text: str) -> str:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return text.replace("$", "&#36;")


@functools.cache
def _replica_usd_hour() -> float:
    return replica_usd_per_hour(_GPU.price_usd_per_hour, lesson.REPLICA["tp"])


@functools.cache
def _limit() -> int:
    return batching_limit(_coefficients(), context_tokens=LESSON_CONTEXT_TOKENS, efficiency_floor=EFFICIENCY_FLOOR)


def _floor_batch() -> int:
    """As many running as the KV cache holds, but never more than the engine runs (max_num_seqs)."""
    return min(kv_batch_limit(), MAX_NUM_SEQS)


@functools.cache
def _decode_usd(batch: int, weights: str = lesson.REPLICA["weights"]) -> dict:
    return decode_rows(weights=weights, batches=(batch,))[0]


@functools.cache
def _prefill(batch: int) -> dict:
    return prefill_rows(batches=(batch,))[0]


def _usd_fact(text: str) -> str:
    return _no_math_dollars(text)


@fact
def gpu():
    return _GPU.name


@fact
def price():
    return _usd_fact(f"${_GPU.price_usd_per_hour:.2f}")


@fact
def price_date():
    return _GPU.price_date


@fact
def price_seller():
    return _usd_fact(price_note(_GPU.key, _GPU.price_usd_per_hour).split(", listed")[0])


@fact
def gpus():
    return str(lesson.REPLICA["tp"])


@fact
def price_others():
    return _usd_fact(" and ".join(f"{seller} ${usd:.2f}" for seller, usd in H100_LISTINGS[1:]))


@fact
def prompt_per_answer():
    return format_number(ratio(PROMPT_TOKENS, ANSWER_TOKENS))


@fact
def replica_usd_hour():
    return _usd_fact(_usd(_replica_usd_hour()))


@fact
def replica_usd_month():
    return _usd_fact(f"${usd_per_month(_replica_usd_hour()):,.0f}")


@fact
def context():
    return f"{LESSON_CONTEXT_TOKENS:,}"


@fact
def step_1():
    return _ms(_decode_usd(1)["step_s"])


@fact
def step_10():
    return _ms(_decode_usd(10)["step_s"])


@fact
def step_100():
    return _ms(_decode_usd(100)["step_s"])


@fact
def tps_1():
    return format_number(_decode_usd(1)["tokens_per_s"])


@fact
def tps_10():
    return format_number(_decode_usd(10)["tokens_per_s"])


@fact
def usd_1():
    """>>> usd_1(), usd_10()
    ('&#36;64.24', '&#36;6.60')
    """
    return _usd_fact(_usd(_decode_usd(1)["usd_per_million_tokens"]))


@fact
def usd_10():
    return _usd_fact(_usd(_decode_usd(10)["usd_per_million_tokens"]))


@fact
def usd_100():
    return _usd_fact(_usd(_decode_usd(100)["usd_per_million_tokens"]))


@fact
def usd_100_if_free():
    return _usd_fact(_usd(free_batching_usd(_decode_usd(10)["usd_per_million_tokens"], 10, 100)))


@fact
def discount():
    """>>> discount(), limit(), kv_limit(), floor_batch()
    ('9.74', '38', '311', '256')
    """
    return f"{batching_discount(_coefficients(), context_tokens=LESSON_CONTEXT_TOKENS):.2f}"


@fact
def discount_10_100():
    return format_number(batching_discount(_coefficients(), context_tokens=LESSON_CONTEXT_TOKENS,
                                           batch_low=10, batch_high=100))


@fact
def floor_pct():
    return percent_text(EFFICIENCY_FLOOR)


@fact
def limit():
    return f"{_limit():,}"


@fact
def usd_limit():
    return _usd_fact(_usd(_decode_usd(_limit())["usd_per_million_tokens"]))


@fact
def compute_from():
    return f"{first_compute_bound_batch(_coefficients(), context_tokens=LESSON_CONTEXT_TOKENS):,}"


@fact
def kv_limit():
    return f"{kv_batch_limit():,}"


@fact
def request_tokens():
    return f"{REQUEST_TOKENS:,}"


@fact
def max_num_seqs():
    return f"{MAX_NUM_SEQS:,}"


@fact
def floor_batch():
    return f"{_floor_batch():,}"


@fact
def usd_floor():
    return _usd_fact(_usd(_decode_usd(_floor_batch())["usd_per_million_tokens"]))


@fact
def prefill_discount():
    return format_number(cost_ratio(_prefill(1)["usd_per_million_tokens"], _prefill(10)["usd_per_million_tokens"]), 3)


@fact
def prefill_compute_from():
    return f"{first_compute_bound_steady_batch(_coefficients(), input_tokens=PROMPT_TOKENS, output_tokens=ANSWER_TOKENS):,}"


@fact
def prefill_usd_floor():
    return _usd_fact(_usd(_prefill(_floor_batch())["usd_per_million_tokens"]))


@fact
def prefill_over_decode():
    return format_number(cost_ratio(_prefill(_floor_batch())["usd_per_million_tokens"],
                                    _decode_usd(_floor_batch())["usd_per_million_tokens"]), 2)


@fact
def fp8_usd_1():
    return _usd_fact(_usd(_decode_usd(1, "fp8")["usd_per_million_tokens"]))


@fact
def fp8_usd_10():
    return _usd_fact(_usd(_decode_usd(10, "fp8")["usd_per_million_tokens"]))


facts = facts_of(__name__)
