"""Widgets and facts of step 22, "Playground" (docs/lesson/22-playground.md).

Every knob of one simulated replica on one page: the hardware and precision (the
memory view), the engine's limits and the traffic (the live simulation), the
price (the roofline's speed and cost), and the scenario file that runs the same
simulation from a terminal (``python -m calc simulate --scenario FILE``).

Each knob is defined once, in :data:`KNOBS`, under the name it has in the
scenario JSON (:mod:`calc.sim.scenario`), with its default from the lesson's
``step22-playground`` preset. A widget takes the knobs it needs; the page's
script (``docs/assets/runtime/calc-playground.js``) keeps a knob with the same
name in step across the page's widgets and in the page's URL. The scenario that
:func:`simulation` runs and the text :func:`scenario_file` offers for download
both come from :func:`scenario_data` (:func:`calc.sim_views.playground_scenario_data`, the science
side: knobs to scenario, with their defaults), so the file reproduces the page's run:

>>> from calc.sim.run import simulate
>>> from calc.sim.scenario import Scenario
>>> data = scenario_data(requests=40)
>>> text = scenario_file(requests=40)["outputs"]["scenario_json"]["text"]
>>> simulate(Scenario.from_dict(json.loads(text))).summary == simulate(Scenario.from_dict(data)).summary
True
"""

from __future__ import annotations

import dataclasses
import functools
import inspect
import json
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.cost import cost_vs_batch, replica_usd_per_hour, sustained_at_latency, usd_per_million_tokens
from calc.errors import CalcError
from calc.lesson import weighs_rounded
from calc.roofline import itl_s, step_coefficients, ttft_s
from calc.sim.hardware import kv_sizing
from calc.allocation import concurrency, contiguous_max_concurrency
from calc.sim.kv_blocks import ALLOCATIONS
from calc.sim.run import simulate
from calc.sim.scenario import BATCHING, Scenario, dump_scenario
from calc.sim.workload import MAX_CONCURRENCY, RequestClass
from calc.sim_views import PLAYGROUND_DEFAULTS, PLAYGROUND_PARAMETER_COUNT, PLAYGROUND_PRESET
from calc.sim_views import playground_scenario_data as scenario_data
from calc.units import SECONDS_PER_HOUR, format_number, from_bytes, round_sig, s_to_ms
from calc.widgets.views import replica_memory_view
from calc.widgets.charts import PALETTE, line_chart
from calc.widgets.controls import KvDtype, TensorParallel, Weights
from calc.widgets.framework import (
    Choice, FloatRange, IntRange, collect_stream, fact_from, fact_values, facts_of, output, stream, view, widget,
)
from calc.widgets.simulation import metrics, simulation_views

__all__ = ["KNOBS", "DEFAULTS", "PRESET", "ITL_TARGET_S", "HOURS_PER_MONTH", "scenario_data", "replica",
           "simulation", "speed_and_cost", "scenario_file", "facts"]

#: The lesson preset the playground starts from (calc/sim/presets/step22-playground.json).
PRESET = PLAYGROUND_PRESET
#: Default inter-token latency target of the cost view: 50 ms per token, about 20 tokens/s for each reader of
#: a streamed answer. An assumption the reader changes, not a measured figure.
ITL_TARGET_S = 0.05
#: A month of GPU-hours on average (8,760 hours / 12), as :func:`calc.cost.price_replica` counts it.
HOURS_PER_MONTH = 730.0
#: The command the downloaded file is run with.
COMMAND = "python -m calc simulate --scenario scenario.json"
FILE_NAME = "scenario.json"
#: Prompt + answer points of the cost chart stop at the largest batch the KV cache holds, or at this many.
MAX_CHART_BATCH = 4096

_D = PLAYGROUND_DEFAULTS
_SPEC_CHOICES = (("off", "off"), ("eagle-like", "EAGLE-like (SGLang's example)"),
                 ("custom", "a chain: k, acceptance and draft cost below"))
_ON_OFF = (("off", "off"), ("on", "on"))
#: The client: requests arriving at a rate (independent users), all at once, or a closed loop of N clients.
_ARRIVAL_CHOICES = (("poisson", "Poisson at the arrival rate"), ("bursty", "bursty at the arrival rate"),
                    ("all-at-once", "all at once"), ("closed-loop", "closed loop of N clients"))

