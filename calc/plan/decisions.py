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
the two apart, and nothing in the planner is tuned to a group. The published sweeps live in
``calc/plan/decision_groups.json`` (:data:`GROUPS_PATH`, every configuration with its source): :func:`measured_groups`
reads them (prices from the GPU catalog, :func:`role_of` by the rows read), :func:`questions` sets their targets by
one rule (every midpoint between measured values), :func:`plan_pick` answers each question from the planner's own
simulated runs and :func:`evaluate` grades them; ``python -m calc.plan.decisions --write`` stores the result in
:data:`SCORES_PATH`, shown on the accuracy page.

>>> g = DecisionGroup.from_dict(EXAMPLE)
>>> cheapest_meeting(g).key, meets(g.configurations[0], g.targets)
('tp2-fp8', False)
>>> score(g, "tp2-fp8")["hit"], round(score(g, "tp4-bf16")["regret"], 3)
(True, 0.667)
"""

from __future__ import annotations

import functools
import json
import os
from dataclasses import dataclass

from calc.accuracy import median
from calc.errors import CalcError, check_choice, check_range

__all__ = ["GROUPS_PATH", "SCORES_PATH", "ROLES", "METRICS", "MeasuredConfig", "DecisionGroup", "load_groups", "meets",
           "cheapest_meeting", "score", "summary", "EXAMPLE", "CONFIG_DEFAULTS", "group_request", "plan_pick",
           "SERVING_KEYS", "workload_of", "role_of", "run_cost", "measured_groups", "midpoints", "questions",
           "predict_configuration", "predicted_pick", "evaluate", "report"]

GROUPS_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "decision_groups.json")
#: The stored result of :func:`evaluate` (``python -m calc.plan.decisions --write``), checked by a test.
SCORES_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data", "decision_scores.json")
ROLES = ("calibration", "validation")
#: The metrics a target can be set on: the planner's four, and two that published sweeps report instead --
#: the median end-to-end latency (vLLM's ``benchmark_latency``: one batch's wall time) and the whole run's
#: wall time (``duration_s``: a batch job's, requests / the published requests per second).
METRICS = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "duration_s")
_CONFIG_KEYS = ("gpu", "tp", "pp", "weights", "kv_dtype", "max_num_seqs", "max_num_batched_tokens", "speculation",
                "prefix_caching", "layout")
#: How a measured run was made beyond the planner's dimensions, applied to its simulation as run: its engine profile
#: (:data:`calc.engine_profiles.ENGINES`), scheduler settings it states and whether an API server fronted it.
_AS_RUN_KEYS = ("engine", "chunked_prefill", "frontend")


@dataclass(frozen=True)
class MeasuredConfig:
    """One measured configuration of a group: its settings, GPUs, price, measured metrics and source.

    ``config`` holds the planner's dimension values (:data:`calc.plan.space.DIMENSIONS` names) the run set;
    ``measured`` the metrics it reports (seconds; a metric it does not report is absent, and a target on it
    cannot be graded); ``usd_per_million_tokens`` its cost at the group's rate on the group's price basis;
    ``failed`` a run that did not serve every request (it meets no target, whatever it reports).
    """

    key: str
    config: tuple
    gpus: int
    usd_per_million_tokens: float
    measured: tuple
    source: str
    failed: bool = False

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
            unknown = set(c.get("config", {})) - set(_CONFIG_KEYS + _AS_RUN_KEYS)
            if unknown:
                raise CalcError(f"{where}.config: unknown key {sorted(unknown)[0]!r}; allowed: "
                                f"{', '.join(_CONFIG_KEYS + _AS_RUN_KEYS)}", f"{where}.config")
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
                measured=tuple(sorted(measured.items())), source=str(c["source"]), failed=bool(c.get("failed"))))
        if len({c.key for c in configs}) != len(configs) or len(configs) < 2:
            raise CalcError(f"decision group {data['id']}: configurations need at least two distinct keys",
                            "configurations")
        return cls(id=str(data["id"]), role=role, model=str(data["model"]),
                   workload=tuple(sorted(data["workload"].items())), targets=tuple(sorted(targets.items())),
                   configurations=tuple(configs), source=str(data["source"]))


def load_groups(path: str | None = None) -> tuple:
    """Every decision question of :data:`GROUPS_PATH` (or ``path``) as a checked :class:`DecisionGroup`: each
    measured group's :func:`questions`, its priced configurations and its role; an absent file holds none.

    >>> gs = load_groups()
    >>> len(gs) > 10, all(len(g.configurations) >= 2 and g.source for g in gs)
    (True, True)
    """
    path = path or GROUPS_PATH
    if not os.path.exists(path):
        return ()
    return tuple(q for g in measured_groups(path) for q in question_groups(g))


def meets(config: MeasuredConfig, targets) -> bool | None:
    """Whether the measurements say ``config`` meets every target (None: a targeted metric was not measured).

    >>> c = MeasuredConfig("a", (), 1, 1.0, (("tpot_p99_s", 0.04),), "s")
    >>> meets(c, (("tpot_p99_s", 0.05),)), meets(c, (("ttft_p99_s", 1.0),))
    (True, None)
    >>> meets(MeasuredConfig("b", (), 2, 1.0, (), "s", failed=True), (("ttft_p99_s", 1.0),))
    False
    """
    if config.failed:
        return False
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

    A group whose workload names its client's arrivals (``arrival``: a benchmark's batch, all-at-once run or
    closed loop, :func:`workload_of`) is answered by :func:`predict_configuration` and :func:`predicted_pick`
    instead: one server per configuration driven as the benchmark drove it, ranked by the cost it predicts.

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

    if "arrival" in dict(group.workload):
        return _client_pick(group)
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


def _client_pick(group: DecisionGroup) -> str | None:
    """:func:`plan_pick` for a group driven by a benchmark's own client (see there)."""
    from calc.plan.inputs import PlanRequest
    from calc.plan.prices import gpu_hour_price

    w = dict(group.workload)
    configs, runs = [], {}
    for c in group.configurations:
        config = dict(c.config)
        as_run = {k: config.pop(k) for k in _AS_RUN_KEYS if k in config}
        price = gpu_hour_price(PlanRequest(), config["gpu"])
        if price is None:
            continue  # the planner cannot price it: never its pick
        configs.append({"key": c.key, "gpus": c.gpus, "usd_per_gpu_hour": price["usd_per_gpu_hour"]})
        runs[c.key] = predict_configuration(group.model, w, config, c.gpus, as_run)
    return predicted_pick(configs, runs, dict(group.targets))


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


