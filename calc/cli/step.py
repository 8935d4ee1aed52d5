"""``python -m calc step``: the roofline of one engine step (decode and prefill), TTFT, ITL and tokens/s.

With ``--calibration`` it prints instead the fit of the efficiency factors: the
TensorRT-LLM row they were fitted on (Llama 3.1 8B FP8, one H100) and the
held-out published rows, predicted against published.

>>> from calc.cli import main
>>> main(["step", "--json"])  # doctest: +ELLIPSIS
{
...
  "decode": {
...
    "bound": "memory",
...
0
"""

from __future__ import annotations

import argparse
import dataclasses

from calc.catalog import GPUS, get_gpu, get_model
from calc.cli.model import add_model_argument
from calc.cli.table import format_table
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.roofline import (
    CALIBRATED, CALIBRATION_SETUP, calibration_report, decode_step, prefill_chunk, ridge_point_flops_per_byte,
    step_coefficients, ttft_s,
)
from calc import engine_versions, memory
from calc.catalog import MEMORY_BASES
from calc.engine_profiles import (ALLREDUCE_BUS_EFFICIENCY_SOURCE, DEFAULT_ENGINE, DEFAULT_FRONTEND, ENGINES, FRONTENDS,
                                  engine_coefficients, get_profile, request_overhead_s, MULTI_STEP_SOURCE)
from calc.parallel import ALLREDUCE_LATENCY_SOURCE
from calc.errors import CalcError
from calc.units import format_bytes, format_number, round_sig

HELP = "roofline of a decode step and a prefill chunk: FLOPs, bytes, intensity, ridge point, TTFT, ITL, tokens/s"


