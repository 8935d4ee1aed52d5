"""What a scenario's model and GPUs give the simulator: KV blocks, step prices, FLOPs, dollars.

The simulator computes no hardware figure of its own. The KV cache comes from
:func:`calc.memory.kv_capacity` (vLLM's sizing: utilization x memory, less
weights, workspace and overhead, in blocks; the weights weighed as the scenario's
``parameter_count`` says: :func:`kv_sizing`), each engine step's time from
:func:`calc.roofline.step_coefficients` (the roofline calibrated on the
published TensorRT-LLM max-throughput rows, :data:`calc.roofline.CALIBRATION_ROW`, plus
the scenario's engine profile's fixed step terms, :mod:`calc.engine_profiles`), its
request cost from the same profile, FLOPs from the same coefficients, and the
price from the GPU catalog's dated listing unless the scenario gives one (no
price: cost is reported as null, never a made-up figure).

>>> from calc.sim.scenario import Scenario
>>> hw = replica_hardware(Scenario())
>>> hw.kv_cache_blocks, hw.kv_cache_tokens, hw.gpus, hw.price_usd_per_gpu_hour
(24965, 399440, 4, 3.78)
>>> replica_hardware(Scenario(parameter_count="lesson")).kv_cache_blocks   # the lesson's count: step 1's cache
24948
>>> round(hw.step_time_s(new_tokens=64, kv_tokens_read=80000, attention_token_pairs=80064, sequences=64) * 1000, 2)
28.91
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from calc import engine_profiles, lesson, memory, roofline
from calc.catalog import get_gpu, get_model
from calc.errors import CalcError

__all__ = ["ReplicaHardware", "replica_hardware", "kv_sizing", "step_pricer", "shared_step_pricer"]

#: Distinct ``new_tokens`` counts whose terms a pricer keeps (a step never computes more than its token budget).
_PRICER_MEMO = 1 << 16


def step_pricer(coefficients):
    """A function equal to ``coefficients.step_time_s`` for the simulator's integer sums, built for speed.

    ``price(new_tokens=, kv_tokens_read=, attention_token_pairs=, sequences=0)``: ``sequences`` is the
    count of sequences scheduled in the step (decoding ones and prefill chunks), which the engine's
    per-sequence term (:class:`calc.roofline.Efficiency` ``seq_overhead_s``) prices.
    The simulator prices every engine step, so this is its hottest call. The
    terms of :meth:`calc.roofline.StepCoefficients.breakdown` that depend on
    ``new_tokens`` alone (the matmuls' compute roof, the weights read, the
    tensor-parallel all-reduce) are computed once per distinct count by the
    roofline's own methods and kept; the KV and attention terms are the same
    expressions in the same order, so every result is the same float, bit for
    bit (tested against the roofline on every catalog replica). Arguments
    outside the roofline's range go to the roofline itself, which names the
    field. Source: :meth:`calc.roofline.StepCoefficients.breakdown`.

    >>> from calc.sim.scenario import Scenario
    >>> coef = replica_hardware(Scenario()).coefficients
    >>> price = step_pricer(coef)
    >>> args = dict(new_tokens=64, kv_tokens_read=80000, attention_token_pairs=80064)
    >>> price(**args) == coef.step_time_s(**args), round(price(**args) * 1000, 2)
    (True, 23.25)
    >>> price(sequences=64, **args) == coef.step_time_s(sequences=64, **args) == price.decode(64)(80000)
    True
    >>> price(sequences=-1, **args)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: sequences must be a whole number between 0 and 1e+12; got -1
    """
    c = coefficients
    eff = c.efficiency
    attention_roof = c.attention_flops_per_s * eff.compute
    bandwidth = c.hbm_bytes_per_s * eff.memory
    per_pair = c.attention_flops_per_pair
    kv_bytes = c.kv_bytes_per_token
    overhead_s = c.overhead_s()  # the engine's fixed step terms, as breakdown adds them
    per_seq_s = eff.seq_overhead_s  # and its per-sequence term: overhead_s + per_seq_s * sequences, as overhead_s(n)
    top = roofline.MAX_TOKENS
    terms: dict[int, tuple] = {}  # new_tokens -> (linear compute s, weights s, all-reduce s)
    exact = c.step_time_s

    def new_token_terms(new_tokens):
        linear = new_tokens * c.linear_flops_per_token / (c.linear_flops_per_s * eff.compute)
        weights_s = c.weight_bytes_read(new_tokens) / bandwidth
        found = (linear, weights_s, c.comm_s(new_tokens))
        if len(terms) < _PRICER_MEMO:
            terms[new_tokens] = found
        return found

    def positional(new_tokens, kv_tokens_read, attention_token_pairs, sequences=0):
        found = terms.get(new_tokens)
        if found is None:
            if not (type(new_tokens) is int and 0 <= new_tokens <= top):
                return exact(new_tokens=new_tokens, kv_tokens_read=kv_tokens_read,
                             attention_token_pairs=attention_token_pairs, sequences=sequences)
            found = new_token_terms(new_tokens)
        if not (0 <= kv_tokens_read <= top and 0 <= attention_token_pairs <= top and 0 <= sequences <= top) \
                or type(kv_tokens_read) is not int or type(attention_token_pairs) is not int \
                or type(sequences) is not int:
            return exact(new_tokens=new_tokens, kv_tokens_read=kv_tokens_read,
                         attention_token_pairs=attention_token_pairs, sequences=sequences)
        linear, weights_s, comm_s = found
        attention = attention_token_pairs * per_pair / attention_roof
        kv_s = (kv_tokens_read + new_tokens) * kv_bytes / bandwidth if new_tokens else 0.0
        a = linear if linear >= weights_s else weights_s  # max(), as breakdown takes it (the first of equals)
        b = attention if attention >= kv_s else kv_s
        return a + b + comm_s + (overhead_s + per_seq_s * sequences)

    def decode(n):
        """The price of a decode-only step of ``n`` sequences as a function of their context: ``f(ctx)``.

        Such a step computes ``n`` tokens of ``n`` sequences and reads and attends to ``ctx`` tokens:
        ``positional(n, ctx, ctx, n)``.
        """
        if not (type(n) is int and 0 < n <= top):
            return lambda ctx: positional(n, ctx, ctx, n)
        linear, weights_s, comm_s = terms.get(n) or new_token_terms(n)
        gemm = linear if linear >= weights_s else weights_s
        overhead_n = overhead_s + per_seq_s * n  # the step's engine terms for its n sequences

        def at(ctx):
            if not (type(ctx) is int and 0 <= ctx <= top):
                return positional(n, ctx, ctx, n)
            attention = ctx * per_pair / attention_roof
            kv_s = (ctx + n) * kv_bytes / bandwidth
            return gemm + (attention if attention >= kv_s else kv_s) + comm_s + overhead_n
        return at

    def step_time_s(*, new_tokens, kv_tokens_read, attention_token_pairs, sequences=0):
        return positional(new_tokens, kv_tokens_read, attention_token_pairs, sequences)

    # For the engine's decode-only steps: the same function without keywords, and one per batch size.
    step_time_s.positional = positional
    step_time_s.decode = decode
    step_time_s.takes_sequences = True  # the engine passes each step's sequence count (a test's stand-in may not take it)
    return step_time_s


@dataclass(frozen=True)
class ReplicaHardware:
    """The figures one replica of a scenario runs on.

    ``step_time_s`` is the roofline's bound method; ``flops(new_tokens,
    attention_token_pairs)`` FLOPs per GPU; ``peak_flops_per_s`` one GPU's dense
    peak in the compute dtype of the weights; ``engine`` the engine profile whose
    step terms the coefficients carry and ``request_overhead_s`` its time between a
    request's send and the moment the engine can schedule it
    (:func:`calc.engine_profiles.request_overhead_s`). Sources: see :func:`replica_hardware`.

    >>> from calc.sim.scenario import Scenario
    >>> hw = replica_hardware(Scenario.from_dict({"model": "llama-3.1-8b", "tp": 1}))
    >>> hw.peak_flops_per_s, round(hw.flops(1, 0) / 1e9, 2)
    (989000000000000.0, 15.01)
    """

    model_name: str
    gpu_name: str
    gpus: int
    kv_cache_blocks: int
    kv_cache_tokens: int
    kv_bytes_per_token_per_gpu: int
    weights_bytes_per_gpu: float
    coefficients: object
    peak_flops_per_s: float
    price_usd_per_gpu_hour: float | None
    price_source: str | None
    engine: str = "vllm"
    request_overhead_s: float = 0.0

    def step_time_s(self, *, new_tokens: int, kv_tokens_read: int, attention_token_pairs: int,
                    sequences: int = 0) -> float:
        """One engine step in seconds: :meth:`calc.roofline.StepCoefficients.step_time_s` (via :func:`step_pricer`)."""
        return self.price_step(new_tokens=new_tokens, kv_tokens_read=kv_tokens_read,
                               attention_token_pairs=attention_token_pairs, sequences=sequences)

    @property
    def price_step(self):
        """This replica's :func:`step_pricer`, shared by every run on the same coefficients (its memo too)."""
        price = self.__dict__.get("_price_step")
        if price is None:
            price = shared_step_pricer(self.coefficients)
            object.__setattr__(self, "_price_step", price)
        return price

    def flops(self, new_tokens: int, attention_token_pairs: int) -> float:
        """FLOPs per GPU for that many new tokens and attention pairs (:meth:`calc.roofline.StepCoefficients.flops`)."""
        return self.coefficients.flops(new_tokens=new_tokens, attention_token_pairs=attention_token_pairs)


