"""Speculative decoding in one target step: draft, verify, accept or reject (step 9)."""

from __future__ import annotations

from calc.diagrams.svg import Diagram, arrow, rect, text
from calc.errors import check_range
from calc.speculative import expected_tokens_per_step

__all__ = ["draft_verify_accept"]

#: The example sentence: the context, the draft model's k guesses, and the token the target samples instead
#: of the first guess it rejects.
CONTEXT = "The cat"
DRAFT = ("sat", "on", "a", "red")
TARGET_CORRECTION = "the"


def draft_verify_accept(accepted: int = 2, acceptance: float = 0.7) -> Diagram:
    """A draft model proposes k tokens; the target checks all of them in one pass, keeps the first ``accepted``,
    replaces the first rejected guess with its own token and discards the rest.

    The caption's average comes from :func:`calc.speculative.expected_tokens_per_step` (Leviathan et al. 2023).

    >>> d = draft_verify_accept()
    >>> d.caption.startswith("This step keeps 2 of 4 guesses and adds the target's own token: 3 tokens")
    True
    >>> "2.77" in d.caption
    True
    """
    k = len(DRAFT)
    accepted = check_range("accepted", accepted, 0, k, integer=True)
    expected = expected_tokens_per_step(acceptance, k)
    box_w, gap, left = 70, 12, 110
    shapes = [text(8, 40, "1. draft", anchor="start", size=12, weight="600"),
              text(8, 112, "2. verify", anchor="start", size=12, weight="600"),
              text(8, 184, "3. keep", anchor="start", size=12, weight="600")]
    shapes.append(text(left, 14, f"context: “{CONTEXT}”", anchor="start", size=11))
    for i, token in enumerate(DRAFT):
        x = left + i * (box_w + gap)
        shapes.append(rect(x, 22, box_w, 28, "d-muted", title=f"guess {i + 1}: {token}"))
        shapes.append(text(x + box_w / 2, 41, token, size=13))
        shapes.append(arrow(x + box_w / 2, 52, x + box_w / 2, 92))
    shapes.append(text(left + k * (box_w + gap) + 4, 41, f"small model, {k} cheap steps", anchor="start", size=11))
    shapes.append(rect(left - 6, 94, k * (box_w + gap) + box_w, 32, "d-k"))
    shapes.append(text(left + (k * (box_w + gap) + box_w) / 2 - 6, 115,
                       f"target model: one pass over all {k} guesses, plus one token of its own", size=12,
                       cls="d-on-fill"))
    for i, token in enumerate(DRAFT):
        x = left + i * (box_w + gap)
        shapes.append(arrow(x + box_w / 2, 128, x + box_w / 2, 164))
        if i < accepted:
            cls, label, note = "d-ok", f"✓ {token}", "accepted"
        elif i == accepted:
            cls, label, note = "d-bad", f"✗ → {TARGET_CORRECTION}", "rejected: target's token"
        else:
            cls, label, note = "d-free", f"{token} (dropped)", "discarded"
        shapes.append(rect(x, 166, box_w, 28, cls, title=f"guess {i + 1}: {note}"))
        shapes.append(text(x + box_w / 2, 185, label, size=12, cls="d-on-fill" if cls != "d-free" else ""))
    if accepted == k:
        x = left + k * (box_w + gap)
        shapes.append(rect(x, 166, box_w, 28, "d-ok", title="the target's bonus token"))
        shapes.append(text(x + box_w / 2, 185, "+ 1 bonus", size=12, cls="d-on-fill"))
    kept = accepted + 1
    shapes.append(text(left, 218, f"this step: {kept} tokens for one pass of the target; on average "
                                  f"(1 − a^(k+1)) / (1 − a) = {expected:.2f} at a = {acceptance:g}, k = {k}",
                       anchor="start", size=11))
    return Diagram(
        "draft-verify-accept",
        "Draft, verify, accept or reject",
        f"A small draft model guesses {k} tokens after “{CONTEXT}”: {', '.join(DRAFT)}. The target model checks "
        f"all of them in one pass. It accepts the first {accepted}, rejects guess {accepted + 1} and puts its own "
        f"token in its place, and drops the guesses after it: {kept} tokens from one target pass.",
        left + (k + 1) * (box_w + gap) + 60, 230, shapes,
        f"This step keeps {accepted} of {k} guesses and adds the target's own token: {kept} tokens for one pass of "
        f"the big model. Averaged over steps, with acceptance a = {acceptance:g} and k = {k} guesses, a target "
        f"pass yields {expected:.2f} tokens. Because the target accepts or replaces every token by its own "
        f"probabilities, the output is distributed exactly as without speculation.",
    )
