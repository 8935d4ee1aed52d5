"""Lesson presets with a page's changes applied, and the numbers of their finished runs.

A page's live simulation reruns a lesson preset (:mod:`calc.sim.presets`) with a
few fields changed (the arrival rate, the allocation, prefix caching, the weight
format, an autoscaler's thresholds). The same scenario, run to its end, gives the
figures the page's prose quotes. Both live here, so that every page (and the
command line, the notebooks and the tests) builds a changed preset the same way.
Runs are deterministic (seeded), so their summaries are computed once per process.

>>> preset_summary("step04-reserve-max")["running_max"]
48
"""

from __future__ import annotations

import copy
import functools

from calc.errors import CalcError
from calc.lesson import MAX_MODEL_LEN
from calc.sim import presets
from calc.sim.fleet import simulate_fleet
from calc.sim.scenario import Scenario
from calc.speculative import EAGLE_LIKE, EAGLE_LIKE_COST_RATIO
from calc.units import round_sig

__all__ = ["KEEP", "BREAK_PRESET", "FIX_PRESET", "SIDES", "side_by_side_scenarios", "scenario_for", "preset_summary", "fleet_scenario", "SYSTEM_PROMPT_PRESET", "SYSTEM_PROMPT_TOKENS",
           "QUESTION_TOKENS", "SYSTEM_PROMPT_ANSWER_TOKENS", "SYSTEM_PROMPT_RATE_PER_S", "MAX_SYSTEM_PROMPT_TOKENS",
           "system_prompt_scenario", "PLAYGROUND_PRESET", "PLAYGROUND_CONCURRENCY", "PLAYGROUND_DEFAULTS",
           "PLAYGROUND_PARAMETER_COUNT",
           "playground_scenario_data", "KEEPS_UP_QUEUE_DEPTH", "keeps_up_with_traffic", "kv_cache_shares"]

#: A control left at this value keeps the preset's own setting.
KEEP = "preset"
#: Step 4's replica that reserves the maximum, and step 5's paged one (steps 4-6 compare them).
BREAK_PRESET, FIX_PRESET = "step04-reserve-max", "step05-paged"


def scenario_for(preset: str, *, rate_per_s: float = 0, allocation: str = KEEP, prefix_caching: str = KEEP,
                 speculation: str = KEEP, max_num_seqs: int = 0, seed: int = -1) -> dict:
    """The preset's scenario with the page's overrides (``preset``/0/-1 keep the preset's value).

    >>> scenario_for("step05-paged", allocation="contiguous")["allocation"]
    'contiguous'
    >>> scenario_for("step14-scale-on-gpu-util", rate_per_s=3)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rate_per_s cannot change step14-scale-on-gpu-util: its traffic follows phases over time; leave the rate at 0 (the preset's own)
    """
    data = copy.deepcopy(presets.load_data(preset))
    for meta_key in ("lesson_step", "title"):
        data.pop(meta_key, None)
    if allocation != KEEP:
        data["allocation"] = allocation
    if prefix_caching != KEEP:
        data["prefix_caching"] = prefix_caching == "on"
    if speculation != KEEP:
        data["speculation"] = None if speculation == "off" else speculation
    if max_num_seqs:
        data["max_num_seqs"] = max_num_seqs
    if seed >= 0:
        data["seed"] = seed
    if rate_per_s:
        if "traffic" in data.get("fleet", {}):
            raise CalcError(f"rate_per_s cannot change {preset}: its traffic follows phases over time; "
                            f"leave the rate at 0 (the preset's own)", "rate_per_s")
        data.setdefault("workload", {})["rate_per_s"] = rate_per_s
    return data


