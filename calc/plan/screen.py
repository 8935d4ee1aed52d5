"""The analytic screen: for one candidate, the fewest replicas that meet the targets on the roofline plus a queue.

Every figure comes from calc's own models; the screen only composes them:

* memory: the engine's own KV sizing of the replica (:func:`calc.sim.hardware.kv_sizing`, vLLM's
  ``determine_available_memory``), refusing what vLLM refuses at start-up (weights that do not fit, a KV
  cache smaller than one ``max_model_len`` request) and vLLM's budget rules
  (:meth:`calc.sim.scenario.Scenario.scheduler_config`);
* step times: :func:`calc.engine_profiles.engine_coefficients` (the roofline plus the engine's fitted step
  and per-sequence costs, what the simulator prices), a replica kept busy with prefill mixed into decode
  (:func:`calc.roofline.steady_state_step`), a decode step (:func:`calc.roofline.decode_step`) and a mixed
  chunk step (:func:`calc.roofline.mixed_step_s`); speculation scales decode by
  :func:`calc.speculative.speedup_at_batch`; prefix caching skips :func:`calc.prefix.cached_prefix_tokens`;
* queueing: Little's law for the running batch (in flight = rate x time in system), and the prompts'
  prefill as a single FCFS server whose waiting-time tail is M/M/1's, ``P(W > t) = rho exp(-(mu - lambda) t)``
  (Kleinrock, *Queueing Systems* vol. 1, 1975, section 3.2): exponential service is the pessimistic end for
  the near-deterministic prefill of equal prompts (M/G/1's mean wait grows with the service's squared
  coefficient of variation, 1 for M/M/1, 0 for M/D/1), and the simulator then corrects it.

The largest rate one replica sustains within every target, ``rate_max``, sets the replicas:
``ceil(peak / rate_max)``; which limit set ``rate_max`` is the binding constraint. Disaggregated layouts
size a prefill pool for TTFT (prefill alone, then the KV cache sent over the network:
:data:`calc.server_layouts.NIC_BYTES_PER_S`) and a decode pool for TPOT, in the layout's P:D ratio.

Speed (the first answer within 2 s): what several candidates of one request share is worked out once
(``_cached``: scenarios, KV sizings and their refusals, step prices by batch, the pools' per-replica rates,
which do not depend on the P:D ratio), and the Erlang C recursion stops once its answer is known to be under
the threshold it is compared with (:func:`_erlang_c_below`, tested against its plain twin :func:`_erlang_c`;
``tests/plan/test_screen.py`` also screens whole default spaces both ways and compares every result).

>>> from calc.plan.inputs import PlanRequest, Targets
>>> from calc.plan.space import candidates
>>> req = PlanRequest(gpus=("h100-sxm-80gb",), peak_rate_per_s=20, targets=Targets(ttft_p99_s=5, tpot_p99_s=0.05))
>>> lesson_like = next(c for c in candidates(req) if dict(c)["tp"] == 4 and dict(c)["max_num_seqs"] == 256
...                    and dict(c)["max_num_batched_tokens"] == 8192 and dict(c)["kv_dtype"] == "bf16")
>>> s = screen(req, lesson_like)
>>> s.ok, s.replicas, s.gpus, s.binding
(True, 4, 16, 'prefill compute')
"""

from __future__ import annotations

import functools
import math
from statistics import NormalDist
from dataclasses import dataclass, field

from calc import engine_profiles
from calc.catalog import get_model
from calc.errors import CalcError
from calc.lesson import MAX_MODEL_LEN
from calc.memory import kv_bytes_per_token
from calc.plan.prices import gpu_hour_price
from calc.plan.space import as_dict, speculation_config
from calc.prefix import BLOCK_TOKENS, cached_prefix_tokens
from calc.roofline import decode_step, mixed_step_s, steady_state_step
from calc.server_layouts import NIC_BYTES_PER_S
from calc.sim.hardware import kv_sizing
from calc.sim.scenario import Scenario
from calc.speculative import speedup_at_batch

__all__ = ["ScreenResult", "screen", "scenario_of", "coefficients_of", "max_model_len_of", "BINDINGS",
           "INTERCONNECT_SHARE", "operating_point", "usd_per_million"]

#: The constraints a plan can bind on, as the answer names them (each links to the lesson step teaching it);
#: "engine" and "topology" mark only refusals: settings vLLM itself rejects (its token budget must hold the running
#: decodes), and layouts calc's simulator cannot run (pipeline stages across servers).
BINDINGS = ("memory", "prefill compute", "decode bandwidth", "queueing", "interconnect", "budget", "engine",
            "topology")
#: A step whose tensor-parallel all-reduces take at least this share of it is said to bind on the interconnect
#: (over PCIe a 70B model's TP4 all-reduces take about half its decode step; over NVLink under a tenth).
INTERCONNECT_SHARE = 0.3
_MAX_REPLICAS = 10_000
_Z99 = NormalDist().inv_cdf(0.99)  # 2.326: the p99 of a Poisson count, normally approximated


