"""``python -m calc memory``: a replica's memory per GPU and its KV cache capacity, the vLLM way.

With no options it is the lesson's replica (Llama 3.1 70B, bf16, TP 4 on H100s
counted as 80e9 bytes, utilization 0.9). The ``--*-gib`` options take the
figures a vLLM server logs (per GPU, in GiB = 2**30 bytes, though vLLM prints
"GB") so that a reader can reproduce their own log:

>>> from calc.cli import main
>>> main(["memory", "--model", "llama-3.1-8b", "--tp", "1", "--gpu-memory-gib", "23.58", "--weights-gib", "14.9888",
...       "--activation-gib", "2.07", "--non-torch-gib", "0.35", "--max-model-len", "20000", "--json"])  # doctest: +ELLIPSIS
{
...
  "kv_cache_blocks": 1952,
...
  "max_concurrency": 1.5616,
...
0
"""

from __future__ import annotations

import argparse

from calc import lesson
from calc.catalog import GPUS, MEMORY_BASES, get_gpu, get_model
from calc.cli.model import add_model_argument
from calc.cli.table import format_table
from calc.errors import check_positive
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.units import GiB, format_bytes, format_number

HELP = "memory per GPU (weights, workspace, overhead, KV cache) and KV capacity in tokens, as vLLM sizes it"

