"""Cost: the formula, the lesson's 9.7x from batch 1 to 10 and where it stops, pricing a replica, bad input."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.catalog import get_gpu
from calc.cost import (
    batching_discount, batching_limit, cost_vs_batch, price_replica, replica_usd_per_hour, sustained_at_latency,
    usd_per_million_tokens,
)
from calc.errors import CalcError
from calc.roofline import decode_step, step_coefficients

H100 = get_gpu("h100-sxm-80gb")
C70 = step_coefficients("llama-3.1-70b", H100, tp=4)  # the lesson's replica, bf16
CONTEXT = 1024 + 256 // 2  # a 1,024-token prompt half-way through its 256-token answer


def test_formula():
    # hourly cost / (tokens/s x 3,600) x 10^6
    assert math.isclose(usd_per_million_tokens(15.12, 1000), 15.12 / 3.6)
    assert usd_per_million_tokens(0, 1000) == 0


def test_ten_times_the_batch_nearly_ten_times_cheaper():
    # LESSON.md: 70B on 4 H100 at bf16, about 9.7x from batch 1 to 10 while memory-bound.
    assert round(batching_discount(C70, context_tokens=CONTEXT, batch_low=1, batch_high=10), 1) == 9.7
    assert round(batching_discount(C70, context_tokens=1280, batch_low=1, batch_high=10), 1) == 9.7
    rows = cost_vs_batch(C70, usd_per_hour=replica_usd_per_hour(3.78, 4), context_tokens=CONTEXT, batches=[1, 10])
    assert round(rows[0]["usd_per_million_tokens"] / rows[1]["usd_per_million_tokens"], 1) == 9.7
    assert all(r["bound"] == "memory" for r in rows)


def test_and_where_it_stops():
    # Less beyond: from 10 to 100 the saving is well short of 10x ...
    assert batching_discount(C70, context_tokens=CONTEXT, batch_low=10, batch_high=100) < 8.5
    # ... and the batch where batching stops being nearly linear (step(1)/step(b) >= 0.9):
    limit = batching_limit(C70, context_tokens=CONTEXT)
    assert 30 <= limit <= 50
    t1 = decode_step(C70, batch=1, context_tokens=CONTEXT)["time_s"]
    assert t1 / decode_step(C70, batch=limit, context_tokens=CONTEXT)["time_s"] >= 0.9
    assert t1 / decode_step(C70, batch=limit + 1, context_tokens=CONTEXT)["time_s"] < 0.9
    # by half-linear (the step has doubled) the KV cache is nearly full of 1,280-token sequences
    assert batching_limit(C70, context_tokens=CONTEXT, efficiency_floor=0.5) > 200


@settings(max_examples=100, deadline=None)
@given(batch=st.integers(1, 200), extra=st.integers(1, 200), context=st.integers(1, 8192))
def test_cost_per_token_falls_with_batch_while_memory_bound(batch, extra, context):
    rows = cost_vs_batch(C70, usd_per_hour=15.12, context_tokens=context, batches=[batch, batch + extra])
    if rows[1]["bound"] == "memory":
        assert rows[1]["usd_per_million_tokens"] < rows[0]["usd_per_million_tokens"]


def test_price_a_replica_from_gpu_hours_and_sustained_tokens():
    r = price_replica(usd_per_gpu_hour=3.78, gpus=4, sustained_tokens_per_s=2000)
    assert r["usd_per_hour"] == 15.12 and r["gpu_hours_per_hour"] == 4
    assert math.isclose(r["usd_per_million_tokens"], 15.12 / (2000 * 3600) * 1e6)
    assert math.isclose(r["usd_per_month"], 15.12 * 730)


def test_sustained_rate_respects_the_latency_target():
    r = sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.020, max_batch=4096)
    assert r["limited_by"] == "latency" and r["itl_s"] <= 0.020
    over = decode_step(C70, batch=r["batch"] + 1, context_tokens=CONTEXT)["time_s"]
    assert over > 0.020
    assert sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.001)["batch"] == 0


@pytest.mark.parametrize("call, field", [
    (lambda: usd_per_million_tokens(-1, 10), "usd_per_hour"),
    (lambda: usd_per_million_tokens(1, 0), "tokens_per_s"),
    (lambda: usd_per_million_tokens(1, float("nan")), "tokens_per_s"),
    (lambda: replica_usd_per_hour(3.78, 0), "gpus"),
    (lambda: price_replica(usd_per_gpu_hour=3.78, gpus=4, sustained_tokens_per_s=-5), "sustained_tokens_per_s"),
    (lambda: cost_vs_batch(C70, usd_per_hour=1, context_tokens=100, batches=[]), "batches"),
    (lambda: cost_vs_batch(C70, usd_per_hour=1, context_tokens=100, batches=[0]), "batch"),
    (lambda: batching_limit(C70, context_tokens=100, efficiency_floor=0), "efficiency_floor"),
    (lambda: batching_discount(C70, context_tokens=0), "context_tokens"),
    (lambda: sustained_at_latency(C70, context_tokens=100, itl_target_s=0), "itl_target_s"),
])
def test_bad_input_names_the_field(call, field):
    with pytest.raises(CalcError) as err:
        call()
    assert err.value.field == field
