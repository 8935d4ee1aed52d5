"""Widgets and facts of step 2, "KV cache arithmetic" (docs/lesson/02-kv-cache-arithmetic.md).

Every token a model has seen keeps a key and a value vector per layer and per KV
head until its request ends. The bytes per token follow from the shape:

    KV bytes per token = 2 (K and V) x layers x KV heads x head dim x bytes per value

>>> view = kv_per_token()
>>> view["outputs"]["kv_bytes_per_token"]["value"]
131072
>>> facts()["kv_per_token_8b"]
'131,072 bytes'
"""

from __future__ import annotations

import dataclasses
import random
from typing import Annotated

from calc.catalog import MODELS, Model, get_model
from calc.errors import CalcError
from calc.memory import gqa_kv_heads, kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_by_attention
from calc.units import GB, GiB, KiB, MiB, format_bytes, format_number, ratio
from calc.widgets.charts import line_chart
from calc.widgets import controls
from calc.widgets.controls import KvDtype
from calc.widgets.framework import Choice, IntRange, drill, fact, facts_of, output, view, widget

CUSTOM = "custom"
MODEL_CHOICES = controls.MODEL_CHOICES + ((CUSTOM, "By hand (the fields below)"),)
CONVERSATION_TOKENS = 4_000  # the lesson's example conversation on the 8B model
CONTEXT_POINTS = (1_024, 2_048, 4_096, 8_192, 16_384, 32_768, 65_536, 131_072)


def _model(model: str, layers: int, attention_heads: int, kv_heads: int, head_dim: int):
    if model != CUSTOM:
        return get_model(model)
    if kv_heads > attention_heads or attention_heads % kv_heads:
        raise CalcError(
            f"KV heads (kv_heads) must divide the attention heads ({attention_heads}); got {kv_heads}", "kv_heads"
        )
    kind = "mha" if kv_heads == attention_heads else "mqa" if kv_heads == 1 else "gqa"
    return Model(
        key="custom", name="Custom model", layers=layers, hidden_size=attention_heads * head_dim,
        attention_heads=attention_heads, kv_heads=kv_heads, head_dim=head_dim, intermediate_size=4 * attention_heads * head_dim,
        vocab_size=32_000, tied_embeddings=False, attention=kind, source="entered by hand",
    )


def _shape_text(model, kv_dtype: str) -> str:
    value_bytes = kv_bytes_per_token(model, kv_dtype) // max(1, _values_per_token(model))
    if model.attention == "mla":
        return (f"{model.layers} layers x one latent of {model.kv_lora_rank} + {model.qk_rope_head_dim} values "
                f"x {value_bytes} B (MLA)")
    return f"2 x {model.layers} layers x {model.kv_heads} KV heads x {model.head_dim} head dim x {value_bytes} B"


def _values_per_token(model) -> int:
    if model.attention == "mla":
        return model.layers * (model.kv_lora_rank + model.qk_rope_head_dim)
    return 2 * model.layers * model.kv_heads * model.head_dim


def attention_variants(model) -> dict[str, object]:
    """The same model with each attention kind: MHA, GQA, MQA (and MLA when the model has it).

    >>> {name: v.kv_heads for name, v in attention_variants(get_model("llama-3.1-70b")).items()}
    {'MHA (64 KV heads)': 64, 'GQA (8 KV heads)': 8, 'MQA (1 KV head)': 1}
    """
    heads = model.attention_heads
    gqa_heads = gqa_kv_heads(model)
    base = dataclasses.replace(model, attention="gqa", kv_lora_rank=0, qk_rope_head_dim=0, q_lora_rank=0,
                               qk_nope_head_dim=0, v_head_dim=0)
    variants = {
        f"MHA ({heads} KV heads)": dataclasses.replace(base, attention="mha", kv_heads=heads),
        f"GQA ({gqa_heads} KV heads)": dataclasses.replace(base, kv_heads=gqa_heads),
        "MQA (1 KV head)": dataclasses.replace(base, attention="mqa", kv_heads=1),
    }
    if model.attention == "mla":
        variants[f"MLA (latent {model.kv_lora_rank}+{model.qk_rope_head_dim})"] = model
    return variants


@widget
def kv_per_token(
    model: Annotated[str, Choice(MODEL_CHOICES, label="Model")] = "llama-3.1-8b",
    kv_dtype: KvDtype = "bf16",
    context_tokens: Annotated[int, IntRange(1, 10_000_000, 256, "tokens", label="Tokens in the request")] = CONVERSATION_TOKENS,
    layers: Annotated[int, IntRange(1, 1_000, label="Layers", help="used when the model is 'By hand'")] = 32,
    attention_heads: Annotated[int, IntRange(1, 1_024, label="Attention heads", help="used when 'By hand'")] = 32,
    kv_heads: Annotated[int, IntRange(1, 1_024, label="KV heads", help="used when 'By hand'")] = 8,
    head_dim: Annotated[int, IntRange(1, 1_024, label="Head dim", help="used when 'By hand'")] = 128,
):
    """KV bytes per token and per request, and KV memory against context for MHA, GQA and MQA."""
    chosen = _model(model, layers, attention_heads, kv_heads, head_dim)
    per_token = kv_bytes_per_token(chosen, kv_dtype)
    per_request = per_token * context_tokens
    series = {}
    for name, variant in attention_variants(chosen).items():
        variant_bytes = kv_bytes_per_token(variant, kv_dtype)
        series[name] = (list(CONTEXT_POINTS), [variant_bytes * n / GB for n in CONTEXT_POINTS])
    longest = CONTEXT_POINTS[-1]
    summary = "; ".join(f"{name}: {format_number(ys[-1])} GB at {longest:,} tokens" for name, (_, ys) in series.items())
    figure = line_chart(
        f"KV cache of one request, {chosen.name}, {kv_dtype}", "context length (tokens)", "KV cache (GB)", series,
        log_x=True, summary=f"KV cache of one request by attention kind. {summary}.",
    )
    return view(
        outputs=[
            output("kv_bytes_per_token", "KV per token", per_token, "B",
                   text=f"{per_token:,} B ({format_bytes(per_token, binary=True)})"),
            output("kv_bytes_per_request", f"KV for {context_tokens:,} tokens", per_request, "B",
                   text=f"{format_bytes(per_request)} ({format_bytes(per_request, binary=True)})"),
            output("shape", "Formula", _shape_text(chosen, kv_dtype)),
        ],
        figures={"kv_vs_context": figure},
    )


