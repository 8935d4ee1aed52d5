"""What a serving dashboard shows, measured on the simulated replica.

Latency: time to first token (TTFT, arrival to the first answer token),
inter-token latency (ITL, the gap between consecutive answer tokens of one
request), time per output token (TPOT, per request: its time after the first
token over its tokens after the first, ``(e2e - TTFT) / (output_tokens - 1)``,
for requests of more than one token, rounded to whole nanoseconds) and
end-to-end latency (arrival to the last token), each as mean, p50, p90 and
p99 by the exact nearest-rank rule. ITL weighs every gap by its tokens, so
long answers count more; TPOT weighs every request once (as vLLM's
``benchmark_serving`` and NVIDIA's AIPerf report both). ITL is kept as (gap, weight) pairs,
one per group of tokens that came out together, never one object per token;
weights are in the scheduler's integer ticks (``TICKS`` per token).
Over time: queue depth, running batch, KV cache use, output tokens/s and
GPU-Util as a server reports it, sampled every ``interval`` of simulated
time into a series of bounded length (when it would grow past ``max_points``
every other point is dropped and the interval doubles; rates come from
cumulative counters, so they stay exact over the wider windows).
Sources: metric definitions as vLLM's ``benchmark_serving`` reports them
(TTFT, ITL, E2E); nearest-rank percentile (e.g. NIST/SEMATECH e-Handbook,
"Percentiles", the ``ceil(p/100 * N)``-th smallest value).

>>> nearest_rank([5, 1, 4, 2, 3], 50)
3
>>> weighted_nearest_rank([(10, 1), (20, 8), (90, 1)], 99)
90
"""

from __future__ import annotations

import bisect
import itertools
import math

from calc.errors import CalcError, check_range
from calc.units import NS_PER_S, round_sig

__all__ = ["PERCENTILES", "tpot_ns", "nearest_rank", "weighted_nearest_rank", "weighted_ranks", "latency_stats", "LatencySink",
           "TimeSeries", "RankedInts", "rank_value", "ranked_stats", "WindowSink"]

PERCENTILES = (50, 90, 99)


def tpot_ns(e2e_ns: int, ttft_ns: int, output_tokens: int):
    """One request's time per output token after the first, in whole ns (half up); None for a one-token answer.

    Source: TPOT as vLLM's ``benchmark_serving`` defines it, ``(e2e - ttft) / (output_len - 1)``.

    >>> tpot_ns(1_000_000_000, 200_000_000, 101), tpot_ns(9, 2, 3), tpot_ns(500, 500, 1)
    (8000000, 4, None)
    """
    steps = output_tokens - 1
    if steps < 1:
        return None
    return (2 * (e2e_ns - ttft_ns) + steps) // (2 * steps)  # integers only: the same in every Python


def _check_q(q) -> float:
    return check_range("percentile", q, 0.0, 100.0)


def nearest_rank(values, q: float):
    """The ``q``-th percentile of ``values`` by nearest rank: the ``ceil(q/100 N)``-th smallest (the smallest at 0).

    Source: nearest-rank definition (NIST/SEMATECH e-Handbook of Statistical Methods, "Percentiles").

    >>> nearest_rank([15, 20, 35, 40, 50], 30), nearest_rank([15, 20, 35, 40, 50], 100)
    (20, 50)
    """
    q = _check_q(q)
    ordered = sorted(values)
    if not ordered:
        raise CalcError("percentile of no values: there is nothing to rank", "values")
    rank = max(1, math.ceil(q / 100.0 * len(ordered)))
    return ordered[rank - 1]


