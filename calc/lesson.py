"""The lesson's running example, defined once: the replica, the average request, its step coefficients and capacity.

Every step of the lesson starts from the same deployment: Llama 3.1 70B
(Meta, https://huggingface.co/meta-llama/Llama-3.1-70B) in bf16 on four H100
SXM 80GB (TP 4), served by vLLM at ``gpu_memory_utilization`` 0.9 with 16-token
KV blocks (vLLM's defaults, ``vllm/config``), each GPU counted as its datasheet's
80e9 bytes. Its average request is a 1,024-token prompt answered in 256 tokens.
Pages, presets, notebooks and tests take these values from here.

>>> REPLICA["model"], REPLICA["gpu"], REPLICA["tp"], PROMPT_TOKENS, ANSWER_TOKENS
('llama-3.1-70b', 'h100-sxm-80gb', 4, 1024, 256)
>>> round(coefficients().dense_weight_bytes / 1e9, 2)  # bf16 weights streamed per GPU per step
34.75

The replica's KV capacity, one value and one name on every page: :data:`KV_CAPACITY_TOKENS`,
the lesson's 399,169 tokens (step 1). The other ways of counting it agree within 0.1%
and keep their own names; only step 1 shows them, saying where each comes from:

>>> KV_CAPACITY_TOKENS
399169
>>> (KV_CAPACITY_TOKENS_LESSON_GB, KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS,
...  KV_CAPACITY_TOKENS_EXACT_PARAMETERS, KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS)
(399169, 399168, 399452, 399440)

The simulator counts the same way on every lesson page: each lesson preset is read over
:data:`SCENARIO_BASE`, whose ``parameter_count`` "lesson" makes :func:`calc.sim.hardware.replica_hardware`
weigh 16-bit weights with the rounded count, so a simulated replica holds step 1's cache in whole blocks
(24,948 blocks of 16: 399,168 of the 399,169 tokens). Scenarios outside the lesson keep the exact count.
"""

from __future__ import annotations

import functools

from calc.catalog import get_model
from calc.errors import CalcError, check_choice, check_range
from calc.memory import WEIGHT_BITS, WEIGHT_FORMATS, KVCapacity, check_tp, kv_capacity as _kv_capacity
from calc.roofline import StepCoefficients, decode_step, step_coefficients
from calc.units import round_sig

__all__ = [
    "REPLICA", "MODEL", "GPU", "TP", "WEIGHTS", "KV_DTYPE", "PROMPT_TOKENS", "ANSWER_TOKENS", "REQUEST_TOKENS",
    "DECODE_CONTEXT_TOKENS", "MAX_MODEL_LEN", "PARAMETER_COUNTS", "LESSON_PARAM_DIGITS", "kv_capacity",
    "replica_capacity", "kv_batch_limit", "coefficients", "decode_ms", "KV_CAPACITY_TOKENS_LESSON_GB",
    "KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS", "KV_CAPACITY_TOKENS_EXACT_PARAMETERS",
    "KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS", "KV_CAPACITY_TOKENS", "LESSON_COUNT_FORMATS",
    "vllm_maximum_concurrency", "kv_tokens", "replica_kv_tokens", "replica_coefficients",
    "weighs_rounded", "rounded_weights_bytes_per_gpu", "SCENARIO_BASE",
]

#: The running example's replica: Llama 3.1 70B in bf16 on four H100s (TP 4), vLLM at 90% of each GPU
#: counted as exactly 80e9 bytes (the datasheet's "80GB"), 16-token blocks, default activation workspace and
#: non-torch overhead (2.5 + 1.5 = 4 GB per GPU: :func:`calc.memory.default_activation_bytes`).
REPLICA = {
    "model": "llama-3.1-70b",
    "gpu": "h100-sxm-80gb",
    "tp": 4,
    "weights": "bf16",
    "kv_dtype": "bf16",
    "gpu_memory_utilization": 0.9,
    "block_size": 16,
    "memory_basis": "marketed",
}
MODEL: str = REPLICA["model"]
GPU: str = REPLICA["gpu"]
TP: int = REPLICA["tp"]
WEIGHTS: str = REPLICA["weights"]
KV_DTYPE: str = REPLICA["kv_dtype"]

#: The running example's average request: a 1,024-token prompt and a 256-token answer.
PROMPT_TOKENS = 1_024
ANSWER_TOKENS = 256
#: What an average request holds at its end: prompt + answer.
REQUEST_TOKENS = PROMPT_TOKENS + ANSWER_TOKENS
#: A decoding request is on average half-way through its answer: 1,024 + 128 tokens of context.
DECODE_CONTEXT_TOKENS = PROMPT_TOKENS + ANSWER_TOKENS // 2
#: The longest request the server admits in step 4's contiguous allocation (a common ``max_model_len``).
MAX_MODEL_LEN = 8_192

