"""Widgets and facts of the deep dive "Serving engines" (docs/deep-dives/serving-engines.md).

What an engine such as vLLM, SGLang or TensorRT-LLM adds over a plain
``model.generate`` loop, measured in the simulator (:mod:`calc.sim`):

* a static-batching loop (:mod:`calc.sim.static_batching`): take a batch, pad
  it, run it until its longest answer ends, only then admit more; its KV cache
  is one slab of batch x (longest prompt + longest answer);
* continuous batching with paged KV (:mod:`calc.sim.engine`): admit and retire
  requests at every step, KV in blocks of 16 tokens as sequences grow.

And prefix reuse (vLLM's automatic prefix caching, SGLang's RadixAttention):
a multi-turn conversation re-sends its whole history every turn; with the
history's KV kept, each turn prefills only its new tokens
(:func:`conversation_prefill`).

>>> s = scenario("static", static_batch_size=32, requests=50)
>>> s["batching"], s["static_batch_size"], s["workload"]["classes"][0]["lengths"]
('static', 32, 'chat')
>>> conversation_prefill(turns=4, turn_tokens=100, system_tokens=0)["tokens_without_cache"]
1000
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson
from calc.batching import BATCHING, LENGTHS, RATE_PER_S, REQUESTS, STATIC_BATCH, compare_runs, conversation_prefill, scenario
from calc.roofline import prefill_chunk
from calc.units import format_number, ratio
from calc.widgets.charts import line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, view, widget
from calc.widgets.simulation import simulation_views

__all__ = ["engine", "conversation", "facts"]

SMALL_STATIC_BATCH = 8
#: The page's conversation: ten turns of 400 new tokens after a 1,000-token system prompt.
CHAT_TURNS, CHAT_TURN_TOKENS, CHAT_SYSTEM_TOKENS = 10, 400, 1_000
MAX_MS = 1_000


@stream(budget_s=4.0)
def engine(
    batching: Annotated[str, Choice(BATCHING, label="Engine loop")] = "continuous",
    static_batch_size: Annotated[int, IntRange(1, 512, 1, "requests", label="Static batch size")] = STATIC_BATCH,
    rate_per_s: Annotated[float, FloatRange(0.5, 50, 0.5, "requests/s", label="Arrival rate")] = RATE_PER_S,
    lengths: Annotated[str, Choice(LENGTHS, label="Request lengths")] = "chat",
    requests: Annotated[int, IntRange(20, 2000, 10, "requests", label="Requests")] = REQUESTS,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """The running example's replica under one engine loop, live: queue, batch, KV cache, latency, throughput."""
    data = scenario(batching, static_batch_size=static_batch_size, rate_per_s=rate_per_s, lengths=lengths,
                    requests=requests)
    yield from simulation_views(data, frame_interval_s)


@widget
def conversation(
    turns: Annotated[int, IntRange(1, 200, 1, "turns", label="Turns in the conversation")] = CHAT_TURNS,
    turn_tokens: Annotated[int, IntRange(1, 100_000, 50, "tokens", label="New tokens per turn (question + answer)")]
    = CHAT_TURN_TOKENS,
    system_tokens: Annotated[int, IntRange(0, 100_000, 100, "tokens", label="System prompt")] = CHAT_SYSTEM_TOKENS,
):
    """Prefill work and the last turn's TTFT of a multi-turn chat, with and without reusing the history's KV."""
    r = conversation_prefill(turns=turns, turn_tokens=turn_tokens, system_tokens=system_tokens)
    coef = lesson.coefficients()
    last_prompt = r["per_turn_without"][-1]
    cold = prefill_chunk(coef, chunk_tokens=last_prompt)["time_s"]
    reused = last_prompt - r["per_turn_with"][-1]
    warm = prefill_chunk(coef, chunk_tokens=r["per_turn_with"][-1], context_before_tokens=reused)["time_s"]
    axis = list(range(1, turns + 1))
    chart = line_chart(
        "Prompt tokens prefilled at each turn", "turn", "tokens prefilled", {
            "history re-prefilled (no prefix cache)": (axis, r["per_turn_without"]),
            "history reused (prefix cache)": (axis, r["per_turn_with"]),
        }, markers=True,
        summary=(f"Without reuse each turn prefills the whole conversation so far, {last_prompt:,} tokens by turn "
                 f"{turns}; with reuse only the new tokens, {r['per_turn_with'][-1]:,}."))
    return view(
        outputs=[
            output("without", "Prefill tokens, whole conversation, no reuse", r["tokens_without_cache"], "tokens",
                   text=f"{r['tokens_without_cache']:,}"),
            output("with", "With the history's KV reused", r["tokens_with_cache"], "tokens",
                   text=f"{r['tokens_with_cache']:,}"),
            output("saved", "Prefill saved", r["saved_fraction"], "", text=f"{r['saved_fraction']:.0%}"),
            output("ttft_cold", f"Turn {turns} TTFT, no reuse (idle replica)", cold, "s",
                   text=f"{format_number(cold * MAX_MS)} ms"),
            output("ttft_warm", f"Turn {turns} TTFT, history reused", warm, "s",
                   text=f"{format_number(warm * MAX_MS)} ms"),
        ],
        figures={"turns": chart},
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ deep_serving_engines:name }} elsewhere: 4 uses); the runs
# are cached in calc.batching.compare_runs.
def _live(kind: str) -> dict:
    return compare_runs()[kind]


