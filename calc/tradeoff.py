"""The serving trade-off triangle: throughput against latency for each weight format, from simulated runs.

Each point is the simulator's replica (:mod:`calc.sim`) run with a cap on
running sequences; the frontier is throughput against median ITL per format, and
the corners of the triangle are what a latency target leaves."""

from __future__ import annotations

from functools import lru_cache

from calc.errors import check_choice, check_range
from calc.sim import Scenario, simulate

__all__ = ["REPLICAS", "FORMATS", "CAPS", "RUN_MULTIPLE", "MIN_REQUESTS", "frontier", "best_under", "corners"]


#: The replicas offered: the running example, and the 8B model whose int4 accuracy cost is larger.
REPLICAS = {
    "llama-3.1-70b": {"model": "llama-3.1-70b", "gpu": "h100-sxm-80gb", "tp": 4, "label": "Llama 3.1 70B, 4 × H100"},
    "llama-3.1-8b": {"model": "llama-3.1-8b", "gpu": "h100-sxm-80gb", "tp": 1, "label": "Llama 3.1 8B, 1 × H100"},
}


FORMATS = ("bf16", "fp8", "int4")


CAPS = (1, 4, 16, 64, 256)


#: Sequences per run, as multiples of the cap: enough for the batch to fill and drain a few times.
RUN_MULTIPLE, MIN_REQUESTS = 4, 4


def _check_replica(replica: str) -> dict:
    return REPLICAS[check_choice("replica", replica, tuple(REPLICAS))]


@lru_cache(maxsize=32)
def _point(replica: str, weights: str, cap: int) -> dict:
    spec = _check_replica(replica)
    requests = max(RUN_MULTIPLE * cap, MIN_REQUESTS)
    scenario = {"model": spec["model"], "gpu": spec["gpu"], "tp": spec["tp"], "weights": weights, "max_num_seqs": cap,
                "workload": {"arrival": "all-at-once", "requests": requests}}
    summary = simulate(Scenario.from_dict(scenario)).summary
    return {"weights": weights, "max_num_seqs": cap, "requests": requests,
            "tokens_per_s": summary["throughput_output_tokens_per_s"], "itl_p50_s": summary["itl_p50_s"],
            "itl_p99_s": summary["itl_p99_s"], "usd_per_million": summary["cost_usd_per_million_output_tokens"]}


def frontier(replica: str = "llama-3.1-70b", *, weights=FORMATS, caps=CAPS) -> dict[str, list[dict]]:
    """Throughput against ITL for each weight format, one simulated run per cap on running sequences.

    Each run offers ``4 x cap`` requests of the running example (1,024 tokens in,
    256 out) at once and measures output tokens/s and the median inter-token
    latency; cost per million output tokens uses the catalog's dated GPU price.
    Source: :func:`calc.sim.simulate` (steps priced on :mod:`calc.roofline`).

    >>> f = frontier("llama-3.1-8b", weights=("bf16", "fp8"), caps=(16,))
    >>> f["fp8"][0]["tokens_per_s"] > f["bf16"][0]["tokens_per_s"]
    True
    """
    _check_replica(replica)
    out = {}
    for fmt in weights:
        out[fmt] = [_point(replica, fmt, check_range("max_num_seqs", cap, 1, 4096, integer=True)) for cap in caps]
    return out


def best_under(points: list[dict], itl_target_s: float) -> dict | None:
    """The highest-throughput point whose median ITL meets ``itl_target_s`` (None if none does).

    >>> best_under([{"tokens_per_s": 10, "itl_p50_s": 0.01}, {"tokens_per_s": 50, "itl_p50_s": 0.03}], 0.02)
    {'tokens_per_s': 10, 'itl_p50_s': 0.01}
    """
    ok = [p for p in points if p["itl_p50_s"] <= itl_target_s]
    return max(ok, key=lambda p: p["tokens_per_s"]) if ok else None


def corners(replica: str, itl_target_s: float) -> dict[str, dict | None]:
    """The triangle's three corners for an ITL target: which two you get, and what the third costs.

    * ``latency_quality``: bf16, the best point meeting the target (throughput paid);
    * ``throughput_quality``: bf16 at the largest cap (latency paid);
    * ``latency_throughput``: the fastest lower-bit format meeting the target (quality paid).
    Source: :func:`frontier`, :func:`best_under`.

    >>> c = corners("llama-3.1-70b", 0.025)
    >>> c["latency_quality"]["max_num_seqs"], c["latency_throughput"]["weights"]
    (16, 'fp8')
    """
    f = frontier(replica)
    low_bits = [best_under(f[fmt], itl_target_s) for fmt in FORMATS if fmt != "bf16"]
    low_bits = [p for p in low_bits if p is not None]
    return {
        "latency_quality": best_under(f["bf16"], itl_target_s),
        "throughput_quality": max(f["bf16"], key=lambda p: p["tokens_per_s"]),
        "latency_throughput": max(low_bits, key=lambda p: p["tokens_per_s"]) if low_bits else None,
    }
