"""One request alone on a replica, step by step: its prefill, every decode step, and when each answer token is out.

The primer's timeline (docs/primer.md): the prompt is prefilled in one step
(compute-bound), then each answer token costs one decode step over the context so
far (memory-bound at batch 1). Step times are the roofline's (:mod:`calc.roofline`);
the decode steps are summed in closed form over runs on which a step's time is
linear (:func:`decode_runs`), so a 32K-token answer costs a handful of roofline calls.

>>> t = request_timeline_s()
>>> round(t["ttft_s"] * 1000), round(t["e2e_s"], 2)
(82, 3.98)
"""

from __future__ import annotations

import math

from calc import lesson
from calc import memory, roofline
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_range
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.units import GB

__all__ = ["MAX_ANSWER_TOKENS", "MAX_PROMPT_TOKENS", "KV_DTYPE", "request_timeline_s", "decode_runs", "elapsed_s"]

#: The longest answer priced (its steps are summed in closed form: :func:`decode_runs`).
MAX_ANSWER_TOKENS = 32_768
MAX_PROMPT_TOKENS = 131_072  # Llama 3.1's context window
#: The KV cache stays in bf16 here: the primer changes the weights, not the cache.
KV_DTYPE = "bf16"


def _fit(model, gpu, tp: int, weights: str) -> memory.KVCapacity:
    """The replica's KV capacity (the lesson's vLLM settings), or a CalcError on the tp control."""
    try:
        return memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=KV_DTYPE,
                                  gpu_memory_utilization=lesson.REPLICA["gpu_memory_utilization"],
                                  block_size=lesson.REPLICA["block_size"],
                                  memory_basis=lesson.REPLICA["memory_basis"])
    except CalcError as exc:
        if exc.field not in ("tp", "gpu_memory_utilization"):
            raise
        per_gpu = memory.weights_bytes_per_gpu(model, tp, weights)
        share = gpu.memory_bytes("marketed") * lesson.REPLICA["gpu_memory_utilization"]
        raise CalcError(
            f"{model.name} does not fit on {tp} x {gpu.name} in {weights}: {per_gpu / GB:.1f} GB of weights per GPU "
            f"leave no room for the KV cache in the {share / GB:.1f} GB vLLM takes of each GPU; allowed: more GPUs "
            f"(tp) or fewer bits per weight", "tp") from None


def request_timeline_s(model: str = "llama-3.1-70b", gpu: str = "h100-sxm-80gb", *, tp: int = 4,
                       weights: str = "bf16", prompt_tokens: int = PROMPT_TOKENS,
                       answer_tokens: int = ANSWER_TOKENS) -> dict:
    """Prefill, the decode steps and the end-to-end time of one request alone on a replica, in seconds.

    Returns ``ttft_s`` (the prefill step), ``decode_s`` (the ``answer_tokens - 1``
    decode steps together), ``itl_mean_s`` (their mean), ``e2e_s``, ``runs`` (the
    decode steps as :func:`decode_runs`, for :func:`elapsed_s`), the roofline
    breakdowns of the prefill and of the first and last decode steps, and the
    replica's KV capacity. Source: :func:`calc.roofline.ttft_s`,
    :func:`calc.roofline.itl_s` (roofline calibrated on the TensorRT-LLM row); the
    capacity check is :func:`calc.memory.kv_capacity` with the lesson's vLLM settings.

    >>> t = request_timeline_s(prompt_tokens=1024, answer_tokens=2)
    >>> t["decode_steps"], t["prefill"]["bound"], t["decode_first"]["bound"]
    (1, 'compute', 'memory')
    >>> t["decode_first"]["context_tokens"], t["decode_s"] == t["decode_first"]["time_s"]
    (1025, True)
    >>> request_timeline_s(prompt_tokens=500_000)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: prompt_tokens must be a whole number between 1 and 131072; got 500000
    """
    model_obj, gpu_obj = get_model(model), get_gpu(gpu)
    prompt = check_range("prompt_tokens", prompt_tokens, 1, MAX_PROMPT_TOKENS, integer=True)
    answer = check_range("answer_tokens", answer_tokens, 1, MAX_ANSWER_TOKENS, integer=True)
    tp = memory.check_tp(model_obj, tp)
    capacity = _fit(model_obj, gpu_obj, tp, weights)
    held = memory.kv_tokens_per_request(model_obj, prompt + answer)
    if held > capacity.kv_cache_tokens:
        raise CalcError(
            f"prompt_tokens + answer_tokens = {prompt + answer:,} tokens need more KV cache than this replica holds "
            f"({capacity.kv_cache_tokens:,} tokens); allowed: at most {capacity.kv_cache_tokens:,} together, "
            f"or more GPUs", "prompt_tokens")
    coefficients = roofline.step_coefficients(model_obj, gpu_obj, tp=tp, weights=weights, kv_dtype=KV_DTYPE)
    prefill = roofline.prefill_chunk(coefficients, chunk_tokens=prompt)
    ttft = roofline.ttft_s(coefficients, prompt_tokens=prompt)
    # Answer token k + 1 comes from a decode step over prompt + k tokens, k = 1 .. answer - 1.
    runs = decode_runs(coefficients, prompt + 1, prompt + answer - 1) if answer > 1 else []
    decode = _runs_sum_s(runs, prompt + answer - 1)
    decode_first = roofline.decode_step(coefficients, batch=1, context_tokens=prompt + 1) if answer > 1 else None
    decode_last = roofline.decode_step(coefficients, batch=1, context_tokens=prompt + answer - 1) if answer > 1 else None
    return {
        "model": model_obj, "gpu": gpu_obj, "tp": tp, "weights": weights,
        "prompt_tokens": prompt, "answer_tokens": answer, "decode_steps": answer - 1,
        "ttft_s": ttft, "decode_s": decode, "itl_mean_s": decode / (answer - 1) if answer > 1 else 0.0,
        "e2e_s": ttft + decode, "runs": runs,
        "prefill": prefill, "decode_first": decode_first, "decode_last": decode_last,
        "capacity": capacity, "kv_held_bytes": memory.kv_bytes_per_request(model_obj, prompt + answer, KV_DTYPE),
    }


