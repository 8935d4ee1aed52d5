"""Widgets and facts of step 21, "Cheat sheet" (docs/lesson/21-cheat-sheet.md).

Every formula and rule of thumb of the lesson on one page. A figure a step
states is borrowed from that step's facts (``{{ step_module:name }}`` on the page:
one story, never recomputed with other inputs); the few the sheet adds are
computed here from the science modules of :mod:`calc` with the steps' inputs
(:mod:`calc.lesson`), from the published measurements of :mod:`calc.accuracy`
and from the lesson's presets. :func:`your_replica` recomputes the replica's half
of the sheet for another model, GPU or precision in the browser, with step 1's
sizing and step 17's pricing (prompts' prefill included, capped at ``max_num_seqs``).

>>> f = facts()
>>> f["quiz_fit_bf16"], f["bubble_one"], f["headroom"]
('99', '75%', '3.9%')
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.accuracy import load_measurements
from calc.allocation import fit_report, paged_waste_bound_tokens
from calc.autoscale import scale_up_delay_s, warm_headroom
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.context import prefill_flops, requests_displaced, unfused_attention_scores_bytes
from calc.cost import ITL_TARGET_S, price_replica, replica_numbers  # replica_numbers: the replica's half, as numbers
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS
from calc.memory import (
    kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_by_attention, kv_bytes_per_token_per_gpu, weight_bytes,
)
from calc.parallel import allreduce_bytes_on_wire, pipeline_bubble_fraction
from calc.prefix import prefix_cache_hit
from calc.quantization import accuracy_deltas
from calc.roofline import itl_s, ridge_point_flops_per_byte, step_coefficients
from calc.sim import presets
from calc.sim_views import fleet_scale_up_delay_s
from calc.speculative import EAGLE_LIKE, break_even_batch, expected_tokens_per_step, speedup
from calc.units import GB, KiB, SECONDS_PER_HOUR, TB, format_bytes, format_number
from calc.widgets.controls import Gpu, KvDtype, Model, TensorParallel, Weights
from calc.widgets.framework import FloatRange, IntRange, fact, facts_of, output, view, widget

__all__ = ["facts", "your_replica", "replica_numbers"]

#: Step 2's example conversation on the 8B model.
CONVERSATION_TOKENS = 4_000
#: Step 13's long request.
LONG_TOKENS = 100_000
#: Step 12's shared system prompt (step 11's "2,500-token system prompt").
SYSTEM_PROMPT_TOKENS = 2_500
#: Examples of the speculation formula: acceptance, drafted tokens, draft cost ratio (inputs, not results).
SPEC_EXAMPLE = (0.8, 4, 0.05)
#: Step 10's comparison: EAGLE's published break-even on Llama 3.1 8B was measured at a 512-token context (assumed).
SPEC_CONTEXT_TOKENS = 512
#: The quiz's question: this many 4,000-token conversations at once on the running example.
QUIZ_CONVERSATIONS = 200
#: Step 15's example: pod start, weight load bandwidth and traffic growth (assumptions the reader replaces).
POD_START_S = 60.0
LOAD_BYTES_PER_S = 2 * GB
GROWTH_PER_MIN = 0.05
#: Step 18's pipeline example: four stages, one micro-batch against sixteen.
PP_STAGES, PP_MICROBATCHES = 4, 16



def _gb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / GB)} GB"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _pct(fraction: float, digits: int = 3) -> str:
    return f"{format_number(fraction * 100, digits)}%"


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${format_number(value)}"


@widget
def your_replica(
    model: Model = lesson.REPLICA["model"],
    gpu: Gpu = lesson.REPLICA["gpu"],
    tp: TensorParallel = lesson.REPLICA["tp"],
    weights: Weights = lesson.REPLICA["weights"],
    kv_dtype: KvDtype = lesson.REPLICA["kv_dtype"],
    gpu_memory_utilization: Annotated[float, FloatRange(0.05, 1.0, 0.01, label="Memory utilization")]
    = lesson.REPLICA["gpu_memory_utilization"],
    prompt_tokens: Annotated[int, IntRange(1, 10_000_000, 1, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Answer")] = ANSWER_TOKENS,
    max_model_len: Annotated[int, IntRange(16, 10_000_000, 1, "tokens", label="Max model length")] = MAX_MODEL_LEN,
    gpu_price_usd_per_hour: Annotated[float, FloatRange(0.0, 1000.0, 0.01, "USD per GPU-hour", label="GPU price",
                                                        help="0 takes the catalog's dated price")] = 0.0,
):
    """The sheet's replica numbers for your own replica: memory, concurrency, speed and cost, one row each.

    Every row is :func:`calc.cost.replica_numbers` (sources there). With no price (0 and none in the
    catalog) the cost rows say so.

    >>> out = your_replica(weights="fp8")["outputs"]
    >>> out["kv_tokens"]["text"], out["itl_batch_1_s"]["text"]
    ('608,266 tokens', '8.58 ms')
    """
    r = replica_numbers(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                        gpu_memory_utilization=gpu_memory_utilization, prompt_tokens=prompt_tokens,
                        answer_tokens=answer_tokens, max_model_len=max_model_len,
                        usd_per_gpu_hour=gpu_price_usd_per_hour or None)
    no_price = "no price: enter one"
    rows = [
        output("weights_bytes_per_gpu", "Weights per GPU", round(r["weights_bytes_per_gpu"]), "B",
               text=_gb(r["weights_bytes_per_gpu"])),
        output("kv_cache_bytes_per_gpu", "KV cache per GPU", round(r["kv_cache_bytes_per_gpu"]), "B",
               text=_gb(r["kv_cache_bytes_per_gpu"])),
        output("kv_bytes_per_token", "KV per token (per GPU)", r["kv_bytes_per_token"], "B",
               text=f"{format_bytes(r['kv_bytes_per_token'], binary=True)} "
                    f"({format_bytes(r['kv_bytes_per_token_per_gpu'], binary=True)})"),
        output("kv_tokens", "KV cache of the replica", r["kv_tokens"], "tokens", text=f"{r['kv_tokens']:,} tokens"),
        output("requests_fit", f"Requests of {r['request_tokens']:,} tokens at once", r["requests_fit"], "requests",
               text=f"{r['requests_fit']:,}"),
        output("contiguous_fit", f"Reserving {max_model_len:,} tokens each", r["contiguous_fit"], "requests",
               text=f"{r['contiguous_fit']:,}"),
        output("ttft_s", "TTFT of the prompt, idle", r["ttft_s"], "s", text=_ms(r["ttft_s"])),
        output("itl_batch_1_s", "Decode step, batch 1", r["itl_batch_1_s"], "s", text=_ms(r["itl_batch_1_s"])),
        output("intensity", "Intensity: decode / prefill / ridge", r["decode_intensity"], "",
               text=f"{format_number(r['decode_intensity'])} / {format_number(r['prefill_intensity'])} / "
                    f"{format_number(r['ridge_flops_per_byte'])} FLOP/B"),
        output("discount_1_to_10", "Batch 10 against batch 1, per token", r["discount_1_to_10"], "",
               text=f"{format_number(r['discount_1_to_10'], 2)}x cheaper"),
        output("batching_limit", "Nearly linear up to batch", r["batching_limit"], "requests",
               text=f"{r['batching_limit']:,}"),
        output("batch_at_target", f"Batch within {_ms(ITL_TARGET_S)} per token, prefill included", r["batch_at_target"], "requests",
               text=f"{r['batch_at_target']:,} ({format_number(r['tokens_per_s_at_target'])} tokens/s)"),
        output("usd_per_hour", "Replica per hour", r["usd_per_hour"] or 0.0, "USD",
               text=no_price if r["usd_per_hour"] is None else _usd(r["usd_per_hour"])),
        output("usd_per_million", "Per million output tokens: batch 1 / at the target",
               r["usd_per_million_at_target"] or 0.0, "USD",
               text=no_price if r["usd_per_million_batch_1"] is None else
               f"{_usd(r['usd_per_million_batch_1'])} / "
               + ("n/a" if r["usd_per_million_at_target"] is None else _usd(r["usd_per_million_at_target"]))),
    ]
    return view(outputs=rows)


# --- facts -----------------------------------------------------------------------------------------------


def _published(measurement_id: str) -> float:
    for m in load_measurements():
        if m["id"] == measurement_id:
            return float(m["figure"]["value"])
    raise CalcError(f"no published measurement {measurement_id!r} in calc/data/measurements.json", "measurement")


@functools.lru_cache(maxsize=None)
def _summary(preset: str) -> dict:
    return presets.run(preset).summary


def _seconds(value: float) -> str:
    return f"{format_number(value)} s"


# --------------------------------------------------------------------------------------- facts
# The cheat sheet's own numbers: what no step states as a fact (the rest the page borrows). Every figure a step
# already quotes is written on the page as ``{{ step_module:name }}``, the same fact, not recomputed here (one
# story: ``tests/site/test_one_story.py``). What is left is computed from the science with the steps' inputs
# (calc.lesson), each fact alone when a page names it.
def _text(value: str) -> str:
    """A dollar sign would open inline math (pymdownx.arithmatex): the prose gets it escaped."""
    return value.replace("$", "\\$")


def _m70():
    return get_model(lesson.MODEL)


def _delta(model: str, weights: str) -> str:
    deltas = {(d["model"], d["weights"]): d["delta_points"] for d in accuracy_deltas()}
    return f"{deltas[(model, weights)]:+.2f}"


def _tb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / TB)} TB"


def _quiz(kv_dtype: str = "bf16", weights: str | None = None) -> dict:
    if kv_dtype == "bf16":
        capacity = lesson.KV_CAPACITY_TOKENS
    elif weights is None:
        capacity = lesson.kv_capacity(kv_dtype=kv_dtype).kv_cache_tokens_raw
    else:
        capacity = lesson.kv_capacity(kv_dtype=kv_dtype, weights=weights).kv_cache_tokens_raw
    return fit_report(capacity, QUIZ_CONVERSATIONS, CONVERSATION_TOKENS)


@fact("model")
def _model_name():
    return _text(_m70().name)


@fact("gpu")
def _gpu_name():
    return _text(get_gpu(lesson.GPU).name)


@fact("tp")
def _tp():
    return str(lesson.TP)


@fact
def kv_heads_70b():
    return str(_m70().kv_heads)


@fact
def attention_heads_70b():
    return str(_m70().attention_heads)


@fact
def prompt_tokens():
    return f"{PROMPT_TOKENS:,}"


@fact
def answer_tokens():
    return f"{ANSWER_TOKENS:,}"


@fact
def block_size():
    return str(lesson.REPLICA["block_size"])


@fact
def conversation_tokens():
    return f"{CONVERSATION_TOKENS:,}"


@fact
def price_date():
    return _text(str(get_gpu(lesson.GPU).price_date))


# --- fewer bytes per token (steps 6-10)
@fact
def itl_b64():
    """>>> itl_b64(), ridge_fp8()
    ('18.2 ms', '591')
    """
    return _ms(itl_s(lesson.coefficients(), batch=64, context_tokens=lesson.DECODE_CONTEXT_TOKENS))


@fact
def ridge_fp8():
    return format_number(ridge_point_flops_per_byte(get_gpu(lesson.GPU), "fp8"))


@fact
def int4_weights():
    return _gb(weight_bytes(_m70(), "int4").total_bytes)


@fact
def int4_payload():
    return _gb(weight_bytes(_m70(), "int4").payload_bytes)


@fact
def bf16_weights():
    return _gb(weight_bytes(_m70(), "bf16").total_bytes)


@fact
def delta_70b_fp8():
    return _delta("llama-3.1-70b", "fp8")


@fact
def delta_70b_int4():
    return _delta("llama-3.1-70b", "int4")


@fact
def delta_8b_fp8():
    return _delta("llama-3.1-8b", "fp8")


@fact
def delta_8b_int4():
    return _delta("llama-3.1-8b", "int4")


@fact
def break_even():
    return str(break_even_batch(step_coefficients(get_model("llama-3.1-8b"), get_gpu(lesson.GPU)),
                                context_tokens=SPEC_CONTEXT_TOKENS))


@fact
def break_even_published():
    return format_number(_published("eagle3-paper-eagle-break-even-batch"))


# --- shared prefixes and long contexts (steps 11-13)
@fact
def hit_tokens_wrong_order():
    """>>> hit_tokens_wrong_order()
    '0'
    """
    wrong = prefix_cache_hit(shared_tokens=SYSTEM_PROMPT_TOKENS, variable_tokens=PROMPT_TOKENS,
                             block_size_tokens=lesson.REPLICA["block_size"], order="variable-first")
    return f"{wrong['hit_tokens']:,}"


@fact
def scores_per_layer_all_heads():
    """All 64 heads; step 13 quotes one GPU's 16.

    >>> scores_per_layer_all_heads()
    '1.28 TB'
    """
    return _tb(unfused_attention_scores_bytes(_m70(), LONG_TOKENS)["matrix_bytes_per_layer"])


# --- autoscaling (steps 14-15): warm headroom over step 15's scale-up delay
@fact
def util_replicas():
    run = _summary("step14-scale-on-gpu-util")
    return f"{run['replicas_initial']} → {run['replicas_max']} → {run['replicas_final']}"


@fact
def growth():
    return _pct(GROWTH_PER_MIN)


@fact
def headroom():
    head = warm_headroom(load_rps=1.0, growth_per_min=GROWTH_PER_MIN, delay_s=fleet_scale_up_delay_s(),
                         replica_capacity_rps=1.0)
    return _pct(head["headroom_fraction"], 2)


# --- the frontier (step 18)
@fact
def allreduces():
    return str(lesson.coefficients().allreduces_per_step)


@fact
def wire_share():
    return format_number(allreduce_bytes_on_wire(1.0, lesson.TP), 2)


@fact
def pp_stages():
    return str(PP_STAGES)


@fact
def pp_microbatches():
    return str(PP_MICROBATCHES)


@fact
def bubble_one():
    return _pct(pipeline_bubble_fraction(PP_STAGES, 1))


@fact
def bubble_many():
    return _pct(pipeline_bubble_fraction(PP_STAGES, PP_MICROBATCHES))


# --- the quiz: 200 conversations of 4,000 tokens on the running example (capacities as steps 1, 3 and 8 quote them)
@fact
def quiz_conversations():
    return f"{QUIZ_CONVERSATIONS:,}"


@fact
def quiz_tokens():
    return f"{_quiz()['tokens']:,}"


@fact
def quiz_fit_bf16():
    """>>> quiz_fit_bf16()
    '99'
    """
    return f"{_quiz()['fit']:,}"


@fact
def quiz_fit_fp8_kv():
    return f"{_quiz('fp8')['fit']:,}"


@fact
def quiz_short_fp8():
    return f"{_quiz('fp8')['short']:,}"


@fact
def quiz_fit_fp8_both():
    return f"{_quiz('fp8', 'fp8')['fit']:,}"


facts = facts_of(__name__)
