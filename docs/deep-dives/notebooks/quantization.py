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
# # Notebook: quantization
#
# Reproduces the deep dive *Quantization*: weight bytes per format with every term, the users each format
# leaves room for, the published accuracy deltas, and 4-bit rounding done by hand. To run it yourself:
# `pip install -e .` in a clone of the repository, then open this file in Jupyter.

# %%
import json
import math
import random
from statistics import NormalDist

from calc.catalog import MODELS, get_gpu, get_model
from calc.cli.table import format_table
from calc.lesson import GPU, MODEL, TP
from calc.memory import WEIGHT_FORMATS, kv_capacity, weight_bytes
from calc.quantization import STUDY_SUMMARY, accuracy_deltas, weight_formats_table
from calc.units import format_bytes, format_number

model, gpu = get_model("mistral-7b"), get_gpu("l4")
print(model.name, f"{model.total_params:,} parameters;", gpu.name)

# %% [markdown]
# ## Weight bytes, term by term
#
# `weight_bytes` splits a checkpoint into the quantized payload, its scales (and zero points) and the tensors
# kept in 16 bits. `nominal` is every parameter at the format's width: the figure usually quoted.

# %%
rows = []
for fmt in WEIGHT_FORMATS:
    wb = weight_bytes(model, fmt)
    rows.append([fmt, format_bytes(wb.nominal_bytes), format_bytes(wb.payload_bytes), format_bytes(wb.scale_bytes),
                 format_bytes(wb.unquantized_bytes), format_bytes(wb.total_bytes),
                 format_number(wb.total_bytes * 8 / model.total_params)])
print(format_table(rows, headers=["format", "nominal", "payload", "scales", "16-bit", "total", "bits/weight"]))

# %% [markdown]
# NF4 as bitsandbytes stores it: blocks of 64 weights, one fp32 absmax each.

# %%
print("NF4, blocks of 64:", format_bytes(weight_bytes(model, "nf4", group_size=64).total_bytes))

# %% [markdown]
# ## What the bytes buy on a 24 GB card
#
# vLLM's KV sizing (90% of the card, minus weights, activation workspace and overhead), in users of 4,096 tokens,
# and the batch-1 decode step against bf16 on the roofline.

# %%
context = 4_096
table = {r["weights"]: r for r in weight_formats_table(model, gpu, context_tokens=context)}
rows = []
for fmt in WEIGHT_FORMATS:
    cap = kv_capacity(model, gpu, weights=fmt)
    rows.append([fmt, f"{cap.kv_cache_tokens:,}", cap.kv_cache_tokens // context,
                 f"{format_number(table[fmt]['decode_speedup'])}x"])
print(format_table(rows, headers=["format", "KV tokens", f"users at {context:,}", "decode speed-up"]))

# %% [markdown]
# ## Every catalog model at 16 and 4 bits

# %%
print(format_table([[m.name, format_bytes(weight_bytes(m, "bf16").total_bytes),
                     format_bytes(weight_bytes(m, "int4").nominal_bytes),
                     format_bytes(weight_bytes(m, "int4").total_bytes)] for m in MODELS.values()],
                   headers=["model", "bf16", "int4 nominal", "int4 checkpoint"]))

# %% [markdown]
# ## Published accuracy (Llama 3.1 Instruct, OpenLLM v1 average)

# %%
print(format_table([[r["model"], r["weights"], r["base"], r["quantized"], f"{r['delta_points']:+.2f}"]
                    for r in accuracy_deltas()], headers=["model", "format", "base", "quantized", "delta"]))
print("study summary:", STUDY_SUMMARY)

# %% [markdown]
# ## Rounding by hand: INT4 absmax against NF4
#
# The NF4 levels are normal quantiles (bitsandbytes' `create_normal_map`, offset 0.9677083), scaled to [-1, 1].

# %%
normal = NormalDist()
offset = 0.9677083


def points(n):
    return [offset + (0.5 - offset) * i / (n - 1) for i in range(n)][:-1]


levels = sorted([normal.inv_cdf(p) for p in points(9)] + [0.0] + [-normal.inv_cdf(p) for p in points(8)])
levels = [v / max(levels) for v in levels]
print("NF4 levels:", [round(v, 4) for v in levels])


def stored(group, scheme):
    top = max(abs(v) for v in group)
    if scheme == "nf4":
        return [top * min(levels, key=lambda level: abs(level - v / top)) for v in group]
    q = 2 ** ({"int8": 8, "int4": 4}[scheme] - 1) - 1
    return [round(round(v / (top / q)) * (top / q), 6) for v in group]


errors, zeros = {}, {}
for scheme in ("int8", "int4", "nf4"):
    rng = random.Random(0)
    se, sv, z = [], [], 0
    for _ in range(200):
        group = [rng.gauss(0.0, 1.0) for _ in range(64)]
        out = stored(group, scheme)
        se += [(a - b) ** 2 for a, b in zip(group, out)]
        sv += [v * v for v in group]
        z += sum(1 for v in out if v == 0)
    errors[scheme] = math.sqrt(math.fsum(se) / math.fsum(sv))
    zeros[scheme] = z / (200 * 64)
print(format_table([[s, f"{errors[s]:.1%}", f"{zeros[s]:.1%}"] for s in errors],
                   headers=["scheme", "relative RMS error", "stored as 0"]))

# %% [markdown]
# ## The page's numbers

# %%
wb = {fmt: weight_bytes(model, fmt) for fmt in WEIGHT_FORMATS}
lesson = {r["weights"]: r for r in weight_formats_table(MODEL, GPU, tp=TP)}
page_numbers = {
    "bf16": format_bytes(wb["bf16"].total_bytes),
    "int4_nominal": format_bytes(wb["int4"].nominal_bytes),
    "int4_payload": format_bytes(wb["int4"].payload_bytes),
    "int4_scales": format_bytes(wb["int4"].scale_bytes),
    "kept_16bit": format_bytes(wb["int4"].unquantized_bytes),
    "int4_total": format_bytes(wb["int4"].total_bytes),
    "int8_total": format_bytes(wb["int8"].total_bytes),
    "nf4_64_total": format_bytes(weight_bytes(model, "nf4", group_size=64).total_bytes),
    "users_bf16": format_number(kv_capacity(model, gpu, weights="bf16").kv_cache_tokens // context),
    "users_int4": format_number(kv_capacity(model, gpu, weights="int4").kv_cache_tokens // context),
    "int4_speedup": format_number(table["int4"]["decode_speedup"]),
    "lesson_fp8_speedup": format_number(lesson["fp8"]["decode_speedup"]),
    "lesson_fp8_kv_gain": format_number(lesson["fp8"]["kv_room_gain"]),
    "int4_error": f"{errors['int4']:.1%}",
    "nf4_error": f"{errors['nf4']:.1%}",
    "int4_zero_share": f"{zeros['int4']:.0%}",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
