"""The KV cache as a pool of fixed-size blocks, counted rather than listed.

Paged allocation (vLLM's PagedAttention) gives a sequence one block of
``block_size`` token slots at a time, as it grows, so at most one partly
filled block per sequence is wasted. Contiguous allocation, the pre-vLLM way
(Orca "Max" in the vLLM paper), reserves ``max_model_len`` slots for every
request when it is admitted: memory full of promises. Both use this pool;
they differ in how many blocks a request takes and when.

The pool keeps counts only (free, cached-but-evictable, in use), so every
operation is O(1): which physical block holds which token does not change any
timing, and a block map for a chart is derived on demand from per-sequence
counts. Source: Kwon et al., "Efficient Memory Management for Large Language
Model Serving with PagedAttention", SOSP 2023, Sec. 4.

>>> pool = BlockPool(total_blocks=10, block_size=16)
>>> pool.take(blocks_for_tokens(40, 16)), pool.used, pool.free
(True, 3, 7)
>>> pool.take(8)
False
"""

from __future__ import annotations

from calc.errors import CalcError, check_choice, check_range

__all__ = ["ALLOCATIONS", "blocks_for_tokens", "reservation_blocks", "BlockPool"]

ALLOCATIONS = ("paged", "contiguous")


def blocks_for_tokens(tokens: int, block_size: int) -> int:
    """Blocks needed to hold ``tokens`` token slots: ``ceil(tokens / block_size)``.

    Source: vLLM's block table (one block per ``block_size`` tokens), Kwon et al. 2023, Sec. 4.2.

    >>> blocks_for_tokens(0, 16), blocks_for_tokens(16, 16), blocks_for_tokens(17, 16)
    (0, 1, 2)
    """
    return -(-tokens // block_size)


def reservation_blocks(allocation: str, max_model_len: int, block_size: int) -> int:
    """Blocks reserved up front per request: ``ceil(max_model_len / block_size)`` when contiguous, 0 when paged.

    Contiguous reservation of the maximum length is the "Orca (Max)" baseline of
    the vLLM paper (Kwon et al. 2023, Sec. 6.2, Fig. 2).

    >>> reservation_blocks("contiguous", 2048, 16), reservation_blocks("paged", 2048, 16)
    (128, 0)
    """
    check_choice("allocation", allocation, ALLOCATIONS)
    return blocks_for_tokens(max_model_len, block_size) if allocation == "contiguous" else 0


class BlockPool:
    """Counts of KV blocks: ``free``, ``evictable`` (prefix-cache blocks no one uses) and in use.

    ``take(n)`` first uses free blocks, then evicts cached ones through the
    attached prefix cache (least recently used first); it returns ``False``,
    changing nothing, when even that is not enough. ``give(n)`` returns blocks.
    ``peak_used`` records the most blocks ever in use (a conservation check:
    it never exceeds ``total_blocks``). Source: vLLM v1 KV cache manager
    (free queue with cached blocks evicted LRU), Kwon et al. 2023, Sec. 4.

    >>> pool = BlockPool(4, 16)
    >>> pool.take(3), pool.give(2), pool.used, pool.peak_used
    (True, None, 1, 3)
    """

    __slots__ = ("total_blocks", "block_size", "free", "evictable", "cache", "peak_used")

    def __init__(self, total_blocks: int, block_size: int):
        self.total_blocks = check_range("kv_cache_blocks", total_blocks, 1, 10**12, integer=True)
        self.block_size = check_range("block_size", block_size, 1, 1 << 20, integer=True)
        self.free = self.total_blocks
        self.evictable = 0
        self.cache = None  # a PrefixCache attaches itself here
        self.peak_used = 0

    @property
    def used(self) -> int:
        """Blocks held by running sequences (shared prefix blocks counted once)."""
        return self.total_blocks - self.free - self.evictable

    @property
    def available(self) -> int:
        """Blocks a new allocation may get: free plus evictable."""
        return self.free + self.evictable

    def take(self, n: int) -> bool:
        """Allocate ``n`` blocks if possible (evicting cached prefix blocks if needed)."""
        if n > self.free:
            if n > self.free + self.evictable:
                return False
            self.cache.evict(n - self.free)
        self.free -= n
        used = self.total_blocks - self.free - self.evictable
        if used > self.peak_used:
            self.peak_used = used
        return True

    def give(self, n: int) -> None:
        """Return ``n`` blocks to the free pool."""
        self.free += n
        if self.free + self.evictable > self.total_blocks:
            raise CalcError(f"blocks returned exceed the pool of {self.total_blocks}", "kv_cache_blocks")
