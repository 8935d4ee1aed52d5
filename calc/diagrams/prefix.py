"""Prefix caching's parent-hash chain: a block matches only if every token before it matches (step 12)."""

from __future__ import annotations

import hashlib

from calc.diagrams.svg import Diagram, arrow, for_every_screen, layout_for, rect, text, wrap
from calc.prefix import hit_tokens_for_layout

__all__ = ["hash_chain", "block_hashes"]

#: A toy system prompt and two user questions, in words standing for tokens (4 to a block).
SYSTEM_PROMPT = "You are the company assistant . Answer briefly and cite the policy".split()
QUESTION_A = "How many holiday days".split()
QUESTION_B = "Who approves my expenses".split()


def block_hashes(tokens: list[str], block_size: int) -> list[str]:
    """Each full block's key: a hash of its parent block's key and its own tokens (vLLM's automatic prefix
    caching keys blocks this way), shortened to 6 hex digits for the picture.

    >>> a = block_hashes("a b c d e f g h".split(), 4)
    >>> b = block_hashes("x b c d e f g h".split(), 4)
    >>> len(a), a[1] == b[1]   # block 2 has the same tokens but a different parent, so a different key
    (2, False)
    """
    keys, parent = [], ""
    for start in range(0, len(tokens) - len(tokens) % block_size, block_size):
        digest = hashlib.sha256((parent + "|" + " ".join(tokens[start:start + block_size])).encode()).hexdigest()
        keys.append(digest[:6])
        parent = digest
    return keys


