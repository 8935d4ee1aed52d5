"""Widgets and facts of step 12, "Prefix caching" (docs/lesson/12-prefix-caching.md).

With automatic prefix caching the engine keys each full KV block by its tokens and
every token before it, so a new prompt reuses the cached blocks of its longest
*leading* run of tokens identical to an earlier prompt (:mod:`calc.prefix`). The
system prompt of step 11 is then computed once and every later request prefills
only its own part. The order of the prompt decides what can hit:

    hit tokens = floor(min(identical leading tokens, prompt - 1) / block) x block
    hit rate   = hit tokens / prompt tokens

>>> r = layout_hit("stable-first")
>>> r["hit_tokens"], round(r["hit_rate"], 3)
(2496, 0.708)
>>> layout_hit("variable-first")["hit_tokens"], layout_hit("timestamp-first")["hit_tokens"]
(0, 0)
"""

from __future__ import annotations

from functools import lru_cache
from typing import Annotated

from calc.errors import CalcError
from calc.prefix import BLOCK_TOKENS, cached_blocks, missed_prefix_tokens, prefill_time_s, replica_ceiling
from calc.prefix import LAYOUTS, PREFIX_CACHING_PRESET, TIMESTAMP_TOKENS, layout_hit, layout_parts, prefix_caching_scenario
from calc.sim import presets
from calc.sim.fleet import simulate_fleet
from calc.sim_views import (
    MAX_SYSTEM_PROMPT_TOKENS, QUESTION_TOKENS, SYSTEM_PROMPT_PRESET, SYSTEM_PROMPT_TOKENS, keeps_up_with_traffic,
    system_prompt_scenario,
)
from calc.sim_views import SYSTEM_PROMPT_ANSWER_TOKENS as ANSWER_TOKENS
from calc.sim_views import SYSTEM_PROMPT_RATE_PER_S as RATE_PER_S
from calc.units import format_number, ratio
from calc.widgets.charts import PALETTE, bar_chart
from calc.widgets.framework import Choice, FloatRange, IntRange, fact, facts_of, output, stream, table, view, widget
from calc.widgets.simulation import simulation_views
from calc.widgets.views import share_text, with_hit_rate

__all__ = ["PRESET", "LAYOUTS", "TIMESTAMP_TOKENS", "layout_parts", "layout_hit", "keeps_up_with_traffic",
           "prompt_layout", "before_after", "replica", "facts"]

#: The simulator's scenario of this step: step 11's traffic with prefix caching on.
PRESET = PREFIX_CACHING_PRESET
#: Requests in the prefill-saved total (a round number: the first request is the cold miss).
REQUESTS = 1_000

_SHORT = {"stable-first": "system prompt → question", "variable-first": "question → system prompt",
          "timestamp-first": "timestamp → system prompt → question",
          "timestamp-after": "system prompt → timestamp → question"}
#: Chart labels broken over two lines, so that the bars keep their width on a phone.
_LABEL = {key: text.replace(" → ", " →<br>", 1) if key.startswith("timestamp") else text.replace(" → ", "<br>→ ")
          for key, text in _SHORT.items()}
BLOCK_CHOICES = tuple((str(n), f"{n} (vLLM's default)" if n == BLOCK_TOKENS else str(n)) for n in (8, 16, 32, 64, 128))


