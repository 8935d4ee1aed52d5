"""How accurate are calc's numbers? Its predictions set beside published measurements.

``calc/data/measurements.json`` holds published figures, each with its source,
what was run and the number reported: KV cache sizes from vLLM's start-up logs,
serving throughput tables (TensorRT-LLM, SGLang), the paged-attention memory
shares of the vLLM paper, speculative-decoding speed-ups against batch size and
prefix-caching gains. For each one this module computes calc's prediction with
the same functions the lesson's pages use (:mod:`calc.memory`,
:mod:`calc.roofline`, :mod:`calc.allocation`, :mod:`calc.speculative`,
:mod:`calc.prefix`), and the relative error ``(predicted - measured) / measured``.

A few measurements are *calibration*: calc sets a named factor from them
(:data:`calc.roofline.CALIBRATED` from the TensorRT-LLM Llama 3.1 8B FP8 H100 row,
:data:`calc.speculative.EAGLE_LIKE` and :data:`EAGLE3_LIKE` from one speed-up
each). Everything else is *validation*: never fitted. The summary per kind is
the median and the worst absolute error over the validation set only.

Every prediction is deterministic, so each measurement of the data file is
evaluated once per process and kept by its id: :func:`evaluate` with a ``kind``
computes only that kind's rows the first time, and after that returns the kept
results (the page's widget filters on every change of its kind control).

>>> results = evaluate()
>>> len(results) >= 30, sorted({r.kind for r in results}) == sorted(KINDS)
(True, True)
>>> summary = kind_summary(results)
>>> summary["kv_capacity"]["n"] > 5 and summary["kv_capacity"]["median_abs_error"] < 0.05
True
"""

from __future__ import annotations

import functools
import json
import math
import os
from dataclasses import asdict, dataclass

from calc import allocation, engine_memory, kv_logs, memory, prefix, roofline, speculative
from calc.catalog import GPUS, MODELS, get_gpu, get_model, model_from_config
from calc.errors import CalcError, check_choice, check_range
from calc.units import GiB, round_sig

__all__ = [
    "logged_kv_errors", "KV_LOG_TARGET", "kv_logs_within_target", "kv_log_gpus", "kv_log_gpus_phrase",
    "implied_total_gib", "pair_terms_gib",
    "DATA_PATH", "KINDS", "KIND_LABELS", "ROLES", "EAGLE3_LIKE", "SPECULATION_METHODS",
    "EAGLE_CALIBRATION_ID", "EAGLE3_CALIBRATION_ID", "calibration_ids", "load_measurements",
    "measured_value", "kv_capacity_tokens", "trtllm_max_throughput", "decode_output_tokens_per_s",
    "token_state_percent", "published_token_share", "speculation_speedup", "speculation_break_even_batch", "fit_acceptance",
    "repeated_prompts_cache", "Result", "predict", "evaluate", "median", "kind_summary", "baseline",
    "relative_error", "predict_user", "USER_KINDS", "PREDICTED_ELSEWHERE",
]

DATA_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "measurements.json")

KINDS = ("kv_capacity", "throughput", "paged_utilization", "speculative", "prefix_caching")
KIND_LABELS = {
    "kv_capacity": "KV cache capacity (vLLM logs)",
    "throughput": "Serving throughput",
    "paged_utilization": "Paged-attention memory use",
    "speculative": "Speculative-decoding speed-up",
    "prefix_caching": "Prefix-caching gains",
}
ROLES = ("calibration", "validation")

#: The row calc.speculative.EAGLE_LIKE's acceptance is fitted on (calc.speculative.CALIBRATION_ROWS names it).
EAGLE_CALIBRATION_ID = speculative.CALIBRATION_ROWS["eagle"][0]
#: The row :data:`EAGLE3_LIKE`'s acceptance is fitted on.
EAGLE3_CALIBRATION_ID = speculative.CALIBRATION_ROWS["eagle3"][0]

# The speculation rows were run on Llama 3.1 8B in bf16 on one H100 with short MT-bench prompts.
_SPEC_MODEL, _SPEC_GPU = speculative.PUBLISHED_SETUP["model"], speculative.PUBLISHED_SETUP["gpu"]
_SPEC_CONTEXT_TOKENS = speculative.PUBLISHED_SETUP["context_tokens"]

#: EAGLE-3 as calc prices it (its own head's shape on the roofline; acceptance fitted on its calibration row):
#: :data:`calc.speculative.EAGLE3_LIKE`.
EAGLE3_LIKE = speculative.EAGLE3_LIKE
SPECULATION_METHODS = {"eagle": speculative.EAGLE_LIKE, "eagle3": speculative.EAGLE3_LIKE}


def calibration_ids() -> frozenset[str]:
    """The measurements calc fits a factor on, by id: exactly these are marked calibration in the data.

    The four points of :data:`calc.roofline.CALIBRATION_ROW` (TensorRT-LLM, Llama 3.1 8B FP8, one H100),
    the EAGLE speed-up :data:`calc.speculative.EAGLE_LIKE` is set from, and the one :data:`EAGLE3_LIKE` is.

    >>> sorted(calibration_ids())[:2]
    ['eagle3-paper-eagle-batch2', 'eagle3-paper-eagle3-batch2']
    >>> len(calibration_ids())
    6
    """
    rows = {f"trtllm-llama-3.1-8b-fp8-h100-tp1-{isl}-{osl}" for isl, osl, _ in roofline.CALIBRATION_ROW}
    return frozenset(rows | {EAGLE_CALIBRATION_ID, EAGLE3_CALIBRATION_ID})


