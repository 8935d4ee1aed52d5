"""Memory as the engine sees it: the GPU's capacity as CUDA reports it, and the workspace the engine profiles.

The lesson counts an H100 as 80e9 bytes and subtracts a round 4 GB of workspace (``memory_basis``
"marketed", :func:`calc.memory.kv_capacity`): a teaching figure. An engine sizes its KV cache from what
it measures at start-up instead, and engines measure differently:

* ``vllm-v1`` (vLLM's V1 engine, 0.8 onwards; ``vllm/v1/worker/gpu_worker.py``,
  ``determine_available_memory``): ``total x gpu_memory_utilization - weights - peak activation - non-torch``,
  where ``total`` is ``torch.cuda.mem_get_info()`` (79.19 GiB on an H100 80GB, the logs' ``total_gpu_memory``)
  and the activation peak is a profiling run of one step of ``max_num_batched_tokens`` tokens
  (``gpu_model_runner.profile_run``: ``_dummy_run(max_num_tokens)``) followed by the sampler on
  ``max_num_seqs`` sequences (``_dummy_sampler_run``); both stay in the peak;
* ``vllm-v1-mrv2`` (vLLM's Model Runner V2, ``vllm/v1/worker/gpu/model_runner.py``; the default for Qwen3
  dense models since vLLM pull request #39337, April 2026, and for every dense model since #44443, July 2026):
  the same subtraction, but ``profile_run`` runs the forward pass of ``max_num_batched_tokens`` tokens and only
  then the sampler, on ``min(max_num_batched_tokens, max_num_seqs)`` rows and without top-k/top-p (its own
  note), after the forward's activations are freed: the peak is the larger of the forward's and the
  sampler's (the step's hidden states, 16-bit logits and their float32 copy, ``gpu/sample/sampler.py``);
* ``vllm-v0`` (vLLM up to 0.7, ``vllm/worker/worker.py``, ``determine_num_available_blocks``): the same
  subtraction, but the profiling run's peak is the larger of its forward pass and its sampler (the
  forward's activations are freed before sampling), over ``max(max_model_len, 2048)`` tokens without
  chunked prefill;
* ``sglang`` (``sglang/srt/model_executor/model_runner.py``, ``profile_max_num_token``): the KV pool is
  what is free after loading the weights less ``total x (1 - mem_fraction_static)``, so activations
  come out of the ``1 - mem_fraction_static`` share, not out of the pool;
* ``trtllm`` (TensorRT-LLM's PyTorch backend, ``trtllm-serve``; ``KvCacheConfig.free_gpu_memory_fraction``,
  default 0.9): the pool is that fraction of the memory still free after the weights and a profiling
  forward pass of ``max_num_tokens``.

The activation peak of a forward pass is the widest MLP's live tensors, per token in 16 bits: the
gate/up projection's output (2 x intermediate / tp), its activated product (intermediate / tp) and three
hidden-size buffers (residual, normalised input, output); a mixture-of-experts layer holds those of its
``experts_per_token`` routed experts per token (vLLM's ``fused_moe`` intermediate caches 1-3) plus its shared
experts. The sampler's peak is the logits in 16 bits, their float32 copy and the float32 probabilities:
10 bytes per sequence and vocabulary entry (6 in Model Runner V2's profiling run: no probabilities).
Every byte count here is read from the engines' source (an assumption, not fitted); :data:`NON_TORCH_BYTES`
are readings from public start-up logs. The test
``tests/test_engine_memory.py`` checks every ``kv_capacity`` row of ``calc/data/measurements.json`` within 3%.

>>> from calc.catalog import get_model
>>> round(activation_peak_bytes(get_model("llama-3.1-8b"), 1, memory_model="vllm-v1",
...                             max_num_batched_tokens=8192, max_num_seqs=1024) / 2**30, 2)
2.07
"""

from __future__ import annotations

import re

from calc.catalog import Model, get_model
from calc.errors import CalcError, check_choice, check_range
from calc.units import GiB