@dataclass(frozen=True)
class ScreenResult:
    """What the screen says about one candidate (``ok`` False: ``reason`` says why, naming the constraint).

    ``predicted`` holds the screen's p50/p99 TTFT and TPOT at the peak rate on ``replicas`` replicas (or
    units of a disaggregated layout: ``gpus`` counts them all); ``usd_per_hour`` the fleet's cost.

    >>> ScreenResult(candidate=(), ok=False, reason="memory: ...", binding="memory").replicas
    0
    """

    candidate: tuple
    ok: bool
    reason: str = ""
    binding: str = ""
    replicas: int = 0
    gpus: int = 0
    rate_max_per_s: float = 0.0
    usd_per_hour: float = 0.0
    usd_per_gpu_hour: float = 0.0
    price: dict = field(default_factory=dict, hash=False)
    predicted: dict = field(default_factory=dict, hash=False)
    prefill_share: float = 0.0
    kv_cache_tokens: int = 0
    running_max: int = 0
    limits: dict = field(default_factory=dict, hash=False)


def max_model_len_of(request) -> int:
    """The ``max_model_len`` a plan serves with: the request's, else the lesson's 8,192 or the longest request.

    >>> from calc.plan.inputs import PlanRequest
    >>> max_model_len_of(PlanRequest())
    8192
    """
    return request.max_model_len or max(MAX_MODEL_LEN, request.longest_request_tokens())


def scenario_of(request, candidate, **changes) -> Scenario:
    """The simulator's scenario of one replica of ``candidate`` (no traffic yet), checked as the engine checks it.

    >>> from calc.plan.inputs import PlanRequest
    >>> from calc.plan.space import candidates
    >>> scenario_of(PlanRequest(gpus=("h100-sxm-80gb",)), next(candidates(PlanRequest(gpus=("h100-sxm-80gb",))))).tp
    1
    """
    c = as_dict(candidate)
    spec = None if c.get("speculation", "off") == "off" else speculation_config(request)
    fields = dict(model=request.model, gpu=c["gpu"], tp=c["tp"], weights=c["weights"], kv_dtype=c["kv_dtype"],
                  engine=request.engine, max_model_len=max_model_len_of(request), max_num_seqs=c["max_num_seqs"],
                  max_num_batched_tokens=c["max_num_batched_tokens"], prefix_caching=bool(c.get("prefix_caching")),
                  speculation=spec, parameter_count=request.parameter_count, seed=request.seed)
    fields.update(changes)
    s = Scenario(**fields)
    s.scheduler_config()  # vLLM's budget rules (the budget must hold every running sequence's decode tokens)
    return s


@functools.lru_cache(maxsize=256)
def coefficients_of(model: str, gpu: str, tp: int, weights: str, kv_dtype: str, engine: str):
    """:func:`calc.engine_profiles.engine_coefficients`, cached: what the simulator prices a step with.

    >>> coefficients_of("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", "bf16", "vllm").tp
    4
    """
    return engine_profiles.engine_coefficients(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, engine=engine)


def _tail_wait_s(rate: float, service_rate: float, quantile: float) -> float:
    """The ``quantile`` of the M/M/1 waiting time: ``ln(rho / (1 - q)) / (mu - lambda)``, 0 where rho <= 1 - q."""
    if rate >= service_rate:
        return math.inf
    rho = rate / service_rate
    if rho <= 1 - quantile:
        return 0.0
    return math.log(rho / (1 - quantile)) / (service_rate - rate)


_CACHE: dict = {"request": None, "values": {}}


def _cached(request, key, make):
    """A value shared by the candidates of one request (KV sizings, step prices): kept while the request is the same object."""
    if _CACHE["request"] is not request:
        _CACHE["request"], _CACHE["values"] = request, {}
    values = _CACHE["values"]
    if key not in values:
        values[key] = make()
    return values[key]


def _outcome(make, *args):
    """``make(*args)``, or the :class:`CalcError` it raised (returned, so that a refusal can be cached too)."""
    try:
        return make(*args)
    except CalcError as error:
        return error


def _targets_of(request) -> tuple[dict, float, dict]:
    """Every target, the tightest TPOT target and the TTFT targets (read only: shared by a request's candidates)."""
    targets = dict(request.targets.items())
    tpot_target = min([v for k, v in targets.items() if k.startswith("tpot")], default=math.inf)
    return targets, tpot_target, {k: v for k, v in targets.items() if k.startswith("ttft")}


def _scenario_key(c: dict) -> tuple:
    """The dimensions :func:`scenario_of` reads (all but the layout)."""
    return (c["gpu"], c["tp"], c["weights"], c["kv_dtype"], c["max_num_seqs"], c["max_num_batched_tokens"],
            bool(c.get("prefix_caching")), c.get("speculation", "off"))


def _replica_key(c: dict, prefill: int, decode_only: bool) -> tuple:
    """What a replica's step prices depend on (not its running cap: the same steps, a different limit)."""
    return ("replica", c["gpu"], c["tp"], c["weights"], c["kv_dtype"], c["max_num_batched_tokens"],
            c.get("speculation", "off"), prefill, decode_only)