#: Kinds the data file holds that this module does not predict yet, and the module that does: published
#: online-serving runs (TTFT, ITL/TPOT, end to end, throughput) need the simulator, not a closed form.
PREDICTED_ELSEWHERE = {"online_latency": "calc.latency_accuracy"}


@functools.lru_cache(maxsize=8)
def _read(path: str, kinds: tuple | None = KINDS) -> tuple:
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return tuple(m for m in data["measurements"] if kinds is None or m["kind"] in kinds)


def load_measurements(path: str | None = None, kinds: tuple | None = KINDS) -> tuple[dict, ...]:
    """The published measurements (``calc/data/measurements.json``), as read-only data.

    By default only the :data:`KINDS` this module predicts; ``kinds=None`` gives every row, those of
    :data:`PREDICTED_ELSEWHERE` too (``calc.latency_accuracy`` reads its ``online_latency`` rows so).
    Source: every entry names its own (``source``: a short citation, name, url, where in it, how it was read).

    >>> ms = load_measurements()
    >>> ms[0]["id"], ms[0]["figure"]["value"], ms[0]["source"]["where"]
    ('trtllm-llama-3.1-8b-fp8-h100-tp1-128-128', 28312, "table 'Llama 3.1 8B', column 'H100 TP1 (FP8)', row 128/128")
    >>> {m["kind"] for m in load_measurements(kinds=None)} - set(KINDS)
    {'online_latency'}
    """
    return _read(path or DATA_PATH, None if kinds is None else tuple(kinds))


def published_token_share(measurement_id: str) -> tuple[float, str, int]:
    """A published share of KV memory holding token states (percent), its short citation and the max length run.

    Read from ``calc/data/measurements.json`` (:func:`load_measurements`), where
    every figure carries its source; steps 4 and 5 quote them next to calc's own.

    >>> published_token_share("vllm-paper-fig2-max")
    (20.4, 'vLLM paper, Fig. 2', 2048)
    >>> published_token_share("nope")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: measurement_id must name a measurement in calc/data/measurements.json; got 'nope'
    """
    for item in load_measurements():
        if item["id"] == measurement_id:
            return float(item["figure"]["value"]), item["source"]["cite"], int(item["inputs"]["max_model_len"])
    raise CalcError(f"measurement_id must name a measurement in calc/data/measurements.json; got {measurement_id!r}",
                    "measurement_id")


def measured_value(measurement: dict) -> tuple[float, str]:
    """The published figure as a number and a unit: ratios divided out, KV blocks turned into tokens.

    A figure with ``over`` is published as two numbers whose ratio is the measurement (a speed-up
    from two throughputs); a figure in ``blocks`` is vLLM's "# GPU blocks", ``block_size`` tokens each.

    >>> measured_value({"figure": {"value": 1952, "unit": "blocks"}, "inputs": {"block_size": 16}})
    (31232.0, 'tokens')
    >>> measured_value({"figure": {"value": 8.56, "unit": "x", "over": 4.86}, "inputs": {}})[0]
    1.7613168724279835
    """
    figure = measurement["figure"]
    value = float(figure["value"])
    unit = figure["unit"]
    if "over" in figure:
        value = value / float(figure["over"])
    if unit == "blocks":
        value = value * measurement["inputs"]["block_size"]
        unit = "tokens"
    return value, unit


def relative_error(predicted: float, measured: float) -> float:
    """(predicted - measured) / measured: positive when calc over-predicts.

    >>> relative_error(110.0, 100.0)
    0.1
    >>> relative_error(1.0, 0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: measured must be a positive number; got 0
    """
    if not isinstance(measured, (int, float)) or not math.isfinite(measured) or measured <= 0:
        raise CalcError(f"measured must be a positive number; got {measured!r}", "measured")
    return (predicted - measured) / measured


# --------------------------------------------------------------------------- building blocks


def _model(spec):
    if isinstance(spec, dict) and "config" in spec:
        return model_from_config(spec["config"], key=spec.get("key", "custom"))
    return get_model(spec)


def _gpu(spec):
    """(catalog GPU or None, memory bytes per GPU or None) for a catalog key or an inline ``memory_gib``."""
    if isinstance(spec, dict):
        return None, float(check_range("memory_gib", spec.get("memory_gib"), 1, 10_000)) * GiB
    return get_gpu(spec), None


