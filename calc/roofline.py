"""The roofline of one engine step: FLOPs, bytes, and the time they take on a GPU.

An engine step runs the model once over every token scheduled in it: one new
token per decoding sequence plus the prompt tokens of any prefill chunk. Two kinds
of kernel do the work, one after the other:

* the weight matrix multiplications (GEMMs): ``2 x active parameters`` FLOPs per
  new token, against reading every weight from HBM once per step;
* attention: ``4 x layers x heads x head_dim`` FLOPs per (new token, context
  token) pair, against reading each sequence's KV cache once per step.

Each kind takes ``max(FLOPs / achieved FLOP/s, bytes / achieved bandwidth)``
(the roofline model: Williams, Waterman and Patterson, "Roofline", CACM 2009),
and a step is the two in sequence, plus the tensor-parallel all-reduces
(:mod:`calc.parallel`) and a fixed overhead. A decode step of a small batch is
memory-bound (the weights dominate), a long prefill chunk compute-bound; the
arithmetic intensity (FLOPs per byte) against the GPU's ridge point says which.

The three efficiency factors of :class:`Efficiency` are *fitted* on one row of
published measurements only: NVIDIA TensorRT-LLM's max-throughput figures for
Llama 3.1 8B in FP8 on one H100 (``docs/source/performance/perf-overview.md``:
28,312 / 15,220 / 9,305 / 1,351 output tokens/s at 128/128, 1000/1000,
2048/2048 and 20000/2000 tokens in/out). :func:`calibrate` is the fit;
:data:`CALIBRATED` stores its result. Every other published figure is used for
validation only (:data:`VALIDATION_ROWS`), never for fitting.

>>> from calc.catalog import get_model, get_gpu
>>> coef = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
>>> d = coef.breakdown(new_tokens=1, kv_tokens_read=1152, attention_token_pairs=1152)
>>> d["bound"], round(d["time_s"] * 1000, 1)
('memory', 15.3)
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from calc import memory
from calc.catalog import GPU, Model, get_gpu, get_model
from calc.errors import CalcError, check_choice, check_range
from calc.memory import check_tp, kv_capacity, kv_tokens_per_request
from calc.parallel import ALLREDUCE_LATENCY_S, allreduce_time_s, interconnect_allreduce_latency_s
from calc.units import round_sig

__all__ = [
    "Efficiency", "CALIBRATED", "StepCoefficients", "step_coefficients", "compute_dtype", "arithmetic_intensity",
    "ridge_point_flops_per_byte", "prefill_attention_pairs", "decode_step", "prefill_chunk", "ttft_s", "itl_s",
    "decode_tokens_per_s", "steady_state_step", "mixed_step_s", "roofline_points", "bandwidth_wall_s",
    "max_kv_batch", "batch_sweep", "smallest_batch_where", "first_compute_bound_batch",
    "first_compute_bound_steady_batch", "max_throughput", "CALIBRATION_SETUP", "CALIBRATION_ROW",
    "VALIDATION_ROWS", "calibration_coefficients", "calibration_kv_tokens", "calibration_report", "calibrate",
    "cost_split",
]

#: Bytes per activation value moved between GPUs (activations stay in 16 bits).
ACTIVATION_BYTES = 2
MAX_TOKENS = 10**12


# --------------------------------------------------------------------------- efficiency


@dataclass(frozen=True)
class Efficiency:
    """Named efficiency factors that turn peak datasheet figures into achieved ones.

    ``compute``: achieved / peak dense tensor-core FLOP/s in the matmuls and
    attention; ``memory``: achieved / peak HBM bandwidth when streaming weights
    and KV; ``step_overhead_s``: fixed time per engine step (kernel launches,
    scheduling, input preparation, sampling) that no roofline counts;
    ``tp_step_overhead_s``: more fixed time per step for each GPU beyond the first
    (the engine hands every step's inputs to each tensor-parallel worker and waits
    for all of them); ``seq_overhead_s``: more time per step for each sequence
    scheduled in it (a Python engine prepares each sequence's inputs, samples and
    processes its output on the CPU, one by one). ``source`` says where the numbers
    come from. The pure roofline (:data:`CALIBRATED`) has every overhead at 0; an
    engine profile (:mod:`calc.latency_fit`) sets them.

    >>> Efficiency(compute=0.5, memory=0.8, step_overhead_s=0.0).memory
    0.8
    >>> Efficiency(compute=0, memory=0.8, step_overhead_s=0.0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: compute must be between 0.01 and 1; got 0
    >>> Efficiency(compute=0.5, memory=0.8, step_overhead_s=0.0, seq_overhead_s=-1e-5)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: seq_overhead_s must be between 0 and 0.01; got -1e-05
    """

    compute: float
    memory: float
    step_overhead_s: float
    source: str = ""
    tp_step_overhead_s: float = 0.0
    seq_overhead_s: float = 0.0

    def __post_init__(self):
        check_range("compute", self.compute, 0.01, 1.0)
        check_range("memory", self.memory, 0.01, 1.0)
        check_range("step_overhead_s", self.step_overhead_s, 0.0, 1.0)
        check_range("tp_step_overhead_s", self.tp_step_overhead_s, 0.0, 1.0)
        check_range("seq_overhead_s", self.seq_overhead_s, 0.0, 0.01)


#: Fitted by :func:`calibrate` on the TensorRT-LLM row for Llama 3.1 8B FP8 on one
#: H100 (128/128, 1000/1000, 2048/2048, 20000/2000) and on nothing else; other
#: published figures are validation. The fit finds no room for a fixed per-step
#: overhead at these large batches (TensorRT-LLM captures CUDA graphs and overlaps
#: scheduling with the GPU), so the step overhead comes out at 0. Rerun:
#: ``python -c "from calc.roofline import calibrate; print(calibrate())"``.
CALIBRATED = Efficiency(
    compute=0.51,
    memory=0.76,
    step_overhead_s=0.0,
    source="fitted by calc.roofline.calibrate() on the TensorRT-LLM perf-overview row "
    "Llama 3.1 8B FP8, 1x H100 SXM (128/128, 1000/1000, 2048/2048, 20000/2000) only",
)


# --------------------------------------------------------------------------- what the weights compute in


def compute_dtype(weights: str, gpu: GPU) -> str:
    """The tensor-core dtype a weight format computes in on ``gpu``.

    16-bit weights compute in their own type; ``fp8`` and ``int8`` (W8A8) use the
    GPU's 8-bit tensor cores when it has them, and fall back to 16-bit compute
    (weight-only kernels, such as vLLM's FP8 Marlin on Ampere) when it does not;
    4-bit weight-only formats (``int4``, ``nf4``) dequantize to 16 bits and
    compute there. Source: vLLM quantization docs (supported hardware per method).

    >>> from calc.catalog import get_gpu
    >>> compute_dtype("fp8", get_gpu("h100-sxm-80gb")), compute_dtype("fp8", get_gpu("a100-80gb"))
    ('fp8', 'bf16')
    >>> compute_dtype("int4", get_gpu("h100-sxm-80gb"))
    'bf16'
    """
    check_choice("weights", weights, memory.WEIGHT_FORMATS)
    wanted = {"bf16": "bf16", "fp16": "fp16", "fp8": "fp8", "int8": "int8"}.get(weights, "bf16")
    if wanted in gpu.flops_per_s:
        return wanted
    return "bf16" if "bf16" in gpu.flops_per_s else next(iter(gpu.flops_per_s))


# --------------------------------------------------------------------------- step coefficients


def _nonneg_int(field: str, value) -> int:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value != value:
        raise CalcError(f"{field} must be a whole number between 0 and {MAX_TOKENS:g}; got {value!r}", field)
    if value < 0 or value > MAX_TOKENS or value != int(value):
        raise CalcError(f"{field} must be a whole number between 0 and {MAX_TOKENS:g}; got {value!r}", field)
    return int(value)


@dataclass(frozen=True)
class StepCoefficients:
    """Everything one GPU of a replica needs to price an engine step, precomputed.

    All figures are per GPU (tensor parallelism splits weights, heads and FLOPs
    evenly). A step is described by three sums over the sequences in it:
    ``new_tokens`` (tokens computed: decode tokens plus prefill-chunk tokens),
    ``kv_tokens_read`` (each sequence's context length: its KV streamed from HBM)
    and ``attention_token_pairs`` (for each new token, the context it attends to;
    quadratic in a prefill). Sliding-window models attend to at most their window:
    callers pass window-capped counts (:func:`decode_step` and :func:`prefill_chunk`
    do).

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
    >>> round(c.step_time_s(new_tokens=1, kv_tokens_read=1024, attention_token_pairs=1024) * 1000, 2)
    5.95
    """

    model_key: str
    gpu_key: str
    tp: int
    weights: str
    kv_dtype: str
    compute_dtype: str
    efficiency: Efficiency
    linear_flops_per_token: float
    attention_flops_per_pair: float
    linear_flops_per_s: float
    attention_flops_per_s: float
    hbm_bytes_per_s: float
    dense_weight_bytes: float
    expert_weight_bytes: float
    experts: int
    experts_per_token: int
    kv_bytes_per_token: float
    allreduces_per_step: int
    allreduce_bytes_per_token: float
    interconnect_bytes_per_s: float
    allreduce_latency_s: float
    # Messages above min and up to max bytes (prefill-sized: an engine's two-stage custom all-reduce) move
    # at this share of the link; others at the link's figure. max 0: all at the link's (the lesson's roofline).
    prefill_allreduce_min_bytes: float = 0.0
    prefill_allreduce_max_bytes: float = 0.0
    prefill_allreduce_bus_efficiency: float = 1.0
    # Expert parallelism (each GPU holds experts/tp whole experts; calc.moe): False on tensor-parallel experts.
    expert_parallel: bool = False

    def weight_bytes_read(self, new_tokens: int) -> float:
        """Weight bytes one GPU reads in a step of ``new_tokens`` tokens.

        Dense weights are read once per step whatever the batch. A
        mixture-of-experts layer reads only the experts its tokens were routed
        to: with ``k`` of ``E`` experts chosen per token, uniformly, ``n`` tokens
        touch ``E (1 - (1 - k/E)**n)`` experts on average, rising to all of them as
        the batch grows (:func:`calc.moe.expected_distinct_experts`); each GPU reads its ``1/tp``
        of them. Under expert parallelism a GPU holds whole experts and the step waits for the GPU
        whose tokens touched most of its own (:func:`calc.moe.expected_max_local_experts`).
        Source: expected distinct draws under uniform routing (an assumption; real routers are
        skewed, which touches fewer experts); :mod:`calc.moe`.

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("mixtral-8x7b"), get_gpu("h100-sxm-80gb"), tp=2)
        >>> round(c.weight_bytes_read(1) / 1e9, 1), round(c.weight_bytes_read(64) / 1e9, 1)
        (12.7, 46.6)
        >>> ds = dict(model=get_model("deepseek-v3"), gpu=get_gpu("h200"), tp=8, weights="fp8")
        >>> tp8, ep8 = step_coefficients(**ds), step_coefficients(**ds, expert_parallel=True)
        >>> round(tp8.weight_bytes_read(1) / 1e9, 1), round(ep8.weight_bytes_read(1) / 1e9, 1)
        (4.7, 8.7)
        >>> ep8.weight_bytes_read(8192) == tp8.weight_bytes_read(8192)
        True
        """
        if new_tokens <= 0:
            return 0.0
        if not self.experts:
            return self.dense_weight_bytes
        if self.expert_parallel:  # the busiest GPU's own touched experts (calc.moe.expected_max_local_experts)
            from calc.moe import expected_max_local_experts

            local = self.experts // self.tp
            busiest = expected_max_local_experts(new_tokens, self.experts, self.experts_per_token, self.tp)
            return self.dense_weight_bytes + self.expert_weight_bytes * busiest / local
        untouched = (1.0 - self.experts_per_token / self.experts) ** new_tokens
        return self.dense_weight_bytes + self.expert_weight_bytes * (1.0 - untouched)

    def flops(self, *, new_tokens: int, attention_token_pairs: int) -> float:
        """FLOPs one GPU performs in the step: matmuls plus attention.

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
        >>> round(c.flops(new_tokens=1, attention_token_pairs=0) / 1e9, 2)
        15.01
        """
        return new_tokens * self.linear_flops_per_token + attention_token_pairs * self.attention_flops_per_pair

    def bytes_moved(self, *, new_tokens: int, kv_tokens_read: int) -> float:
        """HBM bytes one GPU moves in the step: weights read, KV read, and the new tokens' KV written.

        Activations are left out (they are small next to the weights and KV).

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
        >>> round(c.bytes_moved(new_tokens=1, kv_tokens_read=0) / 1e9, 2)
        15.01
        """
        return self.weight_bytes_read(new_tokens) + (kv_tokens_read + new_tokens) * self.kv_bytes_per_token

    def breakdown(self, *, new_tokens: int, kv_tokens_read: int, attention_token_pairs: int,
                  sequences: int = 0) -> dict:
        """Every term of a step's time, in seconds, and which roof binds.

        ``gemm_s = max(linear FLOPs / achieved FLOP/s, weights / achieved bandwidth)``,
        ``attention_s = max(attention FLOPs / achieved FLOP/s, KV bytes / achieved
        bandwidth)``, ``time_s = gemm_s + attention_s + comm_s + overhead_s``, the overhead
        counting the step's ``sequences`` (:meth:`overhead_s`; 0: the fixed terms alone).
        ``compute_s`` and ``memory_s`` are the two roofs summed over both kernels;
        ``bound`` is ``"compute"`` when the kernels held by their compute roof take
        longer than those held by bandwidth. Source: the
        roofline model (Williams et al., CACM 2009) per kernel, with
        :class:`Efficiency` factors.

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
        >>> d = c.breakdown(new_tokens=4096, kv_tokens_read=4096, attention_token_pairs=4096 * 2048)
        >>> d["bound"], round(d["compute_s"] * 1000, 1), round(d["memory_s"] * 1000, 1)
        ('compute', 130.6, 6.3)
        """
        new_tokens = _nonneg_int("new_tokens", new_tokens)
        kv_tokens_read = _nonneg_int("kv_tokens_read", kv_tokens_read)
        attention_token_pairs = _nonneg_int("attention_token_pairs", attention_token_pairs)
        sequences = _nonneg_int("sequences", sequences)
        eff = self.efficiency
        linear_compute = new_tokens * self.linear_flops_per_token / (self.linear_flops_per_s * eff.compute)
        attention_compute = attention_token_pairs * self.attention_flops_per_pair / (self.attention_flops_per_s * eff.compute)
        bandwidth = self.hbm_bytes_per_s * eff.memory
        weights_s = self.weight_bytes_read(new_tokens) / bandwidth
        kv_s = (kv_tokens_read + new_tokens) * self.kv_bytes_per_token / bandwidth if new_tokens else 0.0
        gemm_s = max(linear_compute, weights_s)
        attention_s = max(attention_compute, kv_s)
        comm_s = self.comm_s(new_tokens)
        overhead_s = self.overhead_s(sequences)
        compute_s = linear_compute + attention_compute
        memory_s = weights_s + kv_s
        # Which roof binds: the time of the kernels held by their compute roof against those held by bandwidth.
        compute_held = (gemm_s if linear_compute >= weights_s else 0.0) + (attention_s if attention_compute >= kv_s else 0.0)
        memory_held = gemm_s + attention_s - compute_held
        return {
            "compute_s": compute_s,
            "memory_s": memory_s,
            "weights_s": weights_s,
            "kv_s": kv_s,
            "gemm_s": gemm_s,
            "attention_s": attention_s,
            "comm_s": comm_s,
            "overhead_s": overhead_s,
            "time_s": gemm_s + attention_s + comm_s + overhead_s,
            "bound": "compute" if compute_held > memory_held else "memory",
        }

    def overhead_s(self, sequences: int = 0) -> float:
        """The engine's time of a step beyond the GPU's work: ``step_overhead_s + tp_step_overhead_s x (tp - 1)
        + seq_overhead_s x sequences``.

        ``sequences``: the sequences scheduled in the step (decoding ones and prefill chunks). Source:
        :class:`Efficiency` (0 on the pure roofline; an engine profile's fitted terms otherwise).

        >>> from calc.catalog import get_model, get_gpu
        >>> eff = Efficiency(compute=0.5, memory=0.8, step_overhead_s=0.002, tp_step_overhead_s=0.0005,
        ...                  seq_overhead_s=0.00005)
        >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4, efficiency=eff)
        >>> round(c.overhead_s(), 6), round(c.overhead_s(64), 6)
        (0.0035, 0.0067)
        """
        eff = self.efficiency
        # The same expression, in the same order, as calc.sim.hardware.step_pricer adds it (bit for bit).
        return eff.step_overhead_s + eff.tp_step_overhead_s * (self.tp - 1) + eff.seq_overhead_s * sequences

    def comm_s(self, new_tokens: int) -> float:
        """Tensor-parallel all-reduce time of a step: two per layer, each ``new_tokens x hidden`` activations.

        Zero on one GPU. Source: Megatron-LM tensor parallelism (Shoeybi et al.
        2019: one all-reduce after attention and one after the MLP per layer);
        :func:`calc.parallel.allreduce_time_s`.

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
        >>> round(c.comm_s(1) * 1000, 2), step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb")).comm_s(1)
        (1.61, 0.0)
        """
        if not self.allreduces_per_step or new_tokens <= 0:
            return 0.0
        message_bytes = new_tokens * self.allreduce_bytes_per_token
        link = self.interconnect_bytes_per_s
        if self.prefill_allreduce_min_bytes < message_bytes <= self.prefill_allreduce_max_bytes:
            link *= self.prefill_allreduce_bus_efficiency  # the engine's custom kernel's measured share
        return self.allreduces_per_step * allreduce_time_s(message_bytes, self.tp, link,
                                                           latency_s=self.allreduce_latency_s)

    def step_time_s(self, *, new_tokens: int, kv_tokens_read: int, attention_token_pairs: int,
                    sequences: int = 0) -> float:
        """Seconds for one engine step; never falls when any argument grows.

        Same as ``breakdown(...)["time_s"]``: per kernel ``max(compute, memory)``
        over the efficiency factors, plus TP all-reduce and step overhead (with the
        engine's per-sequence term for the step's ``sequences``).

        >>> from calc.catalog import get_model, get_gpu
        >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"))
        >>> c.step_time_s(new_tokens=8, kv_tokens_read=8000, attention_token_pairs=8000) > c.step_time_s(new_tokens=1, kv_tokens_read=1000, attention_token_pairs=1000)
        True
        """
        return self.breakdown(new_tokens=new_tokens, kv_tokens_read=kv_tokens_read, attention_token_pairs=attention_token_pairs,
                              sequences=sequences)["time_s"]

    def to_dict(self) -> dict:
        """The coefficients as JSON-ready data (floats to 6 significant digits).

        >>> from calc.catalog import get_model, get_gpu
        >>> step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb")).to_dict()["compute_dtype"]
        'bf16'
        """
        out = {}
        for name in self.__dataclass_fields__:
            value = getattr(self, name)
            if name.startswith("prefill_allreduce_") and not self.prefill_allreduce_max_bytes:
                continue  # the lesson's roofline has no small-message kernel: its dict stays as it was
            if name == "expert_parallel" and not value:
                continue  # tensor-parallel experts (every dense model): the dict stays as it was
            if isinstance(value, Efficiency):
                value = {"compute": value.compute, "memory": value.memory, "step_overhead_s": value.step_overhead_s}
            elif isinstance(value, float):
                value = round_sig(value)
            out[name] = value
        return out


def _attention_flops_per_pair(model: Model) -> float:
    """FLOPs per (query token, key token) pair over all layers: QK^T and PV, 2 FLOPs per multiply-add."""
    if model.attention == "mla":
        # MLA in its absorbed form (DeepSeek-V2, arXiv 2405.04434, section 2.1.2): scores over the
        # latent plus the shared RoPE key, values over the latent.
        per_layer = 2 * model.attention_heads * (model.kv_lora_rank + model.qk_rope_head_dim) + 2 * model.attention_heads * model.kv_lora_rank
    else:
        per_layer = 4 * model.attention_heads * model.head_dim
    return float(model.layers * per_layer)


def _default_allreduce_latency_s(gpu: GPU, tp: int) -> float:
    """The lesson's round 10 us on a full mesh; the PCIe ring's measured-step latency on PCIe."""
    from calc.catalog.interconnect import INTERCONNECTS

    if INTERCONNECTS[gpu.interconnect].full_mesh:
        return ALLREDUCE_LATENCY_S
    return interconnect_allreduce_latency_s(gpu.interconnect, tp)


def step_coefficients(model, gpu, *, tp: int = 1, weights: str = "bf16", kv_dtype: str = "bf16",
                      efficiency: Efficiency = CALIBRATED, allreduce_latency_s: float | None = None,
                      prefill_allreduce_min_bytes: float = 0.0, prefill_allreduce_max_bytes: float = 0.0,
                      prefill_allreduce_bus_efficiency: float = 1.0, expert_parallel: bool = False,
                      dp_attention: bool = False) -> StepCoefficients:
    """Precompute the per-GPU roofline of a replica: ``model`` on ``tp`` GPUs of type ``gpu``.

    * FLOPs per new token: 2 x (active linear weights + the LM head), over ``tp``
      (Kaplan et al. 2020, "Scaling Laws", section 2.1: 2N FLOPs per token);
    * attention FLOPs per (token, context token) pair: 4 x layers x heads x head
      dim over ``tp`` (QK^T and PV);
    * weight bytes read per step: :func:`calc.memory.weight_bytes` over ``tp``,
      less the input embedding, which is gathered row by row, not streamed
      (unless tied to the LM head); experts split out for MoE;
    * KV bytes per token per GPU: :func:`calc.memory.kv_bytes_per_token_per_gpu`.

    The weight format sets the compute dtype (:func:`compute_dtype`); attention
    computes in 16 bits. ``allreduce_latency_s`` defaults to the lesson's round 10 us
    (:data:`calc.parallel.ALLREDUCE_LATENCY_S`) on a fully meshed link (NVLink, Infinity Fabric) and to
    the PCIe ring's latency on a PCIe GPU (:func:`calc.parallel.interconnect_allreduce_latency_s`: NCCL's
    ring, 2 (n - 1) hops, since no one-shot kernel runs on more than two PCIe GPUs); the simulator passes the measured figure for
    ``tp`` GPUs (:func:`calc.parallel.allreduce_latency_s`). All-reduces of more than
    ``prefill_allreduce_min_bytes`` and at most ``prefill_allreduce_max_bytes`` move their bytes at ``prefill_allreduce_bus_efficiency`` of the link
    (an engine's custom all-reduce kernel, measured: :data:`calc.engine_profiles.ALLREDUCE_BUS_EFFICIENCY`);
    the lesson's roofline has none (0 bytes) and every message at the link's figure.
    ``expert_parallel``: the routed experts split whole across the ``tp`` GPUs instead of each sliced
    (:mod:`calc.moe`; the same all-reduce combines them); ``dp_attention`` is refused by name (not
    modelled: :func:`calc.moe.check_moe_parallelism`).

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"), weights="fp8", kv_dtype="fp8")
    >>> c.compute_dtype, round(c.dense_weight_bytes / 1e9, 2), c.kv_bytes_per_token
    ('fp8', 8.04, 65536.0)
    """
    model = get_model(model)
    gpu = get_gpu(gpu)
    tp = memory.check_tp(model, tp)
    check_choice("weights", weights, memory.WEIGHT_FORMATS)
    check_choice("kv_dtype", kv_dtype, memory.KV_DTYPES)
    if not isinstance(efficiency, Efficiency):
        raise CalcError(f"efficiency must be an Efficiency; got {efficiency!r}", "efficiency")
    if allreduce_latency_s is None:
        allreduce_latency_s = _default_allreduce_latency_s(gpu, tp)
    latency = check_range("allreduce_latency_s", allreduce_latency_s, 0.0, 0.01)
    prefill_min = check_range("prefill_allreduce_min_bytes", prefill_allreduce_min_bytes, 0.0, 1e12)
    prefill_max = check_range("prefill_allreduce_max_bytes", prefill_allreduce_max_bytes, 0.0, 1e12)
    prefill_share = check_range("prefill_allreduce_bus_efficiency", prefill_allreduce_bus_efficiency, 0.01, 1.0)
    dtype = compute_dtype(weights, gpu)
    from calc.moe import check_moe_parallelism

    check_moe_parallelism(model, tp=tp, expert_parallel=expert_parallel, dp_attention=dp_attention)

    wb = memory.weight_bytes(model, weights)
    other = model.other_params()
    linears = model.linears()
    linear_params = sum(l.params for l in linears)
    expert_params = sum(l.params for l in linears if l.expert)
    quantized_bytes = wb.payload_bytes + wb.scale_bytes
    expert_bytes = quantized_bytes * expert_params / linear_params if expert_params else 0.0
    gathered = 0 if model.tied_embeddings else other["embed_tokens"] * 2  # 16-bit, looked up, not streamed
    dense_bytes = wb.total_bytes - gathered - expert_bytes

    head_params = model.vocab_size * model.hidden_size
    active_linear = linear_params - expert_params
    if expert_params:
        active_linear += expert_params * model.experts_per_token / model.experts

    return StepCoefficients(
        model_key=model.key,
        gpu_key=gpu.key,
        tp=tp,
        weights=weights,
        kv_dtype=kv_dtype,
        compute_dtype=dtype,
        efficiency=efficiency,
        linear_flops_per_token=2.0 * (active_linear + head_params) / tp,
        attention_flops_per_pair=_attention_flops_per_pair(model) / tp,
        linear_flops_per_s=gpu.flops(dtype),
        attention_flops_per_s=gpu.flops("bf16") if "bf16" in gpu.flops_per_s else gpu.flops(dtype),
        hbm_bytes_per_s=gpu.hbm_bytes_per_s,
        dense_weight_bytes=dense_bytes / tp,
        expert_weight_bytes=expert_bytes / tp,
        experts=model.experts,
        experts_per_token=model.experts_per_token,
        kv_bytes_per_token=float(memory.kv_bytes_per_token_per_gpu(model, tp, kv_dtype)),
        allreduces_per_step=2 * model.layers if tp > 1 else 0,
        allreduce_bytes_per_token=float(model.hidden_size * ACTIVATION_BYTES),
        interconnect_bytes_per_s=gpu.interconnect_bytes_per_s,
        allreduce_latency_s=latency,
        prefill_allreduce_min_bytes=float(prefill_min),
        prefill_allreduce_max_bytes=float(prefill_max),
        prefill_allreduce_bus_efficiency=float(prefill_share),
        expert_parallel=expert_parallel,
    )


# --------------------------------------------------------------------------- intensity and ridge


def arithmetic_intensity(flops: float, bytes_moved: float) -> float:
    """FLOPs per byte moved from HBM: the roofline's x axis.

    Source: Williams, Waterman and Patterson, "Roofline", CACM 2009.

    >>> arithmetic_intensity(16e9, 16e9)
    1.0
    >>> arithmetic_intensity(1.0, 0)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: bytes_moved must be greater than 0; got 0
    """
    from calc.errors import check_positive

    flops = check_positive("flops", flops, allow_zero=True)
    moved = check_positive("bytes_moved", bytes_moved)
    return flops / moved


def ridge_point_flops_per_byte(gpu, dtype: str = "bf16") -> float:
    """Arithmetic intensity at which a kernel on ``gpu`` turns from memory- to compute-bound.

    Peak FLOP/s in ``dtype`` over peak HBM bytes/s (the efficiency factors scale
    both roofs and are left out here). H100 SXM: 989e12 / 3.35e12 = 295 FLOP/B in
    bf16, twice that in fp8. Source: Williams et al., CACM 2009; GPU datasheets in
    :mod:`calc.catalog`.

    >>> round(ridge_point_flops_per_byte("h100-sxm-80gb", "bf16")), round(ridge_point_flops_per_byte("h100-sxm-80gb", "fp8"))
    (295, 591)
    """
    return get_gpu(gpu).ridge_point_flops_per_byte(dtype)


# --------------------------------------------------------------------------- decode and prefill


def _model_of(coefficients: StepCoefficients) -> Model:
    return get_model(coefficients.model_key)


def _attended(model: Model, position: int) -> int:
    return min(position, model.sliding_window) if model.sliding_window else position


def prefill_attention_pairs(prompt_end_tokens: int, *, start_tokens: int = 0, sliding_window: int | None = None) -> int:
    """(query, key) pairs computed when prefilling positions ``start+1 .. end`` causally.

    Token ``i`` attends to ``i`` tokens (itself and those before it), or to the
    last ``sliding_window`` of them: the sum is ``(end (end+1) - start (start+1)) / 2``
    without a window, which is why prefill grows quadratically with the prompt.
    Source: causal self-attention (Vaswani et al. 2017) with a sliding window
    (Mistral 7B paper, arXiv 2310.06825).

    >>> prefill_attention_pairs(4)
    10
    >>> prefill_attention_pairs(8, start_tokens=4)
    26
    >>> prefill_attention_pairs(10, sliding_window=4)
    34
    """
    end = check_range("prompt_end_tokens", prompt_end_tokens, 0, MAX_TOKENS, integer=True)
    start = check_range("start_tokens", start_tokens, 0, end, integer=True)
    if not sliding_window or sliding_window >= end:
        return (end * (end + 1) - start * (start + 1)) // 2
    w = check_range("sliding_window", sliding_window, 1, MAX_TOKENS, integer=True)
    # positions 1..w attend to themselves and all before; positions above w attend to w tokens.
    ramp_end = min(end, w)
    ramp_start = min(start, w)
    ramp = (ramp_end * (ramp_end + 1) - ramp_start * (ramp_start + 1)) // 2
    flat = (end - max(start, w)) * w if end > w else 0
    return ramp + max(flat, 0)


def _work(coefficients: StepCoefficients, new: int, kv: int, pairs: int, sequences: int = 1) -> dict:
    d = coefficients.breakdown(new_tokens=new, kv_tokens_read=kv, attention_token_pairs=pairs, sequences=sequences)
    flops = coefficients.flops(new_tokens=new, attention_token_pairs=pairs)
    moved = coefficients.bytes_moved(new_tokens=new, kv_tokens_read=kv)
    d.update(
        new_tokens=new,
        kv_tokens_read=kv,
        attention_token_pairs=pairs,
        flops=flops,
        bytes=moved,
        intensity_flops_per_byte=flops / moved if moved else 0.0,
        ridge_flops_per_byte=coefficients.linear_flops_per_s / coefficients.hbm_bytes_per_s,
    )
    return d


def decode_step(coefficients: StepCoefficients, *, batch: int, context_tokens: int) -> dict:
    """FLOPs, bytes, intensity and time (per GPU) of one decode step: ``batch`` sequences of ``context_tokens``.

    Each sequence computes one new token against its whole context (its KV read
    from HBM); the weights are read once for the whole batch, which is why
    batching decode is nearly free until the batch's KV or FLOPs catch up.
    Source: :meth:`StepCoefficients.breakdown`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> d = decode_step(c, batch=1, context_tokens=1152)
    >>> d["bound"], round(d["intensity_flops_per_byte"], 2)
    ('memory', 1.02)
    """
    batch = check_range("batch", batch, 1, MAX_TOKENS, integer=True)
    context_tokens = check_range("context_tokens", context_tokens, 1, MAX_TOKENS, integer=True)
    ctx = _attended(_model_of(coefficients), context_tokens)
    d = _work(coefficients, batch, batch * ctx, batch * ctx, batch)
    d.update(batch=batch, context_tokens=context_tokens)
    return d


def prefill_chunk(coefficients: StepCoefficients, *, chunk_tokens: int, context_before_tokens: int = 0) -> dict:
    """FLOPs, bytes, intensity and time (per GPU) of prefilling ``chunk_tokens`` after ``context_before_tokens``.

    The chunk's tokens are computed together (one read of the weights for all of
    them, hence the high intensity) and attend causally to everything before
    them. Source: :func:`prefill_attention_pairs`, :meth:`StepCoefficients.breakdown`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> d = prefill_chunk(c, chunk_tokens=1024)
    >>> d["bound"], round(d["intensity_flops_per_byte"])
    ('compute', 1029)
    """
    chunk = check_range("chunk_tokens", chunk_tokens, 1, MAX_TOKENS, integer=True)
    before = check_range("context_before_tokens", context_before_tokens, 0, MAX_TOKENS, integer=True)
    model = _model_of(coefficients)
    pairs = prefill_attention_pairs(before + chunk, start_tokens=before, sliding_window=model.sliding_window)
    kv = _attended(model, before + chunk)
    d = _work(coefficients, chunk, kv, pairs)
    d.update(chunk_tokens=chunk, context_before_tokens=before)
    return d


def ttft_s(coefficients: StepCoefficients, *, prompt_tokens: int, chunk_tokens: int | None = None) -> float:
    """Time to first token of one prompt on an idle replica: its prefill, chunk by chunk.

    No queueing and no other work in the steps: the floor of TTFT. With
    ``chunk_tokens`` (chunked prefill, e.g. vLLM's 8,192-token step budget) the
    prompt runs as several steps that each re-read the weights.
    Source: :func:`prefill_chunk`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> round(ttft_s(c, prompt_tokens=1024) * 1000)
    82
    """
    prompt = check_range("prompt_tokens", prompt_tokens, 1, MAX_TOKENS, integer=True)
    chunk = prompt if chunk_tokens is None else check_range("chunk_tokens", chunk_tokens, 1, MAX_TOKENS, integer=True)
    total = []
    done = 0
    while done < prompt:
        n = min(chunk, prompt - done)
        total.append(prefill_chunk(coefficients, chunk_tokens=n, context_before_tokens=done)["time_s"])
        done += n
    return math.fsum(total)


def itl_s(coefficients: StepCoefficients, *, batch: int, context_tokens: int) -> float:
    """Inter-token latency: the time of one decode step of ``batch`` sequences at ``context_tokens``.

    Source: :func:`decode_step`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> round(itl_s(c, batch=1, context_tokens=1152) * 1000, 1), round(itl_s(c, batch=64, context_tokens=1152) * 1000, 1)
    (15.3, 18.2)
    """
    return decode_step(coefficients, batch=batch, context_tokens=context_tokens)["time_s"]


def decode_tokens_per_s(coefficients: StepCoefficients, *, batch: int, context_tokens: int) -> float:
    """Output tokens per second of a replica decoding ``batch`` sequences: batch / ITL.

    Source: :func:`itl_s`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> round(decode_tokens_per_s(c, batch=64, context_tokens=1152))
    3520
    """
    return batch / itl_s(coefficients, batch=batch, context_tokens=context_tokens)


# --------------------------------------------------------------------------- steady state at saturation


def steady_state_step(coefficients: StepCoefficients, *, batch: int, input_tokens: int, output_tokens: int) -> dict:
    """The average step of a replica kept full of identical requests, prefill mixed into decode.

    With ``batch`` sequences always running and each request bringing
    ``input_tokens`` of prompt for ``output_tokens`` of answer, every step carries
    ``batch`` decode tokens and, on average, ``batch x input / output`` prefill
    tokens (chunked prefill / in-flight batching). Decoding sequences are on
    average half-way through their answer: context ``input + output / 2``; a
    prefill token attends on average to half the prompt.
    Source: continuous batching (Yu et al., "Orca", OSDI 2022) in steady state;
    :meth:`StepCoefficients.breakdown`.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"), weights="fp8", kv_dtype="fp8")
    >>> s = steady_state_step(c, batch=256, input_tokens=1000, output_tokens=1000)
    >>> s["new_tokens"], round(s["output_tokens_per_s"])
    (512, 14619)
    """
    batch = check_range("batch", batch, 1, MAX_TOKENS, integer=True)
    isl = check_range("input_tokens", input_tokens, 1, MAX_TOKENS, integer=True)
    osl = check_range("output_tokens", output_tokens, 1, MAX_TOKENS, integer=True)
    model = _model_of(coefficients)
    prefill_per_step = batch * isl / osl
    decode_ctx = _attended(model, isl + osl // 2)
    prefill_ctx = (_attended(model, isl) + 1) / 2
    new = batch + math.ceil(prefill_per_step)
    kv = batch * decode_ctx
    pairs = batch * decode_ctx + math.ceil(prefill_per_step * prefill_ctx)
    d = _work(coefficients, new, kv, pairs, batch)
    d.update(
        batch=batch,
        input_tokens=isl,
        output_tokens=osl,
        prefill_tokens_per_step=prefill_per_step,
        output_tokens_per_s=batch / d["time_s"],
    )
    return d


def mixed_step_s(coefficients, *, batch: int, context_tokens: int, chunk_tokens: int) -> float:
    """Seconds of one engine step that decodes ``batch`` sequences and prefills a ``chunk_tokens`` chunk.

    Every decoding sequence waits for the whole step, so this is the
    inter-token latency of everyone in the batch while the chunk runs.
    Source: :meth:`calc.roofline.StepCoefficients.step_time_s` (decode tokens
    and prefill tokens in one step, as vLLM's chunked prefill schedules them).

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> round(mixed_step_s(c, batch=64, context_tokens=1152, chunk_tokens=0) * 1000, 1)
    18.2
    >>> round(mixed_step_s(c, batch=64, context_tokens=1152, chunk_tokens=8192) * 1000)
    686
    """
    batch = check_range("batch", batch, 0, 10**6, integer=True)
    ctx = check_range("context_tokens", context_tokens, 1, 10**8, integer=True)
    chunk = check_range("chunk_tokens", chunk_tokens, 0, 10**7, integer=True)
    if batch + chunk == 0:
        return 0.0
    return coefficients.step_time_s(new_tokens=batch + chunk, kv_tokens_read=batch * ctx + chunk,
                                    attention_token_pairs=batch * ctx + prefill_attention_pairs(chunk),
                                    sequences=batch + (1 if chunk else 0))


MAX_SEARCH_BATCH = 4096  # the largest batch the searches below try (16x vLLM's default max_num_seqs)


def smallest_batch_where(predicate, max_batch: int = MAX_SEARCH_BATCH) -> int | None:
    """The smallest batch in 1..max_batch for which ``predicate`` holds, or None; ``predicate`` must hold from some batch on.

    Bisection: about log2(max_batch) calls of ``predicate`` (a step price each). The callers'
    own ``max_batch`` checks set their ranges; this one only refuses what no search needs.

    >>> smallest_batch_where(lambda b: b * b >= 200), smallest_batch_where(lambda b: False, 16)
    (15, None)
    """
    max_batch = check_range("max_batch", max_batch, 1, 10_000_000, integer=True)
    if predicate(1):
        return 1
    if not predicate(max_batch):
        return None
    low, high = 1, max_batch  # predicate(low) is False, predicate(high) is True
    while high - low > 1:
        mid = (low + high) // 2
        if predicate(mid):
            high = mid
        else:
            low = mid
    return high


def first_compute_bound_batch(coefficients: StepCoefficients, *, context_tokens: int,
                              max_batch: int = MAX_SEARCH_BATCH) -> int | None:
    """The smallest decode batch whose step is compute-bound, or None if none up to ``max_batch`` is.

    Past it the step time grows in proportion to the batch and a token costs
    about the same at any larger batch. At a real context the batch's KV reads
    grow as fast as its FLOPs, so decode may never cross the ridge: batching
    amortises the weights, not the KV (Williams et al., "Roofline", CACM 2009;
    which roof binds comes from :func:`decode_step`).

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> first_compute_bound_batch(c, context_tokens=1152)
    199
    >>> m = step_coefficients(get_model("mistral-7b"), get_gpu("h100-sxm-80gb"))
    >>> first_compute_bound_batch(m, context_tokens=1152) is None, first_compute_bound_batch(m, context_tokens=16)
    (True, 199)
    """
    return smallest_batch_where(lambda b: decode_step(coefficients, batch=b, context_tokens=context_tokens)["bound"] == "compute",
                        max_batch)


def first_compute_bound_steady_batch(coefficients: StepCoefficients, *, input_tokens: int, output_tokens: int,
                                     max_batch: int = MAX_SEARCH_BATCH) -> int | None:
    """The smallest batch whose steady-state step (prefill mixed into decode) is compute-bound, or None.

    The steps of :func:`steady_state_step`: ``batch`` decode tokens and, on
    average, ``batch x input / output`` prompt tokens each.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-70b"), get_gpu("h100-sxm-80gb"), tp=4)
    >>> first_compute_bound_steady_batch(c, input_tokens=1024, output_tokens=256)
    40
    """
    return smallest_batch_where(lambda b: steady_state_step(coefficients, batch=b, input_tokens=input_tokens,
                                                    output_tokens=output_tokens)["bound"] == "compute", max_batch)


def max_throughput(coefficients: StepCoefficients, *, input_tokens: int, output_tokens: int, kv_capacity_tokens: int, max_running: int = 256) -> dict:
    """Output tokens/s of a replica flooded with identical requests (the offline max-throughput case).

    The running batch is the smaller of ``max_running`` (the engine's
    running-sequence cap: vLLM's ``max_num_seqs`` defaults to 256; trtllm-bench
    caps at 4,096) and the requests whose whole ``input + output`` fits in the KV
    cache (``kv_capacity_tokens`` for the replica; TensorRT-LLM's default
    scheduler reserves each request's full length, ``GUARANTEED_NO_EVICT``).
    Then :func:`steady_state_step` gives the step time and tokens/s.
    Source: trtllm-bench ``tuning.py`` (``calc_engine_setting``, ``finetune_setting``);
    vLLM engine arguments.

    >>> from calc.catalog import get_model, get_gpu
    >>> c = step_coefficients(get_model("llama-3.1-8b"), get_gpu("h100-sxm-80gb"), weights="fp8", kv_dtype="fp8")
    >>> r = max_throughput(c, input_tokens=2048, output_tokens=2048, kv_capacity_tokens=1_100_000, max_running=4096)
    >>> r["batch"], r["limited_by"], round(r["output_tokens_per_s"], -2)
    (268, 'kv_cache', 9200.0)
    """
    isl = check_range("input_tokens", input_tokens, 1, MAX_TOKENS, integer=True)
    osl = check_range("output_tokens", output_tokens, 1, MAX_TOKENS, integer=True)
    kv_cap = check_range("kv_capacity_tokens", kv_capacity_tokens, 1, MAX_TOKENS, integer=True)
    cap = check_range("max_running", max_running, 1, 1_000_000, integer=True)
    per_request = memory.kv_tokens_per_request(_model_of(coefficients), isl + osl)
    fits = kv_cap // per_request
    if fits < 1:
        raise CalcError(
            f"kv_capacity_tokens must hold at least one request of {per_request:,} tokens; got {kv_cap:,}",
            "kv_capacity_tokens")
    batch = min(cap, fits)
    d = steady_state_step(coefficients, batch=batch, input_tokens=isl, output_tokens=osl)
    d.update(limited_by="max_running" if cap <= fits else "kv_cache", kv_capacity_tokens=kv_cap, max_running=cap)
    return d


# --------------------------------------------------------------------------- calibration


#: The one published row the efficiency factors are fitted on, with what it ran.
CALIBRATION_SETUP = {
    "model": "llama-3.1-8b",
    "gpu": "h100-sxm-80gb",
    "tp": 1,
    "weights": "fp8",
    # Assumed: the nvidia/Llama-3.1-8B-Instruct-FP8 checkpoint's KV cache in FP8, as trtllm-bench
    # reads kv_cache_quant_algo from the checkpoint.
    "kv_dtype": "fp8",
    # trtllm-bench caps the batch at 4,096 (tuning.py, finetune_setting); below that the KV cache binds.
    "max_running": 4096,
    # TensorRT-LLM's KV cache takes this share of the memory free after loading (perf-overview: "we also use
    # a higher KV cache percentage by setting --kv_cache_free_gpu_mem_fraction 0.95").
    "kv_free_memory_fraction": 0.95,
    # Free memory = the H100's runtime capacity (81,559 MiB) - weights - activation workspace and context,
    # taken as calc.memory's defaults (2.5 GB + 0.5 GB): an assumption.
    "memory_basis": "runtime",
    "block_size": 32,  # TensorRT-LLM's default tokens per KV block
    "source": "NVIDIA TensorRT-LLM, docs/source/performance/perf-overview.md (PyTorch backend, trtllm-bench "
    "throughput, Total Output Throughput), Llama 3.1 8B, H100 TP1 (FP8)",
}

#: (input tokens, output tokens, published output tokens/s): the calibration row, and nothing else.
CALIBRATION_ROW = (
    (128, 128, 28_312),
    (1000, 1000, 15_220),
    (2048, 2048, 9_305),
    (20000, 2000, 1_351),
)

#: Published figures used only to check the fitted model, never to fit it:
#: the rest of the same table (Llama 3.1 8B FP8, H100 TP1 and H200 TP1).
VALIDATION_ROWS = (
    {"gpu": "h100-sxm-80gb", "input_tokens": 128, "output_tokens": 2048, "tokens_per_s": 22_714},
    {"gpu": "h100-sxm-80gb", "input_tokens": 128, "output_tokens": 4096, "tokens_per_s": 14_325},
    {"gpu": "h100-sxm-80gb", "input_tokens": 500, "output_tokens": 2000, "tokens_per_s": 17_660},
    {"gpu": "h100-sxm-80gb", "input_tokens": 1000, "output_tokens": 2000, "tokens_per_s": 13_899},
    {"gpu": "h100-sxm-80gb", "input_tokens": 2048, "output_tokens": 128, "tokens_per_s": 3_450},
    {"gpu": "h100-sxm-80gb", "input_tokens": 5000, "output_tokens": 500, "tokens_per_s": 3_459},
    {"gpu": "h200", "input_tokens": 128, "output_tokens": 128, "tokens_per_s": 27_911},
    {"gpu": "h200", "input_tokens": 1000, "output_tokens": 1000, "tokens_per_s": 17_744},
    {"gpu": "h200", "input_tokens": 2048, "output_tokens": 2048, "tokens_per_s": 12_194},
    {"gpu": "h200", "input_tokens": 20000, "output_tokens": 2000, "tokens_per_s": 1_804},
)
VALIDATION_SOURCE = CALIBRATION_SETUP["source"] + "; other columns and rows of the same table"


def calibration_kv_tokens(gpu=None) -> int:
    """KV cache tokens of the calibration set-up: 95% of the memory free after the FP8 weights.

    Free memory = runtime capacity - weights - :mod:`calc.memory`'s default
    activation workspace and non-PyTorch memory; tokens are whole blocks of 32.
    Source: :data:`CALIBRATION_SETUP` (TensorRT-LLM perf-overview and defaults).

    >>> calibration_kv_tokens()
    1064480
    """
    s = CALIBRATION_SETUP
    model = get_model(s["model"])
    gpu = get_gpu(gpu or s["gpu"])
    free = math.fsum([
        gpu.memory_bytes(s["memory_basis"]),
        -memory.weights_bytes_per_gpu(model, s["tp"], s["weights"]),
        -memory.default_activation_bytes(model, s["tp"]),
        -memory.default_non_torch_bytes(s["tp"]),
    ])
    cap = memory.kv_capacity(model, gpu, tp=s["tp"], weights=s["weights"], kv_dtype=s["kv_dtype"],
                             block_size=s["block_size"], kv_cache_bytes=free * s["kv_free_memory_fraction"])
    return cap.kv_cache_tokens


def calibration_coefficients(efficiency: Efficiency = CALIBRATED, gpu=None) -> StepCoefficients:
    """:func:`step_coefficients` of the calibration set-up (Llama 3.1 8B, FP8 weights and KV, one GPU).

    >>> calibration_coefficients().compute_dtype
    'fp8'
    """
    s = CALIBRATION_SETUP
    return step_coefficients(s["model"], gpu or s["gpu"], tp=s["tp"], weights=s["weights"], kv_dtype=s["kv_dtype"], efficiency=efficiency)


def _predict(efficiency: Efficiency, rows, gpu=None) -> list[dict]:
    coef = calibration_coefficients(efficiency, gpu)
    kv = calibration_kv_tokens(gpu)
    out = []
    for isl, osl, published in rows:
        r = max_throughput(coef, input_tokens=isl, output_tokens=osl, kv_capacity_tokens=kv,
                           max_running=CALIBRATION_SETUP["max_running"])
        out.append({
            "gpu": coef.gpu_key,
            "input_tokens": isl,
            "output_tokens": osl,
            "batch": r["batch"],
            "bound": r["bound"],
            "published_tokens_per_s": published,
            "predicted_tokens_per_s": r["output_tokens_per_s"],
            "ratio": r["output_tokens_per_s"] / published,
        })
    return out


def calibration_report(efficiency: Efficiency = CALIBRATED, *, validation: bool = False) -> list[dict]:
    """Predicted against published tokens/s for the calibration row (or, with ``validation``, the held-out rows).

    Source: :data:`CALIBRATION_ROW`, :data:`VALIDATION_ROWS` (TensorRT-LLM perf-overview).

    >>> [round(r["ratio"], 2) for r in calibration_report()]
    [1.02, 0.96, 0.99, 1.05]
    """
    if not validation:
        return _predict(efficiency, CALIBRATION_ROW)
    out = []
    for gpu in sorted({r["gpu"] for r in VALIDATION_ROWS}):
        rows = [(r["input_tokens"], r["output_tokens"], r["tokens_per_s"]) for r in VALIDATION_ROWS if r["gpu"] == gpu]
        out.extend(_predict(efficiency, rows, gpu))
    return out


def calibrate(*, compute_grid=None, memory_grid=None, overhead_grid_s=None) -> dict:
    """Fit the three efficiency factors on :data:`CALIBRATION_ROW`, and only on it.

    A grid search minimising the sum of squared log ratios (predicted /
    published) over the row's four points: compute 0.20-1.00 and memory
    0.30-1.00 in steps of 0.01, step overhead 0-5 ms in steps of 0.25 ms. Returns
    the best :class:`Efficiency`, its loss and the per-point ratios. The stored
    :data:`CALIBRATED` is this result. (Under a second for the full grid.)

    >>> fit = calibrate(compute_grid=[0.50, 0.51], memory_grid=[0.76], overhead_grid_s=[0.0])
    >>> fit["efficiency"].compute, fit["efficiency"].memory
    (0.51, 0.76)
    """
    compute_grid = [i / 100 for i in range(20, 101)] if compute_grid is None else list(compute_grid)
    memory_grid = [i / 100 for i in range(30, 101)] if memory_grid is None else list(memory_grid)
    overhead_grid_s = [i * 0.00025 for i in range(0, 21)] if overhead_grid_s is None else list(overhead_grid_s)
    if not compute_grid or not memory_grid or not overhead_grid_s:
        raise CalcError("each calibration grid must hold at least one value; got an empty one", "grid")

    s = CALIBRATION_SETUP
    model = get_model(s["model"])
    kv = calibration_kv_tokens()
    # Precompute the work of each point once; only the efficiency factors vary in the search.
    base = step_coefficients(model, s["gpu"], tp=s["tp"], weights=s["weights"], kv_dtype=s["kv_dtype"],
                             efficiency=Efficiency(1.0, 1.0, 0.0))
    points = []
    for isl, osl, published in CALIBRATION_ROW:
        r = max_throughput(base, input_tokens=isl, output_tokens=osl, kv_capacity_tokens=kv, max_running=s["max_running"])
        linear_c = r["new_tokens"] * base.linear_flops_per_token / base.linear_flops_per_s
        attn_c = r["attention_token_pairs"] * base.attention_flops_per_pair / base.attention_flops_per_s
        weights_m = r["weights_s"]
        kv_m = r["kv_s"]
        points.append((linear_c, attn_c, weights_m, kv_m, r["batch"], published))

    best = None
    for c in compute_grid:
        for m in memory_grid:
            for o in overhead_grid_s:
                loss = math.fsum(
                    math.log((batch / (max(lc / c, wm / m) + max(ac / c, km / m) + o)) / published) ** 2
                    for lc, ac, wm, km, batch, published in points
                )
                if best is None or loss < best[0] - 1e-15:
                    best = (loss, c, m, o)
    loss, c, m, o = best
    efficiency = Efficiency(compute=c, memory=m, step_overhead_s=round(o, 6), source="calc.roofline.calibrate()")
    return {
        "efficiency": efficiency,
        "loss": loss,
        "ratios": [round_sig(r["ratio"], 4) for r in calibration_report(efficiency)],
    }


def roofline_points(model, gpu, *, tp: int = 1, weights: str = "bf16", batch: int, prompt_tokens: int,
                    context_tokens: int) -> dict:
    """The decode step and the prefill of one prompt on the roofline, per GPU.

    ``decode``: :func:`calc.roofline.decode_step` of ``batch`` sequences at
    ``context_tokens``; ``prefill``: :func:`calc.roofline.prefill_chunk` of the
    whole prompt. Each carries its FLOPs, bytes, intensity, time, bound, and
    ``attained_flops_per_s`` (FLOPs / modelled time). ``peak_flops_per_s`` and
    ``hbm_bytes_per_s`` are the datasheet roofs; ``ridge_flops_per_byte`` their
    ratio. Source: :mod:`calc.roofline`.

    >>> p = roofline_points("llama-3.1-70b", "h100-sxm-80gb", tp=4, batch=1, prompt_tokens=1024, context_tokens=1152)
    >>> round(p["ridge_flops_per_byte"]), round(p["decode"]["time_s"] * 1000, 1)
    (295, 15.3)
    """
    coef = step_coefficients(model, gpu, tp=tp, weights=weights)
    decode = decode_step(coef, batch=batch, context_tokens=context_tokens)
    prefill = prefill_chunk(coef, chunk_tokens=prompt_tokens)
    for step in (decode, prefill):
        step["attained_flops_per_s"] = step["flops"] / step["time_s"]
    return {
        "decode": decode, "prefill": prefill, "peak_flops_per_s": coef.linear_flops_per_s,
        "hbm_bytes_per_s": coef.hbm_bytes_per_s, "ridge_flops_per_byte": coef.linear_flops_per_s / coef.hbm_bytes_per_s,
        "compute_dtype": coef.compute_dtype, "weight_bytes_per_gpu": coef.weight_bytes_read(1),
    }


def bandwidth_wall_s(model, gpu, *, tp: int = 1, weights: str = "bf16", efficiency: float = 1.0) -> float:
    """The floor under any decode step: every GPU streams its share of the weights once, at ``efficiency`` x bandwidth.

    ``weights read per step / (HBM bandwidth x efficiency)``. The input embedding is looked up row by
    row, not streamed (:meth:`calc.roofline.StepCoefficients.weight_bytes_read`). Mistral-7B on one H100
    at the datasheet's 3.35 TB/s: 4.25 ms, so at most about 235 tokens/s for one sequence.
    Source: the roofline's memory roof (Williams et al. 2009); the workshop's example (Mistral-7B on one H100).

    >>> round(bandwidth_wall_s("mistral-7b", "h100-sxm-80gb") * 1000, 2)
    4.25
    """
    coef = step_coefficients(model, gpu, tp=tp, weights=weights)
    return coef.weight_bytes_read(1) / (coef.hbm_bytes_per_s * efficiency)


def max_kv_batch(model, gpu, *, tp: int = 1, weights: str = "bf16", context_tokens: int) -> int:
    """Sequences of ``context_tokens`` the replica's KV cache holds at once (vLLM's sizing, 90% of each GPU).

    Source: :func:`calc.memory.kv_capacity` with its defaults (it raises CalcError
    naming ``tp`` when the weights do not fit); window-capped by
    :func:`calc.memory.kv_tokens_per_request`.

    >>> max_kv_batch("mistral-7b", "h100-sxm-80gb", context_tokens=1152)
    361
    """
    model = get_model(model)
    cap = kv_capacity(model, gpu, tp=check_tp(model, tp), weights=weights)
    return cap.kv_cache_tokens // max(1, kv_tokens_per_request(model, context_tokens))


def batch_sweep(model, gpu, *, tp: int = 1, weights: str = "bf16", context_tokens: int,
                batches=(1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024)) -> list[dict]:
    """ITL (the decode step), tokens/s and the bound at each batch size that fits in the KV cache.

    Batches above :func:`max_kv_batch` are dropped and that largest batch is added
    as the last row (``fits_all``: the KV cache is full there). Source:
    :func:`decode_step`, :func:`max_kv_batch`.

    >>> rows = batch_sweep("mistral-7b", "h100-sxm-80gb", context_tokens=1152, batches=[1, 64, 1024])
    >>> [(r["batch"], round(r["itl_s"] * 1000, 2), round(r["tokens_per_s"])) for r in rows]
    [(1, 5.65, 177), (64, 9.38, 6820), (361, 31.61, 11422)]
    """
    coef = step_coefficients(model, gpu, tp=tp, weights=weights)
    limit = max_kv_batch(model, gpu, tp=tp, weights=weights, context_tokens=context_tokens)
    if limit < 1:
        raise CalcError(f"context_tokens: one sequence of {context_tokens:,} tokens does not fit in the KV cache of "
                        f"this replica; allowed: a shorter context, or more GPUs (tp)", "context_tokens")
    chosen = sorted({b for b in batches if b <= limit} | ({limit} if limit and limit < max(batches) else set()))
    rows = []
    for batch in chosen:
        d = decode_step(coef, batch=batch, context_tokens=context_tokens)
        rows.append({"batch": batch, "itl_s": d["time_s"], "tokens_per_s": batch / d["time_s"], "bound": d["bound"],
                     "weights_s": d["weights_s"], "kv_s": d["kv_s"],
                     "intensity_flops_per_byte": d["intensity_flops_per_byte"]})
    return rows


def cost_split(coef, *, batch: int, prompt_tokens: int, answer_tokens: int) -> dict:
    """One saturated decode step split into weights, the batch's KV, prefill work, and all-reduce + overhead (s).

    ``weights`` is the matmul time of the decode tokens alone (reading the weights,
    or their FLOPs when those take longer), ``kv`` the attention over the batch's KV
    cache, ``comm`` the tensor-parallel all-reduces and fixed overhead of that
    decode-only step, and ``prefill`` what the average prefill work scheduled into
    the step adds (``batch x prompt / answer`` tokens). They sum to the step time of
    :func:`calc.roofline.steady_state_step`. Source: :mod:`calc.roofline`.

    >>> from calc.lesson import coefficients
    >>> split = cost_split(coefficients(), batch=256, prompt_tokens=1024, answer_tokens=256)
    >>> {k: round(v * 1000, 1) for k, v in split.items()}
    {'weights': 17.6, 'kv': 9.5, 'prefill': 79.5, 'comm': 3.8, 'step': 110.5}
    """
    mixed = steady_state_step(coef, batch=batch, input_tokens=prompt_tokens, output_tokens=answer_tokens)
    context = prompt_tokens + answer_tokens // 2
    alone = decode_step(coef, batch=batch, context_tokens=context)
    comm = alone["comm_s"] + alone["overhead_s"]
    return {"weights": alone["gemm_s"], "kv": alone["attention_s"],
            "prefill": max(0.0, mixed["time_s"] - alone["time_s"]), "comm": comm, "step": mixed["time_s"]}