def json_ready(value):
    """Round every float in ``value`` (dicts, lists, tuples) to 6 significant digits for JSON.

    >>> json_ready({"a": 0.1 + 0.2, "b": [1.23456789, 2]})
    {'a': 0.3, 'b': [1.23457, 2]}
    """
    if isinstance(value, float):
        return round_sig(value)
    if isinstance(value, dict):
        return {k: json_ready(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [json_ready(v) for v in value]
    return value


def add_replica_arguments(parser: argparse.ArgumentParser, *, model: str = "llama-3.1-70b", gpu: str = "h100-sxm-80gb",
                          tp: int = 4, weights: str = "bf16") -> None:
    """Add ``--model --gpu --tp --weights --kv-dtype`` (the lesson's replica by default).

    >>> p = argparse.ArgumentParser(); add_replica_arguments(p); a = p.parse_args([])
    >>> a.model, a.gpu, a.tp, a.weights, a.kv_dtype
    ('llama-3.1-70b', 'h100-sxm-80gb', 4, 'bf16', 'bf16')
    """
    add_model_argument(parser, default=model)
    parser.add_argument("--gpu", default=gpu, metavar="KEY", help=f"GPU key ({', '.join(sorted(GPUS))}; default {gpu})")
    parser.add_argument("--tp", type=int, default=tp, help=f"tensor-parallel GPUs per replica (default {tp})")
    parser.add_argument("--weights", default=weights, choices=WEIGHT_FORMATS, help=f"weight format (default {weights})")
    parser.add_argument("--kv-dtype", default="bf16", choices=KV_DTYPES, help="KV cache precision (default bf16)")


def coefficients_from(args):
    """The :class:`calc.roofline.StepCoefficients` of the replica named by the parsed arguments.

    >>> p = argparse.ArgumentParser(); add_replica_arguments(p)
    >>> coefficients_from(p.parse_args([])).tp
    4
    >>> p.add_argument("--expert-parallel", action="store_true")  # doctest: +ELLIPSIS
    _StoreTrueAction(...)
    >>> ep = coefficients_from(p.parse_args(["--model", "deepseek-v3", "--gpu", "h200", "--tp", "8", "--weights", "fp8",
    ...                                      "--expert-parallel"]))
    >>> ep.expert_parallel, round(ep.weight_bytes_read(1) / 1e9, 1)
    (True, 8.7)
    >>> coefficients_from(p.parse_args(["--expert-parallel"]))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: expert_parallel needs a mixture-of-experts model; Llama 3.1 70B has no routed experts
    """
    return step_coefficients(get_model(args.model), get_gpu(args.gpu), tp=args.tp, weights=args.weights,
                             kv_dtype=args.kv_dtype, expert_parallel=bool(getattr(args, "expert_parallel", False)))


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``step``.

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.batch, a.context_tokens, a.prompt_tokens, a.calibration
    (1, 1152, 1024, False)
    """
    add_replica_arguments(parser)
    parser.add_argument("--batch", type=int, default=1, help="sequences in the decode step (default 1)")
    parser.add_argument("--context-tokens", type=int, default=1152,
                        help="context of each decoding sequence (default 1152: a 1,024-token prompt half-way "
                             "through a 256-token answer)")
    parser.add_argument("--prompt-tokens", type=int, default=1024, help="prompt prefilled for TTFT (default 1024)")
    parser.add_argument("--chunk-tokens", type=int, default=None,
                        help="prefill chunk size (default: the whole prompt in one step)")
    parser.add_argument("--calibration", action="store_true",
                        help="show the efficiency fit: the calibration row and the validation rows")
    parser.add_argument("--engine", default=DEFAULT_ENGINE, metavar="NAME",
                        help=f"engine profile whose step and request terms are listed ({', '.join(ENGINES)}; "
                             f"default {DEFAULT_ENGINE}; the simulator adds them to this roofline), or a family "
                             "(vllm, sglang, trtllm) with --engine-version; 'list' lists the profiles")
    parser.add_argument("--engine-version", metavar="X.Y", help="the engine's version: the profile covering it, "
                                                                 "else the nearest (the result says which)")
    parser.add_argument("--frontend", default=DEFAULT_FRONTEND, choices=FRONTENDS,
                        help="api-server (served: the per-sequence streaming cost; default) or offline")
    parser.add_argument("--expert-parallel", "--ep", action="store_true", dest="expert_parallel",
                        help="a mixture-of-experts model's routed experts split whole across the --tp GPUs (vLLM "
                             "--enable-expert-parallel; calc.moe); refused on a dense model")
    parser.add_argument("--memory-basis", choices=MEMORY_BASES,
                        help="basis of the KV capacity shown: marketed (the lesson's), runtime or engine (memory "
                             "as the engine profiles it); default marketed for the lesson's replica, else engine")


def _work(d: dict) -> dict:
    keys = ("flops", "bytes", "intensity_flops_per_byte", "ridge_flops_per_byte", "bound", "compute_s", "memory_s",
            "weights_s", "kv_s", "gemm_s", "attention_s", "comm_s", "overhead_s", "time_s")
    return {k: d[k] for k in keys}


def run(args) -> dict:
    """The step's roofline as JSON-ready data (or the calibration report with ``--calibration``).

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--batch", "64"]))
    >>> r["decode"]["bound"], round(r["decode_tokens_per_s"])
    ('memory', 3520)
    """
    efficiency = {"compute": CALIBRATED.compute, "memory": CALIBRATED.memory,
                  "step_overhead_s": CALIBRATED.step_overhead_s, "source": CALIBRATED.source}
    if args.calibration:
        return json_ready({
            "mode": "calibration",
            "efficiency": efficiency,
            "setup": CALIBRATION_SETUP,
            "calibration": calibration_report(),
            "validation": calibration_report(validation=True),
        })
    if getattr(args, "engine", None) == "list":
        from calc.cli.simulate import engine_list

        return {"mode": "engines", "engines": engine_list()}
    engine, resolution = engine_versions.resolve_engine(getattr(args, "engine", DEFAULT_ENGINE) or DEFAULT_ENGINE,
                                                        getattr(args, "engine_version", None))
    frontend = getattr(args, "frontend", DEFAULT_FRONTEND) or DEFAULT_FRONTEND
    coef = coefficients_from(args)
    gpu = get_gpu(args.gpu)
    capacity = kv_capacity_for(coef, engine, getattr(args, "memory_basis", None), frontend)
    decode = decode_step(coef, batch=args.batch, context_tokens=args.context_tokens)
    chunk = args.chunk_tokens or args.prompt_tokens
    prefill = prefill_chunk(coef, chunk_tokens=min(chunk, args.prompt_tokens))
    ttft = ttft_s(coef, prompt_tokens=args.prompt_tokens, chunk_tokens=args.chunk_tokens)
    return json_ready({
        "mode": "step",
        "engine": engine,
        "engine_resolution": resolution,
        "frontend": frontend,
        **capacity,
        "engine_terms": engine_terms(coef, engine, batch=args.batch, context_tokens=args.context_tokens,
                                     frontend=frontend),
        "model": coef.model_key,
        "gpu": coef.gpu_key,
        "tp": coef.tp,
        "weights": coef.weights,
        "kv_dtype": coef.kv_dtype,
        "compute_dtype": coef.compute_dtype,
        "expert_parallel": coef.expert_parallel,
        "efficiency": efficiency,
        "ridge_flops_per_byte": {d: ridge_point_flops_per_byte(gpu, d) for d in sorted(gpu.flops_per_s)},
        "batch": args.batch,
        "context_tokens": args.context_tokens,
        "prompt_tokens": args.prompt_tokens,
        "decode": _work(decode),
        "prefill": {"chunk_tokens": prefill["chunk_tokens"], **_work(prefill)},
        "ttft_s": ttft,
        "itl_s": decode["time_s"],
        "decode_tokens_per_s": args.batch / decode["time_s"],
    })


def kv_capacity_for(coef, engine: str, basis: str | None, frontend: str = DEFAULT_FRONTEND) -> dict:
    """The replica's KV capacity on ``basis`` (default: the lesson's for its replica, else ``engine``).

    On the engine basis the engine's version defaults set the token budget, running cap and memory
    fraction (:func:`calc.engine_versions.engine_defaults`), and its memory model the sizing
    (:mod:`calc.engine_memory`). Source: :func:`calc.memory.kv_capacity`.

    >>> from calc.roofline import step_coefficients
    >>> kv_capacity_for(step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4), "vllm", None)["memory_basis"]
    'marketed'
    >>> k = kv_capacity_for(step_coefficients("llama-3.1-8b", "rtx-3090"), "vllm-v1", None)
    >>> k["memory_basis"], k["kv_cache_tokens"], k["kv_sizing"]["max_num_batched_tokens"]
    ('engine', 45024, 2048)
    """
    lesson = (coef.model_key, coef.gpu_key, engine) == ("llama-3.1-70b", "h100-sxm-80gb", DEFAULT_ENGINE)
    basis = basis or ("marketed" if lesson else "engine")
    args = dict(tp=coef.tp, weights=coef.weights, kv_dtype=coef.kv_dtype, memory_basis=basis)
    sizing = {}
    if basis == "engine":
        defaults = engine_versions.engine_defaults(engine, coef.gpu_key, tp=coef.tp, offline=frontend == "offline")
        tokens = defaults["max_num_batched_tokens"] or 2048
        sizing = dict(memory_model=defaults["memory_model"], max_num_batched_tokens=tokens,
                      max_num_seqs=defaults["max_num_seqs"] or 256,
                      gpu_memory_utilization=defaults["gpu_memory_utilization"])
        args.update(sizing)
    try:
        cap = memory.kv_capacity(coef.model_key, coef.gpu_key, **args)
    except CalcError as error:  # the weights do not fit: say so instead of a number
        return {"memory_basis": basis, "kv_cache_tokens": None, "kv_sizing": {**sizing, "error": str(error)}}
    return {"memory_basis": basis, "kv_cache_tokens": cap.kv_cache_tokens, "kv_sizing": sizing}


def engine_terms(coef, engine: str, *, batch: int, context_tokens: int, frontend: str = DEFAULT_FRONTEND) -> dict:
    """The step's cost beyond the pure roofline, term by term, as the simulator prices it for ``engine``.

    Each term: its value in seconds, its role (calibration: fitted by ``python -m calc.latency_fit``;
    assumption: sourced or inherited) and its source. ``decode_step_s`` is the decode step with the
    engine's terms added. Source: :mod:`calc.engine_profiles`, :func:`calc.parallel.allreduce_latency_s`.

    >>> from calc.roofline import step_coefficients
    >>> t = engine_terms(step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4), "vllm", batch=1, context_tokens=1152)
    >>> [r["term"] for r in t["terms"]], t["decode_step_s"] > t["roofline_decode_step_s"]
    (['allreduce_latency_s', 'prefill_allreduce_bus_efficiency', 'step_overhead_s', 'tp_step_overhead_s', 'seq_overhead_s', 'request_overhead_s'], True)
    >>> t64 = engine_terms(step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4), "vllm", batch=64, context_tokens=1152)
    >>> t64["terms"][4]["per"], t64["terms"][4]["value_text"].endswith("us")
    ("sequence in the step (a batch of 64 pays 64), served through the API server (the serving path's: offline LLM.generate runs pay 0)", True)
    >>> t["terms"][1]["value_text"]
    '0.401 of the link'
    """
    profile = get_profile(engine)
    priced = engine_coefficients(coef.model_key, coef.gpu_key, tp=coef.tp, weights=coef.weights,
                                 kv_dtype=coef.kv_dtype, engine=profile.key, frontend=frontend)
    if coef.expert_parallel:  # as the simulator prices it (calc.sim.hardware.replica_hardware)
        priced = dataclasses.replace(priced, expert_parallel=True)
    roles, sources = dict(profile.roles), dict(profile.sources)
    terms = [{"term": "allreduce_latency_s", "value_s": priced.allreduce_latency_s,
              "per": f"all-reduce ({coef.allreduces_per_step} per step)" if coef.allreduces_per_step else "all-reduce (none on one GPU)",
              "role": "assumption",
              "source": f"{ALLREDUCE_LATENCY_SOURCE} (the roofline above: a round {coef.allreduce_latency_s * 1e6:g} us)"},
             # A share, not seconds: the bandwidth all-reduces up to the custom kernel's limit move their bytes at.
             {"term": "prefill_allreduce_bus_efficiency", "value": priced.prefill_allreduce_bus_efficiency,
              "value_text": f"{priced.prefill_allreduce_bus_efficiency:.3f} of the link",
              "per": (f"all-reduce byte, messages of {int(priced.prefill_allreduce_min_bytes) >> 10} KiB to "
                      f"{int(priced.prefill_allreduce_max_bytes) >> 20} MiB (prefill chunks)"
                      if priced.prefill_allreduce_max_bytes else "all-reduce byte: none measured for this GPU and count"),
              "role": "assumption",
              "source": f"{ALLREDUCE_BUS_EFFICIENCY_SOURCE} (the roofline above: the link's full figure)"}]
    for term, per in (("step_overhead_s", "step"), ("tp_step_overhead_s", "step, per GPU beyond the first"),
                      # The serving path's cost (streaming each token to its client): 0 for offline runs.
                      ("seq_overhead_s", f"sequence in the step (a batch of {batch} pays {batch}), served through "
                                         f"the API server (the serving path's: offline LLM.generate runs pay 0)"),
                      ("request_overhead_s", "request (TTFT)")):
        terms.append({"term": term, "value_s": getattr(profile, term), "per": per, "role": roles.get(term, ""),
                      "source": sources.get(term, "")})
        if term == "seq_overhead_s":  # microseconds: a fraction of a millisecond per sequence
            terms[-1]["value_text"] = f"{format_number(profile.seq_overhead_s * 1e6)} us"
    if profile.scheduler_steps > 1:  # multi-step windows: simulated, not a constant (calc.sim.scheduler)
        terms.append({"term": "scheduler_steps", "value": profile.scheduler_steps,
                      "value_text": f"{profile.scheduler_steps} steps",
                      "per": ("decode window: a new request waits for the running window to end, and an answer "
                              "that ends inside one completes at its end (each step priced at its batch)"),
                      "role": "setting", "source": MULTI_STEP_SOURCE})
    return {"engine": profile.key, "label": profile.label, "frontend": frontend, "terms": terms,
            "roofline_decode_step_s": decode_step(coef, batch=batch, context_tokens=context_tokens)["time_s"],
            "decode_step_s": decode_step(priced, batch=batch, context_tokens=context_tokens)["time_s"],
            "request_overhead_s": request_overhead_s(profile, priced)}


def flops_text(flops: float) -> str:
    """FLOPs with a decimal prefix, for tables.

    >>> flops_text(35.5e9), flops_text(3.59e13), flops_text(512)
    ('35.5 GFLOP', '35.9 TFLOP', '512 FLOP')
    """
    for size, name in ((1e15, "PFLOP"), (1e12, "TFLOP"), (1e9, "GFLOP"), (1e6, "MFLOP")):
        if abs(flops) >= size:
            return f"{format_number(flops / size)} {name}"
    return f"{format_number(flops)} FLOP"


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _render_calibration(result: dict) -> str:
    eff = result["efficiency"]
    head = (f"Efficiency factors: compute {eff['compute']}, memory {eff['memory']}, step overhead "
            f"{_ms(eff['step_overhead_s'])}\n{eff['source']}")
    rows = []
    for kind in ("calibration", "validation"):
        for r in result[kind]:
            rows.append((kind, r["gpu"], f"{r['input_tokens']}/{r['output_tokens']}", format_number(r["batch"]),
                         r["bound"], format_number(r["published_tokens_per_s"]),
                         format_number(round(r["predicted_tokens_per_s"])), f"{r['ratio']:.2f}"))
    table = format_table(rows, headers=("row", "gpu", "ISL/OSL", "batch", "bound", "published tok/s",
                                        "predicted tok/s", "ratio"))
    return f"{head}\n\n{table}"


def render(result: dict) -> str:
    """The step as a table.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args([]))))  # doctest: +ELLIPSIS
    Llama 3.1 70B on 4 x h100-sxm-80gb (bf16 weights, bf16 KV, computing in bf16)
    engine vllm (vllm: vLLM nightly (the lesson's engine)), frontend api-server; KV cache on the marketed basis: 399,440 tokens
    ...
    ITL (decode step)  ...
    """
    if result["mode"] == "calibration":
        return _render_calibration(result)
    if result["mode"] == "engines":
        return format_table([(e["engine"], e["versions"], e["memory_model"], e["terms"]) for e in result["engines"]],
                            headers=("engine", "versions", "KV sizing", "step terms"))
    d, p = result["decode"], result["prefill"]
    model = get_model(result["model"])
    head = (f"{model.name} on {result['tp']} x {result['gpu']} ({result['weights']} weights, {result['kv_dtype']} KV, "
            f"computing in {result['compute_dtype']}" + (", experts split whole across the GPUs"
                                                           if result.get("expert_parallel") else "") + ")")
    rows = [
        ("FLOPs per GPU", flops_text(d["flops"]), flops_text(p["flops"])),
        ("HBM bytes per GPU", format_bytes(d["bytes"]), format_bytes(p["bytes"])),
        ("intensity (FLOP/B)", format_number(d["intensity_flops_per_byte"]), format_number(p["intensity_flops_per_byte"])),
        ("ridge point (FLOP/B)", format_number(d["ridge_flops_per_byte"]), format_number(p["ridge_flops_per_byte"])),
        ("bound", d["bound"], p["bound"]),
        ("matmuls", _ms(d["gemm_s"]), _ms(p["gemm_s"])),
        ("  weights read", _ms(d["weights_s"]), _ms(p["weights_s"])),
        ("attention", _ms(d["attention_s"]), _ms(p["attention_s"])),
        ("  KV read", _ms(d["kv_s"]), _ms(p["kv_s"])),
        ("TP all-reduce", _ms(d["comm_s"]), _ms(p["comm_s"])),
        ("step overhead", _ms(d["overhead_s"]), _ms(p["overhead_s"])),
        ("step time", _ms(d["time_s"]), _ms(p["time_s"])),
    ]
    table = format_table(rows, headers=(
        "per step", f"decode: batch {format_number(result['batch'])} x {format_number(result['context_tokens'])} ctx",
        f"prefill: {format_number(p['chunk_tokens'])} tokens"))
    summary = format_table([
        ("TTFT (idle replica)", _ms(result["ttft_s"])),
        ("ITL (decode step)", _ms(result["itl_s"])),
        ("decode tokens/s", format_number(round(result["decode_tokens_per_s"]))),
    ])
    eff = result["efficiency"]
    note = (f"efficiency: compute {eff['compute']}, memory {eff['memory']}, overhead {_ms(eff['step_overhead_s'])} "
            f"(fitted on the TensorRT-LLM Llama 3.1 8B FP8 H100 row only; see --calibration)")
    kv = result.get("kv_cache_tokens")
    basis = (f"engine {result['engine']} ({result['engine_resolution']}), frontend {result['frontend']}; KV cache on "
             f"the {result['memory_basis']} basis: " + (f"{kv:,} tokens" if kv is not None else
                                                      result["kv_sizing"].get("error", "-")))
    return f"{head}\n{basis}\n{table}\n\n{summary}\n{note}\n\n{_render_engine(result['engine_terms'])}"


def _render_engine(t: dict) -> str:
    rows = [(r["term"], r["value_text"] if "value_text" in r else _ms(r["value_s"]), r["per"], r["role"], r["source"])
            for r in t["terms"]]
    table = format_table(rows, headers=("engine term", "value", "per", "role", "source"))
    return (f"Engine terms the simulator adds to this roofline: {t['label']} (--engine {t['engine']}; "
            f"fit: python -m calc.latency_fit)\n{table}\n"
            f"decode step with them: {_ms(t['decode_step_s'])} (roofline alone {_ms(t['roofline_decode_step_s'])}); "
            f"request cost before the first step: {_ms(t['request_overhead_s'])}")
