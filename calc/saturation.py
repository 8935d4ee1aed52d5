"""One replica at twice the traffic (step 6): the roofline's points, what batching buys, and the demand it meets.

The roofline model (Williams, Waterman and Patterson, "Roofline: an insightful visual performance model",
CACM 52(4), 2009, https://doi.org/10.1145/1498765.1498785, section 2): a kernel of arithmetic intensity ``I``
FLOPs per byte runs at ``min(peak FLOP/s, I x bandwidth)``; the ridge ``peak FLOP/s / bandwidth`` is the
intensity where the two meet. A decode step reads every weight once whatever the batch
(:mod:`calc.roofline`), so one request's step is the weights' read and a batch shares it.

>>> from calc.lesson import replica_coefficients
>>> round(roofline_points(replica_coefficients())["ridge_flops_per_byte"])
295
"""

from __future__ import annotations

from calc.errors import check_positive, check_range
from calc.roofline import CALIBRATED

__all__ = ["roofline_points", "weights_read_s", "batching_gain", "steady_mix", "batch_kv", "traffic_demand"]


def roofline_points(coef, efficiency=CALIBRATED) -> dict:
    """The replica's ridge at peak and at the achieved figures (``efficiency``: calibrated compute and memory
    shares of the datasheet), and the floor of one decode step: the weights read once at the achieved bandwidth,
    which caps one request's tokens per second.

    >>> from calc.lesson import replica_coefficients
    >>> p = roofline_points(replica_coefficients())
    >>> round(p["achieved_ridge_flops_per_byte"]), round(p["weights_floor_s"] * 1000, 1), round(p["max_tokens_per_s_per_request"])
    (198, 13.6, 73)
    """
    achieved = coef.hbm_bytes_per_s * efficiency.memory
    weights = coef.weight_bytes_read(1)
    floor_s = weights / achieved
    return {"ridge_flops_per_byte": coef.linear_flops_per_s / coef.hbm_bytes_per_s,
            "achieved_bytes_per_s": achieved,
            "achieved_ridge_flops_per_byte": coef.linear_flops_per_s * efficiency.compute / achieved,
            "weights_read_bytes": weights, "weights_floor_s": floor_s,
            "max_tokens_per_s_per_request": 1 / floor_s}


def weights_read_s(weights_bytes: float, bytes_per_s: float) -> float:
    """The floor of one decode step: each GPU reads its share of the weights once at ``bytes_per_s`` (the
    roofline's memory bound, section 2 of Williams et al.).

    >>> weights_read_s(35.3e9, 3.35e12)
    0.01053731343283582
    """
    return weights_bytes / check_positive("bytes_per_s", bytes_per_s)


def batching_gain(one_step_s: float, batch_step_s: float, batch: int) -> float:
    """Tokens per second of a decode step of ``batch`` sequences over those of a step of one.

    >>> batching_gain(0.014, 0.028, 256)
    128.0
    """
    check_positive("one_step_s", one_step_s)
    check_positive("batch_step_s", batch_step_s)
    return (batch / batch_step_s) / (1 / one_step_s)


def steady_mix(*, batch: int, prompt_tokens: int, answer_tokens: int, step_s: float) -> dict:
    """A saturated replica in steady state: each step finishes ``batch / answer`` requests on average and
    so admits as many, whose prompts add ``batch x prompt / answer`` tokens of prefill to the step; the output
    is ``batch`` tokens per step.

    >>> steady_mix(batch=256, prompt_tokens=1024, answer_tokens=256, step_s=0.1)
    {'prefill_tokens_per_step': 1024.0, 'finishing_per_step': 1.0, 'prompt_over_answer': 4.0, 'tokens_per_s': 2560.0}
    """
    batch = check_range("batch", batch, 1, 10**7, integer=True)
    answer_tokens = check_range("answer_tokens", answer_tokens, 1, 10**8, integer=True)
    check_positive("step_s", step_s)
    return {"prefill_tokens_per_step": batch * prompt_tokens / answer_tokens,
            "finishing_per_step": batch / answer_tokens,
            "prompt_over_answer": prompt_tokens / answer_tokens,
            "tokens_per_s": batch / step_s}


def batch_kv(coef, *, batch: int, context_tokens: int) -> dict:
    """The KV cache a decode step of ``batch`` sequences of ``context_tokens`` each reads (per GPU, from the
    coefficients' ``kv_bytes_per_token``), and the tokens it holds.

    >>> from calc.lesson import replica_coefficients
    >>> kv = batch_kv(replica_coefficients(), batch=256, context_tokens=1152)
    >>> round(kv["per_sequence_bytes"] / 1e6, 1), round(kv["batch_bytes"] / 1e9, 1), kv["batch_tokens"]
    (94.4, 24.2, 294912)
    """
    per_sequence = context_tokens * coef.kv_bytes_per_token
    return {"per_sequence_bytes": per_sequence, "batch_bytes": per_sequence * batch,
            "batch_tokens": context_tokens * batch}


def traffic_demand(*, rate_per_s: float, answer_tokens: int, served_requests_per_s: float) -> dict:
    """The output tokens per second a request rate asks for, and the requests per second a replica serving
    ``served_requests_per_s`` leaves to pile up in its queue.

    >>> traffic_demand(rate_per_s=12, answer_tokens=256, served_requests_per_s=9.5)
    {'needed_tokens_per_s': 3072, 'overflow_per_s': 2.5}
    """
    return {"needed_tokens_per_s": rate_per_s * answer_tokens, "overflow_per_s": rate_per_s - served_requests_per_s}