def kv_capacity_tokens(model, gpu, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                       gpu_memory_utilization: float = 0.9, block_size: int = 16, max_model_len: int | None = None,
                       log_terms_gib: dict | None = None, unit: str = "tokens") -> float:
    """vLLM's "GPU KV cache size" as calc predicts it, from defaults or from a log's memory terms.

    Without ``log_terms_gib`` this is the page's own prediction: :func:`calc.memory.kv_capacity` on the
    GPU's capacity as the runtime sees it (vLLM sizes the cache from what the driver reports), the
    weights computed from the model's shape and calc's default workspace and overhead. With it, the
    terms a vLLM log printed (GiB) replace the defaults: ``total`` (the GPU as vLLM saw it),
    ``weights``, ``activation`` (or ``peak_torch``, weights included), ``non_torch``, or ``kv_cache``
    itself. ``gpu`` is a catalog key or ``{"memory_gib": ...}`` for a GPU outside the catalog. ``unit``:
    ``tokens``, or ``GiB`` for the memory the cache is given (a log that prints no token count).
    Source: vLLM ``gpu_worker.determine_available_memory`` as modelled in :mod:`calc.memory`.

    >>> kv_capacity_tokens("llama-3.1-8b", "h100-sxm-80gb", gpu_memory_utilization=0.95)
    474416
    >>> kv_capacity_tokens("llama-3.1-8b", {"memory_gib": 23.58}, max_model_len=20_000,
    ...     log_terms_gib={"weights": 14.9888, "peak_torch": 17.06, "non_torch": 0.35})
    31216
    """
    check_choice("unit", unit, ("tokens", "GiB"))
    model = _model(model)
    gpu_obj, gpu_bytes = _gpu(gpu)
    overrides = {}
    if log_terms_gib:
        terms = {key: float(value) * GiB for key, value in log_terms_gib.items()}
        if "total" in terms:
            gpu_bytes = terms["total"]
        if "kv_cache" in terms:
            overrides["kv_cache_bytes"] = terms["kv_cache"]
        if "weights" in terms:
            overrides["weights_bytes"] = terms["weights"]
        if "activation" in terms:
            overrides["activation_bytes"] = terms["activation"]
        elif "peak_torch" in terms:
            overrides["activation_bytes"] = max(0.0, terms["peak_torch"] - terms.get("weights", 0.0))
        if "non_torch" in terms:
            overrides["non_torch_bytes"] = terms["non_torch"]
    cap = memory.kv_capacity(model, gpu_obj if gpu_bytes is None else None, tp=tp, weights=weights,
                             kv_dtype=kv_dtype, gpu_memory_utilization=gpu_memory_utilization,
                             block_size=block_size, max_model_len=max_model_len, memory_basis="runtime",
                             gpu_memory_bytes=gpu_bytes, **overrides)
    return cap.kv_cache_bytes / GiB if unit == "GiB" else cap.kv_cache_tokens


def trtllm_max_throughput(model, gpu, *, tp: int = 1, weights: str = "fp8", kv_dtype: str = "fp8",
                          input_tokens: int, output_tokens: int) -> dict:
    """Output tokens/s of a replica flooded with identical requests, set up the way trtllm-bench runs.

    :data:`calc.roofline.CALIBRATION_SETUP` generalised to any model, GPU and TP: the KV cache is
    0.95 of the memory left on each GPU after the weights and calc's default workspace, in blocks of
    32 tokens; at most 4,096 requests run at once; :func:`calc.roofline.max_throughput` gives the
    steady state. For the calibration set-up it is exactly :func:`calc.roofline.calibration_report`'s
    prediction. Source: NVIDIA TensorRT-LLM performance overview (trtllm-bench settings).

    >>> r = trtllm_max_throughput("llama-3.1-8b", "h100-sxm-80gb", input_tokens=1000, output_tokens=1000)
    >>> r["batch"], round(r["output_tokens_per_s"])
    (532, 14619)
    """
    replica = _offline_replica if _cacheable(model, gpu, tp, weights, kv_dtype) else _offline_replica.__wrapped__
    kv_tokens, coef = replica(model, gpu, tp, weights, kv_dtype)
    result = roofline.max_throughput(coef, input_tokens=input_tokens, output_tokens=output_tokens,
                                     kv_capacity_tokens=kv_tokens,
                                     max_running=roofline.CALIBRATION_SETUP["max_running"])
    return {"output_tokens_per_s": result["output_tokens_per_s"], "batch": result["batch"],
            "bound": result["bound"], "limited_by": result["limited_by"], "kv_cache_tokens": kv_tokens}


def _cacheable(model, gpu, tp, *dtypes) -> bool:
    """True for catalog keys, a whole tp and dtype names: arguments a cache may hold (and hash) safely."""
    return (isinstance(model, str) and model in MODELS and isinstance(gpu, str) and gpu in GPUS
            and type(tp) is int and all(isinstance(d, str) for d in dtypes))


@functools.lru_cache(maxsize=64)
def _offline_replica(model, gpu, tp: int, weights: str, kv_dtype: str) -> tuple[int, roofline.StepCoefficients]:
    """(KV cache tokens, step coefficients) of one replica set up as trtllm-bench runs it.

    The same for every length a throughput table lists, so it is computed once per replica (the
    cache holds catalog keys only, see :func:`_cacheable`; anything else is computed each time
    through ``__wrapped__``).
    """
    s = roofline.CALIBRATION_SETUP
    model = _model(model)
    gpu = get_gpu(gpu)
    tp = memory.check_tp(model, tp)
    free = math.fsum([
        gpu.memory_bytes(s["memory_basis"]),
        -memory.weights_bytes_per_gpu(model, tp, weights),
        -memory.default_activation_bytes(model, tp),
        -memory.default_non_torch_bytes(tp),
    ])
    if free <= 0:
        raise CalcError(f"{model.name} does not fit on {tp} x {gpu.name} in {weights}: no memory left for the "
                        f"KV cache; allowed: a larger tp or fewer bits per weight", "tp")
    cap = memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, block_size=s["block_size"],
                             kv_cache_bytes=free * s["kv_free_memory_fraction"])
    coef = roofline.step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)
    return cap.kv_cache_tokens, coef