__all__ = ["MEMORY_MODELS", "MEMORY_MODEL_SOURCES", "NON_TORCH_BYTES", "NON_TORCH_SOURCE", "SAMPLER_BYTES_PER_LOGIT",
           "NON_TORCH_NO_P2P_SOURCE", "MRV2_SAMPLER_BYTES_PER_LOGIT", "ACTIVATION_BYTES",
           "forward_peak_bytes_per_token", "sampler_peak_bytes",
           "mrv2_sampler_phase_bytes", "activation_peak_bytes",
           "non_torch_bytes", "profile_tokens", "vllm_v1_batch_defaults", "VLLM_V1_DEFAULTS_SOURCE",
           "memory_model_for"]

#: vLLM V1's defaults (vllm/engine/arg_utils.py, ``EngineArgs.get_batch_defaults``): on a GPU of at least 70 GiB
#: that is not an A100 (H100, H200, MI300X), max_num_batched_tokens 8,192 for the OpenAI server (16,384 for the
#: LLM class) and max_num_seqs 1,024; elsewhere 2,048 (8,192) and 256. The A100 exception: pull request #17885.
VLLM_V1_DEFAULTS_SOURCE = ("vllm/engine/arg_utils.py EngineArgs.get_batch_defaults: >= 70 GiB and not A100: "
                           "8192 (server) / 16384 (LLM class) tokens, 1024 seqs; else 2048 / 8192, 256")

MEMORY_MODELS = ("vllm-v1", "vllm-v1-mrv2", "vllm-v0", "sglang", "trtllm")
MEMORY_MODEL_SOURCES = {
    "vllm-v1": "vllm/v1/worker/gpu_worker.py determine_available_memory; gpu_model_runner.py profile_run "
               "(_dummy_run(max_num_tokens), then _dummy_sampler_run on max_num_seqs)",
    "vllm-v1-mrv2": "vllm/v1/worker/gpu/model_runner.py profile_run (_dummy_run(max_num_tokens, skip_attn=True), "
                    "then _dummy_sampler_run on the min(max_num_tokens, max_num_seqs) sampled rows: 'the sampler "
                    "may skip top_k, top_p, and logprobs'); gpu/sample/sampler.py (logits copied to float32, "
                    "the rest in place); default for Qwen3 dense models since vLLM PR #39337 (2026-04), for "
                    "all dense models since PR #44443 (2026-07)",
    "vllm-v0": "vllm/worker/worker.py determine_num_available_blocks; model_runner.py profile_run "
               "(max_num_seqs sequences of max_num_batched_tokens in all, forward then sampler)",
    "sglang": "sglang/srt/model_executor/model_runner.py profile_max_num_token (rest = free after weights - "
              "total x (1 - mem_fraction_static))",
    "trtllm": "tensorrt_llm KvCacheConfig.free_gpu_memory_fraction (default 0.9 of the memory free after the "
              "weights and a profiling forward pass; tensorrt_llm/_torch/pyexecutor/_util.py)",
}
#: Activations move in 16 bits.
ACTIVATION_BYTES = 2
#: bf16 logits (2) + their float32 copy (4) + float32 probabilities (4): vllm/v1/sample/sampler.py.
SAMPLER_BYTES_PER_LOGIT = 10
#: Model Runner V2's profiling sampler: bf16 logits (2) + their float32 copy (4); temperature and Gumbel
#: sampling work in place and top-k/top-p are skipped (vllm/v1/worker/gpu/sample/sampler.py, Sampler.sample).
MRV2_SAMPLER_BYTES_PER_LOGIT = 6
#: Memory outside PyTorch's allocator per GPU (CUDA context, cuBLAS and NCCL workspaces, the custom
#: all-reduce's buffers), by memory model, for one GPU and for tensor parallelism, as start-up logs print
#: it: vLLM V1 0.19 on H100 (llm-d-incubation/llm-d-planner accuracy/accuracy_report.md, 'Sensitivity:
#: Tensor Parallelism': non_torch 0.25 GiB at TP 1, 2.10 at TP 2 and 2.21 at TP 4: the mean 2.15 beyond one
#: GPU); vLLM V0 0.6 on an RTX 3090 (vllm-project/vllm issue #10517: non_torch_memory=0.35GiB, TP 1; beyond
#: one GPU no reading: V1's). Model Runner V2, SGLang and TensorRT-LLM print none here: V1's (an assumption).
NON_TORCH_BYTES = {"vllm-v1": (0.25 * GiB, 2.155 * GiB), "vllm-v1-mrv2": (0.25 * GiB, 2.155 * GiB),
                   "vllm-v0": (0.35 * GiB, 2.155 * GiB),
                   "sglang": (0.25 * GiB, 2.155 * GiB), "trtllm": (0.25 * GiB, 2.155 * GiB)}
