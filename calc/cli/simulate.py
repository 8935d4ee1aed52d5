"""``python -m calc simulate``: run the replica simulator on a scenario and print what a dashboard would show.

The scenario is the lesson's replica by default (Llama 3.1 70B, bf16, four
H100s, Poisson traffic of 1,024-token prompts and 256-token answers); a JSON
file (``--scenario FILE``, schema in :mod:`calc.sim.scenario`) replaces it,
and any flag given on the command line overrides both.

>>> from calc.cli import main
>>> main(["simulate", "--requests", "20", "--rate", "inf", "--json"])  # doctest: +ELLIPSIS
{
...
  "requests_completed": 20,
...
0
"""

from __future__ import annotations

import argparse
import math

from calc.cli.table import format_table
from calc.errors import CalcError
from calc.sim.kv_blocks import ALLOCATIONS
from calc.sim.run import simulate
from calc.sim.scenario import BATCHING, SPECULATION_PRESETS, Scenario, load_scenario
from calc.sim.workload import ARRIVALS, LENGTH_KINDS
from calc.units import format_number

HELP = "simulate one serving replica (vLLM-like scheduler, paged KV, roofline step times): latency, throughput, cost"

# Flag -> (scenario key, or ("workload", key)).
_TOP = ("model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "block_size", "max_model_len",
        "max_num_seqs", "max_num_batched_tokens", "allocation", "batching", "static_batch_size", "seed",
        "gpu_price_usd_per_hour", "sample_interval_s")
_WORKLOAD = ("arrival", "requests", "duration_s", "burstiness")
_CLASS = ("lengths", "prompt_tokens", "output_tokens", "prefix_tokens", "prefix_variants")


