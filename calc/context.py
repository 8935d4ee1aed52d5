"""What a long context costs: KV memory grows linearly with it, prefill faster.

Every token of context keeps its keys and values in HBM for as long as the
request lives, so KV memory is linear in context; one long request can hold the
memory of dozens of ordinary conversations. Prefill pays twice: the matmuls are
linear in the prompt, but each token attends to all those before it, so the
attention work is quadratic. FlashAttention (Dao et al. 2022) keeps that
quadratic score matrix in on-chip SRAM instead of writing it to HBM, which is
what makes long prompts possible at all; it does not remove the quadratic FLOPs.

The lesson's figure: one 100K-token request holds the KV of about eighty (78)
1,280-token conversations.

>>> requests_displaced("llama-3.1-70b", long_tokens=100_000, short_tokens=1280)["conversations"]
78
"""

from __future__ import annotations

import math

from calc import memory
from calc.catalog import get_model
from calc.errors import CalcError, check_range
from calc.roofline import decode_step, prefill_attention_pairs, step_coefficients, ttft_s

__all__ = [
    "requests_displaced",
    "prefill_flops",
    "unfused_attention_scores_bytes",
    "context_cost",
    "context_cost_curve",
    "replica_context_fit",
    "cost_growth",
    "scores_against_gpu",
]

MAX_TOKENS = 100_000_000


def requests_displaced(model, *, long_tokens: int = 100_000, short_tokens: int = 1280, kv_dtype: str = "bf16") -> dict:
    """How many ordinary conversations' KV one long request holds.

    KV bytes of one ``long_tokens`` request / KV bytes of one ``short_tokens``
    conversation (window-capped for sliding-window models, whose KV stops
    growing at the window). ``conversations`` is the whole number that fits. For
    full attention it is just the token ratio: 100,000 / 1,280 = 78.1.
    Source: :func:`calc.memory.kv_bytes_per_request`; the lesson's step 13
    (seed ``000_783e2c6cc1bfcb77.txt``: "about eighty 1,280-token conversations").

    >>> r = requests_displaced("llama-3.1-8b")
    >>> r["conversations"], round(r["ratio"], 2), r["long_kv_bytes"]
    (78, 78.12, 13107200000)
    >>> requests_displaced("mistral-7b")["conversations"]  # a 4,096-token window caps the long request
    3
    """
    model = get_model(model)
    long_tokens = check_range("long_tokens", long_tokens, 1, MAX_TOKENS, integer=True)
    short_tokens = check_range("short_tokens", short_tokens, 1, MAX_TOKENS, integer=True)
    long_bytes = memory.kv_bytes_per_request(model, long_tokens, kv_dtype)
    short_bytes = memory.kv_bytes_per_request(model, short_tokens, kv_dtype)
    ratio = long_bytes / short_bytes
    return {
        "model": model.key,
        "long_tokens": long_tokens,
        "short_tokens": short_tokens,
        "long_kv_bytes": long_bytes,
        "short_kv_bytes": short_bytes,
        "ratio": ratio,
        "conversations": math.floor(ratio + 1e-9),
    }


def prefill_flops(model, prompt_tokens: int) -> dict:
    """FLOPs to prefill a prompt on the whole replica: linear in the matmuls, quadratic in attention.

    ``linear = 2 x (active linear parameters + LM head) x n`` (Kaplan et al. 2020,
    section 2.1) and ``attention = 4 x layers x heads x head_dim x n (n + 1) / 2``
    (QK^T and PV over the causal triangle; window-capped for sliding-window
    models). ``attention_share`` shows the quadratic part taking over.
    Source: :func:`calc.roofline.step_coefficients` (same counts), one GPU.

    >>> small, big = prefill_flops("llama-3.1-8b", 1024), prefill_flops("llama-3.1-8b", 131072)
    >>> round(small["attention_share"], 3), round(big["attention_share"], 2)
    (0.018, 0.7)
    """
    model = get_model(model)
    n = check_range("prompt_tokens", prompt_tokens, 1, MAX_TOKENS, integer=True)
    coef = step_coefficients(model, "h100-sxm-80gb", tp=1)  # FLOP counts only: they do not depend on the GPU
    pairs = prefill_attention_pairs(n, sliding_window=model.sliding_window)
    linear = n * coef.linear_flops_per_token
    attention = pairs * coef.attention_flops_per_pair
    return {
        "prompt_tokens": n,
        "linear_flops": linear,
        "attention_flops": attention,
        "total_flops": linear + attention,
        "attention_share": attention / (linear + attention),
    }


