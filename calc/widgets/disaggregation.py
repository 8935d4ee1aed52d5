"""Widgets and facts of step 18, "Disaggregation and multi-node" (docs/lesson/18-disaggregation.md).

Two ideas, each a widget:

* :func:`pool_sizing`: prefill and decode have different bottlenecks (prefill
  is compute-bound, decode memory-bound), so a fleet can run them in separate
  pools and size each for its own work: the prefill pool for the prompt tokens
  arriving per second, the decode pool for the answer tokens at a latency
  target. A replica that does both stalls every decoding sequence whenever a
  prefill chunk lands in its step.
* :func:`tp_or_pp`: a model too big for one server is split across servers.
  Tensor parallelism (TP) all-reduces twice per layer on every step; pipeline
  parallelism (PP) sends one activation hop per stage and leaves stages idle
  while the pipeline fills. Inside a server NVLink makes TP cheap; between
  servers the network makes PP the better split.

Every number comes from :mod:`calc.roofline` (step times), :mod:`calc.parallel`
(all-reduce, bubble, pipeline time), :mod:`calc.memory` (KV capacity) and
:mod:`calc.cost` (the largest batch that meets a latency target).

>>> view = pool_sizing()
>>> view["outputs"]["prefill_replicas"]["value"], view["outputs"]["decode_replicas"]["value"]
(2, 1)
>>> tp_or_pp()["outputs"]["itl_tp_s"]["text"], tp_or_pp()["outputs"]["itl_pp_s"]["text"]
('60.1 ms', '49.9 ms')
"""

from __future__ import annotations

import functools
import math
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.cost import sustained_at_latency
from calc.errors import CalcError
from calc.memory import kv_bytes_per_token, weights_bytes_per_gpu
from calc.parallel import allreduce_time_s
from calc.server_layouts import (  # split_layouts and its link: the numbers of tp_or_pp; chunked_prefill_s: of pool_sizing
    INTER_SERVER_LATENCY_S, INTER_SERVER_LATENCY_SOURCE, NIC_BYTES_PER_S, NIC_SOURCE, chunked_prefill_s, kv_handoff,
    pool_gpus, split_layouts,
)
from calc.roofline import (
    ACTIVATION_BYTES, decode_step, mixed_step_s, prefill_chunk, ridge_point_flops_per_byte,
)
from calc.units import GB, format_bytes, format_number, from_bytes, s_to_ms, s_to_us
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.framework import (
    Choice, FloatRange, IntRange, fact, fact_from, facts_of, output, table, view, widget,
)

__all__ = [
    "MODEL", "GPU", "TP", "MAX_NUM_SEQS", "NIC_BYTES_PER_S", "NIC_SOURCE", "INTER_SERVER_LATENCY_S",
    "INTER_SERVER_LATENCY_SOURCE", "DISTSERVE", "pool_sizing",
    "split_layouts", "tp_or_pp", "facts",
]

# The running example (calc.lesson): Llama 3.1 70B in bf16, TP 4, on H100 SXM 80GB.
MODEL, GPU, TP = "llama-3.1-70b", "h100-sxm-80gb", 4
MAX_NUM_SEQS = 256  # vLLM's default cap on running sequences (engine arguments)

#: A published result for disaggregated serving (not reproduced here): DistServe (Zhong et al., OSDI 2024)
#: serves up to 7.4x more requests, or meets 12.6x tighter latency targets, than co-located systems on its
#: workloads (OPT-13B to 175B; chat, code, summarisation).
DISTSERVE = {"more_requests": 7.4, "tighter_slo": 12.6,
             "source": "Zhong et al., DistServe, OSDI 2024 (arXiv 2401.09670), abstract"}

#: A "what if" for the page: a fabric between servers nearly as fast as NVLink (a reader's input, not a product).
FABRIC_BYTES_PER_S, FABRIC_LATENCY_S = 400 * GB, 5e-6
CHUNK_POINTS = (0, 256, 512, 1024, 2048, 4096, 8192, 16384)


def _coefficients():
    return lesson.coefficients()


# --------------------------------------------------------------------------------------- prefill and decode pools
def _ms(seconds: float) -> str:
    return f"{format_number(s_to_ms(seconds))} ms"


