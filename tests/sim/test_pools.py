"""Pools: each serves only its classes, under its own limits, and scales on its own."""

import pytest

from calc.errors import CalcError
from calc.sim.fleet import Fleet, FleetScenario
from calc.sim.pools import PoolSpec
from calc.sim.scenario import Scenario

CLASSES = [
    {"name": "chat", "share": 0.85, "lengths": "lognormal", "prompt_tokens": 800, "output_tokens": 200},
    {"name": "document", "share": 0.1, "prompt_tokens": 12000, "output_tokens": 400},
    {"name": "batch", "share": 0.05, "prompt_tokens": 2000, "output_tokens": 600},
]


def _fleet(pools, **extra):
    data = {"max_model_len": 16384, "seed": 2, "workload": {"rate_per_s": 6, "requests": 400, "classes": CLASSES},
            "fleet": {"pools": pools}}
    data.update(extra)
    fleet = Fleet(FleetScenario.from_dict(data))
    fleet.run()
    return fleet


POOLS = [
    {"name": "chat", "classes": ["chat"], "replicas": 2, "max_num_batched_tokens": 2048},
    {"name": "documents", "classes": ["document"], "replicas": 1, "max_num_seqs": 4, "max_num_batched_tokens": 16384},
    {"name": "batch", "classes": [], "replicas": 1, "max_num_seqs": 64},
]


def test_each_pool_serves_only_its_classes():
    fleet = _fleet(POOLS)
    s = fleet.result().summary
    by_class = {c["name"]: c["requests_completed"] for c in s["classes"]}
    by_pool = {p["name"]: p for p in s["pools"]}
    assert by_pool["chat"]["requests_completed"] == by_class["chat"]
    assert by_pool["documents"]["requests_completed"] == by_class["document"]
    assert by_pool["batch"]["requests_completed"] == by_class["batch"]  # the catch-all pool
    assert by_pool["batch"]["classes"] == ["batch"]
    assert sum(by_class.values()) == s["requests_completed"] == 400
    for pool in fleet.pools:
        sent = sum(m.rep.submitted for m in pool.members)
        assert sent == sum(1 for r in fleet.requests if fleet.routes[r.class_index] == pool.index) > 0


def test_pool_limits_hold():
    fleet = _fleet(POOLS)
    for m in fleet.members:
        spec = m.pool.spec
        cfg = m.rep.config
        assert cfg.max_num_seqs == (spec.max_num_seqs or 256)
        assert cfg.max_num_batched_tokens == (spec.max_num_batched_tokens or 8192)
        assert m.rep.max_running <= cfg.max_num_seqs
    docs = [m for m in fleet.members if m.pool.spec.name == "documents"][0]
    assert docs.rep.max_running == 4  # the cap binds: documents queue in their own pool


def test_a_pool_refuses_requests_longer_than_its_max_model_len():
    pools = [dict(POOLS[0], max_model_len=4096, classes=["chat", "document"]), POOLS[2]]
    s = _fleet(pools).result().summary
    chat_pool = s["pools"][0]
    docs = [c for c in s["classes"] if c["name"] == "document"][0]
    assert docs["requests_completed"] == 0
    assert chat_pool["requests_rejected"] >= 30  # every document, as vLLM refuses a prompt over max_model_len
    assert s["requests_rejected"] == chat_pool["requests_rejected"]
    assert s["requests_completed"] + s["requests_rejected"] == 400


def test_isolation_keeps_chat_fast_when_documents_pile_up():
    mixed = _fleet(None, fleet={"replicas": 4, "router": "least-outstanding"}).result().summary
    pooled = _fleet(POOLS).result().summary
    chat = lambda s: [c for c in s["classes"] if c["name"] == "chat"][0]  # noqa: E731
    assert chat(pooled)["ttft_p99_s"] < chat(mixed)["ttft_p99_s"]
    assert pooled["itl_p99_s"] < mixed["itl_p99_s"]  # small prefill chunks in the chat pool: no long stalls


def test_poolspec_validation():
    with pytest.raises(CalcError, match="unknown key 'gpu'"):
        PoolSpec.from_dict({"gpu": "a100"})
    with pytest.raises(CalcError, match="within the autoscaler's bounds 2 to 4; got 1") as err:
        PoolSpec.from_dict({"replicas": 1, "autoscaler": {"min_replicas": 2, "max_replicas": 4}}, index=3)
    assert err.value.field == "pools[3].replicas"
    assert PoolSpec.from_dict({"autoscaler": {"min_replicas": 2, "max_replicas": 4}}).replicas == 2
    with pytest.raises(CalcError, match="max_num_batched_tokens must be at least"):
        FleetScenario.from_dict({"fleet": {"pools": [{"max_num_batched_tokens": 64}]}})
    with pytest.raises(CalcError, match="pool names must differ"):
        FleetScenario.from_dict({"fleet": {"pools": [{"name": "a"}, {"name": "a", "classes": ["chat"]}]}})
    with pytest.raises(CalcError, match="give pools, or replicas"):
        FleetScenario.from_dict({"fleet": {"pools": [{}], "replicas": 2}})


def test_replica_scenario_keeps_unset_limits():
    base = Scenario.from_dict({"max_num_seqs": 128})
    s = PoolSpec(max_model_len=4096).replica_scenario(base)
    assert (s.max_num_seqs, s.max_model_len, s.max_num_batched_tokens) == (128, 4096, 8192)
    assert PoolSpec().replica_scenario(base) is base
