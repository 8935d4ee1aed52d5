"""``python -m calc prefix``: prefix-cache hit rate and prefill saved, for both orders of a prompt.

>>> from calc.cli import main
>>> main(["prefix", "--json"])  # doctest: +ELLIPSIS
{
...
      "hit_tokens": 2496,
...
0
"""

from __future__ import annotations

import argparse

from calc.cli.step import add_replica_arguments, coefficients_from, json_ready
from calc.cli.table import format_table
from calc.prefix import ORDERS, fleet_prefill_saved, prefix_cache_hit
from calc.roofline import prefill_chunk
from calc.units import format_number

HELP = "prefix caching: hit rate and prefill saved from the prompt's layout (shared part, variable part, block size, order)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``prefix`` (defaults: the lesson's 2,500-token system prompt on the lesson's replica).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.shared_tokens, a.variable_tokens, a.block_size, a.requests
    (2500, 1024, 16, 1000)
    """
    parser.add_argument("--shared-tokens", type=int, default=2500,
                        help="tokens identical in every request: system prompt, tools, examples (default 2500)")
    parser.add_argument("--variable-tokens", type=int, default=1024,
                        help="tokens that differ per request: the user's turn (default 1024)")
    parser.add_argument("--block-size", type=int, default=16, help="KV block size in tokens (vLLM default 16)")
    parser.add_argument("--requests", type=int, default=1000, help="requests sharing the prefix (default 1000)")
    add_replica_arguments(parser)


def _prefill_s(coef, hit: int, computed: int) -> float:
    return prefill_chunk(coef, chunk_tokens=computed, context_before_tokens=hit)["time_s"]


def run(args) -> dict:
    """Both orders' hit rates, tokens and prefill times (on an idle replica), as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args([]))
    >>> [(o["order"], o["hit_tokens"]) for o in r["orders"]]
    [('stable-first', 2496), ('variable-first', 0)]
    """
    coef = coefficients_from(args)
    prompt = args.shared_tokens + args.variable_tokens
    orders = []
    for order in ORDERS:
        one = prefix_cache_hit(shared_tokens=args.shared_tokens, variable_tokens=args.variable_tokens,
                               block_size_tokens=args.block_size, order=order)
        fleet = fleet_prefill_saved(requests=args.requests, shared_tokens=args.shared_tokens,
                                    variable_tokens=args.variable_tokens, block_size_tokens=args.block_size, order=order)
        orders.append({
            "order": order,
            "hit_tokens": one["hit_tokens"],
            "computed_tokens": one["computed_tokens"],
            "hit_rate": one["hit_rate"],
            "prefill_s_uncached": _prefill_s(coef, 0, prompt),
            "prefill_s_cached": _prefill_s(coef, one["hit_tokens"], one["computed_tokens"]),
            "fleet_tokens_without_cache": fleet["tokens_without_cache"],
            "fleet_tokens_with_cache": fleet["tokens_with_cache"],
            "fleet_saved_fraction": fleet["saved_fraction"],
        })
    return json_ready({
        "shared_tokens": args.shared_tokens,
        "variable_tokens": args.variable_tokens,
        "prompt_tokens": prompt,
        "block_size": args.block_size,
        "requests": args.requests,
        "model": coef.model_key,
        "gpu": coef.gpu_key,
        "tp": coef.tp,
        "orders": orders,
        "source": "vLLM automatic prefix caching (full blocks of identical leading tokens; the last prompt token "
                  "is always computed); prefill times from calc.roofline",
    })


def render(result: dict) -> str:
    """The two orders side by side.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args([]))))  # doctest: +ELLIPSIS
    Prompt: 2,500 shared + 1,024 variable tokens, blocks of 16, 1,000 requests on llama-3.1-70b (4 x h100-sxm-80gb)
    ...
    hit rate ...
    """
    a, b = result["orders"]
    ms = lambda s: f"{format_number(s * 1000)} ms"  # noqa: E731
    rows = [
        ("tokens served from cache", format_number(a["hit_tokens"]), format_number(b["hit_tokens"])),
        ("tokens computed", format_number(a["computed_tokens"]), format_number(b["computed_tokens"])),
        ("hit rate", f"{a['hit_rate']:.1%}", f"{b['hit_rate']:.1%}"),
        ("prefill, no cache", ms(a["prefill_s_uncached"]), ms(b["prefill_s_uncached"])),
        ("prefill, warm cache", ms(a["prefill_s_cached"]), ms(b["prefill_s_cached"])),
        (f"prefill tokens over {format_number(result['requests'])} requests",
         format_number(a["fleet_tokens_with_cache"]), format_number(b["fleet_tokens_with_cache"])),
        ("  saved against no cache", f"{a['fleet_saved_fraction']:.1%}", f"{b['fleet_saved_fraction']:.1%}"),
    ]
    head = (f"Prompt: {format_number(result['shared_tokens'])} shared + {format_number(result['variable_tokens'])} "
            f"variable tokens, blocks of {result['block_size']}, {format_number(result['requests'])} requests on "
            f"{result['model']} ({result['tp']} x {result['gpu']})")
    return f"{head}\n{format_table(rows, headers=('', a['order'], b['order']))}\n({result['source']})"