def decode_runs(coefficients: roofline.StepCoefficients, first_context: int,
                last_context: int) -> list[tuple[int, int, float, float]]:
    """Decode steps of one sequence at contexts ``first .. last``, as runs on which a step's time is linear.

    Each run is ``(first context, last context, its step time, last step time)``.
    At batch 1 a decode step (:meth:`calc.roofline.StepCoefficients.breakdown`) is
    the weights' GEMMs, the all-reduces and the overhead, all fixed, plus
    attention: the larger of its FLOPs and its KV read, both linear in the
    attended context, which stops growing at a sliding window. So the time is
    linear between at most two break points: the window, and the context where
    attention turns from bandwidth- to compute-bound (found by bisection).
    Each run's steps sum to ``count x (first + last) / 2`` exactly, whatever
    their number: the price of a 32K-token answer is a handful of roofline calls.

    >>> c = roofline.step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> [(a, b, round(fa * 1000, 3), round(fb * 1000, 3)) for a, b, fa, fb in decode_runs(c, 1025, 1279)]
    [(1025, 1279, 15.291, 15.299)]
    >>> m = roofline.step_coefficients("mistral-7b", "h100-sxm-80gb")
    >>> [(a, b) for a, b, _, _ in decode_runs(m, 4000, 5000)]  # the window of 4,096 flattens the rest
    [(4000, 4096), (4097, 5000)]
    """
    first = check_range("first_context", first_context, 1, roofline.MAX_TOKENS, integer=True)
    last = check_range("last_context", last_context, first, roofline.MAX_TOKENS, integer=True)
    window = get_model(coefficients.model_key).sliding_window
    spans = [(first, last)]
    if window and first <= window < last:
        spans = [(first, window), (window + 1, last)]
    runs = []
    for a, b in spans:
        step_a, step_b = _decode(coefficients, a), _decode(coefficients, b)
        if _compute_held(step_a) != _compute_held(step_b):
            # The one switch of attention's roof inside: the last context on step_a's side.
            low, high = a, b
            while high - low > 1:
                mid = (low + high) // 2
                if _compute_held(_decode(coefficients, mid)) == _compute_held(step_a):
                    low = mid
                else:
                    high = mid
            runs.append((a, low, step_a["time_s"], _decode(coefficients, low)["time_s"]))
            a, step_a = high, _decode(coefficients, high)
        runs.append((a, b, step_a["time_s"], step_b["time_s"]))
    return runs


def _decode(coefficients, context: int) -> dict:
    return roofline.decode_step(coefficients, batch=1, context_tokens=context)


def _compute_held(step: dict) -> bool:
    """Attention on its compute roof (its time is not the KV read's)."""
    return step["attention_s"] != step["kv_s"]


def _runs_sum_s(runs: list[tuple[int, int, float, float]], last_context: int) -> float:
    """Seconds of the decode steps in ``runs`` up to and including ``last_context``: sums of linear runs."""
    parts = []
    for a, b, fa, fb in runs:
        if last_context < a:
            break
        c = min(b, last_context)
        fc = fb if c == b else fa + (fb - fa) * (c - a) / (b - a)
        parts.append((c - a + 1) * (fa + fc) / 2)
    return math.fsum(parts)


def elapsed_s(t: dict, tokens_out: int) -> float:
    """Seconds from arrival until answer token ``tokens_out`` is out (0 for none): TTFT plus the decode steps before.

    >>> t = request_timeline_s(answer_tokens=3)
    >>> elapsed_s(t, 0), elapsed_s(t, 1) == t["ttft_s"], elapsed_s(t, 3) == t["e2e_s"]
    (0.0, True, True)
    """
    tokens_out = check_range("tokens_out", tokens_out, 0, t["answer_tokens"], integer=True)
    if tokens_out == 0:
        return 0.0
    if tokens_out == t["answer_tokens"]:
        return t["e2e_s"]
    return t["ttft_s"] + _runs_sum_s(t["runs"], t["prompt_tokens"] + tokens_out - 1)
