"""GPU-to-GPU links: what a tensor-parallel all-reduce travels over, per GPU model.

A GPU names its link (:attr:`calc.catalog.GPU.interconnect`). Two facts of a link set how an
all-reduce is priced (:mod:`calc.parallel`): its bandwidth per GPU in one direction, and whether every
GPU of a server reaches every other directly (``full_mesh``: NVLink through NVSwitch, Infinity Fabric),
which is what lets an engine's one-shot custom all-reduce run on more than two GPUs. vLLM enables its
custom all-reduce on more than two GPUs only when they are fully NVLinked, otherwise NCCL's ring runs
(vllm/distributed/device_communicators/custom_all_reduce.py, ``CustomAllreduce.__init__``: "Custom
allreduce is disabled because it's not supported on more than two PCIe-only GPUs").

>>> INTERCONNECTS["nvlink4"].bytes_per_s, INTERCONNECTS["pcie4-x16"].full_mesh
(450000000000, False)
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.units import GB

__all__ = ["Interconnect", "INTERCONNECTS", "LINK_KINDS"]

LINK_KINDS = ("nvlink", "pcie", "infinity-fabric")


@dataclass(frozen=True)
class Interconnect:
    """One kind of GPU-to-GPU link: its bandwidth per GPU one way, whether it is a full mesh, a source.

    >>> INTERCONNECTS["pcie5-x16"].kind, INTERCONNECTS["pcie5-x16"].bytes_per_s / 1e9
    ('pcie', 64.0)
    """

    key: str
    label: str
    kind: str
    bytes_per_s: float
    full_mesh: bool
    source: str


_NVLINK_SRC = "NVIDIA NVLink and NVSwitch page, nvidia.com/en-us/data-center/nvlink (bandwidth per GPU, both ways)"
_PCIE_SRC = "PCI-SIG specifications: PCIe 4.0 16 GT/s and 5.0 32 GT/s per lane, x16 (pcisig.com/specifications)"

INTERCONNECTS: dict[str, Interconnect] = {
    "nvlink5": Interconnect("nvlink5", "NVLink 5", "nvlink", 900 * GB, True,
                            f"{_NVLINK_SRC}: 1.8 TB/s per GPU both ways (Blackwell), 900 GB/s one way"),
    "nvlink4": Interconnect("nvlink4", "NVLink 4", "nvlink", 450 * GB, True,
                            f"{_NVLINK_SRC}: 900 GB/s per GPU both ways (Hopper), 450 GB/s one way"),
    "nvlink3": Interconnect("nvlink3", "NVLink 3", "nvlink", 300 * GB, True,
                            f"{_NVLINK_SRC}: 600 GB/s per GPU both ways (Ampere A100 SXM), 300 GB/s one way"),
    "infinity-fabric-mi300x": Interconnect(
        "infinity-fabric-mi300x", "AMD Infinity Fabric (MI300X)", "infinity-fabric", 448 * GB, True,
        "AMD Instinct MI300X datasheet: 7 Infinity Fabric links, 896 GB/s per GPU both ways, 448 GB/s one way"),
    "pcie5-x16": Interconnect("pcie5-x16", "PCIe Gen5 x16", "pcie", 64 * GB, False,
                              f"{_PCIE_SRC}: 128 GB/s both directions together, 64 GB/s one way"),
    "pcie4-x16": Interconnect("pcie4-x16", "PCIe Gen4 x16", "pcie", 32 * GB, False,
                              f"{_PCIE_SRC}: 64 GB/s both directions together, 32 GB/s one way"),
}
