"""Widgets and facts of step 21, "Cheat sheet" (docs/lesson/21-cheat-sheet.md).

Every formula and rule of thumb of the lesson on one page, each number computed
here from the science modules of :mod:`calc` (memory, allocation, roofline,
quantization, speculative, prefix, context, autoscale, cost, parallel), from the
published measurements of :mod:`calc.accuracy` (each with its source), and from
the lesson's simulator presets (:mod:`calc.sim.presets`). Nothing on the page is
typed by hand; :func:`your_replica` recomputes the replica's half of the sheet
for another model, GPU or precision in the browser.

>>> f = facts()
>>> f["kv_tokens"], f["contiguous_fit"], f["conversations_per_100k"], f["discount_1_to_10"]
('399,169', '48', '78', '9.7')
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.accuracy import load_measurements
from calc.allocation import contiguous_max_concurrency, paged_waste_bound_tokens
from calc.autoscale import scale_up_delay_s, warm_headroom
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.context import prefill_flops, requests_displaced, unfused_attention_scores_bytes
from calc.cost import (
    batching_discount, batching_limit, price_replica, replica_usd_per_hour, sustained_at_latency,
    usd_per_million_tokens,
)
from calc.errors import CalcError
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS
from calc.memory import (
    KV_DTYPES, WEIGHT_FORMATS, kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_by_attention,
    kv_bytes_per_token_per_gpu, weight_bytes,
)
from calc.parallel import allreduce_bytes_on_wire, pipeline_bubble_fraction
from calc.prefix import prefix_cache_hit
from calc.quantization import accuracy_deltas
from calc.roofline import decode_step, itl_s, prefill_chunk, ridge_point_flops_per_byte, step_coefficients, ttft_s
from calc.sim import presets
from calc.speculative import EAGLE_LIKE, break_even_batch, expected_tokens_per_step, speedup
from calc.units import GB, KiB, SECONDS_PER_HOUR, TB, format_bytes, format_number
from calc.widgets.framework import Choice, FloatRange, IntRange, output, view, widget

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
#: Step 17's latency target (an assumption: about 20 tokens/s for each reader of a streamed answer).
ITL_TARGET_S = 0.05
#: Batching counts as "nearly linear" while a step of b sequences takes at most 1/0.9 of a step of one.
BATCHING_FLOOR = 0.9
#: Step 18's pipeline example: four stages, one micro-batch against sixteen.
PP_STAGES, PP_MICROBATCHES = 4, 16

_MODEL_CHOICES = tuple((key, model.name) for key, model in MODELS.items())
_GPU_CHOICES = tuple((key, gpu.name) for key, gpu in GPUS.items())


def _gb(n_bytes: float) -> str:
    return f"{format_number(n_bytes / GB)} GB"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _pct(fraction: float, digits: int = 3) -> str:
    return f"{format_number(fraction * 100, digits)}%"


def _usd(value: float) -> str:
    return f"${value:,.2f}" if value >= 1 else f"${format_number(value)}"


def replica_numbers(model: str = lesson.REPLICA["model"], gpu: str = lesson.REPLICA["gpu"], *,
                    tp: int = lesson.REPLICA["tp"], weights: str = lesson.REPLICA["weights"],
                    kv_dtype: str = lesson.REPLICA["kv_dtype"],
                    gpu_memory_utilization: float = lesson.REPLICA["gpu_memory_utilization"],
                    prompt_tokens: int = PROMPT_TOKENS, answer_tokens: int = ANSWER_TOKENS,
                    max_model_len: int = MAX_MODEL_LEN, usd_per_gpu_hour: float | None = None) -> dict:
    """The replica's half of the cheat sheet, computed for one configuration (numbers, not text).

    Memory with the lesson's rounded parameter count (:func:`calc.lesson.kv_capacity`,
    vLLM's ``determine_available_memory``); speed on the calibrated roofline
    (:mod:`calc.roofline`); cost per million tokens = hourly cost / (tokens/s x 3,600)
    x 10^6 (:mod:`calc.cost`). Decode contexts are the prompt plus half the answer.
    ``usd_per_gpu_hour`` None takes the catalog's dated price (None if it has none).

    >>> r = replica_numbers()
    >>> r["kv_tokens"], r["requests_fit"], r["contiguous_fit"], round(r["itl_batch_1_s"] * 1000, 1)
    (399169, 311, 48, 15.3)
    >>> round(r["discount_1_to_10"], 1), r["usd_per_hour"]
    (9.7, 15.12)
    """
    args = dict(model=model, gpu=gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                gpu_memory_utilization=gpu_memory_utilization)
    lesson.kv_capacity(rounded_params=False, **args)  # the exact count first: its message names the TPs that fit
    cap = lesson.kv_capacity(rounded_params=True, max_model_len=max_model_len, **args)
    request = prompt_tokens + answer_tokens
    if request > max_model_len:
        raise CalcError(f"prompt_tokens + answer_tokens = {request:,} must be at most max_model_len "
                        f"{max_model_len:,}", "max_model_len")
    tokens = cap.kv_cache_tokens_raw
    fit = contiguous_max_concurrency(tokens, request)
    if fit < 1:
        raise CalcError(f"prompt_tokens: one request of {request:,} tokens does not fit the {tokens:,} tokens of KV "
                        f"cache; shorten it or free memory", "prompt_tokens")
    coef = step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)
    context = prompt_tokens + answer_tokens // 2
    decode_1 = decode_step(coef, batch=1, context_tokens=context)
    prefill = prefill_chunk(coef, chunk_tokens=max(1, prompt_tokens))
    target = sustained_at_latency(coef, context_tokens=context, itl_target_s=ITL_TARGET_S, max_batch=fit)
    price = get_gpu(gpu).price_usd_per_hour if usd_per_gpu_hour is None else usd_per_gpu_hour
    per_hour = None if price is None else replica_usd_per_hour(price, tp)
    tokens_1 = 1 / decode_1["time_s"]
    return {
        "weights_bytes_per_gpu": cap.weights_bytes,
        "kv_cache_bytes_per_gpu": cap.kv_cache_bytes,
        "kv_bytes_per_token": cap.kv_bytes_per_token,
        "kv_bytes_per_token_per_gpu": cap.kv_bytes_per_token_per_gpu,
        "kv_tokens": tokens,
        "request_tokens": request,
        "requests_fit": fit,
        "contiguous_fit": contiguous_max_concurrency(tokens, max_model_len),
        "ridge_flops_per_byte": ridge_point_flops_per_byte(gpu, coef.compute_dtype),
        "decode_intensity": decode_1["intensity_flops_per_byte"],
        "prefill_intensity": prefill["intensity_flops_per_byte"],
        "ttft_s": ttft_s(coef, prompt_tokens=max(1, prompt_tokens)),
        "itl_batch_1_s": decode_1["time_s"],
        "discount_1_to_10": batching_discount(coef, context_tokens=context),
        "batching_limit": batching_limit(coef, context_tokens=context, efficiency_floor=BATCHING_FLOOR),
        "batch_at_target": target["batch"],
        "tokens_per_s_at_target": target["tokens_per_s"],
        "usd_per_hour": per_hour,
        "usd_per_million_batch_1": None if per_hour is None else usd_per_million_tokens(per_hour, tokens_1),
        "usd_per_million_at_target": (None if per_hour is None or not target["batch"]
                                      else usd_per_million_tokens(per_hour, target["tokens_per_s"])),
    }


@widget
def your_replica(
    model: Annotated[str, Choice(_MODEL_CHOICES, label="Model")] = lesson.REPLICA["model"],
    gpu: Annotated[str, Choice(_GPU_CHOICES, label="GPU")] = lesson.REPLICA["gpu"],
    tp: Annotated[int, IntRange(1, 64, 1, "GPUs", label="Tensor parallel")] = lesson.REPLICA["tp"],
    weights: Annotated[str, Choice(WEIGHT_FORMATS, label="Weight precision")] = lesson.REPLICA["weights"],
    kv_dtype: Annotated[str, Choice(KV_DTYPES, label="KV cache dtype")] = lesson.REPLICA["kv_dtype"],
    gpu_memory_utilization: Annotated[float, FloatRange(0.05, 1.0, 0.01, label="Memory utilization")]
    = lesson.REPLICA["gpu_memory_utilization"],
    prompt_tokens: Annotated[int, IntRange(1, 10_000_000, 1, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Answer")] = ANSWER_TOKENS,
    max_model_len: Annotated[int, IntRange(16, 10_000_000, 1, "tokens", label="Max model length")] = MAX_MODEL_LEN,
    gpu_price_usd_per_hour: Annotated[float, FloatRange(0.0, 1000.0, 0.01, "USD per GPU-hour", label="GPU price",
                                                        help="0 takes the catalog's dated price")] = 0.0,
):
    """The sheet's replica numbers for your own replica: memory, concurrency, speed and cost, one row each.

    Every row is :func:`replica_numbers` (sources there). With no price (0 and none in the
    catalog) the cost rows say so.

    >>> out = your_replica(weights="fp8")["outputs"]
    >>> out["kv_tokens"]["text"], out["itl_batch_1_s"]["text"]
    ('614,624 tokens', '8.58 ms')
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
        output("batch_at_target", f"Batch within {_ms(ITL_TARGET_S)} per token", r["batch_at_target"], "requests",
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


def facts() -> dict[str, str]:
    """Numbers quoted on the cheat sheet, every one computed from calc (sources in each function's docstring).

    >>> f = facts()
    >>> f["kv_per_token_8b"], f["conversation_8b"], f["ridge_bf16"], f["spec_tokens"], f["hit_tokens"]
    ('131,072 B', '524 MB', '295', '3.36', '2,496')
    """
    f: dict[str, str] = {}
    # --- the KV cache sets concurrency (steps 1-5)
    r = replica_numbers()
    rounded_cap = lesson.kv_capacity(rounded_params=True)
    exact = lesson.kv_capacity()
    m70, m8 = get_model("llama-3.1-70b"), get_model("llama-3.1-8b")
    gpu = get_gpu(lesson.REPLICA["gpu"])
    by_attention = kv_bytes_per_token_by_attention(m70)
    f.update(
        model=m70.name, gpu=gpu.name, tp=str(lesson.REPLICA["tp"]),
        gpu_gb=_gb(rounded_cap.total_bytes), utilization=_pct(rounded_cap.gpu_memory_utilization),
        requested=_gb(rounded_cap.requested_bytes), weights_per_gpu=_gb(rounded_cap.weights_bytes),
        activation=_gb(rounded_cap.activation_bytes), non_torch=_gb(rounded_cap.non_torch_bytes),
        kv_per_gpu=_gb(rounded_cap.kv_cache_bytes), kv_tokens=f"{rounded_cap.kv_cache_tokens_raw:,}",
        kv_tokens_exact=f"{exact.kv_cache_tokens_raw:,}",
        kv_per_token_8b=f"{kv_bytes_per_token(m8):,} B",
        kv_per_token_8b_kib=f"{kv_bytes_per_token(m8) // KiB} KiB",
        kv_per_token_70b=f"{kv_bytes_per_token(m70):,} B",
        kv_per_token_70b_kib=f"{kv_bytes_per_token(m70) // KiB} KiB",
        kv_per_token_70b_gpu=f"{kv_bytes_per_token_per_gpu(m70, lesson.REPLICA['tp']):,} B",
        mha_over_gqa=f"{by_attention['mha'] // by_attention['gqa']}", kv_heads_70b=str(m70.kv_heads),
        conversation_tokens=f"{CONVERSATION_TOKENS:,}",
        conversation_8b=format_bytes(kv_bytes_per_request(m8, CONVERSATION_TOKENS)),
        prompt_tokens=f"{PROMPT_TOKENS:,}", answer_tokens=f"{ANSWER_TOKENS:,}",
        request_tokens=f"{r['request_tokens']:,}", requests_fit=f"{r['requests_fit']:,}",
        max_model_len=f"{MAX_MODEL_LEN:,}", contiguous_fit=f"{r['contiguous_fit']:,}",
        block_size=str(lesson.REPLICA["block_size"]),
        paged_waste_tokens=str(paged_waste_bound_tokens(lesson.REPLICA["block_size"])),
        orca_max_pct=f"{format_number(_published('vllm-paper-fig2-max'))}%",
        orca_oracle_pct=f"{format_number(_published('vllm-paper-fig2-oracle'))}%",
        vllm_paged_pct=f"{format_number(_published('vllm-paper-fig2-paged'))}%",
    )
    reserve, paged = _summary("step04-reserve-max"), _summary("step05-paged")
    f.update(reserve_running_max=f"{reserve['running_max']:,}", paged_running_max=f"{paged['running_max']:,}",
             reserve_ttft_p99=_seconds(reserve["ttft_p99_s"]), paged_ttft_p99=_seconds(paged["ttft_p99_s"]))
    # --- fewer bytes per token (steps 6-10)
    coef = lesson.coefficients()
    context = lesson.DECODE_CONTEXT_TOKENS
    fp8 = replica_numbers(weights="fp8")
    int4 = weight_bytes(m70, "int4")
    deltas = {(d["model"], d["weights"]): d["delta_points"] for d in accuracy_deltas()}
    a, k, c = SPEC_EXAMPLE
    coef_8b = step_coefficients(m8, gpu)
    f.update(
        context_tokens=f"{context:,}",
        itl_b1=_ms(r["itl_batch_1_s"]), itl_b64=_ms(itl_s(coef, batch=64, context_tokens=context)),
        ttft_1024=_ms(r["ttft_s"]),
        ridge_bf16=format_number(ridge_point_flops_per_byte(gpu, "bf16")),
        ridge_fp8=format_number(ridge_point_flops_per_byte(gpu, "fp8")),
        decode_intensity=format_number(r["decode_intensity"]), prefill_intensity=format_number(r["prefill_intensity"]),
        fp8_weights_per_gpu=_gb(fp8["weights_bytes_per_gpu"]), fp8_kv_tokens=f"{fp8['kv_tokens']:,}",
        fp8_itl_b1=_ms(fp8["itl_batch_1_s"]),
        int4_weights=_gb(int4.total_bytes), int4_payload=_gb(int4.payload_bytes),
        bf16_weights=_gb(weight_bytes(m70, "bf16").total_bytes),
        delta_70b_fp8=f"{deltas[('llama-3.1-70b', 'fp8')]:+.2f}",
        delta_70b_int4=f"{deltas[('llama-3.1-70b', 'int4')]:+.2f}",
        delta_8b_fp8=f"{deltas[('llama-3.1-8b', 'fp8')]:+.2f}",
        delta_8b_int4=f"{deltas[('llama-3.1-8b', 'int4')]:+.2f}",
        spec_a=format_number(a), spec_k=str(k), spec_c=format_number(c),
        spec_tokens=format_number(expected_tokens_per_step(a, k)), spec_speedup=format_number(speedup(a, k, c)),
        eagle_tokens=format_number(EAGLE_LIKE.tokens_per_step),
        break_even=str(break_even_batch(coef_8b, context_tokens=SPEC_CONTEXT_TOKENS)),
        break_even_published=format_number(_published("eagle3-paper-eagle-break-even-batch")),
    )
    # --- shared prefixes and long contexts (steps 11-13)
    hit = prefix_cache_hit(shared_tokens=SYSTEM_PROMPT_TOKENS, variable_tokens=PROMPT_TOKENS,
                           block_size_tokens=lesson.REPLICA["block_size"])
    wrong = prefix_cache_hit(shared_tokens=SYSTEM_PROMPT_TOKENS, variable_tokens=PROMPT_TOKENS,
                             block_size_tokens=lesson.REPLICA["block_size"], order="variable-first")
    before, after = _summary("step11-system-prompt"), _summary("step12-prefix-caching")
    long = requests_displaced(m70, long_tokens=LONG_TOKENS, short_tokens=r["request_tokens"])
    share_short, share_long = prefill_flops(m70, PROMPT_TOKENS), prefill_flops(m70, LONG_TOKENS)
    scores = unfused_attention_scores_bytes(m70, LONG_TOKENS)
    f.update(
        system_prompt_tokens=f"{SYSTEM_PROMPT_TOKENS:,}", prompt_with_system=f"{hit['prompt_tokens']:,}",
        hit_tokens=f"{hit['hit_tokens']:,}", computed_tokens=f"{hit['computed_tokens']:,}",
        prefill_saved=_pct(hit["prefill_saved_fraction"]), hit_tokens_wrong_order=f"{wrong['hit_tokens']:,}",
        sys_ttft_p99_before=_seconds(before["ttft_p99_s"]), sys_ttft_p99_after=_seconds(after["ttft_p99_s"]),
        sim_hit_rate=_pct(after["prefix_cache_hit_rate"]),
        long_tokens=f"{LONG_TOKENS:,}", conversations_per_100k=f"{long['conversations']:,}",
        long_kv=_gb(long["long_kv_bytes"]),
        long_kv_share=_pct(long["long_kv_bytes"] / (rounded_cap.kv_cache_bytes * rounded_cap.tp), 2),
        attention_share_short=_pct(share_short["attention_share"], 2),
        attention_share_long=_pct(share_long["attention_share"], 2),
        scores_per_layer=f"{format_number(scores['matrix_bytes_per_layer'] / TB)} TB",
    )
    # --- autoscaling (steps 14-15)
    gpu_util = _summary("step14-scale-on-gpu-util")
    delay = scale_up_delay_s(pod_start_s=POD_START_S, weights_bytes=weight_bytes(m70).total_bytes,
                             load_bytes_per_s=LOAD_BYTES_PER_S)
    head = warm_headroom(load_rps=1.0, growth_per_min=GROWTH_PER_MIN, delay_s=delay, replica_capacity_rps=1.0)
    f.update(
        util_reported=_pct(gpu_util["gpu_util_reported"], 2), util_compute=_pct(gpu_util["compute_utilization"], 2),
        util_replicas=f"{gpu_util['replicas_initial']} → {gpu_util['replicas_max']} → {gpu_util['replicas_final']}",
        pod_start=f"{format_number(POD_START_S)} s", load_bandwidth=f"{format_number(LOAD_BYTES_PER_S / GB)} GB/s",
        weights_total=_gb(weight_bytes(m70).total_bytes), scale_delay=_seconds(delay),
        growth=_pct(GROWTH_PER_MIN), headroom=_pct(head["headroom_fraction"], 2),
    )
    # --- cost and the frontier (steps 16-18)
    price = gpu.price_usd_per_hour
    month = price_replica(usd_per_gpu_hour=price, gpus=lesson.REPLICA["tp"],
                          sustained_tokens_per_s=r["tokens_per_s_at_target"])
    f.update(
        price=_usd(price), price_date=str(gpu.price_date), usd_per_hour=_usd(r["usd_per_hour"]),
        seconds_per_hour=f"{SECONDS_PER_HOUR:,}",
        usd_per_million_b1=_usd(r["usd_per_million_batch_1"]), discount_1_to_10=format_number(r["discount_1_to_10"], 2),
        batching_limit=str(r["batching_limit"]), batching_floor=_pct(BATCHING_FLOOR),
        itl_target=_ms(ITL_TARGET_S), batch_at_target=f"{r['batch_at_target']:,}",
        tokens_at_target=format_number(r["tokens_per_s_at_target"]),
        usd_per_million_target=_usd(r["usd_per_million_at_target"]), usd_per_month=f"${month['usd_per_month']:,.0f}",
        allreduces=str(coef.allreduces_per_step),
        wire_share=format_number(allreduce_bytes_on_wire(1.0, lesson.REPLICA["tp"]), 2),
        pp_stages=str(PP_STAGES), pp_microbatches=str(PP_MICROBATCHES),
        bubble_one=_pct(pipeline_bubble_fraction(PP_STAGES, 1)),
        bubble_many=_pct(pipeline_bubble_fraction(PP_STAGES, PP_MICROBATCHES)),
    )
    # --- the incident (steps 19-20)
    incident, fixed = _summary("step19-incident-p99"), _summary("step20-pools")
    f.update(
        incident_ttft_p99=_seconds(incident["ttft_p99_s"]), incident_queue=f"{incident['queue_depth_max']:,}",
        incident_kv=_pct(incident["kv_use_peak"]), incident_util=_pct(incident["gpu_util_reported"], 2),
        incident_rate=f"{format_number(incident['arrival_rate_per_s'])}",
        fixed_ttft_p99=_seconds(fixed["ttft_p99_s"]), fixed_replicas=str(fixed["replicas_max"]),
        incident_replicas=str(incident["replicas_max"]),
    )
    # the quiz: 200 conversations of 4,000 tokens on the running example
    quiz_need = QUIZ_CONVERSATIONS * CONVERSATION_TOKENS
    fp8_kv = lesson.kv_capacity(rounded_params=True, kv_dtype="fp8").kv_cache_tokens_raw
    fp8_both = lesson.kv_capacity(rounded_params=True, kv_dtype="fp8", weights="fp8").kv_cache_tokens_raw
    f.update(
        quiz_conversations=f"{QUIZ_CONVERSATIONS:,}", quiz_tokens=f"{quiz_need:,}",
        quiz_fit_bf16=f"{rounded_cap.kv_cache_tokens_raw // CONVERSATION_TOKENS:,}",
        quiz_fp8_kv_tokens=f"{fp8_kv:,}", quiz_fit_fp8_kv=f"{fp8_kv // CONVERSATION_TOKENS:,}",
        quiz_short_fp8=f"{QUIZ_CONVERSATIONS - fp8_kv // CONVERSATION_TOKENS:,}",
        quiz_weights_freed=_gb(r["weights_bytes_per_gpu"] - fp8["weights_bytes_per_gpu"]),
        quiz_fp8_both_tokens=f"{fp8_both:,}", quiz_fit_fp8_both=f"{fp8_both // CONVERSATION_TOKENS:,}",
    )
    # A dollar sign would open inline math (pymdownx.arithmatex): the prose gets it escaped.
    return {key: value.replace("$", "\\$") for key, value in f.items()}
