"""Splitting a model across GPUs: the all-reduce tensor parallelism pays, and pipeline bubbles.

Tensor parallelism (TP) splits every weight matrix across the GPUs of a server;
each layer then ends its attention and its MLP with an all-reduce of the
activations (Shoeybi et al. 2019, "Megatron-LM", section 3). That traffic is
small per token but happens twice per layer per step, so it wants NVLink:
TP stays inside a server. Pipeline parallelism (PP) gives each GPU (or server)
a contiguous slice of layers and passes activations along; it needs little
bandwidth, but a stage idles while the pipeline fills and drains (the bubble),
unless enough micro-batches keep every stage busy.

>>> round(allreduce_time_s(8192 * 2, 4, 450e9, latency_s=0) * 1e6, 4)
0.0546
>>> round(pipeline_bubble_fraction(4, 1), 2), round(pipeline_bubble_fraction(4, 16), 3)
(0.75, 0.158)
"""

from __future__ import annotations

from calc.errors import check_positive, check_range

__all__ = [
    "ALLREDUCE_LATENCY_S",
    "ALLREDUCE_SMALL_MESSAGE_S",
    "ALLREDUCE_LATENCY_SOURCE",
    "allreduce_latency_s",
    "PCIE_RING_STEP_S", "PCIE_RING_STEP_SOURCE", "ALLREDUCE_ALGORITHMS", "allreduce_algorithm",
    "interconnect_allreduce_latency_s", "TWO_STAGE_ALLREDUCE_MIN_BYTES", "CUSTOM_ALLREDUCE_MAX_BYTES",
    "allreduce_bytes_on_wire",
    "allreduce_time_s",
    "pipeline_bubble_fraction",
    "pipeline_step_time_s",
    "NIC_BYTES_PER_S", "NIC_SOURCE", "INTER_SERVER_LATENCY_S", "INTER_SERVER_LATENCY_SOURCE",
    "chunked_prefill_s", "split_layouts",
]

#: Measured time of one small all-reduce inside an H100 NVLink server, by GPU count: vLLM's custom
#: all-reduce (the one it uses for decode-sized messages), 32,768 float32 values (128 KiB, the
#: activations of a decode step of 8 tokens of Llama 70B in bf16), 5,000 calls timed, no CUDA graph:
#: 0.0087 / 0.0092 / 0.0118 ms at TP 2 / 4 / 8. Source: sgl-project/sglang pull request #2904
#: ("optimize custom allreduce kernel", 2025-01-15), table "vllm", unit-test performance on H100
#: (the sizes are element counts: sgl-kernel/tests/test_trt_reduce.py). Role: assumption (sourced,
#: not fitted); the same table's smaller messages take about as long (8.5-10.1 us), so the fixed
#: latency dominates every decode step's all-reduce.
ALLREDUCE_SMALL_MESSAGE_S = {2: 8.7e-6, 4: 9.2e-6, 8: 11.8e-6}
ALLREDUCE_LATENCY_SOURCE = ("vLLM custom all-reduce on H100, 128 KiB: 8.7 / 9.2 / 11.8 us at TP 2 / 4 / 8 "
                            "(sgl-project/sglang pull request #2904, unit-test table 'vllm')")
#: The latency of the lesson's pure roofline (:func:`calc.roofline.step_coefficients` by default): a
#: round 10 us per all-reduce, the order of magnitude the measurements above confirm (8.7-11.8 us). The
#: lesson's pages teach the roofline with it and stay put; the simulator prices each engine with the
#: measured figure for its GPU count (:func:`allreduce_latency_s`, through :mod:`calc.engine_profiles`).
ALLREDUCE_LATENCY_S = 10e-6

MAX_GPUS = 100_000

#: Where vLLM's custom all-reduce switches from its one-stage to its two-stage kernel on fully NVLinked
#: GPUs, by GPU count (csrc/custom_all_reduce.cuh): one-stage below 512 KiB on up to 4 GPUs, 256 KiB on up
#: to 8 (also :data:`calc.engine_profiles.TWO_STAGE_ALLREDUCE_MIN_BYTES`).
TWO_STAGE_ALLREDUCE_MIN_BYTES = {4: 512 << 10, 8: 256 << 10}
#: The custom all-reduce's size limit (vLLM's CustomAllreduce max_size, 8 MiB): larger messages go to NCCL.
CUSTOM_ALLREDUCE_MAX_BYTES = 8 << 20


def allreduce_latency_s(gpus: int) -> float:
    """Fixed time of one all-reduce over ``gpus`` GPUs: :data:`ALLREDUCE_SMALL_MESSAGE_S`.

    A GPU count between the measured ones takes the next larger one's figure (a ring of 3 as one of 4),
    beyond 8 the 8-GPU one; one GPU needs no all-reduce. Source: :data:`ALLREDUCE_LATENCY_SOURCE`.

    >>> allreduce_latency_s(1), allreduce_latency_s(2), allreduce_latency_s(3), allreduce_latency_s(16)
    (0.0, 8.7e-06, 9.2e-06, 1.18e-05)
    """
    n = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    if n == 1:
        return 0.0
    for measured in sorted(ALLREDUCE_SMALL_MESSAGE_S):
        if n <= measured:
            return ALLREDUCE_SMALL_MESSAGE_S[measured]
    return ALLREDUCE_SMALL_MESSAGE_S[max(ALLREDUCE_SMALL_MESSAGE_S)]