class _Replica:
    """The step prices of one replica of a candidate at the traffic's mean lengths (memoised by batch)."""

    def __init__(self, request, c: dict, coef, prompt: float, answer: float, prefill: int, decode_only: bool):
        self.coef = coef
        self.prompt, self.answer, self.prefill = prompt, answer, prefill
        self.decode_only = decode_only
        self.context = max(1, round(prompt + answer / 2))
        self.budget = c["max_num_batched_tokens"]
        self.spec = None if c.get("speculation", "off") == "off" else speculation_config(request)
        self._tpot: dict[int, float] = {}
        self._step: dict[int, float] = {}
        self._prefill: dict[int, float] = {}
        self.bindings: dict[int, str] = {}  # _step_binding's answers by batch
        # A decode step and speculation's speed-up depend on the hardware and the batch only, not on the token
        # budget or the layout: the replicas of one request on the same hardware share them.
        self._shared = _cached(request, ("hardware", c["gpu"], c["tp"], c["weights"], c["kv_dtype"], self.context),
                               dict)

    def decode_s(self, batch: int) -> float:
        """A decode step of ``batch`` sequences at the mean context (:func:`calc.roofline.decode_step`), kept."""
        key = ("decode", batch)
        if key not in self._shared:
            self._shared[key] = decode_step(self.coef, batch=batch, context_tokens=self.context)["time_s"]
        return self._shared[key]

    def mixed_s(self, batch: int, chunk: int) -> float:
        """A step of ``batch`` decodes and a ``chunk``-token prompt chunk (:func:`calc.roofline.mixed_step_s`), kept
        (token budgets that leave room for the whole prompt give the same chunks)."""
        key = ("mixed", batch, chunk)
        if key not in self._shared:
            self._shared[key] = mixed_step_s(self.coef, batch=batch, context_tokens=self.context, chunk_tokens=chunk)
        return self._shared[key]

    def speedup(self, batch: int) -> float:
        """Speculation's speed-up at ``batch`` (:func:`calc.speculative.speedup_at_batch`), kept."""
        key = ("speedup", batch)
        if key not in self._shared:
            self._shared[key] = speedup_at_batch(self.coef, batch=batch, context_tokens=self.context,
                                                 config=self.spec)["speedup"]
        return self._shared[key]

    def step_s(self, batch: int) -> float:
        """:meth:`step_price_s`, kept by batch (the screen asks for the same batches many times)."""
        if batch not in self._step:
            self._step[batch] = self.step_price_s(batch)
        return self._step[batch]

    def step_price_s(self, batch: int) -> float:
        """The mean step at ``batch`` running: decode-only steps and steps that also carry a prompt's chunk.

        Chunked prefill puts a prompt into ``k = ceil(prefill / (budget - batch))`` steps beside the decodes;
        by Little's law ``batch / (answer - 1)`` prompts arrive per step, so a share
        ``f = batch x k / (answer - 1)`` of the steps carry a chunk (:func:`calc.roofline.mixed_step_s`) and
        the rest decode only (:func:`calc.roofline.decode_step`). Averaging the two kinds of step, not the
        tokens, keeps the roofline's ``max(compute, memory)`` of each: a chunk makes its step compute-bound,
        which an even spread of prefill tokens over every step would hide. Past ``f = 1`` every step carries
        the prompts' tokens together (up to the budget).
        """
        decode = self.decode_s(batch)
        if self.decode_only:
            return decode
        room = self.budget - batch
        if room < 1:
            return math.inf
        chunks = math.ceil(self.prefill / room)
        share = batch * chunks / max(1.0, self.answer - 1)
        if share <= 1:
            mixed = self.mixed_s(batch, math.ceil(self.prefill / chunks))
            return decode + share * (mixed - decode)
        per_step = min(room, math.ceil(batch * self.prefill / max(1.0, self.answer - 1)))
        return self.mixed_s(batch, per_step)

    def tpot_s(self, batch: int) -> float:
        """Mean time per output token at ``batch`` running (speculation: the step over its speed-up)."""
        if batch not in self._tpot:
            t = self.step_s(batch)
            if self.spec is not None:
                t /= self.speedup(batch)
            self._tpot[batch] = t
        return self._tpot[batch]

    def prefill_s(self, batch: int) -> float:
        """:meth:`prefill_price_s`, kept by batch."""
        if batch not in self._prefill:
            self._prefill[batch] = self.prefill_price_s(batch)
        return self._prefill[batch]

    def prefill_price_s(self, batch: int) -> float:
        """A prompt's own prefill beside ``batch`` decoding sequences: its chunks, each a mixed step."""
        room = self.budget - (0 if self.decode_only else batch)
        if room < 1:
            return math.inf
        chunks = math.ceil(self.prefill / room)
        chunk = min(self.prefill, room)
        return chunks * self.mixed_s(0 if self.decode_only else batch, chunk)

    def prefill_capacity_per_s(self, batch: int) -> float:
        """Prompts per second the replica can prefill while ``batch`` sequences decode (the prefill server's mu)."""
        t = self.prefill_s(batch)
        return 0.0 if t == math.inf else 1.0 / t