_PRICERS: dict = {}  # StepCoefficients -> its step_pricer: runs on the same replica share the memoized terms


def shared_step_pricer(coefficients):
    """The :func:`step_pricer` of ``coefficients``, one per distinct coefficients (runs on the same replica share its memo).

    >>> from calc.roofline import step_coefficients
    >>> coef = step_coefficients("llama-3.1-8b", "h100-sxm-80gb")
    >>> shared_step_pricer(coef) is shared_step_pricer(coef)
    True
    """
    try:
        price = _PRICERS.get(coefficients)
    except TypeError:  # not hashable: a pricer of its own
        return step_pricer(coefficients)
    if price is None:
        if len(_PRICERS) >= 64:
            _PRICERS.clear()
        price = _PRICERS[coefficients] = step_pricer(coefficients)
    return price


def kv_sizing(scenario) -> memory.KVCapacity:
    """The KV sizing of ``scenario``'s replica, as the simulator takes it (whatever ``kv_cache_tokens`` says).

    :func:`calc.memory.kv_capacity` of the scenario's model, GPUs, precision and
    memory settings, with the weights weighed as ``parameter_count`` says:
    "exact", every tensor of the model's shape; "lesson", 16-bit weights with the
    parameter count rounded to 3 significant digits and formats with scales
    tensor by tensor (:func:`calc.lesson.weighs_rounded`, the counts every lesson
    page quotes). For the running example the lesson's count gives step 1's
    399,169 tokens (:data:`calc.lesson.KV_CAPACITY_TOKENS`), of which the
    simulator's whole 16-token blocks hold 399,168; the exact count 399,452 and 399,440.

    >>> from calc.sim.scenario import Scenario
    >>> lesson_count = kv_sizing(Scenario(parameter_count="lesson"))
    >>> lesson_count.kv_cache_tokens_raw, lesson_count.kv_cache_blocks, lesson_count.kv_cache_tokens
    (399169, 24948, 399168)
    >>> kv_sizing(Scenario()).kv_cache_tokens_raw, kv_sizing(Scenario(parameter_count="lesson", weights="fp8")).kv_cache_tokens_raw
    (399452, 608266)

    ``memory_basis`` "engine" sizes the cache as the scenario's engine does (:mod:`calc.engine_memory`:
    CUDA's total, the activation peak of a step of ``max_num_batched_tokens`` with ``max_num_seqs``
    sequences, the engine's sizing rule):

    >>> eng = kv_sizing(Scenario(model="llama-3.1-8b", tp=1, gpu="rtx-3090", memory_basis="engine",
    ...                          max_num_batched_tokens=2048, max_model_len=8192))
    >>> eng.memory_basis, eng.kv_cache_tokens, kv_sizing(Scenario(model="llama-3.1-8b", tp=1, gpu="rtx-3090",
    ...                                                   max_model_len=8192)).kv_cache_tokens
    ('engine', 45024, 19360)
    """
    model = get_model(scenario.model)
    weights_bytes = None  # calc.memory weighs every tensor
    if lesson.weighs_rounded(scenario.weights, scenario.parameter_count):
        weights_bytes = lesson.rounded_weights_bytes_per_gpu(model, scenario.tp, scenario.weights)
    engine_terms = {}
    if scenario.memory_basis == "engine":  # memory as the scenario's engine profiles it (calc.engine_memory)
        profile = engine_profiles.get_profile(getattr(scenario, "engine", engine_profiles.DEFAULT_ENGINE))
        engine_terms = dict(memory_model=profile.memory_model, max_num_batched_tokens=scenario.max_num_batched_tokens,
                            max_num_seqs=scenario.max_num_seqs)
    return memory.kv_capacity(model, scenario.gpu, tp=scenario.tp, weights=scenario.weights,
                              kv_dtype=scenario.kv_dtype, gpu_memory_utilization=scenario.gpu_memory_utilization,
                              block_size=scenario.block_size, memory_basis=scenario.memory_basis,
                              max_model_len=scenario.max_model_len, weights_bytes=weights_bytes, **engine_terms)