def _replicas(n: int) -> str:
    return f"{n} replica" + ("" if n == 1 else "s")


@widget
def pool_sizing(
    rate_per_s: Annotated[float, FloatRange(0.1, 500, 0.1, "requests/s", label="Requests per second")] = 10.0,
    prompt_tokens: Annotated[int, IntRange(1, 100_000, 64, "tokens", label="Prompt")] = lesson.PROMPT_TOKENS,
    output_tokens: Annotated[int, IntRange(1, 16_384, 16, "tokens", label="Answer")] = lesson.ANSWER_TOKENS,
    itl_target_ms: Annotated[float, FloatRange(5, 1000, 1, "ms", label="Inter-token latency target")] = 50.0,
    busy_max: Annotated[float, FloatRange(0.1, 1.0, 0.05, label="Busiest share allowed per pool",
                                          help="headroom for bursts, the same for every pool")] = 0.7,
    chunk_tokens: Annotated[int, IntRange(256, 65_536, 256, "tokens", label="Prefill chunk per step",
                                          help="max_num_batched_tokens")] = 8192,
    link_gb_per_s: Annotated[float, FloatRange(1, 1000, 1, "GB/s", label="Network between pools, per GPU")] = 48.0,
):
    """Prefill and decode pools sized separately for the running example, against one pool doing both."""
    rate = rate_per_s
    itl_target = itl_target_ms / 1000
    coef = _coefficients()
    model = get_model(MODEL)
    cap = lesson.kv_capacity()  # step 1's sizing (the lesson's count in bf16)
    per_request = prompt_tokens + output_tokens
    fit = cap.kv_cache_tokens // per_request
    if fit < 1:
        raise CalcError(f"prompt_tokens + output_tokens must fit the replica's {cap.kv_cache_tokens:,} KV tokens; "
                        f"got {per_request:,}", "prompt_tokens")
    max_batch = min(MAX_NUM_SEQS, fit)
    context = prompt_tokens + output_tokens // 2  # a decoding sequence is on average half-way through its answer

    # Prefill pool: one prompt after another, compute-bound.
    prefill_s, _ = chunked_prefill_s(coef, prompt_tokens, min(chunk_tokens, prompt_tokens))
    prefill_replicas = max(1, math.ceil(rate * prefill_s / busy_max))
    prefill_busy_now = rate * prefill_s / prefill_replicas
    # Decode pool: the largest batch that meets the ITL target, memory-bound.
    decode = sustained_at_latency(coef, context_tokens=context, itl_target_s=itl_target, max_batch=max_batch)
    if decode["batch"] == 0:
        raise CalcError(f"itl_target_ms must be at least {format_number(decode['itl_s'] * 1000)} ms, one sequence's "
                        f"decode step on this replica; got {format_number(itl_target_ms)}", "itl_target_ms")
    limited = {"latency": "the ITL target", "max_batch": "KV room" if fit < MAX_NUM_SEQS else "max_num_seqs"}
    decode_replicas = max(1, math.ceil(rate * output_tokens / (decode["tokens_per_s"] * busy_max)))
    # One pool doing both.
    both = sustained_at_latency(coef, context_tokens=context, itl_target_s=itl_target, max_batch=max_batch,
                                prompt_tokens=prompt_tokens, answer_tokens=output_tokens)
    both = both if both["batch"] else None  # even one sequence misses the target on average
    both_replicas = (None if both is None else
                     max(1, math.ceil(rate * output_tokens / (both["tokens_per_s"] * busy_max))))
    stall_batch = both["batch"] if both else decode["batch"]
    # When prompts pile up, the scheduler fills a step's whole token budget with prefill.
    stall = mixed_step_s(coef, batch=stall_batch, context_tokens=context, chunk_tokens=chunk_tokens)
    # The prompt's KV moves from the prefill replica to a decode replica, each GPU over its own link.
    kv_bytes = prompt_tokens * kv_bytes_per_token(model)
    transfer_s = kv_bytes / (TP * link_gb_per_s * GB)
    prefill_d = prefill_chunk(coef, chunk_tokens=min(chunk_tokens, prompt_tokens))
    decode_d = decode_step(coef, batch=decode["batch"], context_tokens=context)
    ridge = ridge_point_flops_per_byte(GPU, coef.compute_dtype)

    gpus_split = TP * (prefill_replicas + decode_replicas)
    gpus_both = None if both_replicas is None else TP * both_replicas
    figure = bar_chart(
        "GPUs for the same traffic", ["one pool doing both", "prefill pool + decode pool"], "GPUs",
        {"prefill and decode": [gpus_both or 0, 0], "prefill": [0, TP * prefill_replicas],
         "decode": [0, TP * decode_replicas]},
        summary=(f"One pool: {'cannot meet the target' if gpus_both is None else f'{gpus_both} GPUs'}; "
                 f"separate pools: {TP * prefill_replicas} GPUs for prefill and {TP * decode_replicas} for decode."),
    )
    batch_for_chart = stall_batch
    series = {
        f"a step decoding {batch_for_chart} sequences": (
            list(CHUNK_POINTS),
            [mixed_step_s(coef, batch=batch_for_chart, context_tokens=context, chunk_tokens=c) * 1000
             for c in CHUNK_POINTS]),
        "ITL target": (list(CHUNK_POINTS), [itl_target_ms] * len(CHUNK_POINTS)),
    }
    stall_figure = line_chart(
        "Every decoding sequence waits for the prefill in its step", "prefill tokens in the step",
        "step time = ITL (ms)", series, markers=True,
        summary=(f"A step decoding {batch_for_chart} sequences takes {_ms(series[next(iter(series))][1][0] / 1000)} "
                 f"alone and {_ms(stall)} with {chunk_tokens:,} prefill tokens in it."),
    )
    both_text = ("cannot meet the target on average" if both is None else
                 f"{_replicas(both_replicas)} (batch {both['batch']}, {_ms(both['itl_s'])} per step on average)")
    return view(
        outputs=[
            output("prefill_s", "Prefill of one prompt", prefill_s, "s", text=_ms(prefill_s)),
            output("prefill_replicas", "Prefill pool", prefill_replicas, "replicas",
                   text=f"{_replicas(prefill_replicas)}, each busy {prefill_busy_now * 100:.0f}%"),
            output("decode_batch", "Decode batch at the target", decode["batch"], "sequences",
                   text=f"{decode['batch']} sequences, {_ms(decode['itl_s'])} per token "
                        f"(limited by {limited[decode['limited_by']]})"),
            output("decode_replicas", "Decode pool", decode_replicas, "replicas",
                   text=f"{_replicas(decode_replicas)} ({format_number(round(decode['tokens_per_s']))} tokens/s each)"),
            output("gpus_split", "GPUs, separate pools", gpus_split, "GPUs"),
            output("colocated_replicas", "One pool doing both", both_replicas or 0, "replicas", text=both_text),
            output("stall_s", "One pool: ITL of a step full of prefill", stall, "s",
                   text=f"{_ms(stall)} for all {stall_batch} sequences in the batch"),
            output("kv_transfer", "KV handed from prefill to decode", kv_bytes, "B",
                   text=f"{format_bytes(kv_bytes)} per request, {_ms(transfer_s)} over {TP} × "
                        f"{format_number(link_gb_per_s)} GB/s"),
            output("kv_network", "Network between the pools", rate * kv_bytes, "B/s",
                   text=f"{format_bytes(rate * kv_bytes)}/s"),
            output("intensity", "Arithmetic intensity (FLOP per byte)",
                   prefill_d["intensity_flops_per_byte"], "FLOP/B",
                   text=f"prefill {format_number(round(prefill_d['intensity_flops_per_byte']))}, decode "
                        f"{format_number(decode_d['intensity_flops_per_byte'])}; ridge point {format_number(round(ridge))}"),
        ],
        figures={"gpus": figure, "stall": stall_figure},
    )


