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

import os

from calc import engine_profiles, engine_versions
from calc.catalog import MEMORY_BASES, get_model
from calc.cli.table import format_table
from calc.errors import CalcError
from calc.sim import presets
from calc.sim.fleet import FleetScenario, as_fleet_scenario, simulate_fleet
from calc.sim.kv_blocks import ALLOCATIONS
from calc.sim.run import simulate
from calc.sim.scenario import BATCHING, SPECULATION_PRESETS, Scenario, load_scenario
from calc.sim.workload import ARRIVALS, LENGTH_KINDS, sharegpt_bench_means
from calc.units import format_number

HELP = "simulate one serving replica (vLLM-like scheduler, paged KV, roofline step times): latency, throughput, cost"

# Flag -> (scenario key, or ("workload", key)).
_TOP = ("model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "block_size", "max_model_len",
        "max_num_seqs", "max_num_batched_tokens", "allocation", "batching", "static_batch_size", "seed",
        "gpu_price_usd_per_hour", "sample_interval_s", "request_overhead_s")
_WORKLOAD = ("arrival", "requests", "duration_s", "burstiness", "think_time_s")
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
    a("--concurrency", type=int, metavar="N", help="a closed loop of N clients instead of --rate: each sends its "
                                                   "next request when its previous one finishes (as vLLM's "
                                                   "benchmark_serving --max-concurrency N)")
    a("--think-time-s", type=float, help="closed loop: a client's pause between an answer and its next request "
                                         "(default 0)")
    a("--request-overhead-s", type=float, help="time from a request's send to its being schedulable (API server, "
                                               "tokenization; default: the hardware profile's)")
    a("--arrival", choices=ARRIVALS, help="poisson (default), bursty, all-at-once or closed-loop (with --concurrency)")
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
    a("--engine", metavar="NAME", help="engine profile (calc.engine_profiles) or engine family vllm / sglang / trtllm "
                                       "(with --engine-version); 'list' lists the profiles (default vllm, the "
                                       "lesson's); a named engine brings its version's defaults (running cap, token "
                                       "budget, memory fraction) unless those flags are given")
    a("--engine-version", metavar="X.Y", help="the engine's version: maps to the profile covering it, else the "
                                              "nearest (the result says which)")
    a("--frontend", choices=engine_profiles.FRONTENDS, help="api-server (served, every token streamed; default) or "
                                                             "offline (LLM.generate: no per-sequence serving cost)")
    a("--memory-basis", choices=MEMORY_BASES, help="marketed (the lesson's: datasheet GB, a round workspace), "
                                                   "runtime, or engine (memory as the engine profiles it); default: "
                                                   "marketed for the lesson's replica, engine for any other")
    a("--expert-parallel", "--ep", action="store_true", dest="expert_parallel",
      help="a mixture-of-experts model's routed experts split whole across the --tp GPUs (vLLM "
           "--enable-expert-parallel): a step waits for the GPU whose tokens touched most of its experts "
           "(calc.moe); refused on a dense model")
    a("--series", action="store_true", help="with --json, include the time series")