#: One hop of NCCL's ring over PCIe: an 8-byte all-reduce takes 42.14 us on 8 GeForce RTX 4090s over PCIe
#: Gen4 (ring algorithm, out-of-place; NVIDIA/nccl issue #1530, "Ring all-reduce shows poor bandwidth
#: utilization on PCIe-connected GPUs", ``all_reduce_perf -g 8 -b 8 -e 128M -f 2``). Of that, the fixed
#: cost of launching and synchronising an all-reduce on 8 GPUs is taken as the NVLink one-shot figure
#: (11.8 us, :data:`ALLREDUCE_SMALL_MESSAGE_S`), the rest spread over the ring's 2 (n - 1) = 14 steps
#: (reduce-scatter then all-gather, each step a hop to the next GPU over PCIe). Role: assumption (sourced,
#: not fitted): a small all-reduce over PCIe costs the one-shot figure plus ``2 (n - 1)`` such hops.
PCIE_RING_STEP_S = (42.14e-6 - 11.8e-6) / 14
PCIE_RING_STEP_SOURCE = ("NCCL ring all-reduce of 8 bytes on 8 RTX 4090s over PCIe Gen4: 42.14 us (NVIDIA/nccl "
                         "issue #1530, all_reduce_perf -g 8), less the 11.8 us fixed cost measured on 8 NVLinked "
                         "H100s, over 14 ring steps: 2.17 us a hop")
#: How an all-reduce runs: ``one-shot`` (each GPU reads every peer's buffer and reduces: one round trip,
#: vLLM's custom all-reduce 1-stage kernel), ``two-stage`` (reduce-scatter then all-gather inside the custom
#: kernel) and ``ring`` (NCCL: 2 (n - 1) steps around the GPUs).
ALLREDUCE_ALGORITHMS = ("one-shot", "two-stage", "ring")


def allreduce_algorithm(message_bytes: float, gpus: int, interconnect: str) -> str:
    """Which all-reduce an engine runs for ``message_bytes`` on ``gpus`` GPUs joined by ``interconnect``.

    vLLM's custom all-reduce (also SGLang's) takes messages up to 8 MiB when the GPUs are two, or fully
    meshed (NVLink through NVSwitch); on a full mesh it runs one-shot below 512 KiB on up to 4 GPUs (256 KiB
    on up to 8) and two-stage above; two GPUs always one-shot. Everything else, and every PCIe set of more
    than two GPUs, goes to NCCL's ring. Source: vllm/distributed/device_communicators/custom_all_reduce.py
    (``should_custom_ar``; "not supported on more than two PCIe-only GPUs") and csrc/custom_all_reduce.cuh
    (the 1-stage/2-stage switch); the thresholds: :data:`TWO_STAGE_ALLREDUCE_MIN_BYTES`.

    >>> allreduce_algorithm(16_384, 4, "nvlink4"), allreduce_algorithm(16_384, 4, "pcie4-x16")
    ('one-shot', 'ring')
    >>> allreduce_algorithm(2 << 20, 8, "nvlink4"), allreduce_algorithm(2 << 20, 2, "pcie4-x16")
    ('two-stage', 'one-shot')
    """
    from calc.catalog.interconnect import INTERCONNECTS
    from calc.errors import check_choice

    check_choice("interconnect", interconnect, tuple(INTERCONNECTS))
    message = check_positive("message_bytes", message_bytes, allow_zero=True)
    n = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    link = INTERCONNECTS[interconnect]
    if message > CUSTOM_ALLREDUCE_MAX_BYTES or not (n == 2 or link.full_mesh):
        return "ring"
    if n == 2:
        return "one-shot"
    threshold = next((TWO_STAGE_ALLREDUCE_MIN_BYTES[k] for k in sorted(TWO_STAGE_ALLREDUCE_MIN_BYTES) if n <= k),
                     TWO_STAGE_ALLREDUCE_MIN_BYTES[max(TWO_STAGE_ALLREDUCE_MIN_BYTES)])
    return "one-shot" if message < threshold else "two-stage"


