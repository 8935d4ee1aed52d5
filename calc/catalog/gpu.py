"""A GPU as the serving arithmetic needs it: memory, bandwidth, FLOP/s, link speed, price.

Capacity is kept twice, because the two numbers differ and readers trip on it:
``memory_bytes_marketed`` is the figure on the datasheet read as decimal bytes
(the lesson counts an H100 as exactly 80e9 bytes), ``memory_bytes_runtime`` is
what the driver reports (``nvidia-smi`` shows 81,559 MiB for an H100 SXM, which
is 85.5e9 bytes). Which one a calculation uses is always an explicit choice.

>>> from calc.catalog import get_gpu
>>> h100 = get_gpu("h100-sxm-80gb")
>>> h100.memory_bytes("marketed"), h100.memory_bytes("runtime")
(80000000000, 85520809984)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calc.errors import CalcError, check_choice

__all__ = ["GPU", "MEMORY_BASES", "FLOP_DTYPES"]

MEMORY_BASES = ("marketed", "runtime")
FLOP_DTYPES = ("bf16", "fp16", "fp8", "int8", "fp4")


@dataclass(frozen=True)
class GPU:
    """One accelerator's figures, each with where it comes from.

    ``flops_per_s`` holds dense (no 2:4 sparsity) tensor-core throughput per
    dtype; ``interconnect_bytes_per_s`` is the GPU-to-GPU bandwidth per GPU in
    one direction (NVLink, Infinity Fabric, or PCIe when there is no such link).
    ``price_usd_per_hour`` is set only when a dated public listing gives it.

    >>> from calc.catalog import get_gpu
    >>> get_gpu("h100-sxm-80gb").flops_per_s["fp8"] / get_gpu("h100-sxm-80gb").flops_per_s["bf16"]
    2.001011122345804
    """

    key: str
    name: str
    memory_bytes_marketed: int
    memory_bytes_runtime: int
    memory_runtime_source: str
    hbm_bytes_per_s: float
    flops_per_s: dict[str, float] = field(hash=False)
    interconnect_bytes_per_s: float
    price_usd_per_hour: float | None
    price_date: str | None
    price_source: str | None
    source: str
    #: The link tensor parallelism uses: a key of :data:`calc.catalog.interconnect.INTERCONNECTS` (its
    #: bandwidth is ``interconnect_bytes_per_s``; whether it is a full mesh sets the all-reduce algorithm).
    interconnect: str = "pcie4-x16"

    def memory_bytes(self, basis: str = "marketed") -> int:
        """Capacity in bytes on the chosen basis: ``marketed`` (datasheet, decimal) or ``runtime``.

        >>> from calc.catalog import get_gpu
        >>> get_gpu("a100-40gb").memory_bytes("runtime") / 2**30
        40.0
        """
        check_choice("memory_basis", basis, MEMORY_BASES)
        return self.memory_bytes_marketed if basis == "marketed" else self.memory_bytes_runtime

    def flops(self, dtype: str = "bf16") -> float:
        """Dense tensor-core FLOP/s for ``dtype``; CalcError naming the dtypes this GPU has.

        >>> from calc.catalog import get_gpu
        >>> get_gpu("l4").flops("fp8")
        242000000000000.0
        >>> get_gpu("a100-80gb").flops("fp8")
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: dtype must be one of bf16, fp16, int8 for A100 SXM 80GB; got 'fp8'
        """
        if dtype not in self.flops_per_s:
            allowed = ", ".join(d for d in FLOP_DTYPES if d in self.flops_per_s)
            raise CalcError(f"dtype must be one of {allowed} for {self.name}; got {dtype!r}", "dtype")
        return self.flops_per_s[dtype]

    def ridge_point_flops_per_byte(self, dtype: str = "bf16") -> float:
        """Arithmetic intensity where compute and memory time are equal: FLOP/s / (bytes/s).

        Roofline model (Williams, Waterman and Patterson, CACM 2009).

        >>> from calc.catalog import get_gpu
        >>> round(get_gpu("h100-sxm-80gb").ridge_point_flops_per_byte("bf16"))
        295
        """
        return self.flops(dtype) / self.hbm_bytes_per_s
