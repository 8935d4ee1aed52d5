"""What a token costs: USD per million tokens, a replica's price, and the batch that sets it.

Cost per million tokens = hourly cost / (tokens/s x 3,600) x 10^6 (the lesson's
step 16). GPUs are paid by the hour whether they are busy or not, so everything
that raises sustained tokens/s at the same hourly cost (batching, quantization,
speculation at low load) cuts the price of a token. While decode is memory-bound
a step of ten sequences costs about what a step of one costs, so ten times the
batch is nearly ten times cheaper per token; :func:`batching_limit` finds where
that stops holding.

>>> round(usd_per_million_tokens(4 * 3.78, 1000), 3)
4.2
"""

from __future__ import annotations

from calc import lesson
from calc.allocation import contiguous_max_concurrency
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_positive, check_range
from calc.lesson import ANSWER_TOKENS, MAX_MODEL_LEN, PROMPT_TOKENS
from calc.roofline import (
    MAX_SEARCH_BATCH, decode_step, prefill_chunk, ridge_point_flops_per_byte, smallest_batch_where, steady_state_step,
    step_coefficients, ttft_s,
)
from calc.units import SECONDS_PER_HOUR

__all__ = [
    "HOURS_PER_MONTH", "usd_per_month", "free_batching_usd", "cost_ratio",
    "H100_LISTINGS", "H100_LISTINGS_SOURCE", "usd_per_million_tokens", "replica_usd_per_hour", "price_replica",
    "cost_vs_batch", "batching_discount", "batching_limit", "steady_batching_limit", "sustained_at_latency",
    "decode_rows", "prefill_rows", "ITL_TARGET_S", "MAX_NUM_SEQS", "BATCHING_FLOOR", "replica_numbers",
]

TOKENS_PER_MILLION = 1_000_000
#: H100 SXM on-demand prices per GPU-hour, one listing per seller, all read on the same day from the sellers'
#: public pricing pages (lambda.ai/service/gpu-cloud, modal.com/pricing, replicate.com/pricing). The GPU catalog
#: keeps the first as the H100's price; the others are for comparison (steps 16 and 17).
H100_LISTINGS = (("Lambda", 3.78), ("Modal", 3.95), ("Replicate", 5.49))
#: Where :data:`H100_LISTINGS` come from, as step 17's page shows it.
H100_LISTINGS_SOURCE = ("on-demand H100 SXM per GPU-hour, listed 2026-05-07 on the sellers' public pricing pages "
                        "(lambda.ai/service/gpu-cloud, modal.com/pricing, replicate.com/pricing)")
MAX_GPUS = 100_000
MAX_BATCH = 100_000


def usd_per_million_tokens(usd_per_hour: float, tokens_per_s: float) -> float:
    """USD per million tokens: ``usd_per_hour / (tokens_per_s x 3600) x 1e6``.

    Source: the lesson's step 16 (seed ``000_783e2c6cc1bfcb77.txt``: "hourly GPU
    cost / (tokens/s x 3,600) x 10^6").

    >>> round(usd_per_million_tokens(3.78, 1351), 4)
    0.7772
    >>> usd_per_million_tokens(3.78, 0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: tokens_per_s must be greater than 0; got 0
    """
    usd = check_positive("usd_per_hour", usd_per_hour, allow_zero=True)
    rate = check_positive("tokens_per_s", tokens_per_s)
    return usd / (rate * SECONDS_PER_HOUR) * TOKENS_PER_MILLION


def replica_usd_per_hour(usd_per_gpu_hour: float, gpus: int) -> float:
    """Hourly cost of a replica: GPU-hours per hour (its GPU count) x price per GPU-hour.

    Source: the lesson's step 17 (price a replica from GPU-hours).

    >>> replica_usd_per_hour(3.78, 4)
    15.12
    """
    price = check_positive("usd_per_gpu_hour", usd_per_gpu_hour, allow_zero=True)
    gpus = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    return price * gpus


HOURS_PER_MONTH = 730.0  # a month on average: 8,760 hours a year / 12


