"""Widgets and facts of step 11, "Break it: a 2,500-token system prompt" (docs/lesson/11-system-prompt.md).

Every request of the assistant starts with the same 2,500-token system prompt in
front of a 1,024-token question (the simulator's preset ``step11-system-prompt``).
Without a prefix cache the engine prefills all 3,524 tokens of every prompt, so the
identical prefix is computed again and again. Prefill is compute-bound, so its
cost is FLOPs, and the roofline of :mod:`calc.roofline` prices it:

    prefill time of one prompt = sum over its chunks of prefill_chunk(...)["time_s"]
    requests/s the replica sustains = batch / (step time x answer tokens)

>>> round(prefill_time_s(3524), 3), round(prefill_time_s(1024), 3)
(0.283, 0.082)
>>> round(replica_ceiling(2500)["requests_per_s"], 2), round(replica_ceiling(0)["requests_per_s"], 2)
(3.05, 9.05)
"""

from __future__ import annotations

import copy
import math
from functools import lru_cache
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu
from calc.errors import CalcError, check_range
from calc.prefix import cached_prefix_tokens
from calc.roofline import prefill_chunk, step_coefficients
from calc.sim import presets
from calc.sim.fleet import simulate_fleet
from calc.sim.scenario import Scenario
from calc.units import SECONDS_PER_HOUR, format_number
from calc.widgets.charts import line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, output, stream, table, view, widget
from calc.widgets.simulation import scenario_for, simulation_views

__all__ = ["PRESET", "SYSTEM_PROMPT_TOKENS", "QUESTION_TOKENS", "ANSWER_TOKENS", "RATE_PER_S", "coefficients",
           "prefill_time_s", "replica_ceiling", "prefill_load", "replica", "scenario", "with_hit_rate", "facts"]

#: The simulator's scenario of this step; its numbers are the page's defaults.
PRESET = "step11-system-prompt"
_DATA = presets.load_data(PRESET)
_CLASS = _DATA["workload"]["classes"][0]
SYSTEM_PROMPT_TOKENS: int = _CLASS["prefix_tokens"]
QUESTION_TOKENS: int = _CLASS["prompt_tokens"]
ANSWER_TOKENS: int = _CLASS["output_tokens"]
RATE_PER_S: float = float(_DATA["workload"]["rate_per_s"])
_ENGINE = Scenario()
#: vLLM's step budget (max_num_batched_tokens): a longer prompt is prefilled in chunks of this many tokens.
CHUNK_TOKENS: int = _ENGINE.max_num_batched_tokens
#: vLLM's cap on running requests (max_num_seqs).
MAX_RUNNING: int = _ENGINE.max_num_seqs
BLOCK_TOKENS: int = lesson.REPLICA["block_size"]
#: Longest system prompt the controls accept: prompt + answer must stay within the engine's max_model_len.
MAX_SYSTEM_PROMPT_TOKENS = 6_000
CHART_STEP_TOKENS = 250
#: A rate the replica keeps up with even when it prefills the whole prompt (the page's second run).
SLOW_RATE_PER_S = 2.0


@lru_cache(maxsize=1)
def coefficients():
    """The roofline of the running example: Llama 3.1 70B, bf16, TP 4 on H100 SXM (calc.roofline).

    Made once (a frozen :class:`calc.roofline.StepCoefficients`): the widget prices 50 ceilings
    per recompute, and rebuilding it for each was most of that time.

    >>> coefficients().tp
    4
    >>> coefficients() is coefficients()
    True
    """
    return step_coefficients(lesson.REPLICA["model"], lesson.REPLICA["gpu"], tp=lesson.REPLICA["tp"],
                             weights=lesson.REPLICA["weights"], kv_dtype=lesson.REPLICA["kv_dtype"])


@lru_cache(maxsize=1)
def _kv_capacity_tokens() -> int:
    # The lesson's 399,169 tokens (step 1): rounded parameter count, datasheet memory. A constant, made once.
    return lesson.kv_capacity(rounded_params=True).kv_cache_tokens_raw


