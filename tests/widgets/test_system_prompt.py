"""Step 11: the repeated system prompt's cost, its ceiling on the replica, the live run, and bad input."""

import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson, prefix, sim_views
from calc.errors import CalcError
from calc.roofline import max_throughput, ttft_s
from calc.sim import presets
from calc.widgets import framework
from calc.widgets import system_prompt as step

LOAD = "system_prompt.prefill_load"


def test_defaults_are_the_preset():
    data = presets.load_data("step11-system-prompt")
    request_class = data["workload"]["classes"][0]
    assert (sim_views.SYSTEM_PROMPT_TOKENS, sim_views.QUESTION_TOKENS, step.ANSWER_TOKENS) == (2_500, 1_024, 256)
    assert request_class["prefix_tokens"] == sim_views.SYSTEM_PROMPT_TOKENS
    assert step.RATE_PER_S == 4.0 and data["prefix_caching"] is False


def test_prefill_time_is_the_roofline_ttft_when_nothing_is_cached():
    coef = lesson.coefficients()
    for prompt in (1, 1_024, 3_524, 8_192, 20_000):
        assert prefix.prefill_time_s(prompt) == pytest.approx(ttft_s(coef, prompt_tokens=prompt, chunk_tokens=8_192))
    assert round(prefix.prefill_time_s(3_524) * 1000) == 283
    assert round(prefix.prefill_time_s(1_024) * 1000) == 82
    # A cache hit removes the prefix's work but not the attention to it: a little more than the question alone.
    assert prefix.prefill_time_s(1_024) < prefix.prefill_time_s(3_524, cached_tokens=2_496) < prefix.prefill_time_s(3_524)


def test_uncached_ceiling_equals_max_throughput():
    coef = lesson.coefficients()
    for system in (0, 2_500, 6_000):
        mine = prefix.replica_ceiling(system)
        theirs = max_throughput(coef, input_tokens=system + 1_024, output_tokens=256,
                                kv_capacity_tokens=lesson.KV_CAPACITY_TOKENS_LESSON_GB)
        assert mine["requests_per_s"] == pytest.approx(theirs["output_tokens_per_s"] / 256, rel=1e-12)
        assert mine["batch"] == theirs["batch"]


def test_ceiling_figures():
    assert round(prefix.replica_ceiling(2_500)["requests_per_s"], 2) == 3.05
    assert prefix.replica_ceiling(2_500)["batch"] == 105  # the KV cache holds 105 copies of the prompt
    assert round(prefix.replica_ceiling(0)["requests_per_s"], 2) == 9.05
    cached = prefix.replica_ceiling(2_500, cached=True)
    assert cached["computed_prompt_tokens"] == 1_028 and cached["batch"] == 256
    assert round(cached["requests_per_s"], 2) == 7.61


@settings(max_examples=25, deadline=None)
@given(st.integers(0, 6_000), st.integers(0, 6_000))
def test_a_longer_system_prompt_never_raises_the_ceiling(a, b):
    low, high = sorted((a, b))
    assert prefix.replica_ceiling(high)["requests_per_s"] <= prefix.replica_ceiling(low)["requests_per_s"] + 1e-12
    # Caching never hurts.
    assert prefix.replica_ceiling(high, cached=True)["requests_per_s"] >= prefix.replica_ceiling(high)["requests_per_s"] - 1e-12


def test_widget_defaults():
    view = framework.call(LOAD, {})
    out = view["outputs"]
    assert out["prompt_tokens"]["text"] == "3,524 tokens, 71% of them the same every time"
    assert out["prefill_s"]["text"] == "283 ms, 3.5× the question alone"
    assert out["prefill_share"]["value"] == pytest.approx(4 * prefix.prefill_time_s(3_524))
    assert out["prefill_share"]["text"] == "113% at 4 requests/s"
    assert out["ceiling_per_s"]["text"] == "3.05 requests/s (cached: 7.61)"
    assert out["verdict"]["text"] == "Over capacity: 4/s arrive, at most 3.05/s served"
    assert out["repeated_usd_per_million"]["text"] == "$846 (224 GPU-hours at $3.78)"
    figure = view["figures"]["ceiling"]
    assert [t["name"] for t in figure["data"]] == ["prefilled in every request", "cached once (step 12)", "arrival rate"]
    assert figure["data"][0]["y"][0] == pytest.approx(9.04953, rel=1e-5)
    assert figure["data"][0]["x"][10] == 2_500 and figure["data"][0]["y"][10] == pytest.approx(3.05176, rel=1e-5)


def test_widget_keeps_up_at_a_low_rate():
    out = framework.call(LOAD, {"rate_per_s": "2"})["outputs"]
    assert out["verdict"]["text"] == "Keeps up: 66% of the ceiling"
    assert out["prefill_share"]["text"] == "57% at 2 requests/s"


def test_bad_input_names_the_field():
    with pytest.raises(CalcError) as err:
        framework.call(LOAD, {"system_prompt_tokens": "-1"})
    assert err.value.field == "system_prompt_tokens"
    with pytest.raises(CalcError) as err:
        framework.call(LOAD, {"system_prompt_tokens": "6000", "question_tokens": "6000"})
    assert err.value.field == "system_prompt_tokens" and "8,192" in str(err.value)
    with pytest.raises(CalcError) as err:
        framework.call(LOAD, {"rate_per_s": "abc"})
    assert err.value.field == "rate_per_s"
    with pytest.raises(CalcError) as err:
        prefix.prefill_time_s(100, cached_tokens=100)
    assert err.value.field == "cached_tokens"


def test_scenario_and_stream_match_the_preset():
    assert sim_views.system_prompt_scenario() == {k: v for k, v in presets.load_data("step11-system-prompt").items()
                               if k not in ("lesson_step", "title")}
    entry, bound = framework.bind("system_prompt.replica", {"frame_interval_s": 30})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    summary = presets.run("step11-system-prompt").summary
    assert final["outputs"]["ttft_p99_s"]["value"] == summary["ttft_p99_s"]
    assert final["outputs"]["requests_completed"]["value"] == 400
    assert final["outputs"]["prefix_cache_hit_rate"]["text"] == "cache off"
    entry, bound = framework.bind("system_prompt.replica", {"frame_interval_s": 30, "prefix_caching": "on"})
    final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    assert final["outputs"]["prefix_cache_hit_rate"]["text"] == "71%"


def test_facts():
    f = step.facts()
    assert f["prompt_tokens"] == "3,524" and f["system_share_pct"] == "71%"
    assert f["prefill_ms"] == "283 ms" and f["question_prefill_ms"] == "82 ms"
    assert f["prefill_share_pct"] == "113%"
    assert (f["ceiling_rps"], f["bare_ceiling_rps"], f["ceiling_batch"]) == ("3.05", "9.05", "105")
    assert f["repeated_usd_per_million"] == "$846"
    # The simulated run: the replica drowns at 4 requests/s and keeps up at 2.
    assert f["ttft_p99_s"] == "51.8 s" and f["ttft_p50_s"] == "22.6 s"
    assert f["queue_max"] == "140" and f["preemptions"] == "18" and f["kv_peak_pct"] == "100%"
    assert f["throughput_rps"] == "2.53" and f["output_tokens_per_s"] == "647"
    assert f["repeated_tokens"] == "1,000,000"
    assert f["slow_ttft_p99_s"] == "2.03 s" and f["quiz_share_pct"] == "57%"
    assert math.isclose(float(f["ceiling_rps"]), 3.05)
