"""Speculative decoding inside the engine: tokens per step and the cost of a speculative step.

The engine (:mod:`calc.sim.engine`) and the fleet (:mod:`calc.sim.fleet`) import
this module; :mod:`calc.sim.speculation` re-exports it with the load search
that runs the simulator (so the engine never imports the simulator back).

Each decode step, a draft proposes ``k`` tokens deep per sequence (``k``
draft steps, each priced on the draft's own roofline, derived from its shape
by :func:`calc.speculative.draft_coefficients`; or, when the scenario gives a
``draft_cost_ratio``, that fraction of a plain decode step of the same batch),
and the target verifies ``verify_tokens`` candidate positions of
every sequence in one forward pass (``k + 1`` for a chain, more for a tree of
candidates). A sequence then advances by ``(1 - a**(k+1)) / (1 - a)`` tokens
on average (Leviathan et al. 2023, Eq. 1, with ``a`` the acceptance rate). The engine advances every sequence by exactly that mean (kept in
integer ticks, so runs stay deterministic), rather than drawing each
sequence's accepted run: the throughput and mean latencies are the same, the
spread of per-request finishing steps is not modelled. KV blocks are allocated
for the accepted tokens only (vLLM also reserves look-ahead slots for the
candidates during the verify step; a few blocks per sequence, left out here).

The verify step is priced on the roofline with ``verify_tokens`` new tokens
per sequence: nearly free while the step is memory-bound, that many times a
plain step once it is compute-bound, so the gain turns into a loss as the batch grows.
Sources: Leviathan et al., "Fast Inference from Transformers via Speculative
Decoding", ICML 2023 (Eq. 1, Theorem 3.8); the accounting of
:func:`calc.speculative.speedup_at_batch`; the default drafter
:data:`calc.speculative.EAGLE_LIKE` (EAGLE, Li et al. 2024).

>>> from calc.speculative import SpeculationConfig
>>> cfg = SpeculationConfig(acceptance=0.7, k=3, draft_cost_ratio=0.1, source="example")
>>> advance_ticks(cfg) / TICKS
2.5330047607421875
>>> fake = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.01 + 1e-5 * new_tokens
>>> round(speculative_step_time_s(fake, cfg, decode_seqs=8, decode_kv_tokens=8000,
...                               new_tokens=32, kv_tokens_read=8000, attention_token_pairs=32000), 6)
0.013344
"""

from __future__ import annotations

import math

from calc.errors import CalcError
from calc.sim.fast import enabled as fast_paths_enabled
from calc.sim.hardware import shared_step_pricer
from calc.sim.scheduler import TICKS
from calc.speculative import (DRAFT_STEP_OVERHEAD_SHARE, EAGLE_LIKE, SpeculationConfig, draft_phase_s,
                              expected_tokens_per_step)

__all__ = ["EAGLE_LIKE", "SpeculationConfig", "advance_ticks", "tokens_per_decode", "speculative_step_time_s",
           "bound_speculation", "draft_phase_pricer"]

#: The name under which a bound config carries its draft-phase pricer (see :func:`bound_speculation`).
_PHASE_ATTR = "_draft_phase_s"
#: Distinct batch sizes whose draft-step shapes a draft-phase pricer keeps (a batch never exceeds max_num_seqs).
_PHASE_MEMO = 1 << 16


def bound_speculation(config: SpeculationConfig | None, hardware) -> SpeculationConfig | None:
    """``config`` tied to the replica's target (``hardware.coefficients``): the draft's roofline filled in.

    A config with a ``draft_cost_ratio`` override, or None, passes through.
    Source: :meth:`calc.speculative.SpeculationConfig.bound`.

    >>> from calc.sim.hardware import replica_hardware
    >>> from calc.sim.scenario import Scenario
    >>> bound_speculation(EAGLE_LIKE, replica_hardware(Scenario())).draft_coefficients.model_key
    'llama-3.1-70b'
    >>> bound_speculation(None, None) is None
    True
    """
    if config is None or not config.derived:
        return config
    bound = config.bound(hardware.coefficients)
    # Speed trick, chosen when the replica is built (as calc.sim.fast's paths are): the draft phase priced by a
    # memoized twin of calc.speculative.draft_phase_s, equal to it bit for bit (tests/sim/test_speculation_memo.py).
    # Off (CALC_SIM_FAST_PATHS=0, calc.sim.fast.general_paths()), the plain function prices every step.
    phase = draft_phase_pricer(bound, bound.draft_coefficients) if fast_paths_enabled("draft_phase") else None
    object.__setattr__(bound, _PHASE_ATTR, phase)  # not a field: equality, hashing and asdict ignore it
    return bound


