# ---
# jupyter:
#   jupytext:
#     text_representation:
#       extension: .py
#       format_name: percent
#   kernelspec:
#     display_name: Python 3
#     language: python
#     name: python3
# ---

# %% [markdown]
# # Notebook: serving engines
#
# Reproduces the deep dive *Serving engines* with the simulator `calc.sim`: a static-batching generate loop
# against continuous batching with paged KV on the running example's replica, and the prefill a prefix cache
# saves in a multi-turn chat. To run it yourself: `pip install -e .` in a clone of the repository, then open
# this file in Jupyter. The simulator is deterministic: the same scenario gives the same numbers everywhere.

# %%
import json

from calc.cli.table import format_table
from calc.lesson import ANSWER_TOKENS, PROMPT_TOKENS
from calc.prefix import prefix_cache_hit
from calc.sim import Scenario, simulate
from calc.units import format_number


def run(batching, *, batch=32, rate=5.0, lengths="chat", requests=400, arrival="poisson"):
    scenario = {
        "batching": batching, "static_batch_size": batch,
        "workload": {"arrival": arrival, "rate_per_s": rate, "requests": requests,
                     "classes": [{"name": "chat", "lengths": lengths, "prompt_tokens": PROMPT_TOKENS,
                                  "output_tokens": ANSWER_TOKENS}]},
    }
    return simulate(Scenario.from_dict(scenario)).summary


# %% [markdown]
# ## The page's traffic: 5 requests/s of chat, 400 requests
#
# The scenario defaults are the running example (Llama 3.1 70B in bf16, four H100s, vLLM-like limits).

# %%
live = {"static": run("static"), "continuous": run("continuous")}
keys = ["ttft_p50_s", "ttft_p99_s", "queue_depth_max", "running_max", "throughput_output_tokens_per_s",
        "kv_token_share", "duration_s"]
print(format_table([[k] + [format_number(live[b][k]) for b in live] for k in keys],
                   headers=["metric", "static, batch 32", "continuous, paged"]))

# %% [markdown]
# ## Everything at once: the offline maximum
#
# Static batches of several sizes against continuous batching, 400 chat requests offered at t = 0.

# %%
offline = {"continuous": run("continuous", arrival="all-at-once")}
for batch in (8, 32, 128):
    offline[f"static {batch}"] = run("static", batch=batch, arrival="all-at-once")
best = offline["continuous"]["throughput_output_tokens_per_s"]
print(format_table([[name, format_number(s["throughput_output_tokens_per_s"]), f"{s['kv_token_share']:.0%}",
                     format_number(s["ttft_p50_s"]), f"{format_number(best / s['throughput_output_tokens_per_s'])}x"]
                    for name, s in offline.items()],
                   headers=["loop", "output tokens/s", "KV holding tokens", "TTFT p50 (s)", "continuous is"]))

# %% [markdown]
# With fixed lengths (1,024 in, 256 out) static batching has no padding and no early finishers to wait for:

# %%
fixed = {"static": run("static", lengths="fixed"), "continuous": run("continuous", lengths="fixed")}
print(format_table([[b, format_number(s["ttft_p50_s"]), format_number(s["throughput_output_tokens_per_s"]),
                     f"{s['kv_token_share']:.0%}"] for b, s in fixed.items()],
                   headers=["loop", "TTFT p50 (s)", "tokens/s", "KV holding tokens"]))

# %% [markdown]
# ## Prefix reuse in a 10-turn chat
#
# Turn i re-sends the 1,000-token system prompt and every earlier turn (400 new tokens each). With the history's
# KV blocks kept, only the rest is prefilled.

# %%
system, turn, turns = 1_000, 400, 10
without = [system + (i + 1) * turn for i in range(turns)]
with_cache = [without[0]] + [prefix_cache_hit(shared_tokens=system + i * turn, variable_tokens=turn)["computed_tokens"]
                             for i in range(1, turns)]
print(format_table([[i + 1, without[i], with_cache[i]] for i in range(turns)],
                   headers=["turn", "prefilled, no reuse", "prefilled, reuse"]))
saved = 1 - sum(with_cache) / sum(without)
print(f"total: {sum(without):,} against {sum(with_cache):,} tokens, {saved:.0%} saved")

# %% [markdown]
# ## The page's numbers

# %%
s, c = live["static"], live["continuous"]
page_numbers = {
    "static_ttft_p50": f"{format_number(s['ttft_p50_s'])} s",
    "static_ttft_p99": f"{format_number(s['ttft_p99_s'])} s",
    "static_queue_max": f"{s['queue_depth_max']:,}",
    "static_kv_share": f"{s['kv_token_share']:.0%}",
    "static_duration": f"{format_number(s['duration_s'])} s",
    "continuous_ttft_p50": f"{format_number(c['ttft_p50_s'])} s",
    "continuous_queue_max": f"{c['queue_depth_max']:,}",
    "continuous_kv_share": f"{c['kv_token_share']:.0%}",
    "continuous_batch_max": f"{c['running_max']:,}",
    "continuous_duration": f"{format_number(c['duration_s'])} s",
    "offline_continuous_tokens_per_s": format_number(best),
    "offline_static_tokens_per_s": format_number(offline["static 32"]["throughput_output_tokens_per_s"]),
    "offline_ratio": format_number(best / offline["static 32"]["throughput_output_tokens_per_s"]),
    "offline_small_ratio": format_number(best / offline["static 8"]["throughput_output_tokens_per_s"]),
    "chat_without": f"{sum(without):,}",
    "chat_with": f"{sum(with_cache):,}",
    "chat_saved": f"{saved:.0%}",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
