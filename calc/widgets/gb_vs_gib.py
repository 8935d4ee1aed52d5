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

import functools
import math
from typing import Annotated

from calc import lesson
from calc import memory
from calc.catalog import GPUS, get_gpu, get_model
from calc.errors import CalcError, check_choice
from calc.units import GB, KB, MB, TB, GiB, KiB, MiB, TiB, bytes_beyond, format_bytes, format_number, from_bytes, relative_change
from calc.widgets.framework import Choice, FloatRange, fact, facts_of, output, table, view, widget
from calc.widgets.views import percent_text
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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ gb_vs_gib:name }} elsewhere: 1 use). Every conversion is
# calc.units' (to_bytes, from_bytes), every gap calc.units.relative_change.
def _h100():
    return get_gpu(lesson.REPLICA["gpu"])


def _marketed() -> int:
    return _h100().memory_bytes("marketed")


def _runtime() -> int:
    return _h100().memory_bytes("runtime")


@functools.cache
def _on(memory_basis: str):
    """The running example's KV capacity with the GPU counted on ``memory_basis`` (weights = 70.6e9 x 2 / 4, as
    the lesson counts them)."""
    replica = dict(lesson.REPLICA)
    model, gpu = get_model(replica.pop("model")), replica.pop("gpu")
    replica.pop("memory_basis")
    rounded = lesson.kv_capacity(rounded_params=True)
    return memory.kv_capacity(model, gpu, memory_basis=memory_basis, weights_bytes=rounded.weights_bytes, **replica)


def _weights_8b() -> float:
    return memory.weight_bytes(get_model(VLLM_LOG["model"]), "bf16").total_bytes


def _kv_8b() -> int:
    return memory.kv_bytes_per_token(get_model(VLLM_LOG["model"]), "bf16")


def _gap(binary: str, decimal: str) -> str:
    return percent_text(relative_change(to_bytes(1, binary), to_bytes(1, decimal)), 2)


def _log_in_gb(gib: float, digits: int) -> str:
    return f"{format_number(from_bytes(to_bytes(gib, 'GiB'), 'GB'), digits)} GB"


@fact
def gb_bytes():
    return f"{GB:,}"


@fact
def gib_bytes():
    return f"{GiB:,}"


@fact
def gib_in_gb():
    return f"{from_bytes(GiB, 'GB'):.4f}"


@fact
def gb_in_gib():
    return f"{from_bytes(GB, 'GiB'):.4f}"


@fact
def gap_kb():
    return _gap("KiB", "KB")


@fact
def gap_mb():
    return _gap("MiB", "MB")


@fact
def gap_gb():
    return _gap("GiB", "GB")


@fact
def gap_tb():
    return _gap("TiB", "TB")


@fact
def h100_gb():
    return f"{format_number(from_bytes(_marketed(), 'GB'))} GB"


@fact
def h100_bytes():
    return f"{_marketed():,}"


@fact
def h100_gib():
    """>>> h100_gib(), smi_mib(), kv_tokens_marketed()
    ('74.5 GiB', '81,559 MiB', '399,169')
    """
    return f"{format_number(from_bytes(_marketed(), 'GiB'))} GiB"


@fact
def smi_mib():
    return f"{from_bytes(_runtime(), 'MiB'):,.0f} MiB"


@fact
def smi_mib_plain():
    return f"{from_bytes(_runtime(), 'MiB'):.0f}"


@fact
def smi_bytes():
    return f"{_runtime():,}"


@fact
def smi_gb():
    return f"{format_number(from_bytes(_runtime(), 'GB'))} GB"


@fact
def smi_gib():
    return f"{format_number(from_bytes(_runtime(), 'GiB'))} GiB"


@fact
def smi_over_box():
    return percent_text(relative_change(_runtime(), _marketed()), 2)


@fact
def smi_minus_box():
    return format_bytes(bytes_beyond(_runtime(), _marketed()))


@fact
def utilization():
    return f"{lesson.REPLICA['gpu_memory_utilization']:.0%}"


@fact
def requested_box():
    return format_bytes(_on("marketed").requested_bytes)


@fact
def requested_smi():
    return format_bytes(_on("runtime").requested_bytes)


@fact
def weights_per_gpu():
    return format_bytes(_on("marketed").weights_bytes)


@fact
def kv_bytes_box():
    return format_bytes(_on("marketed").kv_cache_bytes)


@fact
def kv_bytes_smi():
    return format_bytes(_on("runtime").kv_cache_bytes)


@fact
def kv_per_token_per_gpu():
    return f"{_on('marketed').kv_bytes_per_token_per_gpu:,} bytes"


@fact
def kv_tokens_marketed():
    return f"{_on('marketed').kv_cache_tokens_raw:,}"


@fact
def kv_tokens_runtime():
    return f"{_on('runtime').kv_cache_tokens_raw:,}"


@fact
def kv_tokens_gain():
    return percent_text(relative_change(_on("runtime").kv_cache_tokens_raw, _on("marketed").kv_cache_tokens_raw))


@fact
def vllm_weights_gib():
    return f"{VLLM_LOG['weights_gib']}"


@fact
def vllm_weights_gb():
    return _log_in_gb(VLLM_LOG["weights_gib"], 4)


@fact
def vllm_total_gib():
    return f"{VLLM_LOG['total_gib']}"


@fact
def vllm_total_gb():
    return _log_in_gb(VLLM_LOG["total_gib"], 3)


@fact
def vllm_kv_gib():
    return f"{VLLM_LOG['kv_cache_gib']}"


@fact
def vllm_kv_gb():
    return _log_in_gb(VLLM_LOG["kv_cache_gib"], 3)


@fact
def weights_8b_bytes():
    return f"{_weights_8b():,}"


@fact
def weights_8b_gb():
    return f"{format_number(from_bytes(_weights_8b(), 'GB'), 4)} GB"


@fact
def weights_8b_gib():
    return f"{format_number(from_bytes(_weights_8b(), 'GiB'), 4)} GiB"


@fact
def kv_8b():
    return f"{_kv_8b():,} bytes"


@fact
def kv_8b_kib():
    return f"{format_number(from_bytes(_kv_8b(), 'KiB'))} KiB"


@fact
def kv_8b_kb():
    return f"{format_number(from_bytes(_kv_8b(), 'KB'))} KB"


facts = facts_of(__name__)
