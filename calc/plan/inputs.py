"""What the planner is asked: a model, its traffic, the latency targets, and the constraints and prices.

A :class:`PlanRequest` is plain data. :func:`request_from_dict` reads one from JSON-like data and checks
every field, raising :class:`calc.errors.CalcError` that names the field, the value and the allowed range;
:meth:`PlanRequest.to_dict` writes it back (the answer carries it, so that a page can reproduce the run).

Traffic is either request classes (lengths as :class:`calc.sim.workload.RequestClass` draws them: fixed,
lognormal, chat, sharegpt) arriving as a Poisson process, or a trace (:func:`read_trace`: one row per
request, its arrival time, prompt and answer tokens and prefix group). The planner sizes the fleet for the
*peak* rate and prices the tokens at the *mean* rate as well.

>>> r = request_from_dict({"model": "llama-3.1-8b", "peak_rate_per_s": 4, "targets": {"ttft_p99_s": 1}})
>>> r.model, r.peak_rate_per_s, r.mean_rate_per_s, r.targets.tpot_p99_s
('llama-3.1-8b', 4, 4, None)
>>> request_from_dict({"peak_rate_per_s": 0})
Traceback (most recent call last):
...
calc.errors.CalcError: peak_rate_per_s must be between 0.001 and 100000; got 0
"""

from __future__ import annotations

import csv
import dataclasses
import io
import math
from dataclasses import dataclass

from calc.catalog import GPUS, get_gpu, get_model
from calc.engine_profiles import DEFAULT_ENGINE, ENGINES
from calc.errors import CalcError, check_choice, check_range
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.sim.workload import LENGTH_KINDS, RequestClass

__all__ = ["Targets", "OwnedGPU", "TraceRow", "PlanRequest", "request_from_dict", "read_trace", "MAX_RATE_PER_S",
           "DEFAULT_WEIGHTS", "DEFAULT_KV_DTYPES", "MAX_TRACE_ROWS", "trace_rates", "allowed_gpus", "gpu_name"]

MAX_RATE_PER_S = 100_000
MAX_TRACE_ROWS = 200_000
#: Weight formats searched unless the request names others. Both keep the model's published accuracy within
#: about a point on the usual benchmarks (the lesson's step 8 shows the published deltas); 4-bit and int8
#: weights cost more accuracy, so they are searched only when asked for (``weights``).
DEFAULT_WEIGHTS = ("bf16", "fp8")
#: KV formats searched unless the request names others: fp16 KV takes the bytes of bf16, so it is left out.
DEFAULT_KV_DTYPES = ("bf16", "fp8")
_MAX_TOKENS = 10_000_000
_MAX_S = 3_600.0


@dataclass(frozen=True)
class Targets:
    """Latency targets in seconds; None means no target on that metric.

    TPOT is vLLM's per-request time per output token after the first ((end to end - TTFT) / (answer - 1)),
    as ``vllm bench serve`` reports it.

    >>> Targets(ttft_p99_s=2.0, tpot_p99_s=0.05).scaled(0.8).tpot_p99_s
    0.04
    """

    ttft_p99_s: float | None = None
    tpot_p99_s: float | None = None
    ttft_p50_s: float | None = None
    tpot_p50_s: float | None = None

    def items(self):
        """(metric key, target) for every target that is set, in a fixed order.

        >>> list(Targets(tpot_p99_s=0.05).items())
        [('tpot_p99_s', 0.05)]
        """
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value is not None:
                yield f.name, value

    def scaled(self, factor: float) -> "Targets":
        """Every target times ``factor`` (the sensitivity's "targets 20% tighter" is ``scaled(0.8)``).

        >>> Targets(ttft_p99_s=1.0).scaled(0.5)
        Targets(ttft_p99_s=0.5, tpot_p99_s=None, ttft_p50_s=None, tpot_p50_s=None)
        """
        return Targets(**{k: (None if v is None else round(v * factor, 12)) for k, v in dataclasses.asdict(self).items()})