def unfused_attention_scores_bytes(model, tokens: int, *, bytes_per_score: int = 2) -> dict:
    """HBM an attention that materialises its score matrix would need, the problem FlashAttention removes.

    A plain implementation writes the ``heads x n x n`` scores of a layer to HBM,
    reads them back for the softmax and again for the product with V. Per layer
    the matrix is ``heads x n^2 x bytes``; across the model the traffic is at least
    three passes over it per layer. FlashAttention computes the same result tile
    by tile in SRAM and never writes the matrix (Dao et al. 2022, "FlashAttention:
    Fast and Memory-Efficient Exact Attention with IO-Awareness", NeurIPS).

    >>> r = unfused_attention_scores_bytes("llama-3.1-70b", 100_000)
    >>> round(r["matrix_bytes_per_layer"] / 1e12, 2), round(r["hbm_traffic_bytes"] / 1e15, 1)
    (1.28, 0.3)
    """
    model = get_model(model)
    n = check_range("tokens", tokens, 1, MAX_TOKENS, integer=True)
    b = check_range("bytes_per_score", bytes_per_score, 1, 8, integer=True)
    per_layer = model.attention_heads * n * n * b
    return {
        "tokens": n,
        "matrix_bytes_per_layer": per_layer,
        "hbm_traffic_bytes": 3 * per_layer * model.layers,
    }


def context_cost(model, gpu, context_tokens: int, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                 chunk_tokens: int | None = 8192, gpu_memory_utilization: float = 0.9, memory_basis: str = "marketed") -> dict:
    """KV memory, prefill time and decode step of one request at ``context_tokens``, on one replica.

    * ``kv_bytes`` (replica) and ``kv_share``: this request's share of the replica's
      KV cache (:func:`calc.memory.kv_capacity`);
    * ``prefill_s``: its TTFT on an idle replica, chunked as vLLM does (8,192-token
      steps by default), from :func:`calc.roofline.ttft_s`;
    * ``decode_step_s``: one decode step of this request alone at full context.
    Source: :mod:`calc.memory`, :mod:`calc.roofline`.

    >>> r = context_cost("llama-3.1-70b", "h100-sxm-80gb", 100_000, tp=4)
    >>> round(r["kv_bytes"] / 1e9, 1), round(r["kv_share"], 3), r["prefill_s"] > 10 * context_cost("llama-3.1-70b", "h100-sxm-80gb", 10_000, tp=4)["prefill_s"]
    (32.8, 0.25, True)
    """
    model = get_model(model)
    n = check_range("context_tokens", context_tokens, 1, MAX_TOKENS, integer=True)
    coef = step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)
    cap = memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                             gpu_memory_utilization=gpu_memory_utilization, memory_basis=memory_basis)
    kv_bytes = memory.kv_bytes_per_request(model, n, kv_dtype)
    kv_tokens = memory.kv_tokens_per_request(model, n)
    flops = prefill_flops(model, n)
    return {
        "context_tokens": n,
        "kv_tokens": kv_tokens,
        "kv_bytes": kv_bytes,
        "kv_share": kv_tokens / cap.kv_cache_tokens,
        "fits": kv_tokens <= cap.kv_cache_tokens,
        "prefill_flops": flops["total_flops"],
        "attention_share": flops["attention_share"],
        "prefill_s": ttft_s(coef, prompt_tokens=n, chunk_tokens=chunk_tokens),
        "decode_step_s": decode_step(coef, batch=1, context_tokens=n)["time_s"],
    }