#: How the weights are weighed: the lesson's rounded parameter count, or every tensor of the model's shape.
PARAMETER_COUNTS = ("lesson", "exact")
#: Significant digits of the lesson's parameter count ("70.6 B parameters").
LESSON_PARAM_DIGITS = 3


#: Weight formats the lesson weighs with its rounded parameter count (parameters x bytes / TP): formats whose
#: every tensor has the same width. Formats with scales and 16-bit layers (fp8, int8, int4, nf4) are weighed
#: tensor by tensor (:func:`calc.memory.weight_bytes`): an fp8 checkpoint is not uniformly 8-bit.
LESSON_COUNT_FORMATS = ("bf16", "fp16")


def weighs_rounded(weights: str, parameter_count: str = "lesson") -> bool:
    """Whether ``parameter_count`` weighs ``weights`` with the lesson's rounded parameter count.

    ``"lesson"`` rounds the formats of :data:`LESSON_COUNT_FORMATS` (every tensor the same width) and
    weighs formats with scales tensor by tensor, as every page quotes them; ``"exact"`` never rounds.

    >>> weighs_rounded("bf16"), weighs_rounded("fp8"), weighs_rounded("bf16", "exact")
    (True, False, False)
    >>> weighs_rounded("bf16", "rounded")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: parameter_count must be one of lesson, exact; got 'rounded'
    """
    check_choice("parameter_count", parameter_count, PARAMETER_COUNTS)
    return parameter_count == "lesson" and check_choice("weights", weights, WEIGHT_FORMATS) in LESSON_COUNT_FORMATS


def rounded_weights_bytes_per_gpu(model, tp: int, weights: str) -> float:
    """Weights per GPU with the lesson's rounded parameter count: parameters (3 significant digits) x bits / 8 / TP.

    No quantization scales, no 16-bit layers: step 1's "70.6 B parameters x 2 bytes / 4 GPUs".

    >>> rounded_weights_bytes_per_gpu("llama-3.1-70b", 4, "bf16") / 1e9
    35.3
    """
    model = get_model(model)
    bits = WEIGHT_BITS[check_choice("weights", weights, WEIGHT_FORMATS)]
    return round_sig(model.total_params, LESSON_PARAM_DIGITS) * bits / 8 / check_tp(model, tp)


#: What every lesson preset's scenario starts from (:mod:`calc.sim.presets` reads each preset file over it):
#: the simulator's defaults are the running example's replica already (:class:`calc.sim.scenario.Scenario`);
#: this adds the lesson's way of weighing its weights, so that a simulated replica holds step 1's KV cache.
SCENARIO_BASE: dict = {"parameter_count": "lesson"}


def kv_capacity(*, rounded_params: bool | None = None, **overrides) -> KVCapacity:
    """:func:`calc.memory.kv_capacity` of :data:`REPLICA`, with any argument overridden.

    ``rounded_params`` None (the default, what every page quotes) weighs 16-bit
    weights with the lesson's rounded 70.6 B (weights = 70.6e9 x 2 / 4 = 35.3 GB:
    399,169 tokens before block rounding) and formats with scales tensor by
    tensor (fp8: 18.2 GB per GPU, 608,266 tokens). ``False`` weighs every format
    tensor by tensor (bf16: 70,553,706,496 parameters, 399,452 tokens); ``True``
    rounds every format (fp8: 17.65 GB, no scales). The bf16 counts agree within 0.1%.

    >>> kv_capacity().kv_cache_tokens_raw, kv_capacity(weights="fp8").kv_cache_tokens_raw
    (399169, 608266)
    >>> kv_capacity(rounded_params=False).kv_cache_tokens_raw, kv_capacity(memory_basis="runtime").kv_cache_tokens_raw
    (399452, 459823)
    >>> kv_capacity(rounded_params=True, weights="fp8").kv_cache_tokens_raw
    614624
    """
    args = {**REPLICA, **overrides}
    if rounded_params is None:
        rounded_params = weighs_rounded(args["weights"])
    model = get_model(args.pop("model"))
    gpu = args.pop("gpu")
    if rounded_params and args.get("weights_bytes") is None:
        args["weights_bytes"] = rounded_weights_bytes_per_gpu(model, args["tp"], args["weights"])
    return _kv_capacity(model, gpu, **args)