def decode_output_tokens_per_s(model, gpu, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                               batch: int = 1, context_tokens: int = 512) -> float:
    """Output tokens/s of ``batch`` sequences decoding together: :func:`calc.roofline.decode_tokens_per_s`.

    Source: the roofline of one decode step (:mod:`calc.roofline`).

    >>> round(decode_output_tokens_per_s("llama-3.1-8b", "h100-sxm-80gb", batch=1, context_tokens=512))
    169
    """
    coef = roofline.step_coefficients(_model(model), get_gpu(gpu), tp=tp, weights=weights, kv_dtype=kv_dtype)
    return roofline.decode_tokens_per_s(coef, batch=batch, context_tokens=context_tokens)


def token_state_percent(policy: str, *, mean_prompt_tokens: float = 161, mean_output_tokens: float = 338,
                        max_model_len: int = 2048, block_size: int = 16, requests: int = 2000, seed: int = 0) -> float:
    """Percent of reserved KV memory holding token states under ``policy``, on a ShareGPT-like workload.

    :func:`calc.allocation.token_state_fraction` over :func:`calc.allocation.sharegpt_like_requests`
    (the vLLM paper's comparison, Fig. 2: Orca reserving the maximum, a power of two, the true
    length, against paged blocks). The sample is drawn once per set of workload arguments and kept,
    so the four policies are compared on the very same requests without drawing them four times.

    >>> round(token_state_percent("paged", mean_prompt_tokens=161.31, mean_output_tokens=337.99), 1)
    98.5
    """
    check_choice("policy", policy, allocation.POLICIES)
    args = (requests, seed, mean_prompt_tokens, mean_output_tokens, max_model_len)
    keep = all(type(a) in (int, float) for a in args) and requests <= _KEPT_WORKLOAD_REQUESTS
    reqs = (_sharegpt_like if keep else _sharegpt_like.__wrapped__)(*args)
    return 100.0 * allocation.token_state_fraction(reqs, policy, max_model_len=max_model_len, block_size=block_size)


_KEPT_WORKLOAD_REQUESTS = 10_000  # larger samples are regenerated rather than held in memory


@functools.lru_cache(maxsize=4)
def _sharegpt_like(requests, seed, mean_prompt_tokens, mean_output_tokens, max_model_len) -> tuple:
    """:func:`calc.allocation.sharegpt_like_requests`, kept: the paper's four policies share one workload."""
    return tuple(allocation.sharegpt_like_requests(requests, seed=seed, mean_prompt_tokens=mean_prompt_tokens,
                                                   mean_output_tokens=mean_output_tokens,
                                                   max_model_len=max_model_len))


def _spec_coefficients(model, gpu, tp, weights, kv_dtype):
    coefficients = _coefficients if _cacheable(model, gpu, tp, weights, kv_dtype) else _coefficients.__wrapped__
    return coefficients(model, gpu, tp, weights, kv_dtype)


@functools.lru_cache(maxsize=16)
def _coefficients(model, gpu, tp, weights, kv_dtype) -> roofline.StepCoefficients:
    """:func:`calc.roofline.step_coefficients` of a catalog model on catalog GPUs, kept per replica."""
    return roofline.step_coefficients(_model(model), get_gpu(gpu), tp=tp, weights=weights, kv_dtype=kv_dtype)


def speculation_speedup(method: str = "eagle", *, batch: int, context_tokens: int = _SPEC_CONTEXT_TOKENS,
                        model=_SPEC_MODEL, gpu=_SPEC_GPU, tp: int = 1, weights: str = "bf16",
                        kv_dtype: str = "bf16") -> float:
    """Speed-up of EAGLE-like speculation at ``batch``: :func:`calc.speculative.speedup_at_batch`.

    ``method`` is ``eagle`` (:data:`calc.speculative.EAGLE_LIKE`) or ``eagle3`` (:data:`EAGLE3_LIKE`).

    >>> round(speculation_speedup("eagle", batch=2), 2), round(speculation_speedup("eagle", batch=64), 2)
    (1.4, 0.4)
    """
    config = SPECULATION_METHODS[check_choice("method", method, tuple(SPECULATION_METHODS))]
    coef = _spec_coefficients(model, gpu, tp, weights, kv_dtype)
    return speculative.speedup_at_batch(coef, batch=batch, context_tokens=context_tokens, config=config)["speedup"]