@functools.lru_cache(maxsize=64)
def preset_summary(name: str, rate_per_s: float = 0, weights: str | None = None, speculation: str = KEEP) -> dict:
    """The summary of a lesson preset run to its end, at its own arrival rate or at ``rate_per_s``.

    ``weights`` replaces the replica's weight format (step 7 replays step 6's
    traffic in fp8); ``speculation`` turns speculative decoding on or off
    (as :func:`scenario_for`). Source: :func:`calc.sim.fleet.simulate_fleet` on
    :func:`scenario_for` (the scenario the page's live simulation runs).

    >>> preset_summary("step04-reserve-max", 4)["queue_depth_max"]
    10
    >>> s = preset_summary("step06-twice-the-traffic", weights="fp8")
    >>> s["requests_completed"], s["ttft_p99_s"] < preset_summary("step06-twice-the-traffic")["ttft_p99_s"] / 3
    (1200, True)
    """
    data = scenario_for(name, rate_per_s=rate_per_s, speculation=speculation)
    if weights is not None:
        data["weights"] = weights
    return dict(simulate_fleet(data).summary)


def fleet_scenario(preset: str, **autoscaler) -> dict:
    """The preset's fleet scenario as data, with any autoscaler settings replaced (CalcError if it is no fleet).

    >>> fleet_scenario("step14-scale-on-gpu-util", scale_down_below=0.5)["fleet"]["autoscaler"]["scale_down_below"]
    0.5
    >>> fleet_scenario("step05-paged")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: preset must be a fleet with an autoscaler; step05-paged has none
    """
    data = copy.deepcopy(presets.load_data(preset))
    data.pop("lesson_step", None)
    if "fleet" not in data or "autoscaler" not in data["fleet"]:
        raise CalcError(f"preset must be a fleet with an autoscaler; {preset} has none", "preset")
    data["fleet"]["autoscaler"].update(autoscaler)
    return data


#: Step 15's fleet: the preset whose autoscaler (pod start, load bandwidth) sets the lesson's scale-up delay.
SCALE_ON_QUEUE_PRESET = "step15-scale-on-queue"


def fleet_scale_up_delay_s(pod_start_s: float | None = None, load_gb_per_s: float | None = None, *,
                           preset: str = SCALE_ON_QUEUE_PRESET, model: str | None = None,
                           weights: str | None = None, tp: int | None = None) -> float:
    """Seconds from a scale-up decision to a new replica serving: pod start + its weights per GPU / load bandwidth.

    Each GPU reads its own shard at the load bandwidth, all at once, as the simulator's
    autoscaler assumes (:func:`calc.sim.autoscaler.scale_up_delay_ns`). Unset arguments
    come from the fleet ``preset`` (step 15's by default) and the running example
    (:mod:`calc.lesson`). Source: :func:`calc.autoscale.scale_up_delay_s`.

    >>> round(fleet_scale_up_delay_s(), 1), round(fleet_scale_up_delay_s(60, 2), 1)
    (47.6, 77.6)
    >>> round(fleet_scale_up_delay_s(60, 2, tp=8), 1)
    68.8
    >>> fleet_scale_up_delay_s(load_gb_per_s=0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: load_bytes_per_s must be greater than 0; got 0
    """
    from calc import lesson
    from calc.autoscale import scale_up_delay_s
    from calc.catalog import get_model
    from calc.memory import check_tp, weights_bytes_per_gpu
    from calc.units import GB

    auto = fleet_scenario(preset)["fleet"]["autoscaler"]
    spec = get_model(model or lesson.MODEL)
    pod = auto["pod_start_s"] if pod_start_s is None else pod_start_s
    bandwidth = auto["load_bytes_per_s"] if load_gb_per_s is None else load_gb_per_s * GB
    per_gpu = weights_bytes_per_gpu(spec, check_tp(spec, lesson.TP if tp is None else tp), weights or lesson.WEIGHTS)
    return scale_up_delay_s(pod_start_s=pod, weights_bytes=per_gpu, load_bytes_per_s=bandwidth)


@functools.lru_cache(maxsize=None)
def fleet_time_series(preset: str) -> dict:
    """The time series of a fleet preset run to its end (cached), e.g. to draw several autoscalers on one chart.

    >>> ts = fleet_time_series("step15-scale-on-queue")
    >>> len(ts["t_s"]) == len(ts["replicas"]) == len(ts["ttft_p99_s"]) > 10
    True
    """
    from calc.sim.fleet import FleetScenario

    return simulate_fleet(FleetScenario.from_dict(fleet_scenario(preset))).time_series