def context_cost_curve(model, gpu, contexts, **kwargs) -> list[dict]:
    """:func:`context_cost` at each context length in ``contexts`` (a chart's points).

    Source: :func:`context_cost`.

    >>> rows = context_cost_curve("llama-3.1-8b", "h100-sxm-80gb", [1000, 10_000])
    >>> round(rows[1]["kv_bytes"] / rows[0]["kv_bytes"]), rows[1]["prefill_s"] / rows[0]["prefill_s"] > 10
    (10, True)
    """
    contexts = list(contexts)
    if not contexts:
        raise CalcError("contexts must hold at least one context length; got none", "contexts")
    return [context_cost(model, gpu, c, **kwargs) for c in contexts]


def replica_context_fit(capacity_tokens: int, *, long_tokens: int, short_tokens: int, window_tokens: int) -> dict:
    """How one replica's KV cache of ``capacity_tokens`` holds long requests beside short ones (step 13): the
    share one long request takes, how many long, full-window or short requests fit whole, and how many short
    ones still fit beside one long request or beside the full-window requests that fit.
    Source: contiguous reservations, :func:`calc.allocation.contiguous_max_concurrency` (capacity // length).

    >>> replica_context_fit(399_169, long_tokens=100_000, short_tokens=1_280, window_tokens=131_072)
    {'long_share': 0.2505204562478549, 'long_fit': 3, 'window_fit': 3, 'beside_window': 4, 'short_fit': 311, 'beside_long': 233}
    """
    capacity = check_range("capacity_tokens", capacity_tokens, 0, 10**12, integer=True)
    long_tokens = check_range("long_tokens", long_tokens, 1, MAX_TOKENS, integer=True)
    short_tokens = check_range("short_tokens", short_tokens, 1, MAX_TOKENS, integer=True)
    window_tokens = check_range("window_tokens", window_tokens, 1, MAX_TOKENS, integer=True)
    return {
        "long_share": long_tokens / capacity,
        "long_fit": capacity // long_tokens,
        "window_fit": capacity // window_tokens,
        "beside_window": (capacity - capacity // window_tokens * window_tokens) // short_tokens,
        "short_fit": capacity // short_tokens,
        "beside_long": (capacity - long_tokens) // short_tokens,
    }


def cost_growth(small: dict, large: dict) -> dict:
    """How much more a larger context costs than a smaller one, from two :func:`context_cost` results: the
    prefill time and KV bytes as multiples, and the decode step's added seconds.

    >>> cost_growth({"prefill_s": 1.0, "kv_bytes": 10, "decode_step_s": 0.02},
    ...             {"prefill_s": 12.0, "kv_bytes": 100, "decode_step_s": 0.025})
    {'prefill_ratio': 12.0, 'kv_ratio': 10.0, 'decode_added_s': 0.005000000000000001}
    """
    return {"prefill_ratio": large["prefill_s"] / small["prefill_s"],
            "kv_ratio": large["kv_bytes"] / small["kv_bytes"],
            "decode_added_s": large["decode_step_s"] - small["decode_step_s"]}


def scores_against_gpu(matrix_bytes: float, traffic_bytes: float, gpu) -> dict:
    """The attention scores a GPU would materialise (:func:`unfused_attention_scores_bytes`, its share) against
    that GPU: the matrix as a multiple of its memory, and the seconds its HBM takes to move the traffic.

    >>> from calc.catalog import get_gpu
    >>> r = scores_against_gpu(400e9, 6.7e12, get_gpu("h100-sxm-80gb"))
    >>> r["memory_multiple"], r["move_s"]
    (5.0, 2.0)
    """
    return {"memory_multiple": matrix_bytes / gpu.memory_bytes_marketed, "move_s": traffic_bytes / gpu.hbm_bytes_per_s}