# ---- Measured groups: published sweeps read into decision questions -------------------------------------------

#: ``vllm bench serve`` / ``benchmark_serving.py --save-result`` keys (milliseconds; ``duration`` in seconds) of the
#: metrics read from a result file (vllm-project/vllm benchmarks/benchmark_serving.py, ``result`` dict).
SERVING_KEYS = {"ttft_p50_s": "median_ttft_ms", "ttft_p99_s": "p99_ttft_ms", "tpot_p50_s": "median_tpot_ms",
                "tpot_p99_s": "p99_tpot_ms", "duration_s": "duration"}


def _rows() -> dict:
    """Published rows by id: ``measurements.json`` first, then rows still staged in ``measurements_incoming.json``."""
    from calc.accuracy import load_measurements

    rows = {}
    here = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data")
    for name in ("measurements_incoming.json", "measurements.json"):  # the folded file wins on a shared id
        path = os.path.join(here, name)
        if os.path.exists(path):
            rows.update({r["id"]: r for r in load_measurements(path, kinds=None)})
    return rows


def _row_metric(row: dict) -> tuple:
    """(metric, seconds) of an online_latency row: a median or p99 TTFT, TPOT or end to end, or requests/s of an
    all-at-once run read as the run's wall time.

    >>> _row_metric({"figure": {"value": 997.5, "unit": "ms", "quantity": "e2e", "statistic": "median"},
    ...              "inputs": {"client": {"kind": "batch", "batch": 8}}})
    ('e2e_p50_s', 0.9975)
    >>> _row_metric({"figure": {"value": 20.0, "unit": "requests/s", "quantity": "throughput"},
    ...              "inputs": {"client": {"kind": "all_at_once", "requests": 200}}})
    ('duration_s', 10.0)
    """
    f, client = row["figure"], row["inputs"]["client"]
    stat = {"median": "p50", "p99": "p99"}.get(f.get("statistic"))
    name = f"{f['quantity']}_{stat}_s"
    if f["quantity"] in ("ttft", "tpot", "e2e") and name in METRICS and f["unit"] == "ms":
        return name, f["value"] / 1000.0
    if f["quantity"] == "throughput" and f["unit"] == "requests/s" and client["kind"] == "all_at_once":
        return "duration_s", client["requests"] / f["value"]
    raise CalcError(f"row {row.get('id', '?')}: a decision group reads a median or p99 of {', '.join(METRICS)} (ms) "
                    f"or requests/s of an all-at-once run; got the {f.get('statistic')} {f['quantity']} in {f['unit']}",
                    "row")


