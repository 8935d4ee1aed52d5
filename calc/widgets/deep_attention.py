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

from typing import Annotated

from calc import lesson as running_example
from calc.attention import KINDS, attention_traffic, kv_by_kind
from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.memory import kv_bytes_per_token_by_attention
from calc.units import format_bytes, format_number
from calc.widgets.charts import bar_chart, line_chart
from calc.widgets.controls import Gpu, KvDtype, Model, TpChoice
from calc.widgets.framework import IntRange, output, table, view, widget

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


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose (the notebook prints the same, computed on its own).

    >>> f = facts()
    >>> f["mha"], f["gqa"], f["mla_deepseek"]
    ('524,288 B', '131,072 B', '70,272 B')
    """
    mistral = get_model(WORKSHOP_MODEL)
    rows = kv_by_kind(mistral, GPU, context_tokens=CONTEXT_TOKENS)
    deepseek = get_model("deepseek-v3")
    ds = kv_bytes_per_token_by_attention(deepseek)
    t = attention_traffic(LESSON_MODEL, LONG_PROMPT)
    short = attention_traffic(LESSON_MODEL, PROMPT_POINTS[0])
    group = mistral.attention_heads // mistral.kv_heads
    lesson = get_model(LESSON_MODEL)
    # The quiz is about the lesson's replica: its KV room is the lesson's one capacity (calc.lesson).
    quiz = kv_by_kind(lesson, GPU, tp=LESSON_TP, context_tokens=QUIZ_CONTEXT,
                      room_bytes_per_gpu=running_example.kv_capacity().kv_cache_bytes)
    return {
        "model_name": mistral.name,
        "heads": str(mistral.attention_heads),
        "kv_heads": str(mistral.kv_heads),
        "group": str(group),
        "context": f"{CONTEXT_TOKENS:,}",
        "mha": f"{rows['mha']['kv_bytes_per_token']:,} B",
        "gqa": f"{rows['gqa']['kv_bytes_per_token']:,} B",
        "mqa": f"{rows['mqa']['kv_bytes_per_token']:,} B",
        "mla": f"{rows['mla']['kv_bytes_per_token']:,} B",
        "mha_requests": f"{rows['mha']['requests']:,}",
        "gqa_requests": f"{rows['gqa']['requests']:,}",
        "mqa_requests": f"{rows['mqa']['requests']:,}",
        "mla_requests": f"{rows['mla']['requests']:,}",
        "mha_over_gqa": format_number(rows["mha"]["kv_bytes_per_token"] / rows["gqa"]["kv_bytes_per_token"]),
        "deepseek_latent": f"{deepseek.kv_lora_rank} + {deepseek.qk_rope_head_dim}",
        "deepseek_layers": str(deepseek.layers),
        "deepseek_heads": str(deepseek.attention_heads),
        "mla_deepseek": f"{ds['mla']:,} B",
        "mha_deepseek": f"{ds['mha']:,} B",
        "mla_saving_deepseek": format_number(ds["mha"] / ds["mla"]),
        "long_prompt": f"{LONG_PROMPT:,}",
        "lesson_model": get_model(LESSON_MODEL).name,
        "scratch": format_bytes(t["scratch_bytes"]),
        "unfused": format_bytes(t["unfused_bytes"]),
        "fused": format_bytes(t["fused_minimum_bytes"]),
        "traffic_ratio": format_number(t["ratio"]),
        "short_prompt": f"{PROMPT_POINTS[0]:,}",
        "short_ratio": format_number(short["ratio"]),
        "attention_share_long": f"{t['attention_share']:.0%}",
        "attention_share_short": f"{short['attention_share']:.0%}",
        "quiz_tp": str(LESSON_TP),
        "quiz_context": f"{QUIZ_CONTEXT:,}",
        "quiz_gqa_gib": format_bytes(quiz["gqa"]["kv_bytes_per_token"], binary=True),
        "quiz_mha_gib": format_bytes(quiz["mha"]["kv_bytes_per_token"], binary=True),
        "quiz_mla_kib": format_bytes(quiz["mla"]["kv_bytes_per_token"], binary=True),
        "quiz_gqa_per_gpu": format_bytes(quiz["gqa"]["kv_bytes_per_token_per_gpu"], binary=True),
        "quiz_mla_per_gpu": format_bytes(quiz["mla"]["kv_bytes_per_token_per_gpu"], binary=True),
        "quiz_kv_heads": str(lesson.kv_heads),
        "quiz_heads_per_gpu": str(lesson.kv_heads // LESSON_TP),
        "quiz_gqa_requests": f"{quiz['gqa']['requests']:,}",
        "quiz_mla_requests": f"{quiz['mla']['requests']:,}",
        "quiz_mha_requests": f"{quiz['mha']['requests']:,}",
    }
