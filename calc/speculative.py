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

import dataclasses
import functools
import math
from dataclasses import dataclass

from calc.catalog import get_model
from calc.errors import CalcError, check_choice, check_range
from calc.roofline import decode_step, smallest_batch_where, step_coefficients
from calc.units import bisect_increasing

__all__ = [
    "verify_tokens_in_batch",
    "tokens_ceiling",
    "max_tokens_per_step",
    "cycle_times",
    "MAX_DRAFT_TOKENS",
    "best_k",
    "draft_cost_ratio",
    "emitted_distribution",
    "expected_tokens_per_step",
    "speedup",
    "speedup_when_compute_bound",
    "SpeculationConfig",
    "DraftShape",
    "EAGLE_HEAD",
    "EAGLE3_HEAD",
    "LLAMA_3_2_1B_DRAFT",
    "DRAFT_SHAPES",
    "DRAFT_STEP_OVERHEAD_SHARE",
    "head_params",
    "draft_coefficients",
    "draft_phase_s",
    "EAGLE_LIKE",
    "EAGLE3_LIKE",
    "EAGLE_LIKE_COST_RATIO",
    "SEPARATE_DRAFT_LIKE",
    "METHODS",
    "method",
    "method_curve",
    "replica_coefficients",
    "break_even",
    "PUBLISHED_SETUP",
    "CALIBRATION_ROWS",
    "published_setup_coefficients",
    "fit_acceptance",
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


def tokens_ceiling(acceptance: float) -> float:
    """The most tokens a target step yields on average however long the draft: ``1 / (1 - a)``, the limit of
    :func:`expected_tokens_per_step` as ``k`` grows (Leviathan et al. 2023, Eq. 1, a geometric series).

    >>> round(tokens_ceiling(0.7), 4)
    3.3333
    """
    a = _check_acceptance(acceptance)
    if a == 1.0:
        raise CalcError("acceptance must be below 1 for a finite ceiling; got 1.0", "acceptance")
    return 1 / (1 - a)


def max_tokens_per_step(k: int) -> int:
    """The tokens a target step yields when it keeps every drafted token: the ``k`` drafts plus its own.

    >>> max_tokens_per_step(4)
    5
    """
    return _check_k(k) + 1


def cycle_times(target_step_s: float, draft_cost_ratio: float, k: int, speedup_factor: float) -> dict:
    """One speculation cycle in seconds: a draft step (``draft_cost_ratio`` x the target's step), the cycle
    (the target's verifying step plus ``k`` draft steps) and the time per token once speculation gives
    ``speedup_factor`` (Leviathan et al. 2023, section 3.4: the cost of a cycle).

    >>> cycle_times(0.02, 0.05, 4, 2.0)
    {'draft_step_s': 0.001, 'cycle_s': 0.024, 'per_token_s': 0.01}
    """
    draft_step = _check_cost_ratio(draft_cost_ratio) * target_step_s
    return {"draft_step_s": draft_step, "cycle_s": target_step_s + _check_k(k) * draft_step,
            "per_token_s": target_step_s / speedup_factor}


def verify_tokens_in_batch(config, batch: int) -> int:
    """The tokens one verifying step of ``batch`` sequences runs through the target: each sequence's
    ``verify_tokens`` (its drafts, or a tree's nodes, plus its own; Li et al. 2024, EAGLE, section 4).

    >>> verify_tokens_in_batch(EAGLE_LIKE, 64) == 64 * EAGLE_LIKE.verify_tokens
    True
    """
    return check_range("batch", batch, 1, 10**6, integer=True) * config.verify_tokens


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


# --- the draft's shape, and its cost on the same roofline as the target --------------------------------


@dataclass(frozen=True)
class DraftShape:
    """What drafts the tokens: a head on the target's own features, or a separate small model.

    ``kind`` is ``"head"`` (EAGLE, EAGLE-3: one decoder layer of the target's
    width plus an LM head, fed the target's hidden states) or ``"model"`` (a
    catalog model of its own, ``draft_model``, on ``draft_tp`` GPUs). For a head:
    ``feature_inputs`` is how many vectors of width ``hidden`` its input
    projection fuses into one (EAGLE: the token embedding and the top-layer
    feature, 2; EAGLE-3: low, mid and high-layer features, 3);
    ``attention_input_multiple`` the width of its attention's input in units of
    ``hidden`` (EAGLE-3's layer reads the embedding and the fused feature side by
    side, 2); ``draft_vocab_size`` the rows of its LM head (``None``: the
    target's vocabulary, shared). ``source`` says where the shape comes from.

    >>> EAGLE_HEAD.kind, EAGLE3_HEAD.feature_inputs, EAGLE3_HEAD.draft_vocab_size
    ('head', 3, 32000)
    """

    key: str
    name: str
    kind: str
    source: str
    feature_inputs: int = 2
    attention_input_multiple: int = 1
    draft_vocab_size: int | None = None
    draft_model: str | None = None
    draft_tp: int = 1

    def __post_init__(self):
        check_choice("kind", self.kind, ("head", "model"))
        if self.kind == "model":
            get_model(self.draft_model)  # a catalog key (raises CalcError naming the model otherwise)
        check_range("feature_inputs", self.feature_inputs, 1, 16, integer=True)
        check_range("attention_input_multiple", self.attention_input_multiple, 1, 16, integer=True)


EAGLE_HEAD = DraftShape(
    key="eagle", name="EAGLE head", kind="head", feature_inputs=2,
    source="Li et al. 2024, 'EAGLE: Speculative Sampling Requires Rethinking Feature Uncertainty', ICML "
    "(arXiv 2401.15077), section 3: one decoder layer fed the token embedding and the target's top-layer feature "
    "(an FC layer from 2 x hidden to hidden), the target's own LM head",
)
EAGLE3_HEAD = DraftShape(
    key="eagle3", name="EAGLE-3 head", kind="head", feature_inputs=3, attention_input_multiple=2,
    draft_vocab_size=32_000,
    source="Li et al. 2025, 'EAGLE-3', arXiv 2503.01840, section 3: low, mid and high-layer features fused by an "
    "FC layer (3 x hidden to hidden), one decoder layer reading the embedding and the fused feature (its q, k and v "
    "take 2 x hidden); a 32,000-token draft vocabulary (draft_vocab_size in the config.json of "
    "yuhuili/EAGLE3-LLaMA3.1-Instruct-8B, assumed for other targets)",
)
LLAMA_3_2_1B_DRAFT = DraftShape(
    key="llama-3.2-1b", name="Llama 3.2 1B draft model", kind="model", draft_model="llama-3.2-1b", draft_tp=1,
    source="a separate draft model from the catalog (Llama 3.2 1B shares Llama 3.1's 128,256-token tokenizer), "
    "on one GPU of the replica (vLLM's draft_tensor_parallel_size 1)",
)
DRAFT_SHAPES = {s.key: s for s in (EAGLE_HEAD, EAGLE3_HEAD, LLAMA_3_2_1B_DRAFT)}

#: Share of the target's fixed per-step cost (the roofline's time at zero tokens: scheduling, input preparation,
#: sampling, launches) that each draft step pays. Assumption: 0. The draft's forward passes run inside the engine
#: step of their verify, captured in CUDA graphs (SGLang and vLLM both capture the draft), so a speculation cycle
#: pays the step's fixed costs once, in the verify step, and the draft steps their kernel time only.
DRAFT_STEP_OVERHEAD_SHARE = 0.0
#: Bytes per weight of a draft head: EAGLE checkpoints are published in 16 bits, whatever the target's format.
HEAD_WEIGHT_BYTES = 2


def _head_params(model, shape: DraftShape) -> dict:
    """Parameters of a draft head on ``model``: its decoder layer, its input FC and its LM head."""
    h = model.hidden_size
    q_out = model.attention_heads * model.head_dim
    kv_out = model.kv_heads * model.head_dim
    attention = (q_out + 2 * kv_out) * h * shape.attention_input_multiple + h * q_out
    mlp = 3 * h * model.intermediate_size  # gate, up and down projections of a dense MLP
    return {"layer": attention + mlp, "fc": shape.feature_inputs * h * h,
            "lm_head": (shape.draft_vocab_size or model.vocab_size) * h}


def head_params(target, shape: DraftShape = EAGLE_HEAD) -> int:
    """Weights a draft head on ``target`` reads per draft step: one decoder layer, its input FC, its LM head.

    The token embedding is looked up, not streamed, and is not counted. Source:
    the shapes of :data:`EAGLE_HEAD` and :data:`EAGLE3_HEAD` on the target's config.

    >>> round(head_params("llama-3.1-8b") / 1e6), round(head_params("llama-3.1-8b", EAGLE3_HEAD) / 1e6)
    (777, 425)
    >>> round(head_params("llama-3.1-70b") / 1e9, 2)
    2.04
    """
    if shape.kind != "head":
        raise CalcError(f"shape must be a draft head (kind 'head'); got {shape.kind!r}", "shape")
    return sum(_head_params(get_model(target), shape).values())


@functools.lru_cache(maxsize=64)
def draft_coefficients(target_coefficients, shape: DraftShape = EAGLE_HEAD):
    """The roofline of one draft step, as :class:`calc.roofline.StepCoefficients` on the target's GPUs.

    A head (:data:`EAGLE_HEAD`, :data:`EAGLE3_HEAD`) is priced from its own shape
    relative to the target's: it reads :func:`head_params` weights (16-bit) once
    per draft step, computes 2 FLOPs per weight per token, and reads and writes its
    own KV cache of one layer; it is split over the target's ``tp`` GPUs (two
    all-reduces per step). A separate draft model is :func:`calc.roofline.step_coefficients`
    of its catalog entry on ``draft_tp`` GPUs of the same type. Same efficiency
    factors as the target. Source: :mod:`calc.roofline` (Williams et al. 2009).

    >>> from calc.roofline import step_coefficients
    >>> target = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> head = draft_coefficients(target)
    >>> round(head.dense_weight_bytes / 1e9, 2), head.kv_bytes_per_token == target.kv_bytes_per_token / 32
    (1.55, True)
    """
    if shape.kind == "model":
        return step_coefficients(shape.draft_model, target_coefficients.gpu_key, tp=shape.draft_tp,
                                 kv_dtype=target_coefficients.kv_dtype, efficiency=target_coefficients.efficiency)
    model = get_model(target_coefficients.model_key)
    tp = target_coefficients.tp
    params = head_params(model, shape)
    return dataclasses.replace(
        target_coefficients,
        weights="bf16",
        compute_dtype="bf16",
        linear_flops_per_token=2.0 * params / tp,
        attention_flops_per_pair=target_coefficients.attention_flops_per_pair / model.layers,
        linear_flops_per_s=target_coefficients.attention_flops_per_s,  # 16-bit weights compute in 16 bits
        dense_weight_bytes=float(HEAD_WEIGHT_BYTES * params) / tp,
        expert_weight_bytes=0.0,
        experts=0,
        experts_per_token=0,
        kv_bytes_per_token=target_coefficients.kv_bytes_per_token / model.layers,
        allreduces_per_step=2 if tp > 1 else 0,
    )


def _draft_step_s(coefficients, *, new_tokens: int, kv_tokens_read: int, attention_token_pairs: int) -> float:
    """One draft step: its roofline time less the target's fixed per-step cost (see DRAFT_STEP_OVERHEAD_SHARE)."""
    full = coefficients.step_time_s(new_tokens=new_tokens, kv_tokens_read=kv_tokens_read,
                                    attention_token_pairs=attention_token_pairs)
    fixed = coefficients.step_time_s(new_tokens=0, kv_tokens_read=0, attention_token_pairs=0)
    return full - (1.0 - DRAFT_STEP_OVERHEAD_SHARE) * fixed


def draft_phase_s(config, draft_coefs, *, sequences: int, kv_tokens: int) -> float:
    """Seconds of the ``k`` draft steps of one cycle for ``sequences`` sequences holding ``kv_tokens`` of context.

    Step 1 extends each sequence by one token; each later step expands
    ``branching`` candidates per sequence (a tree of top-``branching`` tokens;
    1 for a chain), which also read the candidates drafted before them. Source:
    the draft loops of EAGLE-2 (Li et al. 2024, arXiv 2406.16858) and SGLang's
    ``--speculative-eagle-topk``; each step priced by ``draft_coefs``' roofline.

    >>> from calc.roofline import step_coefficients
    >>> target = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> round(draft_phase_s(EAGLE_LIKE, draft_coefficients(target), sequences=1, kv_tokens=512) * 1000, 2)
    1.83
    """
    if sequences <= 0:
        return 0.0
    total = []
    context = kv_tokens / sequences
    for step in range(config.k):
        width = 1 if step == 0 else config.branching
        drafted_before = 0 if step == 0 else 1 + (step - 1) * config.branching
        kv = kv_tokens + sequences * drafted_before
        total.append(_draft_step_s(draft_coefs, new_tokens=sequences * width, kv_tokens_read=kv,
                                   attention_token_pairs=round(sequences * width * (context + drafted_before))))
    return math.fsum(total)


def draft_cost_ratio(draft_coefficients, target_coefficients, *, batch: int = 1, context_tokens: int) -> float:
    """``c``: one decode step of the draft over one of the target, both priced on the roofline.

    The draft step is its kernel time (the cycle's fixed costs are paid once, by
    the verify step: :data:`DRAFT_STEP_OVERHEAD_SHARE`). ``c`` moves with the
    batch as each side's roofline does. Source: :mod:`calc.roofline` for both
    (the ``c`` of Leviathan et al. 2023, section 3.3).

    >>> from calc.roofline import step_coefficients
    >>> draft = step_coefficients("llama-3.2-1b", "h100-sxm-80gb")
    >>> target = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> round(draft_cost_ratio(draft, target, context_tokens=1152), 3)
    0.064
    """
    batch = check_range("batch", batch, 1, MAX_BATCH, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    d = _draft_step_s(draft_coefficients, new_tokens=batch, kv_tokens_read=batch * context_tokens,
                      attention_token_pairs=batch * context_tokens)
    t = decode_step(target_coefficients, batch=batch, context_tokens=context_tokens)["time_s"]
    return d / t


@dataclass(frozen=True)
class SpeculationConfig:
    """A speculation set-up: acceptance per drafted position, draft depth, the draft, verify width.

    ``acceptance`` is the probability that a drafted position is accepted (for a
    tree of candidates, the effective rate per depth); ``k`` the draft depth
    (draft steps per verify step); ``verify_tokens`` the positions the target
    checks per sequence (``k + 1`` for a chain, the tree's size for a tree);
    ``branching`` the candidates each draft step after the first expands per
    sequence (1 for a chain). The draft's cost is either derived from its shape
    ``draft`` (:class:`DraftShape`, priced on the roofline at every batch) or,
    when ``draft_cost_ratio`` is given, that fixed fraction of a plain target
    step (an override). ``key`` names a published method (:data:`METHODS`);
    ``source`` says where the numbers come from. ``draft_coefficients`` is the
    draft's roofline once bound to a target (:meth:`bound`; the simulator's use).

    >>> SpeculationConfig(0.7, 4, 0.1, "example").verify_tokens
    5
    >>> SpeculationConfig(0.7, 4, None, "no draft")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: draft_cost_ratio must be given when there is no draft shape to derive it from; got None
    """

    acceptance: float
    k: int
    draft_cost_ratio: float | None
    source: str
    verify_tokens: int | None = None
    draft: DraftShape | None = None
    branching: int = 1
    key: str = ""
    draft_coefficients: object = None

    def __post_init__(self):
        _check_acceptance(self.acceptance)
        _check_k(self.k)
        if self.draft_cost_ratio is None and self.draft is None:
            raise CalcError("draft_cost_ratio must be given when there is no draft shape to derive it from; got None",
                            "draft_cost_ratio")
        if self.draft_cost_ratio is not None:
            _check_cost_ratio(self.draft_cost_ratio)
        check_range("branching", self.branching, 1, 64, integer=True)
        object.__setattr__(self, "verify_tokens", _check_verify(self.verify_tokens, self.k))

    @property
    def tokens_per_step(self) -> float:
        """Expected tokens per verify step (Leviathan et al. 2023, Eq. 1).

        >>> round(EAGLE_LIKE.tokens_per_step, 2)
        1.83
        """
        return expected_tokens_per_step(self.acceptance, self.k)

    @property
    def derived(self) -> bool:
        """True when the draft's cost comes from its shape (no ``draft_cost_ratio`` override).

        >>> EAGLE_LIKE.derived, SpeculationConfig(0.7, 4, 0.1, "example").derived
        (True, False)
        """
        return self.draft_cost_ratio is None or self.draft_coefficients is not None

    def bound(self, target_coefficients) -> "SpeculationConfig":
        """This set-up tied to one target: the draft's roofline filled in (a ratio override is kept as it is).

        A bound config keeps in ``draft_cost_ratio`` the draft's FLOPs per token
        over the target's (what a compute-utilization count needs); its step
        times come from ``draft_coefficients``. Source: :func:`draft_coefficients`.

        >>> from calc.roofline import step_coefficients
        >>> b = EAGLE_LIKE.bound(step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4))
        >>> round(b.draft_cost_ratio, 3), b.draft_coefficients.tp
        (0.029, 4)
        """
        if not self.derived or self.draft_coefficients is not None:
            return self
        coefs = draft_coefficients(target_coefficients, self.draft)
        flops_ratio = coefs.linear_flops_per_token / target_coefficients.linear_flops_per_token
        return dataclasses.replace(self, draft_cost_ratio=min(flops_ratio, 10.0), draft_coefficients=coefs)


def _draft_coefs_for(config: SpeculationConfig, target_coefficients):
    if config.draft_coefficients is not None:
        return config.draft_coefficients
    return draft_coefficients(target_coefficients, config.draft)


def speedup_at_batch(coefficients, *, batch: int, context_tokens: int, config: SpeculationConfig | None = None) -> dict:
    """Speed-up of speculation for one decode batch, priced on the roofline.

    ``coefficients`` is the target's :class:`calc.roofline.StepCoefficients`. A
    plain decode step computes ``batch`` tokens; a verify step is the target's
    step with ``batch x verify_tokens`` tokens against the same KV (memory-bound
    and nearly free at small batch, compute-bound at large batch: the mechanism
    behind the break-even); the ``k`` draft steps are priced on the draft's own
    roofline (:func:`draft_phase_s`), or as ``draft_cost_ratio`` plain steps when
    the config overrides it. Speed-up = tokens per verify step x plain step /
    (verify + draft steps). ``config`` defaults to :data:`EAGLE_LIKE`.
    Source: the walltime accounting of Leviathan et al. 2023, with step times from the roofline.

    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> round(speedup_at_batch(coef, batch=2, context_tokens=512)["speedup"], 2)
    1.4
    >>> round(speedup_at_batch(coef, batch=64, context_tokens=512, config=EAGLE3_LIKE)["speedup"], 2)
    1.53
    """
    config = EAGLE_LIKE if config is None else config
    batch = check_range("batch", batch, 1, MAX_BATCH, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 10_000_000, integer=True)
    v = config.verify_tokens
    window = get_model(coefficients.model_key).sliding_window
    if window:
        context_tokens = min(context_tokens, window)  # a sliding-window model reads and attends to its window only
    plain = coefficients.step_time_s(
        new_tokens=batch,
        kv_tokens_read=batch * context_tokens,
        attention_token_pairs=batch * context_tokens,
        sequences=batch,  # an engine's per-sequence step term (0 on the plain roofline)
    )
    # The v candidates sit after the context; each attends to the context and to the candidates before it.
    verify = coefficients.step_time_s(
        new_tokens=batch * v,
        kv_tokens_read=batch * (context_tokens + v - 1),
        attention_token_pairs=batch * (v * context_tokens + v * (v - 1) // 2),
        sequences=batch,
    )
    if config.derived:
        drafts = draft_phase_s(config, _draft_coefs_for(config, coefficients), sequences=batch,
                               kv_tokens=batch * context_tokens)
    else:
        drafts = config.k * config.draft_cost_ratio * plain
    tokens = config.tokens_per_step
    cycle_s = verify + drafts
    return {
        "batch": batch,
        "context_tokens": context_tokens,
        "plain_step_s": plain,
        "verify_step_s": verify,
        "draft_steps_s": drafts,
        "draft_cost_ratio": drafts / config.k / plain,
        "tokens_per_verify_step": tokens,
        "plain_tokens_per_s": batch / plain,
        "speculative_tokens_per_s": batch * tokens / cycle_s,
        "speedup": tokens * plain / cycle_s,
    }


def speedup_curve(coefficients, *, batches, context_tokens: int, config: SpeculationConfig | None = None) -> list[dict]:
    """:func:`speedup_at_batch` for each batch in ``batches`` (a chart's points).

    Source: as :func:`speedup_at_batch`.

    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> [row["batch"] for row in speedup_curve(coef, batches=[1, 8, 64], context_tokens=512)]
    [1, 8, 64]
    """
    batches = list(batches)
    if not batches:
        raise CalcError("batches must hold at least one batch size; got none", "batches")
    return [speedup_at_batch(coefficients, batch=b, context_tokens=context_tokens, config=config) for b in batches]


def break_even_batch(coefficients, *, context_tokens: int, config: SpeculationConfig | None = None,
                     max_batch: int = 4096):
    """The smallest batch at which speculation no longer pays (speed-up below 1x).

    Returns ``None`` if the speed-up stays at or above 1 up to ``max_batch``
    (long contexts, whose KV reads keep the step memory-bound, can do that).
    A bisection over the batch: the speed-up falls as the batch grows, because
    the verify step's extra tokens cost more and more as the step turns
    compute-bound.
    Source: Leviathan et al. 2023 (speed-up accounting) on :mod:`calc.roofline`;
    published for comparison: EAGLE below 1x from batch 24 on one H100 with
    Llama 3.1 8B (Li et al. 2025, EAGLE-3, SGLang).

    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> break_even_batch(coef, context_tokens=512)
    20
    """
    max_batch = check_range("max_batch", max_batch, 1, MAX_BATCH, integer=True)

    def below_one(b: int) -> bool:
        return speedup_at_batch(coefficients, batch=b, context_tokens=context_tokens, config=config)["speedup"] < 1.0

    return smallest_batch_where(below_one, max_batch)


# --- the published methods: shapes from their sources, acceptance fitted on the calibration rows only -----

#: Where the published speed-ups were measured (EAGLE-3 paper and SGLang docs): Llama 3.1 8B in bf16 on one
#: H100 SXM, short MT-bench conversations (context 512 tokens assumed).
PUBLISHED_SETUP = {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "tp": 1, "weights": "bf16", "kv_dtype": "bf16",
                   "context_tokens": 512}
#: The calibration rows of calc/data/measurements.json: (row id, batch, published speed-up), per method.
CALIBRATION_ROWS = {
    "eagle": ("eagle3-paper-eagle-batch2", 2, 1.40),
    "eagle3": ("eagle3-paper-eagle3-batch2", 2, 1.81),
}


def published_setup_coefficients():
    """:func:`calc.roofline.step_coefficients` of :data:`PUBLISHED_SETUP` (Llama 3.1 8B, one H100, bf16).

    >>> published_setup_coefficients().model_key
    'llama-3.1-8b'
    """
    s = PUBLISHED_SETUP
    return _setup_coefficients(s["model"], s["gpu"], s["tp"], s["weights"], s["kv_dtype"])


@functools.lru_cache(maxsize=16)
def _setup_coefficients(model, gpu, tp, weights, kv_dtype):
    return step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)


def fit_acceptance(target_speedup: float, *, batch: int, template: SpeculationConfig,
                   coefficients=None, context_tokens: int = PUBLISHED_SETUP["context_tokens"]) -> float:
    """Acceptance per drafted position that gives ``target_speedup`` at ``batch``, the rest as ``template``.

    A bisection on the acceptance (the speed-up rises with it), to 3 decimals, on
    the published set-up's roofline by default. This is how :data:`EAGLE_LIKE` and
    :data:`EAGLE3_LIKE` are calibrated, each on its one calibration row
    (:data:`CALIBRATION_ROWS`) and nothing else. Source: :func:`speedup_at_batch`.

    >>> fit_acceptance(1.40, batch=2, template=EAGLE_LIKE) == EAGLE_LIKE.acceptance
    True
    """
    target = check_range("target_speedup", target_speedup, 0.01, 100.0)
    coef = published_setup_coefficients() if coefficients is None else coefficients

    def speedup_with(acceptance: float) -> float:
        config = dataclasses.replace(template, acceptance=acceptance)
        return speedup_at_batch(coef, batch=batch, context_tokens=context_tokens, config=config)["speedup"]

    low, high = 0.0, 0.999
    if not speedup_with(low) <= target <= speedup_with(high):
        raise CalcError(f"target_speedup must be reachable with this draft shape at batch {batch}: between "
                        f"{speedup_with(low):.3f} and {speedup_with(high):.3f}; got {target:g}", "target_speedup")
    return round(bisect_increasing(speedup_with, target, low, high, 40), 3)


def _calibrated(template: SpeculationConfig) -> SpeculationConfig:
    _, batch, published = CALIBRATION_ROWS[template.key]
    return dataclasses.replace(template, acceptance=fit_acceptance(published, batch=batch, template=template))


# EAGLE (the first version) as SGLang runs it: SGLang's documented EAGLE example, 3 draft steps, top-4 branching,
# 16 candidate tokens verified per sequence (docs.sglang.ai, "Speculative Decoding": --speculative-num-steps 3
# --speculative-eagle-topk 4 --speculative-num-draft-tokens 16). The acceptance is fitted at import on the one
# calibration row (1.40x at batch 2, EAGLE-3 paper, SGLang, one H100, Llama 3.1 8B); the rest of the curve is
# predicted.
EAGLE_LIKE = _calibrated(SpeculationConfig(
    acceptance=0.5, k=3, draft_cost_ratio=None, verify_tokens=16, branching=4, draft=EAGLE_HEAD, key="eagle",
    source="EAGLE head (one decoder layer + the target's LM head, priced on the roofline); SGLang's EAGLE example "
    "(3 steps, top-4, 16 draft tokens); acceptance per depth fitted to the published 1.40x at batch 2 (EAGLE-3 "
    "paper, SGLang, 1x H100, Llama 3.1 8B)",
))
# EAGLE-3: its own head (3-layer feature fusion, 32,000-token draft vocabulary) drafting a chain of 3 (top-1,
# 4 verified). Assumption: the paper does not print the draft settings of its SGLang batch sweep; a tree of 16
# or more candidates cannot hold 1.38x at batch 64 on this roofline (verifying 64 x 16 tokens costs about 4 plain
# steps), so a chain of the EAGLE example's depth is taken. Acceptance fitted at import on its one calibration
# row (1.81x at batch 2).
EAGLE3_LIKE = _calibrated(SpeculationConfig(
    acceptance=0.5, k=3, draft_cost_ratio=None, verify_tokens=4, branching=1, draft=EAGLE3_HEAD, key="eagle3",
    source="EAGLE-3 head (fused low/mid/high features, 32,000-token draft vocabulary, priced on the roofline); a "
    "chain of 3 drafted tokens (assumed: the paper's SGLang settings are not published); acceptance per depth "
    "fitted to the published 1.81x at batch 2 (EAGLE-3 paper, SGLang, 1x H100, Llama 3.1 8B)",
))
# A separate small draft model: Llama 3.2 1B drafting 4 tokens as a chain for a Llama 3.1 target. Its acceptance
# 0.7 is an assumption (illustrative: acceptance is measured per task; Leviathan et al. 2023, Table 3, report
# 0.5-0.9 for their pairs), not a measurement of this pair.
SEPARATE_DRAFT_LIKE = SpeculationConfig(
    acceptance=0.7, k=4, draft_cost_ratio=None, draft=LLAMA_3_2_1B_DRAFT, key="draft-1b",
    source="Llama 3.2 1B as a separate draft model on one GPU (priced on the roofline), a chain of 4; acceptance "
    "0.7 assumed (Leviathan et al. 2023 report 0.5-0.9 for their pairs)",
)
#: The EAGLE head's draft step over a target step on the published set-up at batch 1 (2 digits): a starting value
#: for controls that take a fixed ratio (the playground's custom speculation).
EAGLE_LIKE_COST_RATIO = round(draft_cost_ratio(draft_coefficients(published_setup_coefficients(), EAGLE_HEAD),
                                               published_setup_coefficients(), context_tokens=512), 2)
#: The methods calc prices, by key: data, each with its source.
METHODS = {c.key: c for c in (EAGLE_LIKE, EAGLE3_LIKE, SEPARATE_DRAFT_LIKE)}


def replica_coefficients(model: str):
    """The roofline of one GPU of a replica speculation is compared on: the published set-up or the running example.

    ``llama-3.1-8b`` is :data:`PUBLISHED_SETUP` (one H100); the running example's model
    (:data:`calc.lesson.REPLICA`) runs on its ``tp`` GPUs. bf16 weights and KV. Source:
    :func:`calc.lesson.coefficients`.

    >>> replica_coefficients("llama-3.1-70b").tp, replica_coefficients("llama-3.1-8b").tp
    (4, 1)
    """
    from calc import lesson  # the running example; imported here to keep calc.speculative's import light

    tps = {PUBLISHED_SETUP["model"]: PUBLISHED_SETUP["tp"], lesson.REPLICA["model"]: lesson.REPLICA["tp"]}
    model = check_choice("model", model, tuple(tps))
    return lesson.coefficients(model=model, tp=tps[model])


def break_even(model: str, config: SpeculationConfig | None = None,
               context_tokens: int = PUBLISHED_SETUP["context_tokens"]):
    """The smallest batch where speculation on ``model``'s replica is slower than none (None: never up to 4,096).

    Source: :func:`break_even_batch` on :func:`replica_coefficients`.

    >>> break_even("llama-3.1-8b"), break_even("llama-3.1-70b"), break_even("llama-3.1-8b", EAGLE3_LIKE)
    (20, 21, 125)
    """
    return break_even_batch(replica_coefficients(model), context_tokens=context_tokens, config=config)


def method(key: str) -> SpeculationConfig:
    """A method of :data:`METHODS` by key (``eagle``, ``eagle3``, ``draft-1b``).

    >>> method("eagle3").draft.name
    'EAGLE-3 head'
    >>> method("medusa")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: method must be one of eagle, eagle3, draft-1b; got 'medusa'
    """
    return METHODS[check_choice("method", key, tuple(METHODS))]


def method_curve(key: str, coefficients=None, *, batches=(1, 2, 4, 8, 16, 24, 32, 48, 64, 128, 256),
                 context_tokens: int = PUBLISHED_SETUP["context_tokens"]) -> dict:
    """One method's derived draft cost and speed-up against batch on a target (the published set-up by default).

    Returns the method's key, the draft's cost ratio ``c`` at batch 1, the
    break-even batch, and the :func:`speedup_curve` rows. Source: :func:`speedup_at_batch`.

    >>> r = method_curve("eagle")
    >>> round(r["draft_cost_ratio_batch_1"], 3), r["break_even_batch"]
    (0.103, 20)
    """
    config = method(key)
    coef = published_setup_coefficients() if coefficients is None else coefficients
    rows = speedup_curve(coef, batches=batches, context_tokens=context_tokens, config=config)
    first = speedup_at_batch(coef, batch=1, context_tokens=context_tokens, config=config)
    return {"method": key, "draft": config.draft.name, "draft_cost_ratio_batch_1": first["draft_cost_ratio"],
            "break_even_batch": break_even_batch(coef, context_tokens=context_tokens, config=config),
            "rows": rows}


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