NON_TORCH_SOURCE = ("start-up logs: vLLM 0.19 on H100, non_torch 0.25 GiB at TP 1, 2.10 / 2.21 GiB at TP 2 / 4 "
                    "(llm-d-planner accuracy report); vLLM 0.6 on an RTX 3090, 0.35 GiB (vLLM issue #10517)")


def _check_model(memory_model: str) -> str:
    return check_choice("memory_model", memory_model, MEMORY_MODELS)


def forward_peak_bytes_per_token(model, tp: int = 1) -> float:
    """Bytes of live activations per token at the widest MLP of a forward pass, on one of ``tp`` GPUs.

    Dense MLP: ``2 x (3 x intermediate / tp + 3 x hidden)``; an MoE layer: its ``experts_per_token``
    routed experts' gate/up output, activated product and output per token (vLLM's fused_moe
    intermediate caches), plus the shared experts' and the three hidden buffers. The larger of the two.

    >>> forward_peak_bytes_per_token("llama-3.1-8b")
    110592.0
    >>> forward_peak_bytes_per_token("llama-3.1-70b", 4)
    92160.0
    """
    m: Model = get_model(model)
    tp = check_range("tp", tp, 1, 1024, integer=True)
    hidden = 3 * m.hidden_size
    dense = 3 * m.intermediate_size / tp + hidden if m.dense_layers or not m.is_moe else 0.0
    moe = 0.0
    if m.is_moe:
        width = m.moe_intermediate_size / tp
        moe = m.experts_per_token * (3 * width + m.hidden_size) + 3 * width * m.shared_experts + hidden
    return float(ACTIVATION_BYTES * max(dense, moe))


def sampler_peak_bytes(model, max_num_seqs: int) -> float:
    """Bytes the sampler's profiling run holds: ``max_num_seqs x vocabulary x`` :data:`SAMPLER_BYTES_PER_LOGIT`.

    >>> round(sampler_peak_bytes("llama-3.1-8b", 1024) / 2**30, 3)
    1.223
    """
    m = get_model(model)
    seqs = check_range("max_num_seqs", max_num_seqs, 1, 10**7, integer=True)
    return float(seqs * m.vocab_size * SAMPLER_BYTES_PER_LOGIT)


def mrv2_sampler_phase_bytes(model, *, max_num_batched_tokens: int, max_num_seqs: int) -> float:
    """Bytes live while Model Runner V2's profiling run samples: after the forward pass, before it ends.

    The step's hidden states (``max_num_batched_tokens x hidden``, 16 bits), the gathered rows to sample
    (``min(max_num_batched_tokens, max_num_seqs)`` of them) and their logits, 16-bit and the float32 copy:
    :data:`MRV2_SAMPLER_BYTES_PER_LOGIT` per row and vocabulary entry. Source: :data:`MEMORY_MODEL_SOURCES`.

    >>> round(mrv2_sampler_phase_bytes("llama-3.1-8b", max_num_batched_tokens=2048, max_num_seqs=256) / 2**20, 1)
    205.9
    """
    m = get_model(model)
    tokens = check_range("max_num_batched_tokens", max_num_batched_tokens, 1, 10**8, integer=True)
    rows = min(tokens, check_range("max_num_seqs", max_num_seqs, 1, 10**7, integer=True))
    hidden = ACTIVATION_BYTES * m.hidden_size * (tokens + rows)
    return float(hidden + rows * m.vocab_size * MRV2_SAMPLER_BYTES_PER_LOGIT)


