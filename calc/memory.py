"""GPU memory of a serving replica: weight bytes, KV bytes per token, and vLLM's KV cache capacity.

Three questions, one module:

* how many bytes the weights take in a given format (16-bit, fp8, int8, 4-bit
  with its group scales, the layers kept in 16 bits counted apart);
* how many bytes of KV cache one token costs, for the replica and per GPU
  under tensor parallelism;
* how many tokens of KV cache a replica holds once vLLM has taken its share of
  each GPU and subtracted the weights, the activation workspace and the memory
  outside PyTorch (``vllm/v1/worker/gpu_worker.py``, ``determine_available_memory``).

Sizes are bytes (int or float); "GB" in prose is 1e9 bytes and "GiB" 2**30.

The lesson's replica (Llama 3.1 70B in bf16 on four H100s, TP 4; :mod:`calc.lesson`):

>>> cap = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4)
>>> cap.kv_bytes_per_token, cap.kv_bytes_per_token_per_gpu, cap.kv_cache_tokens_raw
(327680, 81920, 399452)
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass

from calc.catalog import GPU, MEMORY_BASES, Model, get_gpu, get_model
from calc.errors import CalcError, check_choice, check_positive, check_range
from calc.units import GB, round_sig

__all__ = [
    "WEIGHT_FORMATS", "KV_DTYPES", "WEIGHT_BITS", "KV_DTYPE_BYTES", "WeightBytes", "weight_bytes",
    "weights_bytes_per_gpu", "kv_bytes_per_token", "kv_bytes_per_token_per_gpu", "kv_heads_per_gpu",
    "allowed_tp", "check_tp", "query_heads_per_gpu", "kv_tokens_per_request", "kv_bytes_per_request", "gqa_kv_heads", "gqa_group_size", "kv_bytes_full_attention", "requests_in_bytes", "bits_per_weight", "freed_bytes", "kv_bytes_per_token_by_attention",
    "KVCapacity", "kv_capacity", "default_activation_bytes", "default_non_torch_bytes",
    "ACTIVATION_WORKSPACE_BYTES", "NON_TORCH_BASE_BYTES", "NON_TORCH_TP_BYTES",
]

WEIGHT_FORMATS = ("bf16", "fp16", "fp8", "int8", "int4", "nf4")
KV_DTYPES = ("bf16", "fp16", "fp8")

#: Bits per weight of each format's payload.
WEIGHT_BITS = {"bf16": 16, "fp16": 16, "fp8": 8, "int8": 8, "int4": 4, "nf4": 4}
#: Bytes per cached K or V value.
KV_DTYPE_BYTES = {"bf16": 2, "fp16": 2, "fp8": 1}

# Scale storage per format (bytes per scale group, and what a group is):
# fp8, int8: one fp32 scale per output channel (vLLM's fp8/int8 checkpoints, channel-wise weight scales);
# int4: one fp16 scale and one packed 4-bit zero point per group of ``group_size`` input weights (GPTQ/AWQ);
# nf4: one fp32 absmax per block of ``group_size`` weights (bitsandbytes without double quantization;
#      its default block is 64, pass group_size=64 to match it).
_SCALE_BYTES_PER_GROUP = {"fp8": 4.0, "int8": 4.0, "int4": 2.5, "nf4": 4.0}

_MAX_TP = 1024


# --------------------------------------------------------------------------- weights


@dataclass(frozen=True)
class WeightBytes:
    """Bytes of a model's weights in one format, split into the terms that make them.

    ``payload_bytes``: the quantized linear layers at the format's width;
    ``scale_bytes``: their quantization scales (and zero points);
    ``unquantized_bytes``: embeddings, LM head, norms, biases and router kept in 16 bits;
    ``nominal_bytes``: every parameter at the format's width, the figure usually quoted.

    >>> wb = weight_bytes(get_model("mistral-7b"), "int4")
    >>> round(wb.nominal_bytes / 1e9, 1), round(wb.payload_bytes / 1e9, 2), round(wb.total_bytes / 1e9, 2)
    (3.6, 3.49, 4.15)
    """

    weights: str
    group_size: int
    payload_bytes: int
    scale_bytes: int
    unquantized_bytes: int
    total_bytes: int
    nominal_bytes: int

    def to_dict(self) -> dict:
        """The fields as a JSON-ready dict.

        >>> weight_bytes(get_model("llama-3.1-8b")).to_dict()["total_bytes"]
        16060522496
        """
        return asdict(self)


def weight_bytes(model: Model, weights: str = "bf16", *, group_size: int = 128,
                 quantize_embeddings: bool = False) -> WeightBytes:
    """Bytes of the weights of ``model`` stored as ``weights``.

    The linear layers are stored at ``WEIGHT_BITS[weights]``; quantized formats add
    their scales (see ``_SCALE_BYTES_PER_GROUP``); embeddings and the LM head stay
    16-bit unless ``quantize_embeddings``, and norms, biases and MoE routers
    always do. Mistral-7B: 14.5 GB in 16 bits and 3.6 GB "at INT4" (the
    workshop's figures: every parameter at 4 bits; the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah)); the 4-bit
    payload of its linear layers alone is 3.49 GB, and the full checkpoint with
    group scales and 16-bit embeddings about 4.15 GB.

    >>> round(weight_bytes(get_model("mistral-7b")).total_bytes / 1e9, 1)
    14.5
    >>> wb = weight_bytes(get_model("llama-3.1-70b"), "fp8")
    >>> wb.payload_bytes + wb.scale_bytes + wb.unquantized_bytes == wb.total_bytes
    True
    """
    model = get_model(model)
    check_choice("weights", weights, WEIGHT_FORMATS)
    group_size = check_range("group_size", group_size, 1, 1 << 20, integer=True)
    bits = WEIGHT_BITS[weights]
    other = model.other_params()
    embed = other["embed_tokens"] + other["lm_head"]
    kept_16bit = sum(other.values()) - (embed if quantize_embeddings else 0)
    linears = model.linears()
    quantized_params = sum(l.params for l in linears) + (embed if quantize_embeddings else 0)
    payload = (quantized_params * bits + 7) // 8
    if bits == 16:
        scales = 0.0
    elif weights in ("fp8", "int8"):
        rows = sum(l.out_features * l.count for l in linears)
        if quantize_embeddings:
            rows += model.vocab_size * (1 if model.tied_embeddings else 2)
        scales = rows * _SCALE_BYTES_PER_GROUP[weights]
    else:
        groups = sum(l.out_features * l.count * math.ceil(l.in_features / group_size) for l in linears)
        if quantize_embeddings:
            groups += (1 if model.tied_embeddings else 2) * model.vocab_size * math.ceil(model.hidden_size / group_size)
        scales = groups * _SCALE_BYTES_PER_GROUP[weights]
    scale_bytes = int(math.ceil(scales))
    unquantized = kept_16bit * 2
    nominal = (model.total_params * bits + 7) // 8
    return WeightBytes(weights, group_size, payload, scale_bytes, unquantized,
                       payload + scale_bytes + unquantized, nominal)


def allowed_tp(model: Model, max_tp: int = 64) -> list[int]:
    """Tensor-parallel sizes vLLM accepts for ``model``, up to ``max_tp``.

    TP must divide the attention heads; the KV heads must split evenly across
    GPUs, or, when TP exceeds them, TP must be a multiple of them so each KV
    head is replicated the same number of times (vLLM's ``get_num_kv_heads``).
    MLA keeps one latent for all heads, so only the heads rule applies.

    >>> allowed_tp(get_model("llama-3.1-70b"))
    [1, 2, 4, 8, 16, 32, 64]
    >>> allowed_tp(get_model("qwen2.5-7b"))
    [1, 2, 4, 28]
    """
    model = get_model(model)
    out = []
    for tp in range(1, max_tp + 1):
        if model.attention_heads % tp:
            continue
        if model.attention != "mla":
            kv = model.kv_heads
            if (kv >= tp and kv % tp) or (kv < tp and tp % kv):
                continue
        out.append(tp)
    return out


def check_tp(model: Model, tp) -> int:
    """Return ``tp`` if the model can be split that way, else CalcError naming tp and the allowed values.

    >>> check_tp(get_model("llama-3.1-70b"), 4)
    4
    >>> check_tp(get_model("llama-3.1-70b"), 3)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: tp must divide the 64 attention heads (and fit the 8 KV heads) of Llama 3.1 70B: one of 1, 2, 4, 8, 16, 32, 64; got 3
    """
    tp = check_range("tp", tp, 1, _MAX_TP, integer=True)
    allowed = allowed_tp(model, max(64, min(tp, _MAX_TP)))
    if tp not in allowed:
        kv = "" if model.attention == "mla" else f" (and fit the {model.kv_heads} KV heads)"
        raise CalcError(
            f"tp must divide the {model.attention_heads} attention heads{kv} of {model.name}: "
            f"one of {', '.join(map(str, allowed))}; got {tp}", "tp")
    return tp


def weights_bytes_per_gpu(model: Model, tp: int = 1, weights: str = "bf16", *, group_size: int = 128) -> float:
    """Weight bytes on each GPU: the whole model's weights split evenly over ``tp`` GPUs.

    The lesson: 70.6 B parameters x 2 bytes / 4 GPUs = 35.3 GB per GPU. (Norms
    are replicated on every GPU in practice; they are 0.002% of the weights and
    ignored here.)

    >>> round(weights_bytes_per_gpu(get_model("llama-3.1-70b"), tp=4) / 1e9, 1)
    35.3
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    return weight_bytes(model, weights, group_size=group_size).total_bytes / tp


# --------------------------------------------------------------------------- KV per token


def kv_bytes_per_token(model: Model, kv_dtype: str = "bf16") -> int:
    """KV cache bytes one token costs for the whole replica: 2 x layers x KV heads x head dim x bytes.

    MLA caches one latent per layer instead: layers x (kv_lora_rank + qk_rope_head_dim) x bytes
    (DeepSeek-V2 paper, arXiv 2405.04434). Llama 3.1 8B in bf16: 131,072 B = 128 KiB
    (the lesson's drill, docs/lesson/03-drill-kv-bytes.md); Mistral-7B: 131 KB
    (the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah)).

    >>> kv_bytes_per_token(get_model("llama-3.1-8b"))
    131072
    >>> kv_bytes_per_token(get_model("llama-3.1-70b")), kv_bytes_per_token(get_model("deepseek-v3"))
    (327680, 70272)
    """
    model = get_model(model)
    check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    return model.layers * model.kv_values_per_token_per_layer * KV_DTYPE_BYTES[kv_dtype]


def kv_heads_per_gpu(model: Model, tp: int = 1) -> int:
    """KV heads each GPU caches: split across GPUs, one (replicated) when TP exceeds them.

    An MLA latent is a single shared "head" that every GPU keeps whole.

    >>> kv_heads_per_gpu(get_model("llama-3.1-70b"), 4), kv_heads_per_gpu(get_model("llama-3.1-70b"), 16)
    (2, 1)
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    if model.attention == "mla":
        return 1
    return max(1, model.kv_heads // tp)


def query_heads_per_gpu(model: Model, tp: int = 1) -> int:
    """Attention (query) heads each GPU computes under tensor parallelism ``tp``: the heads split evenly
    (Megatron-LM's column-parallel attention, https://arxiv.org/abs/1909.08053, section 3; vLLM checks that
    ``tp`` divides them).

    >>> query_heads_per_gpu(get_model("llama-3.1-70b"), 4)
    16
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    return model.attention_heads // tp


def gqa_group_size(model: Model) -> int:
    """Query heads that share one KV head (1 for MHA, all of them for MQA; Ainslie et al. 2023,
    https://arxiv.org/abs/2305.13245, section 2.2).

    >>> gqa_group_size(get_model("mistral-7b")), gqa_group_size(get_model("llama-2-7b"))
    (4, 1)
    """
    model = get_model(model)
    return model.attention_heads // model.kv_heads


def kv_bytes_per_token_per_gpu(model: Model, tp: int = 1, kv_dtype: str = "bf16") -> int:
    """KV bytes per token held on each GPU under tensor parallelism ``tp``.

    Llama 3.1 70B on TP 4: 8 KV heads / 4 = 2 per GPU, 81,920 B per token per GPU.
    Replicated KV heads (TP above the KV heads) and MLA's unsplit latent make the
    sum over GPUs exceed the replica's logical bytes per token.

    >>> kv_bytes_per_token_per_gpu(get_model("llama-3.1-70b"), tp=4)
    81920
    >>> kv_bytes_per_token_per_gpu(get_model("deepseek-v3"), tp=8) == kv_bytes_per_token(get_model("deepseek-v3"))
    True
    """
    model = get_model(model)
    check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    heads = kv_heads_per_gpu(model, tp)
    if model.attention == "mla":
        return kv_bytes_per_token(model, kv_dtype)
    return model.layers * 2 * heads * model.head_dim * KV_DTYPE_BYTES[kv_dtype]


def kv_tokens_per_request(model: Model, context_tokens: int) -> int:
    """Tokens of KV a request keeps: its context, capped by a sliding attention window.

    Mistral 7B v0.1 attends to the last 4,096 tokens only (its config.json
    ``sliding_window``), so an engine that frees older blocks keeps at most 4,096
    tokens per request (vLLM does for sliding-window layers).

    >>> kv_tokens_per_request(get_model("mistral-7b"), 10_000), kv_tokens_per_request(get_model("llama-3.1-8b"), 10_000)
    (4096, 10000)
    """
    model = get_model(model)
    context_tokens = check_range("context_tokens", context_tokens, 0, 10**9, integer=True)
    if model.sliding_window:
        return min(context_tokens, model.sliding_window)
    return context_tokens


def kv_bytes_per_request(model: Model, context_tokens: int, kv_dtype: str = "bf16") -> int:
    """KV bytes one request of ``context_tokens`` holds (replica total), window-capped.

    A 4,000-token conversation on Llama 3.1 8B: about half a gigabyte (524 MB).

    >>> kv_bytes_per_request(get_model("llama-3.1-8b"), 4000)
    524288000
    """
    return kv_tokens_per_request(model, context_tokens) * kv_bytes_per_token(model, kv_dtype)


#: Query heads per KV head when a model that is not GQA is drawn as GQA: Llama 3's ratio (64 query heads, 8 KV
#: heads; https://huggingface.co/meta-llama/Llama-3.1-70B/blob/main/config.json, ``num_key_value_heads``).
GQA_QUERY_HEADS_PER_KV_HEAD = 8


def kv_bytes_full_attention(model: Model, tokens: int, kv_dtype: str = "bf16") -> int:
    """The KV bytes of ``tokens`` if every token were cached: what a request would hold without a sliding
    window (:func:`kv_bytes_per_request` caps a windowed model at its window).

    >>> kv_bytes_full_attention(get_model("mistral-7b"), 32_768) == 32_768 * kv_bytes_per_token(get_model("mistral-7b"))
    True
    """
    return check_range("tokens", tokens, 0, 10**12, integer=True) * kv_bytes_per_token(model, kv_dtype)


def requests_in_bytes(capacity_bytes: float, request_bytes: float) -> int:
    """Whole requests of ``request_bytes`` of KV each that ``capacity_bytes`` holds.

    >>> requests_in_bytes(40e9, 524_288_000)
    76
    """
    check_positive("request_bytes", request_bytes)
    return int(check_positive("capacity_bytes", capacity_bytes, allow_zero=True) // request_bytes)


def bits_per_weight(total_bytes: float, params: float) -> float:
    """The bits each weight takes all in: a format's bytes (payload, scales and the 16-bit rest) x 8 / parameters.

    >>> round(bits_per_weight(18.2e9, 70.6e9), 4)
    2.0623
    """
    return total_bytes * 8 / check_positive("params", params)


def freed_bytes(before_bytes: float, after_bytes: float) -> float:
    """The memory a smaller format frees: the bytes before minus the bytes after (per GPU when both are).

    >>> freed_bytes(35.3e9, 18.2e9)
    17100000000.0
    """
    return before_bytes - after_bytes


def gqa_kv_heads(model: Model) -> int:
    """The KV heads of ``model`` under grouped-query attention: its own when it is GQA, else one KV head per
    :data:`GQA_QUERY_HEADS_PER_KV_HEAD` query heads (at least one). The one rule for "this model, with GQA"
    (the attention deep dive's comparison, step 2's variants, :func:`kv_bytes_per_token_by_attention`).
    Source: Ainslie et al., "GQA" (2023, https://arxiv.org/abs/2305.13245, section 2.2: groups of query heads
    share one KV head).

    >>> gqa_kv_heads(get_model("llama-3.1-8b")), gqa_kv_heads(get_model("llama-2-7b")), gqa_kv_heads(get_model("deepseek-v3"))
    (8, 4, 16)
    """
    model = get_model(model)
    if model.attention == "gqa":
        return model.kv_heads
    return max(1, model.attention_heads // GQA_QUERY_HEADS_PER_KV_HEAD)


def kv_bytes_per_token_by_attention(model: Model, kv_dtype: str = "bf16") -> dict[str, int]:
    """The same model's KV bytes per token under MHA, its own GQA, MQA and an MLA latent.

    MHA caches every head, MQA one, GQA the model's KV heads (for a model that
    is not GQA, one KV head per 8 query heads, Llama 3's ratio); the MLA column
    uses DeepSeek-V2/V3's proportions (latent = 4 x head dim, plus a shared
    RoPE key of head dim / 2: 512 + 64 for head dim 128), or the model's own
    ranks when it is MLA.

    >>> kv_bytes_per_token_by_attention(get_model("llama-3.1-8b"))
    {'mha': 524288, 'gqa': 131072, 'mqa': 16384, 'mla': 36864}
    """
    model = get_model(model)
    check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    b = KV_DTYPE_BYTES[kv_dtype]
    if model.attention == "mla":
        latent = model.kv_lora_rank + model.qk_rope_head_dim
        head_dim = model.qk_nope_head_dim or model.head_dim
    else:
        head_dim = model.head_dim
        latent = 4 * head_dim + head_dim // 2
    n = model.layers
    return {
        "mha": n * 2 * model.attention_heads * head_dim * b,
        "gqa": n * 2 * gqa_kv_heads(model) * head_dim * b,
        "mqa": n * 2 * head_dim * b,
        "mla": n * latent * b,
    }


# --------------------------------------------------------------------------- capacity

#: Default peak activation memory per GPU (bytes) when none is measured: vLLM's
#: profiling run pushes one batch of ``max_num_batched_tokens`` (8,192 by default
#: with chunked prefill) through the model and records the peak above the weights.
#: It is a few GB for large models; the logged 8B case (vllm issue #10517)
#: measured 2.07 GiB at a 20,000-token profile. An assumption, not a measurement.
ACTIVATION_WORKSPACE_BYTES = 2.5 * GB
#: Memory outside PyTorch's allocator on one GPU (CUDA context allocations, cuBLAS
#: workspaces); the logged 8B case measured 0.35 GiB on one GPU.
NON_TORCH_BASE_BYTES = 0.5 * GB
#: Extra non-PyTorch memory when tensor parallel (NCCL and custom all-reduce buffers).
NON_TORCH_TP_BYTES = 1.0 * GB


def default_activation_bytes(model: Model | None = None, tp: int = 1) -> float:
    """The activation workspace assumed per GPU when none is given: a fixed 2.5 GB.

    Fixed because vLLM profiles a fixed token budget per step, whatever the GPU.
    With :func:`default_non_torch_bytes` it makes the lesson's 4 GB of
    "workspace and overhead" on each H100 of a TP 4 replica (2.5 + 1.5).

    >>> default_activation_bytes()
    2500000000.0
    """
    return ACTIVATION_WORKSPACE_BYTES


def default_non_torch_bytes(tp: int = 1) -> float:
    """Non-PyTorch memory assumed per GPU: 0.5 GB, plus 1 GB of communication buffers when ``tp > 1``.

    >>> default_non_torch_bytes(1), default_non_torch_bytes(4)
    (500000000.0, 1500000000.0)
    """
    tp = check_range("tp", tp, 1, _MAX_TP, integer=True)
    return NON_TORCH_BASE_BYTES + (NON_TORCH_TP_BYTES if tp > 1 else 0.0)


@dataclass(frozen=True)
class KVCapacity:
    """vLLM's KV cache sizing for one replica, every term per GPU in bytes.

    ``requested = total x utilization``; ``kv_cache = requested - weights -
    activation - non_torch - cuda_graph`` (unless given directly);
    ``kv_cache_blocks = kv_cache // (block_size x kv_bytes_per_token_per_gpu)``;
    ``kv_cache_tokens = blocks x block_size`` for the whole replica (vLLM logs
    it as "GPU KV cache size"); ``max_concurrency = kv_cache_tokens / max_model_len``.
    ``unclaimed_bytes`` is what utilization leaves to other processes.

    >>> cap = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4)
    >>> round(cap.kv_cache_bytes / 1e9, 1), cap.kv_cache_blocks, cap.kv_cache_tokens
    (32.7, 24965, 399440)
    """

    model_key: str
    gpu_key: str | None
    tp: int
    weights: str
    kv_dtype: str
    memory_basis: str
    gpu_memory_utilization: float
    block_size: int
    max_model_len: int | None
    total_bytes: float
    requested_bytes: float
    unclaimed_bytes: float
    weights_bytes: float
    activation_bytes: float
    non_torch_bytes: float
    cuda_graph_bytes: float
    kv_cache_bytes: float
    kv_bytes_per_token: int
    kv_bytes_per_token_per_gpu: int
    kv_cache_blocks: int
    kv_cache_tokens: int
    kv_cache_tokens_raw: int
    max_concurrency: float | None

    @property
    def weights_bytes_per_gpu(self) -> float:
        """Alias of ``weights_bytes`` (every term here is per GPU).

        >>> c = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4); c.weights_bytes_per_gpu == c.weights_bytes
        True
        """
        return self.weights_bytes

    @property
    def weights_bytes_replica(self) -> float:
        """The weights of the whole replica: per GPU x TP (each GPU holds 1/TP of them).

        >>> c = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4); c.weights_bytes_replica == 4 * c.weights_bytes
        True
        """
        return self.weights_bytes * self.tp

    @property
    def kv_cache_bytes_replica(self) -> float:
        """The KV cache of the whole replica: per GPU x TP (vLLM splits the KV heads over the GPUs).

        >>> c = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4); c.kv_cache_bytes_replica == 4 * c.kv_cache_bytes
        True
        """
        return self.kv_cache_bytes * self.tp

    @property
    def overhead_bytes(self) -> float:
        """What one GPU spends besides the weights and the KV cache: the activation workspace and the non-torch
        overhead (CUDA context, NCCL buffers; vLLM's ``determine_available_memory``).

        >>> c = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4); c.overhead_bytes == c.activation_bytes + c.non_torch_bytes
        True
        """
        return self.activation_bytes + self.non_torch_bytes

    @property
    def unclaimed_fraction(self) -> float:
        """The share of GPU memory vLLM leaves alone: 1 - ``gpu_memory_utilization``.

        >>> round(kv_capacity(get_model("llama-3.1-8b"), "h100-sxm-80gb").unclaimed_fraction, 6)
        0.1
        """
        return 1 - self.gpu_memory_utilization

    def to_dict(self) -> dict:
        """Every field as JSON-ready data: byte terms as whole bytes, other floats to 6 significant digits.

        >>> d = kv_capacity(get_model("llama-3.1-70b"), "h100-sxm-80gb", tp=4, max_model_len=8192).to_dict()
        >>> d["kv_cache_tokens"], d["weights_bytes_per_gpu"], d["max_concurrency"]
        (399440, 35276853248, 48.7598)
        """
        out = {}
        for key, value in asdict(self).items():
            if isinstance(value, float):
                value = round(value) if key.endswith("_bytes") else round_sig(value)
            out[key] = value
        out["weights_bytes_per_gpu"] = out["weights_bytes"]
        return out


def _bytes_arg(field: str, value, *, allow_zero: bool = True):
    if value is None:
        return None
    return float(check_positive(field, value, allow_zero=allow_zero))


def kv_capacity(model, gpu, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                gpu_memory_utilization: float = 0.9, block_size: int = 16, max_model_len: int | None = None,
                memory_basis: str = "marketed", gpu_memory_bytes: float | None = None,
                weights_bytes: float | None = None, activation_bytes: float | None = None,
                non_torch_bytes: float | None = None, cuda_graph_bytes: float = 0,
                kv_cache_bytes: float | None = None, memory_model: str = "vllm-v1",
                max_num_batched_tokens: int | None = None, max_num_seqs: int | None = None) -> KVCapacity:
    """How many tokens of KV cache a replica of ``tp`` GPUs holds, the vLLM way.

    ``gpu`` is a catalog key or :class:`GPU`, or None when ``gpu_memory_bytes``
    gives the capacity. Measured terms (per GPU, bytes) override the model:
    ``weights_bytes`` (default: :func:`weights_bytes_per_gpu`),
    ``activation_bytes`` (default: :func:`default_activation_bytes`),
    ``non_torch_bytes`` (default: :func:`default_non_torch_bytes`),
    ``cuda_graph_bytes`` (0 by default; newer vLLM counts the graph pool),
    ``kv_cache_bytes`` (skip the subtraction: the KV memory itself).
    ``memory_basis`` picks the GPU's marketed capacity (80e9 for an H100, as the
    lesson counts: the lesson's basis, with its round workspace) or the runtime reading
    (81,559 MiB, about 15% more KV), both with the fixed workspace above; or ``engine``: memory
    as the engine sees it (:mod:`calc.engine_memory`): the capacity CUDA reports (79.19 GiB on an
    H100), the activation peak the engine's profiling run measures for a step of
    ``max_num_batched_tokens`` with ``max_num_seqs`` sequences (vLLM V1's defaults for the GPU when
    not given: :func:`calc.engine_memory.vllm_v1_batch_defaults`), its non-PyTorch memory, and its
    own sizing rule, ``memory_model`` (``vllm-v1``, ``vllm-v0``, ``sglang`` with
    ``gpu_memory_utilization`` as ``mem_fraction_static``, ``trtllm`` with it as
    ``free_gpu_memory_fraction``). Given terms still override the engine's.

    The vLLM log of issue #10517 (RTX 3090, Llama 3.1 8B): 3.81 GiB of KV cache,
    1,952 blocks, 1.56x concurrency at 20,000 tokens.

    >>> from calc.units import GiB
    >>> cap = kv_capacity("llama-3.1-8b", None, gpu_memory_bytes=23.58 * GiB, weights_bytes=14.9888 * GiB,
    ...                   activation_bytes=2.07 * GiB, non_torch_bytes=0.35 * GiB, max_model_len=20_000)
    >>> round(cap.kv_cache_bytes / GiB, 2), cap.kv_cache_blocks, round(cap.max_concurrency, 2)
    (3.81, 1952, 1.56)

    The same card and model from calc's own figures, as the V0 engine profiled it (the lesson's basis
    would count the card as 24e9 bytes and leave about half the cache):

    >>> eng = kv_capacity("llama-3.1-8b", "rtx-3090", memory_basis="engine", memory_model="vllm-v0",
    ...                   max_model_len=20_000, max_num_batched_tokens=2048, max_num_seqs=256)
    >>> eng.kv_cache_blocks, kv_capacity("llama-3.1-8b", "rtx-3090", max_model_len=20_000).kv_cache_blocks
    (1973, 1210)
    """
    model = get_model(model)
    tp = check_tp(model, tp)
    check_choice("weights", weights, WEIGHT_FORMATS)
    check_choice("kv_dtype", kv_dtype, KV_DTYPES)
    check_choice("memory_basis", memory_basis, MEMORY_BASES)
    utilization = float(check_range("gpu_memory_utilization", gpu_memory_utilization, 0.01, 1.0))
    block_size = check_range("block_size", block_size, 1, 4096, integer=True)
    if max_model_len is not None:
        max_model_len = check_range("max_model_len", max_model_len, 1, 10**9, integer=True)
    gpu_memory_bytes = _bytes_arg("gpu_memory_bytes", gpu_memory_bytes, allow_zero=False)
    weights_given = _bytes_arg("weights_bytes", weights_bytes)
    activation = _bytes_arg("activation_bytes", activation_bytes)
    non_torch = _bytes_arg("non_torch_bytes", non_torch_bytes)
    cuda_graph = _bytes_arg("cuda_graph_bytes", cuda_graph_bytes) or 0.0
    kv_given = _bytes_arg("kv_cache_bytes", kv_cache_bytes, allow_zero=False)

    gpu_obj: GPU | None = None if gpu is None else get_gpu(gpu)
    if gpu_memory_bytes is not None:
        total = gpu_memory_bytes
    elif gpu_obj is not None:
        total = float(gpu_obj.memory_bytes(memory_basis))
    else:
        raise CalcError("gpu must be a catalog key, or gpu_memory_bytes must give the memory per GPU; got neither",
                        "gpu")
    requested = total * utilization
    w = weights_given if weights_given is not None else weights_bytes_per_gpu(model, tp, weights)
    if memory_basis == "engine":
        activation, non_torch = _engine_terms(model, gpu_obj, tp, activation, non_torch, memory_model,
                                              max_num_batched_tokens, max_num_seqs, max_model_len)
    activation = default_activation_bytes(model, tp) if activation is None else activation
    non_torch = default_non_torch_bytes(tp) if non_torch is None else non_torch

    per_token_gpu = kv_bytes_per_token_per_gpu(model, tp, kv_dtype)
    if kv_given is not None:
        kv = kv_given
    else:
        if w >= requested:
            fits = [t for t in allowed_tp(model, _MAX_TP) if weights_bytes_per_gpu(model, t, weights) < requested]
            hint = (f"tp one of {', '.join(map(str, fits[:8]))}" if fits and weights_given is None
                    else "more memory per GPU")
            raise CalcError(
                f"{model.name} does not fit: {w / GB:.1f} GB of {weights} weights per GPU at tp={tp} exceed the "
                f"{requested / GB:.1f} GB vLLM may use ({utilization:g} x {total / GB:.1f} GB); allowed: {hint}, "
                f"a higher gpu_memory_utilization (at most 1.0), or fewer bits per weight", "tp")
        if memory_basis == "engine" and memory_model == "sglang":
            # SGLang: free after the weights, less total x (1 - mem_fraction_static); activations come
            # out of that unclaimed share (calc.engine_memory).
            kv = math.fsum([requested, -w, -non_torch, -cuda_graph])
        elif memory_basis == "engine" and memory_model == "trtllm":
            # TensorRT-LLM: free_gpu_memory_fraction of what is free after weights and a profiling pass.
            requested = total
            kv = utilization * math.fsum([total, -w, -activation, -non_torch, -cuda_graph])
        else:
            kv = math.fsum([requested, -w, -activation, -non_torch, -cuda_graph])
    block_bytes = block_size * per_token_gpu
    if kv < block_bytes:
        raise CalcError(
            f"no memory left for the KV cache: {requested / GB:.2f} GB requested - {w / GB:.2f} GB weights - "
            f"{activation / GB:.2f} GB activations - {non_torch / GB:.2f} GB non-torch - {cuda_graph / GB:.2f} GB "
            f"CUDA graphs leaves {kv / GB:.2f} GB, less than one block ({block_bytes:,} B); raise "
            f"gpu_memory_utilization (at most 1.0) or tp, or use fewer bits per weight", "gpu_memory_utilization")
    blocks = int(kv // block_bytes)
    tokens = blocks * block_size
    return KVCapacity(
        model_key=model.key, gpu_key=gpu_obj.key if gpu_obj is not None and gpu_memory_bytes is None else None,
        tp=tp, weights=weights, kv_dtype=kv_dtype,
        memory_basis=memory_basis if gpu_memory_bytes is None else "given",
        gpu_memory_utilization=utilization, block_size=block_size, max_model_len=max_model_len,
        total_bytes=total, requested_bytes=requested, unclaimed_bytes=total - requested, weights_bytes=float(w),
        activation_bytes=float(activation), non_torch_bytes=float(non_torch), cuda_graph_bytes=float(cuda_graph),
        kv_cache_bytes=float(kv), kv_bytes_per_token=kv_bytes_per_token(model, kv_dtype),
        kv_bytes_per_token_per_gpu=per_token_gpu, kv_cache_blocks=blocks, kv_cache_tokens=tokens,
        kv_cache_tokens_raw=int(kv // per_token_gpu),
        max_concurrency=None if max_model_len is None else tokens / max_model_len,
    )


def _engine_terms(model, gpu_obj, tp, activation, non_torch, memory_model, max_num_batched_tokens, max_num_seqs,
                  max_model_len):
    """(activation, non-torch) bytes per GPU as the engine profiles them, unless given (calc.engine_memory)."""
    from calc import engine_memory

    check_choice("memory_model", memory_model, engine_memory.MEMORY_MODELS)
    if max_num_batched_tokens is None or max_num_seqs is None:
        if gpu_obj is None:
            raise CalcError("memory_basis 'engine' without a catalog gpu needs max_num_batched_tokens and "
                            "max_num_seqs (the engine's step budget); got neither", "max_num_batched_tokens")
        tokens, seqs = engine_memory.vllm_v1_batch_defaults(gpu_obj)
        max_num_batched_tokens = tokens if max_num_batched_tokens is None else max_num_batched_tokens
        max_num_seqs = seqs if max_num_seqs is None else max_num_seqs
    if activation is None:
        activation = engine_memory.activation_peak_bytes(
            model, tp, memory_model=memory_model, max_num_batched_tokens=max_num_batched_tokens,
            max_num_seqs=max_num_seqs, max_model_len=max_model_len)
    if non_torch is None:
        non_torch = engine_memory.non_torch_bytes(memory_model, tp)
    return activation, non_torch


#: Overhead on one GPU when none is measured: :data:`calc.memory.ACTIVATION_WORKSPACE_BYTES` (vLLM's profiled
#: activation peak, assumed) + :data:`calc.memory.NON_TORCH_BASE_BYTES` (CUDA context and libraries, one GPU).
DEFAULT_OVERHEAD_BYTES = ACTIVATION_WORKSPACE_BYTES + NON_TORCH_BASE_BYTES


#: The share of each GPU the engine takes (vLLM's default ``gpu_memory_utilization``, as in :mod:`calc.memory`).
UTILIZATION = 0.9


def _kv_tokens(model, context_tokens: int, honour_window: bool) -> int:
    return kv_tokens_per_request(model, context_tokens) if honour_window else context_tokens


def memory_budget(model, gpu, *, users: int, context_tokens: int, weights: str = "bf16", kv_dtype: str = "bf16",
                  overhead_bytes: float = DEFAULT_OVERHEAD_BYTES, gpu_memory_utilization: float = UTILIZATION,
                  honour_window: bool = False) -> dict:
    """Every term of the memory equation for ``users`` requests of ``context_tokens`` on one GPU of type ``gpu``.

    ``total = weights + users x KV tokens per request x KV bytes per token + overhead``,
    against ``usable = GPU memory x gpu_memory_utilization`` (the share the engine
    takes: vLLM's default 0.9; 1.0 is the whole card). ``max_users`` is how many
    requests of this context fit beside the weights and overhead;
    ``max_context_tokens`` how long each of ``users`` requests may grow. With
    ``honour_window`` a sliding-window model (Mistral-7B: 4,096) keeps at most its
    window per request, as an engine that frees out-of-window blocks does. GPU
    memory is the datasheet's decimal figure. Source: the GPU memory equation of
    the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah); :func:`calc.memory.weight_bytes`, :func:`calc.memory.kv_bytes_per_token`;
    the utilization as in :func:`calc.memory.kv_capacity`.

    >>> b = memory_budget("mistral-7b", "h100-sxm-80gb", users=100, context_tokens=4096)
    >>> round(b["kv_bytes"] / 1e9, 1), b["fits"], b["max_users"]
    (53.7, True, 101)
    >>> whole = memory_budget("mistral-7b", "h100-sxm-80gb", users=1, context_tokens=4096, gpu_memory_utilization=1.0)
    >>> whole["max_users"]
    116
    >>> memory_budget("mistral-7b", "l4", users=1, context_tokens=10_000, honour_window=True)["kv_tokens_per_user"]
    4096
    """
    model, gpu = get_model(model), get_gpu(gpu)
    users = check_range("users", users, 0, 10_000_000, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, 100_000_000, integer=True)
    overhead = float(check_range("overhead_bytes", overhead_bytes, 0, 10**15))
    utilization = float(check_range("gpu_memory_utilization", gpu_memory_utilization, 0.01, 1.0))
    w = weight_bytes(model, weights).total_bytes
    per_token = kv_bytes_per_token(model, kv_dtype)
    kv_tokens = _kv_tokens(model, context_tokens, honour_window)
    per_user = kv_tokens * per_token
    kv = users * per_user
    capacity = gpu.memory_bytes("marketed")
    usable = capacity * utilization
    room = usable - w - overhead
    total = math.fsum([w, kv, overhead])
    return {
        "model": model.name, "gpu": gpu.name, "users": users, "context_tokens": context_tokens,
        "weights_bytes": w, "kv_bytes_per_token": per_token, "kv_tokens_per_user": kv_tokens,
        "kv_bytes_per_user": per_user, "kv_bytes": kv, "overhead_bytes": overhead, "total_bytes": total,
        "gpu_bytes": capacity, "usable_bytes": usable, "gpu_memory_utilization": utilization,
        "free_bytes": usable - total, "fits": total <= usable,
        "kv_room_bytes": max(room, 0.0),
        "max_users": int(room // per_user) if room > 0 else 0,
        "max_context_tokens": int(room // (users * per_token)) if room > 0 and users else None,
        "kv_equals_weights_tokens": int(w // per_token),
    }


def memory_curve(model, *, contexts, users_points, weights: str = "bf16", kv_dtype: str = "bf16",
                 overhead_bytes: float = DEFAULT_OVERHEAD_BYTES, honour_window: bool = False) -> dict[int, list[float]]:
    """Total memory (bytes) at each number of users in ``users_points``, one list per context in ``contexts``.

    Linear in users, with a slope set by the context: the workshop's "memory grows
    with every user and every token". Source: :func:`memory_budget`'s equation.

    >>> curve = memory_curve("mistral-7b", contexts=[1024], users_points=[0, 10])
    >>> [round(v / 1e9, 2) for v in curve[1024]]
    [17.48, 18.83]
    """
    model = get_model(model)
    w = weight_bytes(model, weights).total_bytes
    per_token = kv_bytes_per_token(model, kv_dtype)
    out = {}
    for context in contexts:
        per_user = _kv_tokens(model, context, honour_window) * per_token
        out[context] = [math.fsum([w, u * per_user, overhead_bytes]) for u in users_points]
    return out
