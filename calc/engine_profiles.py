"""What a serving engine adds to the roofline: fixed step costs and a fixed request cost, per engine.

The roofline (:mod:`calc.roofline`) prices the GPU's work. A real engine also spends time the roofline
never counts, and engines differ in how much:

* ``step_overhead_s``: every engine step's fixed cost (scheduling, preparing the step's inputs, kernel
  launches, sampling). vLLM's v0.6.0 post found the GPU busy only 38% of the time in v0.5.3 (API server
  33%, scheduling 29%) for Llama 3 8B on one H100; v0.6.0 cut much of that, not all.
* ``tp_step_overhead_s``: more per step for each tensor-parallel GPU beyond the first (the driver hands
  each step's inputs to every worker and waits for all of them). The all-reduces themselves are priced
  by the roofline's alpha-beta term, with the latency measured for the GPU count
  (:func:`allreduce_latency_s`) instead of the lesson's round 10 us, and their bytes at the measured
  bus bandwidth of the engine's all-reduce kernel (:data:`ALLREDUCE_BUS_EFFICIENCY`, about 40% of the
  NVLink figure at prefill-sized messages of 1-4 MiB) instead of the link's full figure.

Why the lesson's pages keep the pure roofline (:data:`calc.roofline.CALIBRATED`, no fixed terms, 10 us
all-reduces): they teach where a step's time goes on the GPU (weights, KV, FLOPs against the roofs), and
the figures they quote (the cheat sheet's ITL, ten times the batch nearly ten times cheaper) are that
model's. The simulator prices an engine, so it adds the engine's terms; pages that show a simulation show
the engine's numbers.
* ``seq_overhead_s``: more per step for each sequence scheduled in it (decoding ones and prefill chunks).
  A Python engine's CPU does per-sequence work every step: vLLM's v0.6.0 post lists input preparation,
  sampling, detokenization and output processing per sequence; SGLang's median ITL on one A100 rises about
  0.2 ms per extra running sequence where the roofline's KV term adds 0.03 ms; LMDeploy's static benchmark
  gives 0.05 ms per sequence (7B, TP1) and 0.13 ms (70B, TP4). It is what makes TPOT grow with the batch
  faster than the GPU's work does. Fitted where a calibration row at a large batch identifies it, inherited
  by the other Python engines, 0 for the C++ runtime (assumptions, said in the profile). It is the
  serving path's cost (:data:`FRONTENDS`): a request served through the engine's OpenAI API server streams
  every token to its client (per sequence per step: detokenize, build the delta, serialize, send; vLLM's
  V1 output processor does it in the API server's event loop, where pull request #12287 had to break it up
  so as not to block it; pull request #8335 measured streaming at 6% of TPOT for Llama 3.1 8B on an H100).
  Offline runs (``LLM.generate``, ``benchmark_throughput``: no server, no streaming) do not pay it: with it
  vLLM's nightly ``benchmark_throughput`` rows at 200 sequences come out 28-37% short, without it 10-24%
  (:func:`efficiency_for` ``frontend``).
* ``request_overhead_s``: each request's fixed cost between its send and the moment the engine can
  schedule it (HTTP, tokenization, the engine's input queue). It adds to TTFT and end-to-end latency, not
  to any step. Under ``scheduler_steps`` > 1 (vLLM 0.6's multi-step scheduling) a request also waits for
  the running multi-step window to end; that wait is not in this constant: the simulator runs the windows
  step by step, each step priced at its batch (:data:`MULTI_STEP_SOURCE`, :mod:`calc.sim.scheduler`).

Besides the fitted constants a profile says how its engine's scheduler fills a step, where engines differ
by design rather than by a cost: ``context_chunking`` (default on, vLLM V1's chunked prefill) is off for
TensorRT-LLM, whose in-flight batching admits a prompt only whole, beside the decodes, when it fits the
step's token budget (:class:`calc.sim.scheduler.SchedulerConfig`); the profile's ``scheduler`` entry in
the JSON gives the value and its source. :func:`calc.sim.fleet.build_replica` applies it.

Each constant is fitted by :mod:`calc.latency_fit` on that engine's ``calibration`` rows of
``calc/data/measurements.json`` only, or inherited from a named profile (an assumption, said in its
``sources``); the fitted values live in ``calc/data/engine_profiles.json``. ``vllm`` is the lesson's
engine and the simulator's default (:class:`calc.sim.Scenario` ``engine``).

>>> p = get_profile("vllm")
>>> p.key, p.scheduler_steps, p.step_overhead_s > 0
('vllm', 1, True)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, replace

from calc import parallel
from calc.errors import CalcError, check_choice, check_range

__all__ = ["ENGINES", "FITTED_ENGINES", "DEFAULT_ENGINE", "MULTI_STEP_SOURCE", "FRONTENDS", "DEFAULT_FRONTEND", "TERMS", "EngineProfile", "PROFILES_PATH", "load_profiles", "get_profile",
           "efficiency_for", "allreduce_latency_s", "engine_coefficients", "request_overhead_s",
           "ALLREDUCE_PREFILL_MEASURED_S", "ALLREDUCE_BUS_EFFICIENCY_SOURCE", "ALLREDUCE_BUS_EFFICIENCY", "CUSTOM_ALLREDUCE_MAX_BYTES", "TWO_STAGE_ALLREDUCE_MIN_BYTES",
           "ALLREDUCE_BUS_EFFICIENCY_GPUS", "ALLREDUCE_BUS_EFFICIENCY_MIN_GPUS", "prefill_allreduce_terms",
           "measured_allreduce_bus_efficiency"]

#: How ``scheduler_steps`` > 1 is priced (``python -m calc step`` prints it): not as a constant, but by the
#: simulator's scheduler (:mod:`calc.sim.scheduler`), from vLLM v0.6.0's source.
MULTI_STEP_SOURCE = ("vLLM v0.6.0 (vllm/engine/llm_engine.py step: the scheduler runs only when the window's steps "
                     "are done; vllm/core/scheduler.py: a prefill step is a window of one, decodes get "
                     "num_scheduler_steps; vllm/engine/output_processor/multi_step.py: tokens past an answer's end "
                     "are computed and dropped): simulated step by step (calc.sim.scheduler), not a constant")

PROFILES_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "data", "engine_profiles.json")
#: The fitted or inherited constants of a profile, in the order they are fitted.
TERMS = ("step_overhead_s", "tp_step_overhead_s", "seq_overhead_s", "request_overhead_s")
DEFAULT_ENGINE = "vllm"
#: How requests reach the engine: through its OpenAI API server (served, every token streamed to its client:
#: the profile's ``seq_overhead_s`` applies) or ``offline`` (``LLM.generate`` in the caller's process, as
#: vLLM's ``benchmark_throughput``: no per-sequence serving cost). Served is the default (the lesson's replica).
FRONTENDS = ("api-server", "offline")
DEFAULT_FRONTEND = "api-server"

#: Measured time of one bf16 all-reduce of prefill-sized activations (Llama 70B's hidden 8,192 x 64 / 128 /
#: 256 tokens = 1 / 2 / 4 MiB) on 4 H100s by vLLM's custom all-reduce, two-stage kernel: 0.018 / 0.027 /
#: 0.043 ms. Source: vllm-project/vllm pull request #24111 ("Enable Torch Symmetric Memory All-Reduce By
#: Default", 2025-09-02), H100 TP=4 table, column ca_2stage. The two-stage kernel is the one that runs there:
#: vLLM's custom all-reduce (csrc/custom_all_reduce.cuh, also SGLang 0.3's) takes the one-stage kernel only
#: below 512 KiB on 4 fully NVLinked GPUs (256 KiB on 8) and the two-stage one above, up to its 8 MiB
#: limit; decode steps (a few KiB) stay on the latency term. Role: assumption (sourced, not fitted; the
#: 2025 kernel on H100 stands in for the 2024 engines and for A100's NVLink).
ALLREDUCE_PREFILL_MEASURED_S = {1 << 20: 18e-6, 2 << 20: 27e-6, 4 << 20: 43e-6}
ALLREDUCE_PREFILL_MEASURED_GPUS = 4
ALLREDUCE_PREFILL_MEASURED_LINK_BYTES_PER_S = 450e9  # H100 SXM NVLink 4, one direction (calc.catalog)
#: Where vLLM's custom all-reduce switches from its one-stage to its two-stage kernel on fully NVLinked
#: GPUs, by GPU count (csrc/custom_all_reduce.cuh): one-stage below 512 KiB on up to 4 GPUs, 256 KiB on up
#: to 8. Below it the measured small-message latency (:func:`calc.parallel.allreduce_latency_s`) prices
#: the message, its bytes at the link's figure, as before.
TWO_STAGE_ALLREDUCE_MIN_BYTES = parallel.TWO_STAGE_ALLREDUCE_MIN_BYTES
#: The custom all-reduce's size limit (vLLM's CustomAllreduce max_size, 8 MiB): larger messages go to NCCL,
#: whose large-message bus bandwidth stays at the link's figure here (as on the lesson's roofline).
CUSTOM_ALLREDUCE_MAX_BYTES = parallel.CUSTOM_ALLREDUCE_MAX_BYTES
#: Where the measured share applies: the GPUs with the measured NVLink 4 (H100 SXM and H200, 450 GB/s one
#: way), on 3 GPUs or more (vLLM's two-stage kernel; on 2 GPUs it always takes the one-stage kernel, not
#: measured here). Elsewhere (A100's NVLink 3, PCIe, two GPUs) the link's figure stays: no measurement.
ALLREDUCE_BUS_EFFICIENCY_GPUS = ("h100-sxm-80gb", "h200")
ALLREDUCE_BUS_EFFICIENCY_MIN_GPUS = 3
ALLREDUCE_BUS_EFFICIENCY_SOURCE = ("vLLM custom all-reduce (two-stage) on 4 H100s, 1 / 2 / 4 MiB bf16: 18 / 27 / "
                                   "43 us (vllm-project/vllm pull request #24111, H100 TP=4 table, ca_2stage), "
                                   "less the 9.2 us small-message latency, over NVLink's 450 GB/s")


def measured_allreduce_bus_efficiency() -> float:
    """The share of NVLink's bandwidth the ring's bytes move at in a prefill-sized all-reduce.

    For each measured size: ``2 (n-1)/n x bytes / (measured time - small-message latency)`` (the bus
    bandwidth of the alpha-beta model, :func:`calc.parallel.allreduce_time_s`) over the link's 450 GB/s;
    the mean of the three. Source: :data:`ALLREDUCE_PREFILL_MEASURED_S`.

    >>> round(measured_allreduce_bus_efficiency(), 3)
    0.401
    """
    from calc.parallel import allreduce_bytes_on_wire, allreduce_latency_s as small_message_s

    latency = small_message_s(ALLREDUCE_PREFILL_MEASURED_GPUS)
    shares = [allreduce_bytes_on_wire(size, ALLREDUCE_PREFILL_MEASURED_GPUS) / (seconds - latency)
              / ALLREDUCE_PREFILL_MEASURED_LINK_BYTES_PER_S for size, seconds in ALLREDUCE_PREFILL_MEASURED_S.items()]
    return sum(shares) / len(shares)


#: What every engine profile's all-reduces move their bytes at, as a share of the GPU's link bandwidth.
ALLREDUCE_BUS_EFFICIENCY = measured_allreduce_bus_efficiency()


@dataclass(frozen=True)
class EngineProfile:
    """One engine's constants (seconds) with, per constant, its role and source.

    >>> EngineProfile("x", "X", 1, 0.001, 0.0, 0.01).step_overhead_s
    0.001
    >>> get_profile("nim-trtllm").context_chunking, get_profile("vllm").context_chunking
    (False, True)
    >>> get_profile("nim-trtllm").capacity_policy, get_profile("vllm").capacity_policy
    ('guaranteed-no-evict', 'preempt')
    >>> EngineProfile("x", "X", 1, 0.001, 0.0, 0.01, context_chunking="no")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: context_chunking must be true or false; got 'no'
    >>> EngineProfile("x", "X", 1, 0.001, 0.0, 0.01, seq_overhead_s=-0.001)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: seq_overhead_s must be between 0 and 0.01; got -0.001
    """

    key: str
    label: str
    scheduler_steps: int
    step_overhead_s: float
    tp_step_overhead_s: float
    request_overhead_s: float
    roles: tuple = ()
    sources: tuple = ()
    context_chunking: bool = True  # False: a prompt is admitted whole or waits (TensorRT-LLM's in-flight batching)
    context_chunking_source: str = "vLLM V1 always chunks prefills (calc.sim.scheduler)"
    capacity_policy: str = "preempt"  # or "guaranteed-no-evict": how admission books KV (calc.sim.scheduler)
    capacity_policy_source: str = "vLLM: admit on the prompt's blocks, preempt when short (calc.sim.scheduler)"
    seq_overhead_s: float = 0.0  # per sequence scheduled in a step (a keyword: the positional order stays as it was)
    memory_model: str = "vllm-v1"  # how the engine sizes its KV cache (calc.engine_memory, calc.engine_versions)
    inherits: str = ""  # a current engine's profile: the fitted profile whose step terms it takes (calc.engine_versions)

    def __post_init__(self):
        check_range("scheduler_steps", self.scheduler_steps, 1, 64, integer=True)
        if not isinstance(self.context_chunking, bool):
            raise CalcError(f"context_chunking must be true or false; got {self.context_chunking!r}",
                            "context_chunking")
        for term in TERMS:
            check_range(term, getattr(self, term), 0.0, 0.01 if term == "seq_overhead_s" else 10.0)

    def with_terms(self, **terms) -> "EngineProfile":
        """A copy with some constants changed (the fit tries values so).

        >>> get_profile("vllm").with_terms(step_overhead_s=0.0).step_overhead_s
        0.0
        """
        return replace(self, **terms)

    def term_rows(self) -> list[tuple[str, float, str, str]]:
        """(term, value s, role, source) for each constant, for ``python -m calc step``.

        >>> [t[0] for t in get_profile("vllm").term_rows()]
        ['step_overhead_s', 'tp_step_overhead_s', 'seq_overhead_s', 'request_overhead_s']
        """
        roles, sources = dict(self.roles), dict(self.sources)
        return [(term, getattr(self, term), roles.get(term, ""), sources.get(term, "")) for term in TERMS]


def load_profiles(path: str | None = None) -> dict:
    """Every profile of ``calc/data/engine_profiles.json``, by key.

    The current engines' profiles (:data:`calc.engine_versions.CURRENT_PROFILES`) are not stored: they
    take a fitted profile's terms (:func:`get_profile`).

    >>> sorted(load_profiles()) == sorted(FITTED_ENGINES)
    True
    """
    with open(path or PROFILES_PATH, encoding="utf-8") as handle:
        data = json.load(handle)
    out = {}
    for key, p in data["profiles"].items():
        scheduler = p.get("scheduler", {})
        chunking = scheduler.get("context_chunking", {"value": True, "source": EngineProfile.context_chunking_source})
        capacity = scheduler.get("capacity_policy", {"value": "preempt", "source": EngineProfile.capacity_policy_source})
        out[key] = EngineProfile(
            key=key, label=p["label"], scheduler_steps=p["scheduler_steps"],
            step_overhead_s=p["step_overhead_s"], tp_step_overhead_s=p["tp_step_overhead_s"],
            request_overhead_s=p["request_overhead_s"], seq_overhead_s=p["seq_overhead_s"],
            roles=tuple((t, p["terms"][t]["role"]) for t in TERMS),
            sources=tuple((t, p["terms"][t]["source"]) for t in TERMS),
            context_chunking=chunking["value"], context_chunking_source=chunking["source"],
            capacity_policy=capacity["value"], capacity_policy_source=capacity["source"],
            memory_model=_memory_model(key))
    return out


def _memory_model(key: str) -> str:
    from calc.engine_versions import VERSIONS

    return VERSIONS[key][3] if key in VERSIONS else "vllm-v1"


def _current_profile(key: str, parent: EngineProfile) -> EngineProfile:
    """A current engine's profile: its label and memory model, the fitted ``parent``'s step terms (assumptions)."""
    from calc.engine_versions import CURRENT_PROFILES

    label, _, _ = CURRENT_PROFILES[key]
    note = f"inherited from engine profile '{parent.key}' (no calibration rows of this version yet)"
    return replace(parent, key=key, label=label, roles=tuple((t, "assumption") for t in TERMS),
                   sources=tuple((t, note) for t in TERMS), memory_model=_memory_model(key), inherits=parent.key)


_PROFILES = load_profiles()
#: The profiles fitted on calibration rows (calc/data/engine_profiles.json)...
FITTED_ENGINES = tuple(_PROFILES)


def _current_keys() -> tuple:
    from calc.engine_versions import CURRENT_PROFILES

    return tuple(CURRENT_PROFILES)


#: ...and every profile a scenario may name: those plus the current engines' (calc.engine_versions).
ENGINES = FITTED_ENGINES + _current_keys()
# The fit swaps a trial profile in here while it simulates; nothing else writes it.
_TRIAL: dict = {}


def get_profile(engine: str = DEFAULT_ENGINE) -> EngineProfile:
    """The profile of ``engine`` (a trial one while :mod:`calc.latency_fit` fits it).

    >>> get_profile("nope")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: engine must be one of vllm, vllm-0.6-multistep, sglang-0.3, nim-trtllm, vllm-v1, vllm-mrv2, sglang-0.4, trtllm-serve; got 'nope'
    >>> p = get_profile("vllm-v1"); p.inherits, p.step_overhead_s == get_profile("vllm").step_overhead_s, p.roles[0]
    ('vllm', True, ('step_overhead_s', 'assumption'))
    """
    check_choice("engine", engine, ENGINES)
    if engine in FITTED_ENGINES:
        return _TRIAL.get(engine) or _PROFILES[engine]
    from calc.engine_versions import CURRENT_PROFILES

    return _TRIAL.get(engine) or _current_profile(engine, get_profile(CURRENT_PROFILES[engine][1]))


def efficiency_for(profile: EngineProfile, base=None, *, frontend: str = DEFAULT_FRONTEND):
    """The roofline's :class:`calc.roofline.Efficiency` with this engine's step overheads added.

    ``frontend`` (:data:`FRONTENDS`): the per-sequence term ``seq_overhead_s`` is the serving path's
    (streaming each token to its client), so only ``api-server`` carries it; ``offline`` has it at 0.

    >>> from calc.roofline import CALIBRATED
    >>> e = efficiency_for(get_profile("vllm"))
    >>> (e.compute, e.memory) == (CALIBRATED.compute, CALIBRATED.memory), e.step_overhead_s > 0
    (True, True)
    >>> round(e.seq_overhead_s * 1e6), efficiency_for(get_profile("vllm"), frontend="offline").seq_overhead_s
    (88, 0.0)
    >>> efficiency_for(get_profile("vllm"), frontend="batch")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: frontend must be one of api-server, offline; got 'batch'
    """
    from calc.roofline import CALIBRATED, Efficiency

    base = base or CALIBRATED
    if not isinstance(profile, EngineProfile):
        raise CalcError(f"profile must be an EngineProfile; got {profile!r}", "engine")
    check_choice("frontend", frontend, FRONTENDS)
    served = frontend == "api-server"
    return Efficiency(compute=base.compute, memory=base.memory, step_overhead_s=profile.step_overhead_s,
                      tp_step_overhead_s=profile.tp_step_overhead_s,
                      seq_overhead_s=profile.seq_overhead_s if served else 0.0,
                      source=f"{base.source}; step terms of engine profile '{profile.key}' (calc.engine_profiles)"
                             + ("" if served else "; offline: no per-sequence serving cost"))


def allreduce_latency_s(profile: EngineProfile, tp: int, gpu=None) -> float:
    """The all-reduce latency the engine pays on ``tp`` GPUs: the measured small-message figure for its link.

    Every profile takes vLLM's custom all-reduce on a fully meshed link (measured on H100: SGLang runs
    vLLM's kernel; TensorRT-LLM's own one-shot all-reduce is assumed as fast); over PCIe (``gpu`` a PCIe
    card) NCCL's ring runs beyond two GPUs, each of its 2 (n - 1) steps a PCIe hop
    (:func:`calc.parallel.interconnect_allreduce_latency_s`). Without ``gpu``: the full-mesh figure.
    Source: :data:`calc.parallel.ALLREDUCE_LATENCY_SOURCE`, :data:`calc.parallel.PCIE_RING_STEP_SOURCE`.

    >>> allreduce_latency_s(get_profile("vllm"), 4), round(allreduce_latency_s(get_profile("vllm"), 4, "l40s") * 1e6, 1)
    (9.2e-06, 22.2)
    """
    from calc.parallel import allreduce_latency_s as measured, interconnect_allreduce_latency_s

    if not isinstance(profile, EngineProfile):
        raise CalcError(f"profile must be an EngineProfile; got {profile!r}", "engine")
    if gpu is None:
        return measured(tp)
    from calc.catalog import get_gpu

    return interconnect_allreduce_latency_s(get_gpu(gpu).interconnect, tp)


def prefill_allreduce_terms(gpu: str, tp: int) -> tuple[float, float, float]:
    """(smallest and largest message in bytes, share of the link) of the two-stage custom all-reduce.

    The measured share (:data:`ALLREDUCE_BUS_EFFICIENCY`) above the two-stage threshold
    (:data:`TWO_STAGE_ALLREDUCE_MIN_BYTES`) up to :data:`CUSTOM_ALLREDUCE_MAX_BYTES`, where it was measured
    (:data:`ALLREDUCE_BUS_EFFICIENCY_GPUS`, at least :data:`ALLREDUCE_BUS_EFFICIENCY_MIN_GPUS`); elsewhere
    none (0 bytes: every message at the link's figure).

    >>> [round(x, 3) for x in prefill_allreduce_terms("h100-sxm-80gb", 4)], prefill_allreduce_terms("a100-40gb", 8)
    ([524288.0, 8388608.0, 0.401], (0.0, 0.0, 1.0))
    >>> prefill_allreduce_terms("h200", 8)[0], prefill_allreduce_terms("h200", 2)
    (262144.0, (0.0, 0.0, 1.0))
    """
    from calc.catalog import get_gpu

    key = get_gpu(gpu).key
    tp = check_range("tp", tp, 1, 100_000, integer=True)
    if key in ALLREDUCE_BUS_EFFICIENCY_GPUS and tp >= ALLREDUCE_BUS_EFFICIENCY_MIN_GPUS:
        threshold = next((TWO_STAGE_ALLREDUCE_MIN_BYTES[n] for n in sorted(TWO_STAGE_ALLREDUCE_MIN_BYTES) if tp <= n),
                         TWO_STAGE_ALLREDUCE_MIN_BYTES[max(TWO_STAGE_ALLREDUCE_MIN_BYTES)])
        return float(threshold), float(CUSTOM_ALLREDUCE_MAX_BYTES), ALLREDUCE_BUS_EFFICIENCY
    return 0.0, 0.0, 1.0


def engine_coefficients(model, gpu, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                        engine: str = DEFAULT_ENGINE, frontend: str = DEFAULT_FRONTEND):
    """:func:`calc.roofline.step_coefficients` with ``engine``'s terms: what the simulator prices a step with.

    Prefill-sized all-reduces (the two-stage kernel's, up to :data:`CUSTOM_ALLREDUCE_MAX_BYTES`) move their bytes at
    :data:`ALLREDUCE_BUS_EFFICIENCY` of the link where it was measured (:func:`prefill_allreduce_terms`; the
    lesson's roofline takes the link's full figure). ``frontend``: see :func:`efficiency_for` (``offline``:
    no per-sequence term).

    >>> c = engine_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4)
    >>> c.allreduce_latency_s, c.overhead_s() > 0, round(c.prefill_allreduce_bus_efficiency, 3)
    (9.2e-06, True, 0.401)
    >>> from calc.roofline import step_coefficients
    >>> lesson = step_coefficients("llama-3.1-70b", "h100-sxm-80gb", tp=4, allreduce_latency_s=9.2e-6,
    ...                            efficiency=c.efficiency)
    >>> round((c.comm_s(256) - lesson.comm_s(256)) * 1000, 2), c.comm_s(8192) == lesson.comm_s(8192), c.comm_s(8) == lesson.comm_s(8)
    (3.34, True, True)
    """
    from calc.memory import check_tp
    from calc.catalog import get_model
    from calc.roofline import step_coefficients

    profile = get_profile(engine)
    tp = check_tp(get_model(model), tp)
    prefill_min_bytes, prefill_max_bytes, prefill_share = prefill_allreduce_terms(gpu, tp)
    return step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                             efficiency=efficiency_for(profile, frontend=frontend),
                             allreduce_latency_s=allreduce_latency_s(profile, tp, gpu),
                             prefill_allreduce_min_bytes=prefill_min_bytes, prefill_allreduce_max_bytes=prefill_max_bytes,
                             prefill_allreduce_bus_efficiency=prefill_share)


def request_overhead_s(profile: EngineProfile, coefficients=None) -> float:
    """Seconds between a request's send and the moment it is schedulable on this replica: the fixed cost.

    ``profile.request_overhead_s`` (HTTP, tokenization, the engine's input queue). Under multi-step
    scheduling (``scheduler_steps`` > 1) the wait for the running window to end is not added here: the
    simulator admits a waiting request only at a window's end (:mod:`calc.sim.scheduler`, source
    :data:`MULTI_STEP_SOURCE`), with each of the window's steps priced at its batch, so counting it here too
    would count it twice. ``coefficients`` (the replica's step prices) is accepted for callers that pass it
    and not used.

    >>> multi = get_profile("vllm-0.6-multistep")
    >>> request_overhead_s(multi) == multi.request_overhead_s, multi.scheduler_steps
    (True, 10)
    >>> request_overhead_s("vllm")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: profile must be an EngineProfile; got 'vllm'
    """
    if not isinstance(profile, EngineProfile):
        raise CalcError(f"profile must be an EngineProfile; got {profile!r}", "engine")
    return profile.request_overhead_s
