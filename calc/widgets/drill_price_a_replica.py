"""Widgets, drills and facts of step 17, "Drill: price a replica" (docs/lesson/17-drill-price-a-replica.md).

Price a deployment from two measured numbers: the GPU-hours it burns (its GPUs,
every hour) and the tokens per second it sustains *at your latency target*, not
at its peak (:func:`calc.cost.price_replica`):

    USD per hour            = GPUs x price per GPU-hour
    USD per million tokens  = USD per hour / (sustained tokens/s x 3,600) x 10^6

The sustained rate is the largest batch whose steps still meet the inter-token
latency target (:func:`calc.cost.sustained_at_latency`). Decode alone gives a
ceiling; with the prompts' prefill in the same steps (its ``prompt_tokens``) the
running example sustains far fewer tokens at the same target:

>>> view = sustained_at_target()
>>> view["outputs"]["decode_tokens_per_s"]["text"], view["outputs"]["prefill_tokens_per_s"]["text"]
('8,266 tokens/s (batch 256, the batch cap)', '2,275 tokens/s (batch 113)')
"""

from __future__ import annotations

import functools
import math
import random
from typing import Annotated

from calc import lesson
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.cost import H100_LISTINGS, H100_LISTINGS_SOURCE, cost_ratio, price_replica, sustained_at_latency
from calc.roofline import step_coefficients, steady_state_step
from calc.units import SECONDS_PER_HOUR, format_number, ms_to_s, per_second, round_sig
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS, kv_batch_limit
from calc.widgets.charts import line_chart
from calc.widgets.controls import Gpu, Model, Weights, tensor_parallel
from calc.widgets.framework import FloatRange, IntRange, drill, fact, facts_of, output, view, widget

__all__ = ["sustained_at_target", "price_from_measurements", "price_drill", "latency_table_drill",
           "monthly_bill_drill", "facts", "PRICED_REPLICAS"]

#: vLLM's default cap on running requests (``max_num_seqs``).
MAX_NUM_SEQS = 256
#: The inter-token latency target of the worked case: 50 ms a token is 20 tokens/s per user, faster than people read.
ITL_TARGET_MS = 50
#: Targets the page's "Try this" compares with the worked one (ms).
TIGHT_TARGET_MS, LOOSE_TARGET_MS = 17, 200
HOURS_PER_MONTH = 730  # 8,760 hours a year / 12
MONTHLY_TOKENS_WORKED = 10e9  # the worked case of the monthly drill: ten billion output tokens a month
USD_TOLERANCE = 0.02
_GPU = get_gpu(lesson.REPLICA["gpu"])

#: Replicas the drills price, each checked to fit in bf16 by the tests: (model, GPU, tensor parallel).
PRICED_REPLICAS = (
    ("llama-3.1-70b", "h100-sxm-80gb", 4), ("llama-3.1-70b", "h100-sxm-80gb", 8), ("llama-3.1-8b", "h100-sxm-80gb", 1),
    ("qwen2.5-72b", "h100-sxm-80gb", 4), ("mixtral-8x7b", "h100-sxm-80gb", 2), ("llama-3.1-70b", "h200", 2),
    ("llama-3.1-70b", "a100-80gb", 4), ("llama-3.1-8b", "l40s", 1), ("llama-3.1-8b", "l4", 1),
    ("llama-3.1-405b", "b200", 8),
)
#: Prices per GPU-hour for GPUs the catalog has no dated listing for: the question calls them "your contract
#: price", made up for practice, not quotes.
CONTRACT_PRICES = (0.8, 1.1, 1.6, 2.2, 2.9, 4.4, 6.5)
#: Request shapes (prompt, answer) and latency targets (ms) the drills draw from.
SHAPES = ((1_024, 256), (512, 512), (2_000, 300), (4_000, 500), (300, 800), (8_000, 400))
TARGETS_MS = (30, 40, 50, 60, 80, 100)


def _coefficients(model: str, gpu: str, tp: int, weights: str = "bf16"):
    return step_coefficients(get_model(model), get_gpu(gpu), tp=tp, weights=weights, kv_dtype="bf16")