def weighted_nearest_rank(pairs, q: float):
    """Nearest-rank percentile of ``(value, weight)`` pairs with integer weights.

    The smallest value whose cumulative weight reaches ``q`` percent of the
    total: the same answer as :func:`nearest_rank` on the list with each value
    repeated ``weight`` times, without building it. Source: as :func:`nearest_rank`.

    >>> weighted_nearest_rank([(3, 2), (1, 1), (2, 1)], 50)
    2
    >>> nearest_rank([1, 2, 3, 3], 50)
    2
    """
    q = _check_q(q)
    ordered = sorted(pairs)
    total = 0
    for _, w in ordered:
        total += w
    if total <= 0:
        raise CalcError("percentile of no values: the weights add up to 0", "values")
    target = max(1, math.ceil(q * total / 100))  # rank in units of weight
    cum = 0
    for value, w in ordered:
        cum += w
        if cum >= target:
            return value
    return ordered[-1][0]


def latency_stats(values_ns, prefix: str) -> dict:
    """``{prefix_mean_s, prefix_p50_s, prefix_p90_s, prefix_p99_s}`` from integer nanoseconds (None when empty).

    >>> latency_stats([1_000_000, 3_000_000], "ttft")
    {'ttft_mean_s': 0.002, 'ttft_p50_s': 0.001, 'ttft_p90_s': 0.003, 'ttft_p99_s': 0.003}
    """
    out = {}
    if not values_ns:
        out[f"{prefix}_mean_s"] = None
        for q in PERCENTILES:
            out[f"{prefix}_p{q}_s"] = None
        return out
    ordered = sorted(values_ns)
    n = len(ordered)
    out[f"{prefix}_mean_s"] = round_sig(sum(ordered) / n / NS_PER_S)  # a sum of ints is exact
    for q in PERCENTILES:
        out[f"{prefix}_p{q}_s"] = round_sig(ordered[max(1, math.ceil(q / 100 * n)) - 1] / NS_PER_S)
    return out