def draft_phase_pricer(config: SpeculationConfig, draft_coefficients):
    """A function ``(sequences, kv_tokens) -> seconds`` equal to :func:`calc.speculative.draft_phase_s`, built for speed.

    A speed trick with a plain twin. Under speculation every engine step prices
    ``k`` draft steps; :func:`~calc.speculative.draft_phase_s` runs the draft's
    whole roofline (:meth:`calc.roofline.StepCoefficients.step_time_s`, twice per
    draft step: the step and its fixed cost) each time. Here the fixed cost is
    computed once, each draft step goes through the draft's
    :func:`calc.sim.hardware.step_pricer` (its terms that depend on the step's new
    tokens alone are kept per count), and the shapes of the ``k`` draft steps are
    kept per batch size. The arithmetic is the plain function's, in the same
    order, so every result is the same float, bit for bit (tested on random
    batches and contexts, and on whole runs with the plain twin:
    ``tests/sim/test_speculation_memo.py``).

    >>> from calc.roofline import step_coefficients
    >>> bound = EAGLE_LIKE.bound(step_coefficients("llama-3.1-8b", "h100-sxm-80gb"))
    >>> phase = draft_phase_pricer(bound, bound.draft_coefficients)
    >>> plain = draft_phase_s(bound, bound.draft_coefficients, sequences=64, kv_tokens=64 * 1152)
    >>> phase(64, 64 * 1152) == plain, round(plain * 1000, 3)
    (True, 2.545)
    """
    k, branching = config.k, config.branching
    positional = shared_step_pricer(draft_coefficients).positional
    # draft_phase_s subtracts this from every draft step (calc.speculative._draft_step_s): the same float each time.
    fixed = (1.0 - DRAFT_STEP_OVERHEAD_SHARE) * draft_coefficients.step_time_s(
        new_tokens=0, kv_tokens_read=0, attention_token_pairs=0)
    # Per draft step: (candidates expanded per sequence, candidates drafted before it), as draft_phase_s counts them.
    widths = [(1, 0)] + [(branching, 1 + (step - 1) * branching) for step in range(1, k)]
    shapes: dict[int, tuple] = {}  # batch size -> per draft step (new tokens, extra KV read, drafted before)

    def phase(sequences: int, kv_tokens: int) -> float:
        steps = shapes.get(sequences)
        if steps is None:
            if sequences <= 0:
                return 0.0
            steps = tuple((sequences * width, sequences * before, before) for width, before in widths)
            if len(shapes) < _PHASE_MEMO:
                shapes[sequences] = steps
        context = kv_tokens / sequences
        return math.fsum([positional(new, kv_tokens + extra, round(new * (context + before))) - fixed
                          for new, extra, before in steps])

    return phase


def advance_ticks(config: SpeculationConfig | None) -> int:
    """Progress per decode step per sequence, in ticks: ``TICKS`` without speculation, ``E[tokens] x TICKS`` with.

    Source: Leviathan et al. 2023, Eq. 1 (via :func:`calc.speculative.expected_tokens_per_step`).

    >>> advance_ticks(None) == TICKS
    True
    """
    if config is None:
        return TICKS
    return max(1, round(expected_tokens_per_step(config.acceptance, config.k) * TICKS))


def tokens_per_decode(config: SpeculationConfig | None) -> int:
    """Tokens the target computes per sequence per decode step: 1, or the verified candidates under speculation.

    >>> from calc.speculative import SpeculationConfig
    >>> tokens_per_decode(None), tokens_per_decode(SpeculationConfig(0.7, 4, 0.1, "a chain of 4"))
    (1, 5)
    """
    return 1 if config is None else config.verify_tokens


def speculative_step_time_s(step_time_s, config: SpeculationConfig, *, decode_seqs: int, decode_kv_tokens: int,
                            new_tokens: int, kv_tokens_read: int, attention_token_pairs: int,
                            sequences: int | None = None) -> float:
    """One speculative engine step: ``k`` draft steps plus the target's verify (and any prefill chunks).

    ``step_time_s`` is the target's step time (a roofline
    :meth:`~calc.roofline.StepCoefficients.step_time_s`); ``new_tokens`` and
    the rest already count ``verify_tokens`` tokens per decoding sequence. The
    draft steps are :func:`calc.speculative.draft_phase_s` on the bound
    config's ``draft_coefficients`` (the same derived cost as
    :func:`calc.speculative.speedup_at_batch`), or ``k x draft_cost_ratio``
    plain decode steps of the batch for an override;
    the candidates also read one another's KV (``verify_tokens - 1`` more per sequence).
    ``sequences`` (the step's sequence count, for the engine's per-sequence term) is passed to
    ``step_time_s`` for the verify only when given: the engine's CPU work per sequence is done once per
    engine step, the draft's steps run on the GPU without it (None: a stand-in that takes no count).
    Source: Leviathan et al. 2023, Theorem 3.8 (cost ``k c + 1`` target steps
    while memory-bound), verify priced on the roofline as in
    :func:`calc.speculative.speedup_at_batch`.

    >>> cfg = SpeculationConfig(acceptance=0.7, k=3, draft_cost_ratio=0.1, source="example")
    >>> fake = lambda new_tokens, kv_tokens_read, attention_token_pairs: 0.01
    >>> speculative_step_time_s(fake, cfg, decode_seqs=0, decode_kv_tokens=0, new_tokens=512,
    ...                         kv_tokens_read=0, attention_token_pairs=1000)   # prefill only: no draft
    0.01
    """
    k = config.k
    verify_kv = kv_tokens_read + decode_seqs * (config.verify_tokens - 1)
    if sequences is None:
        verify = step_time_s(new_tokens=new_tokens, kv_tokens_read=verify_kv, attention_token_pairs=attention_token_pairs)
    else:
        verify = step_time_s(new_tokens=new_tokens, kv_tokens_read=verify_kv, attention_token_pairs=attention_token_pairs,
                             sequences=sequences)
    if not decode_seqs:
        return verify
    if config.draft_coefficients is not None:
        phase = config.__dict__.get(_PHASE_ATTR)  # the memoized twin, when bound_speculation chose it
        if phase is not None:
            return verify + phase(decode_seqs, decode_kv_tokens)
        return verify + draft_phase_s(config, config.draft_coefficients, sequences=decode_seqs, kv_tokens=decode_kv_tokens)
    if config.draft_cost_ratio is None:
        raise CalcError("speculation must be bound to the replica's target before pricing a step "
                        "(calc.sim.speculation.bound_speculation); got an unbound derived config", "speculation")
    plain = step_time_s(new_tokens=decode_seqs, kv_tokens_read=decode_kv_tokens, attention_token_pairs=decode_kv_tokens)
    return verify + k * config.draft_cost_ratio * plain