def _as_run(row: dict) -> dict:
    """The row's engine profile, the scheduler settings it states and its front end (:data:`_AS_RUN_KEYS`)."""
    from calc.latency_accuracy import frontend_of

    x = row["inputs"]
    out = {"engine": x.get("engine_profile", "vllm"), "frontend": frontend_of(row)}
    out.update({k: v for k, v in x.get("engine_settings", {}).items() if k in _AS_RUN_KEYS})
    return out


def workload_of(client: dict, cls: dict) -> dict:
    """The simulator's workload for a group's client: ``batch`` / ``all_at_once`` send every request at time 0,
    ``closed_loop`` keeps ``concurrency`` in flight (:class:`calc.sim.arrivals.ClosedLoopClients`), ``poisson``
    at its rate. ``cls`` is one request class (lengths kind and means).

    >>> workload_of({"kind": "all_at_once", "requests": 160}, {"lengths": "sharegpt", "prompt_tokens": 213,
    ...             "output_tokens": 200})["arrival"]
    'all-at-once'
    >>> workload_of({"kind": "closed_loop", "concurrency": 5, "requests": 50}, {"lengths": "fixed",
    ...             "prompt_tokens": 5000, "output_tokens": 500})["concurrency"]
    5
    """
    kind = check_choice("client.kind", client.get("kind"), ("batch", "all_at_once", "closed_loop", "poisson"))
    if kind == "batch":
        w = {"arrival": "all-at-once", "requests": client["batch"]}
    elif kind == "all_at_once":
        w = {"arrival": "all-at-once", "requests": client["requests"]}
    elif kind == "closed_loop":
        w = {"arrival": "closed-loop", "concurrency": client["concurrency"], "requests": client["requests"]}
    else:
        w = {"arrival": "poisson", "rate_per_s": client["rate_per_s"], "requests": client["requests"]}
    w.update({k: cls[k] for k in ("lengths", "prompt_tokens", "output_tokens")})
    return w


def role_of(row_roles) -> str:
    """A group's role by its sources: ``calibration`` when any row it reads was fitted on (an engine profile's
    constant, :mod:`calc.latency_fit`), else ``validation``. Nothing in the planner is tuned on a group.

    >>> role_of(["validation", "calibration"]), role_of([]), role_of(["validation"])
    ('calibration', 'validation', 'validation')
    """
    return "calibration" if "calibration" in row_roles else "validation"


def run_cost(gpus: int, usd_per_gpu_hour: float, tokens: float, duration_s: float) -> float:
    """USD per million tokens of a run: its GPUs' hourly price over the tokens it served per second
    (:func:`calc.cost.usd_per_million_tokens`).

    >>> round(run_cost(2, 3.78, 66000, 6.0), 4)
    0.1909
    """
    from calc.cost import usd_per_million_tokens

    return usd_per_million_tokens(gpus * usd_per_gpu_hour, check_range("tokens", tokens, 1, 1e12) /
                                  check_range("duration_s", duration_s, 1e-6, 1e7))