@dataclass(frozen=True)
class OwnedGPU:
    """An owned GPU priced per hour: its purchase spread over its lifetime, plus the power it draws.

    ``usd_per_hour = purchase_usd / (lifetime_years x 8,760) + power_w / 1000 x pue x usd_per_kwh``.
    PUE (power usage effectiveness) is the facility's power over the IT power; the default 1.58 is the
    industry average of the Uptime Institute Global Data Center Survey 2023 (uptimeinstitute.com, "average
    annual PUE"). Straight-line depreciation, no interest, no staff: what the reader adds is theirs.

    >>> round(OwnedGPU(purchase_usd=30000, lifetime_years=4, power_w=700, usd_per_kwh=0.1).usd_per_hour(), 4)
    0.9668
    """

    purchase_usd: float
    lifetime_years: float
    power_w: float
    usd_per_kwh: float
    pue: float = 1.58

    def usd_per_hour(self) -> float:
        """The GPU's hourly cost in USD (see the class)."""
        hours = self.lifetime_years * 8_760
        return self.purchase_usd / hours + self.power_w / 1000 * self.pue * self.usd_per_kwh


@dataclass(frozen=True)
class TraceRow:
    """One request of a trace: when it arrives (s from the trace's start), its lengths, its prefix group.

    ``prefix_group`` "" means no shared prefix; requests of one group share ``prefix_tokens`` leading tokens.

    >>> TraceRow(0.5, 1000, 200, "sys-a", 800).prefix_tokens
    800
    """

    arrival_s: float
    prompt_tokens: int
    answer_tokens: int
    prefix_group: str = ""
    prefix_tokens: int = 0


@dataclass(frozen=True)
class PlanRequest:
    """Everything one plan needs; see :func:`request_from_dict` for the fields and their ranges.

    >>> PlanRequest().model, PlanRequest().engine
    ('llama-3.1-70b', 'vllm')
    """

    model: str = "llama-3.1-70b"
    engine: str = DEFAULT_ENGINE
    peak_rate_per_s: float = 5.0
    mean_rate_per_s: float = 5.0
    classes: tuple = (RequestClass(),)
    trace: tuple = ()
    targets: Targets = Targets(ttft_p99_s=5.0, tpot_p99_s=0.05)
    gpus: tuple = ()
    gpu_budget: int | None = None
    prices_usd_per_gpu_hour: tuple = ()
    owned: tuple = ()
    weights: tuple = DEFAULT_WEIGHTS
    kv_dtypes: tuple = DEFAULT_KV_DTYPES
    speculation_acceptance: float | None = None
    max_model_len: int | None = None
    seed: int = 0
    requests: int | None = None
    parameter_count: str = "exact"
    name: str = ""

    def price_overrides(self) -> dict:
        """GPU key -> USD per GPU-hour given in the request (rented), as a dict.

        >>> PlanRequest(prices_usd_per_gpu_hour=(("h200", 4.5),)).price_overrides()
        {'h200': 4.5}
        """
        return dict(self.prices_usd_per_gpu_hour)

    def owned_gpus(self) -> dict:
        """GPU key -> :class:`OwnedGPU` for the GPUs the reader owns.

        >>> PlanRequest().owned_gpus()
        {}
        """
        return dict(self.owned)

    def prompt_answer_means(self) -> tuple[float, float]:
        """Mean prompt tokens (shared prefix included) and mean answer tokens of the traffic.

        >>> PlanRequest().prompt_answer_means()
        (1024.0, 256.0)
        """
        if self.trace:
            n = len(self.trace)
            return (math.fsum(r.prompt_tokens for r in self.trace) / n,
                    math.fsum(r.answer_tokens for r in self.trace) / n)
        total = math.fsum(c.share for c in self.classes)
        prompt = math.fsum(c.share * c.mean_prompt_tokens() for c in self.classes) / total
        answer = math.fsum(c.share * c.mean_output_tokens() for c in self.classes) / total
        return prompt, answer

    def shared_prefix_tokens(self) -> float:
        """Mean tokens per request that a shared prefix covers (what prefix caching can skip at best).

        >>> PlanRequest(classes=(RequestClass(prompt_tokens=500, prefix_tokens=2000),)).shared_prefix_tokens()
        2000.0
        """
        if self.trace:
            return math.fsum(r.prefix_tokens for r in self.trace if r.prefix_group) / len(self.trace)
        total = math.fsum(c.share for c in self.classes)
        return math.fsum(c.share * c.prefix_tokens for c in self.classes) / total

    def longest_request_tokens(self) -> int:
        """The longest prompt + answer the server must admit: fixed lengths exactly; drawn lengths their means
        (the simulator redraws a draw longer than ``max_model_len``, as a client's length filter would).

        >>> PlanRequest().longest_request_tokens()
        1280
        """
        if self.trace:
            return max(r.prompt_tokens + r.answer_tokens for r in self.trace)
        out = 0
        for c in self.classes:
            if c.lengths == "fixed":
                out = max(out, c.prefix_tokens + c.prompt_tokens + c.output_tokens)
            else:
                out = max(out, math.ceil(c.mean_prompt_tokens() + c.mean_output_tokens()))
        return out

    def to_dict(self) -> dict:
        """The request as JSON-ready data (what :func:`request_from_dict` reads back).

        >>> request_from_dict(PlanRequest().to_dict()) == PlanRequest()
        True
        """
        return {
            "model": self.model, "engine": self.engine, "peak_rate_per_s": self.peak_rate_per_s,
            "mean_rate_per_s": self.mean_rate_per_s,
            "classes": [dataclasses.asdict(c) for c in self.classes],
            "trace": [dataclasses.asdict(r) for r in self.trace],
            "targets": dataclasses.asdict(self.targets), "gpus": list(self.gpus), "gpu_budget": self.gpu_budget,
            "prices_usd_per_gpu_hour": dict(self.prices_usd_per_gpu_hour),
            "owned": {k: dataclasses.asdict(v) for k, v in self.owned},
            "weights": list(self.weights), "kv_dtypes": list(self.kv_dtypes),
            "speculation_acceptance": self.speculation_acceptance, "max_model_len": self.max_model_len,
            "seed": self.seed, "requests": self.requests, "parameter_count": self.parameter_count,
            "name": self.name,
        }


