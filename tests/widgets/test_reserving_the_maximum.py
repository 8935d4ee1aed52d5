"""Step 4: contiguous reservation caps concurrency at capacity // max length; its facts and its simulation."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import framework
from calc.widgets import reserving_the_maximum as step

VIEW = "reserving_the_maximum.reservation"


def outputs(**args):
    return framework.call(VIEW, args)["outputs"]


def test_the_lesson_figure_399169_over_8192_is_48():
    out = outputs()
    assert out["contiguous_requests"]["value"] == 48
    assert out["formula"]["text"] == "399,169 tokens // 8,192 = 48"
    assert out["request_tokens"]["value"] == 1_280
    assert out["share_at_end"]["text"] == "15.6%"  # 1,280 / 8,192
    assert out["share_lifetime"]["value"] == pytest.approx(0.141, abs=0.001)
    assert out["promised_tokens"]["value"] == 48 * (8_192 - 1_280) == 331_776
    assert out["paged_requests"]["value"] == 311  # 399,169 // 1,280


def test_the_charts_add_up_to_the_cache_and_the_cap_halves_with_each_doubling():
    figures = framework.call(VIEW, {})["figures"]
    cache = figures["cache"]
    totals = [sum(trace["x"][i] for trace in cache["data"]) for i in range(2)]
    assert totals == [pytest.approx(399.169)] * 2
    names = [trace["name"] for trace in cache["data"]]
    assert names == ["holding tokens", "reserved, empty (promises)", "free"]
    line = figures["by_length"]["data"][0]
    assert dict(zip(line["x"], line["y"]))[131_072] == 3
    assert dict(zip(line["x"], line["y"]))[16_384] == 24


def test_facts_are_calcs_and_the_simulation_shows_the_cap():
    f = step.facts()
    assert (f["kv_tokens"], f["contiguous_requests"], f["paged_requests"]) == ("399,169", "48", "311")
    assert (f["quiz_max_model_len"], f["quiz_requests"], f["quiz_share"]) == ("32,768", "12", "3.91%")
    assert f["requests_at_context_window"] == "3"
    assert f["orca_max_pct"] == "20.4%" and f["paper_max_len"] == "2,048"
    # The simulator (exact parameter count, 399,440 tokens) admits the same 48 slabs, and never more.
    assert f["sim_kv_tokens"] == "399,168" and f["sim_running_max"] == "48"
    broken = step.preset_summary(step.BREAK_PRESET)
    fixed = step.preset_summary(step.FIX_PRESET)
    assert broken["running_max"] == 48 and broken["queue_depth_max"] > 100
    assert broken["kv_token_share"] < 0.2 < 0.9 < fixed["kv_token_share"]
    assert broken["ttft_p99_s"] > 10 * fixed["ttft_p99_s"]
    assert step.preset_summary(step.BREAK_PRESET, step.CALM_RATE_PER_S)["queue_depth_max"] < 10


@settings(max_examples=40, deadline=None)
@given(capacity=st.integers(10_000, 5_000_000), max_len=st.integers(2_048, 131_072))
def test_contiguous_never_admits_more_than_paged(capacity, max_len):
    out = outputs(kv_cache_tokens=capacity, max_model_len=max_len) if capacity >= max_len else None
    if out is None:
        with pytest.raises(CalcError):
            outputs(kv_cache_tokens=capacity, max_model_len=max_len)
        return
    assert out["contiguous_requests"]["value"] == capacity // max_len
    assert out["contiguous_requests"]["value"] <= out["paged_requests"]["value"]
    assert 0 < out["share_lifetime"]["value"] <= out["share_at_end"]["value"] <= 1


@pytest.mark.parametrize("args, field", [
    ({"max_model_len": 1_024}, "max_model_len"),          # shorter than the 1,280-token request
    ({"max_model_len": 100}, "max_model_len"),            # below the control's range
    ({"kv_cache_tokens": 5_000}, "max_model_len"),        # not even one slab fits
    ({"answer_tokens": 0}, "answer_tokens"),
    ({"prompt_tokens": "many"}, "prompt_tokens"),
])
def test_bad_input_is_a_calc_error_naming_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        outputs(**args)
    assert caught.value.field == field
    assert field in str(caught.value)