def _rate(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"rate must be requests per second or inf; got {text!r}") from None
    if math.isnan(value) or value <= 0:
        raise argparse.ArgumentTypeError(f"rate must be above 0 (or inf for all at once); got {text!r}")
    return value


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``simulate`` (all default to the scenario's values).

    >>> p = argparse.ArgumentParser(); add_arguments(p); p.parse_args(["--rate", "inf"]).rate
    inf
    """
    a = parser.add_argument
    a("--scenario", metavar="FILE", help="a scenario JSON file (schema: calc.sim.scenario); flags override it")
    a("--preset", metavar="NAME", help="a lesson step's scenario (calc.sim.presets), e.g. step19-incident-p99; "
                                       "flags override it; 'list' lists them")
    a("--model", help="catalog key or config.json path (default llama-3.1-70b)")
    a("--gpu", help="catalog key (default h100-sxm-80gb)")
    a("--tp", type=int, help="GPUs per replica, tensor parallel (default 4)")
    a("--weights", help="weight precision: bf16, fp16, fp8, int8, int4, nf4 (default bf16)")
    a("--kv-dtype", help="KV cache precision: bf16, fp16, fp8 (default bf16)")
    a("--gpu-memory-utilization", type=float, help="vLLM's share of each GPU (default 0.9)")
    a("--prompt-tokens", type=int, help="prompt tokens per request (default 1024; the mean for --lengths lognormal)")
    a("--output-tokens", type=int, help="answer tokens per request (default 256)")
    a("--lengths", choices=LENGTH_KINDS, help="fixed (default), chat (ShareGPT-mean lognormal) or lognormal")
    a("--prefix-tokens", type=int, help="shared system-prompt tokens before every prompt (default 0)")
    a("--prefix-variants", type=int, help="distinct system prompts (default 1)")
    a("--requests", type=int, help="requests to send (default 1000)")
    a("--rate", type=_rate, help="arrival rate in requests/s, or inf for all at once (default 5)")
    a("--arrival", choices=ARRIVALS, help="poisson (default), bursty or all-at-once")
    a("--burstiness", type=float, help="squared CV of bursty gaps (default 4)")
    a("--duration-s", type=float, help="stop arrivals after this many simulated seconds")
    a("--block-size", type=int, help="tokens per KV block (default 16)")
    a("--max-model-len", type=int, help="prompt + answer limit (default 8192)")
    a("--max-num-seqs", type=int, help="cap on running requests (default 256)")
    a("--max-num-batched-tokens", type=int, help="token budget per step (default 8192)")
    a("--no-chunked-prefill", action="store_true", help="whole prompts in prefill-only steps (vLLM v0 policy)")
    a("--allocation", choices=ALLOCATIONS, help="paged (default) or contiguous (reserve max-model-len)")
    a("--prefix-caching", action="store_true", help="reuse KV blocks of shared system prompts")
    a("--speculation", choices=tuple(SPECULATION_PRESETS), help="speculative decoding with a preset drafter")
    a("--batching", choices=BATCHING, help="continuous (default) or static (padded fixed batches)")
    a("--static-batch-size", type=int, help="batch size for static batching (default 8)")
    a("--gpu-price-usd-per-hour", type=float, help="price per GPU-hour (default: the catalog's dated price)")
    a("--sample-interval-s", type=float, help="time-series spacing in simulated seconds (default 1)")
    a("--seed", type=int, help="seed of every random draw (default 0)")
    a("--series", action="store_true", help="with --json, include the time series")


def scenario_from_args(args) -> Scenario:
    """The scenario: the file (or defaults), then every flag given on top.

    >>> ns = argparse.Namespace(**{k: None for k in _TOP + _WORKLOAD + _CLASS}, scenario=None,
    ...     rate=float("inf"), no_chunked_prefill=False, prefix_caching=False, speculation=None)
    >>> ns.requests = 7
    >>> s = scenario_from_args(ns); s.workload.arrival, s.workload.requests
    ('all-at-once', 7)
    """
    base = load_scenario(args.scenario) if getattr(args, "scenario", None) else Scenario()
    data = base.to_dict()
    for key in _TOP:
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    if getattr(args, "no_chunked_prefill", False):
        data["chunked_prefill"] = False
    if getattr(args, "prefix_caching", False):
        data["prefix_caching"] = True
    if getattr(args, "speculation", None):
        data["speculation"] = args.speculation
    wl = data["workload"]
    for key in _WORKLOAD:
        value = getattr(args, key, None)
        if value is not None:
            wl[key] = value
    rate = getattr(args, "rate", None)
    if rate is not None:
        if math.isinf(rate):
            wl["arrival"] = "all-at-once"
        else:
            wl["rate_per_s"] = rate
            if getattr(args, "arrival", None) is None and wl["arrival"] == "all-at-once":
                wl["arrival"] = "poisson"
    given = {key: getattr(args, key) for key in _CLASS if getattr(args, key, None) is not None}
    if given:
        if len(wl["classes"]) != 1:
            raise CalcError(f"--{next(iter(given)).replace('_', '-')} applies to a single request class; the "
                            f"scenario has {len(wl['classes'])}: edit the file instead", next(iter(given)))
        wl["classes"][0].update(given)
    return Scenario.from_dict(data)


def run(args) -> dict:
    """Simulate and return the summary (plus the time series with ``--series``).

    >>> ns = argparse.Namespace(scenario=None, requests=5, rate=float("inf"), series=False)
    >>> run(ns)["requests_completed"]
    5
    """
    if getattr(args, "preset", None):  # a lesson preset, possibly a fleet: calc.sim.presets runs it
        from calc.sim.presets import run_cli

        return run_cli(args)
    result = simulate(scenario_from_args(args))
    out = dict(result.summary)
    if getattr(args, "series", False):
        out["time_series"] = result.time_series
    return out


def _s(value) -> str:
    if value is None:
        return "-"
    if value >= 1:
        return f"{format_number(value)} s"
    return f"{format_number(value * 1000)} ms"


def render(result: dict) -> str:
    """The summary as a readable report.

    >>> print(render(run(argparse.Namespace(scenario=None, requests=5, rate=float("inf")))))  # doctest: +ELLIPSIS
    Llama 3.1 70B on 4 x H100 SXM 80GB, continuous batching, paged KV
    ...
    TTFT p50 / p90 / p99 ...
    """
    r = result
    if "presets" in r:  # --preset list
        return format_table([(p["name"], str(p["lesson_step"]), p["description"][:90]) for p in r["presets"]],
                            headers=("preset", "step", "what it shows"))
    pct = lambda v: "-" if v is None else f"{format_number(100 * v)}%"  # noqa: E731
    num = lambda v: "-" if v is None else format_number(v)  # noqa: E731
    rows = [
        ("requests completed / rejected", f"{r['requests_completed']:,} / {r['requests_rejected']:,}"),
        ("duration (simulated)", _s(r["duration_s"])),
        ("throughput", f"{num(r['throughput_requests_per_s'])} req/s, {num(r['throughput_output_tokens_per_s'])} "
                       f"output tok/s, {num(r['throughput_input_tokens_per_s'])} input tok/s"),
        ("TTFT p50 / p90 / p99", " / ".join(_s(r[f"ttft_p{q}_s"]) for q in (50, 90, 99))),
        ("ITL p50 / p90 / p99", " / ".join(_s(r[f"itl_p{q}_s"]) for q in (50, 90, 99))),
        ("end-to-end p50 / p90 / p99", " / ".join(_s(r[f"e2e_p{q}_s"]) for q in (50, 90, 99))),
        ("queue depth mean / max", f"{num(r['queue_depth_mean'])} / {r['queue_depth_max']:,}"),
        ("running batch mean / max", f"{num(r['running_mean'])} / {r['running_max']:,}"),
        ("KV cache use mean / peak", f"{pct(r['kv_use_mean'])} / {pct(r['kv_use_peak'])} of "
                                     f"{r['kv_cache_tokens']:,} tokens"),
        ("KV memory holding tokens", pct(r["kv_token_share"])),
        ("preemptions", f"{r['preemptions']:,}"),
        ("GPU-Util as reported", pct(r["gpu_util_reported"])),
        ("compute utilization (FLOPs)", pct(r["compute_utilization"])),
    ]
    if r.get("prefix_cache_hit_rate") is not None:
        rows.append(("prefix cache hit rate", pct(r["prefix_cache_hit_rate"])))
    if r.get("speculation_tokens_per_step") is not None:
        rows.append(("speculation: tokens per step", num(r["speculation_tokens_per_step"])))
    if r["cost_usd_per_million_output_tokens"] is not None:
        rows.append(("cost per million output tokens", f"${format_number(r['cost_usd_per_million_output_tokens'])}"
                     f" at ${format_number(r['gpu_price_usd_per_hour'])}/GPU-hour"))
    else:
        rows.append(("cost per million output tokens", "- (no GPU price: pass --gpu-price-usd-per-hour)"))
    head = f"{r['model']} on {r['gpus']} x {r['gpu']}, {r['batching']} batching, {r['allocation']} KV"
    lines = [head, format_table(rows, headers=("metric", "value"))]
    if len(r.get("classes", [])) > 1:
        lines.append("")
        lines.append(format_table(
            [(c["name"], f"{c['requests_completed']:,}", _s(c["ttft_p50_s"]), _s(c["ttft_p99_s"]), _s(c["e2e_p99_s"]))
             for c in r["classes"]], headers=("class", "completed", "TTFT p50", "TTFT p99", "E2E p99")))
    if len(r.get("pools", ())) > 1 or r.get("replicas_max", 1) > 1:  # a fleet (--preset): replicas, pools, scaling
        from calc.sim.presets import render_fleet

        lines.append("")
        lines.append(render_fleet(r))
    return "\n".join(lines)
