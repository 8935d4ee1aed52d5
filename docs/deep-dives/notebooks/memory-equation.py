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
# # Notebook: the GPU memory equation
#
# This notebook reproduces the numbers of the deep dive *The GPU memory equation* with the project's
# `calc` package, and extends its tables. It runs at every build of the site; to run it yourself, clone
# the repository, `pip install -e .` in a Python 3.11+ environment and open this file in Jupyter.
#
# GPU memory × utilization = weights + users × context × KV bytes per token + overhead,
# with the utilization vLLM uses by default (0.9: the rest of the card is left to other processes).

# %%
import json
import math

from calc.catalog import GPUS, get_gpu, get_model
from calc.cli.table import format_table
from calc.lesson import GPU, REPLICA
from calc.memory import (ACTIVATION_WORKSPACE_BYTES, NON_TORCH_BASE_BYTES, kv_bytes_per_token,
                         kv_tokens_per_request, weight_bytes)
from calc.units import format_bytes, format_number

model = get_model("mistral-7b")
print(model.name, "-", model.source)

# %% [markdown]
# ## The fixed term: weights
#
# `weight_bytes` counts every tensor of the model's shape at the chosen width. In bf16 every parameter
# takes two bytes.

# %%
weights = weight_bytes(model, "bf16")
print(f"parameters: {model.total_params:,} ({format_number(model.total_params / 1e9)} B)")
print(f"weights in bf16: {weights.total_bytes:,} bytes = {format_bytes(weights.total_bytes)}")

# %% [markdown]
# ## The variable term: KV cache
#
# Keys and values for every layer and KV head, per token.

# %%
per_token = kv_bytes_per_token(model, "bf16")
by_hand = 2 * model.layers * model.kv_heads * model.head_dim * 2
print(f"2 x {model.layers} layers x {model.kv_heads} KV heads x {model.head_dim} head dim x 2 bytes = {by_hand:,} B")
assert per_token == by_hand
print(f"KV per token: {per_token:,} B = {format_bytes(per_token)}")

# %% [markdown]
# ## Memory needed as users and context grow
#
# Overhead is the activation workspace plus the memory outside PyTorch that `calc.memory` assumes for one
# GPU. Every row is a straight line in the number of users; the slope is the context.

# %%
overhead = ACTIVATION_WORKSPACE_BYTES + NON_TORCH_BASE_BYTES
contexts = [1_024, 4_096, 8_192, 32_768]
users_list = [1, 4, 16, 64, 128]
rows = []
for users in users_list:
    rows.append([users] + [format_bytes(weights.total_bytes + users * c * per_token + overhead) for c in contexts])
print(f"overhead: {format_bytes(overhead)}")
print(format_table(rows, headers=["users"] + [f"{c:,} tokens" for c in contexts]))

# %% [markdown]
# ## How many users fit, GPU by GPU
#
# Room for KV = GPU memory (datasheet, decimal GB) × 0.9 - weights - overhead; users = room // KV per user.

# %%
utilization = REPLICA["gpu_memory_utilization"]  # 0.9, the running example's (vLLM's default)


def users_that_fit(gpu_key, context_tokens, window=False):
    room = get_gpu(gpu_key).memory_bytes("marketed") * utilization - weights.total_bytes - overhead
    kv_tokens = kv_tokens_per_request(model, context_tokens) if window else context_tokens
    return int(room // (kv_tokens * per_token)) if room > 0 else 0


rows = []
for key, gpu in GPUS.items():
    rows.append([gpu.name, format_bytes(gpu.memory_bytes("marketed"))]
                + [f"{users_that_fit(key, c):,}" for c in contexts])
print(format_table(rows, headers=["GPU", "memory"] + [f"at {c:,}" for c in contexts]))

# %% [markdown]
# Mistral 7B v0.1 attends only to its last 4,096 tokens. An engine that frees the blocks outside that
# window keeps at most 4,096 tokens per request, so long contexts stop costing more KV:

# %%
print(format_table([[f"{c:,}", f"{users_that_fit(GPU, c):,}",
                     f"{users_that_fit(GPU, c, window=True):,}"] for c in contexts],
                   headers=["context", "H100 users, full KV", "H100 users, window freed"]))

# %% [markdown]
# ## The page's numbers
#
# The same figures the page quotes, computed here from `calc` alone. The site's tests compare this line
# with the page module's facts.

# %%
example_users, example_context, quiz_context = 16, 4_096, 8_192
example_kv = example_users * example_context * per_token
example_total = weights.total_bytes + example_kv + overhead
quiz_room = get_gpu(GPU).memory_bytes("marketed") * utilization - weights.total_bytes - overhead
kv_equals_weights = int(weights.total_bytes // per_token)
page_numbers = {
    "weights_bf16": format_bytes(weights.total_bytes),
    "kv_per_token": f"{per_token:,} bytes",
    "kv_per_token_kb": format_bytes(per_token),
    "overhead": format_bytes(overhead),
    "kv_per_user": format_bytes(example_context * per_token),
    "example_kv": format_bytes(example_kv),
    "example_total": format_bytes(example_total),
    "small_gpu_usable": format_bytes(get_gpu("l4").memory_bytes("marketed") * utilization),
    "small_gpu_short": format_bytes(example_total - get_gpu("l4").memory_bytes("marketed") * utilization),
    "users_small_gpu": f"{users_that_fit('l4', example_context):,}",
    "users_big_gpu": f"{users_that_fit(GPU, example_context):,}",
    "kv_equals_weights_tokens": f"{kv_equals_weights:,}",
    "kv_equals_weights_users": f"{math.ceil(kv_equals_weights / example_context):,}",
    "quiz_room": format_bytes(quiz_room),
    "quiz_kv_per_user": format_bytes(quiz_context * per_token),
    "quiz_users": f"{users_that_fit(GPU, quiz_context):,}",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