def scenario_from_args(args):
    """The scenario the command line gives: its base, then every flag given on top (the one way, for both bases).

    The base is ``--preset NAME`` (a lesson preset, :mod:`calc.sim.presets`, as
    a :class:`~calc.sim.fleet.FleetScenario`), else ``--scenario FILE``, else the
    default :class:`~calc.sim.scenario.Scenario`. ``--rate inf`` means every
    request at once; a finite ``--rate`` on an all-at-once or closed-loop base
    makes it Poisson unless ``--arrival`` says otherwise. ``--concurrency N`` is
    the closed loop of N clients (``workload.arrival`` closed-loop): it excludes
    ``--rate`` and an ``--arrival`` other than closed-loop. A preset that sets its
    traffic over time (``fleet.traffic``) takes no ``--rate``, ``--concurrency``,
    ``--duration-s`` or ``--arrival``.

    >>> ns = argparse.Namespace(**{k: None for k in _TOP + _WORKLOAD + _CLASS}, scenario=None,
    ...     rate=float("inf"), no_chunked_prefill=False, prefix_caching=False, speculation=None)
    >>> ns.requests = 7
    >>> s = scenario_from_args(ns); s.workload.arrival, s.workload.requests
    ('all-at-once', 7)
    >>> fs = scenario_from_args(argparse.Namespace(preset="step20-pools", requests=30))
    >>> type(fs).__name__, fs.scenario.workload.requests
    ('FleetScenario', 30)
    >>> scenario_from_args(argparse.Namespace(preset="step14-scale-on-gpu-util", rate=3.0))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: preset step14-scale-on-gpu-util sets its traffic over time (fleet.traffic); --rate does not apply: copy ...
    >>> s = scenario_from_args(argparse.Namespace(concurrency=16, requests=64)); s.workload.arrival, s.workload.concurrency
    ('closed-loop', 16)
    >>> scenario_from_args(argparse.Namespace(model="mixtral-8x7b", tp=2, expert_parallel=True)).expert_parallel
    True
    >>> scenario_from_args(argparse.Namespace(expert_parallel=True))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: expert_parallel needs a mixture-of-experts model; Llama 3.1 70B has no routed experts
    >>> scenario_from_args(argparse.Namespace(concurrency=16, rate=4.0))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: give --rate (requests arriving at a rate, or inf for all at once) or --concurrency (a closed loop of clients), not both
    """
    name = getattr(args, "preset", None)
    if name:
        if getattr(args, "scenario", None):
            raise CalcError("give --preset or --scenario, not both", "preset")
        data = as_fleet_scenario(presets.load(name)).to_dict()
        source = f"preset {name}"
    else:
        base = load_scenario(args.scenario) if getattr(args, "scenario", None) else Scenario()
        data = base.to_dict()
        source = "the scenario"
    for key in _TOP:
        value = getattr(args, key, None)
        if value is not None:
            data[key] = value
    _apply_engine(args, data, name)
    if getattr(args, "no_chunked_prefill", False):
        data["chunked_prefill"] = False
    if getattr(args, "prefix_caching", False):
        data["prefix_caching"] = True
    if getattr(args, "speculation", None):
        data["speculation"] = args.speculation
    if getattr(args, "expert_parallel", False):
        data["expert_parallel"] = True
    wl = data["workload"]
    for key in _WORKLOAD:
        value = getattr(args, key, None)
        if value is not None:
            wl[key] = value
    rate = getattr(args, "rate", None)
    concurrency = getattr(args, "concurrency", None)
    if name and data["fleet"]["traffic"]:
        for flag, value in (("--rate", rate), ("--concurrency", concurrency),
                            ("--duration-s", getattr(args, "duration_s", None)),
                            ("--arrival", getattr(args, "arrival", None))):
            if value is not None:
                raise CalcError(f"preset {name} sets its traffic over time (fleet.traffic); {flag} does not apply: "
                                f"copy {os.path.join(presets.PRESET_DIR, name + '.json')}, edit its phases and pass "
                                "the copy to --preset", flag.lstrip("-"))
    if concurrency is not None:
        if rate is not None:
            raise CalcError("give --rate (requests arriving at a rate, or inf for all at once) or --concurrency "
                            "(a closed loop of clients), not both", "concurrency")
        arrival = getattr(args, "arrival", None)
        if arrival not in (None, "closed-loop"):
            raise CalcError(f"--concurrency is the closed-loop client; --arrival {arrival} is an open one: give "
                            "one of them", "concurrency")
        wl["arrival"] = "closed-loop"
        wl["concurrency"] = concurrency
    if rate is not None:
        if math.isinf(rate):
            wl["arrival"] = "all-at-once"
        else:
            wl["rate_per_s"] = rate
            if getattr(args, "arrival", None) is None and wl["arrival"] in ("all-at-once", "closed-loop"):
                wl["arrival"] = "poisson"
    given = {key: getattr(args, key) for key in _CLASS if getattr(args, key, None) is not None}
    if given:
        if len(wl["classes"]) != 1:
            hint = "" if name else ": edit the file instead"
            raise CalcError(f"--{next(iter(given)).replace('_', '-')} applies to a single request class; {source} "
                            f"has {len(wl['classes'])}{hint}", next(iter(given)))
        wl["classes"][0].update(given)
    if len(wl["classes"]) == 1 and wl["classes"][0].get("lengths") == "sharegpt":
        _sharegpt_means(wl["classes"][0], given, data)
    chosen = data.pop("_cli")
    try:
        setattr(args, "_cli", chosen)  # what_ran reports how the engine and basis were chosen
    except AttributeError:
        pass
    return FleetScenario.from_dict(data) if name else Scenario.from_dict(data)


