"""Drills of step 3, "Drill: KV bytes per token" (docs/lesson/03-drill-kv-bytes.md).

Five kinds of question, each a :func:`~calc.widgets.framework.drill` of a seed.
Seed 0 is the worked case the page shows at build; "New numbers" asks the
worker for another seed. Every answer comes from :mod:`calc.memory`:

* :func:`bytes_per_token_drill`: KV bytes per token from a model's shape;
* :func:`conversation_drill`: the KV cache of a whole conversation;
* :func:`conversations_fit_drill`: how many conversations fit in some GB of KV cache;
* :func:`per_gpu_drill`: KV bytes per token on each GPU under tensor parallelism;
* :func:`fp8_capacity_drill`: the replica's KV tokens once the cache is stored in fp8.

Byte answers accept any byte unit (``calc.answers``): "128 KiB", "131072" and
"0.125 MiB" are the same answer. Counts are plain numbers.

>>> q = bytes_per_token_drill()
>>> q["answer"], q["answer_text"]
(131072, '131,072 B')
>>> facts()["kv_per_token_8b_kib"]
'128 KiB'
"""

from __future__ import annotations

import dataclasses
import random
from typing import Annotated

from calc.catalog import GPUS, MODELS, get_gpu, get_model
from calc.memory import (
    KV_DTYPE_BYTES, allowed_tp, kv_bytes_per_request, kv_bytes_per_token, kv_bytes_per_token_per_gpu, kv_heads_per_gpu,
    requests_in_bytes,
)
from calc.units import GB, GiB, KiB, MiB, format_bytes, format_number, to_bytes
from calc.lesson import replica_capacity
from calc.widgets.framework import IntRange, drill, fact, facts_of

__all__ = ["bytes_per_token_drill", "conversation_drill", "conversations_fit_drill", "per_gpu_drill",
           "fp8_capacity_drill", "facts", "DRILL_MODELS", "SEED_CONTROL"]

#: Catalog models with plain K/V heads and full attention (no MLA latent, no sliding window), so the
#: formula 2 x layers x KV heads x head dim x bytes applies as it stands.
DRILL_MODELS = tuple(key for key, m in MODELS.items() if m.attention != "mla" and not m.sliding_window)
SEED_CONTROL = IntRange(0, 1_000_000, label="Seed")

# The worked cases shown at build (seed 0). The 8B numbers are the lesson's (docs/lesson/03-drill-kv-bytes.md).
WORKED_MODEL = "llama-3.1-8b"
WORKED_CONVERSATION_TOKENS = 4_000
WORKED_KV_MEMORY_GB = 40  # a question's input: KV memory left on one 80 GB GPU after 16 GB of 8B weights, rounded down
WORKED_TP_MODEL, WORKED_TP = "llama-3.1-70b", 4

BYTE_TOLERANCE = 0.02  # 2%: "131 KB" for 131,072 B is right, "125 KB" is not
# 5%: step 2 teaches the 4,000-token conversation as "about half a gigabyte", so "0.5 GB" for 524,288,000 B
# (4.6% off) and "0.5 GiB" (2.4% off) count as right; "0.4 GB" (24% off) does not.
CONVERSATION_TOLERANCE = 0.05
COUNT_TOLERANCE = 0.01
BYTES_PLACEHOLDER = "e.g. 96 KiB, 98304 or 0.094 MiB"


def _heads(n: int, kind: str) -> str:
    return f"{n} {kind} head" + ("" if n == 1 else "s")


def _shape(model, kv_dtype: str) -> str:
    """The model as the question states it: a sentence ending with a full stop."""
    return (f"{model.name}: {model.layers} layers, {_heads(model.attention_heads, 'attention')}, "
            f"{_heads(model.kv_heads, 'KV')}, head dim {model.head_dim}; KV cache in {kv_dtype} "
            f"({KV_DTYPE_BYTES[kv_dtype]} B per value).")


def _formula(model, kv_dtype: str) -> str:
    per_token = kv_bytes_per_token(model, kv_dtype)
    return (f"2 (K and V) × {model.layers} layers × {_heads(model.kv_heads, 'KV')} × {model.head_dim} × "
            f"{KV_DTYPE_BYTES[kv_dtype]} B = {per_token:,} B per token")


def _both_units(n_bytes: float) -> str:
    return f"{format_bytes(n_bytes)} = {format_bytes(n_bytes, binary=True)}"


