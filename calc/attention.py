"""Attention kinds and their memory traffic: KV bytes per token under MHA, GQA, MQA and MLA, and what FlashAttention saves.

The deep dive "Attention" (docs/deep-dives/attention.md) compares the kinds on
one model shape (:func:`calc.memory.kv_bytes_per_token_by_attention`) and the HBM
traffic of attention with and without materialising the scores (Dao et al.,
"FlashAttention", NeurIPS 2022)."""

from __future__ import annotations

from calc.catalog import get_model
from calc.context import prefill_flops, unfused_attention_scores_bytes
from calc.errors import CalcError, check_range
from calc.memory import KV_DTYPE_BYTES, check_tp, gqa_kv_heads, kv_bytes_per_token_by_attention, kv_capacity

__all__ = ["KINDS", "ACTIVATION_BYTES", "kv_by_kind", "attention_traffic"]


KINDS = {"mha": "MHA", "gqa": "GQA", "mqa": "MQA", "mla": "MLA"}


ACTIVATION_BYTES = 2  # Q, K, V, O and the scores in 16 bits


def _heads_per_gpu(model, kind: str, tp: int) -> int:
    """KV heads one GPU caches for ``kind`` (vLLM's split: heads over TP, at least one, a latent replicated)."""
    if kind == "mha":
        return max(1, model.attention_heads // tp)
    if kind == "gqa":
        return max(1, gqa_kv_heads(model) // tp)
    return 1


def kv_by_kind(model, gpu, *, tp: int = 1, kv_dtype: str = "bf16", context_tokens: int,
               room_bytes_per_gpu: float | None = None) -> dict[str, dict]:
    """KV bytes per token (replica and per GPU) and the requests of ``context_tokens`` that fit, per attention kind.

    The same model's weights and memory budget throughout (vLLM's KV room from
    :func:`calc.memory.kv_capacity`); only the cache layout changes. Per GPU: MHA
    and GQA split their KV heads over ``tp`` (at least one each); MQA's single
    head and MLA's latent are replicated on every GPU. The weights of the K/V
    projections, which also differ between kinds, are left as they are.
    ``requests`` is None when the weights alone do not fit on ``tp`` GPUs.
    ``room_bytes_per_gpu`` gives the KV room instead (e.g. the lesson's, which
    counts the 70B's weights as 70e9 parameters: 311 requests, not 312).
    Source: :func:`calc.memory.kv_bytes_per_token_by_attention` (MLA at
    DeepSeek-V2/V3's proportions for a non-MLA model), the TP rules of
    :func:`calc.memory.kv_heads_per_gpu`.

    >>> r = kv_by_kind("llama-3.1-70b", "h100-sxm-80gb", tp=4, context_tokens=1280)
    >>> r["gqa"]["requests"], r["mqa"]["kv_bytes_per_token_per_gpu"], r["mla"]["kv_bytes_per_token_per_gpu"]
    (312, 40960, 92160)
    >>> from calc import lesson
    >>> kv_by_kind("llama-3.1-70b", "h100-sxm-80gb", tp=4, context_tokens=1280,
    ...            room_bytes_per_gpu=lesson.kv_capacity().kv_cache_bytes)["gqa"]["requests"]
    311
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    context_tokens = check_range("context_tokens", context_tokens, 1, 100_000_000, integer=True)
    totals = kv_bytes_per_token_by_attention(model, kv_dtype)
    try:
        room = (kv_capacity(model, gpu, tp=tp, kv_dtype=kv_dtype).kv_cache_bytes if room_bytes_per_gpu is None
                else check_range("room_bytes_per_gpu", room_bytes_per_gpu, 0, 1e15))  # per GPU
    except CalcError as error:
        if "does not fit" not in str(error):
            raise
        room = None  # the weights alone exceed the GPUs: no request fits, whatever the layout
    b = KV_DTYPE_BYTES[kv_dtype]
    out = {}
    for kind in KINDS:
        if kind == "mla":
            per_gpu = totals["mla"]
        else:
            head_dim = model.qk_nope_head_dim or model.head_dim if model.attention == "mla" else model.head_dim
            per_gpu = model.layers * 2 * _heads_per_gpu(model, kind, tp) * head_dim * b
        out[kind] = {"kv_bytes_per_token": totals[kind], "kv_bytes_per_token_per_gpu": per_gpu,
                     "kv_bytes_per_request": totals[kind] * context_tokens,
                     "requests": None if room is None else int(room // (per_gpu * context_tokens))}
    return out


def attention_traffic(model, prompt_tokens: int) -> dict:
    """HBM bytes of attention over the whole model for one prompt, with and without FlashAttention.

    ``unfused``: the score matrix written, read for the softmax, its result
    written and read again for the product with V (three passes over
    ``heads x n x n``; :func:`calc.context.unfused_attention_scores_bytes`), plus
    Q, K, V and O. ``fused_minimum``: Q, K, V read and O written once per layer,
    the floor FlashAttention approaches (it re-reads K and V tiles per block of
    queries, mostly from on-chip caches). ``scratch``: the score matrix of one
    layer, which FlashAttention never allocates. FLOPs are the same either way.
    Source: Dao et al., "FlashAttention", NeurIPS 2022 (section 3.2: standard
    attention needs Θ(Nd + N²) HBM accesses, FlashAttention Θ(N²d²/M)).

    >>> t = attention_traffic("llama-3.1-70b", 100_000)
    >>> round(t["scratch_bytes"] / 1e12, 2), round(t["ratio"])
    (1.28, 1043)
    """
    model = get_model(model)
    n = check_range("prompt_tokens", prompt_tokens, 1, 100_000_000, integer=True)
    scores = unfused_attention_scores_bytes(model, n, bytes_per_score=ACTIVATION_BYTES)
    head_dim = model.head_dim
    kv_heads = model.kv_heads if model.attention != "mha" else model.attention_heads
    qo = 2 * n * model.attention_heads * head_dim * ACTIVATION_BYTES
    kv = 2 * n * kv_heads * head_dim * ACTIVATION_BYTES
    fused = model.layers * (qo + kv)
    unfused = scores["hbm_traffic_bytes"] + fused
    flops = prefill_flops(model, n)
    return {"prompt_tokens": n, "unfused_bytes": unfused, "fused_minimum_bytes": fused, "ratio": unfused / fused,
            "scratch_bytes": scores["matrix_bytes_per_layer"], "attention_flops": flops["attention_flops"],
            "attention_share": flops["attention_share"]}