def measured_groups(path: str | None = None) -> tuple:
    """The measured groups of :data:`GROUPS_PATH`, each configuration's figures and source read (a ``row`` of the
    measurements, or the figures ``published`` with their URL), priced on the GPU catalog's dated listing
    (:func:`calc.plan.prices.gpu_hour_price`); a configuration on an unpriced GPU is ``left_out``, with why.

    >>> gs = {x["id"]: x for x in measured_groups()}
    >>> g = gs["lambda-llama-3-70b-sharegpt160"]
    >>> g["role"], [c["key"] for c in g["configurations"] if c["failed"]], g["workload"]["requests"]
    ('validation', ['a100-tp2', 'h100-tp2'], 160)
    >>> gs["vllm-nightly-latency-llama8b"]["role"], gs["vllm-nightly-latency-llama8b"]["left_out"][0]["key"]
    ('calibration', 'h200-tp1')
    """
    from calc.plan.inputs import PlanRequest
    from calc.plan.prices import gpu_hour_price

    with open(path or GROUPS_PATH, encoding="utf-8") as handle:
        raw = json.load(handle)
    rows = _rows()
    out = []
    for g in raw["groups"]:
        configs, left_out, roles, workload = [], [], [], None
        for c in g["configurations"]:
            price = gpu_hour_price(PlanRequest(), c["config"]["gpu"])
            if "rows" in c:
                picked = [rows.get(r) for r in c["rows"]]
                if None in picked:
                    missing = c["rows"][picked.index(None)]
                    raise CalcError(f"decision group {g['id']}: no measured row {missing!r}", "rows")
                measured = dict(_row_metric(r) for r in picked)
                row = picked[0]
                lengths, client = row["inputs"]["lengths"], row["inputs"]["client"]
                if lengths["kind"] == "fixed":
                    cls = {"lengths": "fixed", "prompt_tokens": lengths["input_tokens"],
                           "output_tokens": lengths["output_tokens"]}
                else:
                    cls = {"lengths": "sharegpt", "prompt_tokens": round(lengths["mean_input_tokens"]),
                           "output_tokens": round(lengths["mean_output_tokens"])}
                if client["kind"] == "poisson":
                    client = dict(client, requests=row["inputs"].get("num_prompts") or 1000)
                n = client.get("batch") or client["requests"]
                tokens = n * (cls["prompt_tokens"] + cls["output_tokens"])
                if client["kind"] == "poisson":
                    duration = n / client["rate_per_s"]  # every configuration serves the same rate
                else:  # a fixed-length batch ends when its every request does
                    duration = measured.get("duration_s", measured.get("e2e_p50_s"))
                source = {"url": row["source"]["url"], "where": "; ".join(r["source"]["where"] for r in picked),
                          "rows": list(c["rows"])}
                roles += [r["role"] for r in picked]
                as_run, failed = _as_run(row), False
                here = workload_of(client, cls)
            else:
                p = c["published"]
                n = g["client"]["requests"]
                failed = p.get("completed", n) < n
                measured = {} if failed else {m: p[k] / (1.0 if k == "duration" else 1000.0)
                                              for m, k in SERVING_KEYS.items() if k in p}
                tokens, duration = p["total_input_tokens"] + p["total_output_tokens"], p["duration"]
                cls = {"lengths": g["lengths"], "prompt_tokens": round(p["total_input_tokens"] / n),
                       "output_tokens": round(p["total_output_tokens"] / n)}
                source = dict(c["source"])
                as_run = {"engine": g.get("engine", "vllm")}
                here = workload_of(g["client"], cls)
            if workload is None and not failed:
                workload = here  # the first served run's lengths: the same sample on every server
            if price is None:
                left_out.append({"key": c["key"], "why": f"{c['config']['gpu']} has no dated price in the GPU catalog"})
                continue
            configs.append({"key": c["key"], "config": c["config"], "gpus": c["gpus"], "measured": measured,
                            "failed": failed, "as_run": as_run,
                            "tokens": tokens, "duration_s": duration, "usd_per_gpu_hour": price["usd_per_gpu_hour"],
                            "usd_per_million_tokens": run_cost(c["gpus"], price["usd_per_gpu_hour"], tokens, duration),
                            "source": source})
        out.append({"id": g["id"], "cite": g["cite"], "role": role_of(roles), "model": g["model"], "workload": workload,
                    "source": g["source"], "configurations": configs, "left_out": left_out})
    return tuple(out)