def warm_fleet_scenario(preset: str, min_replicas: int) -> dict:
    """A fleet preset as data with ``min_replicas`` kept warm (and started with that many); CalcError above its maximum.

    >>> warm_fleet_scenario("step15-scale-on-queue", 3)["fleet"]["replicas"]
    3
    >>> warm_fleet_scenario("step15-scale-on-queue", 99)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: Replicas kept warm (min_replicas) must be at most the fleet's 4; got 99
    """
    data = fleet_scenario(preset)
    auto = data["fleet"]["autoscaler"]
    if min_replicas > auto["max_replicas"]:
        raise CalcError(f"Replicas kept warm (min_replicas) must be at most the fleet's {auto['max_replicas']}; "
                        f"got {min_replicas}", "min_replicas")
    auto["min_replicas"] = min_replicas
    data["fleet"]["replicas"] = min_replicas
    return data


@functools.lru_cache(maxsize=None)
def warm_fleet_summary(preset: str, min_replicas: int) -> dict:
    """The finished run's summary of :func:`warm_fleet_scenario` (cached: pages quote several of its numbers).

    >>> s = warm_fleet_summary("step15-scale-on-queue", 3)
    >>> s["replicas_initial"], s["replicas_max"] <= 4
    (3, True)
    """
    from calc.sim.fleet import FleetScenario

    return dict(simulate_fleet(FleetScenario.from_dict(warm_fleet_scenario(preset, min_replicas))).summary)


# --- steps 11 and 12: one shared system prompt in front of every question -------------------------

#: The simulator's scenario of step 11; its numbers are the defaults of steps 11 and 12.
SYSTEM_PROMPT_PRESET = "step11-system-prompt"
_SYSTEM_PROMPT_DATA = presets.load_data(SYSTEM_PROMPT_PRESET)
_SYSTEM_PROMPT_CLASS = _SYSTEM_PROMPT_DATA["workload"]["classes"][0]
SYSTEM_PROMPT_TOKENS: int = _SYSTEM_PROMPT_CLASS["prefix_tokens"]
QUESTION_TOKENS: int = _SYSTEM_PROMPT_CLASS["prompt_tokens"]
SYSTEM_PROMPT_ANSWER_TOKENS: int = _SYSTEM_PROMPT_CLASS["output_tokens"]
SYSTEM_PROMPT_RATE_PER_S: float = float(_SYSTEM_PROMPT_DATA["workload"]["rate_per_s"])
#: Longest system prompt the pages' controls accept: prompt + answer must stay within the engine's max_model_len.
MAX_SYSTEM_PROMPT_TOKENS = 6_000


def check_system_prompt_fits(system_prompt_tokens: int, question_tokens: int) -> None:
    """CalcError (naming ``system_prompt_tokens``) if a request of the step-11 workload exceeds ``max_model_len``.

    >>> check_system_prompt_fits(7_000, 1_024)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: system_prompt_tokens + question_tokens + the 256-token answer must stay within the engine's max_model_len of 8,192; got 7,000 + 1,024
    """
    limit = Scenario().max_model_len
    if system_prompt_tokens + question_tokens + SYSTEM_PROMPT_ANSWER_TOKENS > limit:
        raise CalcError(
            f"system_prompt_tokens + question_tokens + the {SYSTEM_PROMPT_ANSWER_TOKENS}-token answer must stay within "
            f"the engine's max_model_len of {limit:,}; got {system_prompt_tokens:,} + {question_tokens:,}",
            "system_prompt_tokens")


