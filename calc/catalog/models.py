"""The model catalog: shapes copied from each checkpoint's ``config.json``, with the published size.

Each entry is the shape only; parameter counts are derived by
:attr:`calc.catalog.model.Model.total_params` and checked against
``published_params`` (within 0.5%) by the tests.

>>> sorted(MODELS)[:4]
['deepseek-v3', 'llama-2-7b', 'llama-3.1-405b', 'llama-3.1-70b']
>>> MODELS["mistral-7b"].sliding_window
4096

Each model names its tokenizer family (:data:`calc.catalog.model.TOKENIZER_FAMILIES`), read from the checkpoint's
own tokenizer files; models of one family count a text in the same tokens:

>>> sorted({m.tokenizer for m in MODELS.values()})
['deepseek-v3', 'llama2', 'llama3', 'mistral-v1', 'qwen2']
>>> MODELS["mixtral-8x7b"].tokenizer, MODELS["mixtral-8x7b"].tokenizer == MODELS["mistral-7b"].tokenizer
('mistral-v1', True)
"""

from __future__ import annotations

from calc.catalog.model import Model

__all__ = ["MODELS"]

_HF = "https://huggingface.co/{}/blob/main/config.json"
#: Where a published parameter count is read: the checkpoint's own weights on Hugging Face.
_WEIGHTS = ("the safetensors weights of https://huggingface.co/{} (the model page's 'Model size'; for a bf16 "
            "checkpoint, metadata.total_size / 2 bytes in model.safetensors.index.json)")


def _src(repo: str, note: str = "", count: str | None = None) -> str:
    text = f"config.json of {repo} ({_HF.format(repo)}); parameter count: {count or _WEIGHTS.format(repo)}"
    return f"{text}; {note}" if note else text


def _tok(repo: str, file: str = "tokenizer.json", note: str = "") -> str:
    text = f"{file} of {repo} (https://huggingface.co/{repo}/blob/main/{file})"
    return f"{text}; {note}" if note else text


_LLAMA_VOCAB = 128_256
#: Llama 3's tokenizer: 128,000 byte-level BPE tokens and 256 special ones, the same file for every Llama 3.x.
_LLAMA3_TOKENIZER = "128,000 byte-level BPE tokens and 256 special tokens (vocab_size 128,256), shared by Llama 3.x"
#: Mistral's first tokenizer: the SentencePiece model of Mistral 7B v0.1, reused by Mixtral 8x7B.
_MISTRAL_V1_TOKENIZER = ("SentencePiece BPE of 32,000 pieces, sha256 dadfd56d766715c61d2ef780a525ab43b8e6da4de6865bda3d"
                         "95fdef5e134055: Mistral 7B v0.1's and Mixtral 8x7B's, the file mistral-common ships as "
                         "data/tokenizer.model.v1")
_QWEN2_TOKENIZER = "byte-level BPE of 151,643 tokens and special tokens, the Qwen2 vocabulary and merges"