def _made_up_model(rng: random.Random):
    """A plausible shape that is no catalog model, so the arithmetic cannot be remembered."""
    kv_heads = rng.choice((1, 2, 4, 8, 16))
    attention_heads = kv_heads * (rng.choice((8, 16, 32)) if kv_heads == 1 else rng.choice((1, 4, 8)))
    attention = "mqa" if kv_heads == 1 else "mha" if kv_heads == attention_heads else "gqa"
    head_dim = rng.choice((64, 96, 128, 256))
    return dataclasses.replace(
        get_model(WORKED_MODEL), key="drill-model", name="A model", layers=rng.choice((24, 28, 32, 40, 48, 60, 64, 80)),
        attention_heads=attention_heads, kv_heads=kv_heads, head_dim=head_dim, hidden_size=attention_heads * head_dim,
        attention=attention, source="made up for the drill",
    )


def _question(question: str, answer, unit: str, tolerance: float, answer_text: str, explanation: str,
              placeholder: str) -> dict:
    return {"question": question, "answer": answer, "unit": unit, "tolerance": tolerance,
            "answer_text": answer_text, "explanation": explanation, "placeholder": placeholder}


@drill
def bytes_per_token_drill(seed: Annotated[int, SEED_CONTROL] = 0):
    """KV bytes one token costs, from the shape (seed 0: Llama 3.1 8B in bf16, 131,072 B = 128 KiB).

    Formula: 2 x layers x KV heads x head dim x bytes per value (:func:`calc.memory.kv_bytes_per_token`).

    >>> bytes_per_token_drill(0)["explanation"]
    '2 (K and V) × 32 layers × 8 KV heads × 128 × 2 B = 131,072 B per token = 131 KB = 128 KiB. The 32 attention heads do not enter: only the KV heads are cached, each shared by 4 query heads.'
    """
    rng = random.Random(seed)
    if seed == 0:
        model, kv_dtype = get_model(WORKED_MODEL), "bf16"
    else:
        model = get_model(rng.choice(DRILL_MODELS)) if rng.random() < 0.5 else _made_up_model(rng)
        kv_dtype = rng.choice(("bf16", "fp16", "fp8"))
    answer = kv_bytes_per_token(model, kv_dtype)
    if model.attention_heads == model.kv_heads:
        heads_note = " Every attention head has its own K and V here (multi-head attention)."
    else:
        heads_note = (f" The {model.attention_heads} attention heads do not enter: only the KV heads are cached, "
                      f"each shared by {model.attention_heads // model.kv_heads} query heads.")
    return _question(
        f"{_shape(model, kv_dtype)} How many bytes of KV cache does one token cost?",
        answer, "bytes", BYTE_TOLERANCE, f"{answer:,} B",
        f"{_formula(model, kv_dtype)} = {_both_units(answer)}.{heads_note}", BYTES_PLACEHOLDER,
    )


@drill
def conversation_drill(seed: Annotated[int, SEED_CONTROL] = 0):
    """KV cache a whole conversation holds at its end (seed 0: 4,000 tokens on Llama 3.1 8B, 524 MB).

    Per token bytes x tokens (:func:`calc.memory.kv_bytes_per_request`).

    >>> q = conversation_drill(0)
    >>> q["answer"], q["answer_text"]
    (524288000, '524,288,000 B')
    """
    rng = random.Random(seed)
    if seed == 0:
        model, kv_dtype = get_model(WORKED_MODEL), "bf16"
        prompt, answer_tokens = WORKED_CONVERSATION_TOKENS, 0
        setup = (f"A conversation holds {WORKED_CONVERSATION_TOKENS:,} tokens in all, every question and answer so "
                 f"far. How much KV cache does it take?")
    else:
        model = get_model(rng.choice(DRILL_MODELS))
        kv_dtype = rng.choice(("bf16", "bf16", "fp8"))
        prompt = rng.choice((500, 1_024, 2_000, 3_000, 6_000, 12_000, 30_000))
        answer_tokens = rng.choice((200, 256, 500, 1_000, 2_000))
        setup = (f"A request brings a {prompt:,}-token prompt and gets a {answer_tokens:,}-token answer. How much "
                 f"KV cache does it hold once the last answer token is generated?")
    tokens = prompt + answer_tokens
    answer = kv_bytes_per_request(model, tokens, kv_dtype)
    per_token = kv_bytes_per_token(model, kv_dtype)
    return _question(
        f"{_shape(model, kv_dtype)} {setup}",
        answer, "bytes", CONVERSATION_TOLERANCE, f"{answer:,} B",
        f"{_formula(model, kv_dtype)}; × {tokens:,} tokens = {answer:,} B = {_both_units(answer)}, "
        f"held in HBM for as long as the request is in flight.",
        "e.g. 500 MB, 0.47 GiB or 500000000",
    )


