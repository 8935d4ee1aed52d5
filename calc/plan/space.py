"""The search space: one :class:`Dimension` per lever, in a registry, so that adding a lever is one entry.

A dimension says which values it takes for a request (and for the choices made before it: TP depends on
the GPU and the model), how a value changes the simulator's scenario (:mod:`calc.sim.scenario` keys), how
``vllm serve`` spells it, and how to name it in a table. :func:`candidates` walks the registry in order
and yields every combination; the replica count is not a dimension, the screen solves for it
(:mod:`calc.plan.screen`).

The levers, as the lesson teaches them: the GPU; tensor parallelism inside a server (step 18) and, where the
model needs more than one server, pipeline parallelism across servers; weight precision (steps 7-8) and KV
precision (step 8); the running cap ``max_num_seqs`` and the token budget ``max_num_batched_tokens`` (steps 5
and 20); speculative decoding (steps 9-10); prefix caching (step 12), searched only when the traffic shares a
prefix; and aggregated serving or prefill and decode in separate pools with their P:D ratio (step 18).

>>> [d.name for d in DIMENSIONS]
['gpu', 'tp', 'pp', 'weights', 'kv_dtype', 'max_num_seqs', 'max_num_batched_tokens', 'speculation', 'prefix_caching', 'layout']
>>> from calc.plan.inputs import PlanRequest
>>> cands = list(candidates(PlanRequest(gpus=("h100-sxm-80gb",))))
>>> len(cands), label(cands[0])
(1536, 'H100 SXM 80GB x1 TP1, bf16 weights, bf16 KV, 64 running, 2,048-token steps')
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from calc.catalog import get_gpu, get_model
from calc.memory import allowed_tp, weights_bytes_per_gpu
from calc.plan.inputs import allowed_gpus
from calc.plan.prices import gpu_hour_price
from calc.speculative import EAGLE_LIKE

__all__ = ["Dimension", "DIMENSIONS", "BY_NAME", "GPUS_PER_SERVER", "RUNNING_CAPS", "TOKEN_BUDGETS",
           "PD_RATIOS", "one_server_holds", "candidates", "label", "key", "as_dict", "gpus_per_replica", "unpriced_gpus",
           "speculation_config", "complexity"]

#: GPUs in one server: an HGX/DGX H100 board holds eight SXM GPUs on one NVLink switch (NVIDIA DGX H100 user
#: guide); tensor parallelism stays inside it, pipeline parallelism crosses servers (vLLM's distributed
#: serving guide: "tensor parallel size = GPUs per node, pipeline parallel size = nodes").
GPUS_PER_SERVER = 8
#: ``max_num_seqs`` searched: vLLM's default 256, its quarter and half (tighter TPOT) and double.
RUNNING_CAPS = (64, 128, 256, 512)
#: ``max_num_batched_tokens`` searched: step 20's chat chunk (2,048) and vLLM's default budget (8,192).
TOKEN_BUDGETS = (2048, 8192)
#: Prefill : decode replica ratios searched for disaggregated serving (DistServe, OSDI 2024, sizes each
#: pool for its own phase; step 18's pool sizing).
PD_RATIOS = ((1, 1), (1, 2), (1, 3), (2, 1), (1, 4))


@dataclass(frozen=True)
class Dimension:
    """One lever of the search.

    ``values(request, chosen)`` gives the values to try given the choices of the dimensions before it
    (``chosen``, a dict); ``scenario(value)`` the simulator scenario keys it sets; ``vllm(value)`` the
    ``vllm serve`` arguments; ``text(value)`` a few words for a table ("" when it is the default).

    >>> BY_NAME["max_num_seqs"].vllm(128), BY_NAME["max_num_seqs"].scenario(128)
    (['--max-num-seqs', '128'], {'max_num_seqs': 128})
    """

    name: str
    values: Callable
    scenario: Callable
    vllm: Callable
    text: Callable
    doc: str = ""


def _gpus(request, chosen):
    return tuple(g for g in allowed_gpus(request) if gpu_hour_price(request, g) is not None)


def unpriced_gpus(request) -> tuple:
    """Allowed GPUs the plan cannot price (no listing, no price given, not owned): left out, with that reason.

    >>> from calc.plan.inputs import PlanRequest
    >>> unpriced_gpus(PlanRequest(gpus=("h100-sxm-80gb", "h200")))
    ('h200',)
    """
    return tuple(g for g in allowed_gpus(request) if gpu_hour_price(request, g) is None)


def _tps(request, chosen):
    model = get_model(request.model)
    return tuple(t for t in allowed_tp(model, GPUS_PER_SERVER))


def one_server_holds(request, gpu_key: str) -> bool:
    """Whether one server of ``gpu_key`` holds the model's weights in the lightest format searched.

    The widest TP inside a server is the largest the model's heads allow (Qwen2.5 7B's 28 heads: 4, not 8);
    the weights must leave a tenth of each GPU's memory.

    >>> from calc.plan.inputs import PlanRequest
    >>> big = PlanRequest(model="deepseek-v3", weights=("fp8",))
    >>> one_server_holds(big, "h100-sxm-80gb"), one_server_holds(big, "h200")
    (False, True)
    """
    model = get_model(request.model)
    widest_tp = max(allowed_tp(model, GPUS_PER_SERVER))
    lightest = min(weights_bytes_per_gpu(model, widest_tp, w) for w in request.weights)
    return lightest < 0.9 * get_gpu(gpu_key).memory_bytes("marketed")


def _pps(request, chosen):
    """1, unless no TP inside one server holds the weights (:func:`one_server_holds`): then 2 and 4 servers."""
    return (1,) if one_server_holds(request, chosen["gpu"]) else (2, 4)


def speculation_config(request):
    """The speculation the plan tries: the calibrated EAGLE-like drafter, at the request's acceptance if given.

    The default acceptance is :data:`calc.speculative.EAGLE_LIKE`'s (fitted to the published EAGLE-3 1.40x
    at batch 2 on one H100, SGLang; its ``source`` says so); acceptance on real traffic depends on the
    traffic, so it is an input.

    >>> from calc.plan.inputs import PlanRequest
    >>> speculation_config(PlanRequest()).acceptance == EAGLE_LIKE.acceptance
    True
    >>> speculation_config(PlanRequest(speculation_acceptance=0.8)).acceptance
    0.8
    """
    if request.speculation_acceptance is None:
        return EAGLE_LIKE
    return dataclasses.replace(EAGLE_LIKE, acceptance=request.speculation_acceptance, key="",
                               source=f"acceptance {request.speculation_acceptance:g} given in the request; "
                                      f"draft as {EAGLE_LIKE.key}: {EAGLE_LIKE.source}")


def _spec_scenario(value, request=None):
    return {"speculation": None} if value == "off" else {"speculation": "eagle-like"}


def _prefix(request, chosen):
    return (False, True) if request.shared_prefix_tokens() > 0 else (False,)


def _layouts(request, chosen):
    if chosen.get("pp", 1) > 1:
        return ("aggregated",)
    return ("aggregated",) + tuple(f"disaggregated {p}:{d}" for p, d in PD_RATIOS)


def _identity(name):
    return lambda value: {name: value}


DIMENSIONS: tuple[Dimension, ...] = (
    Dimension("gpu", _gpus, _identity("gpu"), lambda v: [], lambda v: get_gpu(v).name,
              "a catalog GPU with a price (listed, given or owned)"),
    Dimension("tp", _tps, _identity("tp"), lambda v: ["--tensor-parallel-size", str(v)], lambda v: f"TP{v}",
              "tensor-parallel GPUs inside one server"),
    Dimension("pp", _pps, lambda v: {} if v == 1 else {"pp": v},
              lambda v: [] if v == 1 else ["--pipeline-parallel-size", str(v)],
              lambda v: "" if v == 1 else f"PP{v}", "pipeline stages across servers (only when one server is too small)"),
    Dimension("weights", lambda r, c: tuple(r.weights), _identity("weights"),
              lambda v: [] if v in ("bf16", "fp16") else ["--quantization", {"int4": "awq", "nf4": "bitsandbytes"}.get(v, v)],
              lambda v: f"{v} weights", "weight precision"),
    Dimension("kv_dtype", lambda r, c: tuple(r.kv_dtypes), _identity("kv_dtype"),
              lambda v: [] if v in ("bf16", "fp16") else ["--kv-cache-dtype", v], lambda v: f"{v} KV",
              "KV cache precision"),
    Dimension("max_num_seqs", lambda r, c: RUNNING_CAPS, _identity("max_num_seqs"),
              lambda v: ["--max-num-seqs", str(v)], lambda v: f"{v} running", "the running cap"),
    Dimension("max_num_batched_tokens", lambda r, c: TOKEN_BUDGETS, _identity("max_num_batched_tokens"),
              lambda v: ["--max-num-batched-tokens", str(v)], lambda v: f"{v:,}-token steps",
              "the token budget of a step (chunked prefill)"),
    Dimension("speculation", lambda r, c: ("off", "eagle"), _spec_scenario,
              lambda v: [] if v == "off" else ["--speculative-config",
                                               '{"method": "eagle", "num_speculative_tokens": %d}' % EAGLE_LIKE.k],
              lambda v: "" if v == "off" else "EAGLE speculation", "speculative decoding"),
    Dimension("prefix_caching", _prefix, _identity("prefix_caching"),
              lambda v: ["--enable-prefix-caching"] if v else ["--no-enable-prefix-caching"],
              lambda v: "prefix caching" if v else "", "prefix caching (only when the traffic shares a prefix)"),
    Dimension("layout", _layouts, lambda v: {}, lambda v: [],
              lambda v: "" if v == "aggregated" else v.replace("disaggregated", "prefill/decode pools"),
              "prefill and decode on the same replicas, or in separate pools with a P:D ratio"),
)
BY_NAME = {d.name: d for d in DIMENSIONS}


def candidates(request):
    """Every combination of the registry's values for ``request``, as tuples of (name, value), in order.

    >>> from calc.plan.inputs import PlanRequest
    >>> first = next(candidates(PlanRequest(gpus=("h100-sxm-80gb",), model="llama-3.1-8b")))
    >>> as_dict(first)["tp"], as_dict(first)["layout"]
    (1, 'aggregated')
    """
    def walk(i, chosen):
        if i == len(DIMENSIONS):
            yield tuple(chosen.items())
            return
        dim = DIMENSIONS[i]
        for value in dim.values(request, chosen):
            chosen[dim.name] = value
            yield from walk(i + 1, chosen)
        chosen.pop(dim.name, None)

    yield from walk(0, {})


def as_dict(candidate) -> dict:
    """A candidate as a dict of dimension name -> value.

    >>> as_dict((("gpu", "l4"), ("tp", 2)))
    {'gpu': 'l4', 'tp': 2}
    """
    return dict(candidate)


def gpus_per_replica(candidate) -> int:
    """GPUs of one replica: TP x PP (a disaggregated pair counts its pools in :mod:`calc.plan.screen`).

    >>> gpus_per_replica((("tp", 8), ("pp", 2)))
    16
    """
    c = dict(candidate)
    return c.get("tp", 1) * c.get("pp", 1)


def label(candidate) -> str:
    """The candidate in words, leaving out the defaults ("aggregated", no speculation, no prefix caching).

    >>> label((("gpu", "h100-sxm-80gb"), ("tp", 4), ("weights", "fp8")))
    'H100 SXM 80GB x4 TP4, fp8 weights'
    """
    c = dict(candidate)
    head = f"{get_gpu(c['gpu']).name} x{gpus_per_replica(candidate)}"
    parts = []
    for name, value in candidate:
        if name == "gpu":
            continue
        text = BY_NAME[name].text(value)
        if text:
            parts.append(text)
    if parts and parts[0].startswith("TP"):
        head += " " + parts.pop(0)
    return ", ".join([head] + parts)


def complexity(candidate) -> int:
    """Moving parts beyond one engine per replica: separate pools, a drafter (at equal cost, fewer wins).

    >>> complexity((("speculation", "eagle"), ("layout", "disaggregated 1:2"))), complexity((("tp", 2),))
    (2, 0)
    """
    c = dict(candidate)
    return (c.get("layout", "aggregated") != "aggregated") + (c.get("speculation", "off") != "off")


def key(candidate) -> str:
    """A stable identifier of the candidate (sorting, JSON, permalinks): its values joined in registry order.

    >>> key((("gpu", "l4"), ("tp", 2), ("prefix_caching", False)))
    'l4/2/False'
    """
    return "/".join(str(v) for _, v in candidate)