def midpoints(values) -> list:
    """The thresholds that separate measured values: the midpoint between each pair of neighbours, sorted.

    The rule that sets every group's targets (no target is chosen to flatter the planner): each midpoint is one
    question, so every threshold at which the measurements' answer changes is asked once.

    >>> midpoints([3.0, 1.0, 2.0, 2.0])
    [1.5, 2.5]
    """
    v = sorted(set(values))
    return [(a + b) / 2 for a, b in zip(v, v[1:])]


def questions(group: dict) -> list:
    """A group's questions: for each metric every served, priced configuration measured, one target per midpoint
    (a run that failed has no figures: it meets none of them).

    >>> g = {"configurations": [{"measured": {"ttft_p99_s": 1.0, "e2e_p50_s": 2}}, {"measured": {"ttft_p99_s": 3.0}},
    ...                         {"measured": {}, "failed": True}]}
    >>> questions(g)
    [{'ttft_p99_s': 2.0}]
    """
    configs = [c for c in group["configurations"] if not c.get("failed")]
    shared = [m for m in METRICS if configs and all(m in c["measured"] for c in configs)]
    return [{m: t} for m in shared for t in midpoints(c["measured"][m] for c in configs)]


def question_groups(group: dict) -> list:
    """A measured group's questions as :class:`DecisionGroup` objects (one per target), for :func:`score`."""
    out = []
    for targets in questions(group):
        (metric, t), = targets.items()
        out.append(DecisionGroup.from_dict({
            "id": f"{group['id']}:{metric}<={t:.6g}", "role": group["role"], "model": group["model"],
            "workload": {k: v for k, v in group["workload"].items()}, "targets": targets, "source": group["source"],
            "configurations": [{"key": c["key"], "config": {**c["config"], **c["as_run"]}, "gpus": c["gpus"],
                                "usd_per_million_tokens": c["usd_per_million_tokens"], "measured": c["measured"],
                                "failed": c["failed"], "source": c["source"]["url"]}
                               for c in group["configurations"]]}))
    return out


def predict_configuration(model: str, workload: dict, config: dict, gpus: int, as_run: dict | None = None) -> dict:
    """The simulator's run of one configuration on a group's workload (see :func:`_predict`), cached: the questions
    of a group share their configurations' runs.

    >>> run = predict_configuration("llama-3.1-8b", {"arrival": "all-at-once", "requests": 8,
    ...     "lengths": "fixed", "prompt_tokens": 32, "output_tokens": 128}, {"gpu": "h100-sxm-80gb", "tp": 1}, 1)
    >>> 0.5 < run["e2e_p50_s"] < 2.0, run["requests_completed"], run["cost_tokens_per_s"] > 1000
    (True, 8, True)
    """
    key = json.dumps([model, workload, config, gpus, as_run or {}], sort_keys=True)
    return dict(_predict_cached(key))


@functools.lru_cache(maxsize=512)
def _predict_cached(key: str) -> dict:
    model, workload, config, gpus, as_run = json.loads(key)
    return _predict(model, workload, config, gpus, as_run)