# --------------------------------------------------------------------------------------- TP or PP across servers
PART_COLOURS = {"math and memory": PALETTE[0], "all-reduce in a server": PALETTE[1],
                "all-reduce across servers": PALETTE[5], "pipeline fill and drain": PALETTE[3],
                "pipeline hops": PALETTE[2]}
#: The models too big for one server that the comparison offers (names from the catalog).
MODEL_CHOICES = tuple((key, get_model(key).name) for key in ("llama-3.1-405b", "llama-3.1-70b", "qwen2.5-72b"))


def _name(layout: dict) -> str:
    return f"TP {layout['tp']}" if layout["pp"] == 1 else f"TP {layout['tp']} × PP {layout['pp']}"


@widget
def tp_or_pp(
    model: Annotated[str, Choice(MODEL_CHOICES, label="Model")] = "llama-3.1-405b",
    weights: Annotated[str, Choice(("bf16", "fp8"), label="Weight precision")] = "bf16",
    servers: Annotated[int, IntRange(1, 4, label="Servers")] = 2,
    gpus_per_server: Annotated[int, IntRange(1, 8, label="H100s per server")] = 8,
    batch: Annotated[int, IntRange(1, 1024, label="Sequences decoding")] = 64,
    prompt_tokens: Annotated[int, IntRange(256, 131_072, 256, "tokens", label="Prompt (context)")] = 8192,
    chunk_tokens: Annotated[int, IntRange(256, 32_768, 256, "tokens", label="Prefill chunk")] = 2048,
    link_gb_per_s: Annotated[float, FloatRange(1, 900, 1, "GB/s", label="Between servers, per GPU")] = 48.0,
    latency_us: Annotated[float, FloatRange(0, 1000, 1, "µs", label="Between servers, per transfer",
                                            help="fixed time of one collective or hop (an assumption)")] = 25.0,
):
    """A model split across servers two ways: TP across all GPUs against TP inside a server and PP across."""
    r = split_layouts(model, weights=weights, servers=servers, gpus_per_server=gpus_per_server, batch=batch,
                      prompt_tokens=prompt_tokens, chunk_tokens=chunk_tokens,
                      inter_server_bytes_per_s=link_gb_per_s * GB, inter_server_latency_s=latency_us * 1e-6)
    pp, tp = r["pp"], r["tp"]
    if servers == 1:  # one server: both layouts are plain TP inside it
        layouts = [(f"{_name(pp)} in one server", pp)]
    else:
        layouts = [(f"{_name(tp)} across servers", tp)] if tp else []
        layouts.append((f"{_name(pp)}: pipeline across servers", pp))
    names = [name for name, _ in layouts]
    short = [_name(layout) for _, layout in layouts]  # bar labels short enough for a phone

    def row(label, fn):
        return [label] + [fn(layout) for _, layout in layouts]

    rows = [
        row("KV cache per GPU per token", lambda l: f"{l['kv_bytes_per_token_per_gpu']:,} B"),
        row("KV cache (tokens)", lambda l: f"{l['kv_tokens']:,}"),
        row(f"Time per output token ({batch} sequences)", lambda l: _ms(l["itl_s"])),
        row("Decode tokens/s", lambda l: format_number(round(l["tokens_per_s"]))),
        row(f"Prefill of {prompt_tokens:,} tokens", lambda l: _ms(l["ttft_s"])),
        row("Pipeline idle share in that prefill", lambda l: f"{l['bubble'] * 100:.0f}%"),
    ]
    decode_keys = ("math and memory", "all-reduce in a server", "all-reduce across servers", "pipeline hops")
    prefill_keys = ("math and memory", "all-reduce in a server", "all-reduce across servers",
                    "pipeline fill and drain", "pipeline hops")
    decode_fig = bar_chart(f"One output token, {batch} sequences decoding", short, "ms",
                           {k: [l["decode_parts_s"][k] * 1000 for _, l in layouts] for k in decode_keys},
                           horizontal=True,
                           summary="; ".join(f"{n}: {_ms(l['itl_s'])}" for n, l in layouts) + ".")
    prefill_fig = bar_chart(f"Prefill of one {prompt_tokens:,}-token prompt", short, "ms",
                            {k: [l["prefill_parts_s"][k] * 1000 for _, l in layouts] for k in prefill_keys},
                            horizontal=True,
                            summary="; ".join(f"{n}: {_ms(l['ttft_s'])}" for n, l in layouts) + ".")
    for fig in (decode_fig, prefill_fig):
        for trace in fig["data"]:  # the same part keeps its colour in both charts
            trace["marker"]["color"] = PART_COLOURS[trace["name"]]
        fig["layout"]["title"]["text"] += " (ms)"
        fig["layout"]["xaxis"] = {"automargin": True, "rangemode": "tozero"}
        fig["layout"]["height"] = 320
        fig["layout"]["legend"] = {"orientation": "h", "y": -0.2, "yanchor": "top", "x": 0}
        fig["layout"]["margin"] = {"l": 20, "r": 20, "t": 50, "b": 40}

    na = "not possible"
    outputs = [
        output("weights_per_gpu", "Weights per GPU (both layouts)", r["weights_bytes_per_gpu"], "B",
               text=format_bytes(r["weights_bytes_per_gpu"])),
        output("itl_tp_s", "Time per output token, TP across all", tp["itl_s"] if tp else 0, "s",
               text=_ms(tp["itl_s"]) if tp else na),
        output("itl_pp_s", "Time per output token, TP × PP", pp["itl_s"], "s", text=_ms(pp["itl_s"])),
        output("ttft_tp_s", "Prefill, TP across all", tp["ttft_s"] if tp else 0, "s",
               text=_ms(tp["ttft_s"]) if tp else na),
        output("ttft_pp_s", "Prefill, TP × PP", pp["ttft_s"], "s", text=_ms(pp["ttft_s"])),
        output("kv_tp", "KV tokens, TP across all", tp["kv_tokens"] if tp else 0, "tokens",
               text=f"{tp['kv_tokens']:,}" if tp else na),
        output("kv_pp", "KV tokens, TP × PP", pp["kv_tokens"], "tokens", text=f"{pp['kv_tokens']:,}"),
    ]
    if r["tp_error"]:
        note = r["tp_error"] + "; the pipeline splits the layers instead"
    elif servers == 1:
        note = "one server: tensor parallelism over NVLink, nothing crosses the network"
    else:
        note = f"both possible: TP {gpus_per_server * servers} across servers, or TP {gpus_per_server} × PP {servers}"
    outputs.insert(1, output("note", "Layouts", note))  # two to a row: each layout's number sits beside the other's
    return view(outputs=outputs, figures={"decode": decode_fig, "prefill": prefill_fig},
                tables={"layouts": table(["", *names], rows)})


