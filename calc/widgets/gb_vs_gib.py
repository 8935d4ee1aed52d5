"""Widgets and facts of the note "GB and GiB" (docs/gb-vs-gib.md).

A decimal gigabyte (GB) is 10^9 bytes; a binary gibibyte (GiB) is 2^30 =
1,073,741,824 bytes, about 7.4% more. Datasheets print decimal GB; ``nvidia-smi``
prints MiB; PyTorch and vLLM divide by 2^30 and often still write "GB". The two
readings of one GPU differ by more than the units: the datasheet's 80 GB of an
H100 is 74.5 GiB, while ``nvidia-smi`` reports 81,559 MiB, which is 85.5 GB.

>>> to_bytes(80, "GB") / GiB
74.50580596923828
>>> convert()["outputs"]["GiB"]["text"]
'74.5058 GiB'
>>> facts()["smi_gb"]
'85.5 GB'
"""

from __future__ import annotations

import math
from typing import Annotated

from calc import lesson
from calc import memory
from calc.catalog import GPUS, get_gpu, get_model
from calc.errors import CalcError, check_choice
from calc.units import GB, KB, MB, TB, GiB, KiB, MiB, TiB, format_bytes, format_number
from calc.widgets.framework import Choice, FloatRange, output, table, view, widget
from calc.units import MAX_BYTES, UNITS, to_bytes

__all__ = ["convert", "gpu_memory", "VLLM_LOG", "facts"]

UNIT_LABELS = (
    ("B", "B (byte)"), ("KB", "KB (10^3 B)"), ("MB", "MB (10^6 B)"), ("GB", "GB (10^9 B)"), ("TB", "TB (10^12 B)"),
    ("KiB", "KiB (2^10 B)"), ("MiB", "MiB (2^20 B)"), ("GiB", "GiB (2^30 B)"), ("TiB", "TiB (2^40 B)"),
)
#: Significant digits in the converter's outputs: enough to tell 74.5058 GiB from 74.5 GB.
DIGITS = 6

#: A logged vLLM start-up that writes GiB as "GB" (the log quoted in vllm-project/vllm issue #10517).
VLLM_LOG = {
    "gpu": "RTX 3090",
    "model": "llama-3.1-8b",
    "total_gib": 23.58,
    "weights_gib": 14.9888,
    "kv_cache_gib": 3.81,
    "source": "vLLM issue #10517 (2024-12-02): RTX 3090, Llama 3.1 8B Instruct, TP 1, utilization 0.90; the log "
              "prints 'model weights took 14.9888 GB', which is 14.9888 x 2^30 bytes",
}


def amount_text(amount: float, digits: int = DIGITS) -> str:
    """``amount`` to ``digits`` significant digits, thousands separated, trailing zeros dropped.

    >>> amount_text(76293.9453125), amount_text(85520809984), amount_text(0.0727595761418343), amount_text(0)
    ('76,293.9', '85,520,809,984', '0.0727596', '0')
    """
    if amount == 0:
        return "0"
    decimals = max(0, digits - (math.floor(math.log10(abs(amount))) + 1))
    text = f"{round(amount, decimals):,.{decimals}f}"
    return text.rstrip("0").rstrip(".") if decimals else text


@widget
def convert(
    value: Annotated[float, FloatRange(0, 1e15, 0.001, label="Amount")] = 80.0,
    unit: Annotated[str, Choice(UNIT_LABELS, label="Unit")] = "GB",
):
    """One amount of memory in every decimal and binary unit."""
    if value * UNITS[check_choice("unit", unit, tuple(UNITS))] > MAX_BYTES:
        raise CalcError(f"Amount (value) must be at most 1 EB (10^18 bytes) in all; got {value:g} {unit}", "value")
    n_bytes = to_bytes(value, unit)
    outputs = [output(name, name, n_bytes / size, name, text=f"{amount_text(n_bytes / size)} {name}")
               for name, size in UNITS.items()]
    return view(outputs=outputs)


@widget
def gpu_memory(gpu: Annotated[str, Choice(tuple((k, g.name) for k, g in GPUS.items()), label="GPU")] = "h100-sxm-80gb"):
    """A GPU's memory on the datasheet (decimal GB) and as the driver reports it (MiB), in both units."""
    chosen = get_gpu(gpu)
    marketed, runtime = chosen.memory_bytes("marketed"), chosen.memory_bytes("runtime")
    rows = []
    for g in GPUS.values():
        m, r = g.memory_bytes("marketed"), g.memory_bytes("runtime")
        rows.append([g.name, f"{format_number(m / GB)} GB = {format_number(m / GiB, 4)} GiB",
                     f"{r / MiB:,.0f} MiB = {format_number(r / GB, 4)} GB", f"{100 * (r / m - 1):+.1f}%"])
    return view(
        outputs=[
            output("marketed_gb", "Datasheet", marketed / GB, "GB", text=f"{format_number(marketed / GB)} GB"),
            output("marketed_gib", "Datasheet, in GiB", marketed / GiB, "GiB",
                   text=f"{format_number(marketed / GiB, 4)} GiB"),
            output("runtime_mib", "Driver reading", runtime / MiB, "MiB", text=f"{runtime / MiB:,.0f} MiB"),
            output("runtime_gb", "Driver reading, in GB", runtime / GB, "GB", text=f"{format_number(runtime / GB, 4)} GB"),
            output("runtime_gib", "Driver reading, in GiB", runtime / GiB, "GiB",
                   text=f"{format_number(runtime / GiB, 4)} GiB"),
            output("difference", "Driver reading against datasheet", runtime / marketed - 1, "",
                   text=f"{100 * (runtime / marketed - 1):+.1f}% ({format_bytes(runtime - marketed)})"
                   if runtime >= marketed else
                   f"{100 * (runtime / marketed - 1):+.1f}% (-{format_bytes(marketed - runtime)})"),
        ],
        tables={"all_gpus": table(
            ["GPU", "datasheet", "driver reading", "driver against datasheet"],
            rows, caption="Every GPU in the catalog: the datasheet figure read as decimal bytes, and the capacity "
                          "the driver reports (nvidia-smi or rocm-smi).")},
    )


