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

from typing import Annotated

from calc import lesson
from calc.catalog import get_gpu
from calc.incident import HIGH_SHARE, TTFT_ALERT_S, prompt_statistics
from calc.pools import (
    COMPARED, LAYOUTS, PRESET, THIN_CHAT_SHARE, _pool, comparison, comparison_row, first_scale_up_s, fix_run,
    fix_scenario, hours_ratio, isolation_gain, layouts_that_end_it, pool_sizing,
)
from calc.sim import presets
from calc.sim.autoscaler import AutoscalerConfig
from calc.units import format_number, round_sig
from calc.widgets.framework import Choice, IntRange, fact, facts_of, stream
from calc.widgets.views import DOCUMENT_SHARE, FLEET_PANELS, FRAME, SEED, dashboard_views, share_text

# THIN_CHAT_SHARE (the try-this's too-small chat pool) lives in calc.pools with the sizing it belongs to.

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


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it; a comparison row runs only its own layout (cached runs in
# calc.pools.fix_run), the sizes come from calc.pools.pool_sizing (no run).
def _ms(seconds: float) -> str:
    return format_number(round(seconds * 1000))


def _row_fact(key: str, name: str, text) -> None:
    """Register ``{key}_{name}``: one number of row ``key`` of the comparison table, as text."""
    def value():
        return text(comparison_row(key))

    value.__name__ = value.__qualname__ = f"{key}_{name}"
    value.__module__ = __name__
    fact(value)


for _key, _, _, _ in COMPARED:
    _row_fact(_key, "replicas", lambda row: str(row["replicas"]))
    _row_fact(_key, "replica_hours", lambda row: format_number(row["replica_hours"]))
    _row_fact(_key, "cost", lambda row: f"${row['cost_usd']:,.2f}")
    _row_fact(_key, "per_million", lambda row: f"${row['usd_per_million_output']:,.2f}")
    for _metric in ("ttft_p99_s", "chat_ttft_p99_s", "document_ttft_p99_s", "batch_ttft_p99_s", "itl_p99_s"):
        _row_fact(_key, _metric.removesuffix("_s"), lambda row, metric=_metric: _seconds(row[metric]))
    _row_fact(_key, "preemptions", lambda row: format_number(row["preemptions"]))
    _row_fact(_key, "queue_max", lambda row: format_number(row["queue_depth_max"]))


@fact
def takeaway_claim():
    """>>> takeaway_claim().split(":")[0]
    'Capacity ended this incident'
    """
    return _takeaway(comparison())


def _pool_of(name: str) -> dict:
    return _pool(fix_scenario(), name)


def _pooled_run(name: str) -> dict:
    return comparison_row("pools")["pools"][name]


def _cold() -> dict:
    return fix_run("pools", document_replicas=1)


def _surge_pools() -> dict:
    return fix_run("pools", document_share=HIGH_SHARE)


def _surge_shared() -> dict:
    return fix_run("shared", comparison_row("shared_same")["replicas"], document_share=HIGH_SHARE)


def _thin_chat() -> dict:
    return fix_run("pools", chat_replicas=pool_sizing()["thin_chat_replicas"])


@fact
def max_num_seqs_default():
    return str(presets.load("step19-incident-p99").scenario.max_num_seqs)


@fact
def gpu_price():
    return f"${get_gpu('h100-sxm-80gb').price_usd_per_hour:.2f}"


@fact
def gpu_price_date():
    return get_gpu("h100-sxm-80gb").price_date


@fact
def cold_doc_p99():
    return _seconds(_class_p99(_cold(), "document"))


@fact
def cold_chat_p99():
    return _seconds(_class_p99(_cold(), "chat"))


@fact
def cold_first_up_s():
    return format_number(first_scale_up_s(_cold()))


@fact
def scale_up_delay_s():
    return format_number(round(pool_sizing()["scale_up_delay_s"]))


@fact
def pool_pod_start_s():
    return format_number(AutoscalerConfig.from_dict(_pool_of("documents")["autoscaler"]).pod_start_s)


@fact
def surge_start_s():
    return format_number(pool_sizing()["surge_start_s"])


@fact
def surge_end_s():
    return format_number(pool_sizing()["surge_end_s"])


@fact
def big_chunk_itl_p99():
    return _seconds(fix_run("pools", chat_chunk_tokens=pool_sizing()["scheduler_chunk_tokens"])["itl_p99_s"])


@fact
def high_share():
    return format_number(HIGH_SHARE)


@fact
def high_share_pct():
    return share_text(HIGH_SHARE)


@fact
def surge_pools_chat_p99():
    return _seconds(_class_p99(_surge_pools(), "chat"))


@fact
def surge_pools_doc_p99():
    return _seconds(_class_p99(_surge_pools(), "document"))


@fact
def surge_shared_same_chat_p99():
    return _seconds(_class_p99(_surge_shared(), "chat"))


@fact
def surge_shared_same_itl_p99():
    return _seconds(_surge_shared()["itl_p99_s"])


@fact
def surge_pools_itl_p99():
    return _seconds(_surge_pools()["itl_p99_s"])


@fact
def thin_chat_p99():
    return _seconds(_class_p99(_thin_chat(), "chat"))


@fact
def thin_chat_replicas():
    return str(pool_sizing()["thin_chat_replicas"])


@fact
def chat_replica_capacity():
    return format_number(round_sig(pool_sizing()["chat_capacity_rps"], 3))


@fact
def chat_rate_calm():
    return format_number(pool_sizing()["calm_chat_rate_per_s"])


@fact
def chat_capacity_replicas():
    return format_number(pool_sizing()["chat_capacity_replicas"])


@fact
def ratio_hours():
    return format_number(hours_ratio())


@fact
def chat_pool_replicas():
    """>>> chat_pool_replicas(), doc_pool_replicas(), batch_pool_replicas()
    ('3', '2', '1')
    """
    return str(_pool_of("chat")["replicas"])


@fact
def chat_chunk():
    return f"{_pool_of('chat')['max_num_batched_tokens']:,}"


@fact
def default_chunk():
    return f"{pool_sizing()['scheduler_chunk_tokens']:,}"


@fact
def chunk_chat_ms():
    return _ms(pool_sizing()["chunk_chat_s"])


@fact
def chunk_default_ms():
    return _ms(pool_sizing()["chunk_default_s"])


@fact
def doc_pool_replicas():
    return str(_pool_of("documents")["replicas"])


@fact
def doc_pool_max():
    return str(_pool_of("documents")["autoscaler"]["max_replicas"])


@fact
def doc_pool_seqs():
    return str(_pool_of("documents")["max_num_seqs"])


@fact
def doc_pool_chunk():
    return f"{_pool_of('documents')['max_num_batched_tokens']:,}"


@fact
def doc_pool_signal():
    return _pool_of("documents")["autoscaler"]["signal"].replace("_", " ")


@fact
def doc_pool_gpu_util():
    return share_text(_pooled_run("documents")["gpu_util_reported"])


@fact
def doc_pool_hours():
    return format_number(_pooled_run("documents")["replica_hours"])


@fact
def chat_pool_gpu_util():
    return share_text(_pooled_run("chat")["gpu_util_reported"])


@fact
def batch_pool_replicas():
    return str(_pool_of("batch")["replicas"])


@fact
def batch_pool_seqs():
    return str(_pool_of("batch")["max_num_seqs"])


@fact
def kv_tokens():
    """The running example's capacity, as step 1 quotes it."""
    return f"{lesson.KV_CAPACITY_TOKENS:,}"


@fact
def chat_tokens():
    return f"{pool_sizing()['chat_tokens']:,}"


@fact
def doc_tokens():
    return f"{pool_sizing()['doc_tokens']:,}"


@fact
def chat_kv_fit():
    """>>> chat_kv_fit(), doc_kv_fit()
    ('311', '20')
    """
    return str(pool_sizing()["chat_kv_fit"])


@fact
def doc_kv_fit():
    return str(pool_sizing()["doc_kv_fit"])


@fact
def doc_rate():
    return format_number(pool_sizing()["doc_rate_per_s"])


@fact
def chat_rate():
    return format_number(pool_sizing()["chat_rate_per_s"])


@fact
def doc_prompt_measured():
    return format_number(round(prompt_statistics()["document"]))


@fact
def chat_prompt_measured():
    return format_number(round(prompt_statistics()["chat"]))


@fact
def prefill_per_replica():
    return format_number(round(pool_sizing()["prefill_per_replica"]))


@fact
def prefill_per_replica_doc():
    return format_number(round(pool_sizing()["prefill_per_replica_doc"]))


@fact
def doc_prefill_replicas():
    return format_number(pool_sizing()["doc_prefill_replicas"])


@fact
def chat_prefill_replicas():
    return format_number(pool_sizing()["chat_prefill_replicas"])


@fact
def chat_gain_vs_shared_same():
    return format_number(isolation_gain(), 2)


facts = facts_of(__name__)
