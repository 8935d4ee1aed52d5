"""A transformer's shape, and the parameter count that follows from it.

A :class:`Model` holds the numbers of a Hugging Face ``config.json`` that matter
for serving: layers, widths, attention heads and KV heads, the MLA latent ranks
of DeepSeek-style attention, and the experts of a mixture-of-experts model.
Parameter counts are *derived* from that shape (never typed in): they follow the
weight matrices of the reference implementations in Hugging Face
``transformers`` (``modeling_llama.py``, ``modeling_qwen2.py``,
``modeling_mixtral.py``, ``modeling_deepseek_v3.py``).

>>> m = Model(key="toy", name="Toy", layers=2, hidden_size=64, attention_heads=4,
...           kv_heads=2, head_dim=16, intermediate_size=128, vocab_size=100,
...           tied_embeddings=True, attention="gqa")
>>> m.total_params
80448
"""

from __future__ import annotations

from dataclasses import dataclass

from calc.errors import CalcError, check_choice, check_range

__all__ = ["Model", "ATTENTION_KINDS", "TOKENIZER_FAMILIES", "Linear"]

ATTENTION_KINDS = ("mha", "gqa", "mqa", "mla")
#: Tokenizer families a catalog model can name (``Model.tokenizer``): models of one family count the same text in
#: the same tokens (the same ``tokenizer.json`` / ``tokenizer.model`` vocabulary and merges). ShareGPT's lengths are
#: measured per family (``bench/sharegpt_lengths.py``, :func:`calc.sim.workload.sharegpt_table`).
TOKENIZER_FAMILIES = {
    "llama3": "Llama 3 byte-level BPE, 128,256 tokens (Llama 3, 3.1, 3.2, 3.3)",
    "llama2": "Llama 2 SentencePiece BPE, 32,000 pieces",
    "mistral-v1": "Mistral v1 SentencePiece BPE, 32,000 pieces (Mistral 7B v0.1, Mixtral 8x7B)",
    "qwen2": "Qwen2 byte-level BPE, 151,643 tokens and special tokens (Qwen2, Qwen2.5)",
    "deepseek-v3": "DeepSeek-V3 byte-level BPE, 128,000 tokens and special tokens (vocab_size 129,280)",
}


@dataclass(frozen=True)
class Linear:
    """One kind of weight matrix: ``count`` copies of an ``out_features x in_features`` matrix.

    ``expert`` marks routed-expert matrices (only ``experts_per_token`` of them
    run per token). Weight quantization acts on these matrices; embeddings and
    norms are listed separately by :meth:`Model.other_params`.

    >>> Linear("mlp.down_proj", 4096, 14336, 32).params
    1879048192
    """

    name: str
    out_features: int
    in_features: int
    count: int
    expert: bool = False

    @property
    def params(self) -> int:
        """Weights in all ``count`` copies (out x in x count).

        >>> Linear("o_proj", 8, 4, 3).params
        96
        """
        return self.out_features * self.in_features * self.count