def speculation_break_even_batch(method: str = "eagle", *, context_tokens: int = _SPEC_CONTEXT_TOKENS,
                                 model=_SPEC_MODEL, gpu=_SPEC_GPU, tp: int = 1, weights: str = "bf16",
                                 kv_dtype: str = "bf16") -> int:
    """Smallest batch at which speculation falls below 1x: :func:`calc.speculative.break_even_batch`.

    >>> speculation_break_even_batch("eagle")
    20
    """
    config = SPECULATION_METHODS[check_choice("method", method, tuple(SPECULATION_METHODS))]
    coef = _spec_coefficients(model, gpu, tp, weights, kv_dtype)
    batch = speculative.break_even_batch(coef, context_tokens=context_tokens, config=config)
    if batch is None:
        raise CalcError("method keeps its speed-up above 1x up to batch 4,096 at this context; "
                        "allowed: a shorter context_tokens", "context_tokens")
    return batch


def fit_acceptance(target_speedup: float, *, batch: int, context_tokens: int = _SPEC_CONTEXT_TOKENS,
                   template: speculative.SpeculationConfig = speculative.EAGLE_LIKE) -> float:
    """Acceptance per drafted position that gives ``target_speedup`` at ``batch``: :func:`calc.speculative.fit_acceptance`.

    How :data:`calc.speculative.EAGLE_LIKE` and :data:`EAGLE3_LIKE` are calibrated, each on its one
    published point and nothing else. Source: :func:`calc.speculative.speedup_at_batch` on Llama 3.1 8B, one H100.

    >>> fit_acceptance(1.81, batch=2, template=EAGLE3_LIKE) == EAGLE3_LIKE.acceptance
    True
    """
    return speculative.fit_acceptance(target_speedup, batch=batch, template=template, context_tokens=context_tokens)


def repeated_prompts_cache(min_prompt_tokens: int, max_prompt_tokens: int, *, repeats: int = 2,
                           block_size: int = 16) -> dict:
    """Prefix-cache hit rate and prefill speed-up when every prompt is sent ``repeats`` times.

    One prompt of each length from ``min_prompt_tokens`` to ``max_prompt_tokens``: the first copy
    computes every token, each later copy reuses the full blocks before its last token
    (:func:`calc.prefix.cached_prefix_tokens`). Hit rate = cached tokens / prompt tokens (vLLM's
    definition, in tokens); speed-up = prompt tokens / tokens computed, which is the wall-time gain
    when prefill dominates. Source: :mod:`calc.prefix` (vLLM automatic prefix caching).

    >>> r = repeated_prompts_cache(256, 512, repeats=2)
    >>> round(r["hit_rate"], 4), round(r["prefill_speedup"], 3)
    (0.4889, 1.957)
    """
    low = check_range("min_prompt_tokens", min_prompt_tokens, 1, prefix.MAX_TOKENS, integer=True)
    high = check_range("max_prompt_tokens", max_prompt_tokens, low, prefix.MAX_TOKENS, integer=True)
    repeats = check_range("repeats", repeats, 1, 1_000, integer=True)
    if high - low > 100_000:
        raise CalcError(f"max_prompt_tokens - min_prompt_tokens must be at most 100,000; got {high - low:,}",
                        "max_prompt_tokens")
    total = cached = 0
    for length in range(low, high + 1):
        total += repeats * length
        cached += (repeats - 1) * prefix.cached_prefix_tokens(length, length, block_size)
    return {"prompt_tokens": total, "cached_tokens": cached, "computed_tokens": total - cached,
            "hit_rate": cached / total, "prefill_speedup": total / (total - cached)}


# --------------------------------------------------------------------------- predictions


@dataclass(frozen=True)
class Result:
    """One measurement beside calc's prediction.

    ``error`` is ``(predicted - measured) / measured``; ``predicted_from_log`` is the KV-capacity
    prediction with the log's own memory terms (None when the log printed none, or for other kinds);
    ``assumed`` says in words what calc used.

    >>> r = predict(load_measurements()[0])
    >>> r.id, r.role, r.unit
    ('trtllm-llama-3.1-8b-fp8-h100-tp1-128-128', 'calibration', 'output tokens/s')
    """

    id: str
    kind: str
    role: str
    label: str
    unit: str
    measured: float
    predicted: float
    error: float
    predicted_from_log: float | None
    error_from_log: float | None
    assumed: str
    source_cite: str
    source_name: str
    source_url: str
    source_where: str

    def to_dict(self) -> dict:
        """JSON-ready, floats to 6 significant digits.

        >>> predict(load_measurements()[0]).to_dict()["measured"]
        28312.0
        """
        return {key: round_sig(value) if isinstance(value, float) else value for key, value in asdict(self).items()}