#: The lesson's replica: the only configuration the lesson basis is the default for.
LESSON_REPLICA = {"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb", "engine": engine_profiles.DEFAULT_ENGINE}


def _apply_engine(args, data: dict, preset: str | None) -> None:
    """Put the engine, frontend and memory basis the flags name into ``data`` (the scenario's dict).

    ``--engine`` resolves through :func:`calc.engine_versions.resolve_engine`; a named engine brings its
    version's defaults (:func:`calc.engine_versions.engine_defaults`) for the running cap, the token budget
    and the memory fraction the command line does not give. The memory basis is ``--memory-basis``, else
    the scenario's own for the lesson's replica and for presets, else ``engine``. What was chosen is
    recorded under ``data["_cli"]`` for the result (not part of the scenario).

    >>> d = Scenario().to_dict(); _apply_engine(argparse.Namespace(), d, None); d["memory_basis"], d["_cli"]["engine"]
    ('marketed', 'vllm')
    >>> d = Scenario().to_dict(); _apply_engine(argparse.Namespace(engine="sglang", engine_version="0.4.6"), d, None)
    >>> d["engine"], d["memory_basis"], d["gpu_memory_utilization"], d["_cli"]["defaults_applied"]
    ('sglang-0.4', 'engine', 0.85, ['max_num_batched_tokens', 'gpu_memory_utilization', 'max_num_seqs'])
    >>> d["max_num_seqs"]   # SGLang's running cap follows its KV pool (calc.engine_versions.sglang_running_cap)
    4096
    """
    engine = getattr(args, "engine", None)
    version = getattr(args, "engine_version", None)
    applied = []
    if engine is None and version is not None:
        raise CalcError("--engine-version needs --engine (vllm, sglang or trtllm)", "engine_version")
    if engine is not None:
        key, note = engine_versions.resolve_engine(engine, version)
        data["engine"] = key
        defaults = engine_versions.engine_defaults(key, data["gpu"], tp=data["tp"],
                                                   offline=getattr(args, "frontend", None) == "offline")
        for field in ("max_num_seqs", "max_num_batched_tokens", "gpu_memory_utilization"):
            if getattr(args, field, None) is None and defaults[field] is not None:
                data[field] = defaults[field]
                applied.append(field)
        if defaults["max_num_seqs"] is None and getattr(args, "max_num_seqs", None) is None:
            from calc.sim.hardware import kv_sizing

            probe = {k: v for k, v in data.items() if k in Scenario.__dataclass_fields__ and k != "workload"}
            probe["memory_basis"] = getattr(args, "memory_basis", None) or "engine"
            kv_tokens = kv_sizing(Scenario.from_dict(probe)).kv_cache_tokens
            data["max_num_seqs"] = engine_versions.sglang_running_cap(kv_tokens, data["max_model_len"])
            applied.append("max_num_seqs")
    else:
        note = f"{data.get('engine', engine_profiles.DEFAULT_ENGINE)}: the scenario's engine profile"
    if getattr(args, "frontend", None) is not None:
        data["frontend"] = args.frontend
    basis = getattr(args, "memory_basis", None)
    if basis is None:
        lesson = all(data.get(k, engine_profiles.DEFAULT_ENGINE if k == "engine" else None) == v
                     for k, v in LESSON_REPLICA.items())
        basis = data.get("memory_basis", "marketed") if (lesson or preset) else "engine"
    data["memory_basis"] = basis
    data["_cli"] = {"engine": data.get("engine", engine_profiles.DEFAULT_ENGINE), "engine_resolution": note,
                    "defaults_applied": applied}


