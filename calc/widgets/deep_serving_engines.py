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

from typing import Annotated

from calc import lesson
from calc.batching import BATCHING, LENGTHS, RATE_PER_S, REQUESTS, STATIC_BATCH, compare_runs, conversation_prefill, scenario
from calc.roofline import prefill_chunk
from calc.units import format_number
from calc.widgets.charts import line_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, output, stream, view, widget
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


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose (the notebook prints the same, computed on its own).

    >>> f = facts()
    >>> f["static_ttft_p50"], f["continuous_ttft_p50"]
    ('180 s', '0.0488 s')
    """
    live = compare_runs()
    offline = compare_runs(arrival="all-at-once")
    offline_small = compare_runs(static_batch_size=SMALL_STATIC_BATCH, arrival="all-at-once")
    chat = conversation_prefill(turns=CHAT_TURNS, turn_tokens=CHAT_TURN_TOKENS, system_tokens=CHAT_SYSTEM_TOKENS)
    s, c = live["static"], live["continuous"]
    secs = lambda v: f"{format_number(v)} s"  # noqa: E731
    pct = lambda v: f"{v:.0%}"  # noqa: E731
    return {
        "rate": format_number(RATE_PER_S),
        "requests": f"{REQUESTS:,}",
        "arrival_span": secs(REQUESTS / RATE_PER_S),
        "static_batch": str(STATIC_BATCH),
        "static_ttft_p50": secs(s["ttft_p50_s"]),
        "static_ttft_p99": secs(s["ttft_p99_s"]),
        "static_queue_max": f"{s['queue_depth_max']:,}",
        "static_duration": secs(s["duration_s"]),
        "static_tokens_per_s": format_number(s["throughput_output_tokens_per_s"]),
        "static_kv_share": pct(s["kv_token_share"]),
        "continuous_ttft_p50": secs(c["ttft_p50_s"]),
        "continuous_ttft_p99": secs(c["ttft_p99_s"]),
        "continuous_queue_max": f"{c['queue_depth_max']:,}",
        "continuous_duration": secs(c["duration_s"]),
        "continuous_tokens_per_s": format_number(c["throughput_output_tokens_per_s"]),
        "continuous_kv_share": pct(c["kv_token_share"]),
        "continuous_batch_max": f"{c['running_max']:,}",
        "offline_static_tokens_per_s": format_number(offline["static"]["throughput_output_tokens_per_s"]),
        "offline_continuous_tokens_per_s": format_number(offline["continuous"]["throughput_output_tokens_per_s"]),
        "offline_ratio": format_number(offline["continuous"]["throughput_output_tokens_per_s"]
                                       / offline["static"]["throughput_output_tokens_per_s"]),
        "small_static_batch": str(SMALL_STATIC_BATCH),
        "offline_small_ratio": format_number(offline_small["continuous"]["throughput_output_tokens_per_s"]
                                             / offline_small["static"]["throughput_output_tokens_per_s"]),
        "offline_static_kv_share": pct(offline["static"]["kv_token_share"]),
        "chat_turns": str(CHAT_TURNS),
        "chat_turn_tokens": f"{CHAT_TURN_TOKENS:,}",
        "chat_system_tokens": f"{CHAT_SYSTEM_TOKENS:,}",
        "chat_without": f"{chat['tokens_without_cache']:,}",
        "chat_with": f"{chat['tokens_with_cache']:,}",
        "chat_saved": pct(chat["saved_fraction"]),
    }