def _predict_value(m: dict) -> tuple[float, float | None, str]:
    kind, x = m["kind"], m["inputs"]
    if kind == "kv_capacity":
        args = dict(tp=x["tp"], weights=x["weights"], kv_dtype=x["kv_dtype"],
                    gpu_memory_utilization=x["gpu_memory_utilization"], block_size=x["block_size"],
                    max_model_len=x.get("max_model_len"))
        # The engine basis: the engine's own sizing rule for the version the log names (calc.kv_logs).
        unit = measured_value(m)[1]  # the figure's unit, blocks read as tokens
        tokens = kv_logs.logged_kv_prediction(x, unit)
        from_log = kv_capacity_tokens(x["model"], x["gpu"], log_terms_gib=x["log_terms_gib"], unit=unit, **args) \
            if x.get("log_terms_gib") else None
        assumed = (f"the engine's sizing ({engine_memory.memory_model_for(x['engine'])}): the capacity CUDA "
                   "reports, the profiled peak of its token budget, weights from the shape")
        return float(tokens), None if from_log is None else float(from_log), assumed
    if kind == "throughput":
        if x["mode"] == "offline_max":
            r = trtllm_max_throughput(x["model"], x["gpu"], tp=x["tp"], weights=x["weights"], kv_dtype=x["kv_dtype"],
                                      input_tokens=x["input_tokens"], output_tokens=x["output_tokens"])
            return r["output_tokens_per_s"], None, f"{r['batch']:,} requests running, {r['bound']}-bound steps"
        value = decode_output_tokens_per_s(x["model"], x["gpu"], tp=x["tp"], weights=x["weights"],
                                           kv_dtype=x["kv_dtype"], batch=x["batch"], context_tokens=x["context_tokens"])
        return value, None, f"one decode step per token at batch {x['batch']}, {x['context_tokens']} tokens of context"
    if kind == "paged_utilization":
        value = token_state_percent(x["policy"], mean_prompt_tokens=x["mean_prompt_tokens"],
                                    mean_output_tokens=x["mean_output_tokens"], max_model_len=x["max_model_len"],
                                    block_size=x["block_size"], requests=x["requests"], seed=x["seed"])
        return value, None, f"{x['requests']:,} ShareGPT-like requests, block {x['block_size']}"
    if kind == "speculative":
        common = dict(context_tokens=x["context_tokens"], model=x["model"], gpu=x["gpu"], tp=x["tp"],
                      weights=x["weights"], kv_dtype=x["kv_dtype"])
        config = SPECULATION_METHODS[x["method"]]
        assumed = (f"{config.draft.name} priced from its shape, acceptance {config.acceptance:g}, {config.k} draft "
                   f"steps, {config.verify_tokens} tokens verified")
        if x["mode"] == "break_even_batch":
            return float(speculation_break_even_batch(x["method"], **common)), None, assumed
        return speculation_speedup(x["method"], batch=x["batch"], **common), None, assumed
    if kind == "prefix_caching":
        r = repeated_prompts_cache(x["min_prompt_tokens"], x["max_prompt_tokens"], repeats=x["repeats"],
                                   block_size=x["block_size"])
        if x["mode"] == "hit_rate":
            return 100.0 * r["hit_rate"], None, "full blocks before the last prompt token reused"
        return r["prefill_speedup"], None, "time proportional to prompt tokens computed"
    raise CalcError(f"kind must be one of {', '.join(KINDS)}; got {kind!r}", "kind")


def predict(measurement: dict) -> Result:
    """calc's prediction for one published measurement, and its relative error.

    Source: the functions above, which are the ones the lesson's pages call.

    >>> r = predict(load_measurements()[0])
    >>> round(r.predicted), round(r.measured), round(r.error, 3)
    (28789, 28312, 0.017)
    """
    measured, unit = measured_value(measurement)
    predicted, from_log, assumed = _predict_value(measurement)
    source = measurement["source"]
    return Result(
        id=measurement["id"], kind=measurement["kind"], role=measurement["role"], label=measurement["label"],
        unit=unit, measured=measured, predicted=predicted, error=relative_error(predicted, measured),
        predicted_from_log=from_log,
        error_from_log=None if from_log is None else relative_error(from_log, measured),
        assumed=assumed, source_cite=source["cite"], source_name=source["name"], source_url=source["url"],
        source_where=source["where"],
    )


#: Results of the data file's measurements, by id, each computed the first time it is asked for.
_RESULTS: dict[str, Result] = {}


def _kept(measurement: dict) -> Result:
    result = _RESULTS.get(measurement["id"])
    if result is None:
        result = _RESULTS[measurement["id"]] = predict(measurement)
    return result


def evaluate(measurements=None, kind: str | None = None) -> tuple[Result, ...]:
    """Every measurement beside its prediction, in the data file's order; ``kind`` keeps one kind only.

    With no ``measurements`` the data file's are used, and each one's result is computed once per
    process and kept by its id (:data:`_RESULTS`): a prediction depends on nothing but its
    measurement, so asking again, for all kinds or one, only filters. Measurements passed in are
    always computed afresh.

    >>> [r.kind for r in evaluate()][-1]
    'prefix_caching'
    >>> [r.id for r in evaluate(kind="paged_utilization")][-1]
    'vllm-paper-fig2-paged'
    >>> evaluate(kind="latency")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: kind must be one of kv_capacity, throughput, paged_utilization, speculative, prefix_caching; got 'latency'
    """
    if kind is not None:
        check_choice("kind", kind, KINDS)
    if measurements is None:
        return tuple(_kept(m) for m in load_measurements() if kind is None or m["kind"] == kind)
    return tuple(predict(m) for m in measurements if kind is None or m["kind"] == kind)


def median(values) -> float:
    """The median of a non-empty list of numbers (mean of the two middle ones for an even count).

    >>> median([3, 1, 2]), median([4, 1, 2, 3])
    (2, 2.5)
    """
    ordered = sorted(values)
    if not ordered:
        raise CalcError("values must hold at least one number; got none", "values")
    mid = len(ordered) // 2
    return ordered[mid] if len(ordered) % 2 else (ordered[mid - 1] + ordered[mid]) / 2


