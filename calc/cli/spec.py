"""``python -m calc spec``: speculative decoding's expected tokens per step, its speed-up, and where it stops paying.

>>> from calc.cli import main
>>> main(["spec", "--json"])  # doctest: +ELLIPSIS
{
...
  "break_even_batch": 23,
...
0
"""

from __future__ import annotations

import argparse

from calc.cli.step import add_replica_arguments, coefficients_from, json_ready
from calc.cli.table import format_table
from calc.errors import CalcError
from calc.speculative import (
    EAGLE_LIKE, SpeculationConfig, break_even_batch, expected_tokens_per_step, speedup, speedup_curve,
    speedup_when_compute_bound,
)
from calc.units import format_number

HELP = "speculative decoding: tokens per target step (Leviathan Eq. 1), speed-up, and the batch where it falls below 1x"

DEFAULT_BATCHES = "1,2,4,8,16,24,32,48,64,128,256"


def parse_number_list(field: str, text: str, number=int) -> list:
    """``"1,2,4"`` to ``[1, 2, 4]`` (``number=float`` for decimals); CalcError naming ``field`` otherwise.

    >>> parse_number_list("batches", "1, 8,64"), parse_number_list("rates", "0.5,2", float)
    ([1, 8, 64], [0.5, 2.0])
    >>> parse_number_list("rates", "fast", float)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rates must be numbers separated by commas; got 'fast'
    """
    what = "whole numbers" if number is int else "numbers"
    try:
        values = [number(part) for part in str(text).split(",") if part.strip()]
    except ValueError:
        raise CalcError(f"{field} must be {what} separated by commas; got {text!r}", field) from None
    if not values:
        raise CalcError(f"{field} must list at least one {what[:-1]}; got {text!r}", field)
    return values


def parse_int_list(field: str, text: str) -> list[int]:
    """``"1,2,4"`` to ``[1, 2, 4]``; CalcError naming ``field`` otherwise.

    >>> parse_int_list("batches", "1, 8,64")
    [1, 8, 64]
    >>> parse_int_list("batches", "1,x")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: batches must be whole numbers separated by commas; got '1,x'
    """
    return parse_number_list(field, text, int)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``spec`` (defaults: Llama 3.1 8B, one H100, the EAGLE-like set-up).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.model, a.tp, a.acceptance, a.k, a.verify_tokens
    ('llama-3.1-8b', 1, 0.75, 3, 16)
    """
    add_replica_arguments(parser, model="llama-3.1-8b", tp=1)
    parser.add_argument("--acceptance", type=float, default=EAGLE_LIKE.acceptance,
                        help=f"probability a drafted token is accepted (default {EAGLE_LIKE.acceptance})")
    parser.add_argument("--k", type=int, default=EAGLE_LIKE.k, help=f"tokens drafted per step (default {EAGLE_LIKE.k})")
    parser.add_argument("--draft-cost-ratio", type=float, default=EAGLE_LIKE.draft_cost_ratio,
                        help=f"one draft step's time over one target step's (default {EAGLE_LIKE.draft_cost_ratio})")
    parser.add_argument("--verify-tokens", type=int, default=EAGLE_LIKE.verify_tokens,
                        help=f"positions verified per sequence: k+1 for a chain, the tree size for a tree "
                             f"(default {EAGLE_LIKE.verify_tokens})")
    parser.add_argument("--context-tokens", type=int, default=512, help="context of each sequence (default 512)")
    parser.add_argument("--batches", default=DEFAULT_BATCHES, help=f"batch sizes to price (default {DEFAULT_BATCHES})")


def run(args) -> dict:
    """Speculation figures as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--k", "4", "--acceptance", "0.8", "--draft-cost-ratio", "0.05", "--verify-tokens", "5"]))
    >>> round(r["tokens_per_step"], 4), round(r["speedup_memory_bound"], 3)
    (3.3616, 2.801)
    """
    config = SpeculationConfig(args.acceptance, args.k, args.draft_cost_ratio, "command line", args.verify_tokens)
    coef = coefficients_from(args)
    batches = parse_int_list("batches", args.batches)
    curve = speedup_curve(coef, batches=batches, context_tokens=args.context_tokens, config=config)
    return json_ready({
        "model": coef.model_key,
        "gpu": coef.gpu_key,
        "tp": coef.tp,
        "weights": coef.weights,
        "acceptance": config.acceptance,
        "k": config.k,
        "draft_cost_ratio": config.draft_cost_ratio,
        "verify_tokens": config.verify_tokens,
        "context_tokens": args.context_tokens,
        "tokens_per_step": expected_tokens_per_step(config.acceptance, config.k),
        "speedup_memory_bound": speedup(config.acceptance, config.k, config.draft_cost_ratio),
        "speedup_compute_bound": speedup_when_compute_bound(config.acceptance, config.k, config.draft_cost_ratio,
                                                            config.verify_tokens),
        "break_even_batch": break_even_batch(coef, context_tokens=args.context_tokens, config=config),
        "curve": [{k: row[k] for k in ("batch", "plain_step_s", "verify_step_s", "draft_steps_s", "plain_tokens_per_s",
                                       "speculative_tokens_per_s", "speedup")} for row in curve],
        "source": "Leviathan et al. 2023, Eq. 1 and the walltime factor; step times from calc.roofline",
    })


def render(result: dict) -> str:
    """A summary and the speed-up per batch.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args(["--batches", "1,64"]))))  # doctest: +ELLIPSIS
    Speculative decoding on llama-3.1-8b, 1 x h100-sxm-80gb: acceptance 0.75, k 3, 16 verified per sequence
    ...
    speed-up falls below 1x from batch  23
    ...
    """
    head = (f"Speculative decoding on {result['model']}, {result['tp']} x {result['gpu']}: acceptance "
            f"{result['acceptance']}, k {result['k']}, {result['verify_tokens']} verified per sequence")
    even = result["break_even_batch"]
    summary = format_table([
        ("expected tokens per target step", format_number(result["tokens_per_step"])),
        ("speed-up, memory-bound (Leviathan)", f"{format_number(result['speedup_memory_bound'])}x"),
        ("speed-up, fully compute-bound", f"{format_number(result['speedup_compute_bound'])}x"),
        ("speed-up falls below 1x from batch", "never (up to 4,096)" if even is None else format_number(even)),
    ])
    rows = [(format_number(r["batch"]), f"{format_number(r['plain_step_s'] * 1000)} ms",
             f"{format_number(r['verify_step_s'] * 1000)} ms", format_number(round(r["plain_tokens_per_s"])),
             format_number(round(r["speculative_tokens_per_s"])), f"{format_number(r['speedup'])}x")
            for r in result["curve"]]
    table = format_table(rows, headers=("batch", "plain step", "verify step", "plain tok/s", "speculative tok/s",
                                        "speed-up"))
    return f"{head}\n{summary}\n\n{table}\n(context {format_number(result['context_tokens'])} tokens; {result['source']})"
