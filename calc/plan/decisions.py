"""How good the planner's *picks* are: groups of measured runs of one model and workload across configurations.

A decision group is what a published sweep gives: one model, one workload (lengths and arrival rate), the
targets, and several configurations each with its measured p50/p99 TTFT and TPOT, its GPU count and a price
basis, every row with its source. For each group the planner is asked the group's question, restricted to the
group's configurations (the measured ones are the only answers a measurement can grade), and the pick is
scored against the measurements:

* **hit**: the measurements say the pick meets every target (a pick the group did not measure is *unscored*,
  never counted as a hit);
* **regret**: the pick's USD per million tokens over that of the cheapest measured configuration that meets
  every target (0 when the pick is that one; None when no measured configuration meets them).

Groups carry a ``role`` as the measurement rows do (``calibration`` or ``validation``): :func:`summary` reports
the two apart, and nothing in the planner is tuned to a validation group. The groups live in
``calc/plan/decision_groups.json`` (:data:`GROUPS_PATH`; none is filled in yet: every row must be a published
measurement with its source, see CONTRIBUTING).

>>> g = DecisionGroup.from_dict(EXAMPLE)
>>> cheapest_meeting(g).key, meets(g.configurations[0], g.targets)
('tp2-fp8', False)
>>> score(g, "tp2-fp8")["hit"], round(score(g, "tp4-bf16")["regret"], 3)
(True, 0.667)
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass

from calc.accuracy import median
from calc.errors import CalcError, check_choice, check_range

__all__ = ["GROUPS_PATH", "ROLES", "METRICS", "MeasuredConfig", "DecisionGroup", "load_groups", "meets",
           "cheapest_meeting", "score", "summary", "EXAMPLE", "CONFIG_DEFAULTS", "group_request", "plan_pick"]

GROUPS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decision_groups.json")
ROLES = ("calibration", "validation")
METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
_CONFIG_KEYS = ("gpu", "tp", "pp", "weights", "kv_dtype", "max_num_seqs", "max_num_batched_tokens", "speculation",
                "prefix_caching", "layout")


@dataclass(frozen=True)
class MeasuredConfig:
    """One measured configuration of a group: its settings, GPUs, price, measured metrics and source.

    ``config`` holds the planner's dimension values (:data:`calc.plan.space.DIMENSIONS` names) the run set;
    ``measured`` the metrics it reports (seconds; a metric it does not report is absent, and a target on it
    cannot be graded); ``usd_per_million_tokens`` its cost at the group's rate on the group's price basis.
    """

    key: str
    config: tuple
    gpus: int
    usd_per_million_tokens: float
    measured: tuple
    source: str

    def metric(self, name: str):
        """A measured metric in seconds, or None when the run did not report it.

        >>> MeasuredConfig("a", (), 1, 1.0, (("ttft_p99_s", 0.5),), "s").metric("ttft_p99_s")
        0.5
        """
        return dict(self.measured).get(name)


@dataclass(frozen=True)
class DecisionGroup:
    """One model and workload measured across configurations (see the module docstring)."""

    id: str
    role: str
    model: str
    workload: tuple
    targets: tuple
    configurations: tuple
    source: str

    @classmethod
    def from_dict(cls, data: dict) -> "DecisionGroup":
        """A checked group from JSON-like data; CalcError naming the field at fault.

        >>> DecisionGroup.from_dict({**EXAMPLE, "role": "fitted"})
        Traceback (most recent call last):
        ...
        calc.errors.CalcError: role must be one of calibration, validation; got 'fitted'
        """
        if not isinstance(data, dict):
            raise CalcError(f"a decision group must be an object; got {type(data).__name__}", "group")
        for key in ("id", "role", "model", "workload", "targets", "configurations", "source"):
            if key not in data:
                raise CalcError(f"decision group {data.get('id', '?')}: {key} is missing", key)
        role = check_choice("role", data["role"], ROLES)
        targets = {}
        for name, value in data["targets"].items():
            check_choice("targets", name, METRICS)
            targets[name] = check_range(f"targets.{name}", value, 0.001, 3600.0)
        if not targets:
            raise CalcError(f"decision group {data['id']}: targets must set at least one metric", "targets")
        configs = []
        for i, c in enumerate(data["configurations"]):
            where = f"configurations[{i}]"
            unknown = set(c.get("config", {})) - set(_CONFIG_KEYS)
            if unknown:
                raise CalcError(f"{where}.config: unknown key {sorted(unknown)[0]!r}; allowed: "
                                f"{', '.join(_CONFIG_KEYS)}", f"{where}.config")
            measured = {}
            for name, value in c.get("measured", {}).items():
                check_choice(f"{where}.measured", name, METRICS)
                measured[name] = check_range(f"{where}.measured.{name}", value, 0.0, 1e5)
            if not c.get("source"):
                raise CalcError(f"{where}: every measured configuration needs its source", f"{where}.source")
            configs.append(MeasuredConfig(
                key=str(c["key"]), config=tuple(sorted(c.get("config", {}).items())),
                gpus=check_range(f"{where}.gpus", c.get("gpus"), 1, 100_000, integer=True),
                usd_per_million_tokens=check_range(f"{where}.usd_per_million_tokens", c.get("usd_per_million_tokens"),
                                                   0.0, 1e6),
                measured=tuple(sorted(measured.items())), source=str(c["source"])))
        if len({c.key for c in configs}) != len(configs) or len(configs) < 2:
            raise CalcError(f"decision group {data['id']}: configurations need at least two distinct keys",
                            "configurations")
        return cls(id=str(data["id"]), role=role, model=str(data["model"]),
                   workload=tuple(sorted(data["workload"].items())), targets=tuple(sorted(targets.items())),
                   configurations=tuple(configs), source=str(data["source"]))


def load_groups(path: str | None = None) -> tuple:
    """The decision groups of :data:`GROUPS_PATH` (or ``path``), checked; an absent file holds none.

    >>> isinstance(load_groups(), tuple)
    True
    """
    path = path or GROUPS_PATH
    if not os.path.exists(path):
        return ()
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    return tuple(DecisionGroup.from_dict(g) for g in data.get("groups", ()))


def meets(config: MeasuredConfig, targets) -> bool | None:
    """Whether the measurements say ``config`` meets every target (None: a targeted metric was not measured).

    >>> c = MeasuredConfig("a", (), 1, 1.0, (("tpot_p99_s", 0.04),), "s")
    >>> meets(c, (("tpot_p99_s", 0.05),)), meets(c, (("ttft_p99_s", 1.0),))
    (True, None)
    """
    out = True
    for name, target in dict(targets).items():
        value = config.metric(name)
        if value is None:
            return None
        out = out and value <= target
    return out


def cheapest_meeting(group: DecisionGroup) -> MeasuredConfig | None:
    """The measured configuration the measurements say meets every target at the lowest USD per million tokens.

    >>> cheapest_meeting(DecisionGroup.from_dict(EXAMPLE)).usd_per_million_tokens
    0.6
    """
    ok = [c for c in group.configurations if meets(c, group.targets)]
    return min(ok, key=lambda c: (c.usd_per_million_tokens, c.key)) if ok else None


def score(group: DecisionGroup, pick_key: str | None) -> dict:
    """Grade the planner's pick (a configuration key of the group, or None for "none meets") against the measurements.

    >>> g = DecisionGroup.from_dict(EXAMPLE)
    >>> score(g, "tp1-bf16")["hit"], score(g, None)["hit"], score(g, "elsewhere")["scored"]
    (False, False, False)
    """
    best = cheapest_meeting(group)
    by_key = {c.key: c for c in group.configurations}
    if pick_key is None:
        return {"group": group.id, "role": group.role, "pick": None, "scored": True, "hit": best is None,
                "regret": None, "cheapest_meeting": best.key if best else None}
    if pick_key not in by_key:
        return {"group": group.id, "role": group.role, "pick": pick_key, "scored": False, "hit": None,
                "regret": None, "cheapest_meeting": best.key if best else None}
    pick = by_key[pick_key]
    hit = meets(pick, group.targets)
    regret = None
    if best is not None and best.usd_per_million_tokens > 0:
        regret = pick.usd_per_million_tokens / best.usd_per_million_tokens - 1
    return {"group": group.id, "role": group.role, "pick": pick_key, "scored": hit is not None, "hit": hit,
            "regret": regret, "cheapest_meeting": best.key if best else None}


#: What a measured configuration leaves unsaid takes vLLM's default (the planner's dimension values).
CONFIG_DEFAULTS = {"pp": 1, "weights": "bf16", "kv_dtype": "bf16", "max_num_seqs": 256, "max_num_batched_tokens": 8192,
                   "speculation": "off", "prefix_caching": False, "layout": "aggregated"}


def group_request(group: DecisionGroup, engine: str = "vllm"):
    """The planner's request for a group: its model, its workload (fixed lengths unless it says otherwise) and targets.

    >>> r = group_request(DecisionGroup.from_dict(EXAMPLE)); r.peak_rate_per_s, r.classes[0].prompt_tokens
    (20, 1024)
    """
    from calc.plan.inputs import request_from_dict

    w = dict(group.workload)
    cls = {"lengths": w.get("lengths", "fixed"), "prompt_tokens": w["prompt_tokens"],
           "output_tokens": w["answer_tokens"], "prefix_tokens": w.get("prefix_tokens", 0)}
    return request_from_dict({"model": group.model, "engine": engine, "peak_rate_per_s": w["rate_per_s"],
                              "classes": [cls], "targets": dict(group.targets), "seed": w.get("seed", 0),
                              "requests": w.get("requests")})


def plan_pick(group: DecisionGroup, *, engine: str = "vllm", parallel: bool = False) -> str | None:
    """The planner's pick among the group's measured configurations: each one's own GPU count simulated
    (:func:`calc.plan.confirm.simulate_candidate`), the cheapest (by the group's price basis) the simulator says
    meets every target; None when it says none does.

    >>> cfg = lambda key, tp, seqs: {"key": key, "config": {"gpu": "h100-sxm-80gb", "tp": tp, "max_num_seqs": seqs},
    ...                              "gpus": tp, "usd_per_million_tokens": tp * 0.1, "measured": {}, "source": "x"}
    >>> g = DecisionGroup.from_dict({**EXAMPLE, "model": "llama-3.1-8b", "targets": {"tpot_p99_s": 0.02},
    ...     "workload": {"prompt_tokens": 500, "answer_tokens": 100, "rate_per_s": 2, "requests": 100},
    ...     "configurations": [cfg("one", 1, 256), cfg("two", 2, 256)]})
    >>> plan_pick(g)
    'one'
    """
    from calc.plan.confirm import simulate_candidate
    from calc.plan.space import DIMENSIONS

    request = group_request(group, engine)
    best = None
    for c in sorted(group.configurations, key=lambda c: (c.usd_per_million_tokens, c.key)):
        config = {**CONFIG_DEFAULTS, **dict(c.config)}
        for needed in ("gpu", "tp"):
            if needed not in config:
                raise CalcError(f"decision group {group.id}: {c.key} must say its {needed}", needed)
        candidate = tuple((d.name, config[d.name]) for d in DIMENSIONS if d.name in config)
        per_replica = config["tp"] * config["pp"]
        if c.gpus % per_replica:
            raise CalcError(f"decision group {group.id}: {c.key} has {c.gpus} GPUs, not a whole number of "
                            f"{per_replica}-GPU replicas", "gpus")
        try:
            run = simulate_candidate(request, candidate, c.gpus // per_replica)
        except CalcError:
            continue  # the planner refuses it (memory, engine rules): never its pick
        if run["meets"]:
            best = c.key
            break
    return best


def summary(scores) -> dict:
    """Per role: groups scored, the share of picks the measurements say meet the targets, the median regret.

    >>> g = DecisionGroup.from_dict(EXAMPLE)
    >>> s = summary([score(g, "tp2-fp8"), score(g, "tp1-bf16")])["validation"]
    >>> s["scored"], s["hit_rate"], s["median_regret"]
    (2, 0.5, 0.0)
    """
    out = {}
    for role in ROLES:
        mine = [s for s in scores if s["role"] == role and s["scored"]]
        regrets = [s["regret"] for s in mine if s["hit"] and s["regret"] is not None]
        out[role] = {"scored": len(mine), "unscored": sum(1 for s in scores if s["role"] == role and not s["scored"]),
                     "hit_rate": (sum(bool(s["hit"]) for s in mine) / len(mine)) if mine else None,
                     "median_regret": median(regrets) if regrets else None}
    return out


#: The shape of a group, with made-up numbers (the doctests' and tests' example: not a measurement).
EXAMPLE = {
    "id": "example", "role": "validation", "model": "llama-3.1-70b",
    "workload": {"prompt_tokens": 1024, "answer_tokens": 256, "rate_per_s": 20},
    "targets": {"ttft_p99_s": 5.0, "tpot_p99_s": 0.05},
    "source": "an illustration of the format, not a measurement",
    "configurations": [
        {"key": "tp1-bf16", "config": {"gpu": "h100-sxm-80gb", "tp": 1, "weights": "bf16"}, "gpus": 8,
         "usd_per_million_tokens": 0.3, "measured": {"ttft_p99_s": 9.0, "tpot_p99_s": 0.08}, "source": "example"},
        {"key": "tp2-fp8", "config": {"gpu": "h100-sxm-80gb", "tp": 2, "weights": "fp8"}, "gpus": 8,
         "usd_per_million_tokens": 0.6, "measured": {"ttft_p99_s": 0.4, "tpot_p99_s": 0.045}, "source": "example"},
        {"key": "tp4-bf16", "config": {"gpu": "h100-sxm-80gb", "tp": 4, "weights": "bf16"}, "gpus": 16,
         "usd_per_million_tokens": 1.0, "measured": {"ttft_p99_s": 0.35, "tpot_p99_s": 0.049}, "source": "example"},
    ],
}
