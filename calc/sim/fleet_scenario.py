"""A fleet scenario: a replica's :class:`~calc.sim.scenario.Scenario` plus its ``fleet`` part, and its traffic.

A :class:`FleetScenario` is a :class:`~calc.sim.scenario.Scenario` (the
replica's model, GPUs, engine settings and the traffic) plus a ``fleet`` part:

=================== ================= =======================================================
key                 default           meaning
=================== ================= =======================================================
replicas            1                 replicas at time 0 (warm), when there are no pools
router              "round-robin"     round-robin or least-outstanding (:mod:`calc.sim.router`)
autoscaler          null              :class:`~calc.sim.autoscaler.AutoscalerConfig` as JSON
pools               []                pools by request class (:class:`~calc.sim.pools.PoolSpec`);
                                      instead of the three keys above
traffic             []                phases ``{duration_s, rate_per_s, end_rate_per_s}``: the
                                      arrival rate over time, linear within a phase (a ramp)
percentile_window_s 10                trailing window of the latency percentiles over time
=================== ================= =======================================================

Traffic phases use the time-rescaling of a Poisson (or bursty) process: the
scenario's arrival process is drawn at rate 1 in "operational time" and each
arrival at operational time ``u`` happens at the real time ``t`` where the
integrated rate reaches ``u``; lengths and classes are drawn as the workload
says. Source: time-rescaling theorem for point processes (e.g. Brown et al.,
"The time-rescaling theorem and its application to neural spike train data
analysis", Neural Computation 2002; Cinlar, *Introduction to Stochastic
Processes*, 1975, non-homogeneous Poisson processes). The run itself is
:mod:`calc.sim.fleet`'s.

>>> fs = FleetScenario.from_dict({"workload": {"requests": 60, "rate_per_s": 6},
...                               "fleet": {"replicas": 2, "router": "least-outstanding"}})
>>> fs.fleet.pools[0].replicas, fs.fleet.pools[0].router
(2, 'least-outstanding')
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass, field

from calc.errors import CalcError, check_range
from calc.sim.pools import PoolSpec
from calc.sim.router import class_routes
from calc.sim.scenario import Scenario
from calc.sim.workload import generate_requests, tokenizer_of
from calc.units import NS_PER_S

__all__ = ["Phase", "FleetConfig", "FleetScenario", "as_fleet_scenario", "fleet_requests"]

_FLEET_KEYS = ("replicas", "router", "autoscaler", "pools", "traffic", "percentile_window_s")


# ---------------------------------------------------------------------------------------------- scenario
@dataclass(frozen=True)
class Phase:
    """A stretch of traffic: ``duration_s`` long, the rate going linearly from ``rate_per_s`` to ``end_rate_per_s``.

    ``shares`` (optional) replaces the request classes' shares during the
    phase, as ``((class name, share), ...)``: the same rate with another mix
    (more long documents, say); classes not named get no traffic then.

    >>> Phase(60, 2, 10).requests_expected()
    360.0
    """

    duration_s: float
    rate_per_s: float
    end_rate_per_s: float | None = None
    shares: tuple | None = None

    @property
    def end_rate(self) -> float:
        """The rate at the end of the phase (requests/s)."""
        return self.rate_per_s if self.end_rate_per_s is None else self.end_rate_per_s

    def requests_expected(self) -> float:
        """Mean arrivals in the phase: the area under the rate."""
        return (self.rate_per_s + self.end_rate) / 2.0 * self.duration_s


@dataclass(frozen=True)
class FleetConfig:
    """The fleet part of a scenario: its pools (at least one), traffic phases and the percentile window.

    >>> FleetConfig.from_dict({"replicas": 3}).pools[0].replicas
    3
    """

    pools: tuple = (PoolSpec(router="round-robin"),)
    traffic: tuple = ()
    percentile_window_s: float = 10.0

    @classmethod
    def from_dict(cls, data: dict | None) -> "FleetConfig":
        """A validated fleet config from JSON-like data (None: one replica)."""
        data = {} if data is None else data
        if not isinstance(data, dict):
            raise CalcError(f"fleet must be a JSON object; got {type(data).__name__}", "fleet")
        for key in data:
            if key not in _FLEET_KEYS:
                raise CalcError(f"unknown key {key!r} in fleet; allowed: {', '.join(sorted(_FLEET_KEYS))}", key)
        if "pools" in data:
            clash = [k for k in ("replicas", "router", "autoscaler") if k in data]
            if clash:
                raise CalcError(f"fleet: give pools, or {', '.join(clash)} for a single pool, not both", "fleet.pools")
            raw = data["pools"]
            if not isinstance(raw, list) or not raw:
                raise CalcError(f"fleet.pools must be a non-empty list of pools; got {raw!r}", "fleet.pools")
            pools = tuple(PoolSpec.from_dict(p, i) for i, p in enumerate(raw))
            names = [p.name for p in pools]
            if len(set(names)) != len(names):
                raise CalcError(f"fleet.pools: pool names must differ; got {names}", "fleet.pools")
        else:
            single = {"name": "default", "router": data.get("router", "round-robin")}
            for key in ("replicas", "autoscaler"):
                if key in data:
                    single[key] = data[key]
            pools = (PoolSpec.from_dict(single, 0),)
        traffic = data.get("traffic", [])
        if not isinstance(traffic, list):
            raise CalcError(f"fleet.traffic must be a list of phases; got {traffic!r}", "fleet.traffic")
        phases = []
        for i, ph in enumerate(traffic):
            where = f"fleet.traffic[{i}]"
            if not isinstance(ph, dict):
                raise CalcError(f"{where} must be an object with duration_s, rate_per_s, end_rate_per_s; got {ph!r}",
                                where)
            for key in ph:
                if key not in ("duration_s", "rate_per_s", "end_rate_per_s", "shares"):
                    raise CalcError(f"unknown key {key!r} in {where}; allowed: duration_s, end_rate_per_s, "
                                    "rate_per_s, shares", key)
            if "duration_s" not in ph or "rate_per_s" not in ph:
                raise CalcError(f"{where} needs duration_s and rate_per_s", where)
            end = ph.get("end_rate_per_s")
            shares = ph.get("shares")
            if shares is not None:
                if not isinstance(shares, dict) or not shares:
                    raise CalcError(f"{where}.shares must map request class names to shares; got {shares!r}",
                                    f"{where}.shares")
                shares = tuple((str(k), check_range(f"{where}.shares.{k}", v, 0.0, 1e6)) for k, v in shares.items())
                if not sum(v for _, v in shares) > 0:
                    raise CalcError(f"{where}.shares must add up to more than 0", f"{where}.shares")
            phases.append(Phase(
                duration_s=check_range(f"{where}.duration_s", ph["duration_s"], 0.001, 1e7),
                rate_per_s=check_range(f"{where}.rate_per_s", ph["rate_per_s"], 0.0, 1e6),
                end_rate_per_s=None if end is None else check_range(f"{where}.end_rate_per_s", end, 0.0, 1e6),
                shares=shares))
        if phases and not sum(p.requests_expected() for p in phases) > 0:
            raise CalcError("fleet.traffic: the phases carry no traffic (every rate is 0)", "fleet.traffic")
        window = check_range("fleet.percentile_window_s", data.get("percentile_window_s", 10.0), 0.001, 1e6)
        return cls(pools=pools, traffic=tuple(phases), percentile_window_s=window)

    def to_dict(self) -> dict:
        """JSON-ready data, in the ``pools`` form."""
        traffic = []
        for p in self.traffic:
            row = {"duration_s": p.duration_s, "rate_per_s": p.rate_per_s, "end_rate_per_s": p.end_rate_per_s}
            if p.shares is not None:
                row["shares"] = dict(p.shares)
            traffic.append(row)
        return {"pools": [p.to_dict() for p in self.pools], "traffic": traffic,
                "percentile_window_s": self.percentile_window_s}


@dataclass(frozen=True)
class FleetScenario:
    """A replica's scenario plus its fleet: ``Scenario.from_dict`` keys, and ``fleet``.

    >>> fs = FleetScenario.from_dict({"tp": 4, "fleet": {"replicas": 2}})
    >>> fs.scenario.tp, fs.fleet.pools[0].replicas, fs.name
    (4, 2, '')
    >>> fs.replace(workload={"requests": 7}).scenario.workload.requests
    7
    """

    scenario: Scenario = field(default_factory=Scenario)
    fleet: FleetConfig = field(default_factory=FleetConfig)

    @classmethod
    def from_dict(cls, data: dict) -> "FleetScenario":
        """Validate a scenario dict with an optional ``fleet`` key; checks classes against pools and traffic."""
        if not isinstance(data, dict):
            raise CalcError(f"scenario must be a JSON object; got {type(data).__name__}", "scenario")
        rest = {k: v for k, v in data.items() if k != "fleet"}
        return cls(Scenario.from_dict(rest), FleetConfig.from_dict(data.get("fleet"))).check()

    def check(self) -> "FleetScenario":
        """Cross-checks: every class reaches one pool, pools' limits obey vLLM's rules, traffic has a process."""
        sc = self.scenario
        class_routes([c.name for c in sc.workload.classes], [p.classes for p in self.fleet.pools])
        for pool in self.fleet.pools:
            pool.replica_scenario(sc)
        if self.fleet.traffic and sc.workload.arrival in ("all-at-once", "closed-loop"):
            raise CalcError(f"fleet.traffic needs workload.arrival poisson or bursty; got {sc.workload.arrival!r}",
                            "workload.arrival")
        names = [c.name for c in sc.workload.classes]
        for i, ph in enumerate(self.fleet.traffic):
            for cname, _ in ph.shares or ():
                if cname not in names:
                    raise CalcError(f"fleet.traffic[{i}].shares names request class {cname!r}, which the workload "
                                    f"does not have; classes: {', '.join(names)}", f"fleet.traffic[{i}].shares")
        return self

    @property
    def name(self) -> str:
        """The scenario's name."""
        return self.scenario.name

    @property
    def description(self) -> str:
        """The scenario's description."""
        return self.scenario.description

    def replace(self, fleet: dict | None = None, **changes) -> "FleetScenario":
        """A copy with scenario keys changed (as :meth:`Scenario.replace`) and/or ``fleet`` keys replaced."""
        data = self.to_dict()
        sc = Scenario.from_dict({k: v for k, v in data.items() if k != "fleet"}).replace(**changes) \
            if changes else self.scenario
        out = sc.to_dict()
        fl = data["fleet"]
        if fleet:
            if "pools" not in fleet and any(k in fleet for k in ("replicas", "router", "autoscaler")):
                # The single-pool form: start from the one pool there is (if one), change what is given.
                pools = fl.pop("pools")
                if len(pools) == 1:
                    fl.update({k: pools[0][k] for k in ("replicas", "router", "autoscaler")})
            fl.update(fleet)
        out["fleet"] = fl
        return FleetScenario.from_dict(out)

    def to_dict(self) -> dict:
        """The scenario's JSON with the fleet under ``fleet``."""
        out = self.scenario.to_dict()
        out["fleet"] = self.fleet.to_dict()
        return out


