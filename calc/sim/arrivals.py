"""Where a run's requests come from: an open source (times drawn before the run) or a closed loop of clients.

An **open** source (:class:`OpenArrivals`) is the list drawn by
:func:`calc.sim.workload.generate_requests` (Poisson, bursty, all at once) or
given by a caller (:mod:`calc.replica` feeds its endless stream this way):
each arrival, as the engine handles it, schedules the next.

A **closed loop** (:class:`ClosedLoopClients`) is ``concurrency`` clients, as
published online-serving runs drive a server (vLLM's ``benchmark_serving
--max-concurrency N``, NVIDIA AIPerf's concurrency mode): all of them send at
time 0, and each sends its next request ``think_time_s`` after its previous
one finished (or was refused), on whichever replica it ran. The requests and
their lengths are drawn before the run, as for the open kinds (the same seed
gives the same lengths in the same order); the send times are set here as
the run goes. No client sends after ``duration_s``.

A request becomes schedulable ``request_overhead_s`` after it is sent (API
server, tokenization, the scheduler taking a new request); its TTFT and
end-to-end latency count from the send (``Request.arrival_ns``).

>>> from calc.sim.workload import Request
>>> reqs = [Request(i, 0, 100, 10) for i in range(5)]
>>> clients = ClosedLoopClients(reqs, concurrency=2, think_time_ns=1_000)
>>> clients.first()
[0, 1]
>>> clients.release(50_000), reqs[2].arrival_ns, clients.sent
(2, 51000, 3)
>>> OpenArrivals(reqs).horizon_ns()
0
"""

from __future__ import annotations

import math

from calc.errors import check_range
from calc.sim.metrics import LatencySink
from calc.units import NS_PER_S

__all__ = ["OpenArrivals", "ClosedLoopClients", "ProfiledSink", "request_overhead_s", "closed_loop_horizon_ns"]


def request_overhead_s(scenario, hardware) -> float:
    """The request-level fixed cost (s): the scenario's ``request_overhead_s``, else the hardware profile's, else 0.

    >>> from calc.sim.scenario import Scenario
    >>> class Profile: request_overhead_s = 0.012
    >>> request_overhead_s(Scenario(), Profile()), request_overhead_s(Scenario(request_overhead_s=0.0), Profile())
    (0.012, 0.0)
    >>> request_overhead_s(Scenario(), object())
    0.0
    """
    given = scenario.request_overhead_s
    if given is not None:
        return given
    return getattr(hardware, "request_overhead_s", 0.0)


class OpenArrivals:
    """Arrival times drawn before the run: the engine delivers ``requests[i]`` at ``arrival_ns + overhead``.

    >>> from calc.sim.workload import Request
    >>> OpenArrivals([Request(0, 0, 1, 1), Request(1, 7_000, 1, 1)]).horizon_ns()
    7000
    """

    closed = False

    def __init__(self, requests: list):
        self.requests = requests

    def horizon_ns(self) -> int:
        """The last send time (ns): the series' spacing is fixed from it before the run."""
        return self.requests[-1].arrival_ns if self.requests else 0

    def last_send_ns(self) -> int:
        """The latest send time so far (for the arrival rate): the last drawn one."""
        return self.horizon_ns()


class ClosedLoopClients:
    """``concurrency`` clients over the drawn ``requests``: request ``i`` is sent when a client is free for it.

    ``first()`` is the indices sent at time 0; ``release(now_ns)`` frees a
    client (its request finished or was refused at ``now_ns``) and returns the
    index of the request it sends next (its ``arrival_ns`` set to the send
    time), or None when there is nothing more to send. At the first send that
    would come after ``stop_ns`` (``workload.duration_s``) the requests not sent
    are dropped from the list (every later send would be later still): the
    run's total is then the requests sent.

    >>> from calc.sim.workload import Request
    >>> reqs = [Request(i, 0, 100, 10) for i in range(4)]
    >>> c = ClosedLoopClients(reqs, concurrency=3, think_time_ns=0, stop_ns=5_000)
    >>> c.first(), c.release(4_000), c.release(6_000), len(reqs), c.sent
    ([0, 1, 2], 3, None, 4, 4)
    >>> reqs = [Request(i, 0, 100, 10) for i in range(4)]
    >>> c = ClosedLoopClients(reqs, concurrency=1, think_time_ns=0, stop_ns=5_000)
    >>> c.first(), c.release(6_000), len(reqs)
    ([0], None, 1)
    """

    closed = True

    def __init__(self, requests: list, concurrency: int, think_time_ns: int = 0, stop_ns: int | None = None):
        self.requests = requests
        self.concurrency = check_range("workload.concurrency", concurrency, 1, 10**9, integer=True)
        self.think_time_ns = think_time_ns
        self.stop_ns = stop_ns
        self.sent = 0  # requests[:sent] have their send times

    def first(self) -> list:
        """The requests the clients send at time 0 (one each, as many as there are)."""
        n = min(self.concurrency, len(self.requests))
        for i in range(n):
            self.requests[i].arrival_ns = 0
        self.sent = n
        return list(range(n))

    def release(self, now_ns: int):
        """A client is free at ``now_ns``: the index of the request it sends next, or None."""
        i = self.sent
        reqs = self.requests
        if i >= len(reqs):
            return None
        t_ns = now_ns + self.think_time_ns
        if self.stop_ns is not None and t_ns > self.stop_ns:
            del reqs[i:]  # no client sends past the duration: the run's requests are those sent
            return None
        reqs[i].arrival_ns = t_ns
        self.sent = i + 1
        return i

    def last_send_ns(self) -> int:
        """The latest send time so far (sends come in order, so it is the last sent request's)."""
        return self.requests[self.sent - 1].arrival_ns if self.sent else 0