def usd_per_month(usd_per_hour: float, hours_per_month: float = HOURS_PER_MONTH) -> float:
    """What an hourly price comes to over a month of ``hours_per_month`` (730 on average: 8,760 / 12).

    >>> round(usd_per_month(15.12), 2)
    11037.6
    """
    return check_positive("usd_per_hour", usd_per_hour, allow_zero=True) * check_range("hours_per_month", hours_per_month, 1, 744)


def free_batching_usd(usd_per_million: float, batch: int, larger_batch: int) -> float:
    """What ``larger_batch`` would cost per million tokens if its step took no longer than ``batch``'s: the cost
    falls with the batch (the step's price is shared) until the step itself grows (step 17).

    >>> round(free_batching_usd(6.6, 10, 100), 3)
    0.66
    """
    return usd_per_million / (larger_batch / batch)


def cost_ratio(usd: float, other_usd: float) -> float:
    """How many times one cost per million tokens is another.

    >>> cost_ratio(64.24, 6.6)
    9.733333333333333
    """
    return usd / check_positive("other_usd", other_usd)


def price_replica(*, usd_per_gpu_hour: float, gpus: int, sustained_tokens_per_s: float, hours_per_month: float = HOURS_PER_MONTH) -> dict:
    """Price a deployment from two measured numbers: GPU-hours and sustained tokens/s.

    ``sustained_tokens_per_s`` is what the replica holds *at the latency target*
    (not its peak); the result is the replica's hourly and monthly cost, the
    tokens it produces in an hour, and USD per million tokens. 730 hours is a
    month on average (8,760 / 12).
    Source: the lesson's step 17; :func:`usd_per_million_tokens`.

    >>> r = price_replica(usd_per_gpu_hour=3.78, gpus=4, sustained_tokens_per_s=2000)
    >>> r["usd_per_hour"], r["tokens_per_hour"], round(r["usd_per_million_tokens"], 2), round(r["usd_per_month"])
    (15.12, 7200000.0, 2.1, 11038)
    """
    usd_per_hour = replica_usd_per_hour(usd_per_gpu_hour, gpus)
    months = check_range("hours_per_month", hours_per_month, 1, 744)
    rate = check_positive("sustained_tokens_per_s", sustained_tokens_per_s)
    return {
        "gpus": gpus,
        "gpu_hours_per_hour": float(gpus),
        "usd_per_hour": usd_per_hour,
        "usd_per_month": usd_per_month(usd_per_hour, months),
        "tokens_per_hour": float(rate * SECONDS_PER_HOUR),
        "usd_per_million_tokens": usd_per_million_tokens(usd_per_hour, rate),
    }


# ---- cost against batch, on the roofline -------------------------------------


def _decode_row(coefficients, batch: int, context_tokens: int, usd_per_hour: float) -> dict:
    time_s = coefficients.step_time_s(
        new_tokens=batch,
        kv_tokens_read=batch * context_tokens,
        attention_token_pairs=batch * context_tokens,
    )
    detail = coefficients.breakdown(
        new_tokens=batch,
        kv_tokens_read=batch * context_tokens,
        attention_token_pairs=batch * context_tokens,
    )
    tokens_per_s = batch / time_s
    return {
        "batch": batch,
        "step_s": time_s,
        "itl_s": time_s,
        "tokens_per_s": tokens_per_s,
        "usd_per_million_tokens": usd_per_million_tokens(usd_per_hour, tokens_per_s),
        "bound": detail["bound"],
    }


def _check_context(context_tokens: int) -> int:
    return check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)


