"""calc.sim.prefix_cache: hits on leading blocks, references, LRU eviction from the tail."""

from calc.sim.kv_blocks import BlockPool
from calc.sim.prefix_cache import PrefixCache


def test_second_request_hits_every_block_the_first_computed():
    pool = BlockPool(100, 16)
    cache = PrefixCache(pool)
    assert cache.acquire(1, 10) == 0
    assert cache.acquire(1, 10) == 10
    assert pool.used == 10  # shared blocks counted once
    assert cache.in_use_tokens() == 160


def test_unreferenced_blocks_stay_cached_until_memory_is_needed():
    pool = BlockPool(20, 16)
    cache = PrefixCache(pool)
    cache.acquire(1, 8)
    cache.release(1)
    assert (pool.used, pool.evictable, pool.free) == (0, 8, 12)
    assert cache.acquire(1, 8) == 8  # still there


def test_eviction_takes_the_least_recently_used_prefix_first_and_from_its_tail():
    pool = BlockPool(20, 16)
    cache = PrefixCache(pool)
    cache.acquire(1, 6)
    cache.acquire(2, 6)
    cache.release(1)  # prefix 1 is the older unreferenced one
    cache.release(2)
    assert pool.take(12)  # 8 free, then 4 evicted from prefix 1
    assert cache.cached_blocks(1) == 2 and cache.cached_blocks(2) == 6
    pool.give(12)
    assert cache.acquire(1, 6) == 2  # its two leading blocks survive; the rest is recomputed


def test_a_referenced_prefix_is_never_evicted():
    pool = BlockPool(10, 16)
    cache = PrefixCache(pool)
    cache.acquire(1, 6)
    assert not pool.take(5)
    assert cache.cached_blocks(1) == 6


def test_hit_rate_counts_tokens():
    pool = BlockPool(10, 16)
    cache = PrefixCache(pool)
    cache.query_tokens, cache.hit_tokens = 400, 300
    assert cache.hit_rate == 0.75


def test_in_use_count_matches_a_full_recount():
    import random

    rng = random.Random(7)
    pool = BlockPool(200, 16)
    cache = PrefixCache(pool)
    held = []
    for _ in range(2000):
        if held and rng.random() < 0.5:
            cache.release(held.pop(rng.randrange(len(held))))
        else:
            key, blocks = rng.randrange(12), rng.randint(1, 12)
            if cache.missing_blocks(key, blocks) <= pool.available - (0 if cache.referenced(key) else cache.cached_blocks(key)):
                cache.acquire(key, blocks)
                held.append(key)
        recount = sum(e[0] for e in cache.entries.values() if e[1] > 0)
        assert cache.in_use_blocks == recount == pool.used