def replica_hardware(scenario) -> ReplicaHardware:
    """Resolve ``scenario``'s model, GPU, precision and memory settings into :class:`ReplicaHardware`.

    ``kv_cache_tokens`` in the scenario overrides the computed capacity (whole
    blocks; otherwise :func:`kv_sizing`). ``weights_bytes_per_gpu`` is what a new
    replica loads, every tensor of the checkpoint whatever ``parameter_count``
    (the autoscaler's load time). Sources: :func:`calc.memory.kv_capacity`,
    :func:`calc.roofline.step_coefficients`, the GPU catalog's price.

    ``frontend`` "offline" leaves the engine's per-sequence step term out (:func:`calc.engine_profiles.efficiency_for`).

    >>> from calc.sim.scenario import Scenario
    >>> replica_hardware(Scenario.from_dict({"weights": "fp8"})).kv_cache_tokens   # fp8 weights leave more KV room
    608256
    >>> served, offline = (replica_hardware(Scenario.from_dict({"frontend": f})) for f in ("api-server", "offline"))
    >>> args = dict(new_tokens=64, kv_tokens_read=80000, attention_token_pairs=80064, sequences=64)
    >>> round((served.step_time_s(**args) - offline.step_time_s(**args)) / 64 * 1e6)   # per sequence, us
    88
    >>> one = dict(new_tokens=1, kv_tokens_read=1000, attention_token_pairs=1000, sequences=1)
    >>> tp2, ep2 = (replica_hardware(Scenario.from_dict({"model": "mixtral-8x7b", "tp": 2, "expert_parallel": ep}))
    ...             for ep in (False, True))
    >>> round(tp2.step_time_s(**one) * 1000, 2), round(ep2.step_time_s(**one) * 1000, 2)  # a decode token waits for the busiest GPU
    (7.98, 10.03)
    """
    model = get_model(scenario.model)
    gpu = get_gpu(scenario.gpu)
    # The simulator prices the engine, not only the GPU: the roofline plus the engine's fixed terms
    # (calc.engine_profiles). The lesson's roofline pages keep the pure roofline (calc.roofline.CALIBRATED).
    profile = engine_profiles.get_profile(getattr(scenario, "engine", engine_profiles.DEFAULT_ENGINE))
    # The per-sequence term is the serving path's (streaming each token to its client): an offline scenario
    # (LLM.generate, benchmark_throughput) prices its steps without it (calc.engine_profiles.efficiency_for).
    frontend = getattr(scenario, "frontend", engine_profiles.DEFAULT_FRONTEND)
    coef = engine_profiles.engine_coefficients(model, gpu, tp=scenario.tp, weights=scenario.weights,
                                               kv_dtype=scenario.kv_dtype, engine=profile.key, frontend=frontend)
    if getattr(scenario, "expert_parallel", False):  # whole experts per GPU (calc.moe; checked by Scenario.check)
        coef = dataclasses.replace(coef, expert_parallel=True)
    per_token_gpu = memory.kv_bytes_per_token_per_gpu(model, scenario.tp, scenario.kv_dtype)
    weights_gpu = memory.weights_bytes_per_gpu(model, scenario.tp, scenario.weights)
    if scenario.kv_cache_tokens is not None:
        blocks = scenario.kv_cache_tokens // scenario.block_size
        if blocks < 1:
            raise CalcError(f"kv_cache_tokens must hold at least one block of {scenario.block_size} tokens; got "
                            f"{scenario.kv_cache_tokens}", "kv_cache_tokens")
    else:
        blocks = kv_sizing(scenario).kv_cache_blocks
    if scenario.gpu_price_usd_per_hour is not None:
        price, source = scenario.gpu_price_usd_per_hour, "given in the scenario"
    elif gpu.price_usd_per_hour is not None:
        price, source = gpu.price_usd_per_hour, gpu.price_source
    else:
        price, source = None, None
    return ReplicaHardware(
        model_name=model.name, gpu_name=gpu.name, gpus=scenario.tp, kv_cache_blocks=blocks,
        kv_cache_tokens=blocks * scenario.block_size, kv_bytes_per_token_per_gpu=per_token_gpu,
        weights_bytes_per_gpu=weights_gpu, coefficients=coef, peak_flops_per_s=coef.linear_flops_per_s,
        price_usd_per_gpu_hour=price, price_source=source, engine=profile.key,
        request_overhead_s=engine_profiles.request_overhead_s(profile, coef))