@dataclass(frozen=True)
class Model:
    """The shape of a decoder-only transformer, with its source.

    Fields follow the Hugging Face ``config.json`` names in spirit:
    ``layers`` = ``num_hidden_layers``, ``kv_heads`` = ``num_key_value_heads``,
    ``dense_layers`` = ``first_k_dense_replace`` (leading layers with a dense
    MLP before the mixture-of-experts layers). ``attention`` is one of
    ``mha``, ``gqa``, ``mqa``, ``mla``. For MLA, the KV cache holds one latent
    of ``kv_lora_rank + qk_rope_head_dim`` values per layer (DeepSeek-V2 paper,
    arXiv 2405.04434, section 2.1).

    >>> from calc.catalog import get_model
    >>> m = get_model("llama-3.1-8b")
    >>> m.total_params, m.attention
    (8030261248, 'gqa')
    """

    key: str
    name: str
    layers: int
    hidden_size: int
    attention_heads: int
    kv_heads: int
    head_dim: int
    intermediate_size: int
    vocab_size: int
    tied_embeddings: bool
    attention: str
    kv_lora_rank: int = 0
    qk_rope_head_dim: int = 0
    q_lora_rank: int = 0
    qk_nope_head_dim: int = 0
    v_head_dim: int = 0
    sliding_window: int | None = None
    experts: int = 0
    experts_per_token: int = 0
    shared_experts: int = 0
    moe_intermediate_size: int = 0
    dense_layers: int = 0
    qkv_bias: bool = False
    published_params: int | None = None
    published_active_params: int | None = None
    source: str = ""
    #: The tokenizer family (:data:`TOKENIZER_FAMILIES`), None when not known (a model from a config.json alone),
    #: with where it is read (``tokenizer_source``: the checkpoint's tokenizer.json or tokenizer.model).
    tokenizer: str | None = None
    tokenizer_source: str = ""

    def __post_init__(self):
        _validate(self)

    # ---- structure -------------------------------------------------------

    @property
    def is_moe(self) -> bool:
        """True when the model has routed experts.

        >>> from calc.catalog import get_model
        >>> get_model("mixtral-8x7b").is_moe, get_model("llama-3.1-8b").is_moe
        (True, False)
        """
        return self.experts > 0

    @property
    def moe_layers(self) -> int:
        """Layers whose MLP is a mixture of experts (all but the leading dense ones).

        >>> from calc.catalog import get_model
        >>> get_model("deepseek-v3").moe_layers
        58
        """
        return self.layers - self.dense_layers if self.is_moe else 0

    def linears(self) -> tuple[Linear, ...]:
        """Every weight matrix of the model, grouped by kind, as the reference code builds them.

        Source: Hugging Face ``transformers`` modeling files for Llama, Qwen2,
        Mixtral and DeepSeek-V3 (``q_proj``/``k_proj``/``v_proj``/``o_proj``,
        ``gate_proj``/``up_proj``/``down_proj``, MLA's ``q_a_proj``, ``q_b_proj``,
        ``kv_a_proj_with_mqa``, ``kv_b_proj``).

        >>> from calc.catalog import get_model
        >>> [(l.name, l.out_features, l.in_features) for l in get_model("llama-3.1-8b").linears()][:3]
        [('attn.q_proj', 4096, 4096), ('attn.k_proj', 1024, 4096), ('attn.v_proj', 1024, 4096)]
        """
        h, n = self.hidden_size, self.layers
        out: list[Linear] = []
        if self.attention == "mla":
            qk_head = self.qk_nope_head_dim + self.qk_rope_head_dim
            if self.q_lora_rank:
                out.append(Linear("attn.q_a_proj", self.q_lora_rank, h, n))
                out.append(Linear("attn.q_b_proj", self.attention_heads * qk_head, self.q_lora_rank, n))
            else:
                out.append(Linear("attn.q_proj", self.attention_heads * qk_head, h, n))
            out.append(Linear("attn.kv_a_proj_with_mqa", self.kv_lora_rank + self.qk_rope_head_dim, h, n))
            out.append(Linear("attn.kv_b_proj",
                              self.attention_heads * (self.qk_nope_head_dim + self.v_head_dim),
                              self.kv_lora_rank, n))
            out.append(Linear("attn.o_proj", h, self.attention_heads * self.v_head_dim, n))
        else:
            out.append(Linear("attn.q_proj", self.attention_heads * self.head_dim, h, n))
            out.append(Linear("attn.k_proj", self.kv_heads * self.head_dim, h, n))
            out.append(Linear("attn.v_proj", self.kv_heads * self.head_dim, h, n))
            out.append(Linear("attn.o_proj", h, self.attention_heads * self.head_dim, n))
        dense = self.dense_layers if self.is_moe else n
        if dense:
            out.append(Linear("mlp.gate_proj", self.intermediate_size, h, dense))
            out.append(Linear("mlp.up_proj", self.intermediate_size, h, dense))
            out.append(Linear("mlp.down_proj", h, self.intermediate_size, dense))
        if self.is_moe:
            moe_n, e_size = self.moe_layers, self.moe_intermediate_size
            for name in ("gate_proj", "up_proj"):
                out.append(Linear(f"experts.{name}", e_size, h, moe_n * self.experts, expert=True))
            out.append(Linear("experts.down_proj", h, e_size, moe_n * self.experts, expert=True))
            if self.shared_experts:
                s_size = e_size * self.shared_experts
                out.append(Linear("shared_experts.gate_proj", s_size, h, moe_n))
                out.append(Linear("shared_experts.up_proj", s_size, h, moe_n))
                out.append(Linear("shared_experts.down_proj", h, s_size, moe_n))
        return tuple(out)

    def other_params(self) -> dict[str, int]:
        """Parameters outside the linear layers: embeddings, LM head, norms, biases, routers.

        These are usually kept in 16 bits when the linear layers are quantized
        (GPTQ/AWQ checkpoints leave ``embed_tokens`` and ``lm_head`` unquantized).

        >>> from calc.catalog import get_model
        >>> get_model("llama-3.1-8b").other_params()
        {'embed_tokens': 525336576, 'lm_head': 525336576, 'norms': 266240, 'biases': 0, 'router': 0}
        """
        h, n = self.hidden_size, self.layers
        embed = self.vocab_size * h
        norms = (2 * n + 1) * h  # input and post-attention RMSNorm per layer, plus the final norm
        if self.attention == "mla":
            norms += n * (self.kv_lora_rank + self.q_lora_rank)  # kv_a_layernorm, q_a_layernorm
        biases = n * (self.attention_heads + 2 * self.kv_heads) * self.head_dim if self.qkv_bias else 0
        router = self.moe_layers * self.experts * h
        return {
            "embed_tokens": embed,
            "lm_head": 0 if self.tied_embeddings else embed,
            "norms": norms,
            "biases": biases,
            "router": router,
        }

    # ---- counts ----------------------------------------------------------

    @property
    def total_params(self) -> int:
        """All parameters, derived from the shape (no multi-token-prediction head).

        Llama 3.1 70B: 70,553,706,496, exactly the count published for the
        checkpoint (``metadata.total_size`` of meta-llama/Llama-3.1-70B's model.safetensors.index.json on
        Hugging Face, over 2 bytes per bf16 parameter).

        >>> from calc.catalog import get_model
        >>> get_model("llama-3.1-70b").total_params
        70553706496
        """
        return sum(l.params for l in self.linears()) + sum(self.other_params().values())

    @property
    def active_params(self) -> int:
        """Parameters used for one token: all of them, minus the routed experts not chosen.

        Mixtral 8x7B routes each token to 2 of 8 experts: about 12.9 B active
        of 46.7 B (Mistral AI, "Mixtral of experts", 2023-12-11).

        >>> from calc.catalog import get_model
        >>> round(get_model("mixtral-8x7b").active_params / 1e9, 1)
        12.9
        """
        if not self.is_moe:
            return self.total_params
        expert_params = sum(l.params for l in self.linears() if l.expert)
        unused = expert_params * (self.experts - self.experts_per_token) // self.experts
        return self.total_params - unused

    @property
    def kv_values_per_token_per_layer(self) -> int:
        """Numbers cached per token per layer: K and V for every KV head, or MLA's one latent.

        GQA/MHA/MQA: 2 x KV heads x head dim; MLA: kv_lora_rank + qk_rope_head_dim
        (DeepSeek-V2 paper, arXiv 2405.04434, Table 1).

        >>> from calc.catalog import get_model
        >>> get_model("llama-3.1-8b").kv_values_per_token_per_layer, get_model("deepseek-v3").kv_values_per_token_per_layer
        (2048, 576)
        """
        if self.attention == "mla":
            return self.kv_lora_rank + self.qk_rope_head_dim
        return 2 * self.kv_heads * self.head_dim


