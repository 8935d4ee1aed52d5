"""``python -m calc kv``: KV cache bytes per token, per GPU under TP, and per request.

>>> from calc.cli import main
>>> main(["kv", "--model", "llama-3.1-8b", "--context-tokens", "4000", "--json"])  # doctest: +ELLIPSIS
{
...
  "kv_bytes_per_request": 524288000,
  "kv_bytes_per_token": 131072,
...
0
"""

from __future__ import annotations

import argparse

from calc.catalog import get_model
from calc.cli.model import add_model_argument
from calc.cli.table import format_table
from calc.memory import (
    KV_DTYPES, kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_by_attention,
    kv_bytes_per_token_per_gpu, kv_heads_per_gpu, kv_tokens_per_request,
)
from calc.units import format_bytes, format_number

HELP = "KV cache bytes per token (2 x layers x KV heads x head dim x bytes), per GPU under TP, per request"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``kv``.

    >>> p = argparse.ArgumentParser(); add_arguments(p); vars(p.parse_args([]))
    {'model': 'llama-3.1-8b', 'kv_dtype': 'bf16', 'tp': 1, 'context_tokens': None}
    """
    add_model_argument(parser, default="llama-3.1-8b")
    parser.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES, help="KV cache precision (default bf16)")
    parser.add_argument("--tp", type=int, default=1, help="tensor-parallel GPUs (default 1)")
    parser.add_argument("--context-tokens", type=int, default=None,
                        help="tokens in one request's context, for its KV bytes (window-capped)")


def run(args) -> dict:
    """The KV figures as JSON-ready data.

    >>> run(argparse.Namespace(model="llama-3.1-70b", kv_dtype="bf16", tp=4, context_tokens=None))["kv_bytes_per_token_per_gpu"]
    81920
    """
    model = get_model(args.model)
    out = {
        "model": model.key,
        "name": model.name,
        "attention": model.attention,
        "kv_dtype": args.kv_dtype,
        "tp": args.tp,
        "kv_bytes_per_token": kv_bytes_per_token(model, args.kv_dtype),
        "kv_bytes_per_token_per_gpu": kv_bytes_per_token_per_gpu(model, args.tp, args.kv_dtype),
        "kv_heads_per_gpu": kv_heads_per_gpu(model, args.tp),
        "sliding_window": model.sliding_window,
        "kv_bytes_per_token_by_attention": kv_bytes_per_token_by_attention(model, args.kv_dtype),
        "context_tokens": args.context_tokens,
        "kv_tokens_per_request": None,
        "kv_bytes_per_request": None,
    }
    if args.context_tokens is not None:
        out["kv_tokens_per_request"] = kv_tokens_per_request(model, args.context_tokens)
        out["kv_bytes_per_request"] = kv_bytes_per_request(model, args.context_tokens, args.kv_dtype)
    return out


def render(result: dict) -> str:
    """A table of the KV figures.

    >>> print(render(run(argparse.Namespace(model="llama-3.1-8b", kv_dtype="bf16", tp=1, context_tokens=4000))))  # doctest: +ELLIPSIS
    KV cache of Llama 3.1 8B (gqa, bf16)
    ...
    KV bytes per token (replica)      131,072 B  128 KiB
    ...
    KV bytes for 4,000 tokens         524,288,000 B  524 MB
    """
    def both(n):  # per-token sizes read best in KiB (binary), per-request ones in MB/GB (decimal)
        return format_bytes(n, binary=True)

    rows = [
        ("KV bytes per token (replica)", f"{format_number(result['kv_bytes_per_token'])} B",
         both(result["kv_bytes_per_token"])),
        (f"KV bytes per token per GPU (tp={result['tp']})", f"{format_number(result['kv_bytes_per_token_per_gpu'])} B",
         f"{result['kv_heads_per_gpu']} KV head(s) per GPU" if result["attention"] != "mla" else "MLA latent, not split"),
    ]
    for kind, n_bytes in result["kv_bytes_per_token_by_attention"].items():
        rows.append((f"  as {kind.upper()}", f"{format_number(n_bytes)} B", both(n_bytes)))
    if result["context_tokens"] is not None:
        rows.append((f"KV bytes for {format_number(result['context_tokens'])} tokens",
                     f"{format_number(result['kv_bytes_per_request'])} B", format_bytes(result["kv_bytes_per_request"])))
        if result["kv_tokens_per_request"] != result["context_tokens"]:
            rows.append(("  tokens kept (sliding window)", format_number(result["kv_tokens_per_request"]), ""))
    head = f"KV cache of {result['name']} ({result['attention']}, {result['kv_dtype']})"
    return f"{head}\n{format_table(rows, headers=('quantity', 'bytes', 'in units'))}"
