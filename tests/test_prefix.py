"""Prefix caching: whole blocks of identical leading tokens, the order of the prompt, and bad input."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.prefix import cached_prefix_tokens, fleet_prefill_saved, hit_tokens_for_layout, prefix_cache_hit


def test_the_lesson_system_prompt_hits_in_whole_blocks():
    r = prefix_cache_hit(shared_tokens=2500, variable_tokens=1024, block_size_tokens=16, order="stable-first")
    assert r["hit_tokens"] == 2496  # 156 full blocks; the last 4 shared tokens share a block with the question
    assert r["computed_tokens"] == 1028


def test_variable_first_ruins_every_block():
    r = prefix_cache_hit(shared_tokens=2500, variable_tokens=1024, block_size_tokens=16, order="variable-first")
    assert r["hit_tokens"] == 0 and r["hit_rate"] == 0


def test_stable_parts_after_a_variable_part_never_hit():
    r = hit_tokens_for_layout([("stable", 1000), ("variable", 50), ("stable", 3000)], 16)
    assert r["leading_identical_tokens"] == 1000 and r["hit_tokens"] == 992
    assert hit_tokens_for_layout([("stable", 1000), ("variable", 0), ("stable", 3000)], 16)["hit_tokens"] == 4000 - 16


def test_a_fully_cached_prompt_still_computes_its_last_token():
    assert cached_prefix_tokens(4096, 4096, 16) == 4080  # vLLM: max hit = prompt - 1, then whole blocks
    assert cached_prefix_tokens(4097, 4097, 16) == 4096


def test_the_first_request_pays_in_full():
    r = fleet_prefill_saved(requests=1, shared_tokens=2500, variable_tokens=200)
    assert r["tokens_saved"] == 0
    r = fleet_prefill_saved(requests=1000, shared_tokens=2500, variable_tokens=200)
    assert r["tokens_with_cache"] == 2700 + 999 * 204


@given(shared=st.integers(0, 50_000), variable=st.integers(1, 20_000), block=st.integers(1, 256))
def test_stable_first_never_loses_to_variable_first(shared, variable, block):
    a = prefix_cache_hit(shared_tokens=shared, variable_tokens=variable, block_size_tokens=block, order="stable-first")
    b = prefix_cache_hit(shared_tokens=shared, variable_tokens=variable, block_size_tokens=block, order="variable-first")
    assert a["hit_tokens"] >= b["hit_tokens"] == 0
    assert a["hit_tokens"] % block == 0 and a["hit_tokens"] <= shared
    assert shared - a["hit_tokens"] < block or a["hit_tokens"] == (shared + variable - 1) // block * block
    assert 0 <= a["hit_rate"] < 1


@given(shared=st.integers(1, 50_000), variable=st.integers(1, 5_000), b1=st.integers(1, 64))
def test_smaller_blocks_hit_at_least_as_much_when_they_divide(shared, variable, b1):
    fine = prefix_cache_hit(shared_tokens=shared, variable_tokens=variable, block_size_tokens=b1)["hit_tokens"]
    coarse = prefix_cache_hit(shared_tokens=shared, variable_tokens=variable, block_size_tokens=2 * b1)["hit_tokens"]
    assert fine >= coarse


@pytest.mark.parametrize("call, field", [
    (lambda: prefix_cache_hit(shared_tokens=-1, variable_tokens=10), "parts[0] tokens"),
    (lambda: prefix_cache_hit(shared_tokens=10, variable_tokens=10, block_size_tokens=0), "block_size_tokens"),
    (lambda: prefix_cache_hit(shared_tokens=10, variable_tokens=10, order="random"), "order"),
    (lambda: hit_tokens_for_layout([], 16), "parts"),
    (lambda: hit_tokens_for_layout([("fixed", 10)], 16), "parts[0] kind"),
    (lambda: hit_tokens_for_layout([("stable", 0)], 16), "parts"),
    (lambda: fleet_prefill_saved(requests=0, shared_tokens=10, variable_tokens=10), "requests"),
    (lambda: cached_prefix_tokens(10, 0, 16), "prompt_tokens"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field


def test_prefix_caching_scenario_enters_a_layout_as_its_leading_identical_run():
    from calc.prefix import TIMESTAMP_TOKENS, prefix_caching_scenario
    from calc.sim_views import QUESTION_TOKENS, SYSTEM_PROMPT_TOKENS

    classes = {layout: prefix_caching_scenario(layout=layout)["workload"]["classes"][0]
               for layout in ("stable-first", "variable-first", "timestamp-first", "timestamp-after")}
    prompt = SYSTEM_PROMPT_TOKENS + QUESTION_TOKENS
    assert {k: (c["prefix_tokens"], c["prompt_tokens"]) for k, c in classes.items()} == {
        "stable-first": (SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS),
        "variable-first": (0, prompt),
        "timestamp-first": (0, prompt + TIMESTAMP_TOKENS),
        "timestamp-after": (SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS + TIMESTAMP_TOKENS),
    }
    assert prefix_caching_scenario(prefix_caching="off")["prefix_caching"] is False
    assert prefix_caching_scenario(rate_per_s=2)["workload"]["rate_per_s"] == 2