_KEYS = tuple(f.name for f in dataclasses.fields(PlanRequest))


def _number(data: dict, key: str, low, high, default, *, integer=False, optional=False):
    value = data.get(key, default)
    if value is None:
        if optional:
            return None
        raise CalcError(f"{key} must be given: a number between {low:g} and {high:g}; got none", key)
    return check_range(key, value, low, high, integer=integer)


def _gpu_keys(values, where: str) -> tuple:
    if isinstance(values, str):
        values = [v for v in values.split(",") if v]
    out = []
    for v in values:
        if v not in GPUS:
            raise CalcError(f"{where} must name catalog GPUs: one of {', '.join(GPUS)}; got {v!r}", where)
        out.append(v)
    return tuple(dict.fromkeys(out))


def _classes(raw) -> tuple:
    if not isinstance(raw, list) or not raw:
        raise CalcError(f"classes must be a non-empty list of request classes; got {raw!r}", "classes")
    out = []
    for i, c in enumerate(raw):
        where = f"classes[{i}]"
        if not isinstance(c, dict):
            raise CalcError(f"{where} must be an object; got {c!r}", where)
        unknown = set(c) - {f.name for f in dataclasses.fields(RequestClass)}
        if unknown:
            raise CalcError(f"unknown key {sorted(unknown)[0]!r} in {where}; allowed: "
                            f"{', '.join(f.name for f in dataclasses.fields(RequestClass))}", where)
        d = RequestClass()
        out.append(RequestClass(
            name=str(c.get("name", d.name)),
            share=check_range(f"{where}.share", c.get("share", d.share), 0.0, 1e6),
            lengths=check_choice(f"{where}.lengths", c.get("lengths", d.lengths), LENGTH_KINDS),
            prompt_tokens=check_range(f"{where}.prompt_tokens", c.get("prompt_tokens", d.prompt_tokens), 1,
                                      _MAX_TOKENS, integer=True),
            output_tokens=check_range(f"{where}.output_tokens", c.get("output_tokens", d.output_tokens), 2,
                                      _MAX_TOKENS, integer=True),
            prefix_tokens=check_range(f"{where}.prefix_tokens", c.get("prefix_tokens", d.prefix_tokens), 0,
                                      _MAX_TOKENS, integer=True),
            prefix_variants=check_range(f"{where}.prefix_variants", c.get("prefix_variants", d.prefix_variants), 1,
                                        1_000_000, integer=True)))
    if not math.fsum(c.share for c in out) > 0:
        raise CalcError("classes: the shares must add up to more than 0", "classes")
    return tuple(out)


