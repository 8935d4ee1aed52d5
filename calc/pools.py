"""Step 20's fix as data: the incident's traffic served by three pools (chat, documents, batch) or by one shared pool.

The preset ``step20-pools`` (``calc/sim/presets/``) splits the fleet of step 19
(:mod:`calc.incident`) into pools with their own routers, chunk sizes and
autoscalers; :func:`comparison` runs both layouts on the same traffic.
"""

from __future__ import annotations

import copy
import functools

from calc.errors import check_choice, check_range
from calc.incident import incident_run, incident_scenario
from calc.sim import presets
from calc.sim.fleet import FleetScenario, simulate_fleet

__all__ = ["fix_scenario", "fix_run", "comparison", "comparison_row", "isolation_gain", "hours_ratio", "pool_sizing",
           "first_scale_up_s", "THIN_CHAT_SHARE", "PRESET", "LAYOUTS", "COMPARED", "DOCUMENT_HEADROOM_REPLICAS",
           "POOLED_REPLICAS"]


PRESET = "step20-pools"


LAYOUTS = (("pools", "three pools: chat, documents, batch"), ("shared", "one shared pool"))


DOCUMENT_HEADROOM_REPLICAS = 2  # the documents' autoscaler may add this many replicas (the preset: 2 up to 4)


def _pool(data: dict, name: str) -> dict:
    return next(p for p in data["fleet"]["pools"] if p["name"] == name)


def fix_scenario(*, layout: str = "pools", shared_replicas: int = 3, chat_replicas: int = 3,
                 document_replicas: int = 2, batch_replicas: int = 1, chat_chunk_tokens: int = 2048,
                 document_share: float | None = None, seed: int = 3) -> dict:
    """The incident's traffic on the chosen layout, as a scenario dict.

    ``shared``: the incident's fleet (:func:`~calc.incident.incident_scenario`)
    with ``shared_replicas`` replicas. ``pools``: the preset ``step20-pools`` with
    the reader's replica counts; the chat pool's prefill chunk
    (``max_num_batched_tokens``) is ``chat_chunk_tokens``; the documents' pool
    scales on its queue from ``document_replicas`` up to two more. Source: the
    presets ``step19-incident-p99`` and ``step20-pools`` (the lesson's steps 19-20).

    >>> pools = fix_scenario(document_replicas=1, chat_chunk_tokens=4096)["fleet"]["pools"]
    >>> pools[0]["max_num_batched_tokens"], pools[1]["autoscaler"]["min_replicas"], pools[1]["autoscaler"]["max_replicas"]
    (4096, 1, 3)
    >>> fix_scenario(layout="both")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: layout must be one of pools, shared; got 'both'
    """
    check_choice("layout", layout, tuple(key for key, _ in LAYOUTS))
    if layout == "shared":
        return incident_scenario(seed=seed, document_share=document_share,
                                 replicas=check_range("shared_replicas", shared_replicas, 1, 16, integer=True))
    data = copy.deepcopy(presets.load_data(PRESET))
    for meta_key in ("lesson_step", "title"):
        data.pop(meta_key, None)
    data["seed"] = check_range("seed", seed, 0, 2**31 - 1, integer=True)
    # The same surge mix as the incident's page, from the same function.
    data["fleet"]["traffic"] = incident_scenario(document_share=document_share)["fleet"]["traffic"]
    chat = _pool(data, "chat")
    chat["replicas"] = check_range("chat_replicas", chat_replicas, 1, 16, integer=True)
    chat["max_num_batched_tokens"] = check_range("chat_chunk_tokens", chat_chunk_tokens, 256, 65_536, integer=True)
    docs = _pool(data, "documents")
    docs["replicas"] = check_range("document_replicas", document_replicas, 1, 16, integer=True)
    docs["autoscaler"]["min_replicas"] = docs["replicas"]
    docs["autoscaler"]["max_replicas"] = docs["replicas"] + DOCUMENT_HEADROOM_REPLICAS
    _pool(data, "batch")["replicas"] = check_range("batch_replicas", batch_replicas, 1, 16, integer=True)
    return data


@functools.lru_cache(maxsize=32)
def fix_run(layout: str = "pools", shared_replicas: int = 3, **changes):
    """A layout run to its end (cached): its summary. ``changes`` are other :func:`fix_scenario` arguments.

    >>> fix_run("shared", 3)["ttft_p99_s"] == presets.run("step19-incident-p99").summary["ttft_p99_s"]
    True
    """
    if layout == "shared" and set(changes) <= {"document_share", "seed"}:  # step 19's runs: share its cache
        return incident_run(replicas=shared_replicas, **changes).summary
    scenario = fix_scenario(layout=layout, shared_replicas=shared_replicas, **changes)
    return simulate_fleet(FleetScenario.from_dict(scenario)).summary