#: Every knob: its control (labels and ranges of the scenario schema) and its default (the preset's).
KNOBS: dict[str, tuple[object, object]] = {
    # the replica: memory view
    "model": (Annotated[str, Choice(tuple((k, m.name) for k, m in MODELS.items()), label="Model")], _D["model"]),
    "gpu": (Annotated[str, Choice(tuple((k, g.name) for k, g in GPUS.items()), label="GPU")], _D["gpu"]),
    "tp": (TensorParallel, _D["tp"]),
    "weights": (Weights, _D["weights"]),
    "kv_dtype": (KvDtype, _D["kv_dtype"]),
    "gpu_memory_utilization": (Annotated[float, FloatRange(0.05, 1.0, 0.01, label="Memory utilization",
                                                           help="vLLM's gpu_memory_utilization")],
                               _D["gpu_memory_utilization"]),
    "memory_basis": (Annotated[str, Choice((("marketed", "Datasheet: GB × 10⁹ (the lesson)"),
                                            ("runtime", "nvidia-smi: MiB × 2²⁰")), label="GPU memory counted as")],
                     _D["memory_basis"]),
    "block_size": (Annotated[int, IntRange(1, 1024, 1, "tokens", label="KV block size")], _D["block_size"]),
    "max_model_len": (Annotated[int, IntRange(16, 10_000_000, 1, "tokens", label="Max model length",
                                              help="prompt + answer limit")], _D["max_model_len"]),
    # the engine: simulation
    "max_num_seqs": (Annotated[int, IntRange(1, 100_000, 1, "requests", label="Max running requests",
                                             help="max_num_seqs")], _D["max_num_seqs"]),
    "max_num_batched_tokens": (Annotated[int, IntRange(1, 10_000_000, 1, "tokens", label="Token budget per step",
                                                       help="max_num_batched_tokens")], _D["max_num_batched_tokens"]),
    "chunked_prefill": (Annotated[str, Choice((("on", "on"), ("off", "off: whole prompts, prefill-only steps")),
                                              label="Chunked prefill")], _D["chunked_prefill"]),
    "allocation": (Annotated[str, Choice(tuple((a, {"paged": "paged blocks", "contiguous": "reserve max model length"}
                                                    .get(a, a)) for a in ALLOCATIONS), label="KV allocation")],
                   _D["allocation"]),
    "prefix_caching": (Annotated[str, Choice(_ON_OFF, label="Prefix caching")],
                       _D["prefix_caching"]),
    "speculation": (Annotated[str, Choice(_SPEC_CHOICES, label="Speculative decoding")],
                    _D["speculation"]),
    "spec_k": (Annotated[int, IntRange(1, 16, 1, "tokens", label="Drafted tokens k", help="custom speculation")],
               _D["spec_k"]),
    "spec_acceptance": (Annotated[float, FloatRange(0.0, 1.0, 0.05, label="Acceptance rate",
                                                    help="custom speculation")], _D["spec_acceptance"]),
    "spec_draft_cost_ratio": (Annotated[float, FloatRange(0.0, 10.0, 0.01, label="Draft cost / target step",
                                                          help="custom speculation")], _D["spec_draft_cost_ratio"]),
    "batching": (Annotated[str, Choice(BATCHING, label="Batching")], _D["batching"]),
    "static_batch_size": (Annotated[int, IntRange(1, 100_000, 1, "requests", label="Static batch size",
                                                  help="used by static batching")], _D["static_batch_size"]),
    # the traffic: simulation
    "arrival": (Annotated[str, Choice(_ARRIVAL_CHOICES, label="Client")], _D["arrival"]),
    "rate_per_s": (Annotated[float, FloatRange(0.01, 1000.0, 0.5, "requests/s", label="Arrival rate")],
                   float(_D["rate_per_s"])),
    "concurrency": (Annotated[int, IntRange(1, MAX_CONCURRENCY, 1, "clients", label="Clients (N)",
                                            help="closed loop: each sends its next request when its previous one "
                                                 "finishes")], _D["concurrency"]),
    "burstiness": (Annotated[float, FloatRange(1.0, 1000.0, 0.5, label="Burstiness",
                                               help="squared CV of the gaps, bursty arrivals")],
                   float(_D["burstiness"])),
    "requests": (Annotated[int, IntRange(1, 20_000, 1, "requests", label="Requests")], _D["requests"]),
    "lengths": (Annotated[str, Choice((("fixed", "fixed"), ("chat", "chat (ShareGPT means)"),
                                       ("lognormal", "lognormal around the lengths below")), label="Lengths")],
                _D["lengths"]),
    "prompt_tokens": (Annotated[int, IntRange(1, 10_000_000, 1, "tokens", label="Prompt")], _D["prompt_tokens"]),
    "output_tokens": (Annotated[int, IntRange(1, 1_000_000, 1, "tokens", label="Answer")], _D["output_tokens"]),
    "prefix_tokens": (Annotated[int, IntRange(0, 10_000_000, 1, "tokens", label="Shared system prompt")],
                      _D["prefix_tokens"]),
    "prefix_variants": (Annotated[int, IntRange(1, 10_000, 1, label="Distinct system prompts")],
                        _D["prefix_variants"]),
    "seed": (Annotated[int, IntRange(0, 2**32 - 1, 1, label="Seed")], _D["seed"]),
    # the price: cost view (and the simulation's cost metric)
    "gpu_price_usd_per_hour": (Annotated[float, FloatRange(0.0, 1000.0, 0.01, "USD per GPU-hour", label="GPU price",
                                                           help="0 takes the catalog's dated price")], 0.0),
    # the view
    "itl_target_s": (Annotated[float, FloatRange(0.001, 10.0, 0.005, "s", label="Inter-token latency target")],
                     ITL_TARGET_S),
    "frame_interval_s": (Annotated[float, FloatRange(0.5, 120.0, 0.5, "s", label="Simulated seconds per frame")],
                         5.0),
}
DEFAULTS = {name: default for name, (_, default) in KNOBS.items()}
#: The knobs that make a scenario (everything but the views' own).
SCENARIO_KNOBS = tuple(n for n in KNOBS if n not in ("itl_target_s", "frame_interval_s"))
REPLICA_KNOBS = ("model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "memory_basis",
                 "block_size", "max_model_len", "lengths", "prompt_tokens", "output_tokens", "prefix_tokens")