MODELS: dict[str, Model] = {m.key: m for m in (
    Model(key="llama-3.1-8b", name="Llama 3.1 8B", layers=32, hidden_size=4096, attention_heads=32,
          kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=False, attention="gqa", published_params=8_030_261_248,
          source=_src("meta-llama/Llama-3.1-8B"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.1-8B", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-3.1-70b", name="Llama 3.1 70B", layers=80, hidden_size=8192, attention_heads=64,
          kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=False, attention="gqa", published_params=70_553_706_496,
          source=_src("meta-llama/Llama-3.1-70B"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.1-70B", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-3.1-405b", name="Llama 3.1 405B", layers=126, hidden_size=16384, attention_heads=128,
          kv_heads=8, head_dim=128, intermediate_size=53248, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=False, attention="gqa", published_params=405_850_000_000,
          source=_src("meta-llama/Llama-3.1-405B", "published as about 405.85 B"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.1-405B", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-3.2-1b", name="Llama 3.2 1B", layers=16, hidden_size=2048, attention_heads=32,
          kv_heads=8, head_dim=64, intermediate_size=8192, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=True, attention="gqa", published_params=1_240_000_000,
          source=_src("meta-llama/Llama-3.2-1B", "published as about 1.24 B; embeddings tied to the LM head"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.2-1B", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-3.2-3b", name="Llama 3.2 3B", layers=28, hidden_size=3072, attention_heads=24,
          kv_heads=8, head_dim=128, intermediate_size=8192, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=True, attention="gqa", published_params=3_210_000_000,
          source=_src("meta-llama/Llama-3.2-3B",
                      "published as about 3.21 B; head_dim 128 is not hidden/heads = 3072/24; tied embeddings"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.2-3B", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-3.3-70b", name="Llama 3.3 70B", layers=80, hidden_size=8192, attention_heads=64,
          kv_heads=8, head_dim=128, intermediate_size=28672, vocab_size=_LLAMA_VOCAB,
          tied_embeddings=False, attention="gqa", published_params=70_553_706_496,
          source=_src("meta-llama/Llama-3.3-70B-Instruct",
                      "Llama 3.1 70B's architecture, layer for layer; 128K context (max_position_embeddings "
                      "131,072); Meta released only the instruction-tuned checkpoint",
                      count="the same shape as Llama 3.1 70B, so its 70,553,706,496 ("
                            + _WEIGHTS.format("meta-llama/Llama-3.1-70B") + ")"),
          tokenizer="llama3", tokenizer_source=_tok("meta-llama/Llama-3.3-70B-Instruct", note=_LLAMA3_TOKENIZER)),
    Model(key="llama-2-7b", name="Llama 2 7B", layers=32, hidden_size=4096, attention_heads=32,
          kv_heads=32, head_dim=128, intermediate_size=11008, vocab_size=32_000,
          tied_embeddings=False, attention="mha", published_params=6_738_415_616,
          source=_src("meta-llama/Llama-2-7b-hf",
                      "multi-head attention (32 KV heads); 4,096-token context (max_position_embeddings 4096)",
                      count="6,738,415,616, quoted as 6.74 B: what transformers' num_parameters() and the GGUF "
                            "conversions' general.parameter_count report for this checkpoint"),
          tokenizer="llama2",
          tokenizer_source=_tok("meta-llama/Llama-2-7b-hf", "tokenizer.model", "SentencePiece BPE of 32,000 pieces")),
    Model(key="mistral-7b", name="Mistral 7B v0.1", layers=32, hidden_size=4096, attention_heads=32,
          kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32_000,
          tied_embeddings=False, attention="gqa", sliding_window=4096, published_params=7_241_732_096,
          source=_src("mistralai/Mistral-7B-v0.1", "sliding-window attention over 4,096 tokens"),
          tokenizer="mistral-v1",
          tokenizer_source=_tok("mistralai/Mistral-7B-v0.1", "tokenizer.model", _MISTRAL_V1_TOKENIZER)),
    Model(key="mixtral-8x7b", name="Mixtral 8x7B", layers=32, hidden_size=4096, attention_heads=32,
          kv_heads=8, head_dim=128, intermediate_size=14336, vocab_size=32_000,
          tied_embeddings=False, attention="gqa", experts=8, experts_per_token=2,
          moe_intermediate_size=14336, published_params=46_700_000_000,
          published_active_params=12_900_000_000,
          source=_src("mistralai/Mixtral-8x7B-v0.1",
                      "8 experts of 14,336, top-2; published as about 46.7 B total and 12.9 B active "
                      "(Mistral AI, 'Mixtral of experts', 2023-12-11)"),
          tokenizer="mistral-v1",
          tokenizer_source=_tok("mistralai/Mixtral-8x7B-v0.1", "tokenizer.model", _MISTRAL_V1_TOKENIZER)),
    Model(key="qwen2.5-7b", name="Qwen2.5 7B", layers=28, hidden_size=3584, attention_heads=28,
          kv_heads=4, head_dim=128, intermediate_size=18944, vocab_size=152_064,
          tied_embeddings=False, attention="gqa", qkv_bias=True, published_params=7_620_000_000,
          source=_src("Qwen/Qwen2.5-7B", "published as about 7.62 B; biases on q, k and v (Qwen2 architecture)"),
          tokenizer="qwen2", tokenizer_source=_tok("Qwen/Qwen2.5-7B", note=_QWEN2_TOKENIZER)),
    Model(key="qwen2.5-72b", name="Qwen2.5 72B", layers=80, hidden_size=8192, attention_heads=64,
          kv_heads=8, head_dim=128, intermediate_size=29568, vocab_size=152_064,
          tied_embeddings=False, attention="gqa", qkv_bias=True, published_params=72_700_000_000,
          source=_src("Qwen/Qwen2.5-72B", "published as about 72.7 B; biases on q, k and v (Qwen2 architecture)"),
          tokenizer="qwen2", tokenizer_source=_tok("Qwen/Qwen2.5-72B", note=_QWEN2_TOKENIZER)),
    Model(key="deepseek-v3", name="DeepSeek-V3", layers=61, hidden_size=7168, attention_heads=128,
          kv_heads=128, head_dim=192, intermediate_size=18432, vocab_size=129_280,
          tied_embeddings=False, attention="mla", kv_lora_rank=512, qk_rope_head_dim=64, q_lora_rank=1536,
          qk_nope_head_dim=128, v_head_dim=128, experts=256, experts_per_token=8, shared_experts=1,
          moe_intermediate_size=2048, dense_layers=3, published_params=671_000_000_000,
          published_active_params=37_000_000_000,
          source=_src("deepseek-ai/DeepSeek-V3",
                      "MLA (kv_lora_rank 512, qk_rope_head_dim 64); 3 dense layers then 256 routed + 1 shared "
                      "experts of 2,048, top-8; 671 B total without the 14 B multi-token-prediction module "
                      "(685 B with it), 37 B active (DeepSeek-V3 technical report, arXiv 2412.19437)"),
          tokenizer="deepseek-v3",
          tokenizer_source=_tok("deepseek-ai/DeepSeek-V3", note="byte-level BPE of 128,000 tokens and special tokens")),
)}
