"""Prefix caching: how much of a prompt's prefill a cache of KV blocks can skip.

An engine with automatic prefix caching keys every *full* KV block by the block's
tokens and all the tokens before it (vLLM, docs "Automatic Prefix Caching";
SGLang's RadixAttention matches a radix tree of token prefixes the same way). A
new request reuses a block only if every token from the start of the prompt up to
the end of that block is identical to a cached request. So:

* only the leading run of tokens shared by all requests can ever hit;
* it hits in whole blocks (the partial block at its end is recomputed);
* at least the prompt's last token is always computed, to get the logits for the
  first output token (vLLM ``kv_cache_manager.py``: "When all tokens hit the
  cache, we must recompute the last token").

Put the stable part (system prompt, tools, few-shot examples) first and the
variable part (the user's question, a timestamp) last: the order decides the hit
rate.

>>> stable = prefix_cache_hit(shared_tokens=2500, variable_tokens=200, block_size_tokens=16, order="stable-first")
>>> stable["hit_tokens"], round(stable["hit_rate"], 3)
(2496, 0.924)
>>> prefix_cache_hit(shared_tokens=2500, variable_tokens=200, block_size_tokens=16, order="variable-first")["hit_tokens"]
0
"""

from __future__ import annotations

import copy
import math
from collections.abc import Sequence

from calc import lesson
from calc.errors import CalcError, check_choice, check_range
from calc.roofline import prefill_chunk
from calc.sim.scenario import Scenario
from calc.sim_views import (
    MAX_SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS, SYSTEM_PROMPT_RATE_PER_S, SYSTEM_PROMPT_TOKENS, scenario_for,
)

__all__ = [
    "ORDERS", "cached_prefix_tokens", "prefix_cache_hit", "hit_tokens_for_layout", "fleet_prefill_saved",
    "prefill_time_s", "replica_ceiling", "CHUNK_TOKENS", "MAX_RUNNING", "BLOCK_TOKENS", "LAYOUTS",
    "TIMESTAMP_TOKENS", "layout_parts", "layout_hit", "PREFIX_CACHING_PRESET", "prefix_caching_scenario",
    "missed_prefix_tokens", "cached_blocks", "repeated_prefix_cost", "prefill_busy_share", "repeated_prefix_tokens",
]

_ENGINE = Scenario()
#: vLLM's step budget (max_num_batched_tokens): a longer prompt is prefilled in chunks of this many tokens.
CHUNK_TOKENS: int = _ENGINE.max_num_batched_tokens
#: vLLM's cap on running requests (max_num_seqs).
MAX_RUNNING: int = _ENGINE.max_num_seqs
#: Tokens per KV block of the running example (vLLM's default block_size).
BLOCK_TOKENS: int = lesson.REPLICA["block_size"]

ORDERS = ("stable-first", "variable-first")
MAX_TOKENS = 10_000_000
MAX_BLOCK = 4096


