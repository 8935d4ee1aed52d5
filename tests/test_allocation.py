"""Contiguous against paged KV allocation."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.allocation import (
    POLICIES, Request, compare_allocation, concurrency, contiguous_max_concurrency, paged_waste_bound_tokens,
    reserved_tokens, sharegpt_like_requests, token_state_fraction,
)
from calc.errors import CalcError


def test_lesson_contiguous_cap_is_48():
    assert contiguous_max_concurrency(399_169, 8192) == 48
    assert contiguous_max_concurrency(lesson.kv_capacity().kv_cache_tokens, 8192) == 48


def test_reservations_follow_the_paper_rules():
    # vLLM paper 6.1: Pow2 reserves outputs rounded up to a power of two (25 -> 32)
    assert reserved_tokens(100, 25, "pow2") == 132
    assert reserved_tokens(100, 25, "oracle") == 125
    assert reserved_tokens(100, 25, "max", max_model_len=2048) == 2048
    assert reserved_tokens(100, 25, "paged", block_size=16, generated_tokens=0) == 112
    assert reserved_tokens(100, 25, "paged", block_size=16) == 128
    assert reserved_tokens(2000, 40, "pow2", max_model_len=2048) == 2048  # capped at the maximum


def test_order_of_policies_matches_the_paper():
    reqs = sharegpt_like_requests(2000, seed=0)
    share = {p: r.token_state_fraction for p, r in compare_allocation(reqs).items()}
    assert share["max"] < share["pow2"] < share["oracle"] < share["paged"]
    assert share["paged"] > 0.96  # paged: under 4% waste (vLLM paper and launch post)
    assert 0.15 < share["max"] < 0.3  # same ballpark as Orca (Max)'s 20.4%


def test_paged_waste_under_one_block_per_sequence():
    for length in (1, 15, 16, 17, 1000, 2047):
        waste = reserved_tokens(length, 0, "paged", block_size=16) - length
        assert 0 <= waste <= paged_waste_bound_tokens(16)


def test_snapshot_vs_lifetime():
    assert token_state_fraction([(100, 100)], "oracle", over_lifetime=False) == 1.0
    assert token_state_fraction([(100, 100)], "oracle") == pytest.approx((100 + 50.5) / 200)
    assert token_state_fraction([2048], "max", max_model_len=2048, over_lifetime=False) == 1.0


def test_concurrency_paged_far_above_contiguous():
    assert concurrency(399_169, [(1024, 256)], "max", max_model_len=8192) == 48
    assert concurrency(399_169, [(1024, 256)], "paged", max_model_len=8192) == 399_169 // 1280


def test_sample_is_deterministic_and_bounded():
    a = sharegpt_like_requests(500, seed=7)
    assert a == sharegpt_like_requests(500, seed=7)
    assert a != sharegpt_like_requests(500, seed=8)
    assert all(1 <= r.prompt_tokens and r.total_tokens <= 2048 for r in a)
    mean_p = math.fsum(r.prompt_tokens for r in a) / len(a)
    assert 120 < mean_p < 200


@pytest.mark.parametrize("requests", [[], [0], [(0, 0)], [(-1, 5)], [3000], "abc", None, [(1, 2, 3)], [1.5]])
def test_bad_requests(requests):
    with pytest.raises(CalcError):
        token_state_fraction(requests, "paged")


@pytest.mark.parametrize("kwargs,field", [({"policy": "buddy"}, "policy"), ({"block_size": 0}, "block_size"),
                                          ({"max_model_len": 0}, "max_model_len")])
def test_bad_parameters(kwargs, field):
    args = {"policy": "paged", **kwargs}
    with pytest.raises(CalcError) as err:
        token_state_fraction([10], args.pop("policy"), **args)
    assert err.value.field == field


def test_to_dict_rounds():
    d = compare_allocation([Request(161, 338)])["pow2"].to_dict()
    assert set(d) == {"policy", "token_state_fraction", "waste_fraction", "peak_reserved_tokens_per_request"}


@settings(max_examples=150, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)).filter(lambda t: sum(t) >= 1),
                min_size=1, max_size=20), st.sampled_from([1, 8, 16, 32, 128]))
def test_fractions_are_shares_and_paged_beats_contiguous(reqs, block):
    res = compare_allocation(reqs, max_model_len=2048, block_size=block)
    for r in res.values():
        assert 0 < r.token_state_fraction <= 1 and math.isclose(r.token_state_fraction + r.waste_fraction, 1)
    assert res["max"].token_state_fraction <= res["pow2"].token_state_fraction <= res["oracle"].token_state_fraction
    if block == 1:
        assert res["paged"].token_state_fraction == 1.0


@settings(max_examples=100, deadline=None)
@given(st.integers(1, 2000), st.integers(0, 2000), st.sampled_from([1, 16, 64]))
def test_paged_lifetime_sum_matches_a_loop(p, o, b):
    from calc.allocation import _lifetime_sums
    o = min(o, 2048 - p)
    tokens, reserved = _lifetime_sums(Request(p, o), "paged", 2048, b)
    if o == 0:
        assert tokens == p
        return
    assert tokens == sum(p + t for t in range(1, o + 1))
    assert reserved == sum(-(-(p + t) // b) * b for t in range(1, o + 1))


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 1000), st.integers(0, 1000)).filter(lambda t: sum(t) >= 1),
                min_size=1, max_size=20), st.sampled_from(POLICIES), st.sampled_from([1, 16, 256]),
       st.integers(0, 10**6))
def test_concurrency_is_capacity_over_the_mean_peak(reqs, policy, block, capacity):
    peak = compare_allocation(reqs, max_model_len=2048, block_size=block)[policy].peak_reserved_tokens_per_request
    assert concurrency(capacity, reqs, policy, max_model_len=2048, block_size=block) == int(capacity // peak)
    assert peak == math.fsum(reserved_tokens(p, o, policy, max_model_len=2048, block_size=block)
                             for p, o in reqs) / len(reqs)


def test_whole_floats_are_lengths_and_bools_are_not():
    # Thousands of checked requests take a fast path; what it does not take still goes through the checks.
    assert token_state_fraction([(3.0, 2.0)], "oracle", over_lifetime=False) == 1.0
    assert token_state_fraction([Request(100, 28)], "paged", block_size=16, over_lifetime=False) == 1.0
    for bad, field in (([True], "output_tokens"), ([(5, -1)], "output_tokens"), ([(3000, 0)], "prompt_tokens"),
                       ([(1000, 1049)], "requests")):
        with pytest.raises(CalcError) as err:
            token_state_fraction(bad, "paged")
        assert err.value.field == field
