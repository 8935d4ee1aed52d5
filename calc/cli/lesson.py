"""``python -m calc lesson``: the running example every page starts from, and its figures (:mod:`calc.lesson`).

>>> from calc.cli import main
>>> main(["lesson", "--json"])  # doctest: +ELLIPSIS
{
...
  "kv_capacity_tokens": {
    "exact_parameters": 399452,
    "exact_parameters_blocks": 399440,
    "lesson_gb": 399169,
    "lesson_gb_blocks": 399168
  },
...
0
"""

from __future__ import annotations

import argparse

from calc import lesson
from calc.cli.step import json_ready
from calc.cli.table import format_table
from calc.roofline import decode_step, ttft_s
from calc.units import format_number

HELP = "the lesson's running example: replica, average request, step times and its KV capacity (four ways of counting)"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """``lesson`` takes no options of its own (``--json`` only).

    >>> p = argparse.ArgumentParser(); add_arguments(p); vars(p.parse_args([]))
    {}
    """


def run(args) -> dict:
    """The running example as JSON-ready data.

    >>> r = run(argparse.Namespace())
    >>> r["replica"]["model"], r["prompt_tokens"], r["answer_tokens"], round(r["ttft_s"] * 1000)
    ('llama-3.1-70b', 1024, 256, 82)
    """
    coef = lesson.coefficients()
    return json_ready({
        "replica": dict(lesson.REPLICA),
        "prompt_tokens": lesson.PROMPT_TOKENS,
        "answer_tokens": lesson.ANSWER_TOKENS,
        "decode_context_tokens": lesson.DECODE_CONTEXT_TOKENS,
        "max_model_len": lesson.MAX_MODEL_LEN,
        "ttft_s": ttft_s(coef, prompt_tokens=lesson.PROMPT_TOKENS),
        "itl_s_batch_1": decode_step(coef, batch=1, context_tokens=lesson.DECODE_CONTEXT_TOKENS)["time_s"],
        "kv_capacity_tokens": {
            "lesson_gb": lesson.KV_CAPACITY_TOKENS_LESSON_GB,
            "lesson_gb_blocks": lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS,
            "exact_parameters": lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS,
            "exact_parameters_blocks": lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS,
        },
        "coefficients": coef.to_dict(),
        "source": "calc.lesson; step times from calc.roofline, capacity from calc.memory.kv_capacity",
    })


def render(result: dict) -> str:
    """A summary table.

    >>> print(render(run(argparse.Namespace())))  # doctest: +ELLIPSIS
    The running example: llama-3.1-70b in bf16 on 4 x h100-sxm-80gb
    ...
    """
    r = result["replica"]
    kv = result["kv_capacity_tokens"]
    rows = [
        ("average request", f"{result['prompt_tokens']:,} prompt + {result['answer_tokens']:,} answer tokens"),
        ("TTFT (prefill of the prompt)", f"{format_number(result['ttft_s'] * 1000)} ms"),
        ("ITL at batch 1, mid-answer", f"{format_number(result['itl_s_batch_1'] * 1000)} ms"),
        ("KV tokens, rounded 70.6 B params", f"{kv['lesson_gb']:,} ({kv['lesson_gb_blocks']:,} in whole blocks)"),
        ("KV tokens, every tensor counted", f"{kv['exact_parameters']:,} ({kv['exact_parameters_blocks']:,} in whole blocks)"),
    ]
    return (f"The running example: {r['model']} in {r['weights']} on {r['tp']} x {r['gpu']}\n"
            f"{format_table(rows)}\n({result['source']})")
