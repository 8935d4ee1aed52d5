"""``python -m calc context``: KV memory and prefill time against context length; what one long request displaces.

>>> from calc.cli import main
>>> main(["context", "--json"])  # doctest: +ELLIPSIS
{
...
    "conversations": 78,
...
0
"""

from __future__ import annotations

import argparse

from calc.cli.spec import parse_int_list
from calc.cli.step import add_replica_arguments, flops_text, json_ready
from calc.cli.table import format_table
from calc.context import context_cost_curve, requests_displaced, unfused_attention_scores_bytes
from calc.units import format_bytes, format_number

HELP = "long contexts: KV bytes (linear) and prefill time (faster than linear) against context; requests displaced"

DEFAULT_CONTEXTS = "1024,4096,16384,32768,65536,100000,131072"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``context`` (defaults: the lesson's replica, 100K against 1,280 tokens).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.long_tokens, a.short_tokens, a.chunk_tokens
    (100000, 1280, 8192)
    """
    add_replica_arguments(parser)
    parser.add_argument("--long-tokens", type=int, default=100_000, help="the long request's context (default 100000)")
    parser.add_argument("--short-tokens", type=int, default=1280,
                        help="an ordinary conversation's context (default 1280 = 1,024 in + 256 out)")
    parser.add_argument("--contexts", default=DEFAULT_CONTEXTS, help=f"context lengths to price (default {DEFAULT_CONTEXTS})")
    parser.add_argument("--chunk-tokens", type=int, default=8192, help="prefill chunk per step (default 8192)")
    parser.add_argument("--gpu-memory-utilization", type=float, default=0.9, help="vLLM's share of each GPU (default 0.9)")


def run(args) -> dict:
    """The context curve and the displacement figure as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--contexts", "1000,10000"]))
    >>> r["displaced"]["conversations"], [row["context_tokens"] for row in r["curve"]]
    (78, [1000, 10000])
    """
    contexts = parse_int_list("contexts", args.contexts)
    curve = context_cost_curve(args.model, args.gpu, contexts, tp=args.tp, weights=args.weights, kv_dtype=args.kv_dtype,
                               chunk_tokens=args.chunk_tokens, gpu_memory_utilization=args.gpu_memory_utilization)
    displaced = requests_displaced(args.model, long_tokens=args.long_tokens, short_tokens=args.short_tokens,
                                   kv_dtype=args.kv_dtype)
    return json_ready({
        "model": displaced["model"],
        "gpu": args.gpu,
        "tp": args.tp,
        "weights": args.weights,
        "kv_dtype": args.kv_dtype,
        "displaced": displaced,
        "unfused_attention": unfused_attention_scores_bytes(args.model, args.long_tokens),
        "curve": curve,
        "source": "KV bytes from calc.memory; prefill from calc.roofline (chunked, idle replica); FlashAttention: "
                  "Dao et al. 2022",
    })


def render(result: dict) -> str:
    """The displacement figure and the curve as tables.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args(["--contexts", "1024"]))))  # doctest: +ELLIPSIS
    One 100,000-token request holds the KV of 78 conversations of 1,280 tokens (ratio 78.1) on llama-3.1-70b
    ...
    """
    d = result["displaced"]
    u = result["unfused_attention"]
    head = (f"One {format_number(d['long_tokens'])}-token request holds the KV of {d['conversations']} conversations "
            f"of {format_number(d['short_tokens'])} tokens (ratio {format_number(d['ratio'])}) on {result['model']}\n"
            f"KV: {format_bytes(d['long_kv_bytes'])} against {format_bytes(d['short_kv_bytes'])}. Without "
            f"FlashAttention its score matrix alone would be {format_bytes(u['matrix_bytes_per_layer'])} per layer.")
    rows = [(format_number(r["context_tokens"]), format_bytes(r["kv_bytes"]), f"{r['kv_share']:.1%}",
             "yes" if r["fits"] else "no", flops_text(r["prefill_flops"]), f"{r['attention_share']:.0%}",
             f"{format_number(r['prefill_s'])} s", f"{format_number(r['decode_step_s'] * 1000)} ms")
            for r in result["curve"]]
    table = format_table(rows, headers=("context", "KV bytes", "of KV cache", "fits", "prefill FLOPs",
                                        "attention part", "prefill time", "decode step"))
    return (f"{head}\n\n{table}\n({result['tp']} x {result['gpu']}, {result['weights']} weights, "
            f"{result['kv_dtype']} KV; {result['source']})")