# --------------------------------------------------------------------------------------- facts
#
# Each fact is computed alone when the page names it; the layouts and the sizing they share are cached.

#: "What if the network were twice as fast?": the page's second look at TP across servers.
FASTER_NIC_BYTES_PER_S = 2 * NIC_BYTES_PER_S


@functools.cache
def _sizing() -> dict:
    return pool_sizing()["outputs"]


@functools.cache
def _decode_1() -> dict:
    return decode_step(_coefficients(), batch=1, context_tokens=lesson.DECODE_CONTEXT_TOKENS)


@functools.cache
def _prefill(chunk_tokens: int) -> dict:
    return prefill_chunk(_coefficients(), chunk_tokens=chunk_tokens)


@functools.cache
def _split() -> dict:
    return split_layouts()


@functools.cache
def _faster() -> dict:
    return split_layouts(inter_server_bytes_per_s=FASTER_NIC_BYTES_PER_S)["tp"]


@functools.cache
def _fabric() -> dict:
    return split_layouts(inter_server_bytes_per_s=FABRIC_BYTES_PER_S, inter_server_latency_s=FABRIC_LATENCY_S)["tp"]


@functools.cache
def _handoff() -> dict:
    return kv_handoff(MODEL, lesson.PROMPT_TOKENS, tp=TP, link_bytes_per_s=NIC_BYTES_PER_S)