def _largest_batch(replica: _Replica, cap: int, tpot_target: float) -> int:
    """The largest running batch (1..cap) whose mean TPOT meets the target; 0 if one sequence misses it."""
    if replica.tpot_s(1) > tpot_target:
        return 0
    if replica.tpot_s(cap) <= tpot_target:
        return cap
    low, high = 1, cap
    while high - low > 1:
        mid = (low + high) // 2
        if replica.tpot_s(mid) <= tpot_target:
            low = mid
        else:
            high = mid
    return low


def _batch_at(replica: _Replica, rate: float, ttft_s: float, cap: int) -> float:
    """Little's law's fixed point: running = rate x (TTFT + (answer - 1) x TPOT(running)), or inf past ``cap``."""
    batch = max(1.0, rate * (ttft_s + (replica.answer - 1) * replica.tpot_s(1)))
    for _ in range(40):
        if batch > cap:
            return math.inf
        new = max(1.0, rate * (ttft_s + (replica.answer - 1) * replica.tpot_s(max(1, math.ceil(batch)))))
        if abs(new - batch) < 0.01:
            return new
        batch = new
    return batch


def _erlang_c(servers: int, load: float) -> float:
    """Probability that an arrival waits in an M/M/c queue with ``servers`` and offered ``load`` (Erlang C).

    Erlang B by its stable recursion ``B(k) = a B(k-1) / (k + a B(k-1))``, then
    ``C = B / (1 - rho (1 - B))`` (Kleinrock, *Queueing Systems* vol. 1, section 3.5).
    """
    if load >= servers:
        return 1.0
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
    rho = load / servers
    return b / (1 - rho * (1 - b))


def _erlang_c_below(servers: int, load: float, threshold: float) -> float:
    """Speed trick (its plain twin is :func:`_erlang_c`, tested against it): Erlang C, or as soon as the recursion
    shows it is below ``threshold``, an upper bound of it that is below ``threshold`` too.

    The caller only asks whether the probability is over a threshold (and then its exact value): past
    ``k > load`` each step of the recursion lowers ``B``, and ``C = B / (1 - rho (1 - B)) <= B / (1 - rho)``,
    so once ``B`` is under ``threshold x (1 - rho)`` the rest of the recursion (up to ``servers`` steps, 512 at
    the largest cap) cannot lift ``C`` over it. The margin of 1e-9 is far above the recursion's rounding.

    >>> _erlang_c_below(256, 20.0, 0.01) <= 0.01, _erlang_c_below(8, 7.5, 0.01) == _erlang_c(8, 7.5)
    (True, True)
    """
    if load >= servers:
        return 1.0
    rho = load / servers
    below = threshold * (1 - rho) * (1 - 1e-9)
    b = 1.0
    for k in range(1, servers + 1):
        b = load * b / (k + load * b)
        if b < below and k > load:
            break
    return b / (1 - rho * (1 - b))


def operating_point(replica: _Replica, rate: float, cap: int, overhead_s: float) -> dict | None:
    """Predicted p50/p99 TTFT and TPOT of one replica at ``rate`` requests/s (None: it cannot keep up).

    The running batch's mean comes from Little's law; with many requests each in the system a while
    (an M/G/infinity system) the count running is Poisson about that mean (Kleinrock, section 3.2), so its
    p99 is about ``mean + 2.33 sqrt(mean)`` and a request's TPOT, an average over seconds of steps, follows
    the batch of its time: TPOT p50 at the mean batch, p99 at the batch's p99 (at most the running cap).
    TTFT adds three waits: the request overhead, a running slot when all ``cap`` are taken (Erlang C with a
    request's stay as the service time) and the prefill queue (M/M/1's tail), then the prompt's own prefill.

    >>> from calc.plan.inputs import PlanRequest
    >>> from calc.plan.presets import baseline
    >>> c = baseline("lesson")
    >>> r = _Replica(PlanRequest(), c, coefficients_of("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16", "bf16", "vllm"),
    ...              1024.0, 256.0, 1024, decode_only=False)
    >>> low, high = operating_point(r, 2.0, 256, 0.01), operating_point(r, 6.0, 256, 0.01)
    >>> low["running"] < high["running"], low["tpot_p99_s"] < high["tpot_p99_s"], low["ttft_p99_s"] < high["ttft_p99_s"]
    (True, True, True)
    >>> operating_point(r, 50.0, 256, 0.01) is None  # far past what one replica sustains
    True
    """
    ttft0 = overhead_s + replica.prefill_s(1)
    batch = _batch_at(replica, rate, ttft0, cap)
    if batch == math.inf:
        return None
    b50 = max(1, math.ceil(batch))
    b99 = min(cap, max(1, math.ceil(batch + _Z99 * math.sqrt(batch))))
    mu = replica.prefill_capacity_per_s(b50)
    own = replica.prefill_s(b50)
    wait50, wait99 = _tail_wait_s(rate, mu, 0.5), _tail_wait_s(rate, mu, 0.99)
    if wait99 == math.inf:
        return None
    stay_s = (replica.answer - 1) * replica.tpot_s(b99)
    waits = _erlang_c_below(cap, rate * stay_s, 0.01)  # only compared with 0.01 and 0.5 unless over 0.01
    slot_rate = cap / stay_s - rate
    slot99 = 0.0 if waits <= 0.01 else (math.inf if slot_rate <= 0 else math.log(waits / 0.01) / slot_rate)
    slot50 = 0.0 if waits <= 0.5 else (math.inf if slot_rate <= 0 else math.log(waits / 0.5) / slot_rate)
    if slot99 == math.inf:
        return None
    return {"running": batch, "running_p99": b99, "slot_wait_p99_s": slot99, "prefill_wait_p99_s": wait99,
            "prefill_s": own, "ttft_p50_s": overhead_s + slot50 + wait50 + own, "ttft_p99_s": overhead_s + slot99 + wait99 + own,
            "tpot_p50_s": replica.tpot_s(b50), "tpot_p99_s": replica.tpot_s(b99), "step_s": replica.step_s(b50)}


