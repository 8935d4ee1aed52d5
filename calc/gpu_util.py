"""What GPU-Util reads for a serving replica, against the compute it really uses.

GPU-Util, as ``nvidia-smi`` and DCGM report it, is the share of time at least
one kernel runs (NVML ``nvmlUtilization_t.gpu``: "percent of time over the past
sample period during which one or more kernels was executing"). An LLM server
runs a decode step whenever any request is in flight, so GPU-Util measures the
chance that the replica is not empty, not how much more work it could take:

    requests in flight  L = arrival rate x time a request stays (TTFT + answer x ITL)
    GPU-Util           ~= 1 - exp(-L)        (Poisson arrivals, no queue: M/G/infinity)
    compute use         = arrival rate x FLOPs per request / peak FLOP/s

For the running example (:mod:`calc.lesson`), priced as the simulator prices it (the
roofline plus the default engine's step terms), a 1,024 + 256-token request stays
about 5 s, so two requests a second keep ten in flight and GPU-Util reads
100 %, while the tensor cores do a few per cent of what they could:

>>> r = gpu_util_at_rate(2.0)
>>> round(r["gpu_util"] * 100, 2), round(r["compute_utilization"] * 100, 1), round(r["in_flight"], 1)
(100.0, 9.1, 10.8)

Sources: NVML's ``nvmlUtilization_t`` (NVIDIA, NVML API reference); Little's
law (Little, Operations Research 1961); the M/G/infinity queue (Kleinrock,
*Queueing Systems* vol. 1, 1975); step times from :mod:`calc.roofline` with the
engine's terms (:mod:`calc.engine_profiles`).
"""

from __future__ import annotations

import functools
import math

from calc import lesson
from calc.errors import check_range
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.roofline import itl_s, max_throughput, prefill_attention_pairs, ttft_s

__all__ = ["gpu_util_at_rate", "rate_for_gpu_util", "replica_capacity_rps", "MAX_NUM_SEQS"]

#: The engine's running-request cap, as in the simulator: vLLM's V0 default ``max_num_seqs`` (V1: 1,024 on H100-class GPUs).
MAX_NUM_SEQS = 256
_ITERATIONS = 60  # the fixed point in-flight <-> ITL settles in a handful; this is a hard stop


def _lengths(prompt_tokens: int, answer_tokens: int) -> tuple[int, int]:
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 100_000, integer=True)
    answer = check_range("answer_tokens", answer_tokens, 1, 32_000, integer=True)
    return prompt, answer