def prefill_time_s(prompt_tokens: int, cached_tokens: int = 0, *, chunk_tokens: int = CHUNK_TOKENS) -> float:
    """Seconds to prefill one prompt on an idle replica, skipping ``cached_tokens`` already in the KV cache.

    The uncached tokens run in chunks of ``chunk_tokens`` (vLLM's chunked
    prefill); each chunk attends to everything before it, the cached prefix
    included, so a cache hit removes the prefix's own work but not the
    attention of later tokens to it. With nothing cached this is
    :func:`calc.roofline.ttft_s`. Source: :func:`calc.roofline.prefill_chunk`.

    >>> round(prefill_time_s(3524, cached_tokens=2496) * 1000, 1)
    85.4
    >>> prefill_time_s(100, cached_tokens=100)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: cached_tokens must be a whole number between 0 and 99; got 100
    """
    prompt = check_range("prompt_tokens", prompt_tokens, 1, 10_000_000, integer=True)
    cached = check_range("cached_tokens", cached_tokens, 0, prompt - 1, integer=True)
    chunk = check_range("chunk_tokens", chunk_tokens, 1, 10_000_000, integer=True)
    coef = coefficients()
    times = []
    done = cached
    while done < prompt:
        n = min(chunk, prompt - done)
        times.append(prefill_chunk(coef, chunk_tokens=n, context_before_tokens=done)["time_s"])
        done += n
    return math.fsum(times)


def replica_ceiling(system_prompt_tokens: int, *, question_tokens: int = QUESTION_TOKENS,
                    answer_tokens: int = ANSWER_TOKENS, cached: bool = False) -> dict:
    """Requests per second the running example sustains when flooded, with the system prompt prefilled or cached.

    The steady state of :func:`calc.roofline.steady_state_step`: ``batch``
    sequences always decoding, each bringing its prompt's prefill into the
    steps, so a step carries ``batch`` decode tokens plus ``batch x computed /
    answer`` prefill tokens. Uncached, every request computes its whole prompt
    and holds all of it in the KV cache; cached, it computes only what misses
    the cache (:func:`calc.prefix.cached_prefix_tokens`) and the shared blocks
    sit in the cache once. Decode still reads each sequence's whole context.
    The batch is the smaller of vLLM's ``max_num_seqs`` and what the KV cache
    holds. Source: :mod:`calc.roofline` (``steady_state_step``, ``max_throughput``);
    for ``cached=False`` the figure equals ``max_throughput``'s.

    >>> r = replica_ceiling(2500, cached=True)
    >>> r["computed_prompt_tokens"], r["batch"], round(r["requests_per_s"], 2)
    (1028, 256, 7.61)
    """
    system = check_range("system_prompt_tokens", system_prompt_tokens, 0, 1_000_000, integer=True)
    question = check_range("question_tokens", question_tokens, 1, 1_000_000, integer=True)
    answer = check_range("answer_tokens", answer_tokens, 1, 1_000_000, integer=True)
    prompt = system + question
    hit = cached_prefix_tokens(system, prompt, BLOCK_TOKENS) if cached else 0
    computed = prompt - hit
    capacity = _kv_capacity_tokens()
    own_tokens = prompt + answer - hit
    fits = (capacity - hit) // own_tokens if capacity > hit else 0
    if fits < 1:
        raise CalcError(f"system_prompt_tokens: a request of {prompt + answer:,} tokens does not fit the replica's "
                        f"{capacity:,}-token KV cache; got {system:,}", "system_prompt_tokens")
    batch = min(MAX_RUNNING, fits)
    decode_context = prompt + answer // 2
    prefill_per_step = batch * computed / answer
    prefill_context = hit + (computed + 1) / 2  # a computed token attends to the cached prefix and half its own part
    new = batch + math.ceil(prefill_per_step)
    kv_read = batch * decode_context
    pairs = batch * decode_context + math.ceil(prefill_per_step * prefill_context)
    step = coefficients().breakdown(new_tokens=new, kv_tokens_read=kv_read, attention_token_pairs=pairs)
    return {
        "system_prompt_tokens": system,
        "prompt_tokens": prompt,
        "cached_tokens": hit,
        "computed_prompt_tokens": computed,
        "batch": batch,
        "limited_by": "max_num_seqs" if batch == MAX_RUNNING else "kv_cache",
        "step_s": step["time_s"],
        "output_tokens_per_s": batch / step["time_s"],
        "requests_per_s": batch / step["time_s"] / answer,
    }


