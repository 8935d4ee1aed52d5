"""Widgets and facts of the deep dive "Attention and the KV cache" (docs/deep-dives/attention.md).

Two separate savings, often confused:

* what the cache *stores* per token depends on the attention kind: multi-head
  attention (MHA) keeps K and V for every head; grouped-query attention (GQA,
  Ainslie et al. 2023) shares them across groups of query heads; multi-query
  attention (MQA, Shazeer 2019) keeps one; multi-head latent attention (MLA,
  DeepSeek-V2, arXiv 2405.04434) caches one compressed latent per token and
  layer. :func:`calc.memory.kv_bytes_per_token_by_attention` gives the bytes.
* what attention *moves* while it computes: a plain implementation writes the
  ``heads x n x n`` score matrix to HBM and reads it back; FlashAttention (Dao
  et al. 2022) keeps it in on-chip SRAM, tile by tile, and never writes it
  (:func:`calc.context.unfused_attention_scores_bytes`). The FLOPs stay the same.

>>> kinds = kv_by_kind("mistral-7b", "h100-sxm-80gb", context_tokens=4096)
>>> [(k, r["kv_bytes_per_token"], r["requests"]) for k, r in kinds.items()]
[('mha', 524288, 25), ('gqa', 131072, 101), ('mqa', 16384, 812), ('mla', 36864, 361)]
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import lesson as running_example
from calc.attention import KINDS, attention_traffic, kv_by_kind
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.memory import gqa_group_size, kv_bytes_per_token_by_attention, kv_heads_per_gpu
from calc.units import format_bytes, format_number, ratio
from calc.widgets.charts import bar_chart, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, TpChoice
from calc.widgets.framework import IntRange, fact, facts_of, output, table, view, widget

__all__ = ["kv_per_kind", "flash_attention", "facts"]

WORKSHOP_MODEL, GPU = "mistral-7b", "h100-sxm-80gb"
LESSON_MODEL, LESSON_TP = "llama-3.1-70b", 4
#: The running example's conversation: a 1,024-token prompt and a 256-token answer (calc.lesson.REQUEST_TOKENS).
QUIZ_CONTEXT = 1_280
CONTEXT_TOKENS = 4_096
LONG_PROMPT = 100_000
PROMPT_POINTS = (1_024, 4_096, 16_384, 65_536, 131_072)


@widget
def kv_per_kind(
    model: Model = WORKSHOP_MODEL,
    gpu: Gpu = GPU,
    tp: TpChoice = "1",
    kv_dtype: KvDtype = "bf16",
    context_tokens: Annotated[int, IntRange(1, 10_000_000, 256, "tokens", label="Context per request")]
    = CONTEXT_TOKENS,
):
    """KV bytes per token and requests that fit, for MHA, GQA, MQA and MLA versions of the same model."""
    rows = kv_by_kind(model, gpu, tp=int(tp), kv_dtype=kv_dtype, context_tokens=context_tokens)
    m = get_model(model)
    labels = [KINDS[k] + (" (this model)" if k == m.attention else "") for k in rows]
    per_token = bar_chart(
        f"{m.name}: KV bytes per token", labels, "KiB per token",
        {"KV per token": [r["kv_bytes_per_token"] / 1024 for r in rows.values()]},
        summary="; ".join(f"{KINDS[k]}: {format_bytes(r['kv_bytes_per_token'], binary=True)}"
                          for k, r in rows.items()) + ".")
    count = lambda r: "none (the weights do not fit)" if r["requests"] is None else f"{r['requests']:,}"  # noqa: E731
    fits = bar_chart(
        f"Requests of {context_tokens:,} tokens that fit on {tp} × {get_gpu(gpu).name}", labels, "requests",
        {"requests": [r["requests"] or 0 for r in rows.values()]},
        summary="; ".join(f"{KINDS[k]}: {count(r)}" for k, r in rows.items()) + ".")
    shape = (f"latent {m.kv_lora_rank} + RoPE key {m.qk_rope_head_dim}" if m.attention == "mla"
             else f"{m.attention_heads} query heads, {m.kv_heads} KV heads, head dim {m.head_dim}")
    return view(
        outputs=[output(f"{k}_bytes", f"{KINDS[k]} per token", r["kv_bytes_per_token"], "B",
                        text=f"{r['kv_bytes_per_token']:,} B · {count(r)} requests" if r["requests"] is not None
                        else f"{r['kv_bytes_per_token']:,} B · the weights do not fit")
                 for k, r in rows.items()] + [output("shape", "Shape", shape)],
        figures={"per_token": per_token, "fits": fits},
        tables={"kinds": table(
            ["kind", "KV per token", "per GPU", f"one {context_tokens:,}-token request", "requests that fit"],
            [[KINDS[k], f"{r['kv_bytes_per_token']:,} B", f"{r['kv_bytes_per_token_per_gpu']:,} B",
              format_bytes(r["kv_bytes_per_request"]), count(r)] for k, r in rows.items()])},
    )


@widget
def flash_attention(
    model: Model = LESSON_MODEL,
    prompt_tokens: Annotated[int, IntRange(1, 10_000_000, 1024, "tokens", label="Prompt")] = LONG_PROMPT,
):
    """The score matrix FlashAttention never writes: scratch memory and HBM traffic of attention, fused or not."""
    t = attention_traffic(model, prompt_tokens)
    points = sorted(set(PROMPT_POINTS) | {prompt_tokens})
    curve = [attention_traffic(model, n) for n in points]
    figure = line_chart(
        f"{get_model(model).name}: attention's HBM traffic for one prompt", "prompt (tokens)", "bytes moved", {
            "unfused (score matrix through HBM)": (points, [c["unfused_bytes"] for c in curve]),
            "fused minimum (Q, K, V, O once)": (points, [c["fused_minimum_bytes"] for c in curve]),
        }, log_x=True, log_y=True, markers=True,
        summary=(f"Unfused traffic grows with the square of the prompt, the fused minimum linearly: at "
                 f"{points[-1]:,} tokens {format_bytes(curve[-1]['unfused_bytes'])} against "
                 f"{format_bytes(curve[-1]['fused_minimum_bytes'])}."))
    return view(
        outputs=[
            output("scratch", "Score matrix of one layer (never allocated by FlashAttention)", t["scratch_bytes"], "B",
                   text=format_bytes(t["scratch_bytes"])),
            output("unfused", "HBM traffic, unfused", t["unfused_bytes"], "B", text=format_bytes(t["unfused_bytes"])),
            output("fused", "HBM traffic, fused minimum", t["fused_minimum_bytes"], "B",
                   text=format_bytes(t["fused_minimum_bytes"])),
            output("ratio", "Unfused / fused", t["ratio"], "x", text=f"{format_number(t['ratio'])}×"),
            output("attention_share", "Attention's share of prefill FLOPs (unchanged)", t["attention_share"], "",
                   text=f"{t['attention_share']:.0%}"),
        ],
        figures={"traffic": figure},
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ deep_attention:name }} elsewhere: 1 use).
def _mistral():
    return get_model(WORKSHOP_MODEL)


@functools.cache
def _rows() -> dict:
    return kv_by_kind(_mistral(), GPU, context_tokens=CONTEXT_TOKENS)


def _deepseek():
    return get_model("deepseek-v3")


def _ds() -> dict:
    return kv_bytes_per_token_by_attention(_deepseek())


@functools.cache
def _traffic(prompt_tokens: int) -> dict:
    return attention_traffic(LESSON_MODEL, prompt_tokens)


@functools.cache
def _quiz() -> dict:
    """The quiz is about the lesson's replica: its KV room is the lesson's one capacity (calc.lesson)."""
    return kv_by_kind(get_model(LESSON_MODEL), GPU, tp=LESSON_TP, context_tokens=QUIZ_CONTEXT,
                      room_bytes_per_gpu=running_example.kv_capacity().kv_cache_bytes)


def _bytes(n: int) -> str:
    return f"{n:,} B"


@fact
def model_name():
    return _mistral().name


@fact
def heads():
    return str(_mistral().attention_heads)


@fact
def kv_heads():
    return str(_mistral().kv_heads)


@fact
def group():
    return str(gqa_group_size(_mistral()))


@fact
def context():
    return f"{CONTEXT_TOKENS:,}"


@fact
def mha():
    """>>> mha(), gqa(), mla_deepseek()
    ('524,288 B', '131,072 B', '70,272 B')
    """
    return _bytes(_rows()["mha"]["kv_bytes_per_token"])


@fact
def gqa():
    return _bytes(_rows()["gqa"]["kv_bytes_per_token"])


@fact
def mqa():
    return _bytes(_rows()["mqa"]["kv_bytes_per_token"])


@fact
def mla():
    return _bytes(_rows()["mla"]["kv_bytes_per_token"])


@fact
def mha_requests():
    return f"{_rows()['mha']['requests']:,}"


@fact
def gqa_requests():
    return f"{_rows()['gqa']['requests']:,}"


@fact
def mqa_requests():
    return f"{_rows()['mqa']['requests']:,}"


@fact
def mla_requests():
    return f"{_rows()['mla']['requests']:,}"


@fact
def mha_over_gqa():
    return format_number(ratio(_rows()["mha"]["kv_bytes_per_token"], _rows()["gqa"]["kv_bytes_per_token"]))


@fact
def deepseek_latent():
    return f"{_deepseek().kv_lora_rank} + {_deepseek().qk_rope_head_dim}"


@fact
def deepseek_layers():
    return str(_deepseek().layers)


@fact
def deepseek_heads():
    return str(_deepseek().attention_heads)


@fact
def mla_deepseek():
    return _bytes(_ds()["mla"])


@fact
def mha_deepseek():
    return _bytes(_ds()["mha"])


@fact
def mla_saving_deepseek():
    return format_number(ratio(_ds()["mha"], _ds()["mla"]))


@fact
def long_prompt():
    return f"{LONG_PROMPT:,}"


@fact
def lesson_model():
    return get_model(LESSON_MODEL).name


@fact
def scratch():
    return format_bytes(_traffic(LONG_PROMPT)["scratch_bytes"])


@fact
def unfused():
    return format_bytes(_traffic(LONG_PROMPT)["unfused_bytes"])


@fact
def fused():
    return format_bytes(_traffic(LONG_PROMPT)["fused_minimum_bytes"])


@fact
def traffic_ratio():
    return format_number(_traffic(LONG_PROMPT)["ratio"])


@fact
def short_prompt():
    return f"{PROMPT_POINTS[0]:,}"


@fact
def short_ratio():
    return format_number(_traffic(PROMPT_POINTS[0])["ratio"])


@fact
def attention_share_long():
    return f"{_traffic(LONG_PROMPT)['attention_share']:.0%}"


@fact
def attention_share_short():
    return f"{_traffic(PROMPT_POINTS[0])['attention_share']:.0%}"


@fact
def quiz_tp():
    return str(LESSON_TP)


@fact
def quiz_context():
    return f"{QUIZ_CONTEXT:,}"


@fact
def quiz_gqa_gib():
    return format_bytes(_quiz()["gqa"]["kv_bytes_per_token"], binary=True)


@fact
def quiz_mha_gib():
    return format_bytes(_quiz()["mha"]["kv_bytes_per_token"], binary=True)


@fact
def quiz_mla_kib():
    return format_bytes(_quiz()["mla"]["kv_bytes_per_token"], binary=True)


@fact
def quiz_gqa_per_gpu():
    return format_bytes(_quiz()["gqa"]["kv_bytes_per_token_per_gpu"], binary=True)


@fact
def quiz_mla_per_gpu():
    return format_bytes(_quiz()["mla"]["kv_bytes_per_token_per_gpu"], binary=True)


@fact
def quiz_kv_heads():
    return str(get_model(LESSON_MODEL).kv_heads)


@fact
def quiz_heads_per_gpu():
    return str(kv_heads_per_gpu(get_model(LESSON_MODEL), LESSON_TP))


@fact
def quiz_gqa_requests():
    return f"{_quiz()['gqa']['requests']:,}"


@fact
def quiz_mla_requests():
    return f"{_quiz()['mla']['requests']:,}"


@fact
def quiz_mha_requests():
    return f"{_quiz()['mha']['requests']:,}"


facts = facts_of(__name__)
