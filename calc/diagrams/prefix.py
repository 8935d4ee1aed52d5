"""Prefix caching's parent-hash chain: a block matches only if every token before it matches (step 12)."""

from __future__ import annotations

import hashlib

from calc.diagrams.svg import Diagram, arrow, rect, text
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


def hash_chain(block_size: int = 4) -> Diagram:
    """Three prompts as chains of hashed blocks: the first fills the cache, the second (same system prompt
    first) hits its leading blocks, the third (question first) hits nothing although it holds the same text.

    The hit counts are checked against :func:`calc.prefix.hit_tokens_for_layout`.

    >>> d = hash_chain()
    >>> d.caption.split(". ")[1]
    'Request B starts with the same 12 tokens and reuses 3 blocks (12 tokens); request C puts its question first and reuses 0'
    """
    shared = len(SYSTEM_PROMPT)
    rows = [("A: system prompt, then question", SYSTEM_PROMPT + QUESTION_A, [("stable", shared), ("variable", 4)]),
            ("B: system prompt, then question", SYSTEM_PROMPT + QUESTION_B, [("stable", shared), ("variable", 4)]),
            ("C: question, then system prompt", QUESTION_B + SYSTEM_PROMPT, [("variable", 4), ("stable", shared)])]
    cached = set(block_hashes(rows[0][1], block_size))
    box_w, gap, left, row_h = 128, 26, 10, 92
    shapes = []
    hits = []
    for index, (label, tokens, layout) in enumerate(rows):
        y = 20 + index * row_h
        keys = block_hashes(tokens, block_size)
        hit_blocks = 0
        leading = True
        shapes.append(text(left, y, f"request {label}", anchor="start", size=12, weight="600"))
        for b, key in enumerate(keys):
            x = left + b * (box_w + gap)
            hit = index > 0 and leading and key in cached
            leading = hit
            hit_blocks += hit
            cls = "d-ok" if hit else ("d-muted" if index else "d-k")
            words = " ".join(tokens[b * block_size:(b + 1) * block_size])
            shapes.append(rect(x, y + 10, box_w, 50, cls, title=f"block {b + 1}: {words}"))
            on = "d-on-fill" if cls != "d-muted" else ""
            shapes.append(text(x + box_w / 2, y + 28, words if len(words) < 22 else words[:20] + "…", size=11, cls=on))
            shapes.append(text(x + box_w / 2, y + 48, f"key {key}" + (" ✓ hit" if hit else ""), size=11, cls=on))
            if b:
                shapes.append(arrow(x - gap + 2, y + 35, x - 2, y + 35))
        expected = hit_tokens_for_layout(layout, block_size)["hit_tokens"] if index else 0
        if index and hit_blocks * block_size != expected:
            raise AssertionError(f"the picture's hits ({hit_blocks} blocks) disagree with calc.prefix ({expected} tokens)")
        hits.append(hit_blocks)
    width = left + 4 * (box_w + gap)
    shapes.append(text(left, 20 + 3 * row_h - 8,
                       "key of a block = hash(key of the block before it, its own tokens)", anchor="start", size=11))
    return Diagram(
        "hash-chain",
        "The parent-hash chain of prefix caching",
        f"Three prompts cut into blocks of {block_size} tokens, each block keyed by the hash of the previous "
        f"block's key and its own tokens. Request A fills the cache. Request B starts with the same system prompt, "
        f"so its first {hits[1]} keys match and hit. Request C starts with its question, so every key after it "
        f"differs and it hits {hits[2]} blocks, although it holds the same system prompt.",
        width, 20 + 3 * row_h, shapes,
        f"Each block's key hashes its parent's key with its own {block_size} tokens, so a block matches only if "
        f"everything before it matches. Request B starts with the same {shared} tokens and reuses {hits[1]} blocks "
        f"({hits[1] * block_size} tokens); request C puts its question first and reuses {hits[2]}. Stable content "
        f"first, variable content last.",
    )