def _sharegpt_means(cls: dict, given: dict, data: dict) -> None:
    """ShareGPT lengths without --prompt-tokens / --output-tokens: the dataset's own sample means, in the model's
    tokens (:func:`calc.sim.workload.sharegpt_bench_means`), instead of the 1,024 / 256 defaults."""
    prompt, output = sharegpt_bench_means(get_model(data["model"]).tokenizer or "llama3")
    if "prompt_tokens" not in given:
        cls["prompt_tokens"] = round(prompt)
    if "output_tokens" not in given:
        cls["output_tokens"] = round(output)


def run(args) -> dict:
    """Simulate and return the summary (plus the time series with ``--series``).

    A preset runs as a fleet (one replica runs as a fleet of one: the same
    numbers) and its summary carries the preset's name and the fleet's keys;
    ``--preset list`` returns the presets instead.

    >>> ns = argparse.Namespace(scenario=None, requests=5, rate=float("inf"), series=False)
    >>> run(ns)["requests_completed"]
    5
    >>> out = run(argparse.Namespace(preset="step05-paged", requests=20, rate=None, series=False))
    >>> out["preset"], out["requests_completed"], out["replicas_max"]
    ('step05-paged', 20, 1)
    >>> run(argparse.Namespace(preset="list"))["presets"][0]["name"]
    'step04-reserve-max'
    """
    name = getattr(args, "preset", None)
    if name == "list":
        return {"presets": [presets.info(n) for n in presets.names()]}
    if getattr(args, "engine", None) == "list":
        return {"engines": engine_list()}
    scenario = scenario_from_args(args)
    if name:
        result = simulate_fleet(scenario)
        out = {"preset": name}
        out.update(result.summary)
    else:
        result = simulate(scenario)
        out = dict(result.summary)
    out.update(what_ran(scenario.scenario if name else scenario, args))
    if getattr(args, "series", False):
        out["time_series"] = result.time_series
    return out


def engine_list() -> list[dict]:
    """Every engine profile: key, label, versions, memory model, and whether its step terms are fitted.

    >>> [e["engine"] for e in engine_list()][:2], engine_list()[-1]["terms"]
    (['vllm', 'vllm-0.6-multistep'], "assumption: inherited from 'nim-trtllm'")
    """
    out = []
    for key in engine_profiles.ENGINES:
        p = engine_profiles.get_profile(key)
        family, low, high, memory_model, versions = engine_versions.VERSIONS[key]
        out.append({"engine": key, "label": p.label, "family": family, "versions": versions,
                    "memory_model": memory_model,
                    "terms": f"assumption: inherited from '{p.inherits}'" if p.inherits else "fitted (calc.latency_fit)"})
    return out


