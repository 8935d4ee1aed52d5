"""Widgets and facts of step 20, "The fix" (docs/lesson/20-the-fix.md).

The incident's traffic (step 19) served two ways: one shared pool of replicas
that takes every request, or three pools by request class (short chat, long
documents, batch jobs), each with its own engine limits and replica count; the
documents' pool also scales on its own queue. The preset ``step20-pools`` is the
pooled layout; :func:`fix_scenario` builds either layout with the reader's sizes.

Pools are not free: the preset runs six replicas where the incident had three.
:func:`comparison` therefore also runs one shared pool with the same six
replicas, so the page can say what the split buys beyond the extra GPUs.

>>> s = fix_scenario(layout="shared", shared_replicas=4)
>>> s["fleet"]["replicas"], "pools" in s["fleet"]
(4, False)
>>> [p["replicas"] for p in fix_scenario()["fleet"]["pools"]]
[3, 2, 1]
"""

from __future__ import annotations

import math

from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu, get_model
from calc.incident import HIGH_SHARE, SURGE_PHASE, TTFT_ALERT_S, prefill_tokens_per_s, prompt_statistics
from calc.gpu_util import replica_capacity_rps
from calc.memory import weights_bytes_per_gpu
from calc.pools import COMPARED, LAYOUTS, PRESET, _pool, comparison, fix_run, fix_scenario, layouts_that_end_it
from calc.roofline import prefill_chunk
from calc.sim import presets
from calc.sim.autoscaler import AutoscalerConfig, scale_up_delay_ns
from calc.units import NS_PER_S, format_number, round_sig
from calc.widgets.framework import Choice, IntRange, stream
from calc.widgets.views import DOCUMENT_SHARE, FLEET_PANELS, FRAME, SEED, dashboard_views

#: The try-this's too-small chat pool holds at most this share of the replicas' worth chat needs, so it is short
#: by capacity, not by a rounding of it: after the joint fit one replica fewer than the preset's pool carries 99%
#: of chat's need (2 replicas for 2.02) and queues only a little.
THIN_CHAT_SHARE = 0.9

__all__ = ["PRESET", "LAYOUTS", "fix_scenario", "fleet", "fix_run", "COMPARED", "comparison", "facts"]

@stream(budget_s=4.0)
def fleet(
    layout: Annotated[str, Choice(LAYOUTS, label="Layout")] = "pools",
    shared_replicas: Annotated[int, IntRange(1, 12, label="Shared pool: replicas",
                                             help="used when the layout is one shared pool")] = 3,
    chat_replicas: Annotated[int, IntRange(1, 8, label="Chat pool: replicas", help="used with three pools")] = 3,
    chat_chunk_tokens: Annotated[int, IntRange(256, 16_384, 256, "tokens", label="Chat pool: prefill chunk",
                                               help="max_num_batched_tokens of the chat pool")] = 2048,
    document_replicas: Annotated[int, IntRange(1, 8, label="Documents pool: warm replicas",
                                               help="scales on its queue up to two more")] = 2,
    batch_replicas: Annotated[int, IntRange(1, 4, label="Batch pool: replicas")] = 1,
    document_share: Annotated[float, DOCUMENT_SHARE] = 0.08,
    seed: Annotated[int, SEED] = 3,
    frame_interval_s: Annotated[float, FRAME] = 5.0,
):
    """The incident's traffic on one shared pool or on three pools: the dashboard, per-class TTFT and the bill."""
    scenario = fix_scenario(layout=layout, shared_replicas=shared_replicas, chat_replicas=chat_replicas,
                            document_replicas=document_replicas, batch_replicas=batch_replicas,
                            chat_chunk_tokens=chat_chunk_tokens, document_share=document_share, seed=seed)
    yield from dashboard_views(scenario, frame_interval_s, panels=FLEET_PANELS, costs=True)


def _class_p99(summary: dict, name: str):
    return next(c["ttft_p99_s"] for c in summary["classes"] if c["name"] == name)


def _seconds(value) -> str:
    return "n/a" if value is None else f"{format_number(value)} s"