def _meets(point: dict | None, targets) -> bool:
    return point is not None and all(point[k] <= v for k, v in targets.items())


def _largest_rate(check, high: float) -> float:
    """The largest rate in (0, high] for which ``check(rate)`` holds (bisection; 0 if none)."""
    if check(high):
        return high
    low = 0.0
    for _ in range(40):
        mid = (low + high) / 2
        if check(mid):
            low = mid
        else:
            high = mid
        if high - low < 1e-4 * high:
            break
    return low


def _fail(candidate, reason: str, binding: str) -> ScreenResult:
    return ScreenResult(candidate=candidate, ok=False, reason=reason, binding=binding)


def _too_many(candidate, peak_rate_per_s: float, unit_rate_per_s: float, binding: str) -> ScreenResult:
    # Past the cap the per-replica rate would exceed what one carries (no steady state): say so, never price it.
    return _fail(candidate, f"peak_rate_per_s {peak_rate_per_s:g} needs more than {_MAX_REPLICAS:,} replicas "
                            f"(one carries {unit_rate_per_s:.3g} requests/s within the targets)", binding)


def _step_binding(coef, replica: _Replica, batch: int) -> str:
    """Which resource a step at ``batch`` spends its time on: the interconnect, HBM bandwidth or compute (kept by
    batch on the replica, whose coefficients these are)."""
    kept = replica.bindings if coef is replica.coef else {}
    if batch not in kept:
        kept[batch] = _step_binding_now(coef, replica, batch)
    return kept[batch]


def _step_binding_now(coef, replica: _Replica, batch: int) -> str:
    d = steady_state_step(coef, batch=batch, input_tokens=max(1, replica.prefill),
                          output_tokens=max(1, round(replica.answer))) if not replica.decode_only else \
        decode_step(coef, batch=batch, context_tokens=replica.context)
    if d["comm_s"] >= INTERCONNECT_SHARE * d["time_s"]:
        return "interconnect"
    return "decode bandwidth" if d["bound"] == "memory" else "prefill compute"


def _traffic(request, c: dict) -> tuple[float, float, int, int]:
    """Mean prompt, mean answer, tokens each prompt must prefill (prefix cache hits skipped), prefix held once."""
    prompt, answer = request.prompt_answer_means()
    shared = request.shared_prefix_tokens()
    cached = 0
    if c.get("prefix_caching") and shared >= 1:
        cached = cached_prefix_tokens(int(shared), max(1, round(prompt)), BLOCK_TOKENS)
    return prompt, answer, max(1, round(prompt) - cached), cached


