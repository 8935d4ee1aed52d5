"""Routing requests across the replicas of a fleet: round robin, least outstanding, pools by class.

A router sees only what a load balancer in front of vLLM pods sees: the list
of replicas currently serving (started, weights loaded, not draining) and, for
"least outstanding", each one's count of requests sent and not yet finished
(waiting + running). Round robin ignores load entirely: it is what a plain
Kubernetes Service does. Least outstanding requests sends each request to the
replica with the fewest in flight, ties to the oldest replica, as Envoy's
``LEAST_REQUEST`` and AWS ALB's "least outstanding requests" policies do.
Pools by request class put a first routing stage in front: a request of class
"long document" only ever reaches the replicas of the pool that serves that
class (:mod:`calc.sim.pools`).

Sources: Kubernetes Service load balancing (kube-proxy spreads connections
across endpoints with no load signal); Envoy load balancers, "Weighted least
request" (docs: envoyproxy.io, intro/arch_overview/upstream/load_balancing);
AWS Application Load Balancer routing algorithms ("round_robin",
"least_outstanding_requests").

>>> class R:
...     def __init__(self, n): self.outstanding = n
>>> reps = [R(3), R(1), R(1)]
>>> rr = make_router("round-robin")
>>> [reps.index(rr.choose(reps)) for _ in range(4)]
[0, 1, 2, 0]
>>> reps.index(make_router("least-outstanding").choose(reps))
1
"""

from __future__ import annotations

from calc.errors import CalcError, check_choice

__all__ = ["ROUTERS", "RoundRobin", "LeastOutstanding", "make_router", "class_routes"]

ROUTERS = ("round-robin", "least-outstanding")


class RoundRobin:
    """Each request to the next replica in turn, whatever their load (a plain Kubernetes Service).

    The turn counter survives changes to the replica list: after a scale-up the
    newcomer joins the rotation at its place in the list.

    >>> rr = RoundRobin(); reps = ["a", "b"]
    >>> rr.choose(reps), rr.choose(reps), rr.choose(reps + ["c"]), rr.choose(reps + ["c"])
    ('a', 'b', 'c', 'a')
    """

    __slots__ = ("turn",)
    name = "round-robin"

    def __init__(self):
        self.turn = 0

    def choose(self, replicas):
        """The replica for the next request (``replicas`` must not be empty)."""
        n = len(replicas)
        if not n:
            raise CalcError("no replica is serving: a pool needs at least one ready replica", "replicas")
        pick = replicas[self.turn % n]
        self.turn += 1
        return pick


class LeastOutstanding:
    """Each request to the replica with the fewest requests in flight (waiting + running); ties to the first listed.

    Source: Envoy ``LEAST_REQUEST`` (with all replicas compared, not a random
    pair) and AWS ALB ``least_outstanding_requests``.

    >>> class R:
    ...     def __init__(self, n): self.outstanding = n
    >>> reps = [R(2), R(0), R(0)]
    >>> LeastOutstanding().choose(reps) is reps[1]
    True
    """

    __slots__ = ()
    name = "least-outstanding"

    def choose(self, replicas):
        """The least loaded replica (the first of equals, so the choice is deterministic)."""
        if not replicas:
            raise CalcError("no replica is serving: a pool needs at least one ready replica", "replicas")
        best = replicas[0]
        best_n = best.outstanding
        for rep in replicas:
            n = rep.outstanding
            if n < best_n:
                best, best_n = rep, n
        return best


def make_router(policy: str):
    """A fresh router for ``policy`` (``"round-robin"`` or ``"least-outstanding"``).

    >>> make_router("least-outstanding").name
    'least-outstanding'
    >>> make_router("random")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: router must be one of round-robin, least-outstanding; got 'random'
    """
    check_choice("router", policy, ROUTERS)
    return RoundRobin() if policy == "round-robin" else LeastOutstanding()


def class_routes(class_names, pool_classes) -> list[int]:
    """For each request class (by index), the index of the pool that serves it.

    ``class_names`` are the workload's classes in order; ``pool_classes`` gives,
    per pool, the class names it takes (an empty list: every class no other
    pool names, so one pool with no list serves everything). Every class must
    land in exactly one pool. This is the first stage of routing by request
    class (an API gateway sending ``/v1/documents`` and ``/v1/chat`` to
    different backends); the pool's own router picks the replica.

    >>> class_routes(["chat", "doc", "batch"], [["chat"], ["doc"], []])
    [0, 1, 2]
    >>> class_routes(["chat", "doc"], [[]])
    [0, 0]
    >>> class_routes(["chat", "doc"], [["chat"]])
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: request class 'doc' is served by no pool; name it in a pool's classes, or leave one pool's classes empty
    """
    names = list(class_names)
    routes: list[int | None] = [None] * len(names)
    catch_all = None
    for p, wanted in enumerate(pool_classes):
        if not wanted:
            if catch_all is not None:
                raise CalcError("only one pool may leave its classes empty (it takes every class not named "
                                "elsewhere)", "pools")
            catch_all = p
            continue
        for cname in wanted:
            if cname not in names:
                raise CalcError(f"pool {p} names request class {cname!r}, which the workload does not have; "
                                f"classes: {', '.join(names)}", "pools.classes")
            i = names.index(cname)
            if routes[i] is not None:
                raise CalcError(f"request class {cname!r} is named by two pools; each class goes to one pool",
                                "pools.classes")
            routes[i] = p
    for i, r in enumerate(routes):
        if r is None:
            if catch_all is None:
                raise CalcError(f"request class {names[i]!r} is served by no pool; name it in a pool's classes, "
                                "or leave one pool's classes empty", "pools.classes")
            routes[i] = catch_all
    return routes
