"""The golden scenarios of calc.sim: small runs covering every engine feature, with their stored results.

``tests/sim/golden/<name>.json`` holds ``{"scenario": ..., "summary": ..., "time_series": ...}``.
The tests rerun each scenario and require the same JSON, byte for byte, in CPython
and in Pyodide. After an intended change of the model, regenerate them and review the diff:

    .venv/bin/python -m tests.sim.goldens
"""

from __future__ import annotations

import json
import os

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "golden")

SCENARIOS = {
    "lesson_poisson": {
        "name": "the lesson's replica at 8 requests/s",
        "workload": {"arrival": "poisson", "rate_per_s": 8, "requests": 300},
    },
    "chat_contiguous_2048": {
        "name": "ShareGPT-like chat, 2,048 maximum, contiguous reservation (Orca Max)",
        "model": "llama-3.1-8b", "gpu": "a100-40gb", "tp": 1, "max_model_len": 2048, "allocation": "contiguous",
        "workload": {"arrival": "poisson", "rate_per_s": 8, "requests": 400, "lengths": "chat"},
    },
    "chat_paged_2048": {
        "name": "ShareGPT-like chat, 2,048 maximum, paged",
        "model": "llama-3.1-8b", "gpu": "a100-40gb", "tp": 1, "max_model_len": 2048,
        "workload": {"arrival": "poisson", "rate_per_s": 8, "requests": 400, "lengths": "chat"},
    },
    "classes_prefix_cache_bursty": {
        "name": "three request classes, a 2,500-token system prompt, prefix caching, bursty traffic",
        "prefix_caching": True, "max_model_len": 16384, "max_num_batched_tokens": 16384,
        "workload": {"arrival": "bursty", "rate_per_s": 4, "burstiness": 4, "requests": 300, "classes": [
            {"name": "chat", "share": 0.7, "lengths": "chat", "prefix_tokens": 2500, "prefix_variants": 2},
            {"name": "document", "share": 0.2, "lengths": "lognormal", "prompt_tokens": 6000, "output_tokens": 300},
            {"name": "batch", "share": 0.1, "prompt_tokens": 500, "output_tokens": 800},
        ]},
    },
    "speculation_8b": {
        "name": "EAGLE-like speculation on Llama 3.1 8B, one H100",
        "model": "llama-3.1-8b", "tp": 1, "speculation": "eagle-like",
        "workload": {"arrival": "poisson", "rate_per_s": 4, "requests": 200, "prompt_tokens": 512, "output_tokens": 128},
    },
    "static_batching_8b": {
        "name": "static batches of 8 (a plain generate loop) on Llama 3.1 8B",
        "model": "llama-3.1-8b", "tp": 1, "batching": "static", "static_batch_size": 8,
        "workload": {"arrival": "poisson", "rate_per_s": 2, "requests": 150, "lengths": "chat"},
    },
    "closed_loop_chat": {
        "name": "a closed loop of 24 clients (benchmark_serving --max-concurrency 24), ShareGPT-like chat, "
                "a 5 ms request overhead, 0.2 s of think time, a small KV cache that preempts",
        "kv_cache_tokens": 12000, "request_overhead_s": 0.005,
        "workload": {"arrival": "closed-loop", "concurrency": 24, "think_time_s": 0.2, "requests": 240,
                     "lengths": "chat"},
    },
    "no_chunked_prefill_small_kv": {
        "name": "prefill-only steps and a KV cache small enough to preempt",
        "kv_cache_tokens": 60000, "chunked_prefill": False,
        "workload": {"arrival": "all-at-once", "requests": 200, "lengths": "lognormal"},
    },
}

for _case in SCENARIOS.values():
    _case.setdefault("max_time_series_points", 40)


def run_case(name: str) -> dict:
    """The full result of golden scenario ``name`` as JSON-ready data."""
    from calc.sim import Scenario, simulate

    return simulate(Scenario.from_dict(SCENARIOS[name])).to_dict()


def path(name: str) -> str:
    return os.path.join(HERE, f"{name}.json")


def dumps(result: dict) -> str:
    """The canonical text of a result (what is stored and compared)."""
    return json.dumps(result, indent=1, sort_keys=True) + "\n"


def regenerate() -> None:
    for name in SCENARIOS:
        with open(path(name), "w", encoding="utf-8") as handle:
            handle.write(dumps(run_case(name)))
        print("wrote", path(name))


if __name__ == "__main__":
    regenerate()