class ProfiledSink(LatencySink):
    """A :class:`calc.sim.metrics.LatencySink` that leaves out the client's warm-up: the first ``warmup_requests`` sent.

    A benchmark client warms the server up before it measures (AIPerf's ``--warmup-request-count``; GenAI-Perf
    over perf_analyzer measures windows of a load already running, perf_analyzer docs "Measurement Modes").
    The warm-up requests are sent and served like the others, and free their clients as they finish; only
    their TTFT, end-to-end latency and TPOT are not recorded, so the figures are those of the requests after
    them (a closed loop sends ``requests[i]`` i-th, and request ``i`` has ``rid`` i). The token-weighted ITL
    and the run's throughputs still count the whole run (they are not kept per request).

    >>> from calc.sim.workload import Request
    >>> sink = ProfiledSink(1, warmup_requests=1)
    >>> first, second = Request(0, 0, 10, 3), Request(1, 0, 10, 3)
    >>> sink.first_token(first, 500); sink.finish(first, 900); sink.first_token(second, 700); sink.finish(second, 1_300)
    >>> sink.ttft_ns, sink.e2e_ns, sink.tpot_ns, sink.last_finish_ns
    ([700], [1300], [300], 1300)
    """

    def __init__(self, ticks: int, warmup_requests: int):
        super().__init__(ticks)
        self.warmup_requests = check_range("warmup_requests", warmup_requests, 0, 10**9, integer=True)

    def first_token(self, req, now_ns):
        """A request's first token: recorded unless it is a warm-up request."""
        if req.rid >= self.warmup_requests:
            LatencySink.first_token(self, req, now_ns)
        else:
            req.ttft_ns = now_ns - req.arrival_ns

    def finish(self, req, now_ns):
        """A request's last token: recorded unless it is a warm-up request; its client is freed either way."""
        if req.rid >= self.warmup_requests:
            LatencySink.finish(self, req, now_ns)
            return
        if now_ns > self.last_finish_ns:
            self.last_finish_ns = now_ns
        if self.on_finish is not None:
            self.on_finish(req, now_ns)


def closed_loop_horizon_ns(workload, step_time_s, *, replicas: int, max_num_seqs: int, overhead_s: float = 0.0) -> int:
    """A rough length (ns) of a closed-loop run, to space its time series before it starts (never a reported figure).

    Each replica holds ``b = min(concurrency / replicas, max_num_seqs)``
    requests; one request costs its prefill alone plus its answer at batch
    ``b`` (one decode step per token, at the mean context) plus the think time
    and the request overhead; the run is ``requests / (b x replicas)`` such
    rounds, capped at ``duration_s``. A guess that is off by some factor only
    widens or narrows the series' spacing.

    >>> from calc.sim.workload import Workload
    >>> wl = Workload(arrival="closed-loop", concurrency=4, requests=40)
    >>> closed_loop_horizon_ns(wl, lambda **k: 0.01, replicas=1, max_num_seqs=256)   # 10 rounds of 256 steps
    25600000000
    """
    classes = workload.classes
    total_share = math.fsum(c.share for c in classes) or 1.0
    prompt = math.fsum(c.share * c.mean_prompt_tokens() for c in classes) / total_share
    output = math.fsum(c.share * c.mean_output_tokens() for c in classes) / total_share
    batch = max(1, min(math.ceil(workload.concurrency / max(1, replicas)), max_num_seqs))
    p = max(1, round(prompt))
    # The roofline's pricer also takes the step's sequence count (the engine's per-sequence term); a stand-in may not.
    counts = (lambda n: {"sequences": n}) if getattr(step_time_s, "takes_sequences", False) else (lambda n: {})
    prefill_s = step_time_s(new_tokens=p, kv_tokens_read=p, attention_token_pairs=p * (p + 1) // 2, **counts(1))
    ctx = round(batch * (prompt + output / 2))
    decode_s = step_time_s(new_tokens=batch, kv_tokens_read=ctx, attention_token_pairs=ctx, **counts(batch))
    per_request_s = prefill_s + max(0.0, output - 1) * decode_s + workload.think_time_s + overhead_s
    rounds = math.ceil(workload.requests / (batch * max(1, replicas)))
    horizon_s = rounds * per_request_s
    if workload.duration_s is not None:
        horizon_s = min(horizon_s, workload.duration_s)
    return round(horizon_s * NS_PER_S)