_GIB_OPTIONS = (
    ("gpu_memory_gib", "gpu_memory_bytes", "total memory per GPU, as vLLM logs it (replaces --gpu's capacity)"),
    ("weights_gib", "weights_bytes", "weights per GPU ('Loading model weights took ... GB')"),
    ("activation_gib", "activation_bytes", "peak activation memory per GPU (peak torch memory minus weights)"),
    ("non_torch_gib", "non_torch_bytes", "memory outside PyTorch per GPU ('non-torch memory')"),
    ("cuda_graph_gib", "cuda_graph_bytes", "CUDA graph pool per GPU (newer vLLM versions subtract it)"),
    ("kv_cache_gib", "kv_cache_bytes", "KV cache memory per GPU given directly ('KV cache ... GiB')"),
)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``memory``; the defaults are the lesson's replica.

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.model, a.gpu, a.tp, a.gpu_memory_utilization
    ('llama-3.1-70b', 'h100-sxm-80gb', 4, 0.9)
    """
    add_model_argument(parser, default=lesson.REPLICA["model"])
    parser.add_argument("--gpu", default=lesson.REPLICA["gpu"], metavar="KEY",
                        help=f"catalog GPU ({', '.join(sorted(GPUS))}); default {lesson.REPLICA['gpu']}")
    parser.add_argument("--tp", type=int, default=lesson.REPLICA["tp"], help="tensor-parallel GPUs per replica")
    parser.add_argument("--weights", default=lesson.REPLICA["weights"], choices=WEIGHT_FORMATS,
                        help="weight precision")
    parser.add_argument("--kv-dtype", default=lesson.REPLICA["kv_dtype"], choices=KV_DTYPES, help="KV precision")
    parser.add_argument("--gpu-memory-utilization", type=float, default=lesson.REPLICA["gpu_memory_utilization"],
                        help="share of each GPU vLLM may use (default 0.9)")
    parser.add_argument("--block-size", type=int, default=lesson.REPLICA["block_size"],
                        help="tokens per KV block (default 16)")
    parser.add_argument("--max-model-len", type=int, default=None,
                        help="longest request in tokens, for the maximum concurrency")
    parser.add_argument("--memory-basis", default=lesson.REPLICA["memory_basis"], choices=MEMORY_BASES,
                        help="GPU capacity as marketed (H100: 80e9 B, the lesson's count) or as the runtime "
                             "reports it (H100: 81,559 MiB)")
    parser.add_argument("--rounded-params", action="store_true",
                        help="weights from the parameter count rounded to 3 digits (70.6 B), as the lesson does")
    for dest, _, text in _GIB_OPTIONS:
        parser.add_argument("--" + dest.replace("_", "-"), dest=dest, type=float, default=None, metavar="GIB",
                            help=text)


def run(args) -> dict:
    """The capacity with every term per GPU, as JSON-ready data.

    >>> a = argparse.ArgumentParser(); add_arguments(a)
    >>> r = run(a.parse_args(["--max-model-len", "8192"]))
    >>> r["kv_cache_tokens"], r["kv_cache_tokens_raw"], r["weights_bytes_per_gpu"]
    (399440, 399452, 35276853248)
    """
    overrides = {}
    for dest, key, _ in _GIB_OPTIONS:
        value = getattr(args, dest, None)
        if value is not None:
            allow_zero = dest in ("weights_gib", "activation_gib", "non_torch_gib", "cuda_graph_gib")
            overrides[key] = check_positive(dest, value, allow_zero=allow_zero) * GiB
    model = get_model(args.model)
    gpu = None if "gpu_memory_bytes" in overrides else get_gpu(args.gpu)
    cap = lesson.kv_capacity(
        rounded_params=args.rounded_params, model=model, gpu=gpu, tp=args.tp, weights=args.weights,
        kv_dtype=args.kv_dtype, gpu_memory_utilization=args.gpu_memory_utilization, block_size=args.block_size,
        max_model_len=args.max_model_len, memory_basis=args.memory_basis, **overrides)
    out = cap.to_dict()
    out["model_name"] = model.name
    out["gpu_name"] = gpu.name if gpu is not None else "GPU given by its memory"
    out["kv_cache_gib"] = round(cap.kv_cache_bytes / GiB, 4)
    return out


def render(result: dict) -> str:
    """The memory view as a table: each term per GPU in GB (1e9) and GiB (2**30).

    >>> a = argparse.ArgumentParser(); add_arguments(a)
    >>> print(render(run(a.parse_args([]))))  # doctest: +ELLIPSIS
    Llama 3.1 70B, bf16 weights, bf16 KV, tp=4 on H100 SXM 80GB (memory basis: marketed)
    ...
    KV cache tokens (replica)         399,440  in 24,965 blocks of 16 (399,452 before rounding to blocks)
    ...
    """
    def row(label, n_bytes):
        return (label, format_bytes(n_bytes, digits=4), format_bytes(n_bytes, binary=True, digits=4))

    util = result["gpu_memory_utilization"]
    rows = [
        row("total memory", result["total_bytes"]),
        row(f"requested ({util:g} x total)", result["requested_bytes"]),
        row(f"  left unclaimed ({1 - util:.0%})", result["unclaimed_bytes"]),
        row("  weights", result["weights_bytes"]),
        row("  activation workspace", result["activation_bytes"]),
        row("  non-torch overhead", result["non_torch_bytes"]),
    ]
    if result["cuda_graph_bytes"]:
        rows.append(row("  CUDA graph pool", result["cuda_graph_bytes"]))
    rows.append(row("  KV cache", result["kv_cache_bytes"]))
    terms = format_table(rows, headers=("per GPU", "GB", "GiB"))
    per_tok = result["kv_bytes_per_token"]
    per_gpu = result["kv_bytes_per_token_per_gpu"]
    facts = [
        ("KV bytes per token (replica)", f"{format_number(per_tok)} B ({format_bytes(per_tok, binary=True)})"),
        ("KV bytes per token per GPU", f"{format_number(per_gpu)} B"),
        ("KV cache tokens (replica)",
         f"{format_number(result['kv_cache_tokens'])}  in {format_number(result['kv_cache_blocks'])} blocks of "
         f"{result['block_size']} ({format_number(result['kv_cache_tokens_raw'])} before rounding to blocks)"),
    ]
    if result["max_concurrency"] is not None:
        facts.append((f"max concurrency at {format_number(result['max_model_len'])} tokens",
                      f"{result['max_concurrency']:.2f}x"))
    head = (f"{result['model_name']}, {result['weights']} weights, {result['kv_dtype']} KV, tp={result['tp']} on "
            f"{result['gpu_name']} (memory basis: {result['memory_basis']})")
    note = ("GB = 1e9 bytes, GiB = 2**30 bytes; vLLM's logs say 'GB' but count GiB. "
            "Workspace and overhead are assumed (2.5 GB + 0.5 GB, +1 GB with tp > 1) unless given.")
    return f"{head}\n{terms}\n\n{format_table(facts)}\n\n{note}"