def screen(request, candidate) -> ScreenResult:
    """Screen one candidate: refuse it with a named reason, or give its replicas, cost and predicted latency.

    >>> from calc.plan.inputs import PlanRequest, Targets
    >>> req = PlanRequest(gpus=("h100-sxm-80gb",), peak_rate_per_s=20, targets=Targets(tpot_p99_s=0.05))
    >>> c = (("gpu", "h100-sxm-80gb"), ("tp", 2), ("pp", 1), ("weights", "bf16"), ("kv_dtype", "bf16"),
    ...      ("max_num_seqs", 256), ("max_num_batched_tokens", 8192), ("speculation", "off"),
    ...      ("prefix_caching", False), ("layout", "aggregated"))
    >>> r = screen(req, c); r.ok, r.binding, r.reason.split(":")[0]
    (False, 'memory', 'no memory left for the KV cache')
    """
    c = as_dict(candidate)
    targets, tpot_target, ttft_targets = _cached(request, ("targets",), lambda: _targets_of(request))
    price = _cached(request, ("price", c["gpu"]), lambda: gpu_hour_price(request, c["gpu"]))
    if price is None:
        return _fail(candidate, f"{c['gpu']}: no price (no dated listing in the catalog): give one", "budget")
    if c.get("pp", 1) > 1:
        return _fail(candidate, f"topology: pipeline parallelism across {c['pp']} servers is not something calc's "
                                f"simulator runs (it runs tensor-parallel replicas, calc.sim)", "topology")
    # The scenario reads every dimension but the layout, the KV sizing only the replica's hardware: both are worked
    # out once per request for what they read, refusals included (most of a default space fails on memory).
    scenario = _cached(request, ("scenario",) + _scenario_key(c), lambda: _outcome(scenario_of, request, candidate))
    kv = scenario if isinstance(scenario, CalcError) else \
        _cached(request, ("kv", c["gpu"], c["tp"], c["weights"], c["kv_dtype"]), lambda: _outcome(kv_sizing, scenario))
    if isinstance(kv, CalcError):
        text = str(kv)
        binding = "memory" if "fit" in text or "memory" in text else "engine"
        return _fail(candidate, text, binding)
    max_len = scenario.max_model_len
    if kv.kv_cache_tokens < max_len:
        return _fail(candidate, f"memory: the KV cache holds {kv.kv_cache_tokens:,} tokens, fewer than max_model_len "
                                f"{max_len:,}; vLLM refuses to start such a replica", "memory")
    coef = coefficients_of(request.model, c["gpu"], c["tp"], c["weights"], c["kv_dtype"], request.engine)
    overhead_s = engine_profiles.get_profile(request.engine).request_overhead_s
    prompt, answer, prefill, cached = _traffic(request, c)
    layout = c.get("layout", "aggregated")
    per_request_kv = prefill + answer / 2  # paged KV: a running request holds its context; a cached prefix once
    kv_cap = int(max(0, kv.kv_cache_tokens - cached) // max(1.0, per_request_kv))
    if kv_cap < 1:
        return _fail(candidate, f"memory: the KV cache ({kv.kv_cache_tokens:,} tokens) holds no average request "
                                f"({round(per_request_kv):,} tokens)", "memory")
    cap = min(c["max_num_seqs"], kv_cap)

    if layout == "aggregated":
        replica = _cached(request, _replica_key(c, prefill, False),
                          lambda: _Replica(request, c, coef, prompt, answer, prefill, decode_only=False))
        result = _aggregated(request, candidate, c, replica, cap, kv_cap, tpot_target, ttft_targets, targets,
                             overhead_s)
    else:
        p, d = (int(x) for x in layout.split()[1].split(":"))
        result = _disaggregated(request, candidate, c, coef, prompt, answer, prefill, cap, kv_cap, tpot_target,
                                ttft_targets, targets, overhead_s, p, d)
    if not isinstance(result, dict):
        return result
    gpus = result["units"] * result["gpus_per_unit"]
    if request.gpu_budget is not None and gpus > request.gpu_budget:
        return _fail(candidate, f"budget: {gpus:,} GPUs needed at the peak rate, more than the budget of "
                                f"{request.gpu_budget:,}", "budget")
    usd_per_hour = gpus * price["usd_per_gpu_hour"]
    return ScreenResult(candidate=candidate, ok=True, binding=result["binding"], replicas=result["units"], gpus=gpus,
                        rate_max_per_s=result["rate_max"], usd_per_hour=usd_per_hour,
                        usd_per_gpu_hour=price["usd_per_gpu_hour"], price=dict(price), predicted=result["point"],
                        prefill_share=result["prefill_share"], kv_cache_tokens=kv.kv_cache_tokens, running_max=cap,
                        limits=result["limits"])


def _aggregated_binding(replica: _Replica, point: dict | None, targets: dict, cap: int, kv_cap: int,
                        max_num_seqs: int) -> str:
    """What fails first just past the largest rate: the constraint the replica count is set by."""
    memory_capped = kv_cap < max_num_seqs and cap == kv_cap
    if point is None:  # the replica cannot keep up at all: its running slots (KV room or the cap) are full
        return "memory" if memory_capped else "queueing"
    missed = [k for k, v in targets.items() if point[k] > v]
    if any(k.startswith("tpot") for k in missed):
        return _step_binding(replica.coef, replica, point["running_p99"])
    ttft = min((v for k, v in targets.items() if k.startswith("ttft")), default=math.inf)
    if point["prefill_s"] > 0.5 * ttft:
        return "prefill compute"
    if point["slot_wait_p99_s"] >= point["prefill_wait_p99_s"]:
        return "memory" if memory_capped else "queueing"
    return "queueing"


def _aggregated(request, candidate, c, replica, cap, kv_cap, tpot_target, ttft_targets, targets, overhead_s):
    best = _largest_batch(replica, cap, tpot_target)
    if best == 0:
        return _fail(candidate, f"{_step_binding(replica.coef, replica, 1)}: one sequence alone takes "
                                f"{replica.tpot_s(1) * 1000:.1f} ms per token, over the TPOT target "
                                f"{tpot_target * 1000:g} ms", _step_binding(replica.coef, replica, 1))
    ttft_floor = overhead_s + replica.prefill_s(1)
    for k, v in ttft_targets.items():
        if ttft_floor > v:
            return _fail(candidate, f"prefill compute: an idle replica takes {ttft_floor:.3g} s to the first token, "
                                    f"over the {k} target {v:g} s", "prefill compute")
    # The rate at which the running batch reaches `best` (Little's law), then the rate every target allows.
    rate_tpot = best / (ttft_floor + (replica.answer - 1) * replica.tpot_s(best))
    rate_max = _largest_rate(lambda r: _meets(operating_point(replica, r, cap, overhead_s), targets), rate_tpot)
    if rate_max <= 0:
        return _fail(candidate, "queueing: no arrival rate meets every target", "queueing")
    binding = _aggregated_binding(replica, operating_point(replica, rate_max * 1.02, cap, overhead_s), targets,
                                  cap, kv_cap, c["max_num_seqs"])
    units = math.ceil(request.peak_rate_per_s / rate_max - 1e-9)
    if units > _MAX_REPLICAS:
        return _too_many(candidate, request.peak_rate_per_s, rate_max, binding)
    point = operating_point(replica, request.peak_rate_per_s / units, cap, overhead_s)
    b = max(1, math.ceil(point["running"]))
    # Each phase's GPU time alone: a prompt's prefill on an idle replica, an answer's share of decode steps.
    prefill_alone = replica.prefill_s(0)
    decode_alone = (replica.answer - 1) * replica.decode_s(b) / b
    if units == 1 and request.peak_rate_per_s < rate_max:
        binding = "memory"  # one replica carries the peak: the smallest replica that holds the weights sets the cost
    ttft = min(ttft_targets.values(), default=math.inf)
    memory_capped = kv_cap < c["max_num_seqs"] and cap == kv_cap
    ttft_binding = ("prefill compute" if point["prefill_s"] > 0.5 * ttft else
                    "memory" if memory_capped and point["slot_wait_p99_s"] >= point["prefill_wait_p99_s"] else "queueing")
    return {"units": units, "gpus_per_unit": c["tp"], "rate_max": rate_max, "binding": binding, "point": point,
            "prefill_share": prefill_alone / (prefill_alone + decode_alone),
            "limits": {"step_binding": _step_binding(replica.coef, replica, point["running_p99"]),
                       "ttft_binding": ttft_binding, "peak_share_of_capacity": request.peak_rate_per_s / units / rate_max,
                       "running_batch_at_target": best, "kv_running_max": kv_cap, "max_num_seqs": c["max_num_seqs"],
                       "rate_at_tpot_target_per_s": rate_tpot}}


def _pool_replicas(request, c, coef, prompt, answer, prefill, cap, tpot_target, ttft_targets, overhead_s):
    """What one prefill replica and one decode replica sustain, whatever the P:D ratio (a dict), or a refusal
    (``(reason, binding)``): shared by the candidates that differ only in their ratio."""
    pre = dec = _cached(request, _replica_key(c, prefill, True),
                        lambda: _Replica(request, c, coef, prompt, answer, prefill, decode_only=True))
    model = get_model(request.model)
    # The prompt's KV goes from the prefill replica to the decode replica, each GPU's share over its own NIC.
    transfer_s = kv_bytes_per_token(model, c["kv_dtype"]) * prompt / (c["tp"] * NIC_BYTES_PER_S)
    best = _largest_batch(dec, cap, tpot_target)
    if best == 0:
        return (f"decode bandwidth: one sequence alone takes {dec.tpot_s(1) * 1000:.1f} ms per token, "
                f"over the TPOT target {tpot_target * 1000:g} ms", "decode bandwidth")
    prefill_s = pre.prefill_s(0)
    ttft_floor = overhead_s + prefill_s + transfer_s
    for k, v in ttft_targets.items():
        if ttft_floor > v:
            return (f"prefill compute: a prompt takes {ttft_floor:.3g} s to the first token (prefill "
                    f"plus the KV transfer), over the {k} target {v:g} s", "prefill compute")
    # per decode replica: the largest rate whose running count's p99 (Poisson about Little's mean) meets TPOT
    def decode_ok(rate):
        mean = rate * (answer - 1) * dec.tpot_s(best)
        return min(cap, math.ceil(mean + _Z99 * math.sqrt(mean))) <= best and mean <= cap
    rate_decode = _largest_rate(decode_ok, best / ((answer - 1) * dec.tpot_s(best)))
    mu = 1.0 / prefill_s  # prompts per second one prefill replica serves
    rate_prefill = _largest_rate(lambda r: all(_prefill_point(r, mu, overhead_s + prefill_s + transfer_s)[k] <= v
                                               for k, v in ttft_targets.items()), mu * 0.999)
    return {"dec": dec, "transfer_s": transfer_s, "best": best, "prefill_s": prefill_s, "mu": mu,
            "rate_decode": rate_decode, "rate_prefill": rate_prefill}


def _prefill_point(rate, mu, base_s):
    """TTFT p50 and p99 of a prefill replica serving ``mu`` prompts/s at ``rate``: M/M/1's waits plus ``base_s``."""
    w50, w99 = _tail_wait_s(rate, mu, 0.5), _tail_wait_s(rate, mu, 0.99)
    return {"ttft_p50_s": base_s + w50, "ttft_p99_s": base_s + w99}


def _disaggregated(request, candidate, c, coef, prompt, answer, prefill, cap, kv_cap, tpot_target, ttft_targets,
                   targets, overhead_s, p, d):
    """A unit of ``p`` prefill replicas and ``d`` decode replicas: the prefill pool for TTFT, the decode pool for TPOT."""
    pools = _cached(request, _replica_key(c, prefill, True) + (cap,),
                    lambda: _pool_replicas(request, c, coef, prompt, answer, prefill, cap, tpot_target, ttft_targets,
                                           overhead_s))
    if isinstance(pools, tuple):
        return _fail(candidate, *pools)
    dec, transfer_s, best, prefill_s = pools["dec"], pools["transfer_s"], pools["best"], pools["prefill_s"]
    rate_decode, rate_prefill, mu = pools["rate_decode"], pools["rate_prefill"], pools["mu"]

    def prefill_point(rate):
        return _prefill_point(rate, mu, overhead_s + prefill_s + transfer_s)

    unit_rate = min(p * rate_prefill, d * rate_decode)
    if unit_rate <= 0:
        return _fail(candidate, "queueing: no arrival rate meets every target", "queueing")
    if p * rate_prefill < d * rate_decode:
        binding = "prefill compute" if prefill_s > 0.5 * min(ttft_targets.values(), default=math.inf) else "queueing"
    elif best == kv_cap and kv_cap < c["max_num_seqs"]:
        binding = "memory"
    elif best == c["max_num_seqs"]:
        binding = "queueing"
    else:
        binding = _step_binding(coef, dec, best)
    if transfer_s > 0.5 * prefill_s:
        binding = "interconnect"
    units = math.ceil(request.peak_rate_per_s / unit_rate - 1e-9)
    if units > _MAX_REPLICAS:
        return _too_many(candidate, request.peak_rate_per_s, unit_rate, binding)
    rate = request.peak_rate_per_s / units
    point = prefill_point(rate / p)
    running = (rate / d) * (answer - 1) * dec.tpot_s(best)
    b = max(1, min(cap, math.ceil(running)))
    b99 = min(cap, max(1, math.ceil(running + _Z99 * math.sqrt(running))))  # the running count's Poisson tail
    point.update(tpot_p50_s=dec.tpot_s(b), tpot_p99_s=dec.tpot_s(b99), running=running, running_p99=b99,
                 step_s=dec.step_s(b))
    if units == 1 and request.peak_rate_per_s < unit_rate:
        binding = "memory"  # one unit carries the peak: the smallest replicas that hold the weights set the cost
    ttft = min(ttft_targets.values(), default=math.inf)
    ttft_binding = ("interconnect" if transfer_s > 0.5 * prefill_s else
                    "prefill compute" if prefill_s > 0.5 * ttft else "queueing")
    return {"units": units, "gpus_per_unit": (p + d) * c["tp"], "rate_max": unit_rate, "binding": binding,
            "point": point, "prefill_share": p / (p + d),
            "limits": {"step_binding": _step_binding(coef, dec, b), "ttft_binding": ttft_binding,
                       "peak_share_of_capacity": request.peak_rate_per_s / units / unit_rate,
                       "running_batch_at_target": best, "kv_running_max": kv_cap, "max_num_seqs": c["max_num_seqs"],
                       "rate_per_prefill_replica_per_s": rate_prefill, "rate_per_decode_replica_per_s": rate_decode,
                       "kv_transfer_s": transfer_s, "prefill_replicas": p * units, "decode_replicas": d * units}}


def usd_per_million(result: ScreenResult, request) -> dict:
    """USD per million input and output tokens at the peak and at the mean rate, and per million of both.

    The fleet's hourly cost is split between prompt and answer tokens by the GPU time each phase of a request
    takes alone: its prompt's prefill on an idle replica against its answer's share of the decode steps at the
    running batch (for pools, the pools' GPUs). Mixed into decode steps a prefill costs less than alone
    (:func:`calc.roofline.cost_split`), so this split does not make prompts look free while decode is memory-bound. Source:
    :func:`calc.cost.usd_per_million_tokens` (hourly cost / (tokens/s x 3,600) x 10^6).

    >>> from calc.plan.inputs import PlanRequest
    >>> r = ScreenResult(candidate=(), ok=True, usd_per_hour=36.0, prefill_share=0.5)
    >>> out = usd_per_million(r, PlanRequest(peak_rate_per_s=10, mean_rate_per_s=5))
    >>> round(out["input_at_peak"], 4), round(out["output_at_peak"], 4), round(out["all_at_mean"], 4)
    (0.4883, 1.9531, 1.5625)
    """
    from calc.cost import usd_per_million_tokens

    prompt, answer = request.prompt_answer_means()
    out = {}
    for where, rate in (("peak", request.peak_rate_per_s), ("mean", request.mean_rate_per_s)):
        out[f"input_at_{where}"] = usd_per_million_tokens(result.usd_per_hour * result.prefill_share, rate * prompt)
        out[f"output_at_{where}"] = usd_per_million_tokens(result.usd_per_hour * (1 - result.prefill_share),
                                                           rate * answer)
        out[f"all_at_{where}"] = usd_per_million_tokens(result.usd_per_hour, rate * (prompt + answer))
    return out