def profile_tokens(memory_model: str, *, max_num_batched_tokens: int, max_model_len: int | None = None) -> int:
    """Tokens the engine's profiling run pushes through the model.

    vLLM V1, SGLang and TensorRT-LLM: the step's token budget. vLLM V0 without chunked prefill profiles a
    whole prompt: ``max(max_num_batched_tokens, max_model_len)`` (its ``max_num_batched_tokens`` defaults to
    ``max(max_model_len, 2048)``). Source: :data:`MEMORY_MODEL_SOURCES`.

    >>> profile_tokens("vllm-v1", max_num_batched_tokens=8192, max_model_len=20_000)
    8192
    >>> profile_tokens("vllm-v0", max_num_batched_tokens=2048, max_model_len=20_000)
    20000
    """
    _check_model(memory_model)
    budget = check_range("max_num_batched_tokens", max_num_batched_tokens, 1, 10**8, integer=True)
    if memory_model == "vllm-v0" and max_model_len is not None:
        return max(budget, check_range("max_model_len", max_model_len, 1, 10**9, integer=True))
    return budget


def activation_peak_bytes(model, tp: int = 1, *, memory_model: str, max_num_batched_tokens: int,
                          max_num_seqs: int, max_model_len: int | None = None) -> float:
    """The engine's profiled activation peak per GPU (bytes), as it subtracts it from the KV budget.

    ``tokens x`` :func:`forward_peak_bytes_per_token` for the profiling run's tokens
    (:func:`profile_tokens`) and :func:`sampler_peak_bytes`: summed in vLLM V1 (both stay in the peak), the
    larger of the two in vLLM V0; in Model Runner V2 the larger of the forward's and
    :func:`mrv2_sampler_phase_bytes` (the sampler runs after the forward's activations are freed); SGLang's
    pool does not subtract activations (0 here: they come out of its ``1 - mem_fraction_static`` share);
    TensorRT-LLM's profiling pass is the forward alone.

    >>> from calc.units import GiB
    >>> round(activation_peak_bytes("llama-3.1-8b", memory_model="vllm-v0", max_num_batched_tokens=2048,
    ...                             max_num_seqs=256, max_model_len=20_000) / GiB, 2)
    2.06
    >>> activation_peak_bytes("llama-3.1-8b", memory_model="sglang", max_num_batched_tokens=8192, max_num_seqs=1024)
    0.0
    >>> round(activation_peak_bytes("llama-3.1-8b", memory_model="vllm-v1-mrv2", max_num_batched_tokens=8192,
    ...                             max_num_seqs=256) / GiB, 3)  # the forward's 8,192 tokens outweigh the sampler
    0.844
    """
    memory_model = _check_model(memory_model)
    tokens = profile_tokens(memory_model, max_num_batched_tokens=max_num_batched_tokens, max_model_len=max_model_len)
    forward = tokens * forward_peak_bytes_per_token(model, tp)
    sampler = sampler_peak_bytes(model, max_num_seqs)
    if memory_model == "vllm-v1":
        return forward + sampler
    if memory_model == "vllm-v1-mrv2":
        return max(forward, mrv2_sampler_phase_bytes(model, max_num_batched_tokens=max_num_batched_tokens,
                                                     max_num_seqs=max_num_seqs))
    if memory_model == "vllm-v0":
        return max(forward, sampler)
    if memory_model == "sglang":
        return 0.0
    return forward


def vllm_v1_batch_defaults(gpu, *, offline: bool = False) -> tuple[int, int]:
    """(max_num_batched_tokens, max_num_seqs) vLLM V1 picks for ``gpu`` when neither is given.

    Source: :data:`VLLM_V1_DEFAULTS_SOURCE` (the device memory as torch reports it: the catalog's
    ``engine`` capacity).

    >>> vllm_v1_batch_defaults("h100-sxm-80gb"), vllm_v1_batch_defaults("a100-80gb"), vllm_v1_batch_defaults("l4")
    ((8192, 1024), (2048, 256), (2048, 256))
    >>> vllm_v1_batch_defaults("h200", offline=True)
    (16384, 1024)
    """
    from calc.catalog import get_gpu

    g = get_gpu(gpu)
    large = g.memory_bytes("engine") >= 70 * GiB and "a100" not in g.key
    if large:
        return (16384 if offline else 8192), 1024
    return (8192 if offline else 2048), 256


