"""ShareGPT lengths in each model's own tokenizer's tokens (calc/data/sharegpt_lengths.json, calc.sim.workload)."""

import json
import math

import pytest

from calc.catalog import MODELS, Model
from calc.catalog.model import TOKENIZER_FAMILIES
from calc.errors import CalcError
from calc.sim.fleet_scenario import FleetScenario, fleet_requests
from calc.sim.workload import (
    DEFAULT_TOKENIZER, SHAREGPT_FILTER, SHAREGPT_LENGTHS_PATH, SHAREGPT_OUTPUT_QUANTILES, SHAREGPT_PROMPT_QUANTILES,
    SHAREGPT_QUANTILE_LEVELS, STREAM_LENGTHS, RequestClass, Workload, convert_sharegpt_means, generate_requests,
    quantile_at, quantile_mean, quantile_scale_for_kept_mean, sharegpt_bench_means, sharegpt_table, substream,
    tokenizer_of,
)
from calc.sim.workload import _kept_moments

with open(SHAREGPT_LENGTHS_PATH, encoding="utf-8") as _handle:
    DATA = json.load(_handle)

# The Llama 3 table as it was before tables per tokenizer (commit fbae201): the lesson's figures rest on it.
LLAMA3_PROMPT = (4, 7, 8, 10, 11, 12, 14, 15, 17, 19, 21, 24, 26, 31, 35, 41, 49, 60, 73, 88, 108, 131, 159, 188, 216,
                 245, 269, 296, 317, 343, 369, 398, 430, 467, 507, 553, 608, 674, 760, 768, 770, 773, 885, 956, 1000,
                 1009, 1022)
LLAMA3_OUTPUT = (4, 5, 8, 9, 11, 13, 15, 17, 19, 23, 26, 30, 35, 41, 49, 59, 71, 84, 98, 113, 130, 148, 168, 186, 204,
                 221, 239, 256, 273, 291, 309, 329, 351, 376, 404, 442, 487, 549, 632, 682, 742, 768, 772, 894, 1127,
                 1414, 1857)


def sharegpt_workload(prompt_mean, output_mean, requests=300):
    cls = RequestClass(lengths="sharegpt", prompt_tokens=round(prompt_mean), output_tokens=round(output_mean))
    return Workload(arrival="all-at-once", requests=requests, classes=(cls,))


def test_llama3_table_is_unchanged():
    assert SHAREGPT_PROMPT_QUANTILES == LLAMA3_PROMPT
    assert SHAREGPT_OUTPUT_QUANTILES == LLAMA3_OUTPUT
    table = sharegpt_table("llama3")
    assert (table.prompt_quantiles, table.output_quantiles) == (LLAMA3_PROMPT, LLAMA3_OUTPUT)
    assert table.pairs_kept == 15_822 and table.note == ""


def test_data_file_matches_calcs_levels_filter_and_families():
    assert tuple(DATA["levels"]) == SHAREGPT_QUANTILE_LEVELS
    assert tuple(DATA["filter"]) == SHAREGPT_FILTER
    assert set(DATA["tokenizers"]) == {"llama3", "mistral-v1", "qwen2"}
    for name, table in DATA["tokenizers"].items():
        assert name in TOKENIZER_FAMILIES
        for key in ("prompt_quantiles", "output_quantiles"):
            values = table[key]
            assert len(values) == len(SHAREGPT_QUANTILE_LEVELS)
            assert values == sorted(values), f"{name}.{key} must not decrease"
            assert values[0] >= SHAREGPT_FILTER[0]
        assert table["prompt_quantiles"][-1] <= SHAREGPT_FILTER[1]
        # The stored means are the sample's; the quantile function's own mean is within 1% of them.
        assert quantile_mean(table["prompt_quantiles"]) == pytest.approx(table["mean_prompt_tokens"], rel=0.01)
        assert quantile_mean(table["output_quantiles"]) == pytest.approx(table["mean_output_tokens"], rel=0.01)