def kind_summary(results=None) -> dict[str, dict]:
    """Per kind, over the validation measurements only: count, median and worst absolute relative error.

    Also the calibration count, the median signed error (the bias) and, where logs gave memory
    terms, the median absolute error of the log-informed KV predictions.

    >>> s = kind_summary()
    >>> s["throughput"]["n_calibration"], s["speculative"]["n_calibration"]
    (4, 2)
    """
    results = evaluate() if results is None else results
    out = {}
    for kind in KINDS:
        rows = [r for r in results if r.kind == kind]
        valid = [r for r in rows if r.role == "validation"]
        if not valid:
            continue
        worst = max(valid, key=lambda r: (abs(r.error), r.id))
        logged = [abs(r.error_from_log) for r in valid if r.error_from_log is not None]
        out[kind] = {
            "n": len(valid),
            "n_calibration": len(rows) - len(valid),
            "median_abs_error": median([abs(r.error) for r in valid]),
            "median_error": median([r.error for r in valid]),
            "worst_abs_error": abs(worst.error),
            "worst_id": worst.id,
            "median_abs_error_from_log": median(logged) if logged else None,
            "n_from_log": len(logged),
        }
    return out


def baseline(results=None) -> dict:
    """The per-kind medians to record in ``tests/data/accuracy_baseline.json`` (12 significant digits).

    >>> sorted(baseline())[:2]
    ['kv_capacity', 'paged_utilization']
    """
    return {kind: {"n": s["n"], "median_abs_error": round_sig(s["median_abs_error"], 12)}
            for kind, s in kind_summary(results).items()}


# --------------------------------------------------------------------------- a reader's own measurement

#: What a reader can check against calc on the page, with the unit of their figure.
USER_KINDS = {
    "kv_capacity": "GPU KV cache size (tokens, as vLLM logs it)",
    "throughput": "maximum output tokens/s, all requests queued at once",
    "decode": "output tokens/s with a fixed number of requests decoding",
    "speculative": "speed-up of EAGLE-like speculation at a batch",
}


#: The engine a reader's own start-up log is predicted for: today's vLLM (the V1 engine's memory rules).
CURRENT_VLLM = "vLLM V1 engine"


def predict_user(kind: str, *, model: str, gpu: str, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                 input_tokens: int = 1024, output_tokens: int = 256, gpu_memory_utilization: float = 0.9,
                 max_model_len: int | None = None, batch: int = 1) -> dict:
    """calc's prediction for a reader's own set-up, with the unit their figure should be in.

    ``kv_capacity``: :func:`calc.kv_logs.logged_kv_prediction` for :data:`CURRENT_VLLM`; ``throughput``:
    :func:`trtllm_max_throughput`; ``decode``: :func:`decode_output_tokens_per_s` at ``batch`` with
    a context of input + half the output; ``speculative``: :func:`speculation_speedup` (EAGLE-like) at
    ``batch``, same context.

    >>> predict_user("kv_capacity", model="llama-3.1-70b", gpu="h100-sxm-80gb", tp=4)["predicted"]
    450032
    """
    check_choice("kind", kind, tuple(USER_KINDS))
    context = input_tokens + output_tokens // 2
    if kind == "kv_capacity":
        value = kv_logs.logged_kv_prediction({
            "model": model, "gpu": gpu, "tp": tp, "weights": weights, "kv_dtype": kv_dtype,
            "gpu_memory_utilization": gpu_memory_utilization, "block_size": 16, "max_model_len": max_model_len,
            "engine": CURRENT_VLLM})
        unit, how = "tokens", ("vLLM V1's sizing with its default token budget, on the GPU's capacity as CUDA "
                               "reports it (calc.engine_memory)")
    elif kind == "throughput":
        r = trtllm_max_throughput(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                                  input_tokens=input_tokens, output_tokens=output_tokens)
        value, unit = r["output_tokens_per_s"], "output tokens/s"
        how = f"{r['batch']:,} requests running at once (limited by {r['limited_by'].replace('_', ' ')})"
    elif kind == "decode":
        value = decode_output_tokens_per_s(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, batch=batch,
                                           context_tokens=context)
        unit, how = "output tokens/s", f"{batch:,} sequences decoding at {context:,} tokens of context"
    else:
        value = speculation_speedup("eagle", batch=batch, context_tokens=context, model=model, gpu=gpu, tp=tp,
                                    weights=weights, kv_dtype=kv_dtype)
        e = speculative.EAGLE_LIKE
        unit, how = "x", (f"EAGLE-like drafting (its head priced from the model's shape; acceptance {e.acceptance:g}, "
                          f"{e.k} steps, {e.verify_tokens} tokens verified)")
    return {"kind": kind, "predicted": value, "unit": unit, "how": how}


#: Issue #33's target for start-up logs: the engine-basis prediction within 3% of the logged KV capacity.
KV_LOG_TARGET = 0.03