def _predict(model: str, workload: dict, config: dict, gpus: int, as_run: dict | None = None) -> dict:
    """The simulator's run of one configuration on the group's workload, as the planner builds its replicas
    (:func:`calc.plan.screen.scenario_of`: the planner's memory sizing and engine rules; what the configuration
    leaves unsaid takes :data:`CONFIG_DEFAULTS`), with the run's engine profile, stated scheduler settings and
    front end (``as_run``, :data:`_AS_RUN_KEYS`). ``{"refused": reason}`` when the planner refuses it.

    ``cost_tokens_per_s`` is the rate the planner prices it at: the simulated throughput, or at a fixed Poisson
    rate, the rate's tokens (every configuration then serves the same traffic).

    >>> _predict("llama-3.1-70b", {"arrival": "all-at-once", "requests": 8, "lengths": "fixed", "prompt_tokens": 32,
    ...          "output_tokens": 128}, {"gpu": "h100-sxm-80gb", "tp": 1}, 1)["refused"][:28]
    'Llama 3.1 70B does not fit: '
    """
    from calc.plan.inputs import request_from_dict
    from calc.plan.screen import scenario_of
    from calc.plan.space import DIMENSIONS
    from calc.sim import simulate

    c = {**CONFIG_DEFAULTS, **config}
    if gpus != c["tp"] * c["pp"]:
        raise CalcError(f"a measured run is one server: gpus {gpus} must be tp x pp = {c['tp'] * c['pp']}", "gpus")
    # The request's own target is unused here (a question's targets are judged on the run's summary below).
    as_run = dict(as_run or {})
    request = request_from_dict({"model": model, "engine": as_run.pop("engine", "vllm"), "peak_rate_per_s": 1,
                                 "targets": {"ttft_p99_s": 3600},
                                 "classes": [{k: workload[k] for k in ("lengths", "prompt_tokens")} |
                                             {"output_tokens": workload["output_tokens"]}]})
    candidate = tuple((d.name, c[d.name]) for d in DIMENSIONS if d.name in c)
    try:  # the planner's refusals (engine rules, no room for the KV cache) are its answer: never a pick
        scenario = scenario_of(request, candidate).to_dict()
        scenario["workload"] = dict(workload)
        scenario.update(as_run)
        s = simulate(scenario).summary
    except CalcError as error:
        return {"refused": str(error)}
    out = {k: s.get(k) for k in ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s", "e2e_p50_s", "duration_s",
                                 "throughput_total_tokens_per_s", "requests_completed", "requests_rejected",
                                 "requests_unfinished")}
    out["cost_tokens_per_s"] = (workload["rate_per_s"] * (workload["prompt_tokens"] + workload["output_tokens"])
                                if workload["arrival"] == "poisson" else out["throughput_total_tokens_per_s"])
    return out


def predicted_pick(configs, predictions: dict, targets: dict) -> str | None:
    """The planner's pick for one question: the configuration the simulator says meets every target (every request
    served) at the lowest USD per million tokens *it predicts*: its own run's tokens/s (``cost_tokens_per_s``, the
    simulated throughput; at a fixed Poisson rate, the rate's), never the measured one's.

    >>> g = [{"key": "a", "gpus": 1, "usd_per_gpu_hour": 2.0}, {"key": "b", "gpus": 1, "usd_per_gpu_hour": 4.0}]
    >>> p = {"a": {"ttft_p99_s": 2.0, "cost_tokens_per_s": 1000}, "b": {"ttft_p99_s": 0.5, "cost_tokens_per_s": 1000}}
    >>> predicted_pick(g, p, {"ttft_p99_s": 1.0}), predicted_pick(g, p, {"ttft_p99_s": 3.0})
    ('b', 'a')
    """
    from calc.cost import usd_per_million_tokens

    best = None
    for c in configs:
        run = predictions[c["key"]]
        if "refused" in run or run.get("requests_rejected") or run.get("requests_unfinished"):
            continue
        if not all(run.get(m) is not None and run[m] <= t for m, t in targets.items()):
            continue
        cost = usd_per_million_tokens(c["gpus"] * c["usd_per_gpu_hour"], run["cost_tokens_per_s"])
        if best is None or (cost, c["key"]) < best[0]:
            best = ((cost, c["key"]), c["key"])
    return best[1] if best else None


def _r(x, digits=4):
    return None if x is None else round(x, digits)


