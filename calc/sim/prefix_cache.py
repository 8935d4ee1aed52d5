"""Prefix caching: KV blocks of identical leading tokens, computed once and reused.

Requests that start with the same system prompt share its KV: the engine keys
each full block of the shared prefix by the tokens before it (vLLM hashes a
block together with its parent's hash, so a block matches only if every token
before it matches too), and a new request whose leading blocks are cached
skips their prefill. Only whole blocks hit. Blocks no running request uses stay
cached until memory is needed; then the least recently used go first, and
within one prefix its last blocks go first (vLLM frees a request's blocks in
reverse order), so what stays cached is always a leading run.

This model tracks, per distinct prefix, how many of its leading blocks are
cached and how many running requests hold them: O(1) per request. It caches
shared system prompts only; a request's own tokens are unique and would never
hit (a request preempted and recomputed therefore recomputes its own part).
Sources: vLLM automatic prefix caching (docs.vllm.ai, "Automatic Prefix
Caching", design: hash of parent block + block tokens, LRU eviction of
unreferenced blocks); SGLang RadixAttention (Zheng et al. 2024) for the same idea.

>>> from calc.sim.kv_blocks import BlockPool
>>> pool = BlockPool(100, 16)
>>> cache = PrefixCache(pool)
>>> cache.acquire(7, prefix_blocks=10)          # first request: a miss, 10 blocks to compute
0
>>> cache.acquire(7, prefix_blocks=10)          # second: all 10 hit
10
>>> pool.used
10
"""

from __future__ import annotations

from collections import OrderedDict

from calc.sim.kv_blocks import BlockPool

__all__ = ["PrefixCache"]


class PrefixCache:
    """Cached leading blocks per prefix key, shared by reference, evicted least recently used.

    ``acquire(key, prefix_blocks)`` registers a running request on the prefix
    and returns how many of its ``prefix_blocks`` leading blocks were already
    cached (hits); the missing ones are allocated from the pool at once and
    belong to the prefix from then on (a later request may hit them).
    ``release(key)`` drops the reference; at zero references the blocks become
    evictable. Hit rate = hit tokens / prompt tokens looked up, as vLLM
    reports it (prefix cache hits over queries, in tokens).

    >>> from calc.sim.kv_blocks import BlockPool
    >>> pool = BlockPool(12, 16); cache = PrefixCache(pool)
    >>> cache.acquire(1, 8), cache.release(1), pool.evictable
    (0, None, 8)
    >>> pool.take(10), pool.evictable                # taking 10 evicts 6 of its 8 blocks
    (True, 2)
    >>> pool.give(10); cache.acquire(1, 8)           # 2 leading blocks still hit
    2
    """

    __slots__ = ("pool", "entries", "lru", "hit_tokens", "query_tokens", "in_use_blocks")

    def __init__(self, pool: BlockPool):
        self.pool = pool
        pool.cache = self
        self.entries: dict[int, list[int]] = {}  # key -> [cached leading blocks, running references]
        self.lru: OrderedDict[int, None] = OrderedDict()  # unreferenced keys with cached blocks, oldest first
        self.hit_tokens = 0
        self.query_tokens = 0
        self.in_use_blocks = 0  # cached blocks of referenced prefixes, kept as a running count

    def acquire(self, key: int, prefix_blocks: int) -> int:
        """Reference prefix ``key``; return cached leading blocks (hits), allocating the missing ones.

        The caller must have checked that ``prefix_blocks - hits`` blocks are
        available (:meth:`missing_blocks`).
        """
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = [0, 0]
        pool = self.pool
        if entry[1] == 0 and entry[0]:
            del self.lru[key]
            pool.evictable -= entry[0]
            self.in_use_blocks += entry[0]
        entry[1] += 1
        hits = min(entry[0], prefix_blocks)
        missing = prefix_blocks - entry[0]
        if missing > 0:
            if not pool.take(missing):
                raise RuntimeError("PrefixCache.acquire called without room for the missing blocks")
            entry[0] = prefix_blocks
            self.in_use_blocks += missing
        return hits

    def missing_blocks(self, key: int, prefix_blocks: int) -> int:
        """Blocks of the prefix a request would have to allocate now (not cached)."""
        entry = self.entries.get(key)
        return prefix_blocks - min(entry[0], prefix_blocks) if entry else prefix_blocks

    def cached_blocks(self, key: int) -> int:
        """Leading blocks of prefix ``key`` held in the cache now (in use or evictable)."""
        entry = self.entries.get(key)
        return entry[0] if entry else 0

    def referenced(self, key: int) -> bool:
        """True while a running request holds prefix ``key`` (its blocks are then not evictable)."""
        entry = self.entries.get(key)
        return bool(entry and entry[1])

    def release(self, key: int) -> None:
        """Drop one running reference; unreferenced blocks become evictable (most recently used)."""
        entry = self.entries[key]
        entry[1] -= 1
        if entry[1] == 0 and entry[0]:
            self.lru[key] = None
            self.pool.evictable += entry[0]
            self.in_use_blocks -= entry[0]

    def evict(self, n: int) -> None:
        """Free ``n`` evictable blocks, oldest prefix first, each prefix from its last block back."""
        pool, lru, entries = self.pool, self.lru, self.entries
        while n > 0:
            key = next(iter(lru))
            entry = entries[key]
            m = entry[0] if entry[0] <= n else n
            entry[0] -= m
            pool.evictable -= m
            pool.free += m
            n -= m
            if entry[0] == 0:
                del lru[key]

    @property
    def hit_rate(self) -> float:
        """Hit tokens over looked-up prompt tokens (0 before any lookup)."""
        return self.hit_tokens / self.query_tokens if self.query_tokens else 0.0

    def in_use_tokens(self) -> int:
        """Token slots of prefix blocks referenced by running requests (each shared block once); O(1)."""
        return self.in_use_blocks * self.pool.block_size