def _trace(raw) -> tuple:
    if not isinstance(raw, (list, tuple)):
        raise CalcError(f"trace must be a list of requests; got {type(raw).__name__}", "trace")
    if len(raw) > MAX_TRACE_ROWS:
        raise CalcError(f"trace must hold at most {MAX_TRACE_ROWS:,} requests; got {len(raw):,}", "trace")
    rows = []
    for i, r in enumerate(raw):
        if isinstance(r, TraceRow):
            r = dataclasses.asdict(r)
        where = f"trace[{i}]"
        rows.append(TraceRow(
            arrival_s=check_range(f"{where}.arrival_s", r.get("arrival_s"), 0.0, 1e7),
            prompt_tokens=check_range(f"{where}.prompt_tokens", r.get("prompt_tokens"), 1, _MAX_TOKENS, integer=True),
            answer_tokens=check_range(f"{where}.answer_tokens", r.get("answer_tokens"), 2, _MAX_TOKENS, integer=True),
            prefix_group=str(r.get("prefix_group", "") or ""),
            prefix_tokens=check_range(f"{where}.prefix_tokens", r.get("prefix_tokens", 0), 0,
                                      r.get("prompt_tokens") or 0, integer=True)))
    rows.sort(key=lambda row: row.arrival_s)
    return tuple(rows)


def trace_rates(trace) -> tuple[float, float]:
    """(mean, peak) arrival rate of a trace in requests/s; the peak is the busiest minute (or the whole trace
    when it is shorter), the window ``vllm bench serve`` users size for.

    >>> trace_rates([TraceRow(t / 2, 10, 10) for t in range(240)])
    (2.0, 2.0)
    """
    if len(trace) < 2:
        raise CalcError(f"trace must hold at least 2 requests; got {len(trace)}", "trace")
    times = [r.arrival_s for r in trace]
    span = times[-1] - times[0]
    if span <= 0:
        raise CalcError("trace: the arrival times must not all be equal", "trace")
    mean = (len(times) - 1) / span
    window = min(60.0, span)
    peak, j = 0, 0
    for i, t in enumerate(times):
        while times[j] < t - window:
            j += 1
        peak = max(peak, i - j)
    return mean, max(mean, peak / window)


