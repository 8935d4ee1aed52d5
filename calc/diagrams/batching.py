"""Chunked prefill: a new prompt rides in the decode steps, a chunk at a time (step 6)."""

from __future__ import annotations

from calc.diagrams.svg import Diagram, for_every_screen, layout_for, rect, text, text_width
from calc.sim.kv_blocks import BlockPool
from calc.sim.scheduler import Scheduler, SchedulerConfig
from calc.sim.workload import Request

__all__ = ["chunked_prefill_steps"]


def _plans(running: int, prompt_tokens: int, budget_tokens: int, steps: int) -> list[tuple[int, int]]:
    """(decode tokens, prefill tokens) of each engine step after the prompt arrives, as calc's scheduler plans them."""
    config = SchedulerConfig(max_num_seqs=running + 4, max_num_batched_tokens=budget_tokens, block_size=16,
                             max_model_len=4 * (prompt_tokens + 64))
    scheduler = Scheduler(config, BlockPool(1000, 16))
    now_ns = 0
    for rid in range(running):
        scheduler.add(Request(rid, 0, 4, 10 * steps + 50))
    while scheduler.n_decoding < running:  # let the running requests reach their decode phase
        now_ns += 1
        scheduler.commit(scheduler.plan(), now_ns=now_ns)
    scheduler.add(Request(running, now_ns, prompt_tokens, 20))
    plans = []
    for _ in range(steps):
        plan = scheduler.plan()
        plans.append((plan.decode_seqs, plan.new_tokens - plan.decode_seqs))
        now_ns += 1
        scheduler.commit(plan, now_ns=now_ns)
    return plans


def chunked_prefill_steps(running: int = 4, prompt_tokens: int = 60, budget_tokens: int = 24, steps: int = 4, *,
                          width: float | None = None) -> Diagram:
    """Engine steps with a token budget: the running answers' decode tokens first, then a chunk of the new prompt.

    The split of every step comes from :class:`calc.sim.scheduler.Scheduler` (decodes first, then chunked prefill).
    A wide screen labels each step's row on its left and right; a phone, above it.

    >>> d = chunked_prefill_steps()
    >>> d.caption.split(": ")[1].split(";")[0]
    'each step of 24 tokens carries 4 decode tokens and a 20-token chunk of the 60-token prompt'
    >>> d.svg().count('class="d-accent"') - 1, d.narrow.svg().count('class="d-accent"') - 1  # and one in the legend
    (60, 60)
    """
    if width is None:
        return for_every_screen(lambda w: chunked_prefill_steps(running, prompt_tokens, budget_tokens, steps, width=w))
    layout = layout_for(width)
    plans = _plans(running, prompt_tokens, budget_tokens, steps)
    labels = [f"{decode} decode" + (f" + {prefill} prefill" if prefill else "") for decode, prefill in plans]
    if layout == "wide":  # "step n" | the budget's slots | "d decode + p prefill"
        left = 56
        label_w = max(text_width(label, 11) for label in labels) + 10
        slot = min(22, (width - left - label_w) // budget_tokens)
        row_h, box_top, box_h = 36, 0, 24
    else:  # "step n: d decode + p prefill" over the row of slots
        left = 8
        slot = min(22, (width - 2 * left) // budget_tokens)
        row_h, box_top, box_h = 46, 16, 20
    box_w = slot - max(2, slot // 6)
    shapes = [text(8, 16, f"token budget of one engine step: {budget_tokens} tokens", anchor="start", size=12,
                   weight="600")]
    for index, (decode, prefill) in enumerate(plans):
        y = 28 + index * row_h
        if layout == "wide":
            shapes.append(text(8, y + 17, f"step {index + 1}", anchor="start", size=12))
            shapes.append(text(left + budget_tokens * slot + 6, y + 17, labels[index], anchor="start", size=11))
        else:
            shapes.append(text(left, y + 11, f"step {index + 1}: {labels[index]}", anchor="start", size=12))
        for s in range(budget_tokens):
            x = left + s * slot
            if s < decode:
                cls, what = "d-k", f"decode token of answer {s + 1}"
            elif s < decode + prefill:
                cls, what = "d-accent", "prompt token"
            else:
                cls, what = "d-free", "unused budget"
            shapes.append(rect(x, y + box_top, box_w, box_h, cls, rx=2, title=f"step {index + 1}: {what}"))
    y = 28 + len(plans) * row_h + 4
    legend = [("d-k", "one token of a running answer"), ("d-accent", "a chunk of the new prompt")]
    x = left
    for cls, label in legend:
        if x + 20 + text_width(label, 11) > width:  # no room beside the last: the next line
            x, y = left, y + 22
        shapes.append(rect(x, y, 14, 14, cls, rx=2))
        shapes.append(text(x + 20, y + 12, label, anchor="start", size=11))
        x += 20 + text_width(label, 11) + 24
    decode, prefill = plans[0]
    chunk_steps = sum(1 for _, p in plans if p)
    drawn_w = left + budget_tokens * slot + (label_w if layout == "wide" else left)
    return Diagram(
        "chunked-prefill",
        "A prefill chunk riding in decode steps",
        f"{len(plans)} engine steps drawn as rows of {budget_tokens} token slots. Each row starts with the "
        f"{decode} running answers' next tokens; the rest of the budget carries a chunk of a new "
        f"{prompt_tokens}-token prompt, {chunk_steps} steps in all, after which the new request decodes too.",
        drawn_w, y + 22, shapes,
        f"Chunked prefill, as calc's scheduler plans it: each step of {budget_tokens} tokens carries {decode} decode "
        f"tokens and a {prefill}-token chunk of the {prompt_tokens}-token prompt; after {chunk_steps} steps the "
        f"new request joins the decode batch. The running answers never wait for the prompt (vLLM's budget is "
        f"max_num_batched_tokens, 8,192 by default; the picture uses {budget_tokens}).",
        layout=layout,
    )
