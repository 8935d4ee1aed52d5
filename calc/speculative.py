"""Speculative decoding: how many tokens one target step yields, and what that is worth.

A small draft proposes ``k`` tokens; the target model checks all of them in one
forward pass and keeps the longest accepted run plus one token of its own. The
output distribution is exactly the target's (Leviathan et al. 2023, "Fast
Inference from Transformers via Speculative Decoding", ICML; Chen et al. 2023, "Accelerating Large Language Model Decoding with
Speculative Sampling").

The gain exists because a decode step is memory-bound: checking ``k + 1`` tokens
costs about as much as producing one, as long as the tensor cores have room. Once
the batch keeps them busy, the verify step costs as much as computing every
checked token, and every rejected guess is pure waste. :func:`speedup_at_batch` prices both regimes
with the roofline of :mod:`calc.roofline`; :func:`break_even_batch` finds the batch
where speculation stops paying.

>>> round(expected_tokens_per_step(0.8, 4), 4)
3.3616
>>> round(speedup(0.8, 4, 0.05), 3)
2.801
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc.catalog import get_model
from calc.errors import CalcError, check_range
from calc.roofline import decode_step, smallest_batch_where

__all__ = [
    "MAX_DRAFT_TOKENS",
    "best_k",
    "draft_cost_ratio",
    "emitted_distribution",
    "expected_tokens_per_step",
    "speedup",
    "speedup_when_compute_bound",
    "SpeculationConfig",
    "EAGLE_LIKE",
    "speedup_at_batch",
    "speedup_curve",
    "break_even_batch",
]

MAX_DRAFT_TOKENS = 64
MAX_BATCH = 1_000_000


def _check_acceptance(acceptance: float) -> float:
    return check_range("acceptance", acceptance, 0.0, 1.0)


def _check_k(k: int) -> int:
    return check_range("k", k, 1, MAX_DRAFT_TOKENS, integer=True)


def _check_cost_ratio(cost_ratio: float) -> float:
    return check_range("draft_cost_ratio", cost_ratio, 0.0, 10.0)


def expected_tokens_per_step(acceptance: float, k: int) -> float:
    """Expected tokens produced by one target step: ``(1 - a**(k+1)) / (1 - a)``.

    ``acceptance`` is the probability ``a`` that the target accepts a drafted
    token (assumed independent per position), ``k`` the number of drafted tokens.
    At ``a = 1`` every guess is kept and the step yields ``k + 1`` tokens; at
    ``a = 0`` it yields the target's own single token.
    Source: Leviathan et al. 2023, Eq. 1.

    >>> expected_tokens_per_step(0.0, 4)
    1.0
    >>> round(expected_tokens_per_step(0.7, 3), 4)
    2.533
    >>> expected_tokens_per_step(1.0, 5)
    6.0
    """
    a = _check_acceptance(acceptance)
    k = _check_k(k)
    if a == 1.0:
        return float(k + 1)
    return (1.0 - a ** (k + 1)) / (1.0 - a)


def speedup(acceptance: float, k: int, draft_cost_ratio: float) -> float:
    """Wall-time speed-up when the verify step costs what a plain step costs.

    ``(1 - a**(k+1)) / ((1 - a) (k c + 1))`` with ``c`` = time of one draft step
    over time of one target step. This is the memory-bound case: checking
    ``k + 1`` tokens is as cheap as producing one.
    Source: Leviathan et al. 2023 (the expected walltime improvement factor).

    >>> round(speedup(0.8, 4, 0.05), 3)
    2.801
    >>> speedup(0.0, 4, 0.1) < 1  # nothing accepted: the draft is pure cost
    True
    """
    c = _check_cost_ratio(draft_cost_ratio)
    k = _check_k(k)
    return expected_tokens_per_step(acceptance, k) / (k * c + 1.0)


def speedup_when_compute_bound(acceptance: float, k: int, draft_cost_ratio: float, verify_tokens: int | None = None) -> float:
    """Speed-up when the verify step costs what computing all its tokens one by one would (a compute-bound step).

    A verify step checks ``verify_tokens`` positions per sequence (``k + 1`` for a
    chain of ``k`` drafted tokens; more for a tree of candidates). Once the step
    is compute-bound each position costs full price, so the step's yield
    ``(1 - a**(k+1)) / (1 - a)`` is divided by ``verify_tokens + k c``. The yield is
    at most ``k + 1 <= verify_tokens``, so this is below 1 whenever ``a < 1`` or
    ``c > 0``. Source: the walltime accounting of Leviathan et al. 2023, with
    the verify cost proportional to the tokens checked (the roofline's compute roof).

    >>> round(speedup_when_compute_bound(0.8, 4, 0.05), 3)
    0.646
    >>> round(speedup_when_compute_bound(0.75, 3, 0.32, verify_tokens=16), 3)
    0.161
    """
    c = _check_cost_ratio(draft_cost_ratio)
    k = _check_k(k)
    verify = _check_verify(verify_tokens, k)
    return expected_tokens_per_step(acceptance, k) / (verify + k * c)


def _check_verify(verify_tokens: int | None, k: int) -> int:
    if verify_tokens is None:
        return k + 1
    return check_range("verify_tokens", verify_tokens, k + 1, 1024, integer=True)


@dataclass(frozen=True)
class SpeculationConfig:
    """A speculation set-up: acceptance per drafted position, draft depth, draft cost, verify width.

    ``acceptance`` is the probability that a drafted position is accepted (for a
    tree of candidates, the effective rate per depth); ``k`` the draft depth
    (draft steps per verify step); ``draft_cost_ratio`` the time of one draft step
    over one plain target step at the same batch; ``verify_tokens`` the positions
    the target checks per sequence (``k + 1`` for a chain, the tree's size for a
    tree). ``source`` says where the numbers come from.

    >>> SpeculationConfig(0.7, 4, 0.1, "example").verify_tokens
    5
    """

    acceptance: float
    k: int
    draft_cost_ratio: float
    source: str
    verify_tokens: int | None = None

    def __post_init__(self):
        _check_acceptance(self.acceptance)
        _check_k(self.k)
        _check_cost_ratio(self.draft_cost_ratio)
        object.__setattr__(self, "verify_tokens", _check_verify(self.verify_tokens, self.k))

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per verify step (Leviathan et al. 2023, Eq. 1).

        >>> round(EAGLE_LIKE.tokens_per_step, 2)
        2.73
        """
        return expected_tokens_per_step(self.acceptance, self.k)


# EAGLE-like speculation on Llama 3.1 8B served by SGLang on one H100. The draft
# shape is SGLang's documented EAGLE example: 3 draft steps, top-4 branching, 16
# candidate tokens verified per sequence (docs.sglang.io, "Speculative Decoding":
# --speculative-num-steps 3 --speculative-eagle-topk 4 --speculative-num-draft-tokens 16).
# Acceptance 0.75 per depth gives 2.73 tokens per verify step, in the range of
# acceptance lengths the EAGLE papers report (Li et al. 2024, "EAGLE", ICML).
# The draft cost ratio 0.32 is set so that the small-batch speed-up is the
# published 1.40x at batch 2 (Li et al. 2025, "EAGLE-3", arXiv 2503.01840, SGLang
# on one H100); the batch where the gain falls below 1x is then a prediction of
# the roofline, checked against the published figure (below 1x from batch 24),
# never fitted to it.
EAGLE_LIKE = SpeculationConfig(
    acceptance=0.75,
    k=3,
    draft_cost_ratio=0.32,
    verify_tokens=16,
    source="SGLang EAGLE example (3 steps, top-4, 16 draft tokens); acceptance 0.75 per depth; draft cost "
    "set to give the published 1.40x at batch 2 (EAGLE-3 paper, SGLang, 1x H100, Llama 3.1 8B)",
)


def speedup_at_batch(coefficients, *, batch: int, context_tokens: int, config: SpeculationConfig = EAGLE_LIKE) -> dict:
    """Speed-up of speculation for one decode batch, priced on the roofline.

    ``coefficients`` is a :class:`calc.roofline.StepCoefficients`. A plain decode
    step computes ``batch`` tokens; a verify step computes ``batch x verify_tokens``
    tokens against the same KV; each draft step costs ``draft_cost_ratio`` plain
    steps. Speed-up = tokens per verify step x plain step time / (verify time +
    k x draft time). While the step is memory-bound this approaches
    :func:`speedup`; once it is compute-bound it approaches
    :func:`speedup_when_compute_bound`.
    Source: the walltime accounting of Leviathan et al. 2023, with step times from the roofline.

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
    >>> round(speedup_at_batch(coef, batch=2, context_tokens=512)["speedup"], 2)
    1.39
    >>> round(speedup_at_batch(coef, batch=64, context_tokens=512)["speedup"], 2)
    0.52
    """
    batch = check_range("batch", batch, 1, MAX_BATCH, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    k, v = config.k, config.verify_tokens
    window = get_model(coefficients.model_key).sliding_window
    if window:
        context_tokens = min(context_tokens, window)  # a sliding-window model reads and attends to its window only
    plain = coefficients.step_time_s(
        new_tokens=batch,
        kv_tokens_read=batch * context_tokens,
        attention_token_pairs=batch * context_tokens,
    )
    # The v candidates sit after the context; each attends to the context and to the candidates before it.
    verify = coefficients.step_time_s(
        new_tokens=batch * v,
        kv_tokens_read=batch * (context_tokens + v - 1),
        attention_token_pairs=batch * (v * context_tokens + v * (v - 1) // 2),
    )
    draft = config.draft_cost_ratio * plain
    tokens = config.tokens_per_step
    cycle_s = verify + k * draft
    return {
        "batch": batch,
        "context_tokens": context_tokens,
        "plain_step_s": plain,
        "verify_step_s": verify,
        "draft_steps_s": k * draft,
        "tokens_per_verify_step": tokens,
        "plain_tokens_per_s": batch / plain,
        "speculative_tokens_per_s": batch * tokens / cycle_s,
        "speedup": tokens * plain / cycle_s,
    }


def speedup_curve(coefficients, *, batches, context_tokens: int, config: SpeculationConfig = EAGLE_LIKE) -> list[dict]:
    """:func:`speedup_at_batch` for each batch in ``batches`` (a chart's points).

    Source: as :func:`speedup_at_batch`.

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
    >>> [row["batch"] for row in speedup_curve(coef, batches=[1, 8, 64], context_tokens=512)]
    [1, 8, 64]
    """
    batches = list(batches)
    if not batches:
        raise CalcError("batches must hold at least one batch size; got none", "batches")
    return [speedup_at_batch(coefficients, batch=b, context_tokens=context_tokens, config=config) for b in batches]


def break_even_batch(coefficients, *, context_tokens: int, config: SpeculationConfig = EAGLE_LIKE, max_batch: int = 4096):
    """The smallest batch at which speculation no longer pays (speed-up below 1x).

    Returns ``None`` if the speed-up stays at or above 1 up to ``max_batch``
    (long contexts, whose KV reads keep the step memory-bound, can do that).
    A bisection over the batch: the speed-up falls as the batch grows, because
    the verify step's extra tokens cost more and more as the step turns
    compute-bound.
    Source: Leviathan et al. 2023 (speed-up accounting) on :mod:`calc.roofline`;
    published for comparison: EAGLE below 1x from batch 24 on one H100 with
    Llama 3.1 8B (Li et al. 2025, EAGLE-3, SGLang).

    >>> from calc.catalog import get_model, get_gpu
    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
    >>> break_even_batch(coef, context_tokens=512)
    23
    """
    max_batch = check_range("max_batch", max_batch, 1, MAX_BATCH, integer=True)

    def below_one(b: int) -> bool:
        return speedup_at_batch(coefficients, batch=b, context_tokens=context_tokens, config=config)["speedup"] < 1.0

    return smallest_batch_where(below_one, max_batch)


# --- choosing the draft: its cost, its length, and why the output is the target's -----------------------

#: The longest draft :func:`best_k` considers (vLLM's ``num_speculative_tokens`` is rarely set above this).
MAX_DRAFT_TOKENS = 16


def best_k(acceptance: float, cost_ratio: float, max_k: int = MAX_DRAFT_TOKENS) -> int:
    """The draft length that maximises :func:`speedup` (the memory-bound speed-up); the shorter one on a tie.

    Leviathan et al. 2023, section 3.3: the walltime improvement
    ``(1 - a**(k+1)) / ((1 - a)(k c + 1))`` has one best ``k`` for each
    acceptance ``a`` and draft cost ratio ``c``.

    >>> best_k(0.7, 0.064), best_k(0.9, 0.064), best_k(0.5, 0.39)
    (5, 12, 1)
    >>> best_k(0.7, 0.064, max_k=0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: max_k must be a whole number between 1 and 64; got 0
    """
    max_k = check_range("max_k", max_k, 1, 64, integer=True)
    return max(range(1, max_k + 1), key=lambda k: (speedup(acceptance, k, cost_ratio), -k))


def draft_cost_ratio(draft_coefficients, target_coefficients, *, batch: int = 1, context_tokens: int) -> float:
    """``c``: one decode step of the draft over one of the target, both priced on the roofline.

    Source: :func:`calc.roofline.decode_step` for both (the ``c`` of Leviathan
    et al. 2023, section 3.3).

    >>> from calc.roofline import step_coefficients
    >>> draft = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> target = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> round(draft_cost_ratio(draft, target, context_tokens=1152), 2)
    0.39
    """
    d = decode_step(draft_coefficients, batch=batch, context_tokens=context_tokens)["time_s"]
    t = decode_step(target_coefficients, batch=batch, context_tokens=context_tokens)["time_s"]
    return d / t


def emitted_distribution(target_p, draft_q) -> list[float]:
    """What speculative sampling emits for one position: ``min(p, q) + (1 - a) * max(0, p - q) / sum(max(0, p - q))``.

    A draft token ``x ~ q`` is kept with probability ``min(1, p(x) / q(x))``, which
    contributes ``min(p(x), q(x))``; a rejection (probability ``1 - a``, with
    ``a = sum(min(p, q))``) resamples from the leftover ``max(0, p - q)``. The sum
    is ``p``: the output distribution is the target's. Source: Leviathan et al. 2023,
    Theorem 3.5 and Definition 3.2 (``a = sum min(p, q)``).

    >>> [round(x, 10) for x in emitted_distribution([0.5, 0.3, 0.2], [0.2, 0.3, 0.5])]
    [0.5, 0.3, 0.2]
    """
    kept = [min(p, q) for p, q in zip(target_p, draft_q)]
    acceptance = math.fsum(kept)
    leftover = [max(0.0, p - q) for p, q in zip(target_p, draft_q)]
    total = math.fsum(leftover)
    if total <= 0:  # the draft is the target: every token is kept
        return list(kept)
    return [k_ + (1 - acceptance) * r / total for k_, r in zip(kept, leftover)]