def cached_prefix_tokens(identical_leading_tokens: int, prompt_tokens: int, block_size_tokens: int) -> int:
    """Tokens of one prompt served from cache, given how many leading tokens match a cached prompt.

    ``floor(min(identical, prompt - 1) / block) x block``: whole blocks only, and
    never the prompt's last token (it must run to produce logits).
    Source: vLLM v1 ``KVCacheManager.get_computed_blocks`` (max cache hit length
    = prompt length - 1; full blocks only).

    >>> cached_prefix_tokens(2500, 2700, 16)
    2496
    >>> cached_prefix_tokens(2048, 2048, 16)  # a full repeat still recomputes its last block
    2032
    >>> cached_prefix_tokens(15, 400, 16)  # less than one block matches: nothing hits
    0
    """
    prompt_tokens = check_range("prompt_tokens", prompt_tokens, 1, MAX_TOKENS, integer=True)
    identical = check_range("identical_leading_tokens", identical_leading_tokens, 0, prompt_tokens, integer=True)
    block = check_range("block_size_tokens", block_size_tokens, 1, MAX_BLOCK, integer=True)
    usable = min(identical, prompt_tokens - 1)
    return (usable // block) * block


def hit_tokens_for_layout(parts: Sequence[tuple[str, int]], block_size_tokens: int) -> dict:
    """Cache hit for a prompt given as ordered parts, each ``("stable", n)`` or ``("variable", n)``.

    Stable parts are identical in every request, variable parts differ. Only the
    leading run of stable parts can hit; a stable part after the first variable
    part never does, because its blocks' keys include the differing tokens before
    it. Returns prompt tokens, the identical leading run, hit tokens and hit rate
    for a warm cache (every request after the first).
    Source: the block keying of vLLM's automatic prefix caching (docs, "Automatic
    Prefix Caching") and :func:`cached_prefix_tokens`.

    >>> r = hit_tokens_for_layout([("stable", 2000), ("variable", 100), ("stable", 500)], 16)
    >>> r["leading_identical_tokens"], r["hit_tokens"], r["prompt_tokens"]
    (2000, 2000, 2600)
    """
    if not parts:
        raise CalcError("parts must list at least one (kind, tokens) pair; got none", "parts")
    prompt = 0
    leading = 0
    still_leading = True
    for i, part in enumerate(parts):
        if not isinstance(part, (tuple, list)) or len(part) != 2:
            raise CalcError(f"parts[{i}] must be a (kind, tokens) pair; got {part!r}", "parts")
        kind, tokens = part
        check_choice(f"parts[{i}] kind", kind, ("stable", "variable"))
        tokens = check_range(f"parts[{i}] tokens", tokens, 0, MAX_TOKENS, integer=True)
        prompt += tokens
        if kind == "stable" and still_leading:
            leading += tokens
        elif kind == "variable" and tokens > 0:
            still_leading = False
    if prompt == 0:
        raise CalcError("parts must hold at least one token in total; got 0", "parts")
    hit = cached_prefix_tokens(leading, prompt, block_size_tokens)
    return {
        "prompt_tokens": prompt,
        "leading_identical_tokens": leading,
        "hit_tokens": hit,
        "computed_tokens": prompt - hit,
        "hit_rate": hit / prompt,
    }


def prefix_cache_hit(*, shared_tokens: int, variable_tokens: int, block_size_tokens: int = 16, order: str = "stable-first") -> dict:
    """Hit rate and prefill saved for a prompt of a shared part and a per-request part.

    ``order`` is ``"stable-first"`` (shared part, then the variable part) or
    ``"variable-first"`` (the variable part first, which ruins every block after
    it). The default block of 16 tokens is vLLM's default ``block_size``.
    Source: :func:`hit_tokens_for_layout`; vLLM engine arguments (block size 16).

    >>> r = prefix_cache_hit(shared_tokens=2500, variable_tokens=1024, block_size_tokens=16)
    >>> r["hit_tokens"], r["computed_tokens"], round(r["prefill_saved_fraction"], 3)
    (2496, 1028, 0.708)
    """
    check_choice("order", order, ORDERS)
    stable = ("stable", shared_tokens)
    variable = ("variable", variable_tokens)
    parts = [stable, variable] if order == "stable-first" else [variable, stable]
    result = hit_tokens_for_layout(parts, block_size_tokens)
    result.update(
        order=order,
        shared_tokens=shared_tokens,
        variable_tokens=variable_tokens,
        block_size_tokens=block_size_tokens,
        prefill_saved_fraction=result["hit_rate"],
    )
    return result


def fleet_prefill_saved(*, requests: int, shared_tokens: int, variable_tokens: int, block_size_tokens: int = 16, order: str = "stable-first") -> dict:
    """Prefill tokens computed for ``requests`` prompts, with and without the cache.

    The first request fills the cache (a cold miss); every later one hits as in
    :func:`prefix_cache_hit`, assuming the shared blocks stay cached (no
    eviction). Source: :func:`prefix_cache_hit`.

    >>> r = fleet_prefill_saved(requests=100, shared_tokens=2500, variable_tokens=200)
    >>> r["tokens_without_cache"], r["tokens_with_cache"], round(r["saved_fraction"], 3)
    (270000, 22896, 0.915)
    """
    requests = check_range("requests", requests, 1, MAX_TOKENS, integer=True)
    one = prefix_cache_hit(shared_tokens=shared_tokens, variable_tokens=variable_tokens, block_size_tokens=block_size_tokens, order=order)
    prompt = one["prompt_tokens"]
    without = requests * prompt
    with_cache = prompt + (requests - 1) * one["computed_tokens"]
    return {
        "requests": requests,
        "tokens_without_cache": without,
        "tokens_with_cache": with_cache,
        "tokens_saved": without - with_cache,
        "saved_fraction": (without - with_cache) / without,
    }


def prefill_time_s(prompt_tokens: int, cached_tokens: int = 0, *, chunk_tokens: int = CHUNK_TOKENS,
                   coefficients=None) -> float:
    """Seconds to prefill one prompt on an idle replica, skipping ``cached_tokens`` already in the KV cache.

    ``coefficients`` are the replica's roofline (:func:`calc.roofline.step_coefficients`;
    default the running example's, :func:`calc.lesson.coefficients`).

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
    coef = coefficients or lesson.coefficients()
    times = []
    done = cached
    while done < prompt:
        n = min(chunk, prompt - done)
        times.append(prefill_chunk(coef, chunk_tokens=n, context_before_tokens=done)["time_s"])
        done += n
    return math.fsum(times)


def replica_ceiling(system_prompt_tokens: int, *, question_tokens: int = lesson.PROMPT_TOKENS,
                    answer_tokens: int = lesson.ANSWER_TOKENS, cached: bool = False) -> dict:
    """Requests per second the running example sustains when flooded, with a system prompt prefilled or cached.

    Every request is a ``system_prompt_tokens`` prefix shared by all, then its own
    ``question_tokens``, answered in ``answer_tokens`` (steps 11 and 12).

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
    capacity = lesson.KV_CAPACITY_TOKENS_LESSON_GB  # step 1's 399,169 tokens (rounded parameter count)
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
    step = lesson.coefficients().breakdown(new_tokens=new, kv_tokens_read=kv_read, attention_token_pairs=pairs)
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


#: A line such as "Today is Tuesday, 12 May 2026, 14:03 UTC." is about this many tokens.
TIMESTAMP_TOKENS = 16


LAYOUTS = (
    ("stable-first", "System prompt first, question last"),
    ("variable-first", "Question first, system prompt last"),
    ("timestamp-first", "Timestamp line above the system prompt"),
    ("timestamp-after", "System prompt, then timestamp, then question"),
)


_LAYOUT_KEYS = tuple(key for key, _ in LAYOUTS)


def layout_parts(layout: str, system_prompt_tokens: int = SYSTEM_PROMPT_TOKENS,
                 question_tokens: int = QUESTION_TOKENS, timestamp_tokens: int = TIMESTAMP_TOKENS) -> list[tuple]:
    """The prompt's parts in order, each ``(name, "stable" | "variable", tokens)``.

    Stable parts are identical in every request (the system prompt); variable
    parts differ (the user's question, a timestamp). Source: the layouts the
    page compares; prompt-caching guides advise static content first and
    dynamic content last (vLLM "Automatic Prefix Caching"; OpenAI "Prompt caching").

    >>> layout_parts("timestamp-first")
    [('Timestamp line', 'variable', 16), ('System prompt', 'stable', 2500), ('Question', 'variable', 1024)]
    """
    check_choice("layout", layout, _LAYOUT_KEYS)
    system = ("System prompt", "stable", system_prompt_tokens)
    question = ("Question", "variable", question_tokens)
    stamp = ("Timestamp line", "variable", timestamp_tokens)
    return {
        "stable-first": [system, question],
        "variable-first": [question, system],
        "timestamp-first": [stamp, system, question],
        "timestamp-after": [system, stamp, question],
    }[layout]


def layout_hit(layout: str, system_prompt_tokens: int = SYSTEM_PROMPT_TOKENS, question_tokens: int = QUESTION_TOKENS,
               timestamp_tokens: int = TIMESTAMP_TOKENS, block_size_tokens: int = BLOCK_TOKENS) -> dict:
    """Warm-cache hit of one prompt laid out as ``layout``, with the hit split over its parts.

    :func:`calc.prefix.hit_tokens_for_layout` gives the hit tokens (whole
    blocks of the leading identical run, never the last prompt token); the
    hit covers the prompt's first ``hit_tokens`` tokens, so each part's share
    follows from its position. Source: :mod:`calc.prefix`.

    >>> r = layout_hit("timestamp-after")
    >>> r["hit_tokens"], [p["hit_tokens"] for p in r["parts"]]
    (2496, [2496, 0, 0])
    """
    parts = layout_parts(layout, system_prompt_tokens, question_tokens, timestamp_tokens)
    result = hit_tokens_for_layout([(kind, tokens) for _, kind, tokens in parts], block_size_tokens)
    start = 0
    split = []
    for name, kind, tokens in parts:
        hit = max(0, min(tokens, result["hit_tokens"] - start))
        split.append({"name": name, "kind": kind, "tokens": tokens, "hit_tokens": hit})
        start += tokens
    result.update(layout=layout, parts=split)
    return result


#: The simulator's scenario of step 12: step 11's traffic (one shared system prompt) with prefix caching on.
PREFIX_CACHING_PRESET = "step12-prefix-caching"


def prefix_caching_scenario(*, layout: str = "stable-first", prefix_caching: str = "on",
                            system_prompt_tokens: int = SYSTEM_PROMPT_TOKENS,
                            rate_per_s: float = SYSTEM_PROMPT_RATE_PER_S) -> dict:
    """The preset :data:`PREFIX_CACHING_PRESET` with a prompt layout applied, as a scenario dict.

    The simulator caches one shared prefix per request class, so a layout
    enters it as its *leading identical run* (all a cache can ever reuse,
    :func:`hit_tokens_for_layout`) followed by a part unique to each request:
    a question placed first, or a timestamp above the system prompt, leaves no
    shared prefix at all. ``prefix_caching`` is ``"on"``, ``"off"`` or
    ``"preset"`` (:func:`calc.sim_views.scenario_for`).

    >>> s = prefix_caching_scenario(layout="variable-first")
    >>> c = s["workload"]["classes"][0]; c["prefix_tokens"], c["prompt_tokens"], s["prefix_caching"]
    (0, 3524, True)
    >>> c = prefix_caching_scenario(layout="timestamp-after")["workload"]["classes"][0]
    >>> c["prefix_tokens"], c["prompt_tokens"]  # the timestamp ends the shared run: 2,500 + 16 + 1,024 tokens
    (2500, 1040)
    >>> prefix_caching_scenario(system_prompt_tokens=7000)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: system_prompt_tokens must be a whole number between 0 and 6000; got 7000
    """
    check_choice("layout", layout, _LAYOUT_KEYS)
    check_range("system_prompt_tokens", system_prompt_tokens, 0, MAX_SYSTEM_PROMPT_TOKENS, integer=True)
    data = scenario_for(PREFIX_CACHING_PRESET, rate_per_s=rate_per_s, prefix_caching=prefix_caching)
    for request_class in data["workload"]["classes"]:
        parts = layout_parts(layout, system_prompt_tokens, request_class["prompt_tokens"])
        shared = hit_tokens_for_layout([(kind, tokens) for _, kind, tokens in parts], BLOCK_TOKENS)
        request_class["prefix_tokens"] = shared["leading_identical_tokens"]
        request_class["prompt_tokens"] = shared["prompt_tokens"] - shared["leading_identical_tokens"]
    return copy.deepcopy(data)


def missed_prefix_tokens(prefix_tokens: int, hit_tokens: int) -> int:
    """The tokens of a shared prefix the cache does not serve: vLLM caches whole blocks only, so the prefix's
    last part-full block is computed again (the hit is a whole number of blocks, :func:`layout_hit`).

    >>> missed_prefix_tokens(2_010, 2_000)
    10
    """
    return prefix_tokens - hit_tokens


def cached_blocks(hit_tokens: int, block_tokens: int = BLOCK_TOKENS) -> int:
    """The whole KV blocks a prefix-cache hit of ``hit_tokens`` reuses.

    >>> cached_blocks(2_496)
    156
    """
    return hit_tokens // block_tokens


def repeated_prefix_cost(system_prompt_tokens: int, question_tokens: int, *, tp: int, usd_per_gpu_hour: float) -> dict:
    """What prefilling the same system prompt with every request costs without a prefix cache (step 11): the
    prompt, the system prompt's share of it, the prefill of the whole prompt and of the question alone
    (:func:`prefill_time_s`), their ratio, and the GPU-hours and USD per million requests spent on the repeated
    part (``(full - question) x TP GPUs``). Source: :func:`prefill_time_s`; prices from the catalog.

    >>> r = repeated_prefix_cost(2_500, 1_024, tp=4, usd_per_gpu_hour=2.5)
    >>> r["prompt_tokens"], round(r["system_share"], 3), round(r["prefill_ratio"], 1)
    (3524, 0.709, 3.5)
    """
    from calc.units import SECONDS_PER_HOUR

    prompt = system_prompt_tokens + question_tokens
    full_s, question_s = prefill_time_s(prompt), prefill_time_s(question_tokens)
    hours = (full_s - question_s) * tp / SECONDS_PER_HOUR * 1e6
    return {"prompt_tokens": prompt, "system_share": system_prompt_tokens / prompt, "full_prefill_s": full_s,
            "question_prefill_s": question_s, "prefill_ratio": full_s / question_s,
            "repeated_gpu_hours_per_million": hours, "repeated_usd_per_million": hours * usd_per_gpu_hour}


def prefill_busy_share(rate_per_s: float, prefill_s: float) -> float:
    """The share of one replica's time its prefills take at ``rate_per_s`` requests of ``prefill_s`` each
    (one prefill after another: utilization = arrival rate x service time, Little's law).

    >>> prefill_busy_share(2.0, 0.25)
    0.5
    """
    return rate_per_s * prefill_s


def repeated_prefix_tokens(requests: int, prefix_tokens: int) -> int:
    """The prompt tokens a run of ``requests`` spends on the same prefix when nothing is cached.

    >>> repeated_prefix_tokens(1_000, 2_500)
    2500000
    """
    return requests * prefix_tokens