def _takeaway(rows: list[dict]) -> str:
    """The step's takeaway, read off its own table (:func:`calc.pools.layouts_that_end_it`), so the two agree."""
    t = layouts_that_end_it(rows, TTFT_ALERT_S)
    alert = _seconds(TTFT_ALERT_S)
    cheapest, pools, same = t["cheapest"], t["pools"], t["shared_same"]
    if cheapest is None:
        ended = f"No layout in the table brings TTFT p99 under the {alert} alert."
    elif cheapest["key"] == "pools":
        ended = (f"Pools ended this incident: the cheapest layout under the {alert} alert is the pooled one "
                 f"(TTFT p99 {_seconds(cheapest['ttft_p99_s'])}, ${cheapest['cost_usd']:,.2f}).")
    else:
        ended = (f"Capacity ended this incident: the cheapest layout under the {alert} alert is one pool of "
                 f"{cheapest['replicas']} replicas (TTFT p99 {_seconds(cheapest['ttft_p99_s'])}, "
                 f"${cheapest['cost_usd']:,.2f} against ${pools['cost_usd']:,.2f} for the pools).")
    if same is None or t["chat_gain"] is None:
        return ended.replace("$", "&#36;")
    verb = "buy" if t["chat_gain"] > 1 else "do not buy"
    claim = (f"{ended} What pools {verb} is isolation: on the same {pools['replicas']} replicas, chat's p99 is "
             f"{_seconds(pools['chat_ttft_p99_s'])} in its own pool against {_seconds(same['chat_ttft_p99_s'])} in "
             f"one shared pool")
    # The worse surge of the table's notes: does it reach chat in one pool and not in its own?
    surge_pools = _class_p99(fix_run("pools", document_share=HIGH_SHARE), "chat")
    surge_shared = _class_p99(fix_run("shared", same["replicas"], document_share=HIGH_SHARE), "chat")
    if surge_pools < surge_shared:
        claim += (f", and with a bigger surge of documents chat stays at {_seconds(surge_pools)} in its pool "
                  f"against {_seconds(surge_shared)} shared")
    return (claim + ".").replace("$", "&#36;")  # a dollar sign would open inline math on the page


