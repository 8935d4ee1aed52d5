"""A fleet: replicas behind a router, in pools, scaled by an autoscaler, on one event clock.

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

One heap of ``(time_ns, priority, seq, event)`` runs every replica: arrivals
(routed at once to a serving replica of the request's pool), the end of each
replica's engine step, autoscaler ticks and replicas becoming ready.
Replicas are paid for from the moment they are requested (pod start) to the
moment they are gone (scale-down: they take no new requests, finish the ones
they hold, then go). Every figure comes from the replicas' own engine
(:class:`calc.sim.engine.Replica`), so a fleet of one replica gives exactly
the numbers of :func:`calc.sim.run.simulate` (tested).

Traffic phases use the time-rescaling of a Poisson (or bursty) process: the
scenario's arrival process is drawn at rate 1 in "operational time" and each
arrival at operational time ``u`` happens at the real time ``t`` where the
integrated rate reaches ``u``; lengths and classes are drawn as the workload
says. Source: time-rescaling theorem for point processes (e.g. Brown et al.,
"The time-rescaling theorem and its application to neural spike train data
analysis", Neural Computation 2002; Cinlar, *Introduction to Stochastic
Processes*, 1975, non-homogeneous Poisson processes).

>>> fs = FleetScenario.from_dict({"workload": {"requests": 60, "rate_per_s": 6},
...                               "fleet": {"replicas": 2, "router": "least-outstanding"}})
>>> r = simulate_fleet(fs)
>>> r.summary["requests_completed"], r.summary["replicas_max"], r.summary["replica_hours"]
(60, 2, 0.00748707)
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
import math
from dataclasses import dataclass, field

from calc.cost import replica_usd_per_hour, usd_per_million_tokens
from calc.errors import CalcError, check_range
from calc.sim.autoscaler import Autoscaler, AutoscalerConfig, scale_up_delay_ns
from calc.sim.events import CONTROL, STEP_END, EventQueue
from calc.sim.hardware import replica_hardware
from calc.sim.metrics import PERCENTILES, LatencySink, latency_stats, weighted_nearest_rank
from calc.sim.pools import PoolSpec
from calc.sim.router import ROUTERS, class_routes, make_router
from calc.sim.run import build_replica
from calc.sim.scenario import Scenario
from calc.sim.scheduler import TICKS
from calc.sim.speculation import advance_ticks
from calc.sim.workload import generate_requests
from calc.units import NS_PER_S, SECONDS_PER_HOUR, round_sig

__all__ = ["Phase", "FleetConfig", "FleetScenario", "as_fleet_scenario", "fleet_requests", "Fleet", "FleetResult",
           "simulate_fleet", "SERIES_KEYS"]

SERIES_KEYS = ("t_s", "queue_depth", "running", "kv_use_fraction", "kv_waste_fraction", "ttft_p50_s", "ttft_p99_s",
               "itl_p50_s", "itl_p99_s", "output_tokens_per_s", "requests_per_s", "gpu_util_reported",
               "compute_utilization", "replicas", "preemptions", "prefix_hit_rate")

_FLEET_KEYS = ("replicas", "router", "autoscaler", "pools", "traffic", "percentile_window_s")


def _r(value, digits: int = 6):
    return None if value is None else round_sig(value, digits)


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
        if self.fleet.traffic and sc.workload.arrival == "all-at-once":
            raise CalcError("fleet.traffic needs workload.arrival poisson or bursty; got 'all-at-once'",
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
    if not phases:
        return generate_requests(sc.workload, sc.seed, sc.max_model_len)
    if all(p.shares is None for p in phases):
        total = math.fsum(p.requests_expected() for p in phases)
        wl = dataclasses.replace(sc.workload, rate_per_s=1.0, duration_s=total)
        reqs = generate_requests(wl, sc.seed, sc.max_model_len)
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
            for r in generate_requests(wl, seed, sc.max_model_len):
                r.arrival_ns = round((start_s + _rescale((ph,), r.arrival_ns / NS_PER_S)) * NS_PER_S)
                r.rid = len(reqs)
                reqs.append(r)
        start_s += ph.duration_s
    return reqs


# ------------------------------------------------------------------------------------------------ metrics
class RankedInts:
    """A growing multiset of integers (with integer weights) that answers exact nearest-rank percentiles fast.

    Values land in a small unsorted buffer; once it holds more than an eighth of
    the sorted part it is merged in (amortized O(1) per value; the merge is a
    C-level sort of two sorted runs). A query counts weight at or below a value
    by bisection in both parts, so it costs O(log^2 n), never a full sort: a
    live run can show exact percentiles every frame. Answers equal
    :func:`calc.sim.metrics.latency_stats` / :meth:`~calc.sim.metrics.LatencySink.itl_stats`
    on the same values (the same rank rule, the same float expressions).
    Source: nearest-rank percentiles as in :mod:`calc.sim.metrics`; the
    buffer-and-merge scheme is the log-structured merge idea (O'Neil et al.,
    "The log-structured merge-tree", Acta Informatica 1996), with two levels.

    >>> r = RankedInts()
    >>> for v in (50, 10, 40, 20, 30): r.add(v)
    >>> r.rank_value(r.count_target(50)), r.rank_value(r.count_target(100)), r.total_value
    (30, 50, 150)
    """

    __slots__ = ("vals", "wts", "cum", "buf_v", "buf_w", "count", "total_weight", "total_value", "_buf_run")

    def __init__(self):
        self.vals: list[int] = []
        self.wts: list[int] = []
        self.cum: list[int] = [0]
        self.buf_v: list[int] = []
        self.buf_w: list[int] = []
        self.count = 0
        self.total_weight = 0
        self.total_value = 0  # sum of value x weight (exact integer)
        self._buf_run = None  # the buffer sorted, while it has not grown

    def add(self, value: int, weight: int = 1) -> None:
        """Add ``value`` with ``weight``."""
        self.buf_v.append(value)
        self.buf_w.append(weight)
        self.count += 1
        self.total_weight += weight
        self.total_value += value * weight

    def _runs(self):
        buf = self.buf_v
        if len(buf) > 64 and len(buf) * 16 > len(self.vals):
            pairs = sorted(zip(self.vals + buf, self.wts + self.buf_w))
            self.vals = [v for v, _ in pairs]
            self.wts = [w for _, w in pairs]
            self.cum = [0, *itertools.accumulate(self.wts)]
            self.buf_v, self.buf_w = [], []
            self._buf_run = None
            return ((self.vals, self.cum),)
        if not buf:
            return ((self.vals, self.cum),)
        run = self._buf_run
        if run is None or run[2] != len(buf):
            pairs = sorted(zip(buf, self.buf_w))
            run = self._buf_run = ([v for v, _ in pairs], [0, *itertools.accumulate(w for _, w in pairs)], len(buf))
        return ((self.vals, self.cum), run[:2])

    def count_target(self, q: float) -> int:
        """Rank (in count) of the ``q``-th percentile, as :func:`calc.sim.metrics.latency_stats` computes it."""
        return max(1, math.ceil(q / 100 * self.count))

    def weight_target(self, q: float) -> int:
        """Rank (in weight) of the ``q``-th percentile, as :func:`calc.sim.metrics.weighted_nearest_rank` has it."""
        return max(1, math.ceil(q * self.total_weight / 100))

    def rank_value(self, target: int, others=()) -> int:
        """The smallest value whose cumulative weight (here and in ``others``) reaches ``target``."""
        return rank_value([run for r in (self, *others) for run in r._runs()], target)


def rank_value(runs, target: int) -> int:
    """The smallest ``x`` in sorted ``runs`` of ``(values, cumulative weights)`` whose weight up to ``x`` reaches target.

    >>> rank_value([([1, 5, 9], [0, 1, 2, 3]), ([2, 3], [0, 4, 5])], 6)   # weights: 1:1, 2:4, 3:1, 5:1, 9:1
    3
    """
    def weight_upto(x):
        return sum(cum[bisect.bisect_right(vals, x)] for vals, cum in runs)

    best = None
    for vals, _ in runs:
        lo, hi = 0, len(vals)
        while lo < hi:
            mid = (lo + hi) // 2
            if weight_upto(vals[mid]) >= target:
                hi = mid
            else:
                lo = mid + 1
        if lo < len(vals) and (best is None or vals[lo] < best):
            best = vals[lo]
    if best is None:
        raise CalcError("percentile of no values: there is nothing to rank", "values")
    return best


def ranked_stats(parts, prefix: str, *, mean: bool = True) -> dict:
    """``latency_stats`` of the union of :class:`RankedInts` ``parts`` (integer ns in, seconds out), without sorting.

    >>> r = RankedInts(); r.add(1_000_000); r.add(3_000_000)
    >>> ranked_stats([r], "ttft") == latency_stats([1_000_000, 3_000_000], "ttft")
    True
    """
    n = sum(p.count for p in parts)
    out = {}
    if mean:
        out[f"{prefix}_mean_s"] = round_sig(sum(p.total_value for p in parts) / n / NS_PER_S) if n else None
    runs = [run for p in parts for run in p._runs()] if n else None
    for q in PERCENTILES:
        out[f"{prefix}_p{q}_s"] = round_sig(rank_value(runs, max(1, math.ceil(q / 100 * n))) / NS_PER_S) \
            if n else None
    return out


class WindowSink(LatencySink):
    """A :class:`~calc.sim.metrics.LatencySink` that also keeps when each TTFT and ITL came, for trailing windows,
    and ranked copies of every latency (overall and per class) so that a summary never sorts them again.

    The fleet sets ``now_ns`` before each step ends (the scheduler reports an
    inter-token gap without its time). ``windows=False`` keeps no times and no
    window lists (a run without a time series): the summary is the same.

    >>> from calc.sim.workload import Request
    >>> s = WindowSink(1); s.now_ns = 7; s.itl(3, 2); s.first_token(Request(0, 1, 5, 5), 9)
    >>> s.itl_t, s.ttft_t, s.itl_stats() == LatencySink.itl_stats(s)
    ([7], [9], True)
    """

    def __init__(self, ticks: int, windows: bool = True):
        super().__init__(ticks)
        if not windows:
            self.itl = self._itl_ranked_only
        self.now_ns = 0
        self.ttft_t: list[int] = []
        self.itl_t: list[int] = []
        self.itl_v: list[int] = []
        self.itl_w: list[int] = []
        self.ttft_rank = RankedInts()
        self.e2e_rank = RankedInts()
        self.itl_rank = RankedInts()
        self.ttft_rank_by_class: dict[int, RankedInts] = {}
        self.e2e_rank_by_class: dict[int, RankedInts] = {}

    def first_token(self, req, now_ns):
        """Record the TTFT (as the base sink), its time and its rank."""
        super().first_token(req, now_ns)  # once per request: not worth inlining
        value = now_ns - req.arrival_ns
        self.ttft_t.append(now_ns)
        self.ttft_rank.add(value)
        rank = self.ttft_rank_by_class.get(req.class_index)
        if rank is None:
            rank = self.ttft_rank_by_class[req.class_index] = RankedInts()
        rank.add(value)

    def finish(self, req, now_ns):
        """Record the end-to-end latency (as the base sink) and its rank."""
        super().finish(req, now_ns)
        value = now_ns - req.arrival_ns
        self.e2e_rank.add(value)
        rank = self.e2e_rank_by_class.get(req.class_index)
        if rank is None:
            rank = self.e2e_rank_by_class[req.class_index] = RankedInts()
        rank.add(value)

    def itl(self, value_ns, weight_ticks):
        """Record the gap (as the base sink) with the current time and its rank."""
        w = self.itl_weights
        w[value_ns] = w.get(value_ns, 0) + weight_ticks
        self.itl_t.append(self.now_ns)
        self.itl_v.append(value_ns)
        self.itl_w.append(weight_ticks)
        r = self.itl_rank  # RankedInts.add, inlined: one call per engine step
        r.buf_v.append(value_ns)
        r.buf_w.append(weight_ticks)
        r.count += 1
        r.total_weight += weight_ticks
        r.total_value += value_ns * weight_ticks

    def _itl_ranked_only(self, value_ns, weight_ticks):
        """:meth:`itl` without the window lists (no time series to draw them)."""
        w = self.itl_weights
        w[value_ns] = w.get(value_ns, 0) + weight_ticks
        r = self.itl_rank
        r.buf_v.append(value_ns)
        r.buf_w.append(weight_ticks)
        r.count += 1
        r.total_weight += weight_ticks
        r.total_value += value_ns * weight_ticks

    def itl_stats(self) -> dict:
        """As :meth:`calc.sim.metrics.LatencySink.itl_stats`, from the ranked copy (no sort of every gap)."""
        r = self.itl_rank
        out = {}
        if not r.count:
            out["itl_mean_s"] = None
            for q in PERCENTILES:
                out[f"itl_p{q}_s"] = None
            return out
        out["itl_mean_s"] = round_sig(r.total_value / r.total_weight / NS_PER_S)
        runs = r._runs()
        for q in PERCENTILES:
            out[f"itl_p{q}_s"] = round_sig(rank_value(runs, r.weight_target(q)) / NS_PER_S)
        return out


class _Member:
    """A replica in the fleet, with its life times: requested, ready, removed (ns; None while not yet)."""

    __slots__ = ("id", "pool", "rep", "start_ns", "ready_ns", "removed_ns", "draining", "snap")

    def __init__(self, mid, pool, rep, start_ns, ready_ns):
        self.id = mid
        self.pool = pool
        self.rep = rep
        self.start_ns = start_ns
        self.ready_ns = ready_ns
        self.removed_ns = None
        self.draining = False
        self.snap = None  # autoscaler's last reading: (t_ns, busy_ns, queue integral, kv integral)

    @property
    def outstanding(self) -> int:
        """Requests in flight on this replica (for the least-outstanding router)."""
        return self.rep.outstanding


class _Pool:
    __slots__ = ("index", "spec", "scenario", "router", "scaler", "delay_ns", "serving", "starting", "members")

    def __init__(self, index, spec, scenario, delay_ns):
        self.index = index
        self.spec = spec
        self.scenario = scenario
        self.router = make_router(spec.router)
        self.scaler = Autoscaler(spec.autoscaler) if spec.autoscaler else None
        self.delay_ns = delay_ns
        self.serving: list[_Member] = []
        self.starting: list[_Member] = []
        self.members: list[_Member] = []


def _integral(level: int, acc: int, last_ns: int, t_ns: int) -> int:
    return acc + level * (t_ns - last_ns) if t_ns > last_ns else acc


def _flops_done(rep) -> float | None:
    """FLOPs a replica has done (steps counted when they start), as its compute utilization counts them."""
    if rep.flops is None or not rep.peak_flops_per_s:
        return None
    done = rep.flops(rep.sum_new_tokens, rep.sum_pairs)
    spec = getattr(rep, "speculation", None)
    if spec is not None:
        done += spec.draft_cost_ratio * rep.flops(rep.sum_draft_tokens, 0)
    return done


def _weighted_ranks(values: list, weights: list, qs) -> list:
    """:func:`calc.sim.metrics.weighted_nearest_rank` of ``zip(values, weights)`` at each of ``qs``, sorting once.

    >>> v, w = [30, 10, 20, 10], [1, 2, 5, 1]
    >>> _weighted_ranks(v, w, (50, 99)) == [weighted_nearest_rank(list(zip(v, w)), q) for q in (50, 99)]
    True
    """
    ordered = sorted(zip(values, weights))
    total = 0
    for w in weights:
        total += w
    if total <= 0:
        return [weighted_nearest_rank(list(zip(values, weights)), q) for q in qs]  # its error, named
    targets = [max(1, math.ceil(q * total / 100)) for q in qs]
    found = {}
    pending = sorted(set(targets))
    k, cum = 0, 0
    for value, w in ordered:  # one pass for every target, lowest first
        cum += w
        while cum >= pending[k]:
            found[pending[k]] = value
            k += 1
            if k == len(pending):
                return [found[t] for t in targets]
    last = ordered[-1][0]
    return [found.get(t, last) for t in targets]


def _nice_interval_ns(min_ns: int) -> int:
    """The smallest of 1, 2, 5 x 10^k ns that is at least ``min_ns``."""
    step = 1
    while True:
        for m in (1, 2, 5):
            if m * step >= min_ns:
                return m * step
        step *= 10


# --------------------------------------------------------------------------------------------------- fleet
@dataclass(frozen=True)
class FleetResult:
    """A finished fleet run: ``summary``, ``time_series`` (columns :data:`SERIES_KEYS`) and ``scenario``.

    >>> r = simulate_fleet(Scenario.from_dict({"workload": {"requests": 10, "rate_per_s": 5}}))
    >>> sorted(r.to_dict()), r.time_series["t_s"][:2]
    (['scenario', 'summary', 'time_series'], [1.0, 2.0])
    """

    summary: dict
    time_series: dict
    scenario: dict

    def to_dict(self) -> dict:
        """Everything as JSON-ready data."""
        return {"summary": self.summary, "time_series": self.time_series, "scenario": self.scenario}


class Fleet:
    """One run of a fleet scenario, advanced in slices (``advance``) or to the end.

    The time series is sampled every ``interval_ns`` (the scenario's
    ``sample_interval_s``, widened to a 1-2-5 step so that the run stays near
    ``max_time_series_points`` points; fixed before the run starts, never
    thinned, so that a live run can send each point once). ``time_series=False``
    skips the series (a caller that reads only the summary: it is the same).

    >>> f = Fleet(Scenario.from_dict({"workload": {"requests": 30}}))
    >>> f.advance(max_events=5), f.events
    (False, 5)
    >>> f.advance(), f.result().summary["requests_completed"]
    (True, 30)
    """

    def __init__(self, scenario, *, step_time_s=None, hardware=None, time_series: bool = True):
        fs = as_fleet_scenario(scenario)
        sc = fs.scenario
        self.fleet_scenario = fs
        self.scenario = sc
        self.hardware = hardware if hardware is not None else replica_hardware(sc)
        self.step_time_s = step_time_s
        self.requests = fleet_requests(fs)
        self._prompt_tokens = sum(r.prompt_tokens for r in self.requests)  # integers: exact
        self._output_tokens = sum(r.output_tokens for r in self.requests)
        self.sink = WindowSink(TICKS, windows=time_series)
        self.routes = class_routes([c.name for c in sc.workload.classes], [p.classes for p in fs.fleet.pools])
        self.queue = EventQueue()
        self.members: list[_Member] = []
        self.pools: list[_Pool] = []
        weights = self.hardware.weights_bytes_per_gpu
        for i, spec in enumerate(fs.fleet.pools):
            delay = scale_up_delay_ns(spec.autoscaler, weights) if spec.autoscaler else 0
            pool = _Pool(i, spec, spec.replica_scenario(sc), delay)
            self.pools.append(pool)
            for _ in range(spec.replicas):
                m = self._new_member(pool, 0, 0)
                pool.serving.append(m)
            if pool.scaler:
                self.queue.push(round(spec.autoscaler.interval_s * NS_PER_S), CONTROL, ("tick", pool))
        self.single = len(self.members) == 1 and not any(p.scaler for p in self.pools)
        self.events = 0
        self.now_ns = 0
        self.in_flight = 0
        self.done = not self.requests
        self._next = 0
        self.queue_max = 0
        self.running_max = 0
        self.scale_ups = 0
        self.scale_downs = 0
        self.scale_events: list[dict] = []
        # time series
        last_arrival = self.requests[-1].arrival_ns if self.requests else 0
        want = round(sc.sample_interval_s * NS_PER_S)
        self.interval_ns = max(want, _nice_interval_ns(-(-2 * last_arrival // sc.max_time_series_points)))
        # Without a series no sample ever falls due (the summary reads none of it).
        self.next_sample_ns = self.interval_ns if time_series else float("inf")
        self.window_ns = max(self.interval_ns, round(fs.fleet.percentile_window_s * NS_PER_S))
        self.series = {k: [] for k in SERIES_KEYS}
        self._prev = None  # cumulative readings at the previous sample
        self._ttft_i = 0
        self._itl_i = 0

    # ------------------------------------------------------------------------------------ replicas
    def _new_member(self, pool: _Pool, start_ns: int, ready_ns: int) -> _Member:
        mid = len(self.members)
        rep = build_replica(pool.scenario, self.hardware, step_time_s=self.step_time_s, sink=self.sink, name=mid)
        m = _Member(mid, pool, rep, start_ns, ready_ns)
        pool.members.append(m)
        self.members.append(m)
        return m

    def _remove(self, m: _Member, now_ns: int) -> None:
        m.removed_ns = now_ns
        pool = m.pool
        if m in pool.serving:
            pool.serving.remove(m)
        if m in pool.starting:
            pool.starting.remove(m)

    def _scale(self, pool: _Pool, delta: int, now_ns: int, signal: float) -> None:
        before = len(pool.serving) + len(pool.starting)
        if delta > 0:
            for _ in range(delta):
                m = self._new_member(pool, now_ns, now_ns + pool.delay_ns)
                pool.starting.append(m)
                self.queue.push(m.ready_ns, CONTROL, ("ready", m))
            self.scale_ups += delta
        else:
            for _ in range(-delta):
                if pool.starting:
                    self._remove(pool.starting[-1], now_ns)  # a pod not yet serving is cancelled first
                else:
                    m = pool.serving[-1]
                    pool.serving.remove(m)
                    m.draining = True
                    if m.rep.plan is None and not m.rep.outstanding:
                        self._remove(m, now_ns)
            self.scale_downs += -delta
        self.scale_events.append({"t_s": _r(now_ns / NS_PER_S), "pool": pool.spec.name, "signal":
                                  pool.spec.autoscaler.signal, "value": _r(signal, 4), "from": before,
                                  "to": before + delta})

    def _signal(self, pool: _Pool, now_ns: int):
        """The pool's signal over the last interval: time-weighted mean over its serving replicas."""
        kind = pool.spec.autoscaler.signal
        num = 0
        den = 0
        for m in pool.serving:
            rep = m.rep
            last = rep._last_ns
            busy = rep.busy_ns_until(now_ns)
            q = _integral(rep.queue_depth, rep.int_queue, last, now_ns)
            kv = _integral(rep.kv_used_blocks, rep.int_used_blocks, last, now_ns)
            # A replica that just became ready has done no work yet: its first interval starts from zero.
            snap = m.snap if m.snap is not None else (m.ready_ns, 0, 0, 0)
            m.snap = (now_ns, busy, q, kv)
            dt = now_ns - snap[0]
            if dt <= 0:
                continue
            if kind == "gpu_util":
                num += busy - snap[1]
                den += dt
            elif kind == "queue_depth":
                num += q - snap[2]
                den += dt
            else:
                num += kv - snap[3]
                den += dt * rep.total_blocks
        return num / den if den else None

    # ---------------------------------------------------------------------------------- sampling
    def _cumulative(self, t_ns: int) -> tuple:
        busy = exposure = emitted = preempt = hits = queries = 0
        flops = 0.0
        has_flops = True
        has_cache = False
        for m in self.members:
            rep = m.rep
            busy += rep.busy_ns_until(t_ns)
            if m.ready_ns <= t_ns:
                end = t_ns if m.removed_ns is None or m.removed_ns > t_ns else m.removed_ns
                if end > m.ready_ns:
                    exposure += end - m.ready_ns
            emitted += rep.emitted_tokens
            preempt += rep.preemptions
            f = _flops_done(rep)
            if f is None:
                has_flops = False
            else:
                flops += f
            sched = getattr(rep, "sched", None)
            cache = sched.cache if sched is not None else None
            if cache is not None:
                has_cache = True
                hits += cache.hit_tokens
                queries += cache.query_tokens
        return (t_ns, busy, exposure, emitted, self._next, flops if has_flops else None, preempt,
                (hits, queries) if has_cache else None)

    def _sample(self, t_ns: int) -> None:
        s = self.series
        cur = self._cumulative(t_ns)
        prev = self._prev if self._prev is not None else (0, 0, 0, 0, 0, 0.0, 0, None)
        self._prev = cur
        dt = t_ns - prev[0]
        queue = running = used = slots = states = total = 0
        live = 0
        for m in self.members:
            if m.removed_ns is not None:
                continue
            live += 1
            if m.ready_ns > t_ns:
                continue
            rep = m.rep
            q, r, u, st = rep._levels()
            queue += q
            running += r
            used += u
            states += st
            total += rep.total_blocks
            slots += u * (1 if self.scenario.batching == "static" else self.scenario.block_size)
        s["t_s"].append(_r(t_ns / NS_PER_S))
        s["queue_depth"].append(queue)
        s["running"].append(running)
        s["kv_use_fraction"].append(_r(used / total, 4) if total else 0.0)
        s["kv_waste_fraction"].append(_r(max(0.0, 1.0 - states / slots), 4) if slots else 0.0)
        lo = t_ns - self.window_ns
        sink = self.sink
        i = bisect.bisect_left(sink.ttft_t, lo, self._ttft_i)
        self._ttft_i = i
        window = sink.ttft_ns[i:]
        if window:
            window.sort()
            n = len(window)
            s["ttft_p50_s"].append(_r(window[max(1, math.ceil(0.5 * n)) - 1] / NS_PER_S))
            s["ttft_p99_s"].append(_r(window[max(1, math.ceil(0.99 * n)) - 1] / NS_PER_S))
        else:
            s["ttft_p50_s"].append(None)
            s["ttft_p99_s"].append(None)
        j = bisect.bisect_left(sink.itl_t, lo, self._itl_i)
        self._itl_i = j
        if j < len(sink.itl_v):
            p50, p99 = _weighted_ranks(sink.itl_v[j:], sink.itl_w[j:], (50, 99))
            s["itl_p50_s"].append(_r(p50 / NS_PER_S))
            s["itl_p99_s"].append(_r(p99 / NS_PER_S))
        else:
            s["itl_p50_s"].append(None)
            s["itl_p99_s"].append(None)
        s["output_tokens_per_s"].append(_r(max(0, cur[3] - prev[3]) * NS_PER_S / dt) if dt else 0.0)
        s["requests_per_s"].append(_r((cur[4] - prev[4]) * NS_PER_S / dt) if dt else 0.0)
        dexp = cur[2] - prev[2]
        s["gpu_util_reported"].append(_r(min(1.0, (cur[1] - prev[1]) / dexp), 4) if dexp > 0 else 0.0)
        if cur[5] is None:
            s["compute_utilization"].append(None)
        else:
            peak = self.hardware.peak_flops_per_s
            s["compute_utilization"].append(
                _r(min(1.0, (cur[5] - prev[5]) / (peak * dexp / NS_PER_S)), 4) if dexp > 0 else 0.0)
        s["replicas"].append(live)
        s["preemptions"].append(cur[6])
        pc = cur[7]
        s["prefix_hit_rate"].append(None if pc is None else (_r(pc[0] / pc[1], 4) if pc[1] else 0.0))

    def sample_until(self, t_ns: int) -> None:
        """Take every sample due at or before ``t_ns`` (the state is that before any event at ``t_ns``)."""
        while self.next_sample_ns <= t_ns:
            self._sample(self.next_sample_ns)
            self.next_sample_ns += self.interval_ns

    # ------------------------------------------------------------------------------------- driving
    def next_event_ns(self):
        """Time of the next event (arrival or heap), or None when the run is over."""
        if self.done:
            return None
        t = self.requests[self._next].arrival_ns if self._next < len(self.requests) else None
        h = self.queue.peek_time()
        if t is None or (h is not None and h < t):
            return h
        return t

    def advance(self, max_events: int | None = None, until_ns: int | None = None) -> bool:
        """Handle events (at most ``max_events``; none at or after ``until_ns``); True when the run is over.

        The run is over when every request has arrived and no replica has a
        step in flight (autoscaler ticks still pending are dropped).
        """
        if self.done:
            return True
        reqs = self.requests
        n_reqs = len(reqs)
        heap = self.queue._heap
        pop, push = self.queue.pop, self.queue.push
        pools, routes, sink = self.pools, self.routes, self.sink
        single = self.single
        budget = -1 if max_events is None else max_events
        handled = 0
        while handled != budget:
            nxt = self._next
            if nxt < n_reqs:
                t_arr = reqs[nxt].arrival_ns
                arrival = not heap or t_arr <= heap[0][0]
            else:
                if not self.in_flight:
                    self.done = True
                    break
                arrival = False
            now = t_arr if arrival else heap[0][0]
            if until_ns is not None and now >= until_ns:
                break
            if now >= self.next_sample_ns:
                self.sample_until(now)
            handled += 1
            if arrival:
                req = reqs[nxt]
                self._next = nxt + 1
                pool = pools[routes[req.class_index]]
                m = pool.router.choose(pool.serving)
                rep = m.rep
                rep.submit(req, now)
                if single:
                    self.queue_max = rep.max_queue
                else:
                    q = 0
                    for other in self.members:
                        q += other.rep.queue_depth
                    if q > self.queue_max:
                        self.queue_max = q
                if rep.plan is None:
                    end = rep.start_step(now)
                    if end is not None:
                        push(end, STEP_END, m)
                        self.in_flight += 1
                        if single:
                            self.running_max = rep.max_running
                        else:
                            self._note_running(rep)
            else:
                _, kind, payload = pop()
                if kind == STEP_END:
                    m = payload
                    rep = m.rep
                    if single:
                        # One replica, no other kind of event: this step end and the ones before the next
                        # arrival, the next sample and the stop time follow one another without the heap.
                        limit = reqs[self._next].arrival_ns if self._next < n_reqs else math.inf
                        if self.next_sample_ns < limit:
                            limit = self.next_sample_ns
                        if until_ns is not None and until_ns < limit:
                            limit = until_ns
                        end, now, steps = rep.run_until(now, limit, budget - handled + 1 if budget >= 0 else -1,
                                                        sink_clock=True)
                        handled += steps - 1
                    else:
                        sink.now_ns = now
                        rep.end_step(now)
                        end = rep.start_step(now)
                    if end is not None:
                        push(end, STEP_END, m)
                        if single:
                            self.running_max = rep.max_running
                        else:
                            self._note_running(rep)
                    else:
                        self.in_flight -= 1
                        if m.draining and not rep.outstanding:
                            self._remove(m, now)
                else:
                    self._control(payload, now)
            self.now_ns = now
        self.events += handled
        return self.done

    def _note_running(self, rep) -> None:
        if self.single:
            self.running_max = rep.max_running
            return
        r = 0
        for other in self.members:
            r += other.rep.running
        if r > self.running_max:
            self.running_max = r

    def _control(self, payload, now: int) -> None:
        what, obj = payload
        if what == "ready":
            m = obj
            if m.removed_ns is not None:
                return  # cancelled while starting
            pool = m.pool
            pool.starting.remove(m)
            pool.serving.append(m)
            pool.serving.sort(key=lambda x: x.id)
            return
        pool = obj
        cfg = pool.spec.autoscaler
        signal = self._signal(pool, now)
        if signal is not None:
            delta = pool.scaler.decide(signal, now, len(pool.serving) + len(pool.starting))
            if delta:
                self._scale(pool, delta, now, signal)
        self.queue.push(now + round(cfg.interval_s * NS_PER_S), CONTROL, ("tick", pool))

    def run(self) -> "FleetResult":
        """Advance to the end and return the result."""
        self.advance()
        if any(m.rep.outstanding for m in self.members):
            raise CalcError("the fleet simulation ended with requests still queued; this is a bug in calc.sim",
                            "scenario")
        return self.result()

    # -------------------------------------------------------------------------------------- results
    def result(self) -> FleetResult:
        """Summary and time series of the run so far."""
        return FleetResult(summary=self.summary(), time_series={k: list(v) for k, v in self.series.items()},
                           scenario=self.fleet_scenario.to_dict())

    def summary(self) -> dict:
        """The run's figures: the keys of :func:`calc.sim.run.summarize`, fleet-wide, plus the fleet's own.

        Levels (queue, running) are fleet totals; utilizations and KV use are
        over replica-time while serving; cost covers every replica from its
        request to its removal. For a single replica every shared key equals
        :func:`calc.sim.run.simulate`'s.
        """
        sc, sink, hw = self.scenario, self.sink, self.hardware
        end_ns = max(sink.last_finish_ns, 1) if sink.last_finish_ns else max(self.now_ns, 1)
        dur_s = end_ns / NS_PER_S
        reps = [m.rep for m in self.members]
        completed = sum(r.finished for r in reps)
        rejected = sum(r.rejected for r in reps)
        out_tokens = sum(r.output_tokens for r in reps)
        in_tokens = sum(r.input_tokens for r in reps)
        out_tps = out_tokens / dur_s
        total_tps = (out_tokens + in_tokens) / dur_s
        block_tokens = 1 if sc.batching == "static" else sc.block_size
        int_used = sum(r.int_used_blocks for r in reps)
        slots = int_used * block_tokens
        exposure = busy = billed = 0
        kv_exposure = 0
        peak_used = 0.0
        flops = 0.0
        has_flops = True
        for m in self.members:
            end = end_ns if m.removed_ns is None or m.removed_ns > end_ns else m.removed_ns
            billed += max(0, end - m.start_ns)
            served = max(0, end - m.ready_ns)
            exposure += served
            kv_exposure += served * m.rep.total_blocks
            busy += m.rep.busy_ns_until(end_ns)
            peak_used = max(peak_used, m.rep.peak_used_blocks / m.rep.total_blocks)
            f = _flops_done(m.rep)
            if f is None:
                has_flops = False
            else:
                flops += f
        n_requests = len(self.requests)
        summary = {
            "model": hw.model_name,
            "gpu": hw.gpu_name,
            "gpus": hw.gpus,
            "batching": sc.batching,
            "allocation": sc.allocation if sc.batching == "continuous" else "static",
            "requests_total": n_requests,
            "requests_completed": completed,
            "requests_rejected": rejected,
            "requests_unfinished": n_requests - completed - rejected,
            "input_tokens": in_tokens,
            "output_tokens": out_tokens,
            "prefill_tokens_computed": sum(r.prefill_tokens_computed for r in reps),
            "duration_s": _r(dur_s),
            "throughput_requests_per_s": _r(completed / dur_s),
            "throughput_input_tokens_per_s": _r(in_tokens / dur_s),
            "throughput_output_tokens_per_s": _r(out_tps),
            "throughput_total_tokens_per_s": _r(total_tps),
        }
        summary.update(ranked_stats([sink.ttft_rank], "ttft"))
        summary.update(sink.itl_stats())
        summary.update(ranked_stats([sink.e2e_rank], "e2e"))
        hit = query = 0
        has_cache = False
        for r in reps:
            cache = r.sched.cache if getattr(r, "sched", None) is not None else None
            if cache is not None:
                has_cache = True
                hit += cache.hit_tokens
                query += cache.query_tokens
        summary.update({
            "queue_depth_mean": _r(sum(r.int_queue for r in reps) / end_ns),
            "queue_depth_max": self.queue_max,
            "running_mean": _r(sum(r.int_running for r in reps) / end_ns),
            "running_max": self.running_max,
            "kv_cache_tokens": hw.kv_cache_tokens if sc.batching == "continuous" else reps[0].total_blocks,
            "kv_use_mean": _r(int_used / kv_exposure) if kv_exposure else 0.0,
            "kv_use_peak": _r(peak_used),
            "kv_token_share": _r(sum(r.int_token_states for r in reps) / slots) if slots else None,
            "kv_waste_share": _r(1 - sum(r.int_token_states for r in reps) / slots) if slots else None,
            "preemptions": sum(r.preemptions for r in reps),
            "prefix_cache_hit_rate": (_r(hit / query) if query else 0.0) if has_cache else None,
            "speculation_tokens_per_step": _r(advance_ticks(sc.speculation) / TICKS) if sc.speculation else None,
            "gpu_util_reported": _r(busy / exposure) if exposure else 0.0,
            "compute_utilization": _r(flops / (hw.peak_flops_per_s * exposure / NS_PER_S))
            if has_flops and exposure and hw.peak_flops_per_s else None,
            "steps": sum(r.steps for r in reps),
            "events": self.events,
        })
        price = hw.price_usd_per_gpu_hour
        if price is not None and out_tokens:
            per_hour = replica_usd_per_hour(price, hw.gpus) * (billed / end_ns)
            summary["cost_usd_per_million_output_tokens"] = _r(usd_per_million_tokens(per_hour, out_tps))
            summary["cost_usd_per_million_tokens"] = _r(usd_per_million_tokens(per_hour, total_tps))
        else:
            summary["cost_usd_per_million_output_tokens"] = None
            summary["cost_usd_per_million_tokens"] = None
        summary["gpu_price_usd_per_hour"] = price
        summary["gpu_price_source"] = hw.price_source
        classes = []
        empty = RankedInts()
        for i, cls in enumerate(sc.workload.classes):
            e2e = sink.e2e_rank_by_class.get(i, empty)
            row = {"name": cls.name, "requests_completed": e2e.count}
            row.update(ranked_stats([sink.ttft_rank_by_class.get(i, empty)], "ttft", mean=False))
            row.update(ranked_stats([e2e], "e2e", mean=False))
            classes.append(row)
        summary["classes"] = classes
        # The fleet's own figures.
        last_arrival = self.requests[-1].arrival_ns if self.requests else 0
        replica_hours = billed / NS_PER_S / SECONDS_PER_HOUR
        summary.update({
            "arrival_rate_per_s": _r(n_requests * NS_PER_S / last_arrival) if last_arrival else None,
            "prompt_tokens_mean": _r(self._prompt_tokens / n_requests) if n_requests else None,
            "output_tokens_mean": _r(self._output_tokens / n_requests) if n_requests else None,
            "replicas_initial": sum(p.spec.replicas for p in self.pools),
            "replicas_max": self._replicas_max(end_ns),
            "replicas_final": sum(1 for m in self.members if m.removed_ns is None and m.ready_ns <= end_ns),
            "replica_hours": _r(replica_hours),
            "gpu_hours": _r(replica_hours * hw.gpus),
            "cost_usd": _r(replica_hours * replica_usd_per_hour(price, hw.gpus)) if price is not None else None,
            "scale_ups": self.scale_ups,
            "scale_downs": self.scale_downs,
            "scale_events": list(self.scale_events),
            "pools": [self._pool_summary(p, end_ns) for p in self.pools],
        })
        return summary

    def _replicas_max(self, end_ns: int) -> int:
        """Most replicas in existence (paid for) at once."""
        changes = []
        for m in self.members:
            changes.append((m.start_ns, 1))
            end = m.removed_ns if m.removed_ns is not None else end_ns + 1
            changes.append((end, -1))
        changes.sort()
        best = cur = 0
        for _, d in changes:
            cur += d
            best = max(best, cur)
        return best

    def _pool_summary(self, pool: _Pool, end_ns: int) -> dict:
        class_ids = [i for i, p in enumerate(self.routes) if p == pool.index]
        ttft = [self.sink.ttft_rank_by_class[i] for i in class_ids if i in self.sink.ttft_rank_by_class]
        e2e = [self.sink.e2e_rank_by_class[i] for i in class_ids if i in self.sink.e2e_rank_by_class]
        billed = busy = exposure = 0
        for m in pool.members:
            end = end_ns if m.removed_ns is None or m.removed_ns > end_ns else m.removed_ns
            billed += max(0, end - m.start_ns)
            exposure += max(0, end - m.ready_ns)
            busy += m.rep.busy_ns_until(end_ns)
        reps = [m.rep for m in pool.members]
        row = {
            "name": pool.spec.name,
            "classes": [self.scenario.workload.classes[i].name for i in class_ids],
            "replicas_initial": pool.spec.replicas,
            "replicas_final": sum(1 for m in pool.members if m.removed_ns is None and m.ready_ns <= end_ns),
            "replica_hours": _r(billed / NS_PER_S / SECONDS_PER_HOUR),
            "requests_completed": sum(r.finished for r in reps),
            "requests_rejected": sum(r.rejected for r in reps),
            "queue_depth_max": max(r.max_queue for r in reps),
            "kv_use_peak": _r(max(r.peak_used_blocks / r.total_blocks for r in reps)),
            "gpu_util_reported": _r(busy / exposure) if exposure else 0.0,
            "preemptions": sum(r.preemptions for r in reps),
        }
        row.update(ranked_stats(ttft, "ttft", mean=False))
        row.update(ranked_stats(e2e, "e2e", mean=False))
        return row


def simulate_fleet(scenario, *, step_time_s=None, time_series: bool = True) -> FleetResult:
    """Run a fleet scenario (or a plain :class:`Scenario`, as a fleet of one) to the end.

    ``time_series=False`` leaves the result's series empty and gives the same
    summary faster (no samples, no windowed percentiles), for callers that
    show only the summary. Source: the engine of :mod:`calc.sim` per replica;
    routing, pools and autoscaling as in :mod:`calc.sim.router`,
    :mod:`calc.sim.pools`, :mod:`calc.sim.autoscaler`.

    >>> r = simulate_fleet(Scenario.from_dict({"workload": {"requests": 20, "arrival": "all-at-once"}}))
    >>> r.summary["requests_completed"], r.summary["replica_hours"] > 0
    (20, True)
    >>> simulate_fleet(Scenario.from_dict({"workload": {"requests": 20}}), time_series=False).time_series["t_s"]
    []
    """
    return Fleet(scenario, step_time_s=step_time_s, time_series=time_series).run()