def _offline(kind: str) -> dict:
    return compare_runs(arrival="all-at-once")[kind]


def _throughput_ratio(runs: dict) -> float:
    return ratio(runs["continuous"]["throughput_output_tokens_per_s"], runs["static"]["throughput_output_tokens_per_s"])


@functools.cache
def _chat() -> dict:
    return conversation_prefill(turns=CHAT_TURNS, turn_tokens=CHAT_TURN_TOKENS, system_tokens=CHAT_SYSTEM_TOKENS)


def _secs(value: float) -> str:
    return f"{format_number(value)} s"


def _pct(value: float) -> str:
    return f"{value:.0%}"


@fact
def rate():
    return format_number(RATE_PER_S)


@fact
def requests():
    return f"{REQUESTS:,}"


@fact
def arrival_span():
    return _secs(ratio(REQUESTS, RATE_PER_S))


@fact
def static_batch():
    return str(STATIC_BATCH)


@fact
def static_ttft_p50():
    """>>> static_ttft_p50(), continuous_ttft_p50()
    ('180 s', '0.0488 s')
    """
    return _secs(_live("static")["ttft_p50_s"])


@fact
def static_ttft_p99():
    return _secs(_live("static")["ttft_p99_s"])


@fact
def static_queue_max():
    return f"{_live('static')['queue_depth_max']:,}"


@fact
def static_duration():
    return _secs(_live("static")["duration_s"])


@fact
def static_tokens_per_s():
    return format_number(_live("static")["throughput_output_tokens_per_s"])


@fact
def static_kv_share():
    return _pct(_live("static")["kv_token_share"])


@fact
def continuous_ttft_p50():
    return _secs(_live("continuous")["ttft_p50_s"])


@fact
def continuous_ttft_p99():
    return _secs(_live("continuous")["ttft_p99_s"])


@fact
def continuous_queue_max():
    return f"{_live('continuous')['queue_depth_max']:,}"


@fact
def continuous_duration():
    return _secs(_live("continuous")["duration_s"])


@fact
def continuous_tokens_per_s():
    return format_number(_live("continuous")["throughput_output_tokens_per_s"])


@fact
def continuous_kv_share():
    return _pct(_live("continuous")["kv_token_share"])


@fact
def continuous_batch_max():
    return f"{_live('continuous')['running_max']:,}"


@fact
def offline_static_tokens_per_s():
    return format_number(_offline("static")["throughput_output_tokens_per_s"])


@fact
def offline_continuous_tokens_per_s():
    return format_number(_offline("continuous")["throughput_output_tokens_per_s"])


@fact
def offline_ratio():
    return format_number(_throughput_ratio(compare_runs(arrival="all-at-once")))


@fact
def small_static_batch():
    return str(SMALL_STATIC_BATCH)


@fact
def offline_small_ratio():
    return format_number(_throughput_ratio(compare_runs(static_batch_size=SMALL_STATIC_BATCH, arrival="all-at-once")))


@fact
def offline_static_kv_share():
    return _pct(_offline("static")["kv_token_share"])


@fact
def chat_turns():
    return str(CHAT_TURNS)


@fact
def chat_turn_tokens():
    return f"{CHAT_TURN_TOKENS:,}"


@fact
def chat_system_tokens():
    return f"{CHAT_SYSTEM_TOKENS:,}"


@fact
def chat_without():
    return f"{_chat()['tokens_without_cache']:,}"


@fact
def chat_with():
    return f"{_chat()['tokens_with_cache']:,}"


@fact
def chat_saved():
    return _pct(_chat()["saved_fraction"])


facts = facts_of(__name__)