def facts() -> dict[str, str]:
    """Numbers quoted in the page's prose: the compared layouts, the pools' limits and what sizes them.

    >>> f = facts()
    >>> f["pools_replicas"], f["shared3_replicas"], f["pools_preemptions"], f["chat_kv_fit"], f["doc_kv_fit"]
    ('6', '3', '0', '311', '20')
    >>> f["takeaway_claim"].split(":")[0]
    'Capacity ended this incident'
    """
    table = comparison()
    rows = {r["key"]: r for r in table}
    out: dict[str, str] = {"takeaway_claim": _takeaway(table)}
    for key, row in rows.items():
        out[f"{key}_replicas"] = str(row["replicas"])
        out[f"{key}_replica_hours"] = format_number(row["replica_hours"])
        out[f"{key}_cost"] = f"${row['cost_usd']:,.2f}"
        out[f"{key}_per_million"] = f"${row['usd_per_million_output']:,.2f}"
        for metric in ("ttft_p99_s", "chat_ttft_p99_s", "document_ttft_p99_s", "batch_ttft_p99_s", "itl_p99_s"):
            out[f"{key}_{metric[:-2]}"] = _seconds(row[metric])
        out[f"{key}_preemptions"] = format_number(row["preemptions"])
        out[f"{key}_queue_max"] = format_number(row["queue_depth_max"])
    pools = rows["pools"]["pools"]
    data = fix_scenario()
    chat, docs, batch = _pool(data, "chat"), _pool(data, "documents"), _pool(data, "batch")
    classes = {c["name"]: c for c in data["workload"]["classes"]}
    kv_tokens = lesson.KV_CAPACITY_TOKENS  # the running example's capacity, as step 1 quotes it
    st = prompt_statistics()
    surge = data["fleet"]["traffic"][SURGE_PHASE]
    rate = surge["rate_per_s"]
    doc_rate = rate * surge["shares"]["document"]
    chat_rate = rate * surge["shares"]["chat"]
    calm = data["fleet"]["traffic"][0]  # outside the surge chat keeps its share of the workload's mix
    calm_chat_rate = round_sig(calm["rate_per_s"] * classes["chat"]["share"], 6)
    coef = lesson.coefficients()
    scheduler_chunk = presets.load("step19-incident-p99").scenario.max_num_batched_tokens
    chunk_chat_s = prefill_chunk(coef, chunk_tokens=chat["max_num_batched_tokens"])["time_s"]
    chunk_default_s = prefill_chunk(coef, chunk_tokens=scheduler_chunk)["time_s"]
    per_replica = prefill_tokens_per_s()
    per_replica_doc = prefill_tokens_per_s(prompt_tokens=round(st["document"]))
    doc_tokens = classes["document"]["prompt_tokens"] + classes["document"]["output_tokens"]
    chat_tokens = classes["chat"]["prompt_tokens"] + classes["chat"]["output_tokens"]
    shared_same, pooled = rows["shared_same"], rows["pools"]
    cold = fix_run("pools", document_replicas=1)
    first_up = next(e for e in cold["scale_events"] if e["to"] > e["from"])
    delay_s = scale_up_delay_ns(AutoscalerConfig.from_dict(docs["autoscaler"]),
                                weights_bytes_per_gpu(get_model("llama-3.1-70b"), 4)) / NS_PER_S
    big_chunk = fix_run("pools", chat_chunk_tokens=scheduler_chunk)
    surge_pools = fix_run("pools", document_share=HIGH_SHARE)
    surge_shared = fix_run("shared", shared_same["replicas"], document_share=HIGH_SHARE)
    # Prefill alone would size chat's pool too small: a replica completes at most this many chat requests a second
    # once their answers' decode steps are priced too (step 14's saturation point).
    chat_capacity_rps = replica_capacity_rps(classes["chat"]["prompt_tokens"], classes["chat"]["output_tokens"])
    # The try-this's too-small chat pool: the most replicas that are clearly short of chat's need.
    thin_chat_replicas = max(1, math.floor(THIN_CHAT_SHARE * calm_chat_rate / chat_capacity_rps))
    thin_chat = fix_run("pools", chat_replicas=thin_chat_replicas)
    out.update({
        "max_num_seqs_default": str(presets.load("step19-incident-p99").scenario.max_num_seqs),
        "gpu_price": f"${get_gpu('h100-sxm-80gb').price_usd_per_hour:.2f}",
        "gpu_price_date": get_gpu("h100-sxm-80gb").price_date,
        "cold_doc_p99": _seconds(_class_p99(cold, "document")),
        "cold_chat_p99": _seconds(_class_p99(cold, "chat")),
        "cold_first_up_s": format_number(first_up["t_s"]),
        "scale_up_delay_s": format_number(round(delay_s)),
        "pool_pod_start_s": format_number(AutoscalerConfig.from_dict(docs["autoscaler"]).pod_start_s),
        "surge_start_s": format_number(sum(p["duration_s"] for p in data["fleet"]["traffic"][:SURGE_PHASE])),
        "surge_end_s": format_number(sum(p["duration_s"] for p in data["fleet"]["traffic"][:SURGE_PHASE + 1])),
        "big_chunk_itl_p99": _seconds(big_chunk["itl_p99_s"]),
        "high_share": format_number(HIGH_SHARE),
        "high_share_pct": f"{HIGH_SHARE * 100:.0f}%",
        "surge_pools_chat_p99": _seconds(_class_p99(surge_pools, "chat")),
        "surge_pools_doc_p99": _seconds(_class_p99(surge_pools, "document")),
        "surge_shared_same_chat_p99": _seconds(_class_p99(surge_shared, "chat")),
        "surge_shared_same_itl_p99": _seconds(surge_shared["itl_p99_s"]),
        "surge_pools_itl_p99": _seconds(surge_pools["itl_p99_s"]),
        "thin_chat_p99": _seconds(_class_p99(thin_chat, "chat")),
        "thin_chat_replicas": str(thin_chat_replicas),
        "chat_replica_capacity": format_number(round_sig(chat_capacity_rps, 3)),
        "chat_rate_calm": format_number(calm_chat_rate),
        "chat_capacity_replicas": format_number(round_sig(calm_chat_rate / chat_capacity_rps, 3)),
        "ratio_hours": format_number(pooled["replica_hours"] / rows["shared3"]["replica_hours"]),
        "chat_pool_replicas": str(chat["replicas"]),
        "chat_chunk": f"{chat['max_num_batched_tokens']:,}",
        "default_chunk": f"{scheduler_chunk:,}",
        "chunk_chat_ms": format_number(round(chunk_chat_s * 1000)),
        "chunk_default_ms": format_number(round(chunk_default_s * 1000)),
        "doc_pool_replicas": str(docs["replicas"]),
        "doc_pool_max": str(docs["autoscaler"]["max_replicas"]),
        "doc_pool_seqs": str(docs["max_num_seqs"]),
        "doc_pool_chunk": f"{docs['max_num_batched_tokens']:,}",
        "doc_pool_signal": docs["autoscaler"]["signal"].replace("_", " "),
        "doc_pool_gpu_util": f"{pools['documents']['gpu_util_reported'] * 100:.0f}%",
        "doc_pool_hours": format_number(pools["documents"]["replica_hours"]),
        "chat_pool_gpu_util": f"{pools['chat']['gpu_util_reported'] * 100:.0f}%",
        "batch_pool_replicas": str(batch["replicas"]),
        "batch_pool_seqs": str(batch["max_num_seqs"]),
        "kv_tokens": f"{kv_tokens:,}",
        "chat_tokens": f"{chat_tokens:,}",
        "doc_tokens": f"{doc_tokens:,}",
        "chat_kv_fit": str(kv_tokens // chat_tokens),
        "doc_kv_fit": str(kv_tokens // doc_tokens),
        "doc_rate": format_number(doc_rate),
        "chat_rate": format_number(chat_rate),
        "doc_prompt_measured": format_number(round(st["document"])),
        "chat_prompt_measured": format_number(round(st["chat"])),
        "prefill_per_replica": format_number(round(per_replica)),
        "prefill_per_replica_doc": format_number(round(per_replica_doc)),
        "doc_prefill_replicas": format_number(round_sig(doc_rate * st["document"] / per_replica_doc, 3)),
        "chat_prefill_replicas": format_number(round_sig(chat_rate * st["chat"] / per_replica, 3)),
        "chat_gain_vs_shared_same": format_number(shared_same["chat_ttft_p99_s"] / pooled["chat_ttft_p99_s"], 2),
    })
    return out