def _check_fits(system_prompt_tokens: int, question_tokens: int) -> None:
    limit = _ENGINE.max_model_len
    if system_prompt_tokens + question_tokens + ANSWER_TOKENS > limit:
        raise CalcError(
            f"system_prompt_tokens + question_tokens + the {ANSWER_TOKENS}-token answer must stay within the engine's "
            f"max_model_len of {limit:,}; got {system_prompt_tokens:,} + {question_tokens:,}", "system_prompt_tokens")


def _batch_text(ceiling: dict) -> str:
    why = "the KV cache is full" if ceiling["limited_by"] == "kv_cache" else "vLLM's max_num_seqs"
    return f"{ceiling['batch']} ({why})"


@widget
def prefill_load(
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
    question_tokens: Annotated[int, IntRange(1, 6_000, 64, "tokens", label="User's question and history")] = QUESTION_TOKENS,
    rate_per_s: Annotated[float, FloatRange(0.1, 20, 0.1, "requests/s", label="Arrival rate")] = RATE_PER_S,
):
    """What the repeated system prompt costs the replica: prefill per request, the ceiling, and the bill."""
    _check_fits(system_prompt_tokens, question_tokens)
    prompt = system_prompt_tokens + question_tokens
    full_s = prefill_time_s(prompt)
    question_s = prefill_time_s(question_tokens)
    repeated_s = full_s - question_s
    share = rate_per_s * full_s
    ceiling = replica_ceiling(system_prompt_tokens, question_tokens=question_tokens)
    cached = replica_ceiling(system_prompt_tokens, question_tokens=question_tokens, cached=True)
    bare = replica_ceiling(0, question_tokens=question_tokens)
    gpu = get_gpu(lesson.REPLICA["gpu"])
    gpus = lesson.REPLICA["tp"]
    repeated_gpu_hours = repeated_s * gpus / SECONDS_PER_HOUR
    per_million_usd = repeated_gpu_hours * 1e6 * gpu.price_usd_per_hour
    ceiling_rps = ceiling["requests_per_s"]
    if rate_per_s > ceiling_rps:
        verdict = f"Over capacity: {format_number(rate_per_s)}/s arrive, at most {format_number(ceiling_rps)}/s served"
    else:
        verdict = f"Keeps up: {rate_per_s / ceiling_rps * 100:.0f}% of the ceiling"

    xs = list(range(0, MAX_SYSTEM_PROMPT_TOKENS + 1, CHART_STEP_TOKENS))
    every = [replica_ceiling(x, question_tokens=question_tokens)["requests_per_s"] for x in xs]
    once = [replica_ceiling(x, question_tokens=question_tokens, cached=True)["requests_per_s"] for x in xs]
    figure = line_chart(
        "Requests/s the replica sustains", "system prompt (tokens)", "requests per second",
        {"prefilled in every request": (xs, every), "cached once (step 12)": (xs, once),
         "arrival rate": (xs, [rate_per_s] * len(xs))},
        summary=(f"Ceiling of the replica against the system prompt's length: "
                 f"{format_number(every[0])} requests/s with no system prompt, "
                 f"{format_number(every[-1])}/s at {xs[-1]:,} tokens prefilled every time, "
                 f"{format_number(once[-1])}/s when it is cached. Arrival rate {format_number(rate_per_s)}/s."),
    )
    figure["data"][2]["line"].update(dash="dash", color="#999999")
    figure["layout"]["yaxis"]["rangemode"] = "tozero"
    rows = [
        ["Prompt prefilled per request", f"{prompt:,} tokens", f"{question_tokens:,} tokens"],
        ["Prefill on an idle replica", f"{full_s * 1000:,.0f} ms", f"{question_s * 1000:,.0f} ms"],
        ["Requests/s the replica sustains", format_number(ceiling_rps), format_number(bare["requests_per_s"])],
        ["Running batch at saturation", _batch_text(ceiling), _batch_text(bare)],
    ]
    return view(
        outputs=[
            output("prompt_tokens", "Prompt per request", prompt, "tokens",
                   text=f"{prompt:,} tokens, {system_prompt_tokens / prompt * 100:.0f}% of them the same every time"),
            output("prefill_s", "Prefill per request (idle replica)", full_s, "s",
                   text=f"{full_s * 1000:,.0f} ms, {full_s / question_s:.1f}× the question alone"),
            output("prefill_share", "Prefill work against the replica's time", share, "",
                   text=f"{share * 100:.0f}% at {format_number(rate_per_s)} requests/s"),
            output("ceiling_per_s", "Requests/s the replica sustains", ceiling_rps, "requests/s",
                   text=f"{format_number(ceiling_rps)} requests/s (cached: {format_number(cached['requests_per_s'])})"),
            output("verdict", "At this rate", verdict),
            output("repeated_usd_per_million", "Repeated prefill per million requests", per_million_usd, "USD",
                   text=f"${per_million_usd:,.0f} ({repeated_gpu_hours * 1e6:,.0f} GPU-hours at "
                        f"${gpu.price_usd_per_hour:.2f})"),
        ],
        figures={"ceiling": figure},
        tables={"compare": table(["", "With the system prompt", "Question alone"], rows,
                                 caption="The same replica, the same questions")},
    )