def cost_vs_batch(coefficients, *, usd_per_hour: float, context_tokens: int, batches) -> list[dict]:
    """Decode cost per million tokens at each batch size, from the roofline's step time.

    ``coefficients`` is a :class:`calc.roofline.StepCoefficients` for one replica;
    ``usd_per_hour`` the replica's hourly cost; ``context_tokens`` the context each
    sequence holds (prompt plus the answer so far). Each row: step time (the
    inter-token latency), tokens/s = batch / step time, USD per million tokens,
    and whether the step is memory- or compute-bound. Decode only: prefill work
    is left out so that the batch effect shows alone.
    Source: :func:`usd_per_million_tokens` on :mod:`calc.roofline`.

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> rows = cost_vs_batch(coef, usd_per_hour=4 * 3.78, context_tokens=1152, batches=[1, 10])
    >>> round(rows[0]["usd_per_million_tokens"] / rows[1]["usd_per_million_tokens"], 1)
    9.7
    """
    usd = check_positive("usd_per_hour", usd_per_hour, allow_zero=True)
    context = _check_context(context_tokens)
    batches = list(batches)
    if not batches:
        raise CalcError("batches must hold at least one batch size; got none", "batches")
    rows = []
    for b in batches:
        b = check_range("batch", b, 1, MAX_BATCH, integer=True)
        rows.append(_decode_row(coefficients, b, context, usd))
    return rows


def batching_discount(coefficients, *, context_tokens: int, batch_low: int = 1, batch_high: int = 10) -> float:
    """How many times cheaper a token is at ``batch_high`` than at ``batch_low``.

    ``(batch_high / step(batch_high)) / (batch_low / step(batch_low))``; it equals
    ``batch_high / batch_low`` only if the step time did not grow at all. The
    hourly price cancels out.
    Source: the lesson's step 16 (ten times the batch, nearly ten times cheaper);
    step times from :mod:`calc.roofline`.

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> round(batching_discount(coef, context_tokens=1152), 1)
    9.7
    >>> batching_discount(coef, context_tokens=1152, batch_low=10, batch_high=100) < 9
    True
    """
    context = _check_context(context_tokens)
    low = check_range("batch_low", batch_low, 1, MAX_BATCH, integer=True)
    high = check_range("batch_high", batch_high, 1, MAX_BATCH, integer=True)
    a = _decode_row(coefficients, low, context, 1.0)
    b = _decode_row(coefficients, high, context, 1.0)
    return b["tokens_per_s"] / a["tokens_per_s"]


def batching_limit(coefficients, *, context_tokens: int, efficiency_floor: float = 0.9, max_batch: int = 4096) -> int:
    """The largest batch at which batching is still at least ``efficiency_floor`` as good as linear.

    Batching efficiency at batch ``b`` = step(1) / step(b): 1 means ``b`` times
    the batch is ``b`` times cheaper per token. It falls as the batch's KV reads
    (and, past the ridge point, its FLOPs) add to the fixed cost of reading the
    weights. Returns ``max_batch`` if the floor is never crossed.
    Source: the lesson's step 16 ("show where it stops holding"); step times from
    :mod:`calc.roofline`.

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> 20 < batching_limit(coef, context_tokens=1152) < 80
    True
    """
    context = _check_context(context_tokens)
    floor = check_range("efficiency_floor", efficiency_floor, 0.01, 1.0)
    max_batch = check_range("max_batch", max_batch, 1, MAX_BATCH, integer=True)
    base = _decode_row(coefficients, 1, context, 1.0)["step_s"]

    def efficient(b: int) -> bool:
        return base / _decode_row(coefficients, b, context, 1.0)["step_s"] >= floor

    beyond = smallest_batch_where(lambda b: not efficient(b), max_batch)  # efficient(1) always: ratio 1
    return max_batch if beyond is None else beyond - 1


def steady_batching_limit(coefficients, *, input_tokens: int, output_tokens: int, efficiency_floor: float = 0.9,
                          max_batch: int = 4096) -> int:
    """:func:`batching_limit` for steps that carry the prompts too: the largest batch still ``efficiency_floor`` as good as linear.

    The steps are :func:`calc.roofline.steady_state_step`'s (``batch`` decode
    tokens and ``batch x input / output`` prompt tokens on average: a replica
    kept full by real traffic); efficiency at ``b`` = step(1) / step(b).
    Returns ``max_batch`` if the floor is never crossed.

    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> steady_batching_limit(coef, input_tokens=1024, output_tokens=256)
    22
    """
    floor = check_range("efficiency_floor", efficiency_floor, 0.01, 1.0)
    max_batch = check_range("max_batch", max_batch, 1, MAX_SEARCH_BATCH, integer=True)
    base = steady_state_step(coefficients, batch=1, input_tokens=input_tokens, output_tokens=output_tokens)["time_s"]
    beyond = smallest_batch_where(lambda b: base / steady_state_step(
        coefficients, batch=b, input_tokens=input_tokens, output_tokens=output_tokens)["time_s"] < floor, max_batch)
    return max_batch if beyond is None else beyond - 1


