"""``python -m calc gpu-util``: what GPU-Util reads on one replica of the running example, against the compute it uses.

>>> from calc.cli import main
>>> main(["gpu-util", "--json", "--rates", "2"])  # doctest: +ELLIPSIS
{
...
      "gpu_util": 0.9999...
...
0
"""

from __future__ import annotations

import argparse

from calc.cli.spec import parse_number_list
from calc.cli.step import json_ready
from calc.cli.table import format_table
from calc.gpu_util import gpu_util_at_rate, rate_for_gpu_util, replica_capacity_rps
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.units import format_number

HELP = ("GPU-Util against real compute use: 1 - exp(-requests in flight) on the running example, per arrival rate, "
        "and the rate at which it reads a threshold")

DEFAULT_RATES = "0.1,0.5,1,2,5"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``gpu-util`` (defaults: the running example's 1,024 + 256-token request).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.prompt_tokens, a.answer_tokens, a.rates, a.threshold
    (1024, 256, '0.1,0.5,1,2,5', 0.8)
    """
    parser.add_argument("--prompt-tokens", type=int, default=PROMPT_TOKENS, help=f"prompt length (default {PROMPT_TOKENS})")
    parser.add_argument("--answer-tokens", type=int, default=ANSWER_TOKENS, help=f"answer length (default {ANSWER_TOKENS})")
    parser.add_argument("--rates", default=DEFAULT_RATES, help=f"arrival rates, requests/s (default {DEFAULT_RATES})")
    parser.add_argument("--threshold", type=float, default=0.8,
                        help="a GPU-Util threshold: print the arrival rate at which it reads this (default 0.8)")


def run(args) -> dict:
    """GPU-Util and compute use per rate, the replica's capacity, and the rate at the threshold, as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--rates", "0.1"]))
    >>> round(r["rows"][0]["gpu_util"], 2), round(r["capacity_rps"], 2), round(r["threshold_rate_per_s"], 3)
    (0.4, 7.29, 0.317)
    """
    lengths = dict(prompt_tokens=args.prompt_tokens, answer_tokens=args.answer_tokens)
    rows = [gpu_util_at_rate(rate, **lengths) for rate in parse_number_list("rates", args.rates, float)]
    return json_ready({
        "prompt_tokens": args.prompt_tokens,
        "answer_tokens": args.answer_tokens,
        "capacity_rps": replica_capacity_rps(args.prompt_tokens, args.answer_tokens),
        "threshold": args.threshold,
        "threshold_rate_per_s": rate_for_gpu_util(args.threshold, **lengths),
        "rows": rows,
        "source": "calc.gpu_util: NVML utilization.gpu (share of time a kernel runs), Little's law, M/G/infinity",
    })


def render(result: dict) -> str:
    """The table of rates.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args(["--rates", "2"]))))  # doctest: +ELLIPSIS
    GPU-Util on the running example (1,024 + 256-token requests; the replica saturates at 7.29 requests/s)
    ...
    """
    head = (f"GPU-Util on the running example ({result['prompt_tokens']:,} + {result['answer_tokens']:,}-token requests; "
            f"the replica saturates at {format_number(result['capacity_rps'])} requests/s)")
    rows = [(format_number(r["rate_per_s"]), f"{format_number(r['gpu_util'] * 100)}%",
             f"{format_number(r['compute_utilization'] * 100)}%", format_number(r["in_flight"]),
             "yes" if r["saturated"] else "no") for r in result["rows"]]
    table = format_table(rows, headers=("requests/s", "GPU-Util", "compute used", "in flight", "saturated"))
    return (f"{head}\n{table}\nGPU-Util reads {format_number(result['threshold'] * 100)}% from "
            f"{format_number(result['threshold_rate_per_s'])} requests/s ({result['source']})")