@widget
def prompt_layout(
    layout: Annotated[str, Choice(LAYOUTS, label="Prompt layout")] = "stable-first",
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
    question_tokens: Annotated[int, IntRange(1, 6_000, 64, "tokens", label="Question and history")] = QUESTION_TOKENS,
    timestamp_tokens: Annotated[int, IntRange(1, 200, 1, "tokens", label="Timestamp line",
                                              help="used by the two timestamp layouts")] = TIMESTAMP_TOKENS,
    block_size_tokens: Annotated[str, Choice(BLOCK_CHOICES, label="KV block size (tokens)")] = str(BLOCK_TOKENS),
):
    """Hit rate and prefill saved for one prompt layout, and all four layouts side by side."""
    block_size_tokens = int(block_size_tokens)
    if system_prompt_tokens + question_tokens + timestamp_tokens + ANSWER_TOKENS > 8_192:
        raise CalcError(f"system_prompt_tokens + question_tokens + timestamp_tokens + the {ANSWER_TOKENS}-token answer "
                        f"must stay within 8,192 tokens (max_model_len); got {system_prompt_tokens:,} + "
                        f"{question_tokens:,} + {timestamp_tokens:,}", "system_prompt_tokens")
    chosen = layout_hit(layout, system_prompt_tokens, question_tokens, timestamp_tokens, block_size_tokens)
    prompt = chosen["prompt_tokens"]
    hit = chosen["hit_tokens"]
    cold_s = prefill_time_s(prompt)
    warm_s = prefill_time_s(prompt, hit)
    without = REQUESTS * prompt
    with_cache = prompt + (REQUESTS - 1) * (prompt - hit)

    categories, cached, computed = [], [], []
    for key, _ in LAYOUTS:
        r = layout_hit(key, system_prompt_tokens, question_tokens, timestamp_tokens, block_size_tokens)
        categories.append(("▶ " if key == layout else "") + _LABEL[key])
        cached.append(r["hit_tokens"])
        computed.append(r["computed_tokens"])
    figure = bar_chart(
        "One warm request, in tokens: cached or prefilled", categories, "",
        {"served from the prefix cache": cached, "prefilled": computed}, horizontal=True,
        summary="; ".join(f"{_SHORT[key]}: {h:,} tokens from the cache, {n:,} prefilled"
                          for (key, _), h, n in zip(LAYOUTS, cached, computed)) + ".",
    )
    figure["data"][0]["marker"]["color"] = PALETTE[2]
    figure["data"][1]["marker"]["color"] = PALETTE[5]
    figure["layout"]["yaxis"]["autorange"] = "reversed"
    figure["layout"]["legend"] = {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.12, "yanchor": "top"}
    figure["layout"]["margin"].update(l=20, b=60)
    figure["layout"]["height"] = 380
    rows = [[part["name"], "same in every request" if part["kind"] == "stable" else "differs per request",
             f"{part['tokens']:,}", f"{part['hit_tokens']:,}"] for part in chosen["parts"]]
    return view(
        outputs=[
            output("prompt_tokens", "Prompt", prompt, "tokens", text=f"{prompt:,} tokens"),
            output("hit_tokens", "Served from the cache (warm)", hit, "tokens",
                   text=f"{hit:,} tokens ({hit // block_size_tokens:,} blocks of {block_size_tokens})"),
            output("hit_rate", "Hit rate", chosen["hit_rate"], "", text=f"{chosen['hit_rate'] * 100:.1f}%"),
            output("computed_tokens", "Prefilled per request", chosen["computed_tokens"], "tokens",
                   text=f"{chosen['computed_tokens']:,} tokens"),
            output("ttft_s", "Prefill on an idle replica", warm_s, "s",
                   text=f"{warm_s * 1000:,.0f} ms (cold: {cold_s * 1000:,.0f} ms)"),
            output("saved_fraction", f"Prefill saved over {REQUESTS:,} requests", (without - with_cache) / without, "",
                   text=f"{(without - with_cache) / without * 100:.1f}% ({without - with_cache:,} of {without:,} tokens)"),
        ],
        figures={"layouts": figure},
        tables={"parts": table(["Part (in order)", "Kind", "Tokens", "From the cache"], rows,
                               caption=f"The prompt in order: {_SHORT[layout]}")},
    )


@lru_cache(maxsize=32)
def _summary(system_prompt_tokens: int, rate_per_s: float, prefix_caching: str) -> dict:
    """Summary of step 11's traffic with these knobs (the widget shows no series, so none is kept).

    Kept per input for the worker's visit: a reader moving a slider back finds the run done.
    Source: :func:`calc.sim.fleet.simulate_fleet` on :func:`calc.sim_views.system_prompt_scenario`.
    """
    data = system_prompt_scenario(system_prompt_tokens=system_prompt_tokens, rate_per_s=rate_per_s,
                           prefix_caching=prefix_caching)
    return simulate_fleet(data, time_series=False).summary