_MAX = 10**9  # generous upper bound for any size in a config


def _validate(m: Model) -> None:
    """Check a shape for sizes that make no sense; raise CalcError naming the field."""
    if not isinstance(m.key, str) or not m.key:
        raise CalcError(f"key must be a non-empty string; got {m.key!r}", "key")
    check_choice("attention", m.attention, ATTENTION_KINDS)
    if m.tokenizer is not None:
        check_choice("tokenizer", m.tokenizer, TOKENIZER_FAMILIES)
    for field in ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim",
                  "intermediate_size", "vocab_size"):
        check_range(field, getattr(m, field), 1, _MAX, integer=True)
    for field in ("kv_lora_rank", "qk_rope_head_dim", "q_lora_rank", "qk_nope_head_dim", "v_head_dim",
                  "experts", "experts_per_token", "shared_experts", "moe_intermediate_size", "dense_layers"):
        check_range(field, getattr(m, field), 0, _MAX, integer=True)
    if m.sliding_window is not None:
        check_range("sliding_window", m.sliding_window, 1, _MAX, integer=True)
    if m.kv_heads > m.attention_heads or m.attention_heads % m.kv_heads:
        raise CalcError(
            f"kv_heads must divide attention_heads ({m.attention_heads}) and be at most that; got {m.kv_heads}",
            "kv_heads")
    if m.attention == "mqa" and m.kv_heads != 1:
        raise CalcError(f"kv_heads must be 1 for attention 'mqa'; got {m.kv_heads}", "kv_heads")
    if m.attention == "mha" and m.kv_heads != m.attention_heads:
        raise CalcError(
            f"kv_heads must equal attention_heads ({m.attention_heads}) for attention 'mha'; got {m.kv_heads}",
            "kv_heads")
    if m.attention == "mla":
        for field in ("kv_lora_rank", "qk_rope_head_dim", "qk_nope_head_dim", "v_head_dim"):
            check_range(field, getattr(m, field), 1, _MAX, integer=True)
    if m.experts:
        check_range("experts_per_token", m.experts_per_token, 1, m.experts, integer=True)
        check_range("moe_intermediate_size", m.moe_intermediate_size, 1, _MAX, integer=True)
        check_range("dense_layers", m.dense_layers, 0, m.layers - 1, integer=True)