def evaluate(path: str | None = None) -> dict:
    """Every measured group's questions answered by the planner and graded by the measurements, per group and role.

    Rounded, deterministic JSON (the stored :data:`SCORES_PATH` must equal a fresh run).

    >>> out = evaluate()
    >>> sorted(out["by_role"]), out["groups"][0]["questions"] > 0
    (['calibration', 'validation'], True)
    """
    from calc.units import round_sig

    groups, scores = [], []
    for g in measured_groups(path):
        predictions = {c["key"]: predict_configuration(g["model"], g["workload"], c["config"], c["gpus"], c["as_run"])
                       for c in g["configurations"]}
        mine = []
        for q in question_groups(g):
            pick = plan_pick(q)
            s = score(q, pick)
            s["targets"] = {k: round_sig(v, 6) for k, v in q.targets}
            s["metric"] = next(iter(s["targets"]))
            s["regret"] = _r(s["regret"])
            mine.append(s)
        scores += mine
        hits = [s for s in mine if s["scored"]]
        regrets = [s["regret"] for s in hits if s["hit"] and s["regret"] is not None]
        groups.append({
            "id": g["id"], "cite": g["cite"], "role": g["role"], "model": g["model"], "source": g["source"],
            "configurations": [{"key": c["key"], "gpus": c["gpus"], "usd_per_million_tokens": _r(c["usd_per_million_tokens"]),
                                "measured": ({"failed": "the run did not serve every request"} if c["failed"] else
                                             {k: round_sig(v, 6) for k, v in c["measured"].items()}),
                                "predicted": ({"refused": predictions[c["key"]]["refused"]}
                                              if "refused" in predictions[c["key"]] else
                                              {k: round_sig(predictions[c["key"]][k], 6)
                                               for k in (c["measured"] or dict.fromkeys(METRICS))
                                               if predictions[c["key"]].get(k) is not None}),
                                "source": c["source"]["url"]} for c in g["configurations"]],
            "left_out": g["left_out"], "questions": len(mine),
            "hit_rate": _r(sum(bool(s["hit"]) for s in hits) / len(hits)) if hits else None,
            "median_regret": _r(median(regrets)) if regrets else None,
            "max_regret": max(regrets) if regrets else None,
            "optimistic": sum(1 for s in hits if not s["hit"] and s["pick"] is not None),
            "pessimistic": sum(1 for s in hits if not s["hit"] and s["pick"] is None),
            "misses": [{"targets": s["targets"], "pick": s["pick"], "cheapest_meeting": s["cheapest_meeting"]}
                       for s in mine if s["scored"] and not s["hit"]]})
    by_role = {role: {k: (_r(v) if isinstance(v, float) else v) for k, v in d.items()}
               for role, d in summary(scores).items()}
    for role in ROLES:
        by_role[role]["groups"] = sum(g["role"] == role for g in groups)
        by_role[role]["by_metric"] = {m: {k: (_r(v) if isinstance(v, float) else v)
                                          for k, v in summary([s for s in scores if s["metric"] == m])[role].items()}
                                      for m in METRICS if any(s["metric"] == m and s["role"] == role for s in scores)}
    return {"about": "python -m calc.plan.decisions --write: the planner's picks on measured decision groups "
                     "(calc/plan/decision_groups.json), graded by the measurements; regret is the pick's measured "
                     "USD per million tokens over the cheapest measured configuration meeting the targets, minus 1",
            "groups": groups, "by_role": by_role}


def report(result: dict) -> str:
    """The CLI's table: per group and per role, questions, hit rate and median regret.

    >>> print(report({"groups": [{"id": "g", "role": "validation", "configurations": [1, 2], "questions": 3,
    ...     "hit_rate": 2 / 3, "median_regret": 0.0}], "by_role": {"validation": {"scored": 3, "hit_rate": 2 / 3,
    ...     "median_regret": 0.0}}}).splitlines()[1])
    g  validation  2 configurations  3 questions  hit 67%  median regret 0.0%
    """
    pct = lambda x: "n/a" if x is None else f"{100 * x:.0f}%"
    lines = ["per group:"]
    for g in result["groups"]:
        regret = "n/a" if g["median_regret"] is None else f"{100 * g['median_regret']:.1f}%"
        lines.append(f"{g['id']}  {g['role']}  {len(g['configurations'])} configurations  {g['questions']} questions  "
                     f"hit {pct(g['hit_rate'])}  median regret {regret}")
        if g.get("max_regret"):
            lines[-1] += f"  (worst {100 * g['max_regret']:.1f}%)"
    lines.append("per role:")
    for role, s in result["by_role"].items():
        regret = "n/a" if s["median_regret"] is None else f"{100 * s['median_regret']:.1f}%"
        lines.append(f"{role}  {s['scored']} questions  hit {pct(s['hit_rate'])}  median regret {regret}")
    return "\n".join(lines)


def _main(argv=None) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m calc.plan.decisions", description=report.__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help=f"store the result in {SCORES_PATH}")
    args = parser.parse_args(argv)
    result = evaluate()
    print(report(result))
    if args.write:
        with open(SCORES_PATH, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1, sort_keys=True)
            handle.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(_main())