#: The pooled layout's warm replicas (the preset's pools: chat + documents + batch). Chat needs three: with the
#: per-sequence step cost a replica of the running example saturates near 6.7 chat requests/s (step 14's
#: capacity), and chat arrives at 14.7/s, so two replicas would queue chat as the incident did. Two warm
#: replicas prefill the surge's documents (about 1.3 replicas' worth at 8% of 15 requests/s).
POOLED_REPLICAS = sum(p["replicas"] for p in presets.load_data(PRESET)["fleet"]["pools"])

#: The layouts the page compares: (key, label, layout, shared replicas). ``shared_same`` is one pool with as many
#: replicas as the pools run, the fair comparison for what the split buys beyond the extra GPUs.
COMPARED = (
    ("shared3", "One pool, 3 replicas (the incident)", "shared", 3),
    ("shared4", "One pool, 4 replicas", "shared", 4),
    ("shared_same", f"One pool, {POOLED_REPLICAS} replicas", "shared", POOLED_REPLICAS),
    ("pools", "Three pools: " + " + ".join(str(p["replicas"]) for p in presets.load_data(PRESET)["fleet"]["pools"])
     + " replicas", "pools", 3),
)


def comparison() -> list[dict]:
    """Each compared layout's headline numbers: latency overall and per class, preemptions, replica-hours, cost.

    >>> rows = comparison()
    >>> [r["key"] for r in rows], rows[-1]["replicas"], rows[-1]["preemptions"]
    (['shared3', 'shared4', 'shared_same', 'pools'], 6, 0)
    """
    return [comparison_row(key) for key, _, _, _ in COMPARED]


def comparison_row(key: str) -> dict:
    """One row of :func:`comparison`, running only its layout (``key`` is one of :data:`COMPARED`).

    >>> comparison_row("shared3")["replicas"], comparison_row("pools")["pools"]["documents"]["name"]
    (3, 'documents')
    """
    keys = [k for k, _, _, _ in COMPARED]
    check_choice("key", key, keys)
    _, label, layout, replicas = COMPARED[keys.index(key)]
    s = fix_run(layout, replicas)
    by_class = {c["name"]: c for c in s["classes"]}
    return {
        "key": key, "label": label, "replicas": s["replicas_max"], "replica_hours": s["replica_hours"],
        "cost_usd": s["cost_usd"], "usd_per_million_output": s["cost_usd_per_million_output_tokens"],
        "ttft_p99_s": s["ttft_p99_s"], "chat_ttft_p99_s": by_class["chat"]["ttft_p99_s"],
        "document_ttft_p99_s": by_class["document"]["ttft_p99_s"],
        "batch_ttft_p99_s": by_class["batch"]["ttft_p99_s"], "itl_p99_s": s["itl_p99_s"],
        "preemptions": s["preemptions"], "queue_depth_max": s["queue_depth_max"],
        "pools": {p["name"]: p for p in s["pools"]},
    }


def isolation_gain() -> float:
    """Chat's TTFT p99 on one shared pool of the pools' replica count over chat's in its own pool (what the split
    buys beyond the extra GPUs: :func:`layouts_that_end_it`'s ``chat_gain``).

    >>> round(isolation_gain(), 1)
    1.5
    """
    return comparison_row("shared_same")["chat_ttft_p99_s"] / comparison_row("pools")["chat_ttft_p99_s"]


def hours_ratio() -> float:
    """The pools' replica-hours over the incident's one pool of three (what the fix costs in GPU time).

    >>> round(hours_ratio(), 1)
    1.9
    """
    return comparison_row("pools")["replica_hours"] / comparison_row("shared3")["replica_hours"]


#: The try-this's too-small chat pool holds at most this share of the replicas' worth chat needs, so it is short
#: by capacity, not by a rounding of it: after the joint fit one replica fewer than the preset's pool carries 99%
#: of chat's need (2 replicas for 2.02) and queues only a little.
THIN_CHAT_SHARE = 0.9