def request_from_dict(data: dict) -> PlanRequest:
    """A checked :class:`PlanRequest` from JSON-like data; missing keys take :class:`PlanRequest`'s defaults.

    Fields: ``model`` (catalog key, or a config.json path or text), ``engine`` (a profile of
    :mod:`calc.engine_profiles`), ``peak_rate_per_s`` and ``mean_rate_per_s`` (0.001 to 100,000; the mean
    defaults to the peak and may not exceed it), ``classes`` (request classes, as the simulator's) or
    ``trace`` (rows of :class:`TraceRow`; its rates then come from the trace), ``targets`` (seconds, 0.001
    to 3,600: ``ttft_p99_s``, ``tpot_p99_s``, ``ttft_p50_s``, ``tpot_p50_s``; at least one),
    ``gpus`` (allowed catalog GPUs; empty: every GPU the catalog prices or the request prices),
    ``gpu_budget`` (most GPUs in all), ``prices_usd_per_gpu_hour`` ({gpu: USD}), ``owned`` ({gpu:
    :class:`OwnedGPU` fields}), ``weights`` and ``kv_dtypes`` (formats searched),
    ``speculation_acceptance`` (0 to 1; None: the calibrated EAGLE default), ``max_model_len``,
    ``seed``, ``requests`` (simulated requests per run).

    >>> request_from_dict({"targets": {}})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: targets must set at least one of ttft_p99_s, tpot_p99_s, ttft_p50_s, tpot_p50_s; got none
    >>> request_from_dict({"gpus": ["h100"]})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: gpus must name catalog GPUs: one of h100-sxm-80gb, h200, a100-80gb, a100-40gb, h100-pcie-80gb, a100-pcie-80gb, l40s, l4, rtx-3090, rtx-4090, rtx-5090, b200, mi300x; got 'h100'
    """
    if not isinstance(data, dict):
        raise CalcError(f"the plan request must be an object; got {type(data).__name__}", "request")
    unknown = sorted(set(data) - set(_KEYS))
    if unknown:
        raise CalcError(f"unknown key {unknown[0]!r} in the plan request; allowed: {', '.join(sorted(_KEYS))}",
                        unknown[0])
    d = PlanRequest()
    model = data.get("model", d.model)
    get_model(model)  # refuses a model outside the catalog's physics, with calc's reason
    engine = check_choice("engine", data.get("engine", d.engine), ENGINES)
    trace = _trace(data.get("trace") or ())
    if trace:
        mean, peak = trace_rates(trace)
        classes = d.classes
    else:
        peak = _number(data, "peak_rate_per_s", 0.001, MAX_RATE_PER_S, d.peak_rate_per_s)
        mean = _number(data, "mean_rate_per_s", 0.001, MAX_RATE_PER_S, data.get("peak_rate_per_s", peak))
        if mean > peak:
            raise CalcError(f"mean_rate_per_s must be at most peak_rate_per_s ({peak:g}); got {mean:g}",
                            "mean_rate_per_s")
        classes = _classes(data["classes"]) if "classes" in data else d.classes
    raw_targets = data.get("targets", dataclasses.asdict(d.targets))
    if not isinstance(raw_targets, dict):
        raise CalcError(f"targets must be an object; got {raw_targets!r}", "targets")
    names = [f.name for f in dataclasses.fields(Targets)]
    for key in raw_targets:
        if key not in names:
            raise CalcError(f"unknown target {key!r}; allowed: {', '.join(names)}", "targets")
    targets = Targets(**{k: (None if raw_targets.get(k) is None else check_range(k, raw_targets[k], 0.001, _MAX_S))
                         for k in names})
    if not list(targets.items()):
        raise CalcError(f"targets must set at least one of {', '.join(names)}; got none", "targets")
    gpus = _gpu_keys(data.get("gpus", ()), "gpus")
    budget = _number(data, "gpu_budget", 1, 100_000, None, integer=True, optional=True)
    prices_raw = data.get("prices_usd_per_gpu_hour", {}) or {}
    if not isinstance(prices_raw, dict):
        raise CalcError(f"prices_usd_per_gpu_hour must map GPU keys to USD per GPU-hour; got {prices_raw!r}",
                        "prices_usd_per_gpu_hour")
    prices = tuple(sorted((g, check_range(f"prices_usd_per_gpu_hour.{g}", v, 0.0, 1_000.0))
                          for g, v in zip(_gpu_keys(list(prices_raw), "prices_usd_per_gpu_hour"), prices_raw.values())))
    owned_raw = data.get("owned", {}) or {}
    owned = []
    for g in _gpu_keys(list(owned_raw), "owned"):
        o = owned_raw[g]
        if isinstance(o, OwnedGPU):
            o = dataclasses.asdict(o)
        where = f"owned.{g}"
        owned.append((g, OwnedGPU(
            purchase_usd=check_range(f"{where}.purchase_usd", o.get("purchase_usd"), 0.0, 1e7),
            lifetime_years=check_range(f"{where}.lifetime_years", o.get("lifetime_years"), 0.25, 30.0),
            power_w=check_range(f"{where}.power_w", o.get("power_w"), 0.0, 10_000.0),
            usd_per_kwh=check_range(f"{where}.usd_per_kwh", o.get("usd_per_kwh"), 0.0, 10.0),
            pue=check_range(f"{where}.pue", o.get("pue", OwnedGPU.pue), 1.0, 5.0))))
    weights = tuple(check_choice("weights", w, WEIGHT_FORMATS) for w in data.get("weights", d.weights))
    kv_dtypes = tuple(check_choice("kv_dtypes", k, KV_DTYPES) for k in data.get("kv_dtypes", d.kv_dtypes))
    if not weights or not kv_dtypes:
        raise CalcError("weights and kv_dtypes must each name at least one format", "weights" if not weights
                        else "kv_dtypes")
    acceptance = data.get("speculation_acceptance")
    if acceptance is not None:
        acceptance = check_range("speculation_acceptance", acceptance, 0.0, 0.99)
    max_len = _number(data, "max_model_len", 16, _MAX_TOKENS, None, integer=True, optional=True)
    req = PlanRequest(
        model=model, engine=engine, peak_rate_per_s=peak, mean_rate_per_s=mean, classes=classes, trace=trace,
        targets=targets, gpus=gpus, gpu_budget=budget, prices_usd_per_gpu_hour=prices, owned=tuple(owned),
        weights=tuple(dict.fromkeys(weights)), kv_dtypes=tuple(dict.fromkeys(kv_dtypes)),
        speculation_acceptance=acceptance, max_model_len=max_len,
        seed=_number(data, "seed", 0, 2**32 - 1, d.seed, integer=True),
        requests=_number(data, "requests", 50, 200_000, None, integer=True, optional=True),
        parameter_count=check_choice("parameter_count", data.get("parameter_count", d.parameter_count),
                                     ("exact", "lesson")),
        name=str(data.get("name", "")))
    if max_len is not None and req.longest_request_tokens() > max_len:
        raise CalcError(f"max_model_len must hold the longest request ({req.longest_request_tokens():,} tokens); "
                        f"got {max_len:,}", "max_model_len")
    return req