def system_prompt_scenario(*, system_prompt_tokens: int = SYSTEM_PROMPT_TOKENS,
                           rate_per_s: float = SYSTEM_PROMPT_RATE_PER_S, prefix_caching: str = "off") -> dict:
    """The preset ``step11-system-prompt`` with steps 11 and 12's three knobs applied (a scenario dict).

    >>> s = system_prompt_scenario(system_prompt_tokens=0, prefix_caching="on")
    >>> s["workload"]["classes"][0]["prefix_tokens"], s["prefix_caching"], s["workload"]["rate_per_s"]
    (0, True, 4.0)
    """
    check_system_prompt_fits(system_prompt_tokens, QUESTION_TOKENS)
    data = scenario_for(SYSTEM_PROMPT_PRESET, rate_per_s=rate_per_s, prefix_caching=prefix_caching)
    for request_class in data["workload"]["classes"]:
        request_class["prefix_tokens"] = system_prompt_tokens
    return copy.deepcopy(data)


SIDES = (("c", "contiguous", "reserve the maximum"), ("p", "paged", "paged blocks"))


def side_by_side_scenarios(rate_per_s: float = 8, max_model_len: int = MAX_MODEL_LEN, block_size: int = 16,
                           max_num_seqs: int = 256) -> dict[str, dict]:
    """The step-05 preset's scenario twice, once per allocation, with the page's overrides.

    >>> s = side_by_side_scenarios(max_model_len=16384)
    >>> s["contiguous"]["allocation"], s["paged"]["allocation"], s["paged"]["max_model_len"]
    ('contiguous', 'paged', 16384)
    """
    out = {}
    for _, allocation, _ in SIDES:
        data = scenario_for(FIX_PRESET, rate_per_s=rate_per_s, allocation=allocation, max_num_seqs=max_num_seqs)
        data["max_model_len"] = max_model_len
        data["block_size"] = block_size
        out[allocation] = data
    return out


# --- step 22: the playground's scenario, from its knobs -------------------------------------------------

#: The lesson preset the playground starts from (calc/sim/presets/step22-playground.json).
PLAYGROUND_PRESET = "step22-playground"
_PLAYGROUND = presets.load(PLAYGROUND_PRESET)
_PLAYGROUND_CLASS = _PLAYGROUND.workload.classes[0]
#: How the playground's KV sizing weighs the weights: its preset's, the lesson's base (calc.lesson.SCENARIO_BASE).
PLAYGROUND_PARAMETER_COUNT: str = _PLAYGROUND.parameter_count
#: Clients of the playground's closed loop until the reader sets them: a published serving run's middle
#: setting (vLLM's and AIPerf's sweeps go 1, 2, 4, ... 256), an assumption the reader changes.
PLAYGROUND_CONCURRENCY = 32
#: Every knob that makes the playground's scenario, under its scenario-JSON name, with its default (the preset's).
#: On/off settings are "on"/"off"; speculation is off, eagle-like or custom (spec_k, spec_acceptance,
#: spec_draft_cost_ratio); a GPU price of 0 takes the catalog's dated price.
PLAYGROUND_DEFAULTS: dict = {
    "model": _PLAYGROUND.model, "gpu": _PLAYGROUND.gpu, "tp": _PLAYGROUND.tp, "weights": _PLAYGROUND.weights,
    "kv_dtype": _PLAYGROUND.kv_dtype, "gpu_memory_utilization": _PLAYGROUND.gpu_memory_utilization,
    "memory_basis": _PLAYGROUND.memory_basis, "block_size": _PLAYGROUND.block_size,
    "max_model_len": _PLAYGROUND.max_model_len, "max_num_seqs": _PLAYGROUND.max_num_seqs,
    "max_num_batched_tokens": _PLAYGROUND.max_num_batched_tokens,
    "chunked_prefill": "on" if _PLAYGROUND.chunked_prefill else "off", "allocation": _PLAYGROUND.allocation,
    "prefix_caching": "on" if _PLAYGROUND.prefix_caching else "off",
    "speculation": "off" if _PLAYGROUND.speculation is None else "eagle-like",
    "spec_k": EAGLE_LIKE.k, "spec_acceptance": EAGLE_LIKE.acceptance, "spec_draft_cost_ratio": EAGLE_LIKE_COST_RATIO,
    "batching": _PLAYGROUND.batching, "static_batch_size": _PLAYGROUND.static_batch_size,
    "arrival": _PLAYGROUND.workload.arrival, "rate_per_s": float(_PLAYGROUND.workload.rate_per_s),
    "concurrency": PLAYGROUND_CONCURRENCY,
    "burstiness": float(_PLAYGROUND.workload.burstiness), "requests": _PLAYGROUND.workload.requests,
    "lengths": _PLAYGROUND_CLASS.lengths, "prompt_tokens": _PLAYGROUND_CLASS.prompt_tokens,
    "output_tokens": _PLAYGROUND_CLASS.output_tokens, "prefix_tokens": _PLAYGROUND_CLASS.prefix_tokens,
    "prefix_variants": _PLAYGROUND_CLASS.prefix_variants, "seed": _PLAYGROUND.seed, "gpu_price_usd_per_hour": 0.0,
}


