"""``python -m calc spec``: per method, the draft's derived cost ratio, the speed-up against batch, and where it stops paying.

>>> from calc.cli import main
>>> main(["spec", "--json"])  # doctest: +ELLIPSIS
{
...
      "break_even_batch": 20,
...
0
"""

from __future__ import annotations

import argparse

from calc.cli.step import add_replica_arguments, coefficients_from, json_ready
from calc.cli.table import format_table
from calc.errors import CalcError
from calc.speculative import (
    METHODS, SpeculationConfig, break_even_batch, expected_tokens_per_step, speedup, speedup_at_batch, speedup_curve,
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
    """Options of ``spec`` (defaults: Llama 3.1 8B, one H100, every published method of calc.speculative).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.model, a.tp, a.method, a.acceptance, a.draft_cost_ratio
    ('llama-3.1-8b', 1, None, None, None)
    """
    add_replica_arguments(parser, model="llama-3.1-8b", tp=1)
    parser.add_argument("--method", choices=tuple(METHODS),
                        help="one method (default: all of them; the draft's cost is derived from its shape)")
    parser.add_argument("--acceptance", type=float, help="override: probability a drafted token is accepted")
    parser.add_argument("--k", type=int, help="override: tokens drafted per step")
    parser.add_argument("--draft-cost-ratio", type=float,
                        help="override: one draft step's time over one target step's (default: derived from the "
                             "draft's shape on the roofline, at every batch)")
    parser.add_argument("--verify-tokens", type=int,
                        help="override: positions verified per sequence (k+1 for a chain, the tree size for a tree)")
    parser.add_argument("--context-tokens", type=int, default=512, help="context of each sequence (default 512)")
    parser.add_argument("--batches", default=DEFAULT_BATCHES, help=f"batch sizes to price (default {DEFAULT_BATCHES})")


def _configs(args) -> list:
    """The set-ups to price: each method, or one method with the command line's overrides."""
    overrides = {name: getattr(args, name) for name in ("acceptance", "k", "draft_cost_ratio", "verify_tokens")
                 if getattr(args, name, None) is not None}
    keys = [args.method] if args.method else list(METHODS)
    if overrides and not args.method:
        keys = ["eagle"]
    out = []
    for key in keys:
        base = METHODS[key]
        if not overrides:
            out.append(base)
            continue
        k = overrides.get("k", base.k)
        verify = overrides.get("verify_tokens", base.verify_tokens if "k" not in overrides else None)
        out.append(SpeculationConfig(overrides.get("acceptance", base.acceptance), k,
                                     overrides.get("draft_cost_ratio"), "command line", verify, draft=base.draft,
                                     branching=base.branching if verify and verify > k + 1 else 1, key=key))
    return out


def _one(config, coef, args, batches) -> dict:
    curve = speedup_curve(coef, batches=batches, context_tokens=args.context_tokens, config=config)
    first = speedup_at_batch(coef, batch=1, context_tokens=args.context_tokens, config=config)
    c1 = first["draft_cost_ratio"]
    return {
        "method": config.key,
        "draft": config.draft.name if config.draft else None,
        "draft_cost": "derived from the draft's shape" if config.derived else "given",
        "acceptance": config.acceptance,
        "k": config.k,
        "branching": config.branching,
        "draft_cost_ratio_batch_1": c1,
        "verify_tokens": config.verify_tokens,
        "tokens_per_step": expected_tokens_per_step(config.acceptance, config.k),
        "speedup_memory_bound": speedup(config.acceptance, config.k, min(c1, 10.0)),
        "speedup_compute_bound": speedup_when_compute_bound(config.acceptance, config.k, min(c1, 10.0),
                                                            config.verify_tokens),
        "break_even_batch": break_even_batch(coef, context_tokens=args.context_tokens, config=config),
        "curve": [{k: row[k] for k in ("batch", "plain_step_s", "verify_step_s", "draft_steps_s", "draft_cost_ratio",
                                       "plain_tokens_per_s", "speculative_tokens_per_s", "speedup")} for row in curve],
        "source": config.source,
    }


def run(args) -> dict:
    """Speculation figures per method as JSON-ready data: the derived draft cost ratio and the curve.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--k", "4", "--acceptance", "0.8", "--draft-cost-ratio", "0.05", "--verify-tokens", "5"]))
    >>> m = r["methods"][0]
    >>> round(m["tokens_per_step"], 4), round(m["speedup_memory_bound"], 3)
    (3.3616, 2.801)
    >>> [m["method"] for m in run(p.parse_args([]))["methods"]]
    ['eagle', 'eagle3', 'draft-1b']
    """
    coef = coefficients_from(args)
    batches = parse_int_list("batches", args.batches)
    return json_ready({
        "model": coef.model_key,
        "gpu": coef.gpu_key,
        "tp": coef.tp,
        "weights": coef.weights,
        "context_tokens": args.context_tokens,
        "methods": [_one(config, coef, args, batches) for config in _configs(args)],
        "source": "Leviathan et al. 2023, Eq. 1 and the walltime factor; step times of target and draft from "
                  "calc.roofline (calc.speculative)",
    })


def render(result: dict) -> str:
    """A summary and the speed-up per batch, for each method.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args(["--batches", "1,64", "--method", "eagle"]))))  # doctest: +ELLIPSIS
    Speculative decoding on llama-3.1-8b, 1 x h100-sxm-80gb
    <BLANKLINE>
    eagle (EAGLE head, cost derived from the draft's shape): acceptance 0.484, k 3, 16 verified per sequence
    draft step / target step (c), batch 1  0.103
    expected tokens per target step        1.83
    ...
    """
    parts = [f"Speculative decoding on {result['model']}, {result['tp']} x {result['gpu']}"]
    for m in result["methods"]:
        even = m["break_even_batch"]
        what = f"{m['draft'] or 'a draft'}, cost {m['draft_cost'].replace('derived from', 'derived from')}"
        head = (f"{m['method'] or 'custom'} ({what}): acceptance {m['acceptance']}, k {m['k']}, "
                f"{m['verify_tokens']} verified per sequence")
        summary = format_table([
            ("draft step / target step (c), batch 1", format_number(m["draft_cost_ratio_batch_1"])),
            ("expected tokens per target step", format_number(m["tokens_per_step"])),
            ("speed-up, memory-bound (Leviathan)", f"{format_number(m['speedup_memory_bound'])}x"),
            ("speed-up, fully compute-bound", f"{format_number(m['speedup_compute_bound'])}x"),
            ("speed-up falls below 1x from batch", "never (up to 4,096)" if even is None else format_number(even)),
        ])
        rows = [(format_number(r["batch"]), f"{format_number(r['plain_step_s'] * 1000)} ms",
                 f"{format_number(r['verify_step_s'] * 1000)} ms", format_number(r["draft_cost_ratio"]),
                 format_number(round(r["plain_tokens_per_s"])), format_number(round(r["speculative_tokens_per_s"])),
                 f"{format_number(r['speedup'])}x") for r in m["curve"]]
        table = format_table(rows, headers=("batch", "plain step", "verify step", "c", "plain tok/s",
                                            "speculative tok/s", "speed-up"))
        parts.append(f"{head}\n{summary}\n\n{table}\n({m['source']})")
    parts.append(f"(context {format_number(result['context_tokens'])} tokens; {result['source']})")
    return "\n\n".join(parts)