#: Why GPUs without peer-to-peer access count one GPU's memory outside PyTorch under TP (``p2p=False``).
NON_TORCH_NO_P2P_SOURCE = (
    "the TP figure of NON_TORCH_BYTES is the custom all-reduce's IPC buffers and NCCL's peer-to-peer transport "
    "buffers in device memory; where the GPUs cannot reach each other directly vLLM disables its custom "
    "all-reduce (its start-up log: 'Custom allreduce is disabled because your platform lacks GPU P2P capability' "
    "or '... because this process group spans across nodes', vllm/distributed/device_communicators/"
    "custom_all_reduce.py) and NCCL moves the data through host shared memory or the network instead, so the "
    "GPU keeps what one GPU keeps (an assumption from the mechanism, checked on vLLM 0.10.1.1 start-up logs: "
    "dennislee22/vLLM-benchmarking)")


def non_torch_bytes(memory_model: str, tp: int = 1, *, p2p: bool = True) -> float:
    """Memory outside PyTorch per GPU the engine counts: :data:`NON_TORCH_BYTES` for one GPU or for TP.

    ``p2p`` False: the GPUs of a TP group cannot reach each other directly (no peer-to-peer access in the
    container, or a group across servers), so each keeps one GPU's figure (:data:`NON_TORCH_NO_P2P_SOURCE`).

    >>> from calc.units import GiB
    >>> non_torch_bytes("vllm-v1", 1) / GiB, round(non_torch_bytes("vllm-v1", 4) / GiB, 3)
    (0.25, 2.155)
    >>> non_torch_bytes("vllm-v1", 2, p2p=False) / GiB
    0.25
    """
    memory_model = _check_model(memory_model)
    tp = check_range("tp", tp, 1, 1024, integer=True)
    if not isinstance(p2p, bool):
        raise CalcError(f"p2p must be true or false; got {p2p!r}", "p2p")
    one, several = NON_TORCH_BYTES[memory_model]
    return one if tp == 1 or not p2p else several


def memory_model_for(engine: str) -> str:
    """The memory model of an engine as a start-up log's row names it (``inputs.engine`` of a measurement).

    Named first: Model Runner V2, SGLang, TensorRT-LLM, the V0 or V1 engine. Then a vLLM version, ``0.N``: V0 below
    0.8 (V1 became the default engine in 0.8), V1 from there; else a year: V0 before 2025. Otherwise V1.

    >>> memory_model_for("vLLM v0.19.0"), memory_model_for("vLLM 0.6 (V0 engine, 'Memory profiling results')")
    ('vllm-v1', 'vllm-v0')
    >>> memory_model_for("vLLM at pull request #2031 (December 2023)"), memory_model_for("SGLang 0.4.6")
    ('vllm-v0', 'sglang')
    >>> memory_model_for("vLLM V1 engine, July 2026: Model Runner V2, the default for Qwen3 dense models")
    'vllm-v1-mrv2'
    >>> memory_model_for("vLLM 0.7.3, V1 engine (VLLM_USE_V1=1)")
    'vllm-v1'
    """
    text = str(engine).lower()
    if "model runner v2" in text:
        return "vllm-v1-mrv2"
    if "sglang" in text:
        return "sglang"
    if "tensorrt" in text or "trtllm" in text or "trt-llm" in text:
        return "trtllm"
    if "v0 engine" in text:
        return "vllm-v0"
    if "v1 engine" in text:  # before 0.8, V1 only when asked for (VLLM_USE_V1=1); the log says which ran
        return "vllm-v1"
    version = re.search(r"\b0\.(\d+)", text)
    if version:
        return "vllm-v0" if int(version.group(1)) < 8 else "vllm-v1"
    year = re.search(r"(?<![#\d])\b(20\d\d)\b", text)  # a year, not a pull request number such as #2031
    if year and int(year.group(1)) < 2025:
        return "vllm-v0"
    return "vllm-v1"