def _prefill_answer_tokens(context: int, prompt_tokens: int, answer_tokens) -> int:
    """The answer length of a steady state with prefill, checked against the decoding context."""
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 10_000_000, integer=True)
    if answer_tokens is None:
        if context <= prompt:
            raise CalcError(f"context_tokens must exceed prompt_tokens ({prompt:,}) when the answer length is left "
                            f"out: decoding sequences hold their prompt and half their answer; got {context:,}",
                            "context_tokens")
        return 2 * (context - prompt)
    answer = check_range("answer_tokens", answer_tokens, 1, 10_000_000, integer=True)
    if context != prompt + answer // 2:
        raise CalcError(f"context_tokens must be prompt_tokens + answer_tokens // 2 = {prompt + answer // 2:,} "
                        f"(decoding sequences half-way through their answers) when both lengths are given; "
                        f"got {context:,}", "context_tokens")
    return answer


def sustained_at_latency(coefficients, *, context_tokens: int, itl_target_s: float, max_batch: int = 4096,
                         prompt_tokens: int = 0, answer_tokens: int | None = None) -> dict:
    """The largest batch whose inter-token latency meets ``itl_target_s``, and its output tokens/s.

    The step time grows with the batch, so the latency target caps the batch and
    with it the sustained tokens/s that :func:`price_replica` needs. ``max_batch``
    stands for the other caps (KV room, the engine's running-sequence limit).
    Returns batch 0 and 0 tokens/s if even one sequence misses the target.

    With ``prompt_tokens`` 0 (the default) a step is decode only: ``batch`` new
    tokens, each reading ``context_tokens`` of KV cache, the step a decode
    benchmark times. With ``prompt_tokens`` > 0 the steps also carry the
    prompts of the requests that replace finished ones: ``batch x prompt /
    answer`` prefill tokens per step on average
    (:func:`calc.roofline.steady_state_step`), what a replica kept busy by real
    traffic does. Decoding sequences then sit half-way through their answers,
    ``context_tokens = prompt_tokens + answer_tokens // 2``; leave
    ``answer_tokens`` out and it is ``2 x (context_tokens - prompt_tokens)``
    (``answer_tokens`` matters only with a prompt). Either way ``tokens_per_s``
    counts output tokens: ``batch / step time``.
    Source: the lesson's step 17 (sustained tokens/s at a latency target); step
    times from :mod:`calc.roofline`; prefill mixed into decode steps as in
    continuous batching (Yu et al., "Orca", OSDI 2022).

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> r = sustained_at_latency(coef, context_tokens=1152, itl_target_s=0.050, max_batch=256)
    >>> r["batch"], round(r["tokens_per_s"]), r["limited_by"]
    (256, 8266, 'max_batch')
    >>> r = sustained_at_latency(coef, context_tokens=1152, itl_target_s=0.050, max_batch=256, prompt_tokens=1024)
    >>> r["batch"], round(r["tokens_per_s"]), r["limited_by"], r["itl_s"] <= 0.050
    (113, 2275, 'latency', True)
    """
    context = _check_context(context_tokens)
    target = check_positive("itl_target_s", itl_target_s)
    max_batch = check_range("max_batch", max_batch, 1, MAX_BATCH, integer=True)
    prompt = check_range("prompt_tokens", prompt_tokens, 0, 10_000_000, integer=True)
    times: dict[int, float] = {}

    if prompt:
        answer = _prefill_answer_tokens(context, prompt, answer_tokens)

        def step(b: int) -> float:
            if b not in times:
                times[b] = steady_state_step(coefficients, batch=b, input_tokens=prompt, output_tokens=answer)["time_s"]
            return times[b]
    else:
        if answer_tokens is not None:
            check_range("answer_tokens", answer_tokens, 1, 10_000_000, integer=True)

        def step(b: int) -> float:
            if b not in times:
                times[b] = _decode_row(coefficients, b, context, 1.0)["step_s"]
            return times[b]

    if step(1) > target:
        return {"batch": 0, "itl_s": step(1), "tokens_per_s": 0.0, "limited_by": "latency"}
    if step(max_batch) <= target:
        best, limited = max_batch, "max_batch"
    else:
        low, high = 1, max_batch
        while high - low > 1:
            mid = (low + high) // 2
            if step(mid) <= target:
                low = mid
            else:
                high = mid
        best, limited = low, "latency"
    t = step(best)
    return {"batch": best, "itl_s": t, "tokens_per_s": best / t, "limited_by": limited}


