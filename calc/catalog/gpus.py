"""The GPU catalog: datasheet figures (dense, no sparsity) and runtime capacity readings, each sourced.

Datasheet throughput with 2:4 sparsity is twice the dense figure; these are the
dense ones. Where a vendor gives only the sparse number, it is halved and the
source says so. Runtime capacity is what ``nvidia-smi`` (or ``rocm-smi``)
reports on a machine, in MiB; the marketed capacity is the datasheet's GB read
as 1e9 bytes.

>>> sorted(GPUS)
['a100-40gb', 'a100-80gb', 'a100-pcie-80gb', 'b200', 'h100-pcie-80gb', 'h100-sxm-80gb', 'h200', 'l4', 'l40s', 'mi300x', 'rtx-3090', 'rtx-4090', 'rtx-5090']
>>> GPUS["h100-sxm-80gb"].price_usd_per_hour, GPUS["l4"].price_usd_per_hour, GPUS["h200"].price_usd_per_hour
(3.78, 0.7992, None)
"""

from __future__ import annotations

from calc.catalog.gpu import GPU
from calc.units import GB, MiB, TB

__all__ = ["GPUS"]

_T = 1e12  # tera: FLOP/s and bytes/s on datasheets are decimal

_NV_H100 = "NVIDIA H100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/h100 (SXM column: 3.35 TB/s, BF16/FP16 989 TFLOPS, FP8/INT8 1,979 dense)"
_NV_H200 = "NVIDIA H200 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/h200 (SXM: 141 GB, 4.8 TB/s, same tensor cores as H100 SXM)"
_NV_A100 = "NVIDIA A100 Tensor Core GPU datasheet, nvidia.com/en-us/data-center/a100 (SXM: BF16/FP16 312 TFLOPS, INT8 624 TOPS dense; 80GB 2,039 GB/s, 40GB 1,555 GB/s)"
_NV_L40S = "NVIDIA L40S datasheet, nvidia.com/en-us/data-center/l40s (BF16/FP16 362 TFLOPS, FP8/INT8 733 dense, i.e. half the sparse 1,466; 864 GB/s GDDR6)"
_NV_L4 = "NVIDIA L4 datasheet, nvidia.com/en-us/data-center/l4 (BF16/FP16 121 TFLOPS, FP8/INT8 242 dense, i.e. half the sparse 242.5/485; 300 GB/s)"
_NV_B200 = "NVIDIA HGX B200 datasheet, nvidia.com/en-us/data-center/hgx, per GPU (BF16/FP16 2.25, FP8/INT8 4.5, FP4 9 PFLOPS dense; 8 TB/s HBM3e)"
_AMD_MI300X = "AMD Instinct MI300X datasheet, amd.com/en/products/accelerators/instinct/mi300/mi300x.html (BF16/FP16 1,307.4, FP8/INT8 2,614.9 TFLOPS dense; 5.3 TB/s HBM3)"
_NV_GA102 = ("NVIDIA Ampere GA102 GPU Architecture whitepaper (nvidia.com/content/PDF/nvidia-ampere-ga-102-gpu-"
             "architecture-whitepaper-v2.pdf), Appendix A, GeForce RTX 3090 (24 GB GDDR6X, 936 GB/s; "
             "FP16 and BF16 tensor 71 TFLOPS dense with FP32 accumulate, the mode PyTorch uses, against 142 with "
             "FP16 accumulate; INT8 tensor 284 TOPS dense; the doubled figures in the same table are with 2:4 "
             "sparsity; no FP8 tensor cores)")

_NV_AD102 = ("NVIDIA Ada GPU Architecture whitepaper v2.02 (images.nvidia.com/aem-dam/Solutions/geforce/ada/"
             "nvidia-ada-gpu-architecture.pdf), Appendix A, GeForce RTX 4090 (24 GB GDDR6X, 1,008 GB/s; FP16 and BF16 "
             "tensor 165.2 TFLOPS dense with FP32 accumulate, the mode PyTorch's GEMMs and FlashAttention use, against "
             "330.3 with FP16 accumulate: GeForce cards run FP32 accumulate at half rate; FP8 tensor 330.3 dense with "
             "FP32 accumulate (the figure v2.02 corrected); INT8 tensor 660.6 TOPS dense; the doubled figures of the "
             "same table are with 2:4 sparsity)")
