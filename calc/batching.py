"""Static against continuous batching on the same traffic, and what reusing a conversation's KV saves in prefill.

Static batching waits for a batch to fill and runs it to its longest answer;
continuous batching (Yu et al., "Orca", OSDI 2022) admits and retires requests at
every step. Both run in the simulator (:mod:`calc.sim`)."""

from __future__ import annotations

from functools import lru_cache

from calc.errors import check_choice, check_range
from calc.lesson import SCENARIO_BASE
from calc.prefix import prefix_cache_hit
from calc.sim import Scenario, simulate

__all__ = [
    "BATCHING", "LENGTHS", "RATE_PER_S", "REQUESTS", "STATIC_BATCH", "scenario", "compare_runs",
    "conversation_prefill",
]


BATCHING = (("static", "static batches (generate loop)"), ("continuous", "continuous batching, paged KV"))


LENGTHS = (("chat", "chat: ShareGPT-like, varied"), ("fixed", "fixed: 1,024 in, 256 out"))


#: Defaults of the page's runs: the scenario's default traffic (5 requests/s, about half of what the
#: replica sustains with continuous batching), chat-like lengths, a static batch of 32.
RATE_PER_S, REQUESTS, STATIC_BATCH = 5.0, 400, 32


def scenario(batching: str, *, static_batch_size: int = STATIC_BATCH, rate_per_s: float = RATE_PER_S,
             lengths: str = "chat", requests: int = REQUESTS, arrival: str = "poisson") -> dict:
    """The running example's replica (Llama 3.1 70B, four H100s) as a :mod:`calc.sim` scenario, batched one way.

    ``lengths`` ``chat`` draws prompts and answers from the ShareGPT-like lognormal
    of :mod:`calc.sim.workload` (means 161 and 338 tokens); ``fixed`` is the
    lesson's 1,024 in, 256 out. Source: :mod:`calc.sim.scenario` (schema).

    >>> s = scenario("continuous", lengths="fixed")
    >>> s["workload"]["classes"][0]["prompt_tokens"], s["parameter_count"]
    (1024, 'lesson')
    """
    check_choice("batching", batching, [b for b, _ in BATCHING])
    check_choice("lengths", lengths, [k for k, _ in LENGTHS])
    return {
        **SCENARIO_BASE,  # the running example as every lesson preset starts from it (step 1's KV cache)
        "name": f"deep dive: {batching} batching", "batching": batching,
        "static_batch_size": check_range("static_batch_size", static_batch_size, 1, 4096, integer=True),
        "workload": {"arrival": arrival, "rate_per_s": check_range("rate_per_s", rate_per_s, 0.01, 1000),
                     "requests": check_range("requests", requests, 1, 100_000, integer=True),
                     "classes": [{"name": "chat", "lengths": lengths, "prompt_tokens": 1024, "output_tokens": 256}]},
    }


@lru_cache(maxsize=16)
def compare_runs(*, static_batch_size: int = STATIC_BATCH, rate_per_s: float = RATE_PER_S, lengths: str = "chat",
                 requests: int = REQUESTS, arrival: str = "poisson") -> dict:
    """Summaries of the same traffic served by static batching and by continuous batching (:func:`calc.sim.simulate`).

    >>> r = compare_runs(requests=100)
    >>> r["static"]["requests_completed"], r["continuous"]["requests_completed"]
    (100, 100)
    >>> r["continuous"]["kv_token_share"] > 0.9 > 0.5 > r["static"]["kv_token_share"]
    True
    """
    out = {}
    for batching, _ in BATCHING:
        data = scenario(batching, static_batch_size=static_batch_size, rate_per_s=rate_per_s, lengths=lengths,
                        requests=requests, arrival=arrival)
        out[batching] = simulate(Scenario.from_dict(data)).summary
    return out


def conversation_prefill(*, turns: int, turn_tokens: int, system_tokens: int = 0, block_size_tokens: int = 16) -> dict:
    """Prefill tokens of a multi-turn conversation, with and without reusing the history's KV.

    Turn ``i`` sends the system prompt, every earlier turn and its new
    ``turn_tokens``. Without a prefix cache each turn prefills all of it; with one
    (vLLM's automatic prefix caching, SGLang's RadixAttention) the history's full
    KV blocks are reused and only the rest is computed. Assumes the history stays
    cached between turns (no eviction). Source: :func:`calc.prefix.prefix_cache_hit`.

    >>> r = conversation_prefill(turns=10, turn_tokens=200, system_tokens=500)
    >>> r["tokens_without_cache"], r["tokens_with_cache"], round(r["saved_fraction"], 3)
    (16000, 2576, 0.839)
    """
    turns = check_range("turns", turns, 1, 1000, integer=True)
    turn_tokens = check_range("turn_tokens", turn_tokens, 1, 1_000_000, integer=True)
    system_tokens = check_range("system_tokens", system_tokens, 0, 10_000_000, integer=True)
    without, with_cache = [], []
    for i in range(turns):
        history = system_tokens + i * turn_tokens
        hit = (prefix_cache_hit(shared_tokens=history, variable_tokens=turn_tokens,
                                block_size_tokens=block_size_tokens)
               if history else {"computed_tokens": turn_tokens})
        without.append(history + turn_tokens)
        with_cache.append(hit["computed_tokens"] if i else history + turn_tokens)
    return {"turns": turns, "per_turn_without": without, "per_turn_with": with_cache,
            "tokens_without_cache": sum(without), "tokens_with_cache": sum(with_cache),
            "saved_fraction": 1 - sum(with_cache) / sum(without)}