def _playground_speculation(speculation: str, k: int, acceptance: float, draft_cost_ratio: float):
    if speculation == "off":
        return None
    if speculation == "eagle-like":
        return "eagle-like"
    if speculation == "custom":
        return {"k": k, "acceptance": acceptance, "draft_cost_ratio": draft_cost_ratio,
                "source": "set in the playground (step 22)"}
    raise CalcError(f"speculation must be one of off, eagle-like, custom; got {speculation!r}", "speculation")


def _on(field: str, value: str) -> bool:
    if value not in ("on", "off"):
        raise CalcError(f"{field} must be on or off; got {value!r}", field)
    return value == "on"


def playground_scenario_data(**knobs) -> dict:
    """The scenario of the playground's knobs (:data:`PLAYGROUND_DEFAULTS` for those not given), validated, as the
    full JSON-ready dict of :mod:`calc.sim.scenario`.

    ``arrival`` is the client: Poisson (or bursty) at ``rate_per_s``, all at
    once, or a closed loop of ``concurrency`` clients (each sends its next
    request when its previous one finishes; the knob is unused otherwise).
    A GPU price of 0 means the catalog's dated price (``null`` in the file).
    Source: the scenario schema (:class:`calc.sim.scenario.Scenario`).

    >>> d = playground_scenario_data(tp=8, speculation="custom", spec_k=2)
    >>> d["tp"], d["speculation"]["k"], d["speculation"]["verify_tokens"], d["workload"]["rate_per_s"]
    (8, 2, 3, 6.0)
    >>> d["parameter_count"]   # the lesson's weighing, from the preset (calc.lesson.SCENARIO_BASE)
    'lesson'
    >>> w = playground_scenario_data(arrival="closed-loop", concurrency=16)["workload"]
    >>> w["arrival"], w["concurrency"], "concurrency" in playground_scenario_data()["workload"]
    ('closed-loop', 16, False)
    >>> playground_scenario_data(prompt_tokens=9000)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: class 'chat': prefix_tokens + prompt_tokens + output_tokens = 9256 must be at most max_model_len 8192
    >>> playground_scenario_data(colour="red")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: colour is not a knob of the playground's scenario; knobs: allocation, arrival, ...
    """
    unknown = sorted(set(knobs) - set(PLAYGROUND_DEFAULTS))
    if unknown:
        raise CalcError(f"{unknown[0]} is not a knob of the playground's scenario; knobs: "
                        f"{', '.join(sorted(PLAYGROUND_DEFAULTS))}", str(unknown[0]))
    k = {**PLAYGROUND_DEFAULTS, **knobs}
    price = k["gpu_price_usd_per_hour"]
    workload = {
        "arrival": k["arrival"], "rate_per_s": k["rate_per_s"], "requests": k["requests"],
        "burstiness": k["burstiness"],
        "classes": [{"name": _PLAYGROUND_CLASS.name, "lengths": k["lengths"], "prompt_tokens": k["prompt_tokens"],
                     "output_tokens": k["output_tokens"], "prefix_tokens": k["prefix_tokens"],
                     "prefix_variants": k["prefix_variants"]}],
    }
    if k["arrival"] == "closed-loop":
        workload["concurrency"] = k["concurrency"]
    data = {
        "name": "playground",
        "description": "Exported from the playground of LLM Inference at Scale (step 22).",
        # Not a knob: the preset's (the lesson's base), so the replica holds step 1's KV cache as every page counts it.
        "parameter_count": PLAYGROUND_PARAMETER_COUNT,
        **{key: k[key] for key in ("model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization",
                                   "memory_basis", "block_size", "max_model_len", "max_num_seqs",
                                   "max_num_batched_tokens", "allocation", "batching", "static_batch_size", "seed")},
        "chunked_prefill": _on("chunked_prefill", k["chunked_prefill"]),
        "prefix_caching": _on("prefix_caching", k["prefix_caching"]),
        "speculation": _playground_speculation(k["speculation"], k["spec_k"], k["spec_acceptance"],
                                               k["spec_draft_cost_ratio"]),
        "gpu_price_usd_per_hour": price if price else None,
        "workload": workload,
    }
    return Scenario.from_dict(data).to_dict()