def as_fleet_scenario(scenario) -> FleetScenario:
    """A :class:`FleetScenario` from one, from a plain :class:`Scenario` (one replica), or from a dict.

    >>> as_fleet_scenario(Scenario()).fleet.pools[0].replicas
    1
    """
    if isinstance(scenario, FleetScenario):
        return scenario
    if isinstance(scenario, Scenario):
        return FleetScenario(scenario, FleetConfig()).check()
    if isinstance(scenario, dict):
        return FleetScenario.from_dict(scenario)
    raise CalcError(f"scenario must be a Scenario, a FleetScenario or a dict; got {type(scenario).__name__}",
                    "scenario")


# ----------------------------------------------------------------------------------------------- traffic
def _rescale(phases, op_s: float) -> float:
    """The real time (s) at which the integrated rate of ``phases`` reaches ``op_s`` (operational seconds)."""
    start_t = 0.0
    acc = 0.0
    for ph in phases:
        area = ph.requests_expected()
        if op_s <= acc + area and area > 0:
            v = op_s - acc
            if v <= 0:
                return start_t
            r0, r1, d = ph.rate_per_s, ph.end_rate, ph.duration_s
            disc = r0 * r0 + 2.0 * (r1 - r0) * v / d
            tau = 2.0 * v / (r0 + math.sqrt(disc if disc > 0 else 0.0))
            return start_t + min(tau, d)
        acc += area
        start_t += ph.duration_s
    return start_t