def facts() -> dict[str, str]:
    """Numbers quoted in the note's prose, each computed from the catalog or calc.memory.

    >>> f = facts()
    >>> f["h100_gib"], f["smi_mib"], f["kv_tokens_marketed"]
    ('74.5 GiB', '81,559 MiB', '399,169')
    """
    h100 = get_gpu(lesson.REPLICA["gpu"])
    marketed, runtime = h100.memory_bytes("marketed"), h100.memory_bytes("runtime")
    replica = dict(lesson.REPLICA)
    model, gpu = get_model(replica.pop("model")), replica.pop("gpu")
    replica.pop("memory_basis")
    rounded = lesson.kv_capacity(rounded_params=True)  # weights = 70.6e9 x 2 / 4, as the lesson counts
    on_box = memory.kv_capacity(model, gpu, memory_basis="marketed", weights_bytes=rounded.weights_bytes, **replica)
    on_smi = memory.kv_capacity(model, gpu, memory_basis="runtime", weights_bytes=rounded.weights_bytes, **replica)
    model_8b = get_model(VLLM_LOG["model"])
    weights_8b = memory.weight_bytes(model_8b, "bf16").total_bytes
    kv_8b = memory.kv_bytes_per_token(model_8b, "bf16")
    gaps = {name: 100 * (binary / decimal - 1) for name, binary, decimal in
            (("kb", KiB, KB), ("mb", MiB, MB), ("gb", GiB, GB), ("tb", TiB, TB))}
    return {
        "gb_bytes": f"{GB:,}",
        "gib_bytes": f"{GiB:,}",
        "gib_in_gb": f"{GiB / GB:.4f}",
        "gb_in_gib": f"{GB / GiB:.4f}",
        "gap_kb": f"{format_number(gaps['kb'], 2)}%",
        "gap_mb": f"{format_number(gaps['mb'], 2)}%",
        "gap_gb": f"{format_number(gaps['gb'], 2)}%",
        "gap_tb": f"{format_number(gaps['tb'], 2)}%",
        "h100_gb": f"{format_number(marketed / GB)} GB",
        "h100_bytes": f"{marketed:,}",
        "h100_gib": f"{format_number(marketed / GiB)} GiB",
        "smi_mib": f"{runtime / MiB:,.0f} MiB",
        "smi_mib_plain": f"{runtime / MiB:.0f}",
        "smi_bytes": f"{runtime:,}",
        "smi_gb": f"{format_number(runtime / GB)} GB",
        "smi_gib": f"{format_number(runtime / GiB)} GiB",
        "smi_over_box": f"{format_number(100 * (runtime / marketed - 1), 2)}%",
        "smi_minus_box": format_bytes(runtime - marketed),
        "utilization": f"{replica['gpu_memory_utilization']:.0%}",
        "requested_box": format_bytes(on_box.requested_bytes),
        "requested_smi": format_bytes(on_smi.requested_bytes),
        "weights_per_gpu": format_bytes(on_box.weights_bytes),
        "kv_bytes_box": format_bytes(on_box.kv_cache_bytes),
        "kv_bytes_smi": format_bytes(on_smi.kv_cache_bytes),
        "kv_per_token_per_gpu": f"{on_box.kv_bytes_per_token_per_gpu:,} bytes",
        "kv_tokens_marketed": f"{on_box.kv_cache_tokens_raw:,}",
        "kv_tokens_runtime": f"{on_smi.kv_cache_tokens_raw:,}",
        "kv_tokens_gain": f"{format_number(100 * (on_smi.kv_cache_tokens_raw / on_box.kv_cache_tokens_raw - 1))}%",
        "vllm_weights_gib": f"{VLLM_LOG['weights_gib']}",
        "vllm_weights_gb": f"{format_number(VLLM_LOG['weights_gib'] * GiB / GB, 4)} GB",
        "vllm_total_gib": f"{VLLM_LOG['total_gib']}",
        "vllm_total_gb": f"{format_number(VLLM_LOG['total_gib'] * GiB / GB, 3)} GB",
        "vllm_kv_gib": f"{VLLM_LOG['kv_cache_gib']}",
        "vllm_kv_gb": f"{format_number(VLLM_LOG['kv_cache_gib'] * GiB / GB, 3)} GB",
        "weights_8b_bytes": f"{weights_8b:,}",
        "weights_8b_gb": f"{format_number(weights_8b / GB, 4)} GB",
        "weights_8b_gib": f"{format_number(weights_8b / GiB, 4)} GiB",
        "kv_8b": f"{kv_8b:,} bytes",
        "kv_8b_kib": f"{format_number(kv_8b / KiB)} KiB",
        "kv_8b_kb": f"{format_number(kv_8b / KB)} KB",
    }
