"""A ShareGPT class asked for a mean far from the dataset's samples that mean (calc.sim.workload.sharegpt_scale_and_cap).

Before the fix, ``--lengths sharegpt --prompt-tokens 1024`` kept the benchmark's 1,024-token cap fixed and stretched
the table until only its bottom 0.003% stayed under the cap: the redraws ran out and each prompt took the whole
context, a mean of about 7,700 tokens.
"""

import argparse
import math

import pytest

from calc.cli.simulate import scenario_from_args
from calc.sim import workload
from calc.sim.workload import (SHAREGPT_FILTER, RequestClass, Workload, _kept_moments, generate_requests,
                               quantile_scale_for_kept_mean, sharegpt_table)


def _means(prompt_tokens, output_tokens, tokenizer="llama3", requests=3000, max_model_len=8192, seed=1):
    cls = RequestClass(lengths="sharegpt", prompt_tokens=prompt_tokens, output_tokens=output_tokens)
    reqs = generate_requests(Workload(arrival="all-at-once", requests=requests, classes=(cls,)), seed, max_model_len,
                             tokenizer=tokenizer)
    return (math.fsum(r.prompt_tokens for r in reqs) / len(reqs), math.fsum(r.output_tokens for r in reqs) / len(reqs),
            reqs)


@pytest.mark.parametrize("tokenizer", ["llama3", "mistral-v1"])
@pytest.mark.parametrize("prompt_mean, output_mean", [(1024, 256), (600, 400), (300, 1500)])
def test_sampled_means_land_on_the_asked_ones(tokenizer, prompt_mean, output_mean):
    prompt, output, reqs = _means(prompt_mean, output_mean, tokenizer)
    assert prompt == pytest.approx(prompt_mean, rel=0.04)
    assert output == pytest.approx(output_mean, rel=0.04)
    # ShareGPT's spread, not a sliver under a cap: the median well below the mean, the longest several times it.
    prompts = sorted(r.prompt_tokens for r in reqs)
    assert prompts[len(prompts) // 2] < 0.85 * prompt_mean < 3 * prompt_mean < prompts[-1]


def test_the_cli_default_answer_with_a_1024_token_mean():
    # The command: python -m calc simulate --lengths sharegpt --prompt-tokens 1024
    scenario = scenario_from_args(argparse.Namespace(lengths="sharegpt", prompt_tokens=1024))
    reqs = generate_requests(scenario.workload, scenario.seed, scenario.max_model_len)
    mean = math.fsum(r.prompt_tokens for r in reqs) / len(reqs)
    assert mean == pytest.approx(1024, rel=0.04)  # was 7,7xx


def test_near_the_datasets_mean_the_benchmarks_cap_stays():
    # The published runs' means (and their re-count in Mistral's tokens) keep the benchmark's own filter and factor.
    least, most_prompt, _ = SHAREGPT_FILTER
    for tokenizer, mean in (("llama3", 229.711), ("llama3", 213), ("mistral-v1", 254)):
        quantiles = sharegpt_table(tokenizer).prompt_quantiles
        scale, cap = workload.sharegpt_scale_and_cap(quantiles, mean, least - 0.5, most_prompt + 0.5)
        assert cap == most_prompt + 0.5
        assert scale == quantile_scale_for_kept_mean(quantiles, mean, least - 0.5, most_prompt + 0.5)


def test_far_above_it_the_cap_drops_the_allowed_share_and_moves_continuously():
    quantiles = sharegpt_table("llama3").prompt_quantiles
    scale, cap = workload.sharegpt_scale_and_cap(quantiles, 1024, 3.5, 1024.5)
    share, total = _kept_moments(quantiles, scale, 3.5, cap)
    # The cap drops the table's top share it dropped at the hand-over (Llama 3's prompts: 2%, at most the allowed 5%).
    hand_over_share = _kept_moments(quantiles, workload._hand_over_scale(quantiles, 3.5, 1024.5), 3.5, 1024.5)[0]
    assert share == pytest.approx(hand_over_share, abs=1e-9)
    assert 1 - workload.SHAREGPT_CAP_TRIM_MAX <= share < 0.99
    assert total / share == pytest.approx(1024, rel=1e-9)
    # At the hand-over the two rules agree: the factor and the cap change little across it.
    found = []
    for mean in range(200, 400, 2):
        found.append(workload.sharegpt_scale_and_cap(quantiles, mean, 3.5, 1024.5))
    for (s0, c0), (s1, c1) in zip(found, found[1:]):
        assert abs(s1 - s0) < 0.05 and abs(c1 - c0) < 15
    assert found[0][1] == 1024.5 and found[-1][1] > 1024.5  # the hand-over lies inside the range scanned