def _big():
    return get_model("llama-3.1-405b")


def _gb(bytes_per_s: float) -> str:
    return format_number(from_bytes(bytes_per_s, "GB"))


def _us(seconds: float) -> str:
    return format_number(s_to_us(seconds))


@fact
def prefill_intensity() -> str:
    """>>> prefill_intensity(), ridge(), allreduces_405b(), stall_8192_ms()
    ('1,029', '295', '252', '681')
    """
    return format_number(round(_prefill(1024)["intensity_flops_per_byte"]))


@fact
def ridge() -> str:
    return format_number(round(ridge_point_flops_per_byte(GPU, "bf16")))


@fact
def allreduces_405b() -> str:
    return str(_split()["tp"]["allreduces_per_step"])


@fact
def stall_8192_ms() -> str:
    return format_number(round(s_to_ms(_prefill(8192)["time_s"])))


_FACTS = {
    "decode_intensity": lambda: format_number(_decode_1()["intensity_flops_per_byte"]),
    "prefill_1024_ms": lambda: format_number(round(s_to_ms(_prefill(1024)["time_s"]))),
    "decode_1_ms": lambda: format_number(s_to_ms(_decode_1()["time_s"])),
    "sizing_prefill": lambda: _sizing()["prefill_replicas"]["text"],
    "sizing_decode": lambda: _sizing()["decode_replicas"]["text"],
    "sizing_decode_batch": lambda: _sizing()["decode_batch"]["text"],
    "sizing_both": lambda: _sizing()["colocated_replicas"]["text"],
    "sizing_stall": lambda: _sizing()["stall_s"]["text"],
    "sizing_gpus_split": lambda: str(_sizing()["gpus_split"]["value"]),
    "sizing_gpus_both": lambda: str(pool_gpus(_sizing()["colocated_replicas"]["value"], TP)),
    "kv_request": lambda: format_bytes(_handoff()["bytes"]),
    "kv_request_ms": lambda: format_number(s_to_ms(_handoff()["s"])),
    "nic_gb": lambda: _gb(NIC_BYTES_PER_S),
    "nvlink_gb": lambda: _gb(get_gpu(GPU).interconnect_bytes_per_s),
    "latency_us": lambda: _us(INTER_SERVER_LATENCY_S),
    "distserve_requests": lambda: f"{DISTSERVE['more_requests']:g}",
    "distserve_slo": lambda: f"{DISTSERVE['tighter_slo']:g}",
    "weights_405b": lambda: format_bytes(weights_bytes_per_gpu(_big(), 1)),
    "weights_405b_16": lambda: format_bytes(_split()["weights_bytes_per_gpu"]),
    "allreduce_msg_64": lambda: format_bytes(_split()["tp"]["allreduce_message_bytes"]),
    "allreduce_ib_us": lambda: _us(_split()["tp"]["allreduce_s"]),
    # The same message inside one server, over NVLink, at the default small-message latency.
    "allreduce_nvlink_us": lambda: _us(allreduce_time_s(_split()["tp"]["allreduce_message_bytes"], _split()["pp"]["tp"],
                                                        get_gpu(GPU).interconnect_bytes_per_s)),
    "tp16_itl": lambda: _ms(_split()["tp"]["itl_s"]),
    "pp2_itl": lambda: _ms(_split()["pp"]["itl_s"]),
    "tp16_comm": lambda: _ms(_split()["tp"]["decode_parts_s"]["all-reduce across servers"]),
    "tp16_itl_2x": lambda: _ms(_faster()["itl_s"]),
    "fabric_gb": lambda: _gb(FABRIC_BYTES_PER_S),
    "fabric_us": lambda: _us(FABRIC_LATENCY_S),
    "fabric_tp_itl": lambda: _ms(_fabric()["itl_s"]),
    "fabric_tp_ttft": lambda: _ms(_fabric()["ttft_s"]),
    "tp16_ttft_2x": lambda: _ms(_faster()["ttft_s"]),
    "latency_per_token": lambda: _ms(_split()["tp"]["allreduce_latency_per_token_s"]),
    "nic_gb_2x": lambda: _gb(FASTER_NIC_BYTES_PER_S),
    "tp16_ttft": lambda: _ms(_split()["tp"]["ttft_s"]),
    "pp2_ttft": lambda: _ms(_split()["pp"]["ttft_s"]),
    "tp16_kv": lambda: f"{_split()['tp']['kv_tokens']:,}",
    "pp2_kv": lambda: f"{_split()['pp']['kv_tokens']:,}",
    "pp2_bubble": lambda: f"{_split()['pp']['bubble']:.0%}",
    "pp2_chunks": lambda: str(_split()["pp"]["chunks"]),
    "tp16_tokens_per_s": lambda: format_number(round(_split()["tp"]["tokens_per_s"])),
    "pp2_tokens_per_s": lambda: format_number(round(_split()["pp"]["tokens_per_s"])),
}
for _fact_name, _fact_text in _FACTS.items():
    fact_from(_fact_name, _fact_text)

facts = facts_of(__name__)