_POWERS = tuple(2 ** i for i in range(13))  # 1 .. 4096


def _coefficients(model: str = lesson.REPLICA["model"], gpu: str = lesson.REPLICA["gpu"],
                  tp: int = lesson.REPLICA["tp"], weights: str = lesson.REPLICA["weights"]):
    return lesson.coefficients(weights, model=model, gpu=gpu, tp=tp)


def decode_rows(*, model: str = lesson.REPLICA["model"], gpu: str = lesson.REPLICA["gpu"],
                tp: int = lesson.REPLICA["tp"], weights: str = lesson.REPLICA["weights"],
                usd_per_gpu_hour: float | None = None, context_tokens: int = lesson.DECODE_CONTEXT_TOKENS,
                batches=_POWERS) -> list[dict]:
    """Decode-only cost per million output tokens at each batch: :func:`calc.cost.cost_vs_batch` for a replica.

    ``usd_per_gpu_hour`` defaults to the GPU's dated catalog price (H100 SXM:
    Lambda's $3.78 listed 2026-05-07). Source: :mod:`calc.cost`, :mod:`calc.roofline`.

    >>> r = decode_rows(batches=(1,))[0]
    >>> round(r["step_s"] * 1000, 1), round(r["tokens_per_s"], 1), r["bound"]
    (15.3, 65.4, 'memory')
    """
    price = _price(gpu, usd_per_gpu_hour)
    coef = _coefficients(model, gpu, tp, weights)
    return cost_vs_batch(coef, usd_per_hour=replica_usd_per_hour(price, tp), context_tokens=context_tokens,
                         batches=batches)


def prefill_rows(*, model: str = lesson.REPLICA["model"], gpu: str = lesson.REPLICA["gpu"],
                 tp: int = lesson.REPLICA["tp"], weights: str = lesson.REPLICA["weights"],
                 usd_per_gpu_hour: float | None = None, prompt_tokens: int = PROMPT_TOKENS,
                 answer_tokens: int = ANSWER_TOKENS, batches=_POWERS) -> list[dict]:
    """Cost per million output tokens at each batch when the prompts' prefill shares the steps (steady state).

    Each step carries ``batch`` decode tokens and, on average, ``batch x prompt /
    answer`` prompt tokens (:func:`calc.roofline.steady_state_step`): what a
    replica kept full of the running example's requests does. The same columns
    as :func:`decode_rows`. Source: :func:`calc.roofline.steady_state_step`,
    :func:`calc.cost.usd_per_million_tokens`.

    >>> r = prefill_rows(batches=(1, 10))
    >>> round(r[0]["usd_per_million_tokens"] / r[1]["usd_per_million_tokens"], 2)
    9.55
    """
    price = _price(gpu, usd_per_gpu_hour)
    coef = _coefficients(model, gpu, tp, weights)
    usd = replica_usd_per_hour(price, tp)
    rows = []
    for b in batches:
        b = check_range("batch", b, 1, MAX_BATCH, integer=True)
        s = steady_state_step(coef, batch=b, input_tokens=prompt_tokens, output_tokens=answer_tokens)
        rows.append({"batch": b, "step_s": s["time_s"], "itl_s": s["time_s"],
                     "tokens_per_s": s["output_tokens_per_s"],
                     "usd_per_million_tokens": usd_per_million_tokens(usd, s["output_tokens_per_s"]),
                     "bound": s["bound"]})
    return rows