@drill
def conversations_fit_drill(seed: Annotated[int, SEED_CONTROL] = 0):
    """Conversations of a given length that fit in some GB of KV cache (seed 0: 76 of 4,000 tokens in 40 GB, 8B).

    floor(KV memory / (bytes per token x tokens)).

    >>> conversations_fit_drill(0)["answer_text"]
    '76 conversations'
    """
    rng = random.Random(seed)
    if seed == 0:
        model, kv_dtype = get_model(WORKED_MODEL), "bf16"
        kv_gb, tokens = WORKED_KV_MEMORY_GB, WORKED_CONVERSATION_TOKENS
    else:
        model = get_model(rng.choice(DRILL_MODELS))
        kv_dtype = rng.choice(("bf16", "bf16", "fp8"))
        kv_gb = rng.choice((10, 20, 24, 30, 40, 50, 60, 100, 120))
        tokens = rng.choice((1_000, 1_280, 2_000, 4_000, 8_000, 16_000, 32_000))
    per_request = kv_bytes_per_request(model, tokens, kv_dtype)
    memory = kv_gb * GB
    answer = int(memory // per_request)
    if answer < 1:  # a question whose answer is "none" teaches little: shorten the conversations
        tokens = min(tokens, 1_000)
        per_request = kv_bytes_per_request(model, tokens, kv_dtype)
        answer = int(memory // per_request)
    return _question(
        f"{_shape(model, kv_dtype)} The server has {kv_gb} GB ({kv_gb} × 10⁹ bytes) of KV cache. "
        f"How many conversations of {tokens:,} tokens fit at once?",
        answer, "conversations", COUNT_TOLERANCE, f"{answer:,} conversations",
        f"{_formula(model, kv_dtype)}; × {tokens:,} tokens = {_both_units(per_request)} per conversation. "
        f"{kv_gb} × 10⁹ B / {per_request:,} B = {format_number(memory / per_request)}, rounded down: "
        f"{answer:,} conversations. (Read as {kv_gb} GiB, the memory would hold {int(kv_gb * GiB // per_request):,}: "
        f"GiB is {format_number((GiB / GB - 1) * 100, 2)}% larger than GB.)",
        "a number, e.g. 120",
    )


@drill
def per_gpu_drill(seed: Annotated[int, SEED_CONTROL] = 0):
    """KV bytes per token each GPU holds under tensor parallelism (seed 0: Llama 3.1 70B, TP 4, 81,920 B).

    Each GPU caches the KV heads of its share of the attention heads; when TP
    exceeds the KV heads each GPU keeps one, replicated (vLLM's
    ``get_num_kv_heads``; :func:`calc.memory.kv_bytes_per_token_per_gpu`).

    >>> per_gpu_drill(0)["answer"]
    81920
    """
    rng = random.Random(seed)
    if seed == 0:
        model, tp, kv_dtype = get_model(WORKED_TP_MODEL), WORKED_TP, "bf16"
    else:
        model = get_model(rng.choice(DRILL_MODELS))
        tp = rng.choice([t for t in allowed_tp(model, 16) if t > 1])
        kv_dtype = rng.choice(("bf16", "bf16", "fp8"))
    answer = kv_bytes_per_token_per_gpu(model, tp, kv_dtype)
    heads = kv_heads_per_gpu(model, tp)
    if model.kv_heads >= tp:
        split = f"{model.kv_heads} KV heads / {tp} GPUs = {heads} per GPU"
    else:
        split = (f"TP {tp} exceeds the {model.kv_heads} KV heads, so each GPU keeps one whole KV head "
                 f"(each is replicated on {tp // model.kv_heads} GPUs)")
    whole = kv_bytes_per_token(model, kv_dtype)
    return _question(
        f"{_shape(model, kv_dtype)} It runs with tensor parallel {tp}. How many bytes of KV cache per token does "
        f"each GPU hold?",
        answer, "bytes", BYTE_TOLERANCE, f"{answer:,} B",
        f"{split}: 2 × {model.layers} layers × {heads} × {model.head_dim} × {KV_DTYPE_BYTES[kv_dtype]} B = "
        f"{answer:,} B = {_both_units(answer)} per token per GPU. " + (
            f"The replica's {whole:,} B per token is split {tp} ways." if answer * tp == whole else
            f"Summed over the GPUs that is {answer * tp:,} B, {answer * tp // whole} × the replica's {whole:,} B "
            f"per token: each KV head is stored on {tp // model.kv_heads} GPUs."),
        BYTES_PLACEHOLDER,
    )


# Replicas that fit in bf16 at 90% (checked by the tests): (model, GPU, TP).
FP8_REPLICAS = (
    ("llama-3.1-70b", "h100-sxm-80gb", 4), ("llama-3.1-8b", "h100-sxm-80gb", 1), ("llama-3.1-8b", "l4", 1),
    ("llama-3.1-8b", "l40s", 1), ("llama-3.1-70b", "h200", 2), ("llama-3.1-70b", "a100-80gb", 4),
    ("qwen2.5-72b", "h100-sxm-80gb", 4), ("mixtral-8x7b", "h100-sxm-80gb", 2), ("llama-3.1-405b", "b200", 8),
    ("qwen2.5-7b", "a100-40gb", 1),
)


@drill
def fp8_capacity_drill(seed: Annotated[int, SEED_CONTROL] = 0):
    """Tokens a replica holds once its KV cache is stored in fp8 (seed 0: the running example, 798,339).

    The weights stay as they are, so the KV memory is unchanged and each token
    costs half the bytes (:func:`calc.memory.kv_capacity` with ``kv_dtype="fp8"``).

    >>> fp8_capacity_drill(0)["answer"]
    798339
    """
    rng = random.Random(seed)
    if seed == 0:
        bf16 = replica_capacity()
        utilization = bf16.gpu_memory_utilization
        model_key, gpu_key, tp = bf16.model_key, bf16.gpu_key, bf16.tp
    else:
        model_key, gpu_key, tp = rng.choice(FP8_REPLICAS)
        utilization = rng.choice((0.85, 0.9, 0.9, 0.95))
        bf16 = replica_capacity(model_key, gpu_key, tp=tp, gpu_memory_utilization=utilization,
                                parameter_count="exact")
    fp8 = replica_capacity(model_key, gpu_key, tp=tp, gpu_memory_utilization=utilization, kv_dtype="fp8",
                           parameter_count="lesson" if seed == 0 else "exact")
    model, gpu = get_model(model_key), get_gpu(gpu_key)
    answer = fp8.kv_cache_tokens_raw
    where = "The running example" if seed == 0 else "A replica"
    return _question(
        f"{where}: {model.name} in bf16 on {tp} × {gpu.name}, vLLM at {format_number(utilization * 100)}%. "
        f"Each GPU has {format_number(bf16.kv_cache_bytes / GB)} GB of KV cache and the replica holds "
        f"{bf16.kv_cache_tokens_raw:,} tokens with the cache in bf16. Store the KV cache in fp8 instead "
        f"(weights unchanged): how many tokens does the replica hold?",
        answer, "tokens", COUNT_TOLERANCE, f"{answer:,} tokens",
        f"fp8 keeps each K and V value in 1 byte instead of 2, so a token costs "
        f"{fp8.kv_bytes_per_token_per_gpu:,} B per GPU instead of {bf16.kv_bytes_per_token_per_gpu:,}. "
        f"The weights did not change, so neither did the {format_number(bf16.kv_cache_bytes / GB)} GB of KV cache "
        f"per GPU: {fp8.kv_cache_bytes:,.0f} B / {fp8.kv_bytes_per_token_per_gpu:,} B = {answer:,} tokens, "
        f"twice the bf16 figure (to the token rounded down).",
        "a number of tokens, e.g. 500000",
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it ({{ drill_kv_bytes:name }} elsewhere: 1 use).
def _per_token() -> int:
    return kv_bytes_per_token(get_model(WORKED_MODEL))


def _conversation() -> int:
    return kv_bytes_per_request(get_model(WORKED_MODEL), WORKED_CONVERSATION_TOKENS)


def _kib(n_bytes: float) -> str:
    return f"{n_bytes / KiB:g}"


def _mib(n_bytes: float) -> str:
    return f"{n_bytes / MiB:g}"


@fact
def kv_per_token_8b():
    """>>> kv_per_token_8b(), conversation_8b(), fit_8b(), kv_per_gpu_70b_tp4()
    ('131,072 bytes', '524 MB', '76', '81,920 bytes')
    """
    return f"{_per_token():,} bytes"


@fact
def kv_per_token_8b_kib():
    return f"{_kib(_per_token())} KiB"


@fact
def kv_per_token_8b_mib():
    return f"{_mib(_per_token())} MiB"


@fact
def conversation_tokens():
    return f"{WORKED_CONVERSATION_TOKENS:,}"


@fact
def conversation_8b():
    return format_bytes(_conversation())


@fact
def conversation_8b_mib():
    return f"{_mib(_conversation())} MiB"


@fact
def fit_memory():
    return f"{WORKED_KV_MEMORY_GB} GB"


@fact
def fit_8b():
    return f"{requests_in_bytes(to_bytes(WORKED_KV_MEMORY_GB, 'GB'), _conversation()):,}"


@fact
def kv_per_gpu_70b_tp4():
    return f"{kv_bytes_per_token_per_gpu(get_model(WORKED_TP_MODEL), WORKED_TP):,} bytes"


@fact
def kv_per_token_70b():
    return f"{kv_bytes_per_token(get_model(WORKED_TP_MODEL)):,} bytes"


@fact
def tp():
    return str(WORKED_TP)


@fact
def tokens_bf16():
    return f"{replica_capacity().kv_cache_tokens_raw:,}"


@fact
def tokens_fp8():
    return f"{replica_capacity(kv_dtype='fp8').kv_cache_tokens_raw:,}"


@fact
def gpus_in_catalog():
    return str(len(GPUS))


facts = facts_of(__name__)