def _sustained(model: str, gpu: str, tp: int, weights: str, prompt: int, answer: int, target_s: float,
               max_num_seqs: int) -> tuple[dict, dict, int]:
    cap = min(max_num_seqs, kv_batch_limit(model=model, gpu=gpu, tp=tp, weights=weights,
                                           request_tokens=prompt + answer))
    coef = _coefficients(model, gpu, tp, weights)
    decode = sustained_at_latency(coef, context_tokens=prompt + answer // 2, itl_target_s=target_s,
                                  max_batch=max(1, cap))
    mixed = sustained_at_latency(coef, context_tokens=prompt + answer // 2, itl_target_s=target_s,
                                 max_batch=max(1, cap), prompt_tokens=prompt, answer_tokens=answer)
    return decode, mixed, cap


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 0.995 else f"${value:.3f}"


def _tps(value: float) -> str:
    return f"{format_number(value)} tokens/s"


# --- widgets ------------------------------------------------------------------------------------



@widget
def sustained_at_target(
    model: Model = lesson.REPLICA["model"],
    gpu: Gpu = lesson.REPLICA["gpu"],
    tp: tensor_parallel("GPUs per replica (tensor parallel)", unit="") = lesson.REPLICA["tp"],
    weights: Weights = lesson.REPLICA["weights"],
    prompt_tokens: Annotated[int, IntRange(1, 100_000, 64, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(2, 32_000, 64, "tokens", label="Answer")] = ANSWER_TOKENS,
    itl_target_ms: Annotated[float, FloatRange(1, 2_000, 5, "ms", label="Inter-token latency target")] =
        ITL_TARGET_MS,
    max_num_seqs: Annotated[int, IntRange(1, 4_096, 16, "requests", label="Engine's running cap")] = MAX_NUM_SEQS,
    usd_per_gpu_hour: Annotated[float, FloatRange(0.01, 100, 0.01, "USD", label="Price per GPU-hour")] =
        _GPU.price_usd_per_hour,
):
    """Sustained output tokens/s at an inter-token latency target, decode only and with prefill, and their price."""
    target_s = itl_target_ms / 1000
    decode, mixed, cap = _sustained(model, gpu, tp, weights, prompt_tokens, answer_tokens, target_s, max_num_seqs)
    coef = _coefficients(model, gpu, tp, weights)
    context = prompt_tokens + answer_tokens // 2
    top = max(1, cap)
    batches = sorted({2 ** i for i in range(13) if 2 ** i <= top} | {top})
    decode_ms = [coef.step_time_s(new_tokens=b, kv_tokens_read=b * context, attention_token_pairs=b * context) * 1000
                 for b in batches]
    mixed_ms = [steady_state_step(coef, batch=b, input_tokens=prompt_tokens, output_tokens=answer_tokens)["time_s"]
                * 1000 for b in batches]
    figure = line_chart(
        "Step time against the batch", "batch (log scale)", "step time = ITL (ms)", {
            "decode only": (batches, decode_ms),
            "with the prompts' prefill": (batches, mixed_ms),
            f"target {format_number(itl_target_ms)} ms": ([batches[0], batches[-1]], [itl_target_ms] * 2),
        }, log_x=True, markers=True,
        summary=(f"At a {format_number(itl_target_ms)} ms target the replica decodes a batch of {decode['batch']:,} "
                 f"({_tps(decode['tokens_per_s'])}) when only decoding, {mixed['batch']:,} "
                 f"({_tps(mixed['tokens_per_s'])}) with its prompts' prefill in the same steps."),
    )
    figure["data"][2]["line"]["dash"] = "dash"
    figure["layout"]["legend"]["y"] = -0.38  # clear of the axis title
    figure["data"][2]["mode"] = "lines"
    outputs = []
    for key, label, result in (("decode", "Decode only", decode), ("prefill", "With prefill", mixed)):
        if result["batch"] == 0:
            outputs += [output(f"{key}_tokens_per_s", f"{label}: sustained", 0, "tokens/s",
                               text=f"none: one sequence already takes {format_number(result['itl_s'] * 1000)} ms"),
                        output(f"{key}_usd_per_million", f"{label}: cost", 0, "USD", text="n/a")]
            continue
        priced = price_replica(usd_per_gpu_hour=usd_per_gpu_hour, gpus=tp, sustained_tokens_per_s=result["tokens_per_s"])
        why = ", the batch cap" if result["limited_by"] == "max_batch" else ""
        outputs += [
            output(f"{key}_tokens_per_s", f"{label}: sustained", result["tokens_per_s"], "tokens/s",
                   text=f"{_tps(result['tokens_per_s'])} (batch {result['batch']:,}{why})"),
            output(f"{key}_usd_per_million", f"{label}: cost", priced["usd_per_million_tokens"], "USD",
                   text=f"{_usd(priced['usd_per_million_tokens'])} per million output tokens"),
        ]
    outputs.append(output("batch_cap", "Batch cap (engine, KV cache)", cap, "requests",
                          text=f"{cap:,} (the smaller of {max_num_seqs:,} and what the KV cache holds)"))
    return view(outputs=outputs, figures={"step_time": figure})


def _default_sustained() -> int:
    _, mixed, _ = _sustained(lesson.REPLICA["model"], lesson.REPLICA["gpu"], lesson.REPLICA["tp"],
                             lesson.REPLICA["weights"], PROMPT_TOKENS, ANSWER_TOKENS, ITL_TARGET_MS / 1000,
                             MAX_NUM_SEQS)
    return int(round_sig(mixed["tokens_per_s"], 3))  # a whole number, as a load test reports it


_DEFAULT_SUSTAINED = _default_sustained()


@widget
def price_from_measurements(
    usd_per_gpu_hour: Annotated[float, FloatRange(0, 100, 0.01, "USD", label="Price per GPU-hour")] =
        _GPU.price_usd_per_hour,
    gpus: Annotated[int, IntRange(1, 1_024, label="GPUs per replica")] = lesson.REPLICA["tp"],
    sustained_tokens_per_s: Annotated[float, FloatRange(0.1, 10_000_000, 1, "tokens/s",
                                                        label="Sustained at your target")] = _DEFAULT_SUSTAINED,
    hours_per_month: Annotated[float, FloatRange(1, 744, 1, "h", label="Hours per month")] = HOURS_PER_MONTH,
):
    """A replica's price from GPU-hours and measured sustained tokens/s (:func:`calc.cost.price_replica`)."""
    r = price_replica(usd_per_gpu_hour=usd_per_gpu_hour, gpus=gpus, sustained_tokens_per_s=sustained_tokens_per_s,
                      hours_per_month=hours_per_month)
    return view(outputs=[
        output("usd_per_hour", "Per hour", r["usd_per_hour"], "USD",
               text=f"{_usd(r['usd_per_hour'])} ({gpus:,} GPU-hours × {_usd(usd_per_gpu_hour)})"),
        output("usd_per_month", "Per month", r["usd_per_month"], "USD",
               text=f"${r['usd_per_month']:,.0f} ({format_number(hours_per_month)} h)"),
        output("tokens_per_hour", "Tokens per hour", r["tokens_per_hour"], "tokens",
               text=f"{format_number(r['tokens_per_hour'] / 1e6)} million"),
        output("tokens_per_month", "Tokens per month", r["tokens_per_hour"] * hours_per_month, "tokens",
               text=f"{format_number(r['tokens_per_hour'] * hours_per_month / 1e9)} billion"),
        output("usd_per_million_tokens", "Cost per million tokens", r["usd_per_million_tokens"], "USD",
               text=_usd(r["usd_per_million_tokens"])),
    ])


# --- drills -------------------------------------------------------------------------------------

def _question(question: str, answer: float, unit: str, answer_text: str, explanation: str, placeholder: str) -> dict:
    return {"question": question, "answer": answer, "unit": unit, "tolerance": USD_TOLERANCE,
            "answer_text": answer_text, "explanation": explanation, "placeholder": placeholder}


def _priced_case(rng: random.Random, seed: int) -> dict:
    """A replica, its price per GPU-hour with where it comes from, a request shape and a measured sustained rate."""
    if seed == 0:
        model, gpu, tp = lesson.REPLICA["model"], lesson.REPLICA["gpu"], lesson.REPLICA["tp"]
        prompt, answer, target = PROMPT_TOKENS, ANSWER_TOKENS, ITL_TARGET_MS
        seller, price = H100_LISTINGS[0]
    else:
        model, gpu, tp = rng.choice(PRICED_REPLICAS)
        prompt, answer = rng.choice(SHAPES)
        target = rng.choice(TARGETS_MS)
        if gpu == lesson.REPLICA["gpu"]:
            seller, price = rng.choice(H100_LISTINGS)
        else:
            seller, price = None, rng.choice(CONTRACT_PRICES)
    coef = _coefficients(model, gpu, tp)
    one = steady_state_step(coef, batch=1, input_tokens=prompt, output_tokens=answer)["time_s"] * 1000
    target = max(target, 5 * math.ceil(one * 1.3 / 5))  # a target one sequence can meet
    _, mixed, _ = _sustained(model, gpu, tp, "bf16", prompt, answer, target / 1000, MAX_NUM_SEQS)
    where = (f"{seller}'s on-demand price, listed 2026-05-07" if seller else "a made-up contract price, for practice")
    return {"model": get_model(model), "gpu": get_gpu(gpu), "tp": tp, "prompt": prompt, "answer": answer,
            "target_ms": target, "price": price, "where": where, "sustained": round_sig(mixed["tokens_per_s"], 3)}


def _replica_text(case: dict) -> str:
    return (f"{case['model'].name} on {case['tp']} × {case['gpu'].name} at ${case['price']:.2f} per GPU-hour "
            f"({case['where']})")


@drill
def price_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """USD per million output tokens from GPU-hours and sustained tokens/s (seed 0: the running example)."""
    rng = random.Random(seed)
    case = _priced_case(rng, seed)
    r = price_replica(usd_per_gpu_hour=case["price"], gpus=case["tp"], sustained_tokens_per_s=case["sustained"])
    answer = r["usd_per_million_tokens"]
    return _question(
        f"{_replica_text(case)}. A load test with {case['prompt']:,}-token prompts and {case['answer']:,}-token "
        f"answers holds the inter-token latency under {case['target_ms']} ms at {case['sustained']:,.0f} output "
        f"tokens/s. What does a million output tokens cost, in USD?",
        answer, "USD", f"{answer:.3f} USD per million output tokens",
        f"The replica burns {case['tp']} GPU-hour{'s' if case['tp'] > 1 else ''} an hour: {case['tp']} × ${case['price']:.2f} = "
        f"${r['usd_per_hour']:.2f} per hour. It makes {case['sustained']:,.0f} × 3,600 = "
        f"{format_number(r['tokens_per_hour'] / 1e6)} million tokens an hour. ${r['usd_per_hour']:.2f} / "
        f"{format_number(r['tokens_per_hour'] / 1e6)} = ${answer:.3f} per million output tokens.",
        "e.g. 1.85 (USD)",
    )


#: The latency target of the table drill's worked case (ms): tighter than the widget's, so the answer sits where
#: the steps turn compute-bound.
WORKED_TARGET_MS = 25
#: Batches of the load-test table in :func:`latency_table_drill`.
TABLE_BATCHES = (8, 16, 32, 48, 64, 128, 256)


@drill
def latency_table_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """Pick the largest batch of a load test that meets the latency target, then price it (seed 0: 25 ms, 70B)."""
    rng = random.Random(seed)
    case = _priced_case(rng, seed)
    coef = _coefficients(case["model"].key, case["gpu"].key, case["tp"])
    cap = min(MAX_NUM_SEQS, kv_batch_limit(model=case["model"].key, gpu=case["gpu"].key, tp=case["tp"],
                                           request_tokens=case["prompt"] + case["answer"]))
    batches = [b for b in TABLE_BATCHES if b <= cap] or [cap]
    rows = []
    for b in batches:
        s = steady_state_step(coef, batch=b, input_tokens=case["prompt"], output_tokens=case["answer"])
        rows.append((b, round(s["time_s"] * 1000, 1), round_sig(s["output_tokens_per_s"], 3)))
    if seed == 0:
        target = WORKED_TARGET_MS
    else:  # a target between two rows (to 0.1 ms), so that exactly one row is the answer
        gaps = [i for i in range(len(rows) - 1) if rows[i + 1][1] - rows[i][1] >= 0.2]
        i = rng.choice([g for g in gaps if g > 0] or gaps) if gaps else len(rows) - 1
        target = round((rows[i][1] + rows[i + 1][1]) / 2, 1) if gaps else rows[i][1] + 1
    meeting = [row for row in rows if row[1] <= target] or rows[:1]
    batch, itl_ms, tps = meeting[-1]
    r = price_replica(usd_per_gpu_hour=case["price"], gpus=case["tp"], sustained_tokens_per_s=tps)
    answer = r["usd_per_million_tokens"]
    table_text = " · ".join(f"{b} → {itl:g} ms, {t:,.0f}" for b, itl, t in rows)
    return _question(
        f"{_replica_text(case)}; prompts of {case['prompt']:,} tokens, answers of {case['answer']:,}. Load test, "
        f"per running batch (inter-token latency, output tokens/s): {table_text}. Your target: an inter-token "
        f"latency of at most {target:g} ms. What does a million output tokens cost at the largest batch that meets "
        f"it, in USD?",
        answer, "USD", f"{answer:.3f} USD per million output tokens (batch {batch})",
        f"The largest batch within {target:g} ms is {batch} ({itl_ms:g} ms, {tps:,.0f} tokens/s). "
        f"${r['usd_per_hour']:.2f} per hour / ({tps:,.0f} × 3,600) × 10⁶ = ${answer:.3f} per million. Past it the "
        f"steps are longer than the target; the tokens/s there are not yours to sell.",
        "e.g. 2.40 (USD)",
    )


@drill
def monthly_bill_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """The monthly bill for a token volume: whole replicas at the sustained rate (seed 0: ten billion tokens)."""
    rng = random.Random(seed)
    case = _priced_case(rng, seed)
    volume = MONTHLY_TOKENS_WORKED if seed == 0 else rng.choice((0.5e9, 2e9, 5e9, 10e9, 25e9, 60e9))
    per_replica = case["sustained"] * SECONDS_PER_HOUR * HOURS_PER_MONTH
    replicas = max(1, math.ceil(round(volume / per_replica, 9)))
    r = price_replica(usd_per_gpu_hour=case["price"], gpus=case["tp"], sustained_tokens_per_s=case["sustained"],
                      hours_per_month=HOURS_PER_MONTH)
    answer = replicas * r["usd_per_month"]
    return _question(
        f"{_replica_text(case)}. Each replica sustains {case['sustained']:,.0f} output tokens/s at your latency "
        f"target. Your teams will generate {format_number(volume / 1e9)} billion output tokens a month, spread "
        f"evenly. Replicas run all month ({HOURS_PER_MONTH} hours) and come whole. What is the monthly bill, in USD?",
        answer, "USD", f"{answer:,.0f} USD a month ({replicas} replica{'s' if replicas > 1 else ''})",
        f"One replica makes {case['sustained']:,.0f} × 3,600 × {HOURS_PER_MONTH} = "
        f"{format_number(per_replica / 1e9)} billion tokens a month, so {format_number(volume / 1e9)} billion need "
        f"{format_number(volume / per_replica)} replicas, rounded up to {replicas}. Each costs {case['tp']} × "
        f"${case['price']:.2f} × {HOURS_PER_MONTH} h = ${r['usd_per_month']:,.0f} a month: ${answer:,.0f} in all. "
        f"Real traffic peaks: size for the peak and let the autoscaler of step 15 give back the quiet hours.",
        "e.g. 22000 or 22k (USD)",
    )


# --- facts --------------------------------------------------------------------------------------

# Each fact is computed alone when a page names it ({{ drill_price_a_replica:name }} elsewhere: 7 uses).
def _no_math_dollars(text: str) -> str:
    """Dollar signs as the HTML entity: two "$" in one paragraph would otherwise read as inline math (KaTeX)."""
    return text.replace("$", "&#36;")


@functools.cache
def _at_target(target_ms: int) -> tuple[dict, dict, int]:
    """(decode only, with prefill, the batch cap) of the running example at an ITL target (ms)."""
    return _sustained(lesson.REPLICA["model"], lesson.REPLICA["gpu"], lesson.REPLICA["tp"], lesson.REPLICA["weights"],
                      PROMPT_TOKENS, ANSWER_TOKENS, ms_to_s(target_ms), MAX_NUM_SEQS)


def _priced(sustained_tokens_per_s: float) -> dict:
    return price_replica(usd_per_gpu_hour=_GPU.price_usd_per_hour, gpus=lesson.REPLICA["tp"],
                         sustained_tokens_per_s=sustained_tokens_per_s)


def _decode() -> dict:
    return _at_target(ITL_TARGET_MS)[0]


def _mixed() -> dict:
    return _at_target(ITL_TARGET_MS)[1]


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _billions(count: float) -> str:
    return format_number(count / 1e9)


def _usd_fact(value: float) -> str:
    return _no_math_dollars(_usd(value))


@fact
def target_ms():
    return f"{ITL_TARGET_MS} ms"


@fact
def per_user_tps():
    return format_number(per_second(ms_to_s(ITL_TARGET_MS)))


@fact
def price():
    return _no_math_dollars(f"${_GPU.price_usd_per_hour:.2f}")


@fact
def price_date():
    return _GPU.price_date


@fact
def listings():
    return _no_math_dollars(", ".join(f"{seller} ${usd:.2f}" for seller, usd in H100_LISTINGS))


@fact
def listings_source():
    return _no_math_dollars(H100_LISTINGS_SOURCE)


@fact
def gpus():
    return str(lesson.REPLICA["tp"])


@fact
def usd_hour():
    return _usd_fact(_priced(_decode()["tokens_per_s"])["usd_per_hour"])


@fact
def cap():
    return f"{_at_target(ITL_TARGET_MS)[2]:,}"


@fact
def max_num_seqs():
    return f"{MAX_NUM_SEQS:,}"


@fact
def decode_batch():
    return f"{_decode()['batch']:,}"


@fact
def decode_itl():
    return _ms(_decode()["itl_s"])


@fact
def decode_tps():
    """>>> decode_tps(), prefill_tps()
    ('8,266', '2,275')
    """
    return format_number(_decode()["tokens_per_s"])


@fact
def decode_usd():
    return _usd_fact(_priced(_decode()["tokens_per_s"])["usd_per_million_tokens"])


@fact
def prefill_batch():
    return f"{_mixed()['batch']:,}"


@fact
def prefill_itl():
    return _ms(_mixed()["itl_s"])


@fact
def prefill_tps():
    return format_number(_mixed()["tokens_per_s"])


@fact
def prefill_usd():
    """>>> prefill_usd(), worked_usd()
    ('&#36;1.85', '&#36;1.85')
    """
    return _usd_fact(_priced(_mixed()["tokens_per_s"])["usd_per_million_tokens"])


@fact
def prefill_over_decode():
    return format_number(cost_ratio(_priced(_mixed()["tokens_per_s"])["usd_per_million_tokens"],
                                    _priced(_decode()["tokens_per_s"])["usd_per_million_tokens"]), 2)


@fact
def sustained_measured():
    return f"{_DEFAULT_SUSTAINED:,.0f}"


@fact
def worked_usd():
    return _usd_fact(price_drill(0)["answer"])


@fact
def worked_month():
    return _no_math_dollars(f"${_priced(_DEFAULT_SUSTAINED)['usd_per_month']:,.0f}")


@fact
def monthly_volume():
    return f"{_billions(MONTHLY_TOKENS_WORKED)} billion"


@fact
def monthly_answer():
    return _no_math_dollars(monthly_bill_drill(0)["answer_text"])


@fact
def hours_per_month():
    return str(HOURS_PER_MONTH)


@fact
def tight_ms():
    return f"{TIGHT_TARGET_MS} ms"


@fact
def tight_batch():
    return f"{_at_target(TIGHT_TARGET_MS)[1]['batch']:,}"


@fact
def tight_usd():
    return _usd_fact(_priced(_at_target(TIGHT_TARGET_MS)[1]["tokens_per_s"])["usd_per_million_tokens"])


@fact
def loose_ms():
    return f"{LOOSE_TARGET_MS} ms"


@fact
def loose_batch():
    return f"{_at_target(LOOSE_TARGET_MS)[1]['batch']:,}"


@fact
def loose_usd():
    return _usd_fact(_priced(_at_target(LOOSE_TARGET_MS)[1]["tokens_per_s"])["usd_per_million_tokens"])


facts = facts_of(__name__)