def kv_logs_within_target(measurements=None) -> tuple[int, int]:
    """(logs within :data:`KV_LOG_TARGET` of their KV capacity, logs cited): :func:`logged_kv_errors` counted.

    >>> within, cited = kv_logs_within_target()
    >>> cited - within, cited >= 14
    (1, True)
    """
    errors = logged_kv_errors(measurements)
    return sum(abs(e) < KV_LOG_TARGET for e in errors.values()), len(errors)


def _kv_rows(measurements=None) -> list[dict]:
    return [m for m in (load_measurements() if measurements is None else measurements) if m["kind"] == "kv_capacity"]


def _by_id(measurements=None) -> dict[str, dict]:
    return {m["id"]: m for m in (load_measurements() if measurements is None else measurements)}


def kv_log_gpus(measurements=None) -> list[str]:
    """The catalog GPUs the cited start-up logs of KV capacity ran on, by name, in the catalog's order.

    >>> gpus = kv_log_gpus()
    >>> "L40S 48GB" in gpus, len(gpus) >= 5
    (True, True)
    """
    rows = _kv_rows(measurements)
    used = {m["inputs"]["gpu"] for m in rows}
    return [gpu.name for key, gpu in GPUS.items() if key in used]


def kv_log_gpus_phrase(measurements=None) -> str:
    """:func:`kv_log_gpus` as the accuracy page says it: how many GPU models, then their names.

    >>> kv_log_gpus_phrase().startswith("6 GPU models: H100 SXM 80GB, A100 SXM 80GB, ")
    True
    """
    names = kv_log_gpus(measurements)
    listed = names[0] if len(names) == 1 else ", ".join(names[:-1]) + " and " + names[-1]
    return f"{len(names)} GPU models: {listed}"


def pair_terms_gib(first_id: str, second_id: str, measurements=None) -> dict[str, float]:
    """What two logs of one server imply beside calc's own terms (GiB), for the first log's sizing.

    ``total``: :func:`implied_total_gib`; ``overhead``: what the engine then subtracted beyond calc's weights
    (the first log's share of the total less its pool and the weights); ``calc_total`` and ``calc_overhead``
    (the activation peak and the memory outside PyTorch): :func:`calc.kv_logs.logged_kv_capacity`'s.

    >>> terms = pair_terms_gib("vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.5",
    ...                        "vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.25")
    >>> {k: round(v, 2) for k, v in terms.items()}
    {'total': 79.28, 'calc_total': 79.56, 'overhead': 0.62, 'calc_overhead': 0.87}
    """
    rows = _by_id(measurements)
    inputs = rows[first_id]["inputs"]
    cap = kv_logs.logged_kv_capacity(inputs)
    total = implied_total_gib(first_id, second_id, tuple(rows.values()))
    rest = inputs["gpu_memory_utilization"] * total - inputs["log_terms_gib"]["kv_cache"]
    return {"total": total, "calc_total": cap.total_bytes / GiB, "overhead": rest - cap.weights_bytes / GiB,
            "calc_overhead": (cap.activation_bytes + cap.non_torch_bytes) / GiB}


def implied_total_gib(first_id: str, second_id: str, measurements=None) -> float:
    """The GPU total (GiB, as CUDA reports it) that two start-up logs of one server imply between them.

    Same model, GPU, engine and token budget at two ``gpu_memory_utilization`` values: everything vLLM
    subtracts is the same in both, so the pools differ by the utilisation's difference times the total, whatever
    the subtracted terms are. Each row must quote its pool (``log_terms_gib.kv_cache``). The two vLLM 0.10.1.1
    logs on one A100 80GB imply a total below the one calc assumes for that card (no log of its own):

    >>> round(implied_total_gib("vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.5",
    ...                         "vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.25"), 2)
    79.28
    >>> round(get_gpu("a100-80gb").memory_bytes("engine") / GiB, 2)
    79.56
    """
    rows = _by_id(measurements)
    a, b = rows[first_id]["inputs"], rows[second_id]["inputs"]
    for key in ("model", "gpu", "tp", "engine", "max_model_len"):
        if a.get(key) != b.get(key):
            raise CalcError(f"{first_id} and {second_id} differ in {key}; a pair of logs implies a total only "
                            "when only gpu_memory_utilization differs")
    span = a["gpu_memory_utilization"] - b["gpu_memory_utilization"]
    if span == 0:
        raise CalcError("gpu_memory_utilization must differ between the two logs; got the same value twice")
    return (a["log_terms_gib"]["kv_cache"] - b["log_terms_gib"]["kv_cache"]) / span


def logged_kv_errors(measurements=None) -> dict[str, float]:
    """Relative error of :func:`calc.kv_logs.logged_kv_prediction` on every ``kv_capacity`` row, by id (data file's order).

    >>> errors = logged_kv_errors()
    >>> round(errors["vllm-llama-3.1-8b-bf16-h100-tp1"], 4), len(errors) >= 14
    (-0.0026, True)
    >>> [k for k, e in errors.items() if abs(e) >= 0.03]   # the one log beyond 3% (the accuracy page names it)
    ['vllm-0.10.1-qwen2-7b-bf16-a100-80gb-tp1-util0.25']
    """
    rows = _kv_rows(measurements)
    out = {}
    for m in rows:
        out[m["id"]] = kv_logs.logged_kv_prediction(m["inputs"], m["figure"]["unit"]) / m["figure"]["value"] - 1
    return out
