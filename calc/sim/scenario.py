"""A simulation scenario as data: one replica's hardware and engine settings, its traffic, a seed.

A scenario is a plain JSON object. Every key is optional; a missing key takes
the default below (the lesson's running example: Llama 3.1 70B in bf16 on four
H100s, vLLM-like defaults, Poisson traffic of 1,024-token prompts and 256-token
answers). ``Scenario.from_dict`` checks every field and names the one at fault,
its value and what is allowed; unknown keys are refused with the list of known
ones. ``to_dict`` gives back the full JSON, defaults filled in.

Schema (top level):

=========================== =================== ==========================================================
key                         default             allowed
=========================== =================== ==========================================================
model                       "llama-3.1-70b"     a catalog key (``python -m calc model``)
gpu                         "h100-sxm-80gb"     a catalog key
tp                          4                   GPUs per replica (tensor parallel), dividing the heads
weights                     "bf16"              bf16, fp16, fp8, int8, int4, nf4
kv_dtype                    "bf16"              bf16, fp16, fp8
gpu_memory_utilization      0.9                 0.05 to 1: vLLM's share of each GPU
engine                      "vllm"              an engine profile (calc.engine_profiles: its step and request costs)
frontend                    "api-server"        api-server (served: every token streamed to its client, the
                                                profile's per-sequence step cost applies) or offline
                                                (LLM.generate, benchmark_throughput: no per-sequence cost)
memory_basis                "marketed"          marketed (80e9 B for an H100, the lesson's count) or runtime
expert_parallel             false               true: a mixture-of-experts model's routed experts split whole
                                                across the ``tp`` GPUs (vLLM --enable-expert-parallel;
                                                calc.moe); refused by name on a dense model
kv_cache_tokens             null                override the KV capacity (tokens for the replica)
parameter_count             "exact"             how the KV sizing weighs the weights: exact (every tensor of
                                                the model's shape) or lesson (16-bit weights with the
                                                parameter count rounded to 3 digits, as the lesson's step 1:
                                                calc.lesson.weighs_rounded); every lesson preset sets lesson
block_size                  16                  tokens per KV block, 1 to 1024
max_model_len               8192                prompt + answer limit, 16 to 10,000,000
max_num_seqs                256                 cap on running requests
max_num_batched_tokens      8192                token budget per step
chunked_prefill             true                false: whole prompts in prefill-only steps
allocation                  "paged"             paged, or contiguous (reserve max_model_len per request)
prefix_caching              false               reuse KV blocks of shared system prompts
speculation                 null                null, "eagle-like", "eagle3-like", "draft-1b", or {k, acceptance, draft,
                                                branching, verify_tokens, draft_cost_ratio} (draft_cost_ratio
                                                null: the draft's cost derived from its shape)
batching                    "continuous"        continuous, or static (fixed batches, padded)
static_batch_size           8                   batch size of static batching
gpu_price_usd_per_hour      null                per GPU; null takes the catalog's dated price, if any
request_overhead_s          null                0 to 10 s: a request is schedulable this long after it is
                                                sent (API server, tokenization); null: the hardware profile's
sample_interval_s           1.0                 time-series spacing (simulated seconds)
max_time_series_points      600                 the series is thinned to stay under this
seed                        0                   0 to 2**32 - 1: drives every random draw
name, description           ""                  free text
workload                    (below)
=========================== =================== ==========================================================

``workload``: ``arrival`` (poisson, bursty, all-at-once, closed-loop; default poisson),
``concurrency`` (closed-loop only, required there: 1 to 100,000 clients, each
sending its next request when its previous one finishes), ``think_time_s``
(closed-loop: 0, a client's pause between a finish and its next send),
``rate_per_s`` (5: about three quarters of what the lesson's replica sustains, :func:`calc.gpu_util.replica_capacity_rps`), ``requests`` (1000), ``duration_s`` (null: no time limit),
``burstiness`` (4: squared coefficient of variation of bursty gaps) and either
``classes`` (a list of request classes) or the keys of a single class directly:
``name`` ("chat"), ``share`` (1), ``lengths`` (fixed, chat, lognormal),
``prompt_tokens`` (1024), ``output_tokens`` (256), ``prefix_tokens`` (0: a shared
system prompt put before every prompt), ``prefix_variants`` (1).

>>> s = Scenario.from_dict({"tp": 8, "workload": {"rate_per_s": 2, "prompt_tokens": 500}})
>>> s.tp, s.workload.rate_per_s, s.workload.classes[0].prompt_tokens, s.max_num_seqs
(8, 2, 500, 256)
>>> Scenario.from_dict({"tp": 8, "colour": "red"})
Traceback (most recent call last):
...
calc.errors.CalcError: unknown key 'colour' in scenario; allowed: allocation, batching, block_size, chunked_prefill, description, engine, expert_parallel, frontend, gpu, gpu_memory_utilization, gpu_price_usd_per_hour, kv_cache_tokens, kv_dtype, max_model_len, max_num_batched_tokens, max_num_seqs, max_time_series_points, memory_basis, model, name, parameter_count, prefix_caching, request_overhead_s, sample_interval_s, seed, speculation, static_batch_size, tp, weights, workload
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import asdict, dataclass, field, fields

from calc.catalog.gpu import MEMORY_BASES
from calc.errors import CalcError, check_choice, check_range
from calc.lesson import PARAMETER_COUNTS
from calc.memory import KV_DTYPES, WEIGHT_FORMATS
from calc.sim.kv_blocks import ALLOCATIONS
from calc.sim.workload import (ARRIVALS, CLOSED_LOOP, LENGTH_KINDS, MAX_CONCURRENCY, RequestClass, Workload,
                               check_class_fits)
from calc.engine_profiles import DEFAULT_ENGINE, DEFAULT_FRONTEND, ENGINES, FRONTENDS
from calc.speculative import DRAFT_SHAPES, EAGLE3_LIKE, EAGLE_LIKE, SEPARATE_DRAFT_LIKE, SpeculationConfig

__all__ = ["BATCHING", "SPECULATION_PRESETS", "Scenario", "load_scenario", "dump_scenario"]

BATCHING = ("continuous", "static")
#: Named speculation set-ups (:data:`calc.speculative.METHODS`): each draft's cost is derived from its shape.
SPECULATION_PRESETS = {"eagle-like": EAGLE_LIKE, "eagle3-like": EAGLE3_LIKE, "draft-1b": SEPARATE_DRAFT_LIKE}
_BIG = 10_000_000
#: Upper end of ``request_overhead_s`` (s): far above any published API-server and tokenization time.
MAX_REQUEST_OVERHEAD_S = 10.0


@dataclass(frozen=True)
class Scenario:
    """Everything one simulation run needs; see the module docstring for the schema.

    >>> Scenario().workload.classes[0].output_tokens
    256
    """

    model: str = "llama-3.1-70b"
    gpu: str = "h100-sxm-80gb"
    tp: int = 4
    weights: str = "bf16"
    kv_dtype: str = "bf16"
    gpu_memory_utilization: float = 0.9
    engine: str = DEFAULT_ENGINE
    frontend: str = DEFAULT_FRONTEND
    memory_basis: str = "marketed"
    expert_parallel: bool = False
    kv_cache_tokens: int | None = None
    parameter_count: str = "exact"
    block_size: int = 16
    max_model_len: int = 8192
    max_num_seqs: int = 256
    max_num_batched_tokens: int = 8192
    chunked_prefill: bool = True
    allocation: str = "paged"
    prefix_caching: bool = False
    speculation: SpeculationConfig | None = None
    batching: str = "continuous"
    static_batch_size: int = 8
    gpu_price_usd_per_hour: float | None = None
    request_overhead_s: float | None = None
    sample_interval_s: float = 1.0
    max_time_series_points: int = 600
    seed: int = 0
    name: str = ""
    description: str = ""
    workload: Workload = field(default_factory=Workload)

    # --------------------------------------------------------------- loading
    @classmethod
    def from_dict(cls, data: dict) -> "Scenario":
        """A validated scenario from a JSON-like dict (missing keys take their defaults)."""
        data = _mapping(data, "scenario")
        allowed = {f.name for f in fields(cls)}
        _reject_unknown(data, allowed, "scenario")
        d = Scenario()
        get = data.get

        def choice(key, options):
            return check_choice(key, get(key, getattr(d, key)), options)

        def integer(key, low, high):
            return check_range(key, get(key, getattr(d, key)), low, high, integer=True)

        def number(key, low, high):
            return check_range(key, get(key, getattr(d, key)), low, high)

        def flag(key):
            value = get(key, getattr(d, key))
            if not isinstance(value, bool):
                raise CalcError(f"{key} must be true or false; got {value!r}", key)
            return value

        def text(key, default=""):
            value = get(key, default)
            if not isinstance(value, str):
                raise CalcError(f"{key} must be a string; got {value!r}", key)
            return value

        kv_tokens = get("kv_cache_tokens")
        if kv_tokens is not None:
            kv_tokens = check_range("kv_cache_tokens", kv_tokens, 1, 10**12, integer=True)
        price = get("gpu_price_usd_per_hour")
        if price is not None:
            price = check_range("gpu_price_usd_per_hour", price, 0, 1e6)
        overhead = get("request_overhead_s")
        if overhead is not None:
            overhead = check_range("request_overhead_s", overhead, 0.0, MAX_REQUEST_OVERHEAD_S)
        scenario = cls(
            model=text("model", d.model) or d.model,
            gpu=text("gpu", d.gpu) or d.gpu,
            tp=integer("tp", 1, 1024),
            weights=choice("weights", WEIGHT_FORMATS),
            kv_dtype=choice("kv_dtype", KV_DTYPES),
            gpu_memory_utilization=number("gpu_memory_utilization", 0.05, 1.0),
            engine=choice("engine", ENGINES),
            frontend=choice("frontend", FRONTENDS),
            memory_basis=choice("memory_basis", MEMORY_BASES),
            expert_parallel=flag("expert_parallel"),
            kv_cache_tokens=kv_tokens,
            parameter_count=choice("parameter_count", PARAMETER_COUNTS),
            block_size=integer("block_size", 1, 1024),
            max_model_len=integer("max_model_len", 16, _BIG),
            max_num_seqs=integer("max_num_seqs", 1, 1_000_000),
            max_num_batched_tokens=integer("max_num_batched_tokens", 1, 100_000_000),
            chunked_prefill=flag("chunked_prefill"),
            allocation=choice("allocation", ALLOCATIONS),
            prefix_caching=flag("prefix_caching"),
            speculation=_speculation(get("speculation")),
            batching=choice("batching", BATCHING),
            static_batch_size=integer("static_batch_size", 1, 1_000_000),
            gpu_price_usd_per_hour=price,
            request_overhead_s=overhead,
            sample_interval_s=number("sample_interval_s", 0.001, 1e6),
            max_time_series_points=integer("max_time_series_points", 2, 100_000),
            seed=integer("seed", 0, 2**32 - 1),
            name=text("name"),
            description=text("description"),
            workload=_workload(get("workload", {})),
        )
        scenario.check()
        return scenario

    def check(self) -> "Scenario":
        """Cross-field rules (lengths fit ``max_model_len``; vLLM's budget rules); returns ``self``.

        >>> Scenario.from_dict({"max_model_len": 1000})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: class 'chat': prefix_tokens + prompt_tokens + output_tokens = 1280 must be at most max_model_len 1000
        >>> Scenario.from_dict({"expert_parallel": True})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: expert_parallel needs a mixture-of-experts model; Llama 3.1 70B has no routed experts
        >>> moe = Scenario.from_dict({"model": "mixtral-8x7b", "tp": 2, "expert_parallel": True})
        >>> moe.to_dict()["expert_parallel"], "expert_parallel" in Scenario().to_dict()
        (True, False)
        """
        for c in self.workload.classes:
            check_class_fits(c, self.max_model_len)
        self.scheduler_config()  # raises on vLLM's budget rules
        if self.expert_parallel:  # a dense model, or experts tp does not divide: refused by name (calc.moe)
            from calc.moe import check_moe_parallelism

            check_moe_parallelism(self.model, tp=self.tp, expert_parallel=True)
        return self

    def scheduler_config(self):
        """The :class:`calc.sim.scheduler.SchedulerConfig` of this scenario."""
        from calc.sim.scheduler import SchedulerConfig

        return SchedulerConfig(
            max_num_seqs=self.max_num_seqs, max_num_batched_tokens=self.max_num_batched_tokens,
            block_size=self.block_size, max_model_len=self.max_model_len, chunked_prefill=self.chunked_prefill,
            allocation=self.allocation, prefix_caching=self.prefix_caching,
            tokens_per_decode=1 if self.speculation is None else self.speculation.verify_tokens)

    def replace(self, **changes) -> "Scenario":
        """A copy with some top-level keys (or ``workload`` keys, as a dict) changed, validated again.

        >>> Scenario().replace(tp=8, workload={"requests": 5}).workload.requests
        5
        """
        data = self.to_dict()
        wl = changes.pop("workload", None)
        data.update(changes)
        if wl:
            if "classes" not in wl and set(wl) & set(_CLASS_KEYS):
                cls = dict(data["workload"]["classes"][0])
                cls.update({k: v for k, v in wl.items() if k in _CLASS_KEYS})
                wl = {k: v for k, v in wl.items() if k not in _CLASS_KEYS}
                wl["classes"] = [cls]
            data["workload"].update(wl)
        return Scenario.from_dict(data)

    # --------------------------------------------------------------- dumping
    def to_dict(self) -> dict:
        """The full scenario as JSON-ready data (every key, defaults included).

        Four kinds of key are written only where they mean something: the
        closed loop's ``concurrency`` and ``think_time_s`` (with
        ``arrival`` closed-loop), ``request_overhead_s`` (when the scenario
        sets one; null is the hardware profile's, as when it is left out) and
        ``parameter_count`` (when it is not the default "exact": the lesson's presets) and ``frontend``
        (when it is not the default "api-server": the offline benchmark runs).

        >>> Scenario.from_dict(Scenario().to_dict()) == Scenario()
        True
        >>> closed = Scenario.from_dict({"request_overhead_s": 0.01, "workload": {"arrival": "closed-loop", "concurrency": 8}})
        >>> d = closed.to_dict(); d["request_overhead_s"], d["workload"]["concurrency"], "concurrency" in Scenario().to_dict()["workload"]
        (0.01, 8, False)
        >>> Scenario.from_dict(d) == closed
        True
        >>> Scenario.from_dict({"parameter_count": "lesson"}).to_dict()["parameter_count"], "parameter_count" in d
        ('lesson', False)
        >>> offline = Scenario.from_dict({"frontend": "offline"})
        >>> offline.to_dict()["frontend"], "frontend" in d, Scenario.from_dict(offline.to_dict()) == offline
        ('offline', False, True)
        >>> Scenario.from_dict({"frontend": "server"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: frontend must be one of api-server, offline; got 'server'
        >>> Scenario.from_dict({"parameter_count": "rounded"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: parameter_count must be one of lesson, exact; got 'rounded'
        """
        out = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if f.name == "request_overhead_s" and value is None:
                continue  # null is the hardware profile's: written only when the scenario sets its own
            if f.name == "parameter_count" and value == "exact":
                continue  # the default, left out so that files written before the key read the same
            if f.name == "frontend" and value == DEFAULT_FRONTEND:
                continue  # likewise: every scenario written before the key was served (api-server)
            if f.name == "expert_parallel" and not value:
                continue  # likewise: tensor-parallel experts (every scenario written before the key)
            if f.name == "workload":
                wl = value
                value = {
                    "arrival": wl.arrival, "rate_per_s": wl.rate_per_s, "requests": wl.requests,
                    "duration_s": wl.duration_s, "burstiness": wl.burstiness,
                    "classes": [asdict(c) for c in wl.classes],
                }
                if wl.arrival == CLOSED_LOOP:  # the client's keys, written where they mean something
                    value["concurrency"] = wl.concurrency
                    value["think_time_s"] = wl.think_time_s
            elif f.name == "speculation" and value is not None:
                value = _speculation_data(value)
            out[f.name] = value
        return out


_CLASS_KEYS = tuple(f.name for f in fields(RequestClass))
_WORKLOAD_KEYS = ("arrival", "rate_per_s", "requests", "duration_s", "burstiness", "classes", "concurrency",
                  "think_time_s")


def _mapping(data, where: str) -> dict:
    if not isinstance(data, dict):
        raise CalcError(f"{where} must be a JSON object; got {type(data).__name__}", where)
    return data


def _reject_unknown(data: dict, allowed, where: str) -> None:
    for key in data:
        if key not in allowed:
            raise CalcError(f"unknown key {key!r} in {where}; allowed: {', '.join(sorted(allowed))}", key)


def _speculation_data(config: SpeculationConfig) -> dict:
    """A speculation config as scenario JSON: the explicit object (a preset's reads back as that preset)."""
    return {"k": config.k, "acceptance": config.acceptance, "draft_cost_ratio": config.draft_cost_ratio,
            "draft": config.draft.key if config.draft else None, "branching": config.branching,
            "verify_tokens": config.verify_tokens, "source": config.source}


_SPECULATION_KEYS = ("k", "acceptance", "draft_cost_ratio", "draft", "branching", "verify_tokens", "source")


def _speculation(value) -> SpeculationConfig | None:
    """The scenario's speculation: a preset by name, or an object (missing keys take EAGLE_LIKE's).

    Without ``draft_cost_ratio`` (or with null) the draft's cost is derived from the shape
    ``draft`` names (:data:`calc.speculative.DRAFT_SHAPES`); a number overrides it.

    >>> _speculation({"k": 2}).draft.key, _speculation({"draft_cost_ratio": 0.2}).draft_cost_ratio
    ('eagle', 0.2)
    >>> _speculation({"draft": "medusa"})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: speculation.draft must be one of eagle, eagle3, llama-3.2-1b; got 'medusa'
    """
    if value is None:
        return None
    if isinstance(value, str):
        if value not in SPECULATION_PRESETS:
            raise CalcError(f"speculation must be null, one of {', '.join(SPECULATION_PRESETS)}, or an object "
                            f"with k, acceptance, draft_cost_ratio; got {value!r}", "speculation")
        return SPECULATION_PRESETS[value]
    value = _mapping(value, "speculation")
    _reject_unknown(value, _SPECULATION_KEYS, "speculation")
    k = check_range("speculation.k", value.get("k", EAGLE_LIKE.k), 1, 16, integer=True)
    a = check_range("speculation.acceptance", value.get("acceptance", EAGLE_LIKE.acceptance), 0.0, 1.0)
    c = value.get("draft_cost_ratio")  # null: derived from the draft's shape
    if c is not None:
        c = check_range("speculation.draft_cost_ratio", c, 0.0, 10.0)
    draft_key = value.get("draft", EAGLE_LIKE.draft.key)
    if draft_key not in DRAFT_SHAPES:
        raise CalcError(f"speculation.draft must be one of {', '.join(DRAFT_SHAPES)}; got {draft_key!r}",
                        "speculation.draft")
    branching = check_range("speculation.branching", value.get("branching", 1), 1, 64, integer=True)
    v = value.get("verify_tokens")  # null: a chain of k + 1
    if v is not None:
        v = check_range("speculation.verify_tokens", v, k + 1, 256, integer=True)
    source = value.get("source", "given in the scenario")
    if not isinstance(source, str):
        raise CalcError(f"speculation.source must be a string; got {source!r}", "speculation.source")
    config = SpeculationConfig(acceptance=a, k=k, draft_cost_ratio=c, source=source, verify_tokens=v,
                               draft=DRAFT_SHAPES[draft_key], branching=branching)
    for preset in SPECULATION_PRESETS.values():  # a preset written out in full is that preset
        if dataclasses.replace(config, key=preset.key) == preset:
            return preset
    return config


def _request_class(data: dict, where: str) -> RequestClass:
    data = _mapping(data, where)
    _reject_unknown(data, _CLASS_KEYS, where)
    d = RequestClass()
    name = data.get("name", d.name)
    if not isinstance(name, str):
        raise CalcError(f"{where}.name must be a string; got {name!r}", f"{where}.name")

    def integer(key, low, high):
        return check_range(f"{where}.{key}", data.get(key, getattr(d, key)), low, high, integer=True)

    return RequestClass(
        name=name,
        share=check_range(f"{where}.share", data.get("share", d.share), 0.0, 1e6),
        lengths=check_choice(f"{where}.lengths", data.get("lengths", d.lengths), LENGTH_KINDS),
        prompt_tokens=integer("prompt_tokens", 1, _BIG),
        output_tokens=integer("output_tokens", 1, _BIG),
        prefix_tokens=integer("prefix_tokens", 0, _BIG),
        prefix_variants=integer("prefix_variants", 1, 1_000_000),
    )


def _workload(data) -> Workload:
    data = _mapping(data, "workload")
    _reject_unknown(data, set(_WORKLOAD_KEYS) | set(_CLASS_KEYS), "workload")
    d = Workload()
    class_keys = {k: v for k, v in data.items() if k in _CLASS_KEYS}
    if "classes" in data:
        if class_keys:
            raise CalcError(f"workload: give either classes or the keys of one class ({', '.join(class_keys)}), "
                            "not both", "workload.classes")
        raw = data["classes"]
        if not isinstance(raw, list) or not raw:
            raise CalcError(f"workload.classes must be a non-empty list of request classes; got {raw!r}",
                            "workload.classes")
        classes = tuple(_request_class(c, f"workload.classes[{i}]") for i, c in enumerate(raw))
    else:
        classes = (_request_class(class_keys, "workload"),)
    if not sum(c.share for c in classes) > 0:
        raise CalcError("workload.classes: the shares must add up to more than 0", "workload.classes")
    duration = data.get("duration_s")
    if duration is not None:
        duration = check_range("workload.duration_s", duration, 0.001, 1e9)
    arrival = check_choice("workload.arrival", data.get("arrival", d.arrival), ARRIVALS)
    concurrency = data.get("concurrency")
    if arrival == CLOSED_LOOP and concurrency is None:
        raise CalcError(f"workload.concurrency (the closed loop's clients) must be a whole number between 1 and "
                        f"{MAX_CONCURRENCY} for arrival closed-loop; got none", "workload.concurrency")
    if concurrency is not None:
        concurrency = check_range("workload.concurrency", concurrency, 1, MAX_CONCURRENCY, integer=True)
    think_time_s = check_range("workload.think_time_s", data.get("think_time_s", d.think_time_s), 0.0, 1e6)
    if arrival != CLOSED_LOOP:  # the client's keys mean nothing to an open kind: checked, then left at their defaults
        concurrency, think_time_s = d.concurrency, d.think_time_s
    return Workload(
        arrival=arrival,
        concurrency=concurrency,
        think_time_s=think_time_s,
        rate_per_s=check_range("workload.rate_per_s", data.get("rate_per_s", d.rate_per_s), 1e-6, 1e6),
        requests=check_range("workload.requests", data.get("requests", d.requests), 1, _BIG, integer=True),
        duration_s=duration,
        burstiness=check_range("workload.burstiness", data.get("burstiness", d.burstiness), 1.0, 1000.0),
        classes=classes,
    )


def load_scenario(path: str) -> Scenario:
    """Read a scenario from a JSON file; CalcError (field ``scenario``) for unreadable or malformed files.

    >>> load_scenario("/nonexistent.json")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: scenario file /nonexistent.json cannot be read: No such file or directory
    """
    try:
        with open(path, encoding="utf-8") as handle:
            text = handle.read()
    except OSError as exc:
        raise CalcError(f"scenario file {path} cannot be read: {exc.strerror}", "scenario") from None
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CalcError(f"scenario file {path} is not valid JSON: {exc.msg} at line {exc.lineno}", "scenario") from None
    return Scenario.from_dict(data)


def dump_scenario(scenario: Scenario) -> str:
    """The scenario as indented JSON with sorted keys (stable across runs).

    >>> json.loads(dump_scenario(Scenario()))["workload"]["arrival"]
    'poisson'
    """
    return json.dumps(scenario.to_dict(), indent=2, sort_keys=True)