def fleet_requests(fs: FleetScenario) -> list:
    """The fleet's requests in arrival order: the workload's, on the traffic phases' clock when there are any.

    Without phases these are exactly :func:`calc.sim.workload.generate_requests`'s.
    With phases, the workload's process is drawn at rate 1 for as many
    operational seconds as the phases hold requests (capped at
    ``workload.requests``) and rescaled (see the module docstring).

    >>> fs = FleetScenario.from_dict({"workload": {"requests": 100000},
    ...     "fleet": {"traffic": [{"duration_s": 60, "rate_per_s": 0, "end_rate_per_s": 10}]}})
    >>> reqs = fleet_requests(fs)
    >>> len(reqs), sum(r.arrival_ns < 30 * 10**9 for r in reqs)    # 300 expected, a quarter in the first half
    (304, 79)
    """
    sc = fs.scenario
    phases = fs.fleet.traffic
    tokenizer = tokenizer_of(sc.model)  # ShareGPT lengths in the served model's tokens
    if not phases:
        return generate_requests(sc.workload, sc.seed, sc.max_model_len, tokenizer=tokenizer)
    if all(p.shares is None for p in phases):
        total = math.fsum(p.requests_expected() for p in phases)
        wl = dataclasses.replace(sc.workload, rate_per_s=1.0, duration_s=total)
        reqs = generate_requests(wl, sc.seed, sc.max_model_len, tokenizer=tokenizer)
        for r in reqs:
            r.arrival_ns = round(_rescale(phases, r.arrival_ns / NS_PER_S) * NS_PER_S)
        return reqs
    # A mix that changes between phases: each phase is drawn on its own (its own seed, derived by integers
    # only), rescaled into its time slot, and the requests are numbered again in arrival order.
    reqs = []
    start_s = 0.0
    for i, ph in enumerate(phases):
        area = ph.requests_expected()
        classes = sc.workload.classes
        if ph.shares is not None:
            given = dict(ph.shares)
            classes = tuple(dataclasses.replace(c, share=given.get(c.name, 0.0)) for c in classes)
        if area > 0 and len(reqs) < sc.workload.requests:
            wl = dataclasses.replace(sc.workload, rate_per_s=1.0, duration_s=area, classes=classes,
                                     requests=sc.workload.requests - len(reqs))
            seed = (sc.seed * 1_000_003 + 7_919 * (i + 1)) % 2**32
            for r in generate_requests(wl, seed, sc.max_model_len, tokenizer=tokenizer):
                r.arrival_ns = round((start_s + _rescale((ph,), r.arrival_ns / NS_PER_S)) * NS_PER_S)
                r.rid = len(reqs)
                reqs.append(r)
        start_s += ph.duration_s
    return reqs
