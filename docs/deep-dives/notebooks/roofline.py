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
# # Notebook: the roofline
#
# Reproduces the deep dive *The roofline* with `calc.roofline`: arithmetic intensity of prefill and decode,
# the ridge point, the bandwidth wall, and TTFT and ITL. To run it yourself: `pip install -e .` in a clone of
# the repository, then open this file in Jupyter.

# %%
import json

from calc.catalog import GPUS, get_gpu, get_model
from calc.cli.table import format_table
from calc.lesson import DECODE_CONTEXT_TOKENS, GPU, PROMPT_TOKENS, coefficients as lesson_coefficients
from calc.memory import kv_capacity
from calc.roofline import CALIBRATED, decode_step, prefill_chunk, step_coefficients, ttft_s
from calc.units import format_bytes, format_number

model, gpu = get_model("mistral-7b"), get_gpu(GPU)  # the running example's GPU
coef = step_coefficients(model, gpu, weights="bf16")
print(model.name, "on one", gpu.name)
print("efficiency factors:", CALIBRATED)

# %% [markdown]
# ## The ridge point of every catalog GPU
#
# Peak FLOP/s over HBM bandwidth, from the datasheets. Below this intensity a kernel is memory-bound.
# The last column is the bandwidth wall for Mistral-7B in bf16: its streamed weights over the bandwidth.

# %%
weights_read = coef.weight_bytes_read(1)
rows = []
for key, g in GPUS.items():
    rows.append([g.name, format_number(g.flops("bf16") / 1e12), format_number(g.hbm_bytes_per_s / 1e12),
                 format_number(g.ridge_point_flops_per_byte("bf16")),
                 f"{format_number(weights_read / g.hbm_bytes_per_s * 1000)} ms"])
print(f"weights streamed per decode step: {format_bytes(weights_read)}")
print(format_table(rows, headers=["GPU", "bf16 TFLOP/s", "TB/s", "ridge (FLOP/B)", "wall per step"]))

# %% [markdown]
# ## Prefill against decode
#
# The same model, one prompt of the running example's 1,024 tokens against one decode step at a context of
# 1,152 tokens (the prompt and half the 256-token answer).

# %%
prompt, context = PROMPT_TOKENS, DECODE_CONTEXT_TOKENS
prefill = prefill_chunk(coef, chunk_tokens=prompt)
decode = decode_step(coef, batch=1, context_tokens=context)
print(format_table([
    [f"prefill, {prompt:,} tokens", format_number(prefill["flops"] / 1e12), format_bytes(prefill["bytes"]),
     format_number(prefill["intensity_flops_per_byte"]), prefill["bound"], f"{format_number(prefill['time_s'] * 1000)} ms"],
    ["decode step, batch 1", format_number(decode["flops"] / 1e12), format_bytes(decode["bytes"]),
     format_number(decode["intensity_flops_per_byte"]), decode["bound"], f"{format_number(decode['time_s'] * 1000)} ms"],
], headers=["work", "TFLOPs", "bytes", "FLOP/B", "bound", "time"]))

# %% [markdown]
# ## Batching decode, up to what the KV cache holds
#
# vLLM's sizing (90% of the GPU) gives the KV capacity; the batch cannot exceed it.

# %%
cap = kv_capacity(model, gpu)
largest = cap.kv_cache_tokens // context
rows = []
for batch in [1, 2, 4, 8, 16, 32, 64, 128, 256, largest]:
    d = decode_step(coef, batch=batch, context_tokens=context)
    rows.append([batch, f"{format_number(d['time_s'] * 1000)} ms", format_number(batch / d["time_s"]),
                 format_number(d["intensity_flops_per_byte"]), d["bound"]])
print(f"KV cache: {cap.kv_cache_tokens:,} tokens = {largest:,} sequences of {context:,}")
print(format_table(rows, headers=["batch", "ITL", "tokens/s", "FLOP/B", "bound"]))

# %% [markdown]
# Decode only turns compute-bound when each sequence's KV is small: with 16 tokens of context,

# %%
short = next(b for b in range(1, 4097) if decode_step(coef, batch=b, context_tokens=16)["bound"] == "compute")
print(f"the first compute-bound decode batch is {short}")

# %% [markdown]
# ## TTFT against the prompt
#
# Prefill grows faster than the prompt once attention's quadratic work shows.

# %%
print(format_table([[f"{n:,}", f"{format_number(ttft_s(coef, prompt_tokens=n) * 1000)} ms"]
                    for n in [128, 1_024, 8_192, 32_768]], headers=["prompt", "TTFT (idle GPU)"]))

# %% [markdown]
# ## The running example: Llama 3.1 70B on four H100s

# %%
lesson = lesson_coefficients()  # calc.lesson: Llama 3.1 70B in bf16, TP 4 on H100 SXM
lesson_decode = decode_step(lesson, batch=1, context_tokens=context)
lesson_wall = lesson.weight_bytes_read(1) / gpu.hbm_bytes_per_s
print(f"weights per GPU per step: {format_bytes(lesson.weight_bytes_read(1))}; wall {format_number(lesson_wall * 1000)} ms; "
      f"ITL {format_number(lesson_decode['time_s'] * 1000)} ms")

# %% [markdown]
# ## The page's numbers

# %%
batch64 = decode_step(coef, batch=64, context_tokens=context)
wall = weights_read / gpu.hbm_bytes_per_s
plateau = decode_step(coef, batch=largest, context_tokens=context)
page_numbers = {
    "ridge": format_number(gpu.ridge_point_flops_per_byte("bf16")),
    "weights_read": format_bytes(weights_read),
    "wall_ms": f"{format_number(wall * 1000)} ms",
    "wall_tokens_per_s": format_number(1 / wall),
    "decode_intensity": format_number(decode["intensity_flops_per_byte"]),
    "prefill_intensity": format_number(prefill["intensity_flops_per_byte"]),
    "itl_ms": f"{format_number(decode['time_s'] * 1000)} ms",
    "ttft_ms": f"{format_number(prefill['time_s'] * 1000)} ms",
    "batch_itl_ms": f"{format_number(batch64['time_s'] * 1000)} ms",
    "batch_tokens_per_s": format_number(64 / batch64["time_s"]),
    "plateau_batch": f"{largest:,}",
    "plateau_tokens_per_s": format_number(largest / plateau["time_s"]),
    "short_context_compute_batch": f"{short:,}",
    "lesson_wall_ms": f"{format_number(lesson_wall * 1000)} ms",
    "lesson_itl_ms": f"{format_number(lesson_decode['time_s'] * 1000)} ms",
    "lesson_ttft_ms": f"{format_number(ttft_s(lesson, prompt_tokens=prompt) * 1000)} ms",
}
print("PAGE_NUMBERS " + json.dumps(page_numbers, sort_keys=True))
