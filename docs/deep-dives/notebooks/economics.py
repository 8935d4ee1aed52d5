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
# # Notebook: economics of inference
#
# Reproduces the deep dive *Economics of inference*: GPT-3's one-time training bill, the cost of a query on the
# running example's replica, and the workshop's two "claims worth verifying", checked with `calc`. To run it
# yourself: `pip install -e .` in a clone of the repository, then open this file in Jupyter.

# %%
import json

from calc.allocation import POLICIES, compare_allocation, sharegpt_like_requests
from calc.catalog import get_gpu, get_model
from calc.cli.table import format_table
from calc.cost import usd_per_million_tokens
from calc.lesson import ANSWER_TOKENS, GPU, MODEL, PROMPT_TOKENS, TP, WEIGHTS
from calc.memory import kv_capacity
from calc.roofline import max_throughput, step_coefficients
from calc.units import format_number

gpu = get_gpu(GPU)
print(f"{gpu.name}: ${gpu.price_usd_per_hour}/GPU-hour ({gpu.price_date}; {gpu.price_source})")

# %% [markdown]
# ## Training, once
#
# Lambda's count: 3.14e23 FLOPs (Brown et al.: 3,640 petaflop/s-days) at a V100's theoretical 28 TFLOP/s.

# %%
flops, v100 = 3.14e23, 28e12
gpu_hours = flops / v100 / 3600
print(f"{gpu_hours / 1e6:.2f} M V100-hours = {gpu_hours / (24 * 365.25):.0f} GPU-years; "
      f"$4.6M implies ${4.6e6 / gpu_hours:.2f} per GPU-hour")

# %% [markdown]
# ## Inference, every query
#
# Saturated output tokens/s on the roofline (batch capped at 256 running sequences and by the KV cache), then the
# cost formula per query.

# %%
replicas = {"llama-3.1-8b": (1, "bf16"), MODEL: (TP, WEIGHTS), "llama-3.1-405b": (8, "fp8")}  # MODEL: the running example


def cost(model, prompt, output):
    tp, weights = replicas[model]
    coef = step_coefficients(get_model(model), gpu, tp=tp, weights=weights)
    cap = kv_capacity(get_model(model), gpu, tp=tp, weights=weights)
    run = max_throughput(coef, input_tokens=prompt, output_tokens=output, kv_capacity_tokens=cap.kv_cache_tokens,
                         max_running=256)
    usd_per_hour = gpu.price_usd_per_hour * tp
    per_query = usd_per_hour / 3600 / (run["output_tokens_per_s"] / output)
    return {"tps": run["output_tokens_per_s"], "batch": run["batch"], "usd_per_query": per_query,
            "usd_per_m": usd_per_million_tokens(usd_per_hour, run["output_tokens_per_s"])}


rows = []
for model in replicas:
    for prompt, output in ((PROMPT_TOKENS, ANSWER_TOKENS), (PROMPT_TOKENS, 512), (PROMPT_TOKENS, 2_000), (PROMPT_TOKENS, 350)):
        c = cost(model, prompt, output)
        rows.append([model, prompt, output, format_number(c["tps"]), c["batch"], f"${c['usd_per_m']:,.2f}",
                     f"{format_number(c['usd_per_query'] * 100)} c"])
print(format_table(rows, headers=["model", "prompt", "answer", "tokens/s", "batch", "$/M output", "per query"]))

chat = cost(MODEL, PROMPT_TOKENS, ANSWER_TOKENS)
per_day = chat["usd_per_query"] * 10e6
print(f"10 M queries/day: ${per_day:,.0f} a day; GPT-3's $4.6M passed after {4.6e6 / per_day:,.0f} days")
print(f"ChatGPT at about $700,000 a day passed it after {4.6e6 / 700_000:.2f} days")

# %% [markdown]
# ## Claim 1: the $36B search bill
#
# SemiAnalysis: a search cost 1.06 cents and earned 1.61; with a ChatGPT-style answer it cost 1.42. What query
# count turns the difference into $36B a year?

# %%
extra = (1.42 - 1.06) / 100
implied = 36e9 / extra
print(f"extra per search: {extra * 100:.2f} c; implied volume {implied / 1e12:.1f} T searches/year "
      f"({implied / (365 * 86_400) / 1e3:.0f} thousand/s); Morgan Stanley's 2022 count: 3.3 T ({implied / 3.3e12:.2f}x fewer)")
print(f"margin a search leaves: {(1.61 - 1.06):.2f} c")
bills = {}
for model, output in ((MODEL, 2_000), ("llama-3.1-405b", 2_000), (MODEL, 350)):
    c = cost(model, PROMPT_TOKENS, output)
    bills[(model, output)] = c["usd_per_query"]
print(format_table([[m, o, f"{format_number(q * 100)} c", f"${format_number(q * implied / 1e9)}B",
                     f"${format_number(q * 3.3e12 / 1e9)}B"] for (m, o), q in bills.items()],
                   headers=["model", "answer", "per search", "at the implied volume", "at 3.3 T"]))

# %% [markdown]
# ## Claim 2: KV utilization from ~20% to over 95%
#
# `calc.allocation` on 2,000 ShareGPT-like requests (maximum length 2,048) against the vLLM paper's figure 2.

# %%
paper = {"max": 0.204, "pow2": 0.268, "oracle": 0.382, "paged": 0.963}
result = compare_allocation(sharegpt_like_requests(2000, seed=0), max_model_len=2048)
shares = {p: result[p].token_state_fraction for p in POLICIES}
print(format_table([[p, f"{shares[p]:.1%}", f"{paper[p]:.1%}"] for p in POLICIES],
                   headers=["policy", "calc", "paper"]))

# %% [markdown]
# ## The page's numbers

# %%
longer = cost(MODEL, PROMPT_TOKENS, 2 * ANSWER_TOKENS)
page_numbers = {
    "gpu_years": format_number(round(gpu_hours / (24 * 365.25))),
    "implied_price": f"${4.6e6 / gpu_hours:.2f}",
    "chat_tokens_per_s": format_number(chat["tps"]),
    "chat_usd_per_million": f"${chat['usd_per_m']:,.2f}",
    "chat_cents": f"{format_number(chat['usd_per_query'] * 100)} ¢",
    "chat_per_day": f"${per_day:,.0f}",
    "chat_days": format_number(4.6e6 / per_day),
    "chatgpt_days": format_number(4.6e6 / 700_000),
    "extra_cents": f"{format_number(extra * 100)} ¢",
    "implied_volume_t": format_number(implied / 1e12),
    "volume_ratio": format_number(implied / 3.3e12),
    "long70_cents": f"{format_number(bills[(MODEL, 2_000)] * 100)} ¢",
    "long70_implied": f"${format_number(bills[(MODEL, 2_000)] * implied / 1e9)}B",
    "long405_cents": f"{format_number(bills[('llama-3.1-405b', 2_000)] * 100)} ¢",
    "long405_ms": f"${format_number(bills[('llama-3.1-405b', 2_000)] * 3.3e12 / 1e9)}B",
    "short70_ms": f"${format_number(bills[(MODEL, 350)] * 3.3e12 / 1e9)}B",
    "quiz_cents_2x": f"{format_number(longer['usd_per_query'] * 100)} ¢",
    "quiz_ratio": format_number(longer["usd_per_query"] / chat["usd_per_query"]),
    "paged_calc": f"{shares['paged']:.1%}",
    "max_calc": f"{shares['max']:.0%}",
    "oracle_calc": f"{shares['oracle']:.0%}",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True, ensure_ascii=False))