@widget(budget_s=10.0)
def before_after(
    rate_per_s: Annotated[float, FloatRange(1, 10, 0.5, "requests/s", label="Arrival rate")] = RATE_PER_S,
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
):
    """The same traffic simulated twice: the system prompt prefilled every time, then with prefix caching on."""
    before = _summary(system_prompt_tokens, rate_per_s, "off")
    after = _summary(system_prompt_tokens, rate_per_s, "on")

    def seconds(v):
        return f"{format_number(v)} s"

    def ratio(a, b, better_low=True):
        if not a or not b:
            return "–"
        r = a / b if better_low else b / a
        return f"{format_number(r)}× {'lower' if better_low else 'higher'}" if r >= 1 else f"{format_number(1 / r)}× worse"

    rows = [
        ["TTFT p50", seconds(before["ttft_p50_s"]), seconds(after["ttft_p50_s"]),
         ratio(before["ttft_p50_s"], after["ttft_p50_s"])],
        ["TTFT p99", seconds(before["ttft_p99_s"]), seconds(after["ttft_p99_s"]),
         ratio(before["ttft_p99_s"], after["ttft_p99_s"])],
        ["ITL p99", seconds(before["itl_p99_s"]), seconds(after["itl_p99_s"]),
         ratio(before["itl_p99_s"], after["itl_p99_s"])],
        ["Output tokens/s", f"{before['throughput_output_tokens_per_s']:,.0f}",
         f"{after['throughput_output_tokens_per_s']:,.0f}",
         ratio(before["throughput_output_tokens_per_s"], after["throughput_output_tokens_per_s"], better_low=False)],
        ["Requests/s served", format_number(before["throughput_requests_per_s"]),
         format_number(after["throughput_requests_per_s"]),
         ratio(before["throughput_requests_per_s"], after["throughput_requests_per_s"], better_low=False)],
        ["Prompt tokens prefilled", f"{before['prefill_tokens_computed']:,}", f"{after['prefill_tokens_computed']:,}",
         ratio(before["prefill_tokens_computed"], after["prefill_tokens_computed"])],
        ["Longest queue", f"{before['queue_depth_max']:,}", f"{after['queue_depth_max']:,}", ""],
        ["Peak KV cache use", f"{before['kv_use_peak'] * 100:.0f}%", f"{after['kv_use_peak'] * 100:.0f}%", ""],
        ["Prefix cache hit rate", "off", f"{(after['prefix_cache_hit_rate'] or 0) * 100:.1f}%", ""],
    ]
    keeps_up = keeps_up_with_traffic(after)
    return view(
        outputs=[
            output("ttft_p99_before_s", "TTFT p99, prefilled every time", before["ttft_p99_s"], "s",
                   text=seconds(before["ttft_p99_s"])),
            output("ttft_p99_after_s", "TTFT p99, prefix caching on", after["ttft_p99_s"], "s",
                   text=seconds(after["ttft_p99_s"])),
            output("throughput_before", "Output tokens/s before", before["throughput_output_tokens_per_s"],
                   "tokens/s", text=f"{before['throughput_output_tokens_per_s']:,.0f} tokens/s"),
            output("throughput_after", "Output tokens/s after", after["throughput_output_tokens_per_s"],
                   "tokens/s", text=f"{after['throughput_output_tokens_per_s']:,.0f} tokens/s"),
            output("hit_rate", "Prefix cache hit rate", after["prefix_cache_hit_rate"] or 0, "",
                   text=f"{(after['prefix_cache_hit_rate'] or 0) * 100:.1f}%"),
            output("verdict", "With the cache", "keeps up" if keeps_up else "falls behind",
                   text=("keeps up with the traffic" if keeps_up else
                         "still falls behind: the replica needs more capacity, not only the cache")),
        ],
        tables={"compare": table(["", "Prefilled every time", "Prefix caching on", "Change"], rows,
                                 caption=f"{before['requests_total']:,} requests at {format_number(rate_per_s)}/s, "
                                         f"{system_prompt_tokens:,}-token system prompt")},
    )


@stream(budget_s=4.0)
def replica(
    layout: Annotated[str, Choice(LAYOUTS, label="Prompt layout")] = "stable-first",
    prefix_caching: Annotated[str, Choice((("on", "on"), ("off", "off")), label="Prefix caching")] = "on",
    system_prompt_tokens: Annotated[int, IntRange(0, MAX_SYSTEM_PROMPT_TOKENS, 100, "tokens",
                                                  label="System prompt")] = SYSTEM_PROMPT_TOKENS,
    rate_per_s: Annotated[float, FloatRange(0.5, 10, 0.5, "requests/s", label="Arrival rate")] = RATE_PER_S,
    frame_interval_s: Annotated[float, FloatRange(0.5, 120, 0.5, "s", label="Simulated seconds per frame")] = 5.0,
):
    """Step 11's traffic with prefix caching, live; change the layout and watch the hit rate go."""
    yield from with_hit_rate(simulation_views(prefix_caching_scenario(layout=layout, prefix_caching=prefix_caching,
                                                       system_prompt_tokens=system_prompt_tokens,
                                                       rate_per_s=rate_per_s), frame_interval_s))


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ prefix_caching:name }} elsewhere: 5 uses).
UNEVEN_PREFIX_TOKENS = SYSTEM_PROMPT_TOKENS + 10  # a system prompt that ends 10 tokens into a block


@lru_cache(maxsize=None)
def _layout(layout: str, system_prompt_tokens: int | None = None) -> dict:
    return layout_hit(layout) if system_prompt_tokens is None else layout_hit(layout, system_prompt_tokens=system_prompt_tokens)


def _stable() -> dict:
    return _layout("stable-first")


@lru_cache(maxsize=None)
def _before() -> dict:
    return presets.run(SYSTEM_PROMPT_PRESET).summary


@lru_cache(maxsize=None)
def _after() -> dict:
    return presets.run(PRESET).summary


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _layout_ms(layout: str) -> str:
    hit = _layout(layout)
    return _ms(prefill_time_s(hit["prompt_tokens"], hit["hit_tokens"]))