def test_mistral_table_counts_more_tokens_than_llama3_by_the_measured_ratio():
    mistral, llama = sharegpt_table("mistral-v1"), sharegpt_table("llama3")
    prompt_ratio = mistral.mean_prompt_tokens / llama.mean_prompt_tokens
    output_ratio = mistral.mean_output_tokens / llama.mean_output_tokens
    # Measured: 32,000 SentencePiece pieces cut ShareGPT 10% (prompts, capped at 1,024) and 15% (answers) finer.
    assert prompt_ratio == pytest.approx(1.104, abs=0.001)
    assert output_ratio == pytest.approx(1.151, abs=0.001)
    # Quantile by quantile up to the p99 (never fewer tokens; the body's answers by about the mean ratio). Past it the
    # filter shapes the tail (prompt + answer at most 2,048 in each tokenizer's own tokens), so Mistral's is shorter.
    upto_p99 = [i for i, q in enumerate(SHAREGPT_QUANTILE_LEVELS) if q <= 0.99]
    for i in upto_p99:
        assert mistral.output_quantiles[i] >= llama.output_quantiles[i]
        assert mistral.prompt_quantiles[i] >= llama.prompt_quantiles[i]
    assert mistral.output_quantiles[-1] < llama.output_quantiles[-1]
    body = [i for i, q in enumerate(SHAREGPT_QUANTILE_LEVELS) if 0.5 <= q <= 0.95]
    ratios = [mistral.output_quantiles[i] / llama.output_quantiles[i] for i in body]
    assert min(ratios) > 1.08 and max(ratios) < 1.25
    assert math.fsum(ratios) / len(ratios) == pytest.approx(output_ratio, abs=0.03)
    assert quantile_mean(mistral.output_quantiles) / quantile_mean(llama.output_quantiles) == pytest.approx(
        output_ratio, rel=0.005)


def test_every_catalog_model_names_a_known_tokenizer_with_a_source():
    for key, model in MODELS.items():
        assert model.tokenizer in TOKENIZER_FAMILIES, key
        assert "huggingface.co/" in model.tokenizer_source and model.tokenizer_source.split()[0] in (
            "tokenizer.json", "tokenizer.model"), key
    assert {k for k, m in MODELS.items() if m.tokenizer == "mistral-v1"} == {"mistral-7b", "mixtral-8x7b"}
    assert {k for k, m in MODELS.items() if m.tokenizer == "llama3"} == {k for k in MODELS if k.startswith("llama-3")}
    assert tokenizer_of("qwen2.5-72b") == "qwen2"


def test_models_without_a_table_use_llama3_with_a_note():
    without = sorted(k for k, m in MODELS.items() if sharegpt_table(m.tokenizer).measured_with != m.tokenizer)
    assert without == ["deepseek-v3", "llama-2-7b"]
    for key in without:
        table = sharegpt_table(MODELS[key].tokenizer)
        assert table.measured_with == "llama3" and table.prompt_quantiles == LLAMA3_PROMPT
        assert MODELS[key].tokenizer in table.note and "Llama 3 table stands in" in table.note
    unknown = sharegpt_table(None)
    assert unknown.measured_with == DEFAULT_TOKENIZER and "not known" in unknown.note


def test_unknown_tokenizer_is_a_calc_error_naming_the_field():
    for call in (lambda: sharegpt_table("gpt2"),
                 lambda: generate_requests(Workload(requests=3), 0, 8192, tokenizer="gpt2"),
                 lambda: convert_sharegpt_means(230, 203, "llama3", "tiktoken")):
        with pytest.raises(CalcError) as err:
            call()
        assert err.value.field == "tokenizer" and "llama3, llama2, mistral-v1, qwen2, deepseek-v3" in str(err.value)
    with pytest.raises(CalcError) as err:
        Model(key="toy", name="Toy", layers=2, hidden_size=64, attention_heads=4, kv_heads=2, head_dim=16,
              intermediate_size=128, vocab_size=100, tied_embeddings=True, attention="gqa", tokenizer="gpt2")
    assert err.value.field == "tokenizer" and "got 'gpt2'" in str(err.value)


def test_workload_draws_from_the_tokenizers_table():
    seed, prompt_mean, output_mean = 4, 254, 234
    wl = sharegpt_workload(prompt_mean, output_mean, requests=1)
    (first,) = generate_requests(wl, seed, 8192, tokenizer="mistral-v1")
    # By hand: one uniform per length through Mistral's quantile table, scaled to the class's kept means.
    least, most_prompt, most_total = SHAREGPT_FILTER
    table = sharegpt_table("mistral-v1")
    scale_p = quantile_scale_for_kept_mean(table.prompt_quantiles, prompt_mean, least - 0.5, most_prompt + 0.5)
    scale_o = quantile_scale_for_kept_mean(table.output_quantiles, output_mean, least - 0.5,
                                           most_total - prompt_mean + 0.5)
    rng = substream(seed, STREAM_LENGTHS)
    u_p, u_o = rng.random(), rng.random()
    expected = (round(scale_p * quantile_at(table.prompt_quantiles, u_p)),
                round(scale_o * quantile_at(table.output_quantiles, u_o)))
    assert least <= expected[0] <= most_prompt and sum(expected) <= most_total  # kept at the first draw
    assert (first.prompt_tokens, first.output_tokens) == expected
    (llama_first,) = generate_requests(wl, seed, 8192, tokenizer="llama3")
    assert (llama_first.prompt_tokens, llama_first.output_tokens) != expected
    # The default is the Llama 3 table; a family with no table draws exactly the Llama 3 lengths.
    as_llama = [(r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, seed, 8192)]
    assert as_llama == [(llama_first.prompt_tokens, llama_first.output_tokens)]
    assert [(r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, seed, 8192, tokenizer="llama2")] == as_llama