# --- the drill -----------------------------------------------------------------------------------

DRILL_MODELS = ("llama-3.1-8b", "llama-3.1-70b", "llama-3.2-1b", "llama-3.2-3b", "mistral-7b", "qwen2.5-7b",
                "qwen2.5-72b", "llama-3.1-405b")


@drill
def kv_bytes_drill(seed: Annotated[int, IntRange(0, 1_000_000, label="Seed")] = 0):
    """KV bytes per token or per conversation for a catalog model; seed 0 is the lesson's 8B case."""
    rng = random.Random(seed)
    if seed == 0:
        model, kv_dtype, tokens = get_model("llama-3.1-8b"), "bf16", 1
    else:
        model = get_model(rng.choice(DRILL_MODELS))
        kv_dtype = rng.choice(("bf16", "fp8"))
        tokens = rng.choice((1, 1, rng.choice((1_000, 2_000, 4_000, 8_000, 32_000))))
    per_token = kv_bytes_per_token(model, kv_dtype)
    value_bytes = per_token // _values_per_token(model)
    answer = per_token * tokens
    shape = f"{model.layers} layers, {model.kv_heads} KV heads, head dim {model.head_dim}, {kv_dtype} ({value_bytes} B per value)"
    if tokens == 1:
        question = f"{model.name} ({shape}). How many bytes of KV cache does one token take?"
    else:
        question = f"{model.name} ({shape}). How much KV cache does a {tokens:,}-token conversation hold?"
    steps = f"2 x {model.layers} x {model.kv_heads} x {model.head_dim} x {value_bytes} = {per_token:,} B per token"
    if tokens > 1:
        steps += f"; x {tokens:,} tokens = {answer:,} B"
    explanation = (f"K and V for every layer and KV head: {steps}, which is {format_bytes(answer)} "
                   f"or {format_bytes(answer, binary=True)}.")
    return {
        "question": question,
        "answer": answer,
        "unit": "bytes",
        "tolerance": 0.02,
        "answer_text": f"{answer:,} B ({format_bytes(answer, binary=True)})",
        "explanation": explanation,
        "placeholder": "e.g. 96 KiB, 98304 or 0.094 MiB",
    }


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ kv_cache_arithmetic:name }} elsewhere: 7 uses).
def _per_token(key: str) -> int:
    return kv_bytes_per_token(get_model(key), "bf16")


def _conversation_8b() -> int:
    return kv_bytes_per_request(get_model("llama-3.1-8b"), CONVERSATION_TOKENS, "bf16")


def _mha_70b() -> int:
    return kv_bytes_per_token_by_attention(get_model("llama-3.1-70b"))["mha"]


def _kib(n_bytes: float) -> str:
    return f"{n_bytes / KiB:g}"


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / MiB:g}"


def _gib(n_bytes: float) -> str:
    return f"{n_bytes / GiB:.2f}"


@fact
def kv_per_token_8b():
    """>>> kv_per_token_8b(), kv_per_token_8b_kib()
    ('131,072 bytes', '128 KiB')
    """
    return f"{_per_token('llama-3.1-8b'):,} bytes"


@fact
def kv_per_token_8b_kib():
    return f"{_kib(_per_token('llama-3.1-8b'))} KiB"


@fact
def conversation_tokens():
    return f"{CONVERSATION_TOKENS:,}"


@fact
def conversation_8b():
    """>>> conversation_8b()
    '524 MB'
    """
    return format_bytes(_conversation_8b())


@fact
def conversation_8b_mib():
    return f"{_mib(_conversation_8b())} MiB"


@fact
def conversation_8b_gib():
    return f"{_gib(_conversation_8b())} GiB"


@fact
def kv_per_token_70b():
    return f"{_per_token('llama-3.1-70b'):,} bytes"


@fact
def kv_per_token_70b_kib():
    return f"{_kib(_per_token('llama-3.1-70b'))} KiB"


@fact
def mha_over_gqa_70b():
    return format_number(ratio(_mha_70b(), _per_token("llama-3.1-70b")))


@fact
def kv_per_token_70b_mha_kib():
    return f"{_kib(_mha_70b())} KiB"


facts = facts_of(__name__)
