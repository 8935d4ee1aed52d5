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
# # Notebook: the trade-off triangle
#
# Reproduces the deep dive *The trade-off triangle*: the latency-throughput frontier of the running example's
# replica, measured in the simulator for each weight format, and its three corners for a 25 ms ITL target. To run
# it yourself: `pip install -e .` in a clone of the repository, then open this file in Jupyter.

# %%
import json

from calc.cli.table import format_table
from calc.lesson import MODEL, TP
from calc.quantization import accuracy_deltas
from calc.sim import Scenario, simulate
from calc.units import format_number

caps = [1, 4, 16, 64, 256]
formats = ["bf16", "fp8", "int4"]


def point(weights, cap, model=MODEL, tp=TP):
    scenario = {"model": model, "tp": tp, "weights": weights, "max_num_seqs": cap,
                "workload": {"arrival": "all-at-once", "requests": max(4 * cap, 4)}}
    s = simulate(Scenario.from_dict(scenario)).summary
    return {"weights": weights, "cap": cap, "tps": s["throughput_output_tokens_per_s"], "itl": s["itl_p50_s"],
            "usd": s["cost_usd_per_million_output_tokens"]}


# %% [markdown]
# ## The frontier, format by format
#
# Each run offers 4 × cap requests (1,024 tokens in, 256 out) at once; a bigger cap means a bigger batch.

# %%
frontier = {fmt: [point(fmt, cap) for cap in caps] for fmt in formats}
rows = []
for fmt in formats:
    for p in frontier[fmt]:
        rows.append([fmt, p["cap"], f"{format_number(p['itl'] * 1000)} ms", format_number(p["tps"]), f"${p['usd']:,.2f}"])
print(format_table(rows, headers=["weights", "cap", "median ITL", "tokens/s", "$ per M output tokens"]))

# %% [markdown]
# ## The three corners at a 25 ms target

# %%
target = 0.025


def best(points):
    ok = [p for p in points if p["itl"] <= target]
    return max(ok, key=lambda p: p["tps"]) if ok else None


lq = best(frontier["bf16"])
tq = max(frontier["bf16"], key=lambda p: p["tps"])
lt = max((b for b in (best(frontier["fp8"]), best(frontier["int4"])) if b), key=lambda p: p["tps"])
print(format_table([[name, p["weights"], p["cap"], f"{format_number(p['itl'] * 1000)} ms", format_number(p["tps"]),
                     f"${p['usd']:,.2f}"] for name, p in (("latency + quality", lq), ("throughput + quality", tq),
                                                          ("latency + throughput", lt))],
                   headers=["corner", "weights", "cap", "ITL", "tokens/s", "$/M"]))
print("published accuracy of the lower-bit corner:",
      [(r["model"], r["weights"], f"{r['delta_points']:+.2f}") for r in accuracy_deltas(MODEL, lt["weights"])])

# %% [markdown]
# ## Under live traffic: 6 requests/s

# %%
live = {}
for weights, cap in (("bf16", 32), ("bf16", 256), ("fp8", 256)):
    s = simulate(Scenario.from_dict({"weights": weights, "max_num_seqs": cap,
                                     "workload": {"rate_per_s": 6.0, "requests": 600}})).summary
    live[(weights, cap)] = s
print(format_table([[w, cap, format_number(s["ttft_p50_s"]), f"{format_number(s['itl_p50_s'] * 1000)} ms",
                     s["queue_depth_max"]] for (w, cap), s in live.items()],
                   headers=["weights", "cap", "TTFT p50 (s)", "ITL p50", "longest queue"]))

# %% [markdown]
# ## The page's numbers

# %%
bf = {p["cap"]: p for p in frontier["bf16"]}


def ms(seconds):
    return f"{format_number(seconds * 1000)} ms"


page_numbers = {
    "bf16_cap1_itl": ms(bf[1]["itl"]),
    "bf16_cap1_tps": format_number(bf[1]["tps"]),
    "bf16_cap1_usd": f"${bf[1]['usd']:,.2f}",
    "bf16_cap256_itl": ms(bf[256]["itl"]),
    "bf16_cap256_tps": format_number(bf[256]["tps"]),
    "bf16_cap256_usd": f"${bf[256]['usd']:,.2f}",
    "cost_ratio": format_number(bf[1]["usd"] / bf[256]["usd"]),
    "corner_lq_cap": str(lq["cap"]),
    "corner_lq_usd": f"${lq['usd']:,.2f}",
    "corner_lt_weights": lt["weights"],
    "corner_lt_itl": ms(lt["itl"]),
    "corner_lt_tps": format_number(lt["tps"]),
    "live_small_ttft": f"{format_number(live[('bf16', 32)]['ttft_p50_s'])} s",
    "live_bf16_ttft": f"{format_number(live[('bf16', 256)]['ttft_p50_s'])} s",
    "live_fp8_ttft": f"{format_number(live[('fp8', 256)]['ttft_p50_s'])} s",
    "live_fp8_itl": ms(live[("fp8", 256)]["itl_p50_s"]),
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