_NV_GB202 = ("NVIDIA RTX Blackwell GPU Architecture whitepaper (images.nvidia.com/aem-dam/Solutions/geforce/blackwell/"
             "nvidia-rtx-blackwell-gpu-architecture.pdf), GeForce RTX 5090 (32 GB GDDR7, 1,792 GB/s; FP16 and "
             "BF16 tensor 209.5 TFLOPS dense with FP32 accumulate, 419 with FP16 accumulate or 2:4 sparsity), as "
             "quoted with the whitepaper's own row in public GPU sizing notes (search tool, find_string 'FP32 "
             "accumulate 165.2'); its FP8 and FP4 rates with FP32 accumulate were not found in a citable form, so "
             "the catalog leaves them out (FP8 weights compute in 16 bits here, calc.roofline.compute_dtype)")
_PCIE5 = "PCIe Gen5 x16: 128 GB/s both directions together, 64 GB/s one way (no NVLink on this card)"


def _smi_logs(reading: str, name: str, needle: str) -> str:
    """Where a runtime capacity comes from: public nvidia-smi output of the card (found with a code search)."""
    return (f"nvidia-smi: {reading} for '{name}', as printed in several independent public nvidia-smi logs in "
            f"GitHub files (search tool, find_string '{needle}')")


_PCIE4 = "PCIe Gen4 x16: 64 GB/s both directions together, 32 GB/s one way (no NVLink on this card)"
_NV_H100_PCIE = ("NVIDIA H100 Tensor Core GPU datasheet, PCIe column (80 GB HBM2e, 2,000 GB/s; BF16/FP16 1,513 and "
                 "FP8/INT8 3,026 TFLOPS with sparsity, so 756 and 1,513 dense; NVLink bridge 600 GB/s, PCIe Gen5 "
                 "128 GB/s; 300-350 W), as reproduced by HPC Tech (archive-lib.hpctech.co.jp/gpuproduct/"
                 "nvidia-h100.html); NVIDIA H100 PCIe product brief PB-11133-001_v02: 'greater than 2,000 GBps', 350 W")
_NV_A100_PCIE = ("NVIDIA A100 Tensor Core GPU datasheet, 80GB PCIe column (80 GB HBM2e, 1,935 GB/s; BF16/FP16 312 and "
                 "INT8 624 TOPS dense, the same GA100 tensor cores as the SXM part; NVLink bridge for 2 GPUs 600 GB/s, "
                 "PCIe Gen4 64 GB/s; 300 W), as quoted in public GPU spec tables (search tool, code corpus)")

# Prices. A GPU's price is a provider's public on-demand list price for one GPU, in USD per GPU-hour, with no
# commitment (not spot, not reserved, not a marketplace bid), as read on the date given (``price_date``), from
# the page named in ``price_source`` (the provider's pricing page, and the page that quoted it when read there).
# One reading date for all (2026-05-07, the day a public cheat sheet verified Lambda's and Modal's pricing pages:
# techbytes.app/posts/serverless-gpu-pricing-matrix-modal-replicate-lambda-2026), Lambda first (per-GPU
# instances), Modal where Lambda lists none. A GPU with no such listing has no price: the planner and the pages
# leave it out or ask the reader for one, never guessing. Every price is editable wherever it is used.
_PRICE_DATE = "2026-05-07"
_PRICE_QUOTED = ("as quoted on 2026-05-07 by techbytes.app/posts/serverless-gpu-pricing-matrix-modal-replicate-"
                 "lambda-2026 ('Prices verified on May 7, 2026 from official vendor pricing')")