_TRACE_COLUMNS = ("arrival_s", "prompt_tokens", "answer_tokens", "prefix_group", "prefix_tokens")


def read_trace(text: str) -> list[dict]:
    """Rows of a CSV trace as dicts for :func:`request_from_dict` (``trace``).

    Columns, by header name: ``arrival_s`` (seconds from the start), ``prompt_tokens``, ``answer_tokens``,
    optionally ``prefix_group`` (requests of one group share a leading prefix) and ``prefix_tokens`` (its
    length). A file without a header takes the columns in that order.

    >>> read_trace("arrival_s,prompt_tokens,answer_tokens,prefix_group\\n0.0,100,20,a\\n0.5,80,30,")[1]
    {'arrival_s': 0.5, 'prompt_tokens': 80, 'answer_tokens': 30, 'prefix_group': '', 'prefix_tokens': 0}
    >>> read_trace("0,x,20")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: trace line 1: prompt_tokens must be a number; got 'x'
    """
    reader = csv.reader(io.StringIO(text))
    rows = [r for r in reader if r and any(cell.strip() for cell in r)]
    if not rows:
        raise CalcError("trace must hold at least one row; got an empty file", "trace")
    header = [c.strip() for c in rows[0]]
    if header[0] == "arrival_s":
        unknown = [c for c in header if c not in _TRACE_COLUMNS]
        if unknown:
            raise CalcError(f"trace: unknown column {unknown[0]!r}; allowed: {', '.join(_TRACE_COLUMNS)}", "trace")
        columns, body, first = header, rows[1:], 2
    else:
        columns, body, first = list(_TRACE_COLUMNS[:len(header)]), rows, 1
    out = []
    for n, row in enumerate(body, first):
        cells = dict(zip(columns, (c.strip() for c in row)))
        item = {}
        for key in ("arrival_s", "prompt_tokens", "answer_tokens", "prefix_tokens"):
            raw = cells.get(key, "0" if key == "prefix_tokens" else None)
            if raw is None or raw == "":
                raw = "0" if key == "prefix_tokens" else None
            if raw is None:
                raise CalcError(f"trace line {n}: {key} is missing", "trace")
            try:
                value = float(raw)
            except ValueError:
                raise CalcError(f"trace line {n}: {key} must be a number; got {raw!r}", "trace") from None
            item[key] = value if key == "arrival_s" else int(value)
        item["prefix_group"] = cells.get("prefix_group", "")
        out.append({k: item[k] for k in _TRACE_COLUMNS})
    return out


def allowed_gpus(request: PlanRequest) -> tuple:
    """The GPUs the plan may use: the request's list, else every catalog GPU (each then needs a price).

    >>> allowed_gpus(PlanRequest(gpus=("h200",)))
    ('h200',)
    >>> len(allowed_gpus(PlanRequest())) == len(GPUS)
    True
    """
    return request.gpus or tuple(GPUS)


def gpu_name(key: str) -> str:
    """The catalog's name of a GPU key.

    >>> gpu_name("h100-sxm-80gb")
    'H100 SXM 80GB'
    """
    return get_gpu(key).name