def _stay_pricer(coef, prompt: int, answer: int):
    """Seconds one request stays in the replica, as a function of the number in flight decoding beside it.

    The prefill is priced once and each decode batch once: the fixed point below revisits the same few.
    """
    ttft = ttft_s(coef, prompt_tokens=prompt)
    stays: dict[int, float] = {}

    def stay_s(in_flight: float) -> float:
        batch = max(1, round(in_flight))
        if batch not in stays:
            stays[batch] = ttft + (answer - 1) * itl_s(coef, batch=batch, context_tokens=prompt + answer // 2)
        return stays[batch]

    return stay_s


def _stay_s(coef, prompt: int, answer: int, in_flight: float) -> float:
    """Seconds one request stays in the replica with ``in_flight`` others decoding beside it."""
    return _stay_pricer(coef, prompt, answer)(in_flight)


@functools.lru_cache(maxsize=256)
def replica_capacity_rps(prompt_tokens: int = PROMPT_TOKENS, answer_tokens: int = ANSWER_TOKENS) -> float:
    """Requests per second the running example's replica completes when flooded: its saturation point.

    Output tokens/s of :func:`calc.roofline.max_throughput` (prefill mixed into
    decode, at most 256 running, the replica's KV cache from step 1) divided by
    the answer length. Source: :mod:`calc.roofline`; the simulator's step 6
    preset saturates at the same rate.

    >>> round(replica_capacity_rps(), 2)
    7.29
    """
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    kv_tokens = lesson.KV_CAPACITY_TOKENS_LESSON_GB
    run = max_throughput(_simulated_coefficients(), input_tokens=prompt, output_tokens=answer,
                         kv_capacity_tokens=kv_tokens, max_running=MAX_NUM_SEQS)
    return run["output_tokens_per_s"] / answer


@functools.lru_cache(maxsize=1)
def _simulated_coefficients():
    """The running example's step prices as the simulator has them: the roofline plus the default engine's terms.

    The model predicts what the simulated replica's GPU-Util reads, so it prices steps the same way
    (:func:`calc.engine_profiles.engine_coefficients`).
    """
    from calc.engine_profiles import engine_coefficients

    return engine_coefficients(lesson.MODEL, lesson.GPU, tp=lesson.TP, weights=lesson.WEIGHTS, kv_dtype=lesson.KV_DTYPE)


def gpu_util_at_rate(rate_per_s: float, *, prompt_tokens: int = PROMPT_TOKENS,
                     answer_tokens: int = ANSWER_TOKENS) -> dict:
    """What GPU-Util reads, and the compute really used, for one replica of the running example at ``rate_per_s``.

    ``in_flight = rate x stay`` (Little's law), with ``stay = TTFT + (answer - 1)
    x ITL`` at a batch of ``in_flight`` (a fixed point: more in flight, slower
    steps, longer stays). With Poisson arrivals and no queue the number in flight
    is Poisson (M/G/infinity), so the replica is empty ``exp(-in_flight)`` of the
    time and GPU-Util, the share of time a kernel runs, is ``1 - exp(-in_flight)``.
    Compute utilization is the FLOPs the requests need over the GPU's peak.
    At or beyond the replica's capacity a queue forms: GPU-Util is 1 and the
    compute used stops at what the capacity needs (``saturated`` is True).
    Sources: NVML ``nvmlUtilization_t.gpu`` ("percent of time over the past sample
    period during which one or more kernels was executing"); Little's law
    (Little, Operations Research 1961); the M/G/infinity queue (Kleinrock,
    *Queueing Systems* vol. 1, 1975); step times from :mod:`calc.roofline`. The
    simulator agrees within a few points (tests/widgets/test_scaling_on_gpu_util.py).

    >>> r = gpu_util_at_rate(0.1)
    >>> round(r["gpu_util"], 2), round(r["stay_s"], 2)
    (0.4, 5.04)
    >>> gpu_util_at_rate(50)["saturated"]
    True
    >>> gpu_util_at_rate(-1)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rate_per_s must be between 0.001 and 1000; got -1
    """
    rate = check_range("rate_per_s", rate_per_s, 0.001, 1000)
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    coef = _simulated_coefficients()
    capacity = replica_capacity_rps(prompt, answer)
    saturated = rate >= capacity
    served = min(rate, capacity)
    stay_s = _stay_pricer(coef, prompt, answer)
    in_flight = 0.0
    stay = stay_s(1)
    for _ in range(_ITERATIONS):
        stay = stay_s(in_flight)
        updated = served * stay
        if abs(updated - in_flight) < 1e-9:
            break
        in_flight = updated
    flops = coef.flops(new_tokens=prompt + answer, attention_token_pairs=prefill_attention_pairs(prompt + answer))
    return {
        "rate_per_s": rate,
        "capacity_rps": capacity,
        "load_fraction": rate / capacity,
        "stay_s": stay,
        "in_flight": in_flight,
        "gpu_util": 1.0 if saturated else 1.0 - math.exp(-in_flight),
        "compute_utilization": served * flops / coef.linear_flops_per_s,
        "saturated": saturated,
    }


def rate_for_gpu_util(gpu_util: float, *, prompt_tokens: int = PROMPT_TOKENS,
                      answer_tokens: int = ANSWER_TOKENS) -> float:
    """The arrival rate (requests/s) at which GPU-Util reads ``gpu_util`` on one replica of the running example.

    Inverts :func:`gpu_util_at_rate`: ``in_flight = -ln(1 - gpu_util)``, then
    ``rate = in_flight / stay`` at that batch.
    Source: as :func:`gpu_util_at_rate`.

    >>> round(rate_for_gpu_util(0.8), 3), round(rate_for_gpu_util(0.3), 3)
    (0.317, 0.071)
    """
    util = check_range("gpu_util", gpu_util, 0.0001, 0.9999)
    prompt, answer = _lengths(prompt_tokens, answer_tokens)
    in_flight = -math.log(1.0 - util)
    return in_flight / _stay_s(_simulated_coefficients(), prompt, answer, in_flight)
