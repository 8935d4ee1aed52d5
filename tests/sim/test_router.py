"""Routers: round robin spreads evenly whatever the load, least outstanding follows the load, classes map to pools."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim.fleet import Fleet, FleetScenario
from calc.sim.router import LeastOutstanding, RoundRobin, class_routes, make_router


class Rep:
    def __init__(self, outstanding):
        self.outstanding = outstanding


@given(n=st.integers(1, 12), k=st.integers(0, 200))
@settings(max_examples=60, deadline=None)
def test_round_robin_counts_differ_by_at_most_one(n, k):
    reps = [Rep(0) for _ in range(n)]
    rr = RoundRobin()
    counts = [0] * n
    for _ in range(k):
        counts[reps.index(rr.choose(reps))] += 1
    assert max(counts) - min(counts) <= 1
    assert sum(counts) == k


@given(loads=st.lists(st.integers(0, 50), min_size=1, max_size=10))
@settings(max_examples=60, deadline=None)
def test_least_outstanding_picks_the_first_of_the_least_loaded(loads):
    reps = [Rep(n) for n in loads]
    pick = LeastOutstanding().choose(reps)
    assert pick.outstanding == min(loads)
    assert reps.index(pick) == loads.index(min(loads))


def test_routers_refuse_an_empty_pool():
    for router in (RoundRobin(), LeastOutstanding()):
        with pytest.raises(CalcError, match="no replica is serving"):
            router.choose([])


def test_make_router_names_the_choices():
    assert make_router("round-robin").name == "round-robin"
    with pytest.raises(CalcError, match="round-robin, least-outstanding") as err:
        make_router("fastest")
    assert err.value.field == "router"


def test_class_routes():
    assert class_routes(["chat", "doc", "batch"], [["doc"], []]) == [1, 0, 1]
    with pytest.raises(CalcError, match="named by two pools"):
        class_routes(["chat"], [["chat"], ["chat"]])
    with pytest.raises(CalcError, match="does not have"):
        class_routes(["chat"], [["video"]])
    with pytest.raises(CalcError, match="only one pool may leave"):
        class_routes(["chat"], [[], []])
    with pytest.raises(CalcError, match="served by no pool"):
        class_routes(["chat", "doc"], [["chat"]])


def _run(router, **workload):
    fs = FleetScenario.from_dict({"max_model_len": 32768, "seed": 1,
                                  "workload": dict({"rate_per_s": 6, "requests": 300}, **workload),
                                  "fleet": {"replicas": 3, "router": router}})
    fleet = Fleet(fs)
    fleet.run()
    return fleet


def test_round_robin_in_a_fleet_deals_requests_in_turn():
    fleet = _run("round-robin", classes=[
        {"name": "chat", "share": 0.9, "prompt_tokens": 1024, "output_tokens": 128},
        {"name": "document", "share": 0.1, "prompt_tokens": 12000, "output_tokens": 800}])
    counts = [m.rep.submitted for m in fleet.members]
    assert sum(counts) == 300 and max(counts) - min(counts) <= 1


def test_least_outstanding_in_a_fleet_follows_the_load():
    # Three replicas, all requests at once: each request goes where fewest are in flight, so the
    # counts come out even; with long documents in the mix they no longer do (a replica busy with a
    # document holds its requests longer and gets fewer new ones than round robin would send it).
    even = _run("least-outstanding", arrival="all-at-once")
    assert [m.rep.submitted for m in even.members] == [100, 100, 100]
    mixed = _run("least-outstanding", classes=[
        {"name": "chat", "share": 0.9, "prompt_tokens": 1024, "output_tokens": 128},
        {"name": "document", "share": 0.1, "prompt_tokens": 12000, "output_tokens": 800}])
    counts = [m.rep.submitted for m in mixed.members]
    assert sum(counts) == 300 and max(counts) - min(counts) > 1