def hash_chain(block_size: int = 4, *, width: float | None = None) -> Diagram:
    """Three prompts as chains of hashed blocks: the first fills the cache, the second (same system prompt
    first) hits its leading blocks, the third (question first) hits nothing although it holds the same text.

    The hit counts are checked against :func:`calc.prefix.hit_tokens_for_layout`. On a wide screen each
    request is a row of blocks, left to right; on a phone, a column, top to bottom.

    >>> d = hash_chain()
    >>> d.caption.split(". ")[1]
    'Request B starts with the same 12 tokens and reuses 3 blocks (12 tokens); request C puts its question first and reuses 0'
    >>> d.svg().count("✓ hit"), d.narrow.svg().count("✓ hit")
    (3, 3)
    """
    if width is None:
        return for_every_screen(lambda w: hash_chain(block_size, width=w))
    layout = layout_for(width)
    shared = len(SYSTEM_PROMPT)
    rows = [("A", "system prompt, then question", SYSTEM_PROMPT + QUESTION_A, [("stable", shared), ("variable", 4)]),
            ("B", "system prompt, then question", SYSTEM_PROMPT + QUESTION_B, [("stable", shared), ("variable", 4)]),
            ("C", "question, then system prompt", QUESTION_B + SYSTEM_PROMPT, [("variable", 4), ("stable", shared)])]
    cached = set(block_hashes(rows[0][2], block_size))
    chains = []
    for index, (_, _, tokens, layout_parts) in enumerate(rows):
        keys, hits, leading = block_hashes(tokens, block_size), [], True
        for key in keys:
            leading = index > 0 and leading and key in cached  # a hit only while every block before it hit
            hits.append(leading)
        expected = hit_tokens_for_layout(layout_parts, block_size)["hit_tokens"] if index else 0
        if sum(hits) * block_size != expected:
            raise AssertionError(f"the picture's hits ({sum(hits)} blocks) disagree with calc.prefix ({expected} tokens)")
        chains.append((keys, hits))
    blocks = max(len(keys) for keys, _ in chains)
    margin, line_h = 8, 14
    if layout == "wide":  # a row per request, its blocks left to right
        gap = 22
        box_w = min(128, (width - 2 * margin - (blocks - 1) * gap) / blocks)
    else:  # a column per request, its blocks top to bottom
        gap = 18
        box_w = (width - 2 * margin - (len(rows) - 1) * 10) / len(rows)
    # A block holds its tokens (wrapped), its key, and on a phone a line of its own for a hit: all one height.
    token_lines = max(len(wrap(" ".join(tokens[start:start + block_size]), 11, box_w - 8))
                      for _, _, tokens, _ in rows for start in range(0, len(tokens), block_size))
    box_h = 12 + line_h * (token_lines + 1 + (layout == "narrow"))
    headings = [wrap(f"{name}: {order}", 12, box_w, bold=True) for name, order, _, _ in rows]  # a phone's columns
    shapes = []
    y_end = 0
    for index, ((name, order, tokens, _), (keys, hits)) in enumerate(zip(rows, chains)):
        if layout == "wide":
            x0, y0 = margin, 18 + index * (box_h + 40)
            shapes.append(text(x0, y0, f"request {name}: {order}", anchor="start", size=12, weight="600"))
            y0 += 8
        else:
            x0, y0 = margin + index * (box_w + 10), 18
            for row, content in enumerate(headings[index]):
                shapes.append(text(x0 + box_w / 2, y0 + row * 15, content, size=12, weight="600"))
            y0 += 15 * max(len(lines) for lines in headings) - 4
        for b, key in enumerate(keys):
            x = x0 + (b * (box_w + gap) if layout == "wide" else 0)
            y = y0 + (0 if layout == "wide" else b * (box_h + gap))
            hit = hits[b]
            cls = "d-ok" if hit else ("d-muted" if index else "d-k")
            words = " ".join(tokens[b * block_size:(b + 1) * block_size])
            shapes.append(rect(x, y, box_w, box_h, cls, title=f"block {b + 1}: {words}"))
            on = "d-on-fill" if cls != "d-muted" else ""
            lines = wrap(words, 11, box_w - 8) + [f"key {key}" + (" ✓ hit" if hit and layout == "wide" else "")]
            if layout == "narrow" and hit:
                lines.append("✓ hit")
            first_y = y + (box_h - len(lines) * line_h) / 2 + 10  # the lines centred in the box
            for row, content in enumerate(lines):
                shapes.append(text(x + box_w / 2, first_y + row * line_h, content, size=11, cls=on,
                                   weight="600" if content.startswith("✓") else ""))
            if b and layout == "wide":
                shapes.append(arrow(x - gap + 2, y + box_h / 2, x - 2, y + box_h / 2))
            elif b:
                shapes.append(arrow(x + box_w / 2, y - gap + 2, x + box_w / 2, y - 2))
            y_end = max(y_end, y + box_h)
    note = "key of a block = hash(key of the block before it, its own tokens)"
    y = y_end + 20
    for content in wrap(note, 11, width - 2 * margin):
        shapes.append(text(margin, y, content, anchor="start", size=11))
        y += 15
    hit_counts = [sum(hits) for _, hits in chains]
    drawn_w = 2 * margin + (blocks * box_w + (blocks - 1) * 22 if layout == "wide" else len(rows) * box_w + (len(rows) - 1) * 10)
    return Diagram(
        "hash-chain",
        "The parent-hash chain of prefix caching",
        f"Three prompts cut into blocks of {block_size} tokens, each block keyed by the hash of the previous "
        f"block's key and its own tokens. Request A fills the cache. Request B starts with the same system prompt, "
        f"so its first {hit_counts[1]} keys match and hit. Request C starts with its question, so every key after it "
        f"differs and it hits {hit_counts[2]} blocks, although it holds the same system prompt.",
        drawn_w, y - 6, shapes,
        f"Each block's key hashes its parent's key with its own {block_size} tokens, so a block matches only if "
        f"everything before it matches. Request B starts with the same {shared} tokens and reuses {hit_counts[1]} blocks "
        f"({hit_counts[1] * block_size} tokens); request C puts its question first and reuses {hit_counts[2]}. Stable content "
        f"first, variable content last.",
        layout=layout,
    )
