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
# # Notebook: attention and the KV cache
#
# Reproduces the deep dive *Attention and the KV cache*: KV bytes per token under MHA, GQA, MQA and MLA, the
# requests each layout fits, and the HBM traffic FlashAttention removes. To run it yourself: `pip install -e .`
# in a clone of the repository, then open this file in Jupyter.

# %%
import json

from calc.catalog import MODELS, get_model
from calc.cli.table import format_table
from calc.context import prefill_flops, unfused_attention_scores_bytes
from calc.lesson import GPU, MODEL, REQUEST_TOKENS, TP, kv_capacity as lesson_kv_capacity
from calc.memory import kv_bytes_per_token_by_attention, kv_capacity
from calc.units import format_bytes, format_number

kinds = ["mha", "gqa", "mqa", "mla"]

# %% [markdown]
# ## KV bytes per token, every catalog model, four layouts
#
# MHA keeps K and V for every head; GQA for the model's KV heads (one per 8 query heads for a model that is not
# GQA); MQA for one; MLA a latent of DeepSeek's proportions (or the model's own ranks).

# %%
rows = []
for m in MODELS.values():
    per = kv_bytes_per_token_by_attention(m)
    rows.append([m.name, m.attention] + [f"{per[k]:,}" for k in kinds])
print(format_table(rows, headers=["model", "own kind", "MHA B", "GQA B", "MQA B", "MLA B"]))

# %% [markdown]
# ## Requests of 4,096 tokens that fit: Mistral-7B on one H100
#
# vLLM's KV room (90% of the card, minus weights, workspace and overhead), divided by each layout's bytes per
# request. On one GPU nothing is split or copied.

# %%
mistral = get_model("mistral-7b")
room = kv_capacity(mistral, GPU).kv_cache_bytes
per = kv_bytes_per_token_by_attention(mistral)
context = 4_096
fits = {k: int(room // (per[k] * context)) for k in kinds}
print(f"KV room: {format_bytes(room)}")
print(format_table([[k.upper(), f"{per[k]:,} B", format_bytes(per[k] * context), f"{fits[k]:,}"] for k in kinds],
                   headers=["layout", "per token", "per request", "requests"]))

# %% [markdown]
# ## The running example on four GPUs
#
# Under tensor parallelism 4, GQA's 8 KV heads split two per GPU; MQA's single head and MLA's latent are copied
# to every GPU, so per GPU they do not shrink.

# %%
llama = get_model(MODEL)
per70 = kv_bytes_per_token_by_attention(llama)
tp = TP
per_gpu = {
    "mha": llama.layers * 2 * (llama.attention_heads // tp) * llama.head_dim * 2,
    "gqa": llama.layers * 2 * (llama.kv_heads // tp) * llama.head_dim * 2,
    "mqa": llama.layers * 2 * 1 * llama.head_dim * 2,
    "mla": per70["mla"],
}
room70 = lesson_kv_capacity().kv_cache_bytes  # the replica of calc.lesson
quiz = {k: int(room70 // (per_gpu[k] * REQUEST_TOKENS)) for k in kinds}
print(format_table([[k.upper(), f"{per70[k]:,} B", f"{per_gpu[k]:,} B", f"{quiz[k]:,}"] for k in kinds],
                   headers=["layout", "per token", "per GPU", f"{REQUEST_TOKENS:,}-token requests"]))

# %% [markdown]
# ## FlashAttention: the score matrix that never reaches HBM
#
# Unfused attention writes heads × n × n scores per layer and passes over them three times; the fused floor reads
# Q, K, V and writes O once per layer.

# %%
def traffic(model, n):
    scores = unfused_attention_scores_bytes(model, n)
    kv_heads = model.kv_heads if model.attention != "mha" else model.attention_heads
    fused = model.layers * (2 * n * model.attention_heads * model.head_dim * 2 + 2 * n * kv_heads * model.head_dim * 2)
    return scores["matrix_bytes_per_layer"], scores["hbm_traffic_bytes"] + fused, fused


rows = []
for n in [1_024, 4_096, 16_384, 100_000]:
    scratch, unfused, fused = traffic(llama, n)
    rows.append([f"{n:,}", format_bytes(scratch), format_bytes(unfused), format_bytes(fused),
                 f"{format_number(unfused / fused)}x", f"{prefill_flops(llama, n)['attention_share']:.0%}"])
print(format_table(rows, headers=["prompt", "scores/layer", "unfused", "fused floor", "ratio", "attention FLOPs"]))

# %% [markdown]
# ## The page's numbers

# %%
deepseek = get_model("deepseek-v3")
ds = kv_bytes_per_token_by_attention(deepseek)
scratch, unfused, fused = traffic(llama, 100_000)
page_numbers = {
    "mha": f"{per['mha']:,} B",
    "gqa": f"{per['gqa']:,} B",
    "mqa": f"{per['mqa']:,} B",
    "mla": f"{per['mla']:,} B",
    "mha_requests": f"{fits['mha']:,}",
    "gqa_requests": f"{fits['gqa']:,}",
    "mqa_requests": f"{fits['mqa']:,}",
    "mla_requests": f"{fits['mla']:,}",
    "mla_deepseek": f"{ds['mla']:,} B",
    "mha_deepseek": f"{ds['mha']:,} B",
    "scratch": format_bytes(scratch),
    "unfused": format_bytes(unfused),
    "fused": format_bytes(fused),
    "traffic_ratio": format_number(unfused / fused),
    "quiz_gqa_requests": f"{quiz['gqa']:,}",
    "quiz_mha_requests": f"{quiz['mha']:,}",
    "quiz_mla_requests": f"{quiz['mla']:,}",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
