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

import functools
from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu
from calc.prefix import (
    CHUNK_TOKENS, prefill_busy_share, prefill_time_s, repeated_prefix_cost, repeated_prefix_tokens, replica_ceiling,
)
from calc.sim import presets
from calc.sim.fleet import simulate_fleet
from calc.sim_views import (
    MAX_SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS, SYSTEM_PROMPT_ANSWER_TOKENS, SYSTEM_PROMPT_PRESET,
    SYSTEM_PROMPT_RATE_PER_S, SYSTEM_PROMPT_TOKENS, check_system_prompt_fits, system_prompt_scenario,
)
from calc.units import SECONDS_PER_HOUR, format_number
from calc.widgets.charts import line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.simulation import simulation_views
from calc.widgets.views import share_text, with_hit_rate

__all__ = ["PRESET", "prefill_load", "replica", "facts"]

#: The simulator's scenario of this step; its numbers are the page's defaults (:mod:`calc.sim_views`).
PRESET = SYSTEM_PROMPT_PRESET
RATE_PER_S = SYSTEM_PROMPT_RATE_PER_S
ANSWER_TOKENS = SYSTEM_PROMPT_ANSWER_TOKENS
CHART_STEP_TOKENS = 250
#: A rate the replica keeps up with even when it prefills the whole prompt (the page's second run).
SLOW_RATE_PER_S = 2.0


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
    check_system_prompt_fits(system_prompt_tokens, question_tokens)
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


@stream(budget_s=4.0)
def replica(
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
    rate_per_s: Annotated[float, FloatRange(0.5, 10, 0.5, "requests/s", label="Arrival rate")] = RATE_PER_S,
    prefix_caching: Annotated[str, Choice((("off", "off"), ("on", "on")), label="Prefix caching")] = "off",
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The assistant's replica, live, with every prompt carrying the same system prompt."""
    yield from with_hit_rate(simulation_views(system_prompt_scenario(system_prompt_tokens=system_prompt_tokens,
                                                       rate_per_s=rate_per_s, prefix_caching=prefix_caching),
                                              frame_interval_s))


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ system_prompt:name }} elsewhere: 3 uses); the two runs
# once each.
@functools.cache
def _cost() -> dict:
    return repeated_prefix_cost(SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS, tp=lesson.REPLICA["tp"],
                                usd_per_gpu_hour=_gpu().price_usd_per_hour)


def _gpu():
    return get_gpu(lesson.REPLICA["gpu"])


@functools.cache
def _run() -> dict:
    return presets.run(PRESET).summary


@functools.cache
def _slow_run() -> dict:
    return simulate_fleet(system_prompt_scenario(rate_per_s=SLOW_RATE_PER_S)).summary


def _ms0(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


@fact
def system_prompt_tokens():
    return f"{SYSTEM_PROMPT_TOKENS:,}"


@fact
def question_tokens():
    return f"{QUESTION_TOKENS:,}"


@fact
def answer_tokens():
    return f"{ANSWER_TOKENS:,}"


@fact
def prompt_tokens():
    """>>> prompt_tokens(), ceiling_rps(), ttft_p99_s()
    ('3,524', '3.05', '51.8 s')
    """
    return f"{_cost()['prompt_tokens']:,}"


@fact
def system_share_pct():
    return share_text(_cost()["system_share"])


@fact
def rate():
    return format_number(RATE_PER_S)


@fact
def chunk_tokens():
    return f"{CHUNK_TOKENS:,}"


@fact
def prefill_ms():
    return _ms0(_cost()["full_prefill_s"])


@fact
def question_prefill_ms():
    return _ms0(_cost()["question_prefill_s"])


@fact
def prefill_ratio():
    return f"{_cost()['prefill_ratio']:.1f}"


@fact
def prefill_share_pct():
    return share_text(prefill_busy_share(RATE_PER_S, _cost()["full_prefill_s"]))


@fact
def ceiling_rps():
    return format_number(replica_ceiling(SYSTEM_PROMPT_TOKENS)["requests_per_s"])


@fact
def bare_ceiling_rps():
    return format_number(replica_ceiling(0)["requests_per_s"])


@fact
def ceiling_batch():
    return f"{replica_ceiling(SYSTEM_PROMPT_TOKENS)['batch']}"


@fact
def repeated_gpu_hours_per_million():
    return f"{_cost()['repeated_gpu_hours_per_million']:,.0f}"


@fact
def repeated_usd_per_million():
    return f"${_cost()['repeated_usd_per_million']:,.0f}"


@fact
def gpu_price():
    return f"${_gpu().price_usd_per_hour:.2f}"


@fact
def gpu_price_date():
    return _gpu().price_date


@fact
def requests():
    return f"{_run()['requests_total']:,}"


@fact
def ttft_p50_s():
    return f"{format_number(_run()['ttft_p50_s'])} s"


@fact
def ttft_p99_s():
    return f"{format_number(_run()['ttft_p99_s'])} s"


@fact
def itl_p99_ms():
    return _ms0(_run()["itl_p99_s"])


@fact
def throughput_rps():
    return format_number(_run()["throughput_requests_per_s"])


@fact
def output_tokens_per_s():
    return f"{_run()['throughput_output_tokens_per_s']:,.0f}"


@fact
def queue_max():
    return f"{_run()['queue_depth_max']:,}"


@fact
def kv_peak_pct():
    return share_text(_run()["kv_use_peak"])


@fact
def preemptions():
    return f"{_run()['preemptions']:,}"


@fact
def gpu_util_pct():
    return share_text(_run()["gpu_util_reported"])


@fact
def compute_util_pct():
    return share_text(_run()["compute_utilization"])


@fact
def prefill_tokens_computed():
    return f"{_run()['prefill_tokens_computed']:,}"


@fact
def input_tokens():
    return f"{_run()['input_tokens']:,}"


@fact
def repeated_tokens():
    return f"{repeated_prefix_tokens(_run()['requests_total'], SYSTEM_PROMPT_TOKENS):,}"


@fact
def slow_rate():
    return format_number(SLOW_RATE_PER_S)


@fact
def slow_ttft_p99_s():
    return f"{format_number(_slow_run()['ttft_p99_s'])} s"


@fact
def quiz_share_pct():
    return share_text(prefill_busy_share(SLOW_RATE_PER_S, _cost()["full_prefill_s"]))


facts = facts_of(__name__)