#: Mean waiting-queue depth under which a run keeps up: an arriving request finds, on average, less than one
#: request waiting ahead of it for a batch slot.
KEEPS_UP_QUEUE_DEPTH = 1.0


def keeps_up_with_traffic(summary: dict) -> bool:
    """Whether a simulated run keeps up with its arrivals: its waiting queue does not build.

    Finished over arrived across a finite run is no test: the run's last requests are still in flight when the
    arrivals stop, so a replica far under its ceiling scores under 1 (step 12's cached run: 0.94 with a peak
    queue of 3). A replica that falls behind builds a queue that grows with the run, so the run's time-averaged
    queue depth tells the two apart: under one request waiting on average, against tens.

    >>> from calc.sim import presets
    >>> cached, uncached = presets.run("step12-prefix-caching").summary, presets.run(SYSTEM_PROMPT_PRESET).summary
    >>> keeps_up_with_traffic(cached), keeps_up_with_traffic(uncached)
    (True, False)
    """
    return summary["requests_rejected"] == 0 and summary["queue_depth_mean"] < KEEPS_UP_QUEUE_DEPTH


def kv_cache_shares(use: list, waste: list) -> dict:
    """Holding tokens, reserved but empty, and free, each as a share of the whole KV cache.

    The run's series (:data:`calc.sim.fleet.SERIES_KEYS`) give
    ``kv_use_fraction``, blocks in use over all blocks, and
    ``kv_waste_fraction``, token slots reserved but holding no token over the
    *reserved* slots. On one scale: holding = use x (1 - waste), reserved but
    empty = use x waste, free = 1 - use (blocks of a cached prefix no running
    request holds count as free: the next allocation may take them); the three
    add up to 1, to the rounding of 4 significant digits. Source: the
    definitions of the two series in :class:`calc.sim.fleet.Fleet`; the
    vLLM paper's split of KV memory into token states, reservation and free
    (Kwon et al., SOSP 2023, Fig. 2).

    >>> kv_cache_shares([0.8, 0.5], [0.75, 0.0])
    {'kv_token_fraction': [0.2, 0.5], 'kv_reserved_empty_fraction': [0.6, 0.0], 'kv_free_fraction': [0.2, 0.5]}
    """
    if len(use) != len(waste):
        raise CalcError(f"kv_waste_fraction must have one point per kv_use_fraction point ({len(use)}); "
                        f"got {len(waste)}", "kv_waste_fraction")
    return {
        "kv_token_fraction": [round_sig(u * (1.0 - w), 4) for u, w in zip(use, waste)],
        "kv_reserved_empty_fraction": [round_sig(u * w, 4) for u, w in zip(use, waste)],
        "kv_free_fraction": [round_sig(1.0 - u, 4) for u in use],
    }
