"""A GPU as the serving arithmetic needs it: memory, bandwidth, FLOP/s, link speed, price.

Capacity is kept twice, because the two numbers differ and readers trip on it:
``memory_bytes_marketed`` is the figure on the datasheet read as decimal bytes
(the lesson counts an H100 as exactly 80e9 bytes), ``memory_bytes_runtime`` is
what the driver reports (``nvidia-smi`` shows 81,559 MiB for an H100 SXM, which
is 85.5e9 bytes). A third, ``engine``, is what CUDA gives the engine's process
(``torch.cuda.mem_get_info()``, the ``total_gpu_memory`` of vLLM's start-up log:
79.19 GiB on an H100 SXM): the driver keeps a few hundred MiB of the card for
itself. Which one a calculation uses is always an explicit choice.

>>> from calc.catalog import get_gpu
>>> h100 = get_gpu("h100-sxm-80gb")
>>> h100.memory_bytes("marketed"), h100.memory_bytes("runtime"), round(h100.memory_bytes("engine") / 2**30, 2)
(80000000000, 85520809984, 79.19)
"""

from __future__ import annotations

from dataclasses import dataclass, field

from calc.errors import CalcError, check_choice

__all__ = ["GPU", "MEMORY_BASES", "FLOP_DTYPES", "DRIVER_RESERVED_BYTES", "DRIVER_RESERVED_SOURCE"]

#: ``marketed``: the lesson's basis (datasheet GB as 1e9 bytes); ``runtime``: nvidia-smi's total;
#: ``engine``: what CUDA reports to the engine's process (the capacity its start-up log prints).
MEMORY_BASES = ("marketed", "runtime", "engine")
#: What the driver keeps of a card beyond what CUDA reports as total, where no engine log gives the
#: card's own reading: the mean of the two readings the catalog has, H100 SXM (81,559 MiB in nvidia-smi,
#: 79.19 GiB = 81,091 MiB in vLLM's log: 468 MiB) and RTX 3090 (24,576 MiB, 23.58 GiB = 24,146 MiB: 430 MiB).
#: Role: assumption (two sourced readings, see those GPUs' ``memory_engine_source``).
DRIVER_RESERVED_BYTES = 449 * 2**20
DRIVER_RESERVED_SOURCE = ("no start-up log for this card: nvidia-smi's total less 449 MiB, the mean gap between "
                          "nvidia-smi and CUDA's total on the H100 SXM (468 MiB) and the RTX 3090 (430 MiB)")
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
    #: What CUDA reports as the card's total to an engine (bytes), where a public start-up log prints it;
    #: None: nvidia-smi's figure less :data:`DRIVER_RESERVED_BYTES`.
    memory_bytes_engine_reading: int | None = None
    memory_engine_source: str = ""

    def memory_bytes(self, basis: str = "marketed") -> int:
        """Capacity in bytes on the chosen basis: ``marketed`` (datasheet, decimal), ``runtime`` or ``engine``.

        ``engine``: the start-up log's reading when the catalog has one, else nvidia-smi's total less
        :data:`DRIVER_RESERVED_BYTES` (:meth:`engine_memory_source` says which).

        >>> from calc.catalog import get_gpu
        >>> get_gpu("a100-40gb").memory_bytes("runtime") / 2**30
        40.0
        >>> round(get_gpu("rtx-3090").memory_bytes("engine") / 2**30, 2), get_gpu("a100-40gb").memory_bytes("engine") // 2**20
        (23.58, 40511)
        """
        check_choice("memory_basis", basis, MEMORY_BASES)
        if basis == "marketed":
            return self.memory_bytes_marketed
        if basis == "runtime":
            return self.memory_bytes_runtime
        if self.memory_bytes_engine_reading is not None:
            return self.memory_bytes_engine_reading
        return self.memory_bytes_runtime - DRIVER_RESERVED_BYTES

    def engine_memory_source(self) -> str:
        """Where the ``engine`` capacity comes from: a start-up log, or the driver-reserve assumption.

        >>> from calc.catalog import get_gpu
        >>> get_gpu("l4").engine_memory_source().startswith("no start-up log")
        True
        """
        return self.memory_engine_source if self.memory_bytes_engine_reading is not None else DRIVER_RESERVED_SOURCE

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
