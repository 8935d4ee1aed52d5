"""Speculative decoding in one target step: draft, verify, accept or reject (step 9)."""

from __future__ import annotations

from calc.diagrams.svg import Diagram, arrow, for_every_screen, layout_for, rect, text, text_width, wrap
from calc.errors import check_range
from calc.speculative import expected_tokens_per_step

__all__ = ["draft_verify_accept"]

#: The example sentence: the context, the draft model's k guesses, and the token the target samples instead
#: of the first guess it rejects.
CONTEXT = "The cat"
DRAFT = ("sat", "on", "a", "red")
TARGET_CORRECTION = "the"


def draft_verify_accept(accepted: int = 2, acceptance: float = 0.7, *, width: float | None = None) -> Diagram:
    """A draft model proposes k tokens; the target checks all of them in one pass, keeps the first ``accepted``,
    replaces the first rejected guess with its own token and discards the rest.

    The caption's average comes from :func:`calc.speculative.expected_tokens_per_step` (Leviathan et al. 2023).
    A wide screen names the three stages left of their rows; a phone, above them.

    >>> d = draft_verify_accept()
    >>> d.caption.startswith("This step keeps 2 of 4 guesses and adds the target's own token: 3 tokens")
    True
    >>> "2.77" in d.caption
    True
    >>> [d.svg().count(f'class="{c}"') for c in ("d-ok", "d-bad", "d-free")]  # kept, replaced, dropped
    [2, 1, 1]
    """
    k = len(DRAFT)
    accepted = check_range("accepted", accepted, 0, k, integer=True)
    if width is None:
        return for_every_screen(lambda w: draft_verify_accept(accepted, acceptance, width=w))
    layout = layout_for(width)
    expected = expected_tokens_per_step(acceptance, k)
    boxes = k + (accepted == k)  # all accepted: the target's bonus token takes a box of its own
    left = 86 if layout == "wide" else 8
    gap = 12 if layout == "wide" else 8
    box_w = min(80, (width - left - 8 - (boxes - 1) * gap) / boxes)
    row_w = boxes * box_w + (boxes - 1) * gap
    # Each stage: its name left of the row (wide) or on a line of its own above it (narrow).
    stage_label_h = 0 if layout == "wide" else 18
    verify_text = f"target model: one pass over all {k} guesses, plus one token of its own"
    verify_lines = wrap(verify_text, 12, row_w - 12)
    verify_h = 16 + 16 * len(verify_lines)
    draft_y = 26 + stage_label_h
    verify_y = draft_y + 28 + 40 + stage_label_h
    keep_y = verify_y + verify_h + 36 + stage_label_h
    header = (f"context: “{CONTEXT}”; a small draft model guesses {k} tokens, one cheap step each"
              if layout == "wide" else f"context: “{CONTEXT}”")
    text_w = max(row_w, text_width(header, 11))  # the width the labels under the boxes may take
    shapes = [text(left, 14, header, anchor="start", size=11)]
    for label, y in (("1. draft", draft_y), ("2. verify", verify_y), ("3. keep", keep_y)):
        if layout == "wide":
            shapes.append(text(8, y + 19, label, anchor="start", size=12, weight="600"))
        else:
            note = {"1. draft": f"1. draft: the small model's {k} guesses", "2. verify": "2. verify",
                    "3. keep": "3. keep"}[label]
            shapes.append(text(left, y - 6, note, anchor="start", size=12, weight="600"))
    for i, token in enumerate(DRAFT):
        x = left + i * (box_w + gap)
        shapes.append(rect(x, draft_y, box_w, 28, "d-muted", title=f"guess {i + 1}: {token}"))
        shapes.append(text(x + box_w / 2, draft_y + 19, token, size=13))
        shapes.append(arrow(x + box_w / 2, draft_y + 30, x + box_w / 2, verify_y - 2 - stage_label_h))
    shapes.append(rect(left, verify_y, row_w, verify_h, "d-k"))
    for row, content in enumerate(verify_lines):
        shapes.append(text(left + row_w / 2, verify_y + 20 + 16 * row, content, size=12, cls="d-on-fill"))
    for i in range(boxes):
        x = left + i * (box_w + gap)
        if i < k:
            shapes.append(arrow(x + box_w / 2, verify_y + verify_h + 2, x + box_w / 2, keep_y - 2 - stage_label_h))
        if i < accepted:
            cls, token, note, what = "d-ok", DRAFT[i], "✓ kept", "accepted"
        elif i == accepted < k:
            cls, token, note, what = "d-bad", TARGET_CORRECTION, f"✗ not “{DRAFT[i]}”", "rejected: the target's token"
        elif i < k:
            cls, token, note, what = "d-free", DRAFT[i], "dropped", "discarded"
        else:
            cls, token, note, what = "d-ok", "+1", "bonus", "the target's bonus token"
        shapes.append(rect(x, keep_y, box_w, 40, cls, title=f"{'guess ' + str(i + 1) if i < k else 'bonus'}: {what}"))
        on = "d-on-fill" if cls != "d-free" else ""
        shapes.append(text(x + box_w / 2, keep_y + 17, token, size=13, cls=on, weight="600"))
        shapes.append(text(x + box_w / 2, keep_y + 33, note, size=11, cls=on))
    kept = accepted + 1
    summary = [*f"this step: {kept} tokens for one pass of the target;".split(), "on average",
               "(1 − a^(k+1)) / (1 − a)", f"= {expected:.2f}", f"at a = {acceptance:g}, k = {k}"]  # the formula unbroken
    y = keep_y + 40 + 18
    for content in wrap(summary, 11, text_w):
        shapes.append(text(left, y, content, anchor="start", size=11))
        y += 15
    return Diagram(
        "draft-verify-accept",
        "Draft, verify, accept or reject",
        f"A small draft model guesses {k} tokens after “{CONTEXT}”: {', '.join(DRAFT)}. The target model checks "
        f"all of them in one pass. "
        + (f"It accepts the first {accepted}, rejects guess {accepted + 1} and puts its own token in its place, "
           f"and drops the guesses after it" if accepted < k else f"It accepts all {k} and adds a token of its own")
        + f": {kept} tokens from one target pass.",
        left + text_w + 8, y - 4, shapes,
        f"This step keeps {accepted} of {k} guesses and adds the target's own token: {kept} tokens for one pass of "
        f"the big model. Averaged over steps, with acceptance a = {acceptance:g} and k = {k} guesses, a target "
        f"pass yields {expected:.2f} tokens. Because the target accepts or replaces every token by its own "
        f"probabilities, the output is distributed exactly as without speculation.",
        layout=layout,
    )
