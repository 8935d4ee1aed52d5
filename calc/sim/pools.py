"""Pools: groups of replicas that serve chosen request classes, each with its own limits and scaling.

One pool tuned for every shape of request serves none of them well: a chat
request stuck behind a 30,000-token document waits for its prefill and for the
KV cache it holds. Splitting the fleet into pools (short chat, long documents,
batch jobs) lets each have the engine limits its requests need:

* ``max_model_len``: longest prompt + answer the pool accepts (longer requests
  are refused, as vLLM refuses them);
* ``max_num_seqs``: requests running at once;
* ``max_num_batched_tokens``: tokens per engine step (a long prompt's prefill
  is cut into chunks of this size, and every decode in the step waits for it);

and its own replica count, router and autoscaler. A pool leaves any limit it
does not set at the scenario's value. Source: the lesson's step 20 (seed
``000_783e2c6cc1bfcb77.txt``: "separate workloads whose shapes differ ... into
pools with their own limits and scaling"); vLLM engine arguments
(``--max-model-len``, ``--max-num-seqs``, ``--max-num-batched-tokens``).

>>> from calc.sim.scenario import Scenario
>>> pool = PoolSpec.from_dict({"name": "docs", "classes": ["doc"], "replicas": 2, "max_num_seqs": 16,
...                            "max_model_len": 32768}, index=1)
>>> pool.name, pool.replicas, pool.router
('docs', 2, 'least-outstanding')
>>> s = pool.replica_scenario(Scenario())
>>> s.max_num_seqs, s.max_model_len, s.max_num_batched_tokens
(16, 32768, 8192)
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from calc.errors import CalcError, check_choice, check_range
from calc.sim.autoscaler import AutoscalerConfig
from calc.sim.router import ROUTERS

__all__ = ["PoolSpec", "POOL_LIMITS", "MAX_POOL_REPLICAS"]

POOL_LIMITS = ("max_num_seqs", "max_model_len", "max_num_batched_tokens")
_KEYS = ("name", "classes", "replicas", "router", "autoscaler") + POOL_LIMITS

#: The most replicas one pool of a simulated fleet holds (a planner run of a larger fleet simulates a slice).
MAX_POOL_REPLICAS = 1000


@dataclass(frozen=True)
class PoolSpec:
    """One pool: its name, the request classes it serves, its replicas, router, autoscaler and engine limits.

    ``classes`` empty means "every class no other pool names". ``replicas`` is
    the count at time 0 (all warm); with an autoscaler it must lie within the
    autoscaler's bounds. Limits left ``None`` take the scenario's.

    >>> PoolSpec().replicas, PoolSpec().classes
    (1, ())
    """

    name: str = "default"
    classes: tuple = ()
    replicas: int = 1
    router: str = "least-outstanding"
    autoscaler: AutoscalerConfig | None = None
    max_num_seqs: int | None = None
    max_model_len: int | None = None
    max_num_batched_tokens: int | None = None

    @classmethod
    def from_dict(cls, data: dict, index: int = 0, *, default_router: str = "least-outstanding") -> "PoolSpec":
        """A validated pool from JSON-like data (``index`` names it in messages)."""
        where = f"pools[{index}]"
        if not isinstance(data, dict):
            raise CalcError(f"{where} must be a JSON object; got {type(data).__name__}", where)
        for key in data:
            if key not in _KEYS:
                raise CalcError(f"unknown key {key!r} in {where}; allowed: {', '.join(sorted(_KEYS))}", key)
        name = data.get("name", f"pool-{index}")
        if not isinstance(name, str) or not name:
            raise CalcError(f"{where}.name must be a non-empty string; got {name!r}", f"{where}.name")
        classes = data.get("classes", [])
        if not isinstance(classes, list) or not all(isinstance(c, str) for c in classes):
            raise CalcError(f"{where}.classes must be a list of request class names; got {classes!r}",
                            f"{where}.classes")
        auto = data.get("autoscaler")
        auto = AutoscalerConfig.from_dict(auto) if auto is not None else None
        replicas = check_range(f"{where}.replicas", data.get("replicas", auto.min_replicas if auto else 1),
                               1, MAX_POOL_REPLICAS, integer=True)
        if auto is not None and not auto.min_replicas <= replicas <= auto.max_replicas:
            raise CalcError(f"{where}.replicas must lie within the autoscaler's bounds {auto.min_replicas} to "
                            f"{auto.max_replicas}; got {replicas}", f"{where}.replicas")
        limits = {}
        bounds = {"max_num_seqs": (1, 1_000_000), "max_model_len": (16, 10_000_000),
                  "max_num_batched_tokens": (1, 100_000_000)}
        for key in POOL_LIMITS:
            value = data.get(key)
            if value is not None:
                low, high = bounds[key]
                value = check_range(f"{where}.{key}", value, low, high, integer=True)
            limits[key] = value
        return cls(name=name, classes=tuple(classes), replicas=replicas,
                   router=check_choice(f"{where}.router", data.get("router", default_router), ROUTERS),
                   autoscaler=auto, **limits)

    def replica_scenario(self, scenario):
        """The scenario one replica of this pool runs: the fleet's, with this pool's limits.

        The workload is left as it is (requests longer than the pool's
        ``max_model_len`` are refused when they arrive, as vLLM refuses them);
        vLLM's budget rules are checked at once.

        >>> from calc.sim.scenario import Scenario
        >>> PoolSpec(max_num_batched_tokens=100).replica_scenario(Scenario())
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: max_num_batched_tokens must be at least max_num_seqs x tokens per decode (256 x 1 = 256); got 100
        """
        changes = {k: getattr(self, k) for k in POOL_LIMITS if getattr(self, k) is not None}
        if not changes:
            return scenario
        out = dataclasses.replace(scenario, **changes)
        if out.batching == "continuous":
            out.scheduler_config()  # raises on vLLM's rules, naming the field
        return out

    def to_dict(self) -> dict:
        """JSON-ready data (limits left at the scenario's are omitted)."""
        out = {"name": self.name, "classes": list(self.classes), "replicas": self.replicas, "router": self.router,
               "autoscaler": self.autoscaler.to_dict() if self.autoscaler else None}
        for key in POOL_LIMITS:
            if getattr(self, key) is not None:
                out[key] = getattr(self, key)
        return out