def scenario(*, system_prompt_tokens: int = SYSTEM_PROMPT_TOKENS, rate_per_s: float = RATE_PER_S,
             prefix_caching: str = "off") -> dict:
    """The preset ``step11-system-prompt`` with this page's three knobs applied (a scenario dict).

    >>> s = scenario(system_prompt_tokens=0, prefix_caching="on")
    >>> s["workload"]["classes"][0]["prefix_tokens"], s["prefix_caching"], s["workload"]["rate_per_s"]
    (0, True, 4.0)
    """
    _check_fits(system_prompt_tokens, QUESTION_TOKENS)
    data = scenario_for(PRESET, rate_per_s=rate_per_s, prefix_caching=prefix_caching)
    for request_class in data["workload"]["classes"]:
        request_class["prefix_tokens"] = system_prompt_tokens
    return copy.deepcopy(data)


@stream(budget_s=4.0)
def replica(
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
    rate_per_s: Annotated[float, FloatRange(0.5, 10, 0.5, "requests/s", label="Arrival rate")] = RATE_PER_S,
    prefix_caching: Annotated[str, Choice((("off", "off"), ("on", "on")), label="Prefix caching")] = "off",
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The assistant's replica, live, with every prompt carrying the same system prompt."""
    yield from with_hit_rate(simulation_views(scenario(system_prompt_tokens=system_prompt_tokens,
                                                       rate_per_s=rate_per_s, prefix_caching=prefix_caching),
                                              frame_interval_s))


def with_hit_rate(views):
    """The simulation's views with a prefix-cache hit rate in every frame ("cache off" when there is none).

    The metrics panel lists the hit rate only when the cache is on, and the page
    keeps the outputs it was built with: a page built with the cache off would
    never show the rate, one built with it on would keep a stale rate after the
    reader turns it off. Source: :func:`calc.widgets.simulation.metrics`.

    >>> frame = next(with_hit_rate(iter([{"outputs": {}}])))
    >>> frame["outputs"]["prefix_cache_hit_rate"]["text"]
    'cache off'
    """
    for frame in views:
        frame["outputs"].setdefault("prefix_cache_hit_rate", output("prefix_cache_hit_rate", "Prefix cache hit rate",
                                                                    0, "", text="cache off"))
        yield frame


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose, computed here so the page cannot drift from calc.

    >>> f = facts()
    >>> f["prompt_tokens"], f["ceiling_rps"], f["ttft_p99_s"]
    ('3,524', '3.05', '40.2 s')
    """
    prompt = SYSTEM_PROMPT_TOKENS + QUESTION_TOKENS
    full_s = prefill_time_s(prompt)
    question_s = prefill_time_s(QUESTION_TOKENS)
    ceiling = replica_ceiling(SYSTEM_PROMPT_TOKENS)
    bare = replica_ceiling(0)
    run = presets.run(PRESET).summary
    gpu = get_gpu(lesson.REPLICA["gpu"])
    repeated_gpu_hours_per_million = (full_s - question_s) * lesson.REPLICA["tp"] / SECONDS_PER_HOUR * 1e6
    slow_run = simulate_fleet(scenario(rate_per_s=SLOW_RATE_PER_S)).summary
    return {
        "system_prompt_tokens": f"{SYSTEM_PROMPT_TOKENS:,}",
        "question_tokens": f"{QUESTION_TOKENS:,}",
        "answer_tokens": f"{ANSWER_TOKENS:,}",
        "prompt_tokens": f"{prompt:,}",
        "system_share_pct": f"{SYSTEM_PROMPT_TOKENS / prompt * 100:.0f}%",
        "rate": format_number(RATE_PER_S),
        "chunk_tokens": f"{CHUNK_TOKENS:,}",
        "prefill_ms": f"{full_s * 1000:,.0f} ms",
        "question_prefill_ms": f"{question_s * 1000:,.0f} ms",
        "prefill_ratio": f"{full_s / question_s:.1f}",
        "prefill_share_pct": f"{RATE_PER_S * full_s * 100:.0f}%",
        "ceiling_rps": format_number(ceiling["requests_per_s"]),
        "bare_ceiling_rps": format_number(bare["requests_per_s"]),
        "ceiling_batch": f"{ceiling['batch']}",
        "repeated_gpu_hours_per_million": f"{repeated_gpu_hours_per_million:,.0f}",
        "repeated_usd_per_million": f"${repeated_gpu_hours_per_million * gpu.price_usd_per_hour:,.0f}",
        "gpu_price": f"${gpu.price_usd_per_hour:.2f}",
        "gpu_price_date": gpu.price_date,
        "requests": f"{run['requests_total']:,}",
        "ttft_p50_s": f"{format_number(run['ttft_p50_s'])} s",
        "ttft_p99_s": f"{format_number(run['ttft_p99_s'])} s",
        "itl_p99_ms": f"{run['itl_p99_s'] * 1000:,.0f} ms",
        "throughput_rps": format_number(run["throughput_requests_per_s"]),
        "output_tokens_per_s": f"{run['throughput_output_tokens_per_s']:,.0f}",
        "queue_max": f"{run['queue_depth_max']:,}",
        "kv_peak_pct": f"{run['kv_use_peak'] * 100:.0f}%",
        "preemptions": f"{run['preemptions']:,}",
        "gpu_util_pct": f"{run['gpu_util_reported'] * 100:.0f}%",
        "compute_util_pct": f"{run['compute_utilization'] * 100:.0f}%",
        "prefill_tokens_computed": f"{run['prefill_tokens_computed']:,}",
        "input_tokens": f"{run['input_tokens']:,}",
        "repeated_tokens": f"{run['requests_total'] * SYSTEM_PROMPT_TOKENS:,}",
        "slow_rate": format_number(SLOW_RATE_PER_S),
        "slow_ttft_p99_s": f"{format_number(slow_run['ttft_p99_s'])} s",
        "quiz_share_pct": f"{SLOW_RATE_PER_S * full_s * 100:.0f}%",
    }