def interconnect_allreduce_latency_s(interconnect: str, gpus: int) -> float:
    """Fixed time of one small all-reduce over ``gpus`` GPUs on ``interconnect``, as an engine runs it.

    A full mesh (NVLink, Infinity Fabric) runs the custom one-shot kernel: the measured H100 figure
    (:func:`allreduce_latency_s`). PCIe runs NCCL's ring beyond two GPUs and the custom kernel's P2P reads on
    two; both pay the same fixed cost as the one-shot kernel plus a hop per ring step across the PCIe
    fabric: ``allreduce_latency_s(n) + 2 (n - 1)`` x :data:`PCIE_RING_STEP_S`.
    Source: :data:`ALLREDUCE_LATENCY_SOURCE`, :data:`PCIE_RING_STEP_SOURCE`.

    >>> [round(interconnect_allreduce_latency_s("pcie4-x16", n) * 1e6, 1) for n in (1, 2, 4, 8)]
    [0.0, 13.0, 22.2, 42.1]
    >>> interconnect_allreduce_latency_s("nvlink4", 4)
    9.2e-06
    """
    from calc.catalog.interconnect import INTERCONNECTS
    from calc.errors import check_choice

    check_choice("interconnect", interconnect, tuple(INTERCONNECTS))
    n = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    if n == 1:
        return 0.0
    if INTERCONNECTS[interconnect].full_mesh:
        return allreduce_latency_s(n)
    return allreduce_latency_s(n) + 2 * (n - 1) * PCIE_RING_STEP_S


def allreduce_bytes_on_wire(message_bytes: float, gpus: int) -> float:
    """Bytes each GPU sends in a ring all-reduce of ``message_bytes``: ``2 (n - 1) / n x message``.

    A ring reduce-scatter then all-gather moves ``(n - 1) / n`` of the message
    per GPU in each half. Source: Patarasuk and Yuan, "Bandwidth optimal
    all-reduce algorithms for clusters of workstations", JPDC 2009; NCCL
    performance notes (bus bandwidth = algorithm bandwidth x 2 (n-1)/n).

    >>> allreduce_bytes_on_wire(1000, 4)
    1500.0
    >>> allreduce_bytes_on_wire(1000, 1)
    0.0
    """
    message = check_positive("message_bytes", message_bytes, allow_zero=True)
    n = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    return 2.0 * (n - 1) / n * message


def allreduce_time_s(message_bytes: float, gpus: int, link_bytes_per_s: float, *, latency_s: float = ALLREDUCE_LATENCY_S) -> float:
    """Seconds for one all-reduce: a fixed latency plus the ring's bytes over the link bandwidth.

    ``latency + 2 (n - 1) / n x message / link bandwidth`` (one direction per GPU:
    450 GB/s of NVLink 4 on an H100). Zero on one GPU. Decode steps send tiny
    messages, so the latency term dominates; long prefill chunks are bandwidth
    terms. Source: the alpha-beta cost model of a ring all-reduce (Patarasuk and
    Yuan, JPDC 2009); :data:`ALLREDUCE_LATENCY_S`.

    >>> round(allreduce_time_s(8192 * 2, 4, 450e9) * 1e6, 2)
    10.05
    >>> allreduce_time_s(1e6, 1, 450e9)
    0.0
    """
    n = check_range("gpus", gpus, 1, MAX_GPUS, integer=True)
    bandwidth = check_positive("link_bytes_per_s", link_bytes_per_s)
    latency = check_range("latency_s", latency_s, 0.0, 1.0)
    if n == 1:
        return 0.0
    return latency + allreduce_bytes_on_wire(message_bytes, n) / bandwidth


def pipeline_bubble_fraction(stages: int, microbatches: int) -> float:
    """Share of a pipeline's time its stages sit idle: ``(p - 1) / (m + p - 1)``.

    With ``p`` stages and ``m`` micro-batches in flight, filling and draining the
    pipeline costs ``p - 1`` stage-times out of ``m + p - 1``. One micro-batch on
    four stages leaves each GPU idle 75% of the time; serving engines keep several
    batches in flight to shrink it. Source: Huang et al. 2019, "GPipe", section
    2.2; Narayanan et al. 2021, "Efficient Large-Scale Language Model Training on
    GPU Clusters Using Megatron-LM", section 2.2.

    >>> pipeline_bubble_fraction(1, 1)
    0.0
    >>> round(pipeline_bubble_fraction(2, 8), 3)
    0.111
    """
    p = check_range("stages", stages, 1, MAX_GPUS, integer=True)
    m = check_range("microbatches", microbatches, 1, 10**9, integer=True)
    return (p - 1) / (m + p - 1)


def pipeline_step_time_s(stage_time_s: float, stages: int, microbatches: int, *, hop_s: float = 0.0) -> float:
    """Wall time to push ``microbatches`` through ``stages`` stages of ``stage_time_s`` each.

    ``(m + p - 1) x (stage time + hop)``: the first micro-batch crosses every
    stage, then one finishes per stage-time. ``hop_s`` is the activation transfer
    between stages. Source: Huang et al. 2019 (GPipe schedule).

    >>> pipeline_step_time_s(0.010, 4, 4)
    0.07
    """
    t = check_positive("stage_time_s", stage_time_s)
    hop = check_range("hop_s", hop_s, 0.0, 10.0)
    p = check_range("stages", stages, 1, MAX_GPUS, integer=True)
    m = check_range("microbatches", microbatches, 1, 10**9, integer=True)
    return (m + p - 1) * (t + hop)
