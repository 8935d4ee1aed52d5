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
from calc.roofline import decode_step, steady_state_step, step_coefficients

H100 = get_gpu("h100-sxm-80gb")
C70 = step_coefficients("llama-3.1-70b", H100, tp=4)  # the lesson's replica, bf16
CONTEXT = 1024 + 256 // 2  # a 1,024-token prompt half-way through its 256-token answer


def test_formula():
    # hourly cost / (tokens/s x 3,600) x 10^6
    assert math.isclose(usd_per_million_tokens(15.12, 1000), 15.12 / 3.6)
    assert usd_per_million_tokens(0, 1000) == 0


def test_ten_times_the_batch_nearly_ten_times_cheaper():
    # Step 16 (docs/lesson/16-cost-per-million-tokens.md): 70B on 4 H100 at bf16, about 9.7x from batch 1 to 10 while memory-bound.
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


# ---- the sustained rate with the prompts' prefill in the same steps ---------------------------------------------

# Results of the drill's former copy (calc.widgets.drill_price_a_replica.sustained_with_prefill, before it was
# folded into calc.cost), recorded by value: (model, gpu, tp, weights, prompt, answer, target s, cap) ->
# (batch, limited_by, tokens/s, ITL s). sustained_at_latency with prompt_tokens must give the same.
FORMER_PREFILL_RESULTS = [
    (("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", 1024, 256, 0.05, 256), (113, "latency", 2274.99425438464,
                                                                           0.049670455115309826)),
    (("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", 1024, 256, 0.025, 256), (55, "latency", 2200.2531020522993,
                                                                            0.0249971241711685)),
    (("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", 1024, 257, 0.017, 256), (21, "latency", 1239.0301563860899,
                                                                            0.016948740021995288)),
    (("llama-3.1-8b", "h100-sxm-80gb", 1, "fp8", 5000, 5000, 0.2, 4096), (480, "latency", 2404.095589684046,
                                                                          0.19965928229296537)),
    (("mixtral-8x7b", "h100-sxm-80gb", 2, "fp8", 2000, 300, 0.025, 4096), (150, "latency", 6039.721634819703,
                                                                           0.024835581682313375)),
    (("mistral-7b", "h100-sxm-80gb", 1, "bf16", 8000, 400, 0.05, 4096), (62, "latency", 1243.743709296404,
                                                                         0.04984949836254762)),
    (("llama-3.1-8b", "l4", 1, "bf16", 4000, 500, 0.05, 256), (0, "latency", 0.0, 0.06828107452631578)),
    (("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", 1024, 256, 0.2, 17), (17, "max_batch", 1022.5522699021737,
                                                                          0.01662506700183294)),
]


@pytest.mark.parametrize("case, expected", FORMER_PREFILL_RESULTS)
def test_prefill_term_gives_the_drills_former_results(case, expected):
    model, gpu, tp, weights, prompt, answer, target, cap = case
    coef = step_coefficients(model, get_gpu(gpu), tp=tp, weights=weights, kv_dtype="bf16")
    r = sustained_at_latency(coef, context_tokens=prompt + answer // 2, itl_target_s=target, max_batch=cap,
                             prompt_tokens=prompt, answer_tokens=answer)
    batch, limited, tps, itl = expected
    assert (r["batch"], r["limited_by"]) == (batch, limited)
    assert r["tokens_per_s"] == pytest.approx(tps, rel=1e-12) and r["itl_s"] == pytest.approx(itl, rel=1e-12)


def test_default_is_decode_only_and_unchanged():
    # the lesson's replica at 50 ms under vLLM's 256 cap: the figures step 17 quotes
    r = sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.050, max_batch=256)
    assert (r["batch"], round(r["tokens_per_s"]), r["limited_by"]) == (256, 8266, "max_batch")
    assert r == sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.050, max_batch=256, prompt_tokens=0)
    assert r["itl_s"] == decode_step(C70, batch=256, context_tokens=CONTEXT)["time_s"]


def test_with_prefill_the_steps_are_the_steady_state_ones():
    r = sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.050, max_batch=256, prompt_tokens=1024)
    assert (r["batch"], round(r["tokens_per_s"]), r["limited_by"]) == (113, 2275, "latency")
    at = steady_state_step(C70, batch=113, input_tokens=1024, output_tokens=256)
    assert r["itl_s"] == at["time_s"] and r["tokens_per_s"] == at["output_tokens_per_s"]
    assert steady_state_step(C70, batch=114, input_tokens=1024, output_tokens=256)["time_s"] > 0.050
    # the answer length left out is 2 x (context - prompt): 256 here
    assert r == sustained_at_latency(C70, context_tokens=CONTEXT, itl_target_s=0.050, max_batch=256,
                                     prompt_tokens=1024, answer_tokens=256)


@settings(max_examples=60, deadline=None)
@given(prompt=st.integers(1, 8192), answer=st.integers(1, 4096), target_ms=st.integers(5, 500),
       cap=st.integers(1, 512))
def test_prefill_only_costs_batch(prompt, answer, target_ms, cap):
    # Llama 3.1 70B has no sliding window, so prefill only adds work: never a bigger batch than decode only,
    # and the batch found is the largest that meets the target.
    context = prompt + answer // 2
    kw = dict(context_tokens=context, itl_target_s=target_ms / 1000, max_batch=cap)
    mixed = sustained_at_latency(C70, prompt_tokens=prompt, answer_tokens=answer, **kw)
    decode = sustained_at_latency(C70, **kw)
    assert mixed["batch"] <= decode["batch"] and mixed["tokens_per_s"] <= decode["tokens_per_s"]
    step = lambda b: steady_state_step(C70, batch=b, input_tokens=prompt, output_tokens=answer)["time_s"]  # noqa: E731
    if mixed["batch"]:
        assert mixed["itl_s"] <= target_ms / 1000
        if mixed["limited_by"] == "latency":
            assert step(mixed["batch"] + 1) > target_ms / 1000
    else:
        assert step(1) > target_ms / 1000


@pytest.mark.parametrize("kwargs, field", [
    (dict(context_tokens=1152, prompt_tokens=-1), "prompt_tokens"),
    (dict(context_tokens=1152, prompt_tokens=1.5), "prompt_tokens"),
    (dict(context_tokens=1000, prompt_tokens=1024), "context_tokens"),          # no room for an answer
    (dict(context_tokens=1152, prompt_tokens=1024, answer_tokens=300), "context_tokens"),  # 1024 + 150 != 1152
    (dict(context_tokens=1152, prompt_tokens=1024, answer_tokens=0), "answer_tokens"),
    (dict(context_tokens=1152, answer_tokens=-3), "answer_tokens"),
])
def test_prefill_bad_input_names_the_field(kwargs, field):
    with pytest.raises(CalcError) as err:
        sustained_at_latency(C70, itl_target_s=0.05, **kwargs)
    assert err.value.field == field and str(err.value.args[0])