def _uneven_hit() -> int:
    return _layout("stable-first", UNEVEN_PREFIX_TOKENS)["hit_tokens"]


@fact
def system_prompt_tokens():
    return f"{SYSTEM_PROMPT_TOKENS:,}"


@fact
def question_tokens():
    return f"{QUESTION_TOKENS:,}"


@fact
def rate():
    return format_number(RATE_PER_S)


@fact
def requests():
    return f"{_after()['requests_total']:,}"


@fact
def block_size():
    return f"{BLOCK_TOKENS}"


@fact
def prompt_tokens():
    return f"{_stable()['prompt_tokens']:,}"


@fact
def hit_tokens():
    """>>> hit_tokens(), hit_rate_pct()
    ('2,496', '70.8%')
    """
    return f"{_stable()['hit_tokens']:,}"


@fact
def hit_blocks():
    return f"{cached_blocks(_stable()['hit_tokens'], BLOCK_TOKENS):,}"


@fact("missed_prefix_tokens")
def _missed_prefix_tokens():
    return f"{missed_prefix_tokens(SYSTEM_PROMPT_TOKENS, _stable()['hit_tokens']):,}"


@fact
def computed_tokens():
    return f"{_stable()['computed_tokens']:,}"


@fact
def hit_rate_pct():
    return format(_stable()["hit_rate"], ".1%")


@fact
def timestamp_tokens():
    return f"{TIMESTAMP_TOKENS}"


@fact
def cold_ms():
    return _ms(prefill_time_s(_stable()["prompt_tokens"]))


@fact
def warm_ms():
    return _ms(prefill_time_s(_stable()["prompt_tokens"], _stable()["hit_tokens"]))


@fact
def ceiling_before_rps():
    return format_number(replica_ceiling(SYSTEM_PROMPT_TOKENS)["requests_per_s"])


@fact
def ceiling_after_rps():
    return format_number(replica_ceiling(SYSTEM_PROMPT_TOKENS, cached=True)["requests_per_s"])


@fact
def before_ttft_p50_s():
    return f"{format_number(_before()['ttft_p50_s'])} s"


@fact
def before_ttft_p99_s():
    """>>> before_ttft_p99_s(), after_ttft_p99_s()
    ('51.8 s', '0.351 s')
    """
    return f"{format_number(_before()['ttft_p99_s'])} s"


@fact
def after_ttft_p50_s():
    return f"{format_number(_after()['ttft_p50_s'])} s"


@fact
def after_ttft_p99_s():
    return f"{format_number(_after()['ttft_p99_s'])} s"


@fact
def ttft_p99_ratio():
    return f"{ratio(_before()['ttft_p99_s'], _after()['ttft_p99_s']):,.0f}"


@fact
def before_tokens_per_s():
    return f"{_before()['throughput_output_tokens_per_s']:,.0f}"


@fact
def after_tokens_per_s():
    return f"{_after()['throughput_output_tokens_per_s']:,.0f}"


@fact
def before_rps():
    return format_number(_before()["throughput_requests_per_s"])


@fact
def after_rps():
    return format_number(_after()["throughput_requests_per_s"])


@fact
def arrival_rps():
    return format_number(_after()["arrival_rate_per_s"])


@fact
def before_prefilled():
    return f"{_before()['prefill_tokens_computed']:,}"


@fact
def after_prefilled():
    return f"{_after()['prefill_tokens_computed']:,}"


@fact
def sim_hit_rate_pct():
    return format(_after()["prefix_cache_hit_rate"], ".1%")


@fact
def after_kv_peak_pct():
    return share_text(_after()["kv_use_peak"])


@fact
def before_kv_peak_pct():
    return share_text(_before()["kv_use_peak"])


@fact
def stamp_first_hit_pct():
    return share_text(_layout("timestamp-first")["hit_rate"])


@fact
def stamp_first_computed():
    return f"{_layout('timestamp-first')['computed_tokens']:,}"


@fact
def stamp_first_ms():
    return _layout_ms("timestamp-first")


@fact
def stamp_after_hit_pct():
    return format(_layout("timestamp-after")["hit_rate"], ".1%")


@fact
def stamp_after_computed():
    return f"{_layout('timestamp-after')['computed_tokens']:,}"


@fact
def stamp_after_ms():
    return _layout_ms("timestamp-after")


@fact
def uneven_prefix_tokens():
    return f"{UNEVEN_PREFIX_TOKENS:,}"


@fact
def uneven_hit_tokens():
    return f"{_uneven_hit():,}"


@fact
def uneven_missed_tokens():
    return f"{missed_prefix_tokens(UNEVEN_PREFIX_TOKENS, _uneven_hit()):,}"


facts = facts_of(__name__)
