"""Prefix caching: how much of a prompt's prefill a cache of KV blocks can skip.

An engine with automatic prefix caching keys every *full* KV block by the block's
tokens and all the tokens before it (vLLM, docs "Automatic Prefix Caching";
SGLang's RadixAttention matches a radix tree of token prefixes the same way). A
new request reuses a block only if every token from the start of the prompt up to
the end of that block is identical to a cached request. So:

* only the leading run of tokens shared by all requests can ever hit;
* it hits in whole blocks (the partial block at its end is recomputed);
* at least the prompt's last token is always computed, to get the logits for the
  first output token (vLLM ``kv_cache_manager.py``: "When all tokens hit the
  cache, we must recompute the last token").

Put the stable part (system prompt, tools, few-shot examples) first and the
variable part (the user's question, a timestamp) last: the order decides the hit
rate.

>>> stable = prefix_cache_hit(shared_tokens=2500, variable_tokens=200, block_size_tokens=16, order="stable-first")
>>> stable["hit_tokens"], round(stable["hit_rate"], 3)
(2496, 0.924)
>>> prefix_cache_hit(shared_tokens=2500, variable_tokens=200, block_size_tokens=16, order="variable-first")["hit_tokens"]
0
"""

from __future__ import annotations

from collections.abc import Sequence

from calc.errors import CalcError, check_choice, check_range

__all__ = ["ORDERS", "cached_prefix_tokens", "prefix_cache_hit", "hit_tokens_for_layout", "fleet_prefill_saved"]

ORDERS = ("stable-first", "variable-first")
MAX_TOKENS = 10_000_000
MAX_BLOCK = 4096


def cached_prefix_tokens(identical_leading_tokens: int, prompt_tokens: int, block_size_tokens: int) -> int:
    """Tokens of one prompt served from cache, given how many leading tokens match a cached prompt.

    ``floor(min(identical, prompt - 1) / block) x block``: whole blocks only, and
    never the prompt's last token (it must run to produce logits).
    Source: vLLM v1 ``KVCacheManager.get_computed_blocks`` (max cache hit length
    = prompt length - 1; full blocks only).

    >>> cached_prefix_tokens(2500, 2700, 16)
    2496
    >>> cached_prefix_tokens(2048, 2048, 16)  # a full repeat still recomputes its last block
    2032
    >>> cached_prefix_tokens(15, 400, 16)  # less than one block matches: nothing hits
    0
    """
    prompt_tokens = check_range("prompt_tokens", prompt_tokens, 1, MAX_TOKENS, integer=True)
    identical = check_range("identical_leading_tokens", identical_leading_tokens, 0, prompt_tokens, integer=True)
    block = check_range("block_size_tokens", block_size_tokens, 1, MAX_BLOCK, integer=True)
    usable = min(identical, prompt_tokens - 1)
    return (usable // block) * block


def hit_tokens_for_layout(parts: Sequence[tuple[str, int]], block_size_tokens: int) -> dict:
    """Cache hit for a prompt given as ordered parts, each ``("stable", n)`` or ``("variable", n)``.

    Stable parts are identical in every request, variable parts differ. Only the
    leading run of stable parts can hit; a stable part after the first variable
    part never does, because its blocks' keys include the differing tokens before
    it. Returns prompt tokens, the identical leading run, hit tokens and hit rate
    for a warm cache (every request after the first).
    Source: the block keying of vLLM's automatic prefix caching (docs, "Automatic
    Prefix Caching") and :func:`cached_prefix_tokens`.

    >>> r = hit_tokens_for_layout([("stable", 2000), ("variable", 100), ("stable", 500)], 16)
    >>> r["leading_identical_tokens"], r["hit_tokens"], r["prompt_tokens"]
    (2000, 2000, 2600)
    """
    if not parts:
        raise CalcError("parts must list at least one (kind, tokens) pair; got none", "parts")
    prompt = 0
    leading = 0
    still_leading = True
    for i, part in enumerate(parts):
        if not isinstance(part, (tuple, list)) or len(part) != 2:
            raise CalcError(f"parts[{i}] must be a (kind, tokens) pair; got {part!r}", "parts")
        kind, tokens = part
        check_choice(f"parts[{i}] kind", kind, ("stable", "variable"))
        tokens = check_range(f"parts[{i}] tokens", tokens, 0, MAX_TOKENS, integer=True)
        prompt += tokens
        if kind == "stable" and still_leading:
            leading += tokens
        elif kind == "variable" and tokens > 0:
            still_leading = False
    if prompt == 0:
        raise CalcError("parts must hold at least one token in total; got 0", "parts")
    hit = cached_prefix_tokens(leading, prompt, block_size_tokens)
    return {
        "prompt_tokens": prompt,
        "leading_identical_tokens": leading,
        "hit_tokens": hit,
        "computed_tokens": prompt - hit,
        "hit_rate": hit / prompt,
    }


def prefix_cache_hit(*, shared_tokens: int, variable_tokens: int, block_size_tokens: int = 16, order: str = "stable-first") -> dict:
    """Hit rate and prefill saved for a prompt of a shared part and a per-request part.

    ``order`` is ``"stable-first"`` (shared part, then the variable part) or
    ``"variable-first"`` (the variable part first, which ruins every block after
    it). The default block of 16 tokens is vLLM's default ``block_size``.
    Source: :func:`hit_tokens_for_layout`; vLLM engine arguments (block size 16).

    >>> r = prefix_cache_hit(shared_tokens=2500, variable_tokens=1024, block_size_tokens=16)
    >>> r["hit_tokens"], r["computed_tokens"], round(r["prefill_saved_fraction"], 3)
    (2496, 1028, 0.708)
    """
    check_choice("order", order, ORDERS)
    stable = ("stable", shared_tokens)
    variable = ("variable", variable_tokens)
    parts = [stable, variable] if order == "stable-first" else [variable, stable]
    result = hit_tokens_for_layout(parts, block_size_tokens)
    result.update(
        order=order,
        shared_tokens=shared_tokens,
        variable_tokens=variable_tokens,
        block_size_tokens=block_size_tokens,
        prefill_saved_fraction=result["hit_rate"],
    )
    return result


def fleet_prefill_saved(*, requests: int, shared_tokens: int, variable_tokens: int, block_size_tokens: int = 16, order: str = "stable-first") -> dict:
    """Prefill tokens computed for ``requests`` prompts, with and without the cache.

    The first request fills the cache (a cold miss); every later one hits as in
    :func:`prefix_cache_hit`, assuming the shared blocks stay cached (no
    eviction). Source: :func:`prefix_cache_hit`.

    >>> r = fleet_prefill_saved(requests=100, shared_tokens=2500, variable_tokens=200)
    >>> r["tokens_without_cache"], r["tokens_with_cache"], round(r["saved_fraction"], 3)
    (270000, 22896, 0.915)
    """
    requests = check_range("requests", requests, 1, MAX_TOKENS, integer=True)
    one = prefix_cache_hit(shared_tokens=shared_tokens, variable_tokens=variable_tokens, block_size_tokens=block_size_tokens, order=order)
    prompt = one["prompt_tokens"]
    without = requests * prompt
    with_cache = prompt + (requests - 1) * one["computed_tokens"]
    return {
        "requests": requests,
        "tokens_without_cache": without,
        "tokens_with_cache": with_cache,
        "tokens_saved": without - with_cache,
        "saved_fraction": (without - with_cache) / without,
    }