def _price(gpu: str, usd_per_gpu_hour: float | None) -> float:
    if usd_per_gpu_hour is not None:
        return usd_per_gpu_hour
    listed = get_gpu(gpu).price_usd_per_hour
    if listed is None:
        raise CalcError(f"usd_per_gpu_hour must be given for {get_gpu(gpu).name}: the catalog has no dated price "
                        f"for it; got none", "usd_per_gpu_hour")
    return listed


# ------------------------------------------------------------ the cheat sheet's replica (step 21)
#: Step 17's latency target (an assumption: about 20 tokens/s for each reader of a streamed answer).
ITL_TARGET_S = 0.05
#: The cap on running requests (``max_num_seqs``) step 17 prices with: 256, vLLM's V0 default (the V1 engine
#: defaults to 1,024 on GPUs of 70 GiB or more other than the A100, such as the H100: vLLM's
#: vllm/engine/arg_utils.py, https://github.com/vllm-project/vllm, the batch defaults by device).
MAX_NUM_SEQS = 256
#: Batching counts as "nearly linear" while a step of b sequences takes at most 1/0.9 of a step of one.
BATCHING_FLOOR = 0.9


def replica_numbers(model: str = lesson.REPLICA["model"], gpu: str = lesson.REPLICA["gpu"], *,
                    tp: int = lesson.REPLICA["tp"], weights: str = lesson.REPLICA["weights"],
                    kv_dtype: str = lesson.REPLICA["kv_dtype"],
                    gpu_memory_utilization: float = lesson.REPLICA["gpu_memory_utilization"],
                    prompt_tokens: int = PROMPT_TOKENS, answer_tokens: int = ANSWER_TOKENS,
                    max_model_len: int = MAX_MODEL_LEN, usd_per_gpu_hour: float | None = None) -> dict:
    """The replica's half of the cheat sheet, computed for one configuration (numbers, not text).

    Memory as step 1 sizes it (:func:`calc.lesson.kv_capacity`, vLLM's
    ``determine_available_memory``); speed on the calibrated roofline
    (:mod:`calc.roofline`); cost per million tokens = hourly cost / (tokens/s x 3,600)
    x 10^6 (:mod:`calc.cost`), sustained at the latency target with the prompts'
    prefill in the same steps and at most ``max_num_seqs`` running, as step 17 quotes
    it. Decode contexts are the prompt plus half the answer.
    ``usd_per_gpu_hour`` None takes the catalog's dated price (None if it has none).

    >>> r = replica_numbers()
    >>> r["kv_tokens"], r["requests_fit"], r["contiguous_fit"], round(r["itl_batch_1_s"] * 1000, 1)
    (399169, 311, 48, 15.3)
    >>> round(r["discount_1_to_10"], 1), r["usd_per_hour"], r["batch_at_target"], round(r["usd_per_million_at_target"], 2)
    (9.7, 15.12, 113, 1.85)
    """
    args = dict(model=model, gpu=gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                gpu_memory_utilization=gpu_memory_utilization)
    lesson.kv_capacity(rounded_params=False, **args)  # the exact count first: its message names the TPs that fit
    cap = lesson.kv_capacity(max_model_len=max_model_len, **args)  # as every step sizes it (fp8: tensor by tensor)
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
    # Step 17's quote: the prompts' prefill rides in the same steps, and the engine runs at most max_num_seqs.
    target = sustained_at_latency(coef, context_tokens=context, itl_target_s=ITL_TARGET_S,
                                  max_batch=min(MAX_NUM_SEQS, fit), prompt_tokens=max(1, prompt_tokens),
                                  answer_tokens=answer_tokens)
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
