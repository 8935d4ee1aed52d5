"""Step 20: pools against one shared pool, honestly: latency per class, preemptions and the bill."""

import pytest

from calc.incident import TTFT_ALERT_S

from calc.errors import CalcError
from calc.incident import TTFT_ALERT_S
from calc.sim import presets
from calc.widgets import framework
from calc.widgets import the_fix as step

FLEET = "the_fix.fleet"


@pytest.fixture(scope="module")
def facts():
    return step.facts()


def test_the_pooled_layout_is_the_preset():
    assert step.fix_run("pools")["ttft_p99_s"] == presets.run("step20-pools").summary["ttft_p99_s"]


def test_pools_cost_about_twice_the_incident(facts):
    assert facts["pools_replicas"] == "6" and facts["shared3_replicas"] == "3"
    assert facts["pools_replica_hours"] == "0.494" and facts["shared3_replica_hours"] == "0.255"
    assert facts["ratio_hours"] == "1.94"
    assert facts["pools_cost"] == "$7.47" and facts["shared3_cost"] == "$3.85"


def test_capacity_does_most_of_the_work(facts):
    assert facts["shared4_ttft_p99"] == "2.97 s" and facts["shared4_preemptions"] == "0"
    assert facts["shared3_ttft_p99"] == "28.8 s"


def test_pools_isolate_chat(facts):
    rows = {r["key"]: r for r in step.comparison()}
    assert rows["pools"]["chat_ttft_p99_s"] < rows["shared_same"]["chat_ttft_p99_s"]
    assert facts["pools_chat_ttft_p99"] == "0.843 s" and facts["shared_same_chat_ttft_p99"] == "1.25 s"
    assert facts["pools_preemptions"] == "0" and facts["shared3_preemptions"] == "138"
    assert facts["pools_itl_p99"] == "0.174 s" and facts["shared3_itl_p99"] == "0.701 s"
    # ... and the isolation holds when the surge is twice as large.
    assert facts["surge_pools_chat_p99"] == "0.787 s" and facts["surge_shared_same_chat_p99"] == "3.47 s"


def test_pool_limits_and_what_sizes_them(facts):
    assert facts["chat_kv_fit"] == "311"  # 399,169 // 1,280: step 1's capacity
    assert facts["doc_kv_fit"] == "20"  # 399,169 // 19,800
    assert facts["doc_pool_seqs"] == "16" and facts["chat_chunk"] == "2,048"
    assert facts["chunk_chat_ms"] == "163" and facts["chunk_default_ms"] == "681"
    assert facts["scale_up_delay_s"] == "78"  # 60 s pod start + 35.3 GB / 2 GB/s
    assert facts["cold_chat_p99"] == facts["pools_chat_ttft_p99"]  # a cold documents pool never reaches chat
    assert facts["doc_pool_gpu_util"] == "31%"
    # chat is sized by a replica's capacity (step 14), not by prefill alone: a pool clearly short of it queues past
    # step 19's alert, and even one replica fewer than the preset's (prefill's rounded-up count) queues
    assert facts["chat_capacity_replicas"] == "2.02" and facts["chat_pool_replicas"] == "3"
    assert int(facts["thin_chat_replicas"]) <= step.THIN_CHAT_SHARE * float(facts["chat_capacity_replicas"])
    assert float(facts["thin_chat_p99"].split()[0]) > TTFT_ALERT_S  # 5 s
    one_fewer = step.fix_run("pools", chat_replicas=int(facts["chat_pool_replicas"]) - 1)
    assert int(facts["chat_pool_replicas"]) - 1 < float(facts["chat_capacity_replicas"])
    assert step._class_p99(one_fewer, "chat") > 3 * float(facts["pools_chat_ttft_p99"].split()[0])


def test_fix_scenario_layouts():
    shared = step.fix_scenario(layout="shared", shared_replicas=5, document_share=0.2, seed=7)
    assert shared["fleet"]["replicas"] == 5 and shared["seed"] == 7
    assert shared["fleet"]["traffic"][1]["shares"]["document"] == 0.2
    pools = step.fix_scenario(chat_replicas=3, document_replicas=2, batch_replicas=2, chat_chunk_tokens=1024)
    by_name = {p["name"]: p for p in pools["fleet"]["pools"]}
    assert [by_name[n]["replicas"] for n in ("chat", "documents", "batch")] == [3, 2, 2]
    assert by_name["chat"]["max_num_batched_tokens"] == 1024
    assert (by_name["documents"]["autoscaler"]["min_replicas"], by_name["documents"]["autoscaler"]["max_replicas"]) == (2, 4)


def test_stream_shows_per_class_latency_and_the_bill(facts):
    entry, bound = framework.bind(FLEET, {})
    merged = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
    out = merged["outputs"]
    assert out["chat_ttft_p99_s"]["text"] == facts["pools_chat_ttft_p99"]
    assert out["replica_hours"]["text"] == "0.494 h"
    assert out["cost_usd"]["text"] == "$7.47"
    assert out["replicas"]["text"] == "6 / 6 / 6"
    assert set(merged["figures"]) == {"ttft", "queue", "kv", "replicas"}
    assert "arrival_rate_per_s" not in out  # the same traffic in every layout: not worth a line


@pytest.mark.parametrize("args, field", [
    ({"layout": "both"}, "layout"),
    ({"chat_chunk_tokens": 100}, "chat_chunk_tokens"),
    ({"shared_replicas": 0}, "shared_replicas"),
    ({"document_share": 0.6}, "document_share"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.bind(FLEET, args)
    assert caught.value.field == field


def test_the_takeaway_agrees_with_the_table(facts):
    """Step 20's takeaway is read off its own table: the layout it names is the cheapest one under the alert."""
    from calc.incident import TTFT_ALERT_S
    from calc.pools import comparison

    rows = comparison()
    under = [r for r in rows if r["ttft_p99_s"] < TTFT_ALERT_S]
    cheapest = min(under, key=lambda r: r["cost_usd"])
    claim = facts["takeaway_claim"]
    assert facts[f"{cheapest['key']}_ttft_p99"] in claim and facts[f"{cheapest['key']}_cost"].replace("$", "&#36;") in claim
    assert ("Capacity ended" in claim) == (cheapest["key"] != "pools")
    assert facts["pools_chat_ttft_p99"] in claim and facts["shared_same_chat_ttft_p99"] in claim
