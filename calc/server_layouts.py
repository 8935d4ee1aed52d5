"""A model split across servers: tensor parallel over the network, or TP inside each server and PP across.

The numbers of the disaggregation page's "TP or PP" comparison and of its pool sizing: the links between
servers (a NIC per GPU, a fixed latency per small collective, each with its source), the chunked prefill of an
idle replica, and the two layouts of the same GPUs priced on the roofline (:mod:`calc.roofline`) with
:mod:`calc.parallel`'s all-reduce and pipeline formulas. Its own module because it builds on the roofline,
which itself imports :mod:`calc.parallel`.

>>> round(NIC_BYTES_PER_S / 1e9)
48
"""

from __future__ import annotations

import dataclasses
import math

from calc.catalog import get_gpu, get_model
from calc.errors import CalcError, check_range
from calc.memory import (
    allowed_tp, kv_bytes_per_request, kv_bytes_per_token_per_gpu, kv_capacity, weights_bytes_per_gpu,
)
from calc.parallel import allreduce_time_s, pipeline_bubble_fraction, pipeline_step_time_s
from calc.roofline import ACTIVATION_BYTES, decode_step, prefill_chunk, step_coefficients
from calc.units import GB

__all__ = ["NIC_BYTES_PER_S", "NIC_SOURCE", "INTER_SERVER_LATENCY_S", "INTER_SERVER_LATENCY_SOURCE",
           "chunked_prefill_s", "split_layouts", "kv_handoff", "pool_gpus"]

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
    times, comms, done = [], [], 0
    while done < prompt_tokens:
        n = min(chunk_tokens, prompt_tokens - done)
        d = prefill_chunk(coefficients, chunk_tokens=n, context_before_tokens=done)
        times.append(d["time_s"])
        comms.append(d["comm_s"])
        done += n
    return math.fsum(times), math.fsum(comms)


def kv_handoff(model_key: str, prompt_tokens: int, *, tp: int, link_bytes_per_s: float) -> dict:
    """The prompt's KV cache handed from a prefill replica to a decode replica, each of the ``tp`` GPUs over
    its own link: the bytes (window-capped, :func:`calc.memory.kv_bytes_per_request`) and the seconds.

    The running example's 1,024-token prompt on Llama 3.1 70B: 336 MB, 1.75 ms over four 48 GB/s NICs.

    >>> h = kv_handoff("llama-3.1-70b", 1024, tp=4, link_bytes_per_s=NIC_BYTES_PER_S)
    >>> h["bytes"], round(h["s"] * 1000, 2)
    (335544320, 1.75)
    """
    tp = check_range("tp", tp, 1, 1024, integer=True)
    link = check_range("link_bytes_per_s", link_bytes_per_s, 1e6, 1e13)
    kv_bytes = kv_bytes_per_request(get_model(model_key), prompt_tokens)
    return {"bytes": kv_bytes, "s": kv_bytes / (tp * link)}


def pool_gpus(replicas: int, tp: int) -> int:
    """GPUs a pool of ``replicas`` replicas of ``tp`` GPUs each holds.

    >>> pool_gpus(3, 4)
    12
    """
    return check_range("replicas", replicas, 0, 100_000, integer=True) * check_range("tp", tp, 1, 1024, integer=True)


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
        "tp": per_server, "pp": servers, "stage_layers": stage_layers, "chunks": chunks,
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
        "allreduce_message_bytes": batch * hop_bytes,
        "allreduce_s": allreduce_time_s(batch * hop_bytes, gpus, coef_tp.interconnect_bytes_per_s,
                                        latency_s=coef_tp.allreduce_latency_s),
        "allreduces_per_step": coef_tp.allreduces_per_step,
        # The fixed latency alone that a decode token pays for its all-reduces (none run in parallel).
        "allreduce_latency_per_token_s": coef_tp.allreduces_per_step * coef_tp.allreduce_latency_s,
    }
    return out