def what_ran(scenario, args=None) -> dict:
    """The engine profile, frontend and memory basis a run used, and how they were chosen.

    >>> w = what_ran(Scenario()); w["engine"], w["memory_basis"], w["frontend"]
    ('vllm', 'marketed', 'api-server')
    """
    profile = engine_profiles.get_profile(scenario.engine)
    cli = getattr(args, "_cli", None) or {}
    return {"engine": profile.key, "engine_label": profile.label,
            "engine_resolution": cli.get("engine_resolution", f"{profile.key}: the scenario's engine profile"),
            "engine_defaults_applied": cli.get("defaults_applied", []), "frontend": scenario.frontend,
            "memory_basis": scenario.memory_basis, "memory_model": profile.memory_model,
            "expert_parallel": scenario.expert_parallel,
            "max_num_seqs": scenario.max_num_seqs, "max_num_batched_tokens": scenario.max_num_batched_tokens,
            "gpu_memory_utilization": scenario.gpu_memory_utilization}


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
    engine vllm (vllm: the scenario's engine profile), frontend api-server, memory basis marketed (KV sized by vllm-v1); ...
    ...
    TTFT p50 / p90 / p99 ...
    ITL p50 / p90 / p99 ...
    TPOT p50 / p90 / p99 ...
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
        ("TPOT p50 / p90 / p99", " / ".join(_s(r.get(f"tpot_p{q}_s")) for q in (50, 90, 99))),
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
    lines = [head]
    if "engine" in r:  # what ran: the engine profile, its frontend and the memory basis of the KV cache
        applied = r.get("engine_defaults_applied") or []
        lines.append(f"engine {r['engine']} ({r['engine_resolution']}), frontend {r['frontend']}, memory basis "
                     f"{r['memory_basis']} (KV sized by {r['memory_model']}); running cap {r['max_num_seqs']:,}, "
                     f"token budget {r['max_num_batched_tokens']:,}, memory fraction {r['gpu_memory_utilization']:g}"
                     + (f" (the engine's defaults: {', '.join(applied)})" if applied else "")
                     + ("; experts split whole across the GPUs (expert parallelism)" if r.get("expert_parallel") else ""))
    lines.append(format_table(rows, headers=("metric", "value")))
    if len(r.get("classes", [])) > 1:
        lines.append("")
        lines.append(format_table(
            [(c["name"], f"{c['requests_completed']:,}", _s(c["ttft_p50_s"]), _s(c["ttft_p99_s"]), _s(c["e2e_p99_s"]))
             for c in r["classes"]], headers=("class", "completed", "TTFT p50", "TTFT p99", "E2E p99")))
    if len(r.get("pools", ())) > 1 or r.get("replicas_max", 1) > 1:  # a fleet (--preset): replicas, pools, scaling
        lines.append("")
        lines.append(render_fleet(r))
    return "\n".join(lines)


def render_fleet(summary: dict) -> str:
    """The fleet part of a run's summary as text: replicas and cost, pools, scaling decisions.

    >>> print(render_fleet(presets.run("step20-pools").summary))  # doctest: +ELLIPSIS
    replicas 6 at start, 6 at most, 6 at the end; ... replica-hours ...
    pool       classes   replicas (start/end)  TTFT p50  TTFT p99  queue max  GPU-Util
    ...
    """
    def sec(v):
        return "-" if v is None else (f"{format_number(v)} s" if v >= 1 else f"{format_number(v * 1000)} ms")

    s = summary
    cost = f", ${format_number(s['cost_usd'])}" if s.get("cost_usd") is not None else ""
    lines = [f"replicas {s['replicas_initial']} at start, {s['replicas_max']} at most, {s['replicas_final']} at the "
             f"end; {format_number(s['replica_hours'])} replica-hours ({format_number(s['gpu_hours'])} GPU-hours"
             f"{cost}); arrivals {format_number(s['arrival_rate_per_s'] or 0)} requests/s"]
    lines.append(format_table(
        [(p["name"], ", ".join(p["classes"]), f"{p['replicas_initial']}/{p['replicas_final']}", sec(p["ttft_p50_s"]),
          sec(p["ttft_p99_s"]), f"{p['queue_depth_max']:,}", f"{format_number(100 * p['gpu_util_reported'])}%")
         for p in s["pools"]],
        headers=("pool", "classes", "replicas (start/end)", "TTFT p50", "TTFT p99", "queue max", "GPU-Util")))
    events = s.get("scale_events", [])
    if events:
        lines.append("")
        lines.append(format_table(
            [(sec(e["t_s"]), e["pool"], f"{e['signal']} = {format_number(e['value'])}", f"{e['from']} -> {e['to']}")
             for e in events], headers=("at", "pool", "signal", "replicas")))
    return "\n".join(lines)