COST_KNOBS = ("gpu_price_usd_per_hour", "itl_target_s", "model", "gpu", "tp", "weights", "kv_dtype",
              "gpu_memory_utilization", "memory_basis", "block_size", "max_num_seqs", "max_num_batched_tokens",
              "lengths", "prompt_tokens", "output_tokens", "prefix_tokens")


def _knobs(names):
    """Give a ``**knobs`` function the named knobs as its keyword parameters (controls for the framework)."""
    def decorate(function):
        parameters = [inspect.Parameter(n, inspect.Parameter.KEYWORD_ONLY, default=KNOBS[n][1],
                                        annotation=KNOBS[n][0]) for n in names]
        function.__signature__ = inspect.Signature(parameters)
        function.__annotations__ = {n: KNOBS[n][0] for n in names}
        return function
    return decorate


def _knob_args(knobs: dict, names) -> dict:
    unknown = sorted(set(knobs) - set(names))
    if unknown:
        raise CalcError(f"{unknown[0]} is not a knob here; allowed: {', '.join(names)}", str(unknown[0]))
    return {**{n: DEFAULTS[n] for n in names}, **knobs}


def _request_tokens(lengths: str, prompt_tokens: int, output_tokens: int, prefix_tokens: int) -> tuple[int, int]:
    """(mean prompt incl. system prompt, mean answer) of the one request class, rounded up to whole tokens."""
    c = RequestClass(lengths=lengths, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                     prefix_tokens=prefix_tokens)
    return -int(-c.mean_prompt_tokens() // 1), -int(-c.mean_output_tokens() // 1)


#: The replica's keys of the scenario, as the knobs name them.
_HARDWARE_KEYS = ("model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "memory_basis", "block_size",
                  "max_model_len")


def _capacity(k: dict):
    """The KV sizing the simulator gives the knobs' replica (:func:`calc.sim.hardware.kv_sizing`), weights weighed
    as the playground's scenario weighs them (the lesson's count: step 1's 399,169 tokens by default).

    The knobs are checked by :func:`calc.memory.kv_capacity`, which names the field; the
    workload is not part of the sizing, so it is not checked here.
    """
    replica = dataclasses.replace(Scenario(), parameter_count=PLAYGROUND_PARAMETER_COUNT,
                                  **{key: k[key] for key in _HARDWARE_KEYS if key in k})
    return kv_sizing(replica)


@widget
@_knobs(REPLICA_KNOBS)
def replica(**knobs):
    """The memory view of the playground's replica: step 1's bars, and the KV cache the simulator gets.

    Terms from :func:`calc.widgets.views.replica_memory_view`, the weights weighed
    as the simulator weighs them (the lesson's parameter count for 16-bit weights,
    tensor by tensor for formats with scales: :func:`calc.lesson.weighs_rounded`);
    the KV cache from :func:`calc.sim.hardware.kv_sizing`: its tokens as step 1
    quotes them, and the whole blocks at the chosen block size that the simulator
    allocates (vLLM's ``determine_available_memory``); vLLM's "maximum concurrency" =
    tokens in whole blocks / max model length; requests that fit = tokens // request length (step 1's).

    >>> out = replica()["outputs"]
    >>> out["kv_cache_tokens"]["text"], out["kv_cache_blocks"]["text"], out["requests_that_fit"]["value"]
    ('399,169 tokens', '24,948 of 16 tokens', 311)
    >>> from calc.lesson import KV_CAPACITY_TOKENS
    >>> out["kv_cache_tokens"]["value"] == KV_CAPACITY_TOKENS, out["max_concurrency"]["text"]
    (True, '48.7x at 8,192 tokens')
    """
    k = _knob_args(knobs, REPLICA_KNOBS)
    prompt, answer = _request_tokens(k["lengths"], k["prompt_tokens"], k["output_tokens"], k["prefix_tokens"])
    base = replica_memory_view(k["model"], k["gpu"], tp=k["tp"], weights=k["weights"], kv_dtype=k["kv_dtype"],
                               gpu_memory_utilization=k["gpu_memory_utilization"], memory_basis=k["memory_basis"],
                               parameter_count="lesson" if weighs_rounded(k["weights"], PLAYGROUND_PARAMETER_COUNT)
                               else "exact", request_tokens=prompt + answer)
    cap = _capacity(k)
    tokens = cap.kv_cache_tokens_raw  # the capacity as every page quotes it; the simulator holds its whole blocks
    per_request = prompt + answer
    fits = tokens // per_request
    keep = ("gpu_memory", "weights_bytes_per_gpu", "kv_cache_bytes_per_gpu", "kv_bytes_per_token_per_gpu")
    return view(
        outputs=[base["outputs"][key] for key in keep] + [
            output("kv_cache_tokens", "KV cache of the replica", tokens, "tokens", text=f"{tokens:,} tokens"),
            output("kv_cache_blocks", "Whole blocks, as the simulator allocates them", cap.kv_cache_blocks, "blocks",
                   text=f"{cap.kv_cache_blocks:,} of {cap.block_size} tokens"),
            output("max_concurrency", "vLLM's maximum concurrency", round_sig(cap.max_concurrency, 4), "",
                   text=f"{format_number(cap.max_concurrency)}x at {cap.max_model_len:,} tokens"),
            output("requests_that_fit", f"Requests of {per_request:,} tokens at once", fits, "requests",
                   text=f"{fits:,}"),
        ],
        figures=base["figures"],
        tables=base["tables"],
    )


@stream(budget_s=4.0)
@_knobs(SCENARIO_KNOBS + ("frame_interval_s",))
def simulation(**knobs):
    """The playground's scenario, live: :func:`calc.widgets.simulation.simulation_views` of :func:`scenario_data`.

    >>> views = list(simulation(requests=30, frame_interval_s=60.0))
    >>> views[-1]["done"], views[-1]["outputs"]["requests_completed"]["text"]
    (True, '30 of 30')
    """
    k = _knob_args(knobs, SCENARIO_KNOBS + ("frame_interval_s",))
    frame_interval_s = k.pop("frame_interval_s")
    yield from simulation_views(scenario_data(**k), frame_interval_s)


def _price(k: dict):
    """(USD per GPU-hour or None, where it comes from)."""
    if k["gpu_price_usd_per_hour"]:
        return k["gpu_price_usd_per_hour"], "your price"
    gpu = get_gpu(k["gpu"])
    if gpu.price_usd_per_hour is None:
        return None, f"no catalog price for the {gpu.name}: enter yours"
    return gpu.price_usd_per_hour, f"{gpu.price_source}"


def _batches(limit: int) -> list[int]:
    points, b = [], 1
    while b < limit:
        points.append(b)
        b *= 2
    return points + [limit]


@widget
@_knobs(COST_KNOBS)
def speed_and_cost(**knobs):
    """Speed and cost of the replica on the roofline: TTFT, ITL, the batch a latency target allows, USD per M tokens.

    * TTFT floor: the mean prompt (system prompt included) prefilled on an idle
      replica in chunks of the step's token budget (:func:`calc.roofline.ttft_s`);
    * decode at the target: the largest batch whose step (the inter-token latency)
      stays under the target, capped by the running-request limit and by the
      requests the KV cache holds (:func:`calc.cost.sustained_at_latency`), with
      every sequence half-way through its answer;
    * cost per million output tokens = replica USD per hour / (tokens/s x 3,600) x 10^6
      (:func:`calc.cost.usd_per_million_tokens`, the lesson's step 16).
    Decode only: the prefill work a real step also carries is in the simulation's cost.

    >>> out = speed_and_cost()["outputs"]
    >>> out["usd_per_hour"]["text"], out["batch_at_target"]["text"], out["usd_per_million_at_target"]["text"]
    ('$15.12 per hour', '256 (set by max running requests)', '$0.508')
    """
    k = _knob_args(knobs, COST_KNOBS)
    model = get_model(k["model"])
    prompt, answer = _request_tokens(k["lengths"], k["prompt_tokens"], k["output_tokens"], k["prefix_tokens"])
    cap = _capacity({**k, "max_model_len": None})
    coef = step_coefficients(model, k["gpu"], tp=k["tp"], weights=k["weights"], kv_dtype=k["kv_dtype"])
    context = prompt + answer // 2
    fit = cap.kv_cache_tokens // (prompt + answer)
    if fit < 1:
        raise CalcError(f"prompt_tokens: one request of {prompt + answer:,} tokens does not fit the KV cache of "
                        f"{cap.kv_cache_tokens:,} tokens; shorten the request or free memory", "prompt_tokens")
    limit = min(k["max_num_seqs"], fit)
    target = sustained_at_latency(coef, context_tokens=context, itl_target_s=k["itl_target_s"], max_batch=limit)
    ttft = ttft_s(coef, prompt_tokens=prompt, chunk_tokens=k["max_num_batched_tokens"])
    itl_1 = itl_s(coef, batch=1, context_tokens=context)
    price, price_source = _price(k)
    gpus = k["tp"]
    limited = {"latency": "the latency target", "max_batch": "max running requests" if limit == k["max_num_seqs"]
               else "the KV cache"}[target["limited_by"]]
    outputs = [
        output("ttft_floor_s", f"TTFT of a {prompt:,}-token prompt, idle replica", ttft, "s",
               text=f"{format_number(ttft * 1000)} ms"),
        output("itl_batch_1_s", "Inter-token latency, batch 1", itl_1, "s", text=f"{format_number(itl_1 * 1000)} ms"),
        output("batch_at_target", "Largest batch within the target", target["batch"], "requests",
               text=f"{target['batch']:,} (set by {limited})" if target["batch"] else "none: batch 1 misses it"),
        output("tokens_per_s_at_target", "Output tokens/s at that batch", target["tokens_per_s"], "tokens/s",
               text=f"{format_number(target['tokens_per_s'])} tokens/s"),
    ]
    chart_batches = _batches(min(limit, MAX_CHART_BATCH))
    rows = cost_vs_batch(coef, usd_per_hour=replica_usd_per_hour(price or 0.0, gpus), context_tokens=context,
                         batches=chart_batches)
    if price is None:
        outputs += [output("usd_per_hour", "Replica per hour", 0.0, "USD", text="enter a GPU price"),
                    output("usd_per_month", "Per month (730 h)", 0.0, "USD", text="enter a GPU price"),
                    output("usd_per_million_batch_1", "Per million output tokens, batch 1", 0.0, "USD",
                           text="enter a GPU price"),
                    output("usd_per_million_at_target", "Per million output tokens at the target", 0.0, "USD",
                           text="enter a GPU price")]
        series = {"output tokens/s": ([r["batch"] for r in rows], [r["tokens_per_s"] for r in rows])}
        title, y_title = f"Decode throughput against batch ({price_source})", "output tokens/s"
    else:
        per_hour = replica_usd_per_hour(price, gpus)
        at_1 = rows[0]["usd_per_million_tokens"]
        at_target = (usd_per_million_tokens(per_hour, target["tokens_per_s"]) if target["batch"] else None)
        outputs += [
            output("usd_per_hour", "Replica per hour", per_hour, "USD",
                   text=f"${format_number(per_hour, 4)} per hour", note=price_source),
            output("usd_per_month", f"Per month ({HOURS_PER_MONTH:g} h)", per_hour * HOURS_PER_MONTH, "USD",
                   text=f"${per_hour * HOURS_PER_MONTH:,.0f}"),
            output("usd_per_million_batch_1", "Per million output tokens, batch 1", at_1, "USD",
                   text=f"${format_number(at_1)}"),
            output("usd_per_million_at_target", "Per million output tokens at the target", at_target or 0.0, "USD",
                   text="n/a" if at_target is None else f"${format_number(at_target)}"),
        ]
        series = {"USD per million output tokens": ([r["batch"] for r in rows],
                                                     [r["usd_per_million_tokens"] for r in rows])}
        title, y_title = "Decode cost against batch", "USD per million output tokens"
    figure = line_chart(title, "running requests (batch)", y_title, series, log_x=True, log_y=True, markers=True,
                        summary=f"At batch {rows[0]['batch']}: {format_number(rows[0]['tokens_per_s'])} tokens/s; at "
                                f"batch {rows[-1]['batch']:,}: {format_number(rows[-1]['tokens_per_s'])} tokens/s, "
                                f"{format_number(rows[-1]['step_s'] * 1000)} ms per token. The latency target allows "
                                f"batch {target['batch']:,}.")
    if target["batch"]:
        y = (usd_per_million_tokens(replica_usd_per_hour(price, gpus), target["tokens_per_s"]) if price is not None
             else target["tokens_per_s"])
        name = f"within {format_number(k['itl_target_s'] * 1000)} ms: batch {target['batch']:,}"
        figure["data"].append({"type": "scatter", "mode": "markers", "name": name, "x": [target["batch"]],
                               "y": [round_sig(y, 6)], "marker": {"color": PALETTE[1], "size": 11, "symbol": "diamond"}})
    ys = next(iter(series.values()))[1]
    if max(ys) >= 10 * min(ys):  # one label per decade on the log axes, where there are decades to label
        figure["layout"]["yaxis"]["dtick"] = 1
    if max(chart_batches) > 10:
        figure["layout"]["xaxis"]["dtick"] = 1
    return view(outputs=outputs, figures={"batch": figure})


@widget
@_knobs(SCENARIO_KNOBS)
def scenario_file(**knobs):
    """The playground's scenario as the JSON file ``python -m calc simulate --scenario FILE`` runs.

    The text is :func:`calc.sim.scenario.dump_scenario` of :func:`scenario_data`:
    every key written out, sorted, so that the file runs to the page's numbers
    whatever the defaults of a later calc. Source: the scenario schema.

    >>> out = scenario_file(tp=8)["outputs"]
    >>> json.loads(out["scenario_json"]["text"])["tp"], out["command"]["text"]
    (8, 'python -m calc simulate --scenario scenario.json')
    """
    data = scenario_data(**_knob_args(knobs, SCENARIO_KNOBS))
    text = dump_scenario(Scenario.from_dict(data))
    return view(outputs=[
        output("command", "Run it in a terminal", COMMAND),
        output("scenario_json", FILE_NAME, text),
    ])


# --- facts -----------------------------------------------------------------------------------------------


def _run(**changes) -> dict:
    """The summary of the playground's scenario with some knobs changed (the CLI's numbers)."""
    return simulate(Scenario.from_dict(scenario_data(**changes))).summary


# Each fact is computed alone when the page names it; the runs and the capacity they share are cached.

@functools.cache
def _start() -> dict:
    return _run()


@functools.cache
def _contiguous() -> dict:
    return _run(allocation="contiguous")


@functools.cache
def _cap():
    """The replica's KV cache at the defaults (step 1's count).

    >>> fact_values("playground", ["kv_tokens", "kv_blocks", "fit_at_request_len", "contiguous_fit"])
    {'kv_tokens': '399,169', 'kv_blocks': '24,948', 'fit_at_request_len': '311', 'contiguous_fit': '48'}
    """
    return _capacity(DEFAULTS)


@functools.cache
def _tokens() -> tuple[int, int]:
    """The running example's prompt and answer tokens at the playground's defaults."""
    return _request_tokens(DEFAULTS["lengths"], DEFAULTS["prompt_tokens"], DEFAULTS["output_tokens"],
                           DEFAULTS["prefix_tokens"])


@functools.cache
def _panel() -> dict:
    """The live panel's figures at the defaults, checked against the page's streamed run."""
    panel = {item["key"]: item["text"] for item in metrics(_start())}
    final = collect_stream(simulation())
    shown = {key: final["outputs"][key]["text"] for key in panel}
    if shown != panel:  # the page's live run and the CLI's run must agree, or the download would mislead
        raise CalcError(f"the playground's live run and simulate() disagree: {shown} != {panel}", "simulation")
    return panel


@functools.cache
def _contiguous_panel() -> dict:
    return {item["key"]: item["text"] for item in metrics(_contiguous())}


@functools.cache
def _cost() -> dict:
    return speed_and_cost()["outputs"]


_LIMITS = {"max_model_len": DEFAULTS["max_model_len"], "block_size": DEFAULTS["block_size"]}
_PROSE_FACTS = {
    "model": lambda: get_model(DEFAULTS["model"]).name,
    "gpu": lambda: get_gpu(DEFAULTS["gpu"]).name,
    "tp": lambda: str(DEFAULTS["tp"]),
    "rate": lambda: format_number(DEFAULTS["rate_per_s"]),
    "requests": lambda: f"{DEFAULTS['requests']:,}",
    "prompt_tokens": lambda: f"{_tokens()[0]:,}",
    "answer_tokens": lambda: f"{_tokens()[1]:,}",
    "max_model_len": lambda: f"{DEFAULTS['max_model_len']:,}",
    "block_size": lambda: str(DEFAULTS["block_size"]),
    "kv_tokens": lambda: f"{_cap().kv_cache_tokens_raw:,}",  # step 1's count (calc.lesson.KV_CAPACITY_TOKENS)
    "kv_blocks": lambda: f"{_cap().kv_cache_blocks:,}",
    "kv_per_gpu": lambda: f"{format_number(from_bytes(_cap().kv_cache_bytes, 'GB'))} GB",
    "fit_at_request_len": lambda: f"{concurrency(_cap().kv_cache_tokens_raw, [_tokens()], 'paged', **_LIMITS):,}",
    "ttft_p50": lambda: _panel()["ttft_p50_s"],
    "ttft_p99": lambda: _panel()["ttft_p99_s"],
    "itl_p50": lambda: _panel()["itl_p50_s"],
    "throughput": lambda: _panel()["throughput_output_tokens_per_s"],
    "running_max": lambda: f"{_start()['running_max']:,}",
    "cost_per_million_sim": lambda: _panel()["cost_usd_per_million_output_tokens"],
    "gpu_util": lambda: _panel()["gpu_util_reported"],
    "compute_util": lambda: _panel()["compute_utilization"],
    "contiguous_running_max": lambda: f"{_contiguous()['running_max']:,}",
    "contiguous_fit": lambda: f"{contiguous_max_concurrency(_cap().kv_cache_tokens_raw, DEFAULTS['max_model_len']):,}",
    "contiguous_ttft_p99": lambda: _contiguous_panel()["ttft_p99_s"],
    "contiguous_queue_max": lambda: f"{_contiguous()['queue_depth_max']:,}",
    "price": lambda: f"${format_number(get_gpu(DEFAULTS['gpu']).price_usd_per_hour)}",
    "price_date": lambda: str(get_gpu(DEFAULTS["gpu"]).price_date),
    "usd_per_hour": lambda: _cost()["usd_per_hour"]["text"],
    "itl_target_ms": lambda: format_number(s_to_ms(ITL_TARGET_S)),
    "batch_at_target": lambda: f"{_cost()['batch_at_target']['value']:,}",
    "usd_per_million_batch_1": lambda: _cost()["usd_per_million_batch_1"]["text"],
    "usd_per_million_at_target": lambda: _cost()["usd_per_million_at_target"]["text"],
    "seconds_per_hour": lambda: f"{SECONDS_PER_HOUR:,}",
    "command": lambda: COMMAND,
}
# A dollar sign would open inline math (pymdownx.arithmatex) in the prose: the facts have it escaped.
for _fact_name, _fact_text in _PROSE_FACTS.items():
    fact_from(_fact_name, lambda text=_fact_text: text().replace("$", "\\$"))

facts = facts_of(__name__)
