"""Mixture-of-experts steps: which expert weights a step reads, under tensor or expert parallelism.

A mixture-of-experts layer sends each token to ``top_k`` of its ``E`` routed experts (plus any shared
experts, which every token uses and which are read like a dense MLP). A step of ``B`` tokens reads
only the experts its tokens route to: with uniform routing, an expert is missed by one token with
probability ``1 - k/E`` (the token picks ``k`` distinct experts), so ``B`` tokens touch
``E (1 - (1 - k/E)**B)`` experts on average (:func:`expected_distinct_experts`): one decode token of
DeepSeek-V3 (8 of 256) reads 8 experts a layer, a batch of 64 about 222, a prefill chunk all 256.

How the experts are split sets what one GPU reads:

* tensor parallelism (vLLM's default for MoE): every GPU holds ``1/tp`` of every expert, so each reads
  ``1/tp`` of the touched experts' bytes, evenly;
* expert parallelism (vLLM ``--enable-expert-parallel``, SGLang ``--ep-size``): each GPU holds
  ``E/ep`` whole experts, and the step waits for the GPU whose tokens touched most of its own
  experts: :func:`expected_max_local_experts`, the expected maximum over the ``ep`` GPUs (each local
  expert touched independently with the probability above, the count per GPU binomial). At small
  batches that maximum is several times the mean, so expert parallelism reads more per step than
  tensor parallelism; at large batches every GPU touches all its experts and the two meet.

Inside one tensor-parallel group both combine the experts' outputs with the same all-reduce after the
MoE layer (vllm/model_executor/layers/fused_moe/layer.py, ``FusedMoE.forward``: ``if self.reduce_results
and (self.tp_size > 1 or self.ep_size > 1): tensor_model_parallel_all_reduce``), which the roofline
prices already. Not modelled, refused by name (:func:`check_moe_parallelism`): data-parallel attention
(SGLang ``--enable-dp-attention``, vLLM's data-parallel deployment with expert parallelism), whose
tokens travel by all-to-all dispatch and combine instead.

Routing is assumed uniform; real routers are skewed, which touches fewer distinct experts but loads the
busiest GPU of an expert-parallel group more. Sources: the expectation of distinct draws; DeepSeek-V3
technical report (arXiv 2412.19437, section 2.1.2: 256 routed experts, 8 activated, 1 shared).

>>> round(expected_distinct_experts(64, 256, 8), 1)
222.4
"""

from __future__ import annotations

import math

from calc.errors import CalcError, check_range

__all__ = ["expected_distinct_experts", "touched_share", "expected_max_local_experts", "check_moe_parallelism",
           "NOT_MODELLED"]

#: Parallel layouts calc refuses to price, with why.
NOT_MODELLED = {
    "dp_attention": ("data-parallel attention (SGLang --enable-dp-attention, vLLM data parallelism with expert "
                     "parallelism) dispatches tokens to experts with all-to-all and runs attention without tensor "
                     "parallelism; calc prices tensor-parallel attention with one all-reduce after each layer only"),
}


def touched_share(tokens: int, experts: int, top_k: int) -> float:
    """Probability that one routed expert is used by at least one of ``tokens`` tokens: ``1 - (1 - k/E)**B``.

    >>> touched_share(1, 256, 8), touched_share(0, 256, 8)
    (0.03125, 0.0)
    """
    b = check_range("tokens", tokens, 0, 10**12, integer=True)
    e = check_range("experts", experts, 1, 1 << 20, integer=True)
    k = check_range("top_k", top_k, 1, e, integer=True)
    return 1.0 - (1.0 - k / e) ** b


def expected_distinct_experts(tokens: int, experts: int, top_k: int) -> float:
    """Expected distinct routed experts ``tokens`` tokens use in one layer: ``E (1 - (1 - k/E)**B)``.

    >>> expected_distinct_experts(1, 8, 2), expected_distinct_experts(2, 4, 2)
    (2.0, 3.0)
    """
    return experts * touched_share(tokens, experts, top_k)


def expected_max_local_experts(tokens: int, experts: int, top_k: int, gpus: int) -> float:
    """Expected largest number of its own experts any of ``gpus`` expert-parallel GPUs must read in a layer.

    Each GPU holds ``E / gpus`` experts, each touched with probability :func:`touched_share`; the count per
    GPU is binomial, and ``E[max] = sum over m >= 1 of (1 - F(m - 1)**gpus)`` with ``F`` its distribution
    function (GPUs taken as independent). One GPU: the plain expectation.

    >>> round(expected_max_local_experts(1, 256, 8, 8), 2), round(expected_distinct_experts(1, 256, 8) / 8, 2)
    (2.54, 1.0)
    >>> round(expected_max_local_experts(4096, 256, 8, 8), 2)
    32.0
    >>> expected_max_local_experts(1, 256, 8, 3)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: gpus must divide the 256 experts for expert parallelism; got 3
    """
    n = check_range("gpus", gpus, 1, 1 << 16, integer=True)
    if experts % n:
        raise CalcError(f"gpus must divide the {experts} experts for expert parallelism; got {n}", "gpus")
    p = touched_share(tokens, experts, top_k)
    local = experts // n
    if n == 1 or p in (0.0, 1.0):
        return local * p
    pmf = [math.comb(local, m) * p ** m * (1 - p) ** (local - m) for m in range(local + 1)]
    cdf, total = 0.0, []
    for m in range(local + 1):
        cdf += pmf[m]
        total.append(min(cdf, 1.0))
    return math.fsum(1.0 - (total[m - 1] ** n) for m in range(1, local + 1))


def check_moe_parallelism(model, *, tp: int, expert_parallel: bool = False, dp_attention: bool = False) -> None:
    """Refuse, by name, what calc does not price: expert parallelism of a dense model, DP attention.

    >>> check_moe_parallelism("deepseek-v3", tp=8, expert_parallel=True)
    >>> check_moe_parallelism("llama-3.1-70b", tp=4, expert_parallel=True)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: expert_parallel needs a mixture-of-experts model; Llama 3.1 70B has no routed experts
    >>> check_moe_parallelism("deepseek-v3", tp=8, dp_attention=True)  # doctest: +ELLIPSIS
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: not modelled: data-parallel attention ...
    """
    from calc.catalog import get_model

    m = get_model(model)
    if not isinstance(expert_parallel, bool):
        raise CalcError(f"expert_parallel must be true or false; got {expert_parallel!r}", "expert_parallel")
    if dp_attention:
        raise CalcError(f"not modelled: {NOT_MODELLED['dp_attention']}", "dp_attention")
    if expert_parallel and not m.is_moe:
        raise CalcError(f"expert_parallel needs a mixture-of-experts model; {m.name} has no routed experts",
                        "expert_parallel")
    if expert_parallel and m.experts % tp:
        raise CalcError(f"tp must divide the {m.experts} experts of {m.name} for expert parallelism; got {tp}", "tp")