class LatencySink:
    """Collects per-request latencies and ITL from a scheduler (the sink protocol of :mod:`calc.sim.scheduler`).

    ``ticks`` is the weight of one token in ITL pairs. Per request class it
    keeps TTFT and end-to-end lists too (pools and incidents are per class).

    >>> from calc.sim.workload import Request
    >>> sink = LatencySink(ticks=1)
    >>> r = Request(0, 1_000, 10, 3)
    >>> sink.first_token(r, 5_000); sink.itl(2_000, 2); sink.finish(r, 9_000)
    >>> sink.ttft_ns, sink.e2e_ns, sink.tpot_ns, sink.itl_stats()["itl_p50_s"]
    ([4000], [8000], [2000], 2e-06)

    ``on_finish(req, now_ns)``, when set, is called as each request finishes
    (a closed loop's client then sends its next one) and may set ``wake``:
    a replica running steps ahead of the event heap stops after that step
    (:meth:`calc.sim.engine.ReplicaClock.run_until`), for the new event may
    come before the limit it was given.
    """

    def __init__(self, ticks: int):
        self.ticks = ticks
        self.ttft_ns: list[int] = []
        self.e2e_ns: list[int] = []
        self.tpot_ns: list[int] = []  # in no particular order (sorted in place for a summary)
        self.on_finish = None
        self.wake = False
        self.ttft_by_class: dict[int, list[int]] = {}
        self.e2e_by_class: dict[int, list[int]] = {}
        self.itl_weights: dict[int, int] = {}  # gap in ns -> weight in ticks
        self.preemptions = 0
        self.last_finish_ns = 0

    def first_token(self, req, now_ns):
        """A request's first answer token came out at ``now_ns``."""
        value = now_ns - req.arrival_ns
        self.ttft_ns.append(value)
        req.ttft_ns = value  # for its TPOT when it finishes
        lst = self.ttft_by_class.get(req.class_index)
        if lst is None:
            self.ttft_by_class[req.class_index] = [value]
        else:
            lst.append(value)

    def finish(self, req, now_ns):
        """A request's last token came out at ``now_ns``."""
        value = now_ns - req.arrival_ns
        self.e2e_ns.append(value)
        lst = self.e2e_by_class.get(req.class_index)
        if lst is None:
            self.e2e_by_class[req.class_index] = [value]
        else:
            lst.append(value)
        if now_ns > self.last_finish_ns:
            self.last_finish_ns = now_ns
        steps = req.output_tokens - 1
        if steps > 0:  # tpot_ns, inlined: once per request (the first token came before)
            self.tpot_ns.append((2 * (value - req.ttft_ns) + steps) // (2 * steps))
        if self.on_finish is not None:
            self.on_finish(req, now_ns)

    def itl(self, value_ns, weight_ticks):
        """Tokens worth ``weight_ticks`` came out ``value_ns`` after their sequences' previous token."""
        w = self.itl_weights
        w[value_ns] = w.get(value_ns, 0) + weight_ticks

    def preempted(self, req):
        """A running request lost its KV blocks (to be recomputed)."""
        self.preemptions += 1

    def latency_summary(self, prefix: str) -> dict:
        """:func:`latency_stats` of every TTFT (``prefix`` "ttft"), end-to-end latency ("e2e") or TPOT ("tpot")."""
        if prefix == "tpot":
            self.tpot_ns.sort()  # in place: the next summary of a live run sorts a nearly sorted list, in O(n)
            return latency_stats(self.tpot_ns, prefix)
        return latency_stats(self.ttft_ns if prefix == "ttft" else self.e2e_ns, prefix)

    def class_summary(self, class_index: int) -> dict:
        """Completed requests and TTFT and end-to-end percentiles (no means) of one request class."""
        ttft = self.ttft_by_class.get(class_index, [])
        e2e = self.e2e_by_class.get(class_index, [])
        row = {"requests_completed": len(e2e)}
        row.update({k: v for k, v in latency_stats(ttft, "ttft").items() if k != "ttft_mean_s"})
        row.update({k: v for k, v in latency_stats(e2e, "e2e").items() if k != "e2e_mean_s"})
        return row

    def itl_stats(self) -> dict:
        """ITL mean and p50/p90/p99 in seconds, weighted per token (None before any second token)."""
        pairs = list(self.itl_weights.items())
        out = {}
        if not pairs:
            out["itl_mean_s"] = None
            for q in PERCENTILES:
                out[f"itl_p{q}_s"] = None
            return out
        total = sum(w for _, w in pairs)
        out["itl_mean_s"] = round_sig(sum(v * w for v, w in pairs) / total / NS_PER_S)
        # weighted_nearest_rank at each percentile, on one sort (a run's gaps are tens of thousands of pairs)
        pairs.sort()
        cumulative = list(itertools.accumulate(w for _, w in pairs))
        for q in PERCENTILES:
            target = max(1, math.ceil(q * total / 100))  # rank in units of weight, as weighted_nearest_rank
            out[f"itl_p{q}_s"] = round_sig(pairs[bisect.bisect_left(cumulative, target)][0] / NS_PER_S)
        return out


class TimeSeries:
    """Samples of a replica's state every ``interval_ns`` of simulated time, at most ``max_points`` kept.

    ``sample(t_ns, state)`` is called for each boundary ``t`` in order with
    ``state`` a tuple ``(queue_depth, running, kv_used_blocks, emitted_tokens,
    busy_ns, finished, preemptions)`` where the last four are cumulative.
    ``to_dict(total_blocks)`` gives the chart columns; rates are differences of
    the cumulative counters between kept points.

    >>> ts = TimeSeries(interval_s=1.0, max_points=4)
    >>> for i in range(1, 10): ts.advance_to(i * NS_PER_S, lambda t: (1, 1, 5, 100 * t // NS_PER_S, t // 2, 0, 0))
    >>> ts.to_dict(total_blocks=10)["t_s"], ts.interval_ns // NS_PER_S
    ([2.0, 4.0, 6.0, 8.0], 2)
    >>> ts.to_dict(total_blocks=10)["output_tokens_per_s"], ts.to_dict(total_blocks=10)["gpu_util"]
    ([100.0, 100.0, 100.0, 100.0], [0.5, 0.5, 0.5, 0.5])
    """

    FIELDS = ("t_s", "queue_depth", "running", "kv_use", "output_tokens_per_s", "gpu_util", "finished",
              "preemptions")

    def __init__(self, interval_s: float = 1.0, max_points: int = 600):
        interval_s = check_range("sample_interval_s", interval_s, 0.001, 1e6)
        self.max_points = check_range("max_points", max_points, 2, 1_000_000, integer=True)
        self.interval_ns = round(interval_s * NS_PER_S)
        self.next_ns = self.interval_ns
        self.points: list[tuple] = []  # (t_ns, *state)

    def advance_to(self, now_ns: int, state_at) -> None:
        """Sample every boundary up to ``now_ns`` with ``state_at(t_ns)`` (the state before the event at ``now_ns``)."""
        while self.next_ns <= now_ns:
            self.sample(self.next_ns, state_at(self.next_ns))

    def sample(self, t_ns: int, state: tuple) -> None:
        """Record the state at boundary ``t_ns`` (must be the next boundary)."""
        self.points.append((t_ns,) + tuple(state))
        self.next_ns = t_ns + self.interval_ns
        if len(self.points) > self.max_points:
            # Keep the points on the doubled grid (multiples of the new interval).
            self.interval_ns *= 2
            step = self.interval_ns
            self.points = [p for p in self.points if p[0] % step == 0]
            last = self.points[-1][0] if self.points else 0
            self.next_ns = last + step

    def to_dict(self, total_blocks: int) -> dict:
        """Columns for a chart: times in s, levels as sampled, rates over each window since the previous kept point."""
        cols = {name: [] for name in self.FIELDS}
        prev_t, prev_out, prev_busy = 0, 0, 0
        for t_ns, queue, running, used, emitted, busy, finished, preempt in self.points:
            dt = t_ns - prev_t
            cols["t_s"].append(round_sig(t_ns / NS_PER_S))
            cols["queue_depth"].append(queue)
            cols["running"].append(running)
            cols["kv_use"].append(round_sig(used / total_blocks, 4))
            cols["output_tokens_per_s"].append(round_sig((emitted - prev_out) * NS_PER_S / dt) if dt else 0.0)
            cols["gpu_util"].append(round_sig(min(1.0, (busy - prev_busy) / dt), 4) if dt else 0.0)
            cols["finished"].append(finished)
            cols["preemptions"].append(preempt)
            prev_t, prev_out, prev_busy = t_ns, emitted, busy
        return cols


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

    def latency_summary(self, prefix: str) -> dict:
        """As :meth:`LatencySink.latency_summary`, from the ranked copy (no sort); TPOT as the base sink has it."""
        if prefix == "tpot":
            return LatencySink.latency_summary(self, prefix)
        return ranked_stats([self.ttft_rank if prefix == "ttft" else self.e2e_rank], prefix)

    def class_summary(self, class_index: int) -> dict:
        """As :meth:`LatencySink.class_summary`, from the ranked copies (no sort)."""
        empty = RankedInts()
        e2e = self.e2e_rank_by_class.get(class_index, empty)
        row = {"requests_completed": e2e.count}
        row.update(ranked_stats([self.ttft_rank_by_class.get(class_index, empty)], "ttft", mean=False))
        row.update(ranked_stats([e2e], "e2e", mean=False))
        return row

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


def weighted_ranks(values: list, weights: list, qs) -> list:
    """:func:`calc.sim.metrics.weighted_nearest_rank` of ``zip(values, weights)`` at each of ``qs``, sorting once.

    >>> v, w = [30, 10, 20, 10], [1, 2, 5, 1]
    >>> weighted_ranks(v, w, (50, 99)) == [weighted_nearest_rank(list(zip(v, w)), q) for q in (50, 99)]
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