def replica_capacity(model: str = MODEL, gpu: str = GPU, *, tp: int = TP, weights: str = WEIGHTS,
                     kv_dtype: str = KV_DTYPE, gpu_memory_utilization: float = REPLICA["gpu_memory_utilization"],
                     memory_basis: str = REPLICA["memory_basis"], parameter_count: str = "lesson",
                     max_model_len: int | None = None) -> KVCapacity:
    """The replica's KV sizing from :func:`kv_capacity`, with the parameter count chosen.

    ``parameter_count="lesson"`` weighs the weights as the lesson does (:func:`weighs_rounded`): 16-bit
    weights with the parameter count rounded to 3 significant digits x bits per weight / TP
    (70.6e9 x 2 B / 4 = 35.3 GB), formats with scales tensor by tensor, as every page
    quotes them (fp8: 18.2 GB per GPU, 608,266 tokens, step 7's figure). ``"exact"`` takes
    every tensor of the model's shape, with scales and 16-bit embeddings
    (:func:`calc.memory.weight_bytes`). For the running example the two
    differ by 0.07% in tokens (399,169 against 399,452).

    The exact count is tried first, so that a model that does not fit gets
    calc's message with the tensor-parallel sizes that would fit.

    >>> cap = replica_capacity()
    >>> round(cap.weights_bytes / 1e9, 1), round(cap.kv_cache_bytes / 1e9, 1), cap.kv_cache_tokens_raw
    (35.3, 32.7, 399169)
    >>> replica_capacity(weights="fp8").kv_cache_tokens_raw == kv_capacity(weights="fp8").kv_cache_tokens_raw
    True
    >>> round(replica_capacity(max_model_len=8192).max_concurrency, 2)
    48.73
    >>> replica_capacity(tp=3)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: tp must divide the 64 attention heads (and fit the 8 KV heads) of Llama 3.1 70B: one of 1, 2, 4, 8, 16, 32, 64; got 3
    """
    if parameter_count not in PARAMETER_COUNTS:
        raise CalcError(f"parameter_count must be one of {', '.join(PARAMETER_COUNTS)}; got {parameter_count!r}",
                        "parameter_count")
    args = dict(model=model, gpu=gpu, tp=tp, weights=weights, kv_dtype=kv_dtype,
                gpu_memory_utilization=gpu_memory_utilization, memory_basis=memory_basis,
                max_model_len=max_model_len)
    exact = kv_capacity(rounded_params=False, **args)
    if not weighs_rounded(weights, parameter_count):  # formats with scales are weighed tensor by tensor, as on step 7
        return exact
    return kv_capacity(rounded_params=True, **args)


def kv_batch_limit(*, model: str = MODEL, gpu: str = GPU, tp: int = TP, weights: str = WEIGHTS,
                   request_tokens: int = REQUEST_TOKENS) -> int:
    """Requests of ``request_tokens`` whose whole KV fits in the replica at once (step 1's sizing).

    ``floor(KV tokens / request tokens)``, the KV tokens from :func:`replica_capacity`
    (vLLM's sizing at 90%, the lesson's parameter count).

    >>> kv_batch_limit(), kv_batch_limit(request_tokens=8192)
    (311, 48)
    >>> kv_batch_limit(request_tokens=0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: request_tokens must be a whole number between 1 and 1e+07; got 0
    """
    tokens = check_range("request_tokens", request_tokens, 1, 10_000_000, integer=True)
    return replica_capacity(model, gpu, tp=tp, weights=weights).kv_cache_tokens_raw // tokens


@functools.lru_cache(maxsize=64)
def coefficients(weights: str = WEIGHTS, kv_dtype: str = KV_DTYPE, *, model: str = MODEL, gpu: str = GPU,
                 tp: int = TP) -> StepCoefficients:
    """The running example's roofline step coefficients (:func:`calc.roofline.step_coefficients`), cached.

    Every page that prices a step of the lesson's replica, or of the replica with
    one thing changed (the weight format, the KV precision, the GPU, the model
    on the same GPUs), takes its coefficients from here.

    >>> c = coefficients()
    >>> c.model_key, c.tp, c.weights, c.compute_dtype
    ('llama-3.1-70b', 4, 'bf16', 'bf16')
    >>> coefficients("fp8").compute_dtype
    'fp8'
    """
    return step_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype)


def decode_ms(weights: str = WEIGHTS, batch: int = 1, context_tokens: int = DECODE_CONTEXT_TOKENS) -> float:
    """Milliseconds of one decode step of ``batch`` sequences at ``context_tokens`` on the running example.

    Source: :func:`calc.roofline.decode_step` on :func:`coefficients` (steps 7 and 8 compare weight formats on it).

    >>> round(decode_ms("bf16", batch=256), 1), round(decode_ms("fp8", batch=256), 1)
    (31.0, 22.1)
    """
    return decode_step(coefficients(weights), batch=batch, context_tokens=context_tokens)["time_s"] * 1000