GPUS: dict[str, GPU] = {
    "h100-sxm-80gb": GPU(
        key="h100-sxm-80gb",
        name="H100 SXM 80GB",
        memory_bytes_marketed=80 * GB,
        memory_bytes_runtime=81_559 * MiB,
        memory_runtime_source=_smi_logs("81,559 MiB", "NVIDIA H100 80GB HBM3", "81559MiB"),
        hbm_bytes_per_s=3.35 * TB,
        flops_per_s={"bf16": 989 * _T, "fp16": 989 * _T, "fp8": 1_979 * _T, "int8": 1_979 * _T},
        interconnect_bytes_per_s=450 * GB,
        price_usd_per_hour=3.78,
        price_date="2026-05-07",
        price_source="Lambda on-demand H100 SXM per GPU-hour, listed 2026-05-07 (lambda.ai/service/gpu-cloud; "
                     "Modal $3.95 at modal.com/pricing and Replicate $5.49 at replicate.com/pricing the same day)",
        source=f"{_NV_H100}; NVLink 4: 900 GB/s per GPU both ways, 450 GB/s one way",
        interconnect="nvlink4",
        memory_bytes_engine_reading=round(79.19 * 2**30),
        memory_engine_source="vLLM start-up logs on an H100 80GB: total 79.19 GiB (llm-d-incubation/llm-d-planner "
                             "accuracy/accuracy_report.md, vLLM v0.19.0 runs)",
    ),
    "h200": GPU(
        key="h200",
        name="H200 SXM 141GB",
        memory_bytes_marketed=141 * GB,
        memory_bytes_runtime=143_771 * MiB,
        memory_runtime_source=_smi_logs("143,771 MiB", "NVIDIA H200", "143771MiB"),
        hbm_bytes_per_s=4.8 * TB,
        flops_per_s={"bf16": 989 * _T, "fp16": 989 * _T, "fp8": 1_979 * _T, "int8": 1_979 * _T},
        interconnect_bytes_per_s=450 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_H200}; NVLink 4: 900 GB/s per GPU both ways, 450 GB/s one way",
        interconnect="nvlink4",
    ),
    "a100-80gb": GPU(
        key="a100-80gb",
        name="A100 SXM 80GB",
        memory_bytes_marketed=80 * GB,
        memory_bytes_runtime=81_920 * MiB,
        memory_runtime_source=_smi_logs("81,920 MiB", "NVIDIA A100-SXM4-80GB", "81920MiB"),
        hbm_bytes_per_s=2.039 * TB,
        flops_per_s={"bf16": 312 * _T, "fp16": 312 * _T, "int8": 624 * _T},
        interconnect_bytes_per_s=300 * GB,
        price_usd_per_hour=2.4984,
        price_date=_PRICE_DATE,
        price_source=("Modal A100 80GB, $2.4984 per GPU-hour billed per second (modal.com/pricing; Modal does not "
                      "say SXM or PCIe; Lambda lists no 1x A100 80GB), " + _PRICE_QUOTED),
        source=f"{_NV_A100}; NVLink 3: 600 GB/s per GPU both ways, 300 GB/s one way; no FP8 tensor cores",
        interconnect="nvlink3",
    ),
    "a100-40gb": GPU(
        key="a100-40gb",
        name="A100 SXM 40GB",
        memory_bytes_marketed=40 * GB,
        memory_bytes_runtime=40_960 * MiB,
        memory_runtime_source=_smi_logs("40,960 MiB", "NVIDIA A100-SXM4-40GB", "40960MiB"),
        hbm_bytes_per_s=1.555 * TB,
        flops_per_s={"bf16": 312 * _T, "fp16": 312 * _T, "int8": 624 * _T},
        interconnect_bytes_per_s=300 * GB,
        price_usd_per_hour=1.48,
        price_date=_PRICE_DATE,
        price_source=("Lambda on-demand 1x A100 40GB SXM, $1.48 per GPU-hour (lambda.ai/service/gpu-cloud), " + _PRICE_QUOTED),
        source=f"{_NV_A100}; NVLink 3: 600 GB/s per GPU both ways, 300 GB/s one way; no FP8 tensor cores",
        interconnect="nvlink3",
    ),
    "h100-pcie-80gb": GPU(
        key="h100-pcie-80gb",
        name="H100 PCIe 80GB",
        memory_bytes_marketed=80 * GB,
        memory_bytes_runtime=81_559 * MiB,
        memory_runtime_source="nvidia-smi: 81,559 MiB for 'NVIDIA H100 PCIe' (350 W cap), the same reading as the "
                              "SXM part, in several independent public nvidia-smi logs in GitHub files (search "
                              "tool, find_string 'H100 PCIe')",
        hbm_bytes_per_s=2.0 * TB,
        flops_per_s={"bf16": 756 * _T, "fp16": 756 * _T, "fp8": 1_513 * _T, "int8": 1_513 * _T},
        # Tensor parallelism goes over PCIe Gen5 x16 unless pairs are bridged; the catalog keeps the slower,
        # always-present link (an NVLink bridge joins two cards at 600 GB/s both ways, 300 GB/s one way).
        interconnect_bytes_per_s=64 * GB,
        price_usd_per_hour=2.86,
        price_date=_PRICE_DATE,
        price_source=("Lambda on-demand 1x H100 PCIe, $2.86 per GPU-hour (lambda.ai/service/gpu-cloud), " + _PRICE_QUOTED),
        source=f"{_NV_H100_PCIE}; PCIe Gen5 x16: 128 GB/s both directions together, 64 GB/s one way",
        interconnect="pcie5-x16",
    ),
    "a100-pcie-80gb": GPU(
        key="a100-pcie-80gb",
        name="A100 PCIe 80GB",
        memory_bytes_marketed=80 * GB,
        memory_bytes_runtime=81_920 * MiB,
        memory_runtime_source="nvidia-smi: 81,920 MiB for 'NVIDIA A100 80GB PCIe' (300 W cap), in several "
                              "independent public nvidia-smi logs in GitHub files (search tool, find_string "
                              "'A100 80GB PCIe')",
        hbm_bytes_per_s=1.935 * TB,
        flops_per_s={"bf16": 312 * _T, "fp16": 312 * _T, "int8": 624 * _T},
        # As for the H100 PCIe: the PCIe link, not the optional two-card NVLink bridge (600 GB/s both ways).
        interconnect_bytes_per_s=32 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_A100_PCIE}; {_PCIE4.replace(' (no NVLink on this card)', '')}; no FP8 tensor cores; "
               "no dated hourly listing from a provider was found, so no price: the reader enters theirs",
        interconnect="pcie4-x16",
    ),
    "l40s": GPU(
        key="l40s",
        name="L40S 48GB",
        memory_bytes_marketed=48 * GB,
        memory_bytes_runtime=46_068 * MiB,
        memory_runtime_source="nvidia-smi --query-gpu=memory.total: 46,068 MiB with ECC on (driver 595.71.05, "
                              "github.com/akash-network/provider-configs pull request #99)",
        hbm_bytes_per_s=0.864 * TB,
        flops_per_s={"bf16": 362 * _T, "fp16": 362 * _T, "fp8": 733 * _T, "int8": 733 * _T},
        interconnect_bytes_per_s=32 * GB,
        price_usd_per_hour=1.9512,
        price_date=_PRICE_DATE,
        price_source=("Modal L40S, $1.9512 per GPU-hour billed per second (modal.com/pricing; Lambda lists no L40S), "
                      + _PRICE_QUOTED),
        source=f"{_NV_L40S}; {_PCIE4}",
        interconnect="pcie4-x16",
    ),
    "l4": GPU(
        key="l4",
        name="L4 24GB",
        memory_bytes_marketed=24 * GB,
        memory_bytes_runtime=23_034 * MiB,
        memory_runtime_source="nvidia-smi: 23,034 MiB with ECC on, as printed in public nvidia-smi logs of "
                              "Google Cloud g2 instances (several independent reports agree)",
        hbm_bytes_per_s=0.3 * TB,
        flops_per_s={"bf16": 121 * _T, "fp16": 121 * _T, "fp8": 242 * _T, "int8": 242 * _T},
        interconnect_bytes_per_s=32 * GB,
        price_usd_per_hour=0.7992,
        price_date=_PRICE_DATE,
        price_source=("Modal L4, $0.7992 per GPU-hour billed per second (modal.com/pricing; Lambda lists no L4), "
                      + _PRICE_QUOTED),
        source=f"{_NV_L4}; {_PCIE4}",
        interconnect="pcie4-x16",
    ),
    "rtx-3090": GPU(
        key="rtx-3090",
        name="RTX 3090 24GB",
        memory_bytes_marketed=24 * GB,
        memory_bytes_runtime=24_576 * MiB,
        memory_runtime_source="nvidia-smi: 24,576 MiB, as printed in public nvidia-smi output of GeForce RTX 3090 "
                              "cards (github.com/noonghunna/club-3090 issues #390 and #1129, drivers 580.142 and "
                              "595.84); PyTorch sees a little less (vLLM logged total_gpu_memory=23.58GiB on one, "
                              "github.com/vllm-project/vllm issue #10517)",
        hbm_bytes_per_s=0.936 * TB,
        flops_per_s={"bf16": 71 * _T, "fp16": 71 * _T, "int8": 284 * _T},
        interconnect_bytes_per_s=32 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_GA102}; {_PCIE4} (an optional NVLink bridge joins two cards at 56.25 GB/s each way); no "
               "dated hourly listing from a provider was found, so no price: the reader enters theirs",
        interconnect="pcie4-x16",
        memory_bytes_engine_reading=round(23.58 * 2**30),
        memory_engine_source="vLLM start-up log on an RTX 3090: 'Memory profiling results: total_gpu_memory=23.58GiB' "
                             "(github.com/vllm-project/vllm issue #10517)",
    ),
    "rtx-4090": GPU(
        key="rtx-4090",
        name="RTX 4090 24GB",
        memory_bytes_marketed=24 * GB,
        memory_bytes_runtime=24_564 * MiB,
        memory_runtime_source=_smi_logs("24,564 MiB", "NVIDIA GeForce RTX 4090", "24564MiB")
        + " (vLLM issue #7553 quotes the same total for four 4090s)",
        hbm_bytes_per_s=1.008 * TB,
        flops_per_s={"bf16": 165.2 * _T, "fp16": 165.2 * _T, "fp8": 330.3 * _T, "int8": 660.6 * _T},
        interconnect_bytes_per_s=32 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_AD102}; {_PCIE4} (the 4090 has no NVLink connector); no dated hourly listing from a provider "
               "was found, so no price: the reader enters theirs",
        interconnect="pcie4-x16",
        # CUDA's total (cudaMemGetInfo), the figure vLLM's profiler starts from; PyTorch prints the same total in
        # its out-of-memory message. No vLLM log on a 4090 prints it, so PyTorch's reading stands in for it.
        memory_bytes_engine_reading=round(23.64 * 2**30),
        memory_engine_source="PyTorch's out-of-memory message on a GeForce RTX 4090: 'GPU 0 has a total capacty of "
                             "23.64 GiB' (github.com/3DTopia/Phidias-Diffusion issue #8, 2025-08-10); an older "
                             "driver gave 23.61 GiB (github.com/pinokiofactory/flux-webui issue #11, 2024-08-12)",
    ),
    "rtx-5090": GPU(
        key="rtx-5090",
        name="RTX 5090 32GB",
        memory_bytes_marketed=32 * GB,
        memory_bytes_runtime=32_607 * MiB,
        memory_runtime_source=_smi_logs("32,607 MiB", "NVIDIA GeForce RTX 5090", "32607MiB"),
        hbm_bytes_per_s=1.792 * TB,
        flops_per_s={"bf16": 209.5 * _T, "fp16": 209.5 * _T},
        interconnect_bytes_per_s=64 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_GB202}; {_PCIE5}; no dated hourly listing from a provider was found, so no price: the "
               "reader enters theirs",
        interconnect="pcie5-x16",
        memory_bytes_engine_reading=round(31.37 * 2**30),
        memory_engine_source="vLLM start-up log on two RTX 5090s: 'the current vLLM instance can use "
                             "total_gpu_memory (31.37GiB)' (github.com/vllm-project/vllm issue #14452)",
    ),
    "b200": GPU(
        key="b200",
        name="B200 192GB",
        memory_bytes_marketed=192 * GB,
        memory_bytes_runtime=183_359 * MiB,
        memory_runtime_source="nvidia-smi: 183,359 MiB = 179 GiB, the '179 GB usable' often quoted for the B200 "
                              "(github.com/NVIDIA/TensorRT-LLM issue #10278, driver 580.95.05)",
        hbm_bytes_per_s=8 * TB,
        flops_per_s={"bf16": 2_250 * _T, "fp16": 2_250 * _T, "fp8": 4_500 * _T, "int8": 4_500 * _T,
                     "fp4": 9_000 * _T},
        interconnect_bytes_per_s=900 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_NV_B200}; NVLink 5: 1.8 TB/s per GPU both ways, 900 GB/s one way",
        interconnect="nvlink5",
    ),
    "mi300x": GPU(
        key="mi300x",
        name="MI300X 192GB",
        memory_bytes_marketed=192 * GB,
        memory_bytes_runtime=206_141_652_992,
        memory_runtime_source="rocm-smi --showmeminfo vram: 206,141,652,992 B = 196,592 MiB "
                              "(github.com/ROCm/legacy-rocm-build issue #4750)",
        hbm_bytes_per_s=5.3 * TB,
        flops_per_s={"bf16": 1_307 * _T, "fp16": 1_307 * _T, "fp8": 2_615 * _T, "int8": 2_615 * _T},
        interconnect_bytes_per_s=448 * GB,
        price_usd_per_hour=None,
        price_date=None,
        price_source=None,
        source=f"{_AMD_MI300X}; Infinity Fabric: 7 links, 896 GB/s per GPU both ways, 448 GB/s one way",
        interconnect="infinity-fabric-mi300x",
    ),
}
