"""calc.sim.kv_blocks: block arithmetic and the counted pool."""

import pytest
from hypothesis import given, strategies as st

from calc.errors import CalcError
from calc.sim.kv_blocks import BlockPool, blocks_for_tokens, reservation_blocks


@given(tokens=st.integers(0, 10**7), size=st.integers(1, 4096))
def test_blocks_hold_the_tokens_with_less_than_one_block_spare(tokens, size):
    n = blocks_for_tokens(tokens, size)
    assert n * size >= tokens
    assert (n - 1) * size < tokens or n == 0


def test_contiguous_reserves_the_maximum_paged_nothing_up_front():
    assert reservation_blocks("contiguous", 2048, 16) == 128
    assert reservation_blocks("contiguous", 2050, 16) == 129
    assert reservation_blocks("paged", 2048, 16) == 0
    with pytest.raises(CalcError) as err:
        reservation_blocks("buddy", 2048, 16)
    assert err.value.field == "allocation"


def test_take_is_all_or_nothing_and_peak_is_recorded():
    pool = BlockPool(10, 16)
    assert pool.take(7)
    assert not pool.take(4)
    assert (pool.free, pool.used, pool.peak_used) == (3, 7, 7)
    pool.give(5)
    assert (pool.free, pool.used, pool.peak_used) == (8, 2, 7)


def test_returning_more_than_was_taken_is_an_error():
    pool = BlockPool(4, 16)
    with pytest.raises(CalcError):
        pool.give(1)


def test_pool_size_is_checked():
    with pytest.raises(CalcError) as err:
        BlockPool(0, 16)
    assert err.value.field == "kv_cache_blocks"
