"""calc.sim.workload: arrivals, lengths, classes, one seed."""

import math
import statistics

import pytest
from hypothesis import given, settings, strategies as st

from calc.errors import CalcError
from calc.sim.workload import (
    CHAT_CV, CHAT_OUTPUT_MEAN_TOKENS, CHAT_PROMPT_MEAN_TOKENS, RequestClass, Workload, generate_requests,
    hyperexponential_params, lognormal_params,
)
from calc.units import NS_PER_S


def gaps_s(requests):
    times = [r.arrival_ns for r in requests]
    return [(b - a) / NS_PER_S for a, b in zip([0] + times[:-1], times)]


def test_same_seed_same_requests_other_seed_other_requests():
    wl = Workload(requests=200, classes=(RequestClass(lengths="chat"),))
    a = [(r.arrival_ns, r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, 5, 4096)]
    b = [(r.arrival_ns, r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, 5, 4096)]
    c = [(r.arrival_ns, r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, 6, 4096)]
    assert a == b
    assert a != c


def test_lengths_never_move_arrivals():
    fixed = Workload(requests=300, classes=(RequestClass(),))
    chat = Workload(requests=300, classes=(RequestClass(lengths="chat", prefix_tokens=50),))
    assert [r.arrival_ns for r in generate_requests(fixed, 9, 8192)] == [r.arrival_ns for r in generate_requests(chat, 9, 8192)]


def test_poisson_gaps_have_the_mean_and_spread_of_an_exponential():
    gaps = gaps_s(generate_requests(Workload(rate_per_s=5.0, requests=20_000), 1, 8192))
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(0.2, rel=0.02)
    assert statistics.pstdev(gaps) / mean == pytest.approx(1.0, rel=0.05)


def test_bursty_gaps_keep_the_rate_and_raise_the_variability():
    wl = Workload(arrival="bursty", rate_per_s=5.0, burstiness=4.0, requests=40_000)
    gaps = gaps_s(generate_requests(wl, 2, 8192))
    mean = statistics.fmean(gaps)
    assert mean == pytest.approx(0.2, rel=0.03)
    assert (statistics.pstdev(gaps) / mean) ** 2 == pytest.approx(4.0, rel=0.15)


def test_hyperexponential_fit_keeps_mean_and_squared_cv():
    p, a, b = hyperexponential_params(2.0, 9.0)
    mean = p / a + (1 - p) / b
    second = 2 * (p / a**2 + (1 - p) / b**2)
    assert mean == pytest.approx(0.5)
    assert (second - mean**2) / mean**2 == pytest.approx(9.0)


def test_all_at_once_and_duration():
    assert {r.arrival_ns for r in generate_requests(Workload(arrival="all-at-once", requests=50), 0, 8192)} == {0}
    cut = generate_requests(Workload(rate_per_s=10, requests=10_000, duration_s=30.0), 0, 8192)
    assert 250 < len(cut) < 350
    assert cut[-1].arrival_ns <= 30 * NS_PER_S


def test_lognormal_parameters_give_the_requested_mean_and_cv():
    mu, sigma = lognormal_params(337.99, 1.0)
    mean = math.exp(mu + sigma**2 / 2)
    cv = math.sqrt(math.exp(sigma**2) - 1)
    assert mean == pytest.approx(337.99)
    assert cv == pytest.approx(1.0)


def test_chat_lengths_follow_the_published_means_and_have_a_long_tail():
    wl = Workload(arrival="all-at-once", requests=30_000, classes=(RequestClass(lengths="chat"),))
    reqs = generate_requests(wl, 4, 100_000)  # a limit that truncates nothing
    prompts = [r.prompt_tokens for r in reqs]
    outputs = [r.output_tokens for r in reqs]
    assert statistics.fmean(prompts) == pytest.approx(CHAT_PROMPT_MEAN_TOKENS, rel=0.04)
    assert statistics.fmean(outputs) == pytest.approx(CHAT_OUTPUT_MEAN_TOKENS, rel=0.04)
    median = statistics.median(outputs)
    assert median == pytest.approx(CHAT_OUTPUT_MEAN_TOKENS / math.sqrt(1 + CHAT_CV**2), rel=0.04)
    assert sorted(outputs)[int(0.99 * len(outputs))] > 5 * median  # long right tail


@settings(max_examples=40, deadline=None)
@given(seed=st.integers(0, 2**32 - 1), max_len=st.integers(64, 4096), prefix=st.integers(0, 40))
def test_every_request_fits_the_maximum_length(seed, max_len, prefix):
    wl = Workload(arrival="all-at-once", requests=60, classes=(RequestClass(lengths="chat", prefix_tokens=prefix),))
    for r in generate_requests(wl, seed, max_len):
        assert r.prompt_tokens + r.output_tokens <= max_len
        assert r.prompt_tokens >= prefix + 1 and r.output_tokens >= 1


def test_classes_take_their_shares_and_share_their_prefixes():
    classes = (RequestClass(name="chat", share=0.7, prefix_tokens=100, prefix_variants=3),
               RequestClass(name="doc", share=0.2, prompt_tokens=6000, output_tokens=300),
               RequestClass(name="batch", share=0.1, prompt_tokens=500, output_tokens=800))
    reqs = generate_requests(Workload(requests=10_000, classes=classes), 3, 8192)
    counts = [sum(r.class_index == i for r in reqs) / len(reqs) for i in range(3)]
    assert counts == pytest.approx([0.7, 0.2, 0.1], abs=0.02)
    chat = [r for r in reqs if r.class_index == 0]
    assert {r.prefix_key for r in chat} == {0, 1, 2}
    assert all(r.prompt_tokens == 1124 and r.prefix_tokens == 100 for r in chat)
    assert all(r.prefix_key == -1 and r.prompt_tokens == 6000 for r in reqs if r.class_index == 1)


def test_bad_input_names_the_field():
    with pytest.raises(CalcError) as err:
        generate_requests(Workload(), -1, 8192)
    assert err.value.field == "seed"
    with pytest.raises(CalcError) as err:
        generate_requests(Workload(classes=(RequestClass(prompt_tokens=8000, output_tokens=500),)), 0, 8192)
    assert err.value.field == "max_model_len" and "8500" in str(err.value)
    with pytest.raises(CalcError) as err:
        hyperexponential_params(1.0, 0.5)
    assert err.value.field == "burstiness"