#: Tokens of KV cache with the lesson's rounded parameter count (35.3 GB of weights per GPU), before block
#: rounding: KV bytes per GPU // bytes per token per GPU. Step 1's "399,169 tokens".
KV_CAPACITY_TOKENS_LESSON_GB: int = kv_capacity(rounded_params=True).kv_cache_tokens_raw
#: The same, rounded down to whole 16-token blocks, as vLLM allocates them (24,948 blocks).
KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS: int = kv_capacity(rounded_params=True).kv_cache_tokens
#: Tokens of KV cache with every tensor of the model's shape weighed (:func:`calc.memory.weight_bytes`),
#: before block rounding.
KV_CAPACITY_TOKENS_EXACT_PARAMETERS: int = kv_capacity(rounded_params=False).kv_cache_tokens_raw
#: The same, rounded down to whole 16-token blocks (what the simulator's replica holds).
KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS: int = kv_capacity(rounded_params=False).kv_cache_tokens
#: The running example's KV capacity as every page quotes it: "KV cache of the replica", step 1's 399,169 tokens.
KV_CAPACITY_TOKENS: int = KV_CAPACITY_TOKENS_LESSON_GB


def vllm_maximum_concurrency(max_model_len: int = MAX_MODEL_LEN, *, capacity: KVCapacity | None = None,
                             **overrides) -> float:
    """What vLLM logs at start-up as "Maximum concurrency for N tokens per request: X.XXx".

    vLLM divides the KV cache's tokens by ``max_model_len`` (the longest request it
    admits), not by an average request: for the running example at 8,192 tokens,
    399,168 / 8,192 = 48.7x (vLLM counts whole blocks). ``capacity`` takes a sizing
    already made (:func:`replica_capacity`); otherwise :func:`kv_capacity` with ``overrides``. Source: vLLM's
    ``vllm/v1/core/kv_cache_utils.py`` (``Maximum concurrency for ... tokens per request``).

    >>> round(vllm_maximum_concurrency(), 2), round(vllm_maximum_concurrency(1280), 2)
    (48.73, 311.85)
    >>> vllm_maximum_concurrency(0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: max_model_len must be a whole number between 1 and 1e+07; got 0
    """
    length = check_range("max_model_len", max_model_len, 1, 10_000_000, integer=True)
    cap = kv_capacity(**overrides) if capacity is None else capacity
    return cap.kv_cache_tokens / length


def kv_tokens(model: str, tp: int, weights: str, kv_dtype: str = "bf16") -> int | None:
    """Tokens of KV cache the replica holds with these formats (before block rounding), None if it does not fit.

    The running example (70B at TP 4) is sized as every page quotes it (:func:`kv_capacity`:
    the lesson's count for 16-bit weights, step 1's 399,169; tensor by tensor for formats with
    scales); any other model or TP is weighed tensor by tensor. Source: :func:`calc.memory.kv_capacity`
    (vLLM's sizing, 90% of 80 GB).

    >>> kv_tokens("llama-3.1-70b", 4, "bf16"), kv_tokens("llama-3.1-70b", 4, "int4")
    (399169, 708716)
    >>> kv_tokens("llama-3.1-70b", 2, "bf16") is None
    True
    """
    try:
        if (model, tp) == (MODEL, TP):
            return kv_capacity(weights=weights, kv_dtype=kv_dtype).kv_cache_tokens_raw
        return _kv_capacity(model, GPU, tp=tp, weights=weights, kv_dtype=kv_dtype).kv_cache_tokens_raw
    except CalcError:
        return None


def replica_kv_tokens(kv_dtype: str = "bf16") -> int:
    """The running example's KV cache in tokens: 399,169 in bf16 (step 1), twice that with an fp8 cache.

    Source: :func:`kv_capacity` with the lesson's rounded parameter count.

    >>> replica_kv_tokens(), replica_kv_tokens("fp8")
    (399169, 798339)
    """
    return kv_capacity(rounded_params=True, kv_dtype=kv_dtype).kv_cache_tokens_raw


def replica_coefficients(gpu: str = REPLICA["gpu"], weights: str = REPLICA["weights"],
                         kv_dtype: str = REPLICA["kv_dtype"]):
    """Per-GPU roofline coefficients of the running example's replica (70B, TP 4) on ``gpu``.

    Refuses, with calc's reason, a GPU on which the replica's weights leave no KV cache
    (:func:`kv_capacity`). Source: :func:`coefficients`.

    >>> round(replica_coefficients().dense_weight_bytes / 1e9, 2)
    34.75
    >>> replica_coefficients(gpu="l4")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: Llama 3.1 70B does not fit: 35.3 GB of bf16 weights per GPU at tp=4 exceed the 21.6 GB vLLM may use (0.9 x 24.0 GB); allowed: tp one of 8, 16, 32, 64, a higher gpu_memory_utilization (at most 1.0), or fewer bits per weight
    """
    kv_capacity(rounded_params=False, gpu=gpu, weights=weights, kv_dtype=kv_dtype)  # its message names the TPs that fit
    return coefficients(weights, kv_dtype, gpu=gpu)
