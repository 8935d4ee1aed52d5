"""``python -m calc cost``: USD per million tokens against batch, where batching stops paying, and a replica's price.

>>> from calc.cli import main
>>> main(["cost", "--json"])  # doctest: +ELLIPSIS
{
...
  "discount_1_to_10": 9.73737,
...
0
"""

from __future__ import annotations

import argparse

from calc.catalog import get_gpu
from calc.cli.spec import parse_int_list
from calc.cli.step import add_replica_arguments, coefficients_from, json_ready
from calc.cli.table import format_table
from calc.cost import (
    batching_discount, batching_limit, cost_vs_batch, price_replica, replica_usd_per_hour, sustained_at_latency,
)
from calc.errors import CalcError
from calc.memory import kv_capacity
from calc.units import format_number

HELP = "cost per million tokens = hourly cost / (tokens/s x 3600) x 1e6, against batch; price a replica at a latency target"

DEFAULT_BATCHES = "1,2,4,8,10,16,32,64,100,128,256"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``cost`` (defaults: the lesson's replica, its prompt and answer lengths).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.usd_per_gpu_hour, a.context_tokens, a.prompt_tokens, a.itl_target_ms, a.tokens_per_s
    (None, 1152, 0, 50.0, None)
    """
    add_replica_arguments(parser)
    parser.add_argument("--usd-per-gpu-hour", type=float, default=None,
                        help="price of one GPU-hour (default: the catalog's dated price for the GPU, if it has one)")
    parser.add_argument("--context-tokens", type=int, default=1152,
                        help="context of each decoding sequence (default 1152: 1,024 in, half of 256 out)")
    parser.add_argument("--batches", default=DEFAULT_BATCHES, help=f"batch sizes to price (default {DEFAULT_BATCHES})")
    parser.add_argument("--itl-target-ms", type=float, default=50.0,
                        help="inter-token latency target for the sustained rate (default 50 ms)")
    parser.add_argument("--prompt-tokens", type=int, default=0,
                        help="prefill each request's prompt of this many tokens in the same steps as the decode when "
                             "finding the sustained rate (steady state: answers of 2 x (context - prompt) tokens); "
                             "default 0: decode only")
    parser.add_argument("--efficiency-floor", type=float, default=0.9,
                        help="batching counts as 'nearly linear' while step(1)/step(b) stays above this (default 0.9)")
    parser.add_argument("--tokens-per-s", type=float, default=None,
                        help="a measured sustained tokens/s to price instead of the roofline's")


def _price(args, gpu) -> tuple[float, str]:
    if args.usd_per_gpu_hour is not None:
        return args.usd_per_gpu_hour, "given on the command line"
    if gpu.price_usd_per_hour is None:
        raise CalcError(f"usd_per_gpu_hour must be given for {gpu.name}: the catalog has no sourced price for it; "
                        f"got none", "usd_per_gpu_hour")
    source = gpu.price_source or ""
    return gpu.price_usd_per_hour, source if gpu.price_date and gpu.price_date in source else f"{source} ({gpu.price_date})"


def run(args) -> dict:
    """Cost against batch, the batching limit and the replica's price, as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--usd-per-gpu-hour", "2"]))
    >>> r["usd_per_hour"], r["batching_limit"], r["sustained"]["limited_by"]
    (8.0, 38, 'max_batch')
    >>> r = run(p.parse_args(["--usd-per-gpu-hour", "2", "--prompt-tokens", "1024"]))
    >>> r["sustained"]["batch"], r["sustained"]["limited_by"]
    (113, 'latency')
    """
    gpu = get_gpu(args.gpu)
    price, price_source = _price(args, gpu)
    coef = coefficients_from(args)
    usd_per_hour = replica_usd_per_hour(price, coef.tp)
    batches = parse_int_list("batches", args.batches)
    rows = cost_vs_batch(coef, usd_per_hour=usd_per_hour, context_tokens=args.context_tokens, batches=batches)
    cap = kv_capacity(args.model, gpu, tp=args.tp, weights=args.weights, kv_dtype=args.kv_dtype)
    kv_batch = max(1, cap.kv_cache_tokens // (args.context_tokens + 1))
    sustained = sustained_at_latency(coef, context_tokens=args.context_tokens, itl_target_s=args.itl_target_ms / 1000,
                                     max_batch=kv_batch, prompt_tokens=args.prompt_tokens)
    rate = args.tokens_per_s if args.tokens_per_s is not None else sustained["tokens_per_s"]
    priced = price_replica(usd_per_gpu_hour=price, gpus=coef.tp, sustained_tokens_per_s=rate) if rate else None
    return json_ready({
        "model": coef.model_key,
        "gpu": coef.gpu_key,
        "tp": coef.tp,
        "weights": coef.weights,
        "usd_per_gpu_hour": price,
        "price_source": price_source,
        "usd_per_hour": usd_per_hour,
        "context_tokens": args.context_tokens,
        "prompt_tokens": args.prompt_tokens,
        "curve": rows,
        "discount_1_to_10": batching_discount(coef, context_tokens=args.context_tokens, batch_low=1, batch_high=10),
        "discount_10_to_100": batching_discount(coef, context_tokens=args.context_tokens, batch_low=10, batch_high=100),
        "efficiency_floor": args.efficiency_floor,
        "batching_limit": batching_limit(coef, context_tokens=args.context_tokens, efficiency_floor=args.efficiency_floor),
        "kv_batch_limit": kv_batch,
        "itl_target_s": args.itl_target_ms / 1000,
        "sustained": sustained,
        "priced_tokens_per_s": rate,
        "priced_from": "measured (command line)" if args.tokens_per_s is not None else "roofline at the ITL target",
        "price": priced,
        "source": "the lesson's step 16: hourly cost / (tokens/s x 3600) x 1e6; decode step times from calc.roofline"
                  + ("; the sustained rate's steps carry the prompts' prefill (calc.roofline.steady_state_step)"
                     if args.prompt_tokens else ""),
    })


def render(result: dict) -> str:
    """The cost curve and the summary.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args([]))))  # doctest: +ELLIPSIS
    llama-3.1-70b on 4 x h100-sxm-80gb at $3.78 per GPU-hour ($15.12 per hour for the replica)
    ...
    batch 1 -> 10: 9.74x cheaper per token; 10 -> 100: 7.92x
    ...
    """
    head = (f"{result['model']} on {result['tp']} x {result['gpu']} at ${format_number(result['usd_per_gpu_hour'])} "
            f"per GPU-hour (${format_number(result['usd_per_hour'], 4)} per hour for the replica)\n"
            f"price: {result['price_source']}")
    rows = [(format_number(r["batch"]), f"{format_number(r['itl_s'] * 1000)} ms", format_number(round(r["tokens_per_s"])),
             f"${format_number(r['usd_per_million_tokens'])}", r["bound"]) for r in result["curve"]]
    table = format_table(rows, headers=("batch", "ITL", "tokens/s", "USD per 1M tokens", "bound"))
    s = result["sustained"]
    lines = [
        f"batch 1 -> 10: {format_number(result['discount_1_to_10'])}x cheaper per token; 10 -> 100: "
        f"{format_number(result['discount_10_to_100'])}x",
        f"nearly linear (step(1)/step(b) >= {result['efficiency_floor']}) up to batch {result['batching_limit']}; "
        f"KV cache room caps the batch at {format_number(result['kv_batch_limit'])}",
        f"at ITL <= {format_number(result['itl_target_s'] * 1000)} ms"
        + (f" with {format_number(result['prompt_tokens'])}-token prompts prefilled in the same steps"
           if result.get("prompt_tokens") else "")
        + f": batch {format_number(s['batch'])}, "
        f"{format_number(round(s['tokens_per_s']))} tokens/s (limited by {s['limited_by']})",
    ]
    if result["price"]:
        p = result["price"]
        lines.append(f"priced at {format_number(round(result['priced_tokens_per_s']))} tokens/s "
                     f"({result['priced_from']}): ${format_number(p['usd_per_million_tokens'])} per 1M tokens, "
                     f"${format_number(round(p['usd_per_month']))} per month")
    return f"{head}\n{table}\n\n" + "\n".join(lines) + f"\n({result['source']})"