def test_a_scenario_draws_in_its_models_tokens():
    workload = {"arrival": "all-at-once", "requests": 200, "lengths": "sharegpt", "prompt_tokens": 254,
                "output_tokens": 234}
    mixtral = FleetScenario.from_dict({"model": "mixtral-8x7b", "tp": 2, "workload": workload})
    llama = FleetScenario.from_dict({"model": "llama-3.1-8b", "tp": 1, "workload": workload})
    sc = mixtral.scenario
    expected = generate_requests(sc.workload, sc.seed, sc.max_model_len, tokenizer="mistral-v1")
    got = fleet_requests(mixtral)
    assert [(r.prompt_tokens, r.output_tokens) for r in got] == [(r.prompt_tokens, r.output_tokens) for r in expected]
    assert [r.output_tokens for r in fleet_requests(llama)] != [r.output_tokens for r in got]


def test_means_convert_by_the_measured_ratio():
    mistral, llama = sharegpt_table("mistral-v1"), sharegpt_table("llama3")
    p, o = convert_sharegpt_means(229.711, 203.068, "llama3", "mistral-v1")
    assert p == pytest.approx(229.711 * mistral.mean_prompt_tokens / llama.mean_prompt_tokens, rel=1e-12)
    assert o == pytest.approx(203.068 * mistral.mean_output_tokens / llama.mean_output_tokens, rel=1e-12)
    assert convert_sharegpt_means(p, o, "mistral-v1", "llama3") == pytest.approx((229.711, 203.068), rel=1e-12)
    assert sharegpt_bench_means("llama3") == (229.711, 203.068)
    assert sharegpt_bench_means("mistral-v1") == (p, o)
    assert sharegpt_bench_means("deepseek-v3") == (229.711, 203.068)  # no table: Llama 3's counts stand in
    # Drawn: 2,000 Mixtral requests at those means average them (within sampling noise), 15% more answer tokens.
    reqs = generate_requests(sharegpt_workload(p, o, 2000), 1, 8192, tokenizer="mistral-v1")
    assert math.fsum(r.output_tokens for r in reqs) / len(reqs) == pytest.approx(o, rel=0.05)
    llama_reqs = generate_requests(sharegpt_workload(229.711, 203.068, 2000), 1, 8192)
    assert (math.fsum(r.output_tokens for r in reqs) / math.fsum(r.output_tokens for r in llama_reqs)
            == pytest.approx(o / 203.068, rel=0.05))


def test_kept_mean_scale_takes_the_first_crossing():
    # Mistral's prompts crowd the 1,024 cap: stretched, the kept mean peaks near a factor 2 and falls after; the
    # factor found is the one on the rising branch, and it gives the mean asked for.
    prompts = sharegpt_table("mistral-v1").prompt_quantiles
    target = convert_sharegpt_means(229.711, 203.068, "llama3", "mistral-v1")[0]
    scale = quantile_scale_for_kept_mean(prompts, target, 3.5, 1024.5)
    assert 1.1 < scale < 1.2
    # The Llama 3 table's factors are those of the single bisection (the goldens rest on them).
    assert quantile_scale_for_kept_mean(LLAMA3_OUTPUT, 203.068, 3.5, 2048 - 229.711 + 0.5) == pytest.approx(
        1.0207, abs=5e-5)
    share, total = _kept_moments(prompts, scale, 3.5, 1024.5)
    assert total / share == pytest.approx(target, rel=1e-9)
    assert _kept_moments(prompts, 1.9, 3.5, 1024.5)[1] / _kept_moments(prompts, 1.9, 3.5, 1024.5)[0] > \
        _kept_moments(prompts, 4.0, 3.5, 1024.5)[1] / _kept_moments(prompts, 4.0, 3.5, 1024.5)[0]  # it does fall
    with pytest.raises(CalcError) as err:
        quantile_scale_for_kept_mean(prompts, 1100, 3.5, 1024.5)  # above the cap: no stretch keeps that mean
    assert err.value.field == "mean_tokens"


def test_latency_rows_take_their_models_tokens():
    from calc.latency_accuracy import load_rows, scenario_for

    rows = {r["id"]: r for r in load_rows()}
    mixtral = scenario_for(rows["vllm-nightly-throughput-mixtral8x7b-tp2-h200"])["workload"]
    p, o = convert_sharegpt_means(229.7, 203.1, "llama3", "mistral-v1")
    assert (mixtral["prompt_tokens"], mixtral["output_tokens"]) == (round(p), round(o)) == (254, 234)
    llama = scenario_for(rows["vllm-nightly-throughput-llama8b-tp1-h200"])["workload"]
    assert (llama["prompt_tokens"], llama["output_tokens"]) == (230, 203)
