"""Tensor-parallel all-reduce and pipeline bubbles: formulas, limits, properties, bad input."""

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.parallel import (
    ALLREDUCE_LATENCY_S, allreduce_bytes_on_wire, allreduce_time_s, pipeline_bubble_fraction, pipeline_step_time_s,
)


def test_ring_all_reduce_moves_two_n_minus_one_over_n():
    assert allreduce_bytes_on_wire(1_000_000, 2) == 1_000_000
    assert allreduce_bytes_on_wire(1_000_000, 8) == 1_750_000
    assert allreduce_bytes_on_wire(1_000_000, 1) == 0


def test_all_reduce_time_is_latency_plus_bytes_over_link():
    # 70B at TP 4, one decode token: 8,192 activations in bf16.
    t = allreduce_time_s(8192 * 2, 4, 450e9)
    assert math.isclose(t, ALLREDUCE_LATENCY_S + 1.5 * 16384 / 450e9)
    assert allreduce_time_s(1e9, 1, 450e9) == 0.0
    # a prefill chunk of 8,192 tokens is bandwidth-dominated
    big = allreduce_time_s(8192 * 8192 * 2, 4, 450e9, latency_s=0)
    assert big > 10 * ALLREDUCE_LATENCY_S


def test_pipeline_bubble():
    assert pipeline_bubble_fraction(4, 1) == 0.75
    assert pipeline_bubble_fraction(1, 7) == 0
    assert math.isclose(pipeline_bubble_fraction(4, 16), 3 / 19)
    assert math.isclose(pipeline_step_time_s(0.01, 4, 4), 0.07)


@given(p=st.integers(1, 64), m=st.integers(1, 1000), dm=st.integers(1, 1000))
def test_more_microbatches_shrink_the_bubble(p, m, dm):
    assert 0 <= pipeline_bubble_fraction(p, m + dm) <= pipeline_bubble_fraction(p, m) < 1


@given(n=st.integers(2, 64), size=st.floats(0, 1e10), extra=st.floats(0, 1e10))
def test_all_reduce_time_grows_with_the_message(n, size, extra):
    assert allreduce_time_s(size + extra, n, 450e9) >= allreduce_time_s(size, n, 450e9) > 0


@pytest.mark.parametrize("call, field", [
    (lambda: allreduce_time_s(-1, 4, 450e9), "message_bytes"),
    (lambda: allreduce_time_s(1, 0, 450e9), "gpus"),
    (lambda: allreduce_time_s(1, 4, 0), "link_bytes_per_s"),
    (lambda: allreduce_time_s(1, 4, 450e9, latency_s=-1), "latency_s"),
    (lambda: pipeline_bubble_fraction(0, 1), "stages"),
    (lambda: pipeline_bubble_fraction(2, 0.5), "microbatches"),
    (lambda: pipeline_step_time_s(0, 2, 2), "stage_time_s"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field