@functools.lru_cache(maxsize=1)
def pool_sizing() -> dict:
    """What sizes step 20's pools, from the preset and the roofline (no run): each class's rate in the surge,
    its prefill load in replicas' worth, chat's capacity per replica (step 14's saturation point: prefill alone
    would size the pool too small), the chunk sizes' prefill times, the documents' scale-up delay, and how
    many requests of each class the running example's KV cache holds.

    ``thin_chat_replicas`` is the most replicas clearly short of chat's need outside the surge
    (:data:`THIN_CHAT_SHARE` of it, at least one). Sources: :func:`calc.incident.prefill_tokens_per_s`,
    :func:`calc.gpu_util.replica_capacity_rps`, :func:`calc.roofline.prefill_chunk`,
    :func:`calc.sim.autoscaler.scale_up_delay_ns`.

    >>> z = pool_sizing()
    >>> z["chat_kv_fit"], z["doc_kv_fit"], z["surge_start_s"], z["surge_end_s"], z["thin_chat_replicas"]
    (311, 20, 60, 120, 1)
    """
    import math

    from calc import lesson
    from calc.allocation import contiguous_max_concurrency
    from calc.catalog import get_model
    from calc.gpu_util import replica_capacity_rps
    from calc.incident import SURGE_PHASE, prefill_tokens_per_s, prompt_statistics
    from calc.memory import weights_bytes_per_gpu
    from calc.roofline import prefill_chunk
    from calc.sim.autoscaler import AutoscalerConfig, scale_up_delay_ns
    from calc.units import NS_PER_S, round_sig

    data = fix_scenario()
    chat, docs = _pool(data, "chat"), _pool(data, "documents")
    classes = {c["name"]: c for c in data["workload"]["classes"]}
    st = prompt_statistics()
    traffic = data["fleet"]["traffic"]
    surge = traffic[SURGE_PHASE]
    rate = surge["rate_per_s"]
    doc_rate, chat_rate = rate * surge["shares"]["document"], rate * surge["shares"]["chat"]
    calm_chat_rate = round_sig(traffic[0]["rate_per_s"] * classes["chat"]["share"], 6)  # chat's share outside it
    coef = lesson.coefficients()
    scheduler_chunk = presets.load("step19-incident-p99").scenario.max_num_batched_tokens
    per_replica = prefill_tokens_per_s()
    per_replica_doc = prefill_tokens_per_s(prompt_tokens=round(st["document"]))
    chat_capacity_rps = replica_capacity_rps(classes["chat"]["prompt_tokens"], classes["chat"]["output_tokens"])
    doc_tokens = classes["document"]["prompt_tokens"] + classes["document"]["output_tokens"]
    chat_tokens = classes["chat"]["prompt_tokens"] + classes["chat"]["output_tokens"]
    delay_ns = scale_up_delay_ns(AutoscalerConfig.from_dict(docs["autoscaler"]),
                                 weights_bytes_per_gpu(get_model("llama-3.1-70b"), 4))
    return {
        "doc_rate_per_s": doc_rate, "chat_rate_per_s": chat_rate, "calm_chat_rate_per_s": calm_chat_rate,
        "scheduler_chunk_tokens": scheduler_chunk,
        "chunk_chat_s": prefill_chunk(coef, chunk_tokens=chat["max_num_batched_tokens"])["time_s"],
        "chunk_default_s": prefill_chunk(coef, chunk_tokens=scheduler_chunk)["time_s"],
        "prefill_per_replica": per_replica, "prefill_per_replica_doc": per_replica_doc,
        "doc_prefill_replicas": round_sig(doc_rate * st["document"] / per_replica_doc, 3),
        "chat_prefill_replicas": round_sig(chat_rate * st["chat"] / per_replica, 3),
        "chat_capacity_rps": chat_capacity_rps,
        "chat_capacity_replicas": round_sig(calm_chat_rate / chat_capacity_rps, 3),
        "thin_chat_replicas": max(1, math.floor(THIN_CHAT_SHARE * calm_chat_rate / chat_capacity_rps)),
        "scale_up_delay_s": delay_ns / NS_PER_S,
        "surge_start_s": sum(p["duration_s"] for p in traffic[:SURGE_PHASE]),
        "surge_end_s": sum(p["duration_s"] for p in traffic[:SURGE_PHASE + 1]),
        "chat_tokens": chat_tokens, "doc_tokens": doc_tokens,
        "chat_kv_fit": contiguous_max_concurrency(lesson.KV_CAPACITY_TOKENS, chat_tokens),
        "doc_kv_fit": contiguous_max_concurrency(lesson.KV_CAPACITY_TOKENS, doc_tokens),
    }


def first_scale_up_s(summary: dict) -> float:
    """When a run's autoscaler first added a replica (s).

    >>> first_scale_up_s({"scale_events": [{"t_s": 5.0, "from": 2, "to": 1}, {"t_s": 80.0, "from": 1, "to": 2}]})
    80.0
    """
    return next(e for e in summary["scale_events"] if e["to"] > e["from"])["t_s"]


def layouts_that_end_it(rows: list[dict], ttft_p99_s: float) -> dict:
    """What the comparison table says, as numbers: the cheapest layout under the alert, and isolation's gain.

    ``cheapest`` is the row of least GPU cost whose TTFT p99 is under ``ttft_p99_s``
    (None if none is); ``shared_same`` the one-pool row with as many replicas as the
    pools; ``chat_gain`` chat's TTFT p99 in that row over chat's in the pools.

    >>> t = layouts_that_end_it(comparison(), 5.0)
    >>> t["cheapest"]["key"], t["shared_same"]["key"], round(t["chat_gain"], 1)
    ('shared4', 'shared_same', 1.5)
    """
    under = [r for r in rows if r["ttft_p99_s"] is not None and r["ttft_p99_s"] < ttft_p99_s]
    pools = next(r for r in rows if r["key"] == "pools")
    same = next((r for r in rows if r["key"] != "pools" and r["replicas"] == pools["replicas"]), None)
    return {
        "cheapest": min(under, key=lambda r: r["cost_usd"]) if under else None,
        "pools": pools,
        "shared_same": same,
        "chat_gain": None if same is None else same["chat_ttft_p99_s"] / pools["chat_ttft_p99_s"],
    }
