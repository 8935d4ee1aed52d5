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

import dataclasses
import math

from calc.errors import check_positive, check_range
from calc.units import GB

__all__ = [
    "ALLREDUCE_LATENCY_S",
    "ALLREDUCE_SMALL_MESSAGE_S",
    "ALLREDUCE_LATENCY_SOURCE",
    "allreduce_latency_s",
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


# ------------------------------------------------------------------------------------- a model split across servers
#: Bandwidth between servers, per GPU, one direction: an NDR InfiniBand NIC (400 Gb/s) per GPU, as in a
#: DGX H100 (eight ConnectX-7, one per GPU).
NIC_BYTES_PER_S = 48 * GB
NIC_SOURCE = ("400 Gb/s NDR InfiniBand, one ConnectX-7 NIC per GPU (NVIDIA DGX H100 user guide, network modules); "
              "46-48 GB/s per NIC is what NCCL reaches (NCCL maintainer in NVIDIA/nccl-tests issue 290, 2025-03-03)")
#: Fixed time of one small collective between two servers (kernel, NIC and switch). An order of magnitude,
#: not a fit: about 19-20 us measured for 8-128 B all-reduces across two nodes (NVIDIA/nccl-tests issue 150,
#: A100 + HDR), and NCCL's own tuning model prints about 25 us for a 128 B all-reduce on an H100 cluster
#: (NVIDIA/nccl issue 1453). Used for every transfer between servers, pipeline hops included.
INTER_SERVER_LATENCY_S = 25e-6
INTER_SERVER_LATENCY_SOURCE = ("about 20 us measured across two nodes (NVIDIA/nccl-tests issue 150); about 25 us in "
                               "NCCL's tuning model for an H100 cluster (NVIDIA/nccl issue 1453)")


def chunked_prefill_s(coefficients, prompt_tokens: int, chunk_tokens: int) -> tuple[float, float]:
    """(seconds, seconds of all-reduce) to prefill a prompt chunk by chunk on an idle replica.

    Each chunk is :func:`calc.roofline.prefill_chunk` after the chunks before it;
    the all-reduce share is what tensor parallelism adds (zero at TP 1).

    >>> from calc import lesson
    >>> total_s, comm_s = chunked_prefill_s(lesson.coefficients(), 1024, 512)
    >>> round(total_s * 1000), 0 < comm_s < total_s
    (83, True)
    """
    from calc.roofline import prefill_chunk  # here: calc.roofline imports this module

    times, comms, done = [], [], 0
    while done < prompt_tokens:
        n = min(chunk_tokens, prompt_tokens - done)
        d = prefill_chunk(coefficients, chunk_tokens=n, context_before_tokens=done)
        times.append(d["time_s"])
        comms.append(d["comm_s"])
        done += n
    return math.fsum(times), math.fsum(comms)


def _stage_layers(model, stages: int) -> int:
    return -(-model.layers // stages)


def split_layouts(model_key: str = "llama-3.1-405b", *, weights: str = "bf16", servers: int = 2,
                  gpus_per_server: int = 8, batch: int = 64, prompt_tokens: int = 8192, chunk_tokens: int = 2048,
                  inter_server_bytes_per_s: float = NIC_BYTES_PER_S,
                  inter_server_latency_s: float = INTER_SERVER_LATENCY_S, gpu: str = "h100-sxm-80gb") -> dict:
    """The same GPUs split two ways: TP across every GPU, or TP inside each server and PP across servers.

    **TP across servers** (``tp = servers x gpus_per_server``): each step's
    all-reduces (two per layer, ``tokens x hidden x 2`` bytes each) run as a ring
    whose slowest links are the network: :func:`calc.parallel.allreduce_time_s`
    at ``inter_server_bytes_per_s`` and ``inter_server_latency_s``.

    **TP in a server, PP across** (``tp = gpus_per_server``, ``pp = servers``):
    all-reduces stay on NVLink; each stage holds ``ceil(layers / pp)`` layers (the
    embedding and LM head, on the first and last stage, are left out of the
    split). A decode token crosses every stage in turn,
    ``pp x (stage time + hop)`` (:func:`calc.parallel.pipeline_step_time_s` with one
    micro-batch), while ``pp`` micro-batches of ``batch / pp`` sequences keep every
    stage busy (vLLM runs one per stage). A prompt flows through as
    ``ceil(prompt / chunk)`` chunks, ``(m + pp - 1) x (stage + hop)``, idle a share
    ``(pp - 1) / (m + pp - 1)`` of the time (:func:`calc.parallel.pipeline_bubble_fraction`).

    Decoding sequences hold ``prompt_tokens`` of context. Returns both layouts'
    numbers; ``tp`` is None (with ``tp_error``) when the TP size is not possible.
    Sources: Megatron-LM (Shoeybi et al. 2019) for TP's all-reduces; GPipe
    (Huang et al. 2019) for the pipeline schedule; vLLM's distributed serving
    guide ("tensor parallel size = GPUs per node, pipeline parallel size =
    nodes"); :data:`NIC_SOURCE`, :data:`INTER_SERVER_LATENCY_SOURCE`.

    >>> r = split_layouts()
    >>> r["tp"]["tp"], r["pp"]["tp"], r["pp"]["pp"], round(r["pp"]["bubble"], 2)
    (16, 8, 2, 0.2)
    >>> r["pp"]["kv_tokens"] > 1.9 * r["tp"]["kv_tokens"]
    True
    """
    # Imported here: calc.roofline imports this module (its all-reduce), and these layouts need its step model.
    from calc.catalog import get_gpu, get_model
    from calc.errors import CalcError
    from calc.memory import allowed_tp, kv_bytes_per_token_per_gpu, kv_capacity, weights_bytes_per_gpu
    from calc.roofline import ACTIVATION_BYTES, decode_step, step_coefficients

    model = get_model(model_key)
    gpu = get_gpu(gpu)
    servers = check_range("servers", servers, 1, 16, integer=True)
    per_server = check_range("gpus_per_server", gpus_per_server, 1, 16, integer=True)
    if per_server not in allowed_tp(model, 64):
        raise CalcError(f"gpus_per_server must be a tensor-parallel size {model.name} allows: one of "
                        f"{', '.join(str(t) for t in allowed_tp(model, 16))}; got {per_server}", "gpus_per_server")
    batch = check_range("batch", batch, 1, 100_000, integer=True)
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 10_000_000, integer=True)
    chunk = check_range("chunk_tokens", chunk_tokens, 1, 10_000_000, integer=True)
    link = check_range("inter_server_bytes_per_s", inter_server_bytes_per_s, 1e6, 1e13)
    latency = check_range("inter_server_latency_s", inter_server_latency_s, 0.0, 0.01)
    gpus = servers * per_server
    total_weights = weights_bytes_per_gpu(model, 1, weights)
    weights_per_gpu = total_weights / gpus
    hop_bytes = model.hidden_size * ACTIVATION_BYTES  # per token crossing a stage boundary
    chunks = -(-prompt // chunk)
    out = {"model": model.name, "gpus": gpus, "weights_bytes_per_gpu": weights_per_gpu, "tp_error": None}

    # Memory: both layouts hold the same weights per GPU; the KV per token per GPU differs.
    try:
        base = kv_capacity(model, gpu, tp=per_server, weights=weights, weights_bytes=weights_per_gpu)
    except CalcError as error:
        raise CalcError(f"servers: {model.name} in {weights} does not fit on {servers} × {per_server} "
                        f"{gpu.name}: {error}", "servers") from None
    stage_layers = _stage_layers(model, servers)
    pp_token_bytes = kv_bytes_per_token_per_gpu(model, per_server) * stage_layers // model.layers

    # TP inside a server, PP across servers.
    coef = step_coefficients(model, gpu, tp=per_server, weights=weights)
    full = decode_step(coef, batch=-(-batch // servers), context_tokens=prompt)
    stage_s = full["time_s"] / servers
    hop_s = (latency + -(-batch // servers) * hop_bytes / link) if servers > 1 else 0.0
    itl_pp = pipeline_step_time_s(stage_s, servers, 1, hop_s=hop_s)
    prefill_full_s, prefill_comm_s = chunked_prefill_s(coef, prompt, chunk)
    chunk_stage_s = prefill_full_s / chunks / servers
    chunk_hop_s = (latency + min(chunk, prompt) * hop_bytes / link) if servers > 1 else 0.0
    ttft_pp = pipeline_step_time_s(chunk_stage_s, servers, chunks, hop_s=chunk_hop_s)
    out["pp"] = {
        "tp": per_server, "pp": servers, "stage_layers": stage_layers,
        "kv_bytes_per_token_per_gpu": pp_token_bytes, "kv_tokens": int(base.kv_cache_bytes // pp_token_bytes),
        "itl_s": itl_pp, "tokens_per_s": batch / itl_pp,
        "decode_parts_s": {"math and memory": full["time_s"] - full["comm_s"], "all-reduce in a server": full["comm_s"],
                           "all-reduce across servers": 0.0, "pipeline hops": servers * hop_s},
        "ttft_s": ttft_pp, "bubble": pipeline_bubble_fraction(servers, chunks),
        "prefill_parts_s": {
            "math and memory": chunks * chunk_stage_s * (1 - prefill_comm_s / prefill_full_s),
            "all-reduce in a server": chunks * chunk_stage_s * prefill_comm_s / prefill_full_s,
            "all-reduce across servers": 0.0,
            "pipeline fill and drain": (servers - 1) * chunk_stage_s,
            "pipeline hops": (chunks + servers - 1) * chunk_hop_s},
    }

    # TP across every GPU.
    if gpus not in allowed_tp(model, max(64, gpus)):
        out["tp"] = None
        out["tp_error"] = (f"TP {gpus} is not possible: it must divide the {model.attention_heads} attention heads "
                           f"(and fit the {model.kv_heads} KV heads)")
        return out
    coef_tp = step_coefficients(model, gpu, tp=gpus, weights=weights)
    if servers > 1:
        coef_tp = dataclasses.replace(coef_tp, interconnect_bytes_per_s=link, allreduce_latency_s=latency)
    d = decode_step(coef_tp, batch=batch, context_tokens=prompt)
    ttft_tp, ttft_comm = chunked_prefill_s(coef_tp, prompt, chunk)
    tp_token_bytes = kv_bytes_per_token_per_gpu(model, gpus)
    where = "all-reduce across servers" if servers > 1 else "all-reduce in a server"
    decode_parts = {"math and memory": d["time_s"] - d["comm_s"], "all-reduce in a server": 0.0,
                    "all-reduce across servers": 0.0, "pipeline hops": 0.0}
    decode_parts[where] = d["comm_s"]
    prefill_parts = {"math and memory": ttft_tp - ttft_comm, "all-reduce in a server": 0.0,
                     "all-reduce across servers": 0.0, "pipeline fill and drain": 0.0, "pipeline hops": 0.0}
    prefill_parts[where] = ttft_comm
    out["tp"] = {
        "tp": gpus, "pp": 1, "kv_bytes_per_token_per_gpu": tp_token_bytes,
        "kv_tokens": int(base.kv_cache_bytes // tp_token_bytes), "itl_s": d["time_s"],
        "tokens_per_s": batch / d["time_s"], "decode_parts_s": decode_parts, "ttft_s": ttft_tp, "bubble": 0.0,
        "prefill_parts_s": prefill_parts,
        "allreduce_s": allreduce_time_s(batch * hop_bytes, gpus, coef_tp.interconnect_bytes_per_s,
                                        latency_s=coef_tp.allreduce_latency_s),
        "allreduces_per_step": coef_tp.allreduces_per_step,
    }
    return out
