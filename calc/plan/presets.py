"""Four plan requests to start from: the lesson's running example at its peak, a chat service, long documents, a batch job.

Each is built from the lesson's own definitions, not restated:

* ``lesson``: the running example (:mod:`calc.lesson`: Llama 3.1 70B, 1,024-token prompts, 256-token
  answers) at the peak of the traffic the lesson's autoscaling steps ramp it through (preset
  ``step15-scale-on-queue``: its phases' highest rate, their time-weighted mean), with step 17's TPOT target
  (:data:`calc.cost.ITL_TARGET_S`, an assumption of 20 tokens/s for a reader of a streamed answer) and
  step 19's TTFT alert (:data:`calc.incident.TTFT_ALERT_S`) as the p99 TTFT target. Its hand-made
  deployment, the lesson's replica (:data:`calc.lesson.REPLICA`: bf16, TP 4 on H100s, vLLM's defaults),
  is the baseline the plan is compared with.
* ``chat``, ``long-document``, ``batch``: the three request classes of step 20's pools (preset
  ``step20-pools``), each alone at its share of that preset's 15 requests/s (the documents at their surge
  share), with targets suited to each kind of service (stated below, assumptions for the reader to edit).

>>> r = request("lesson")
>>> r.model, r.peak_rate_per_s, r.targets.tpot_p99_s, r.targets.ttft_p99_s, r.classes[0].prompt_tokens
('llama-3.1-70b', 20, 0.05, 5.0, 1024)
>>> round(r.mean_rate_per_s, 3)
8.882
"""

from __future__ import annotations

import math

from calc import lesson
from calc.cost import ITL_TARGET_S
from calc.errors import CalcError
from calc.incident import TTFT_ALERT_S
from calc.plan.inputs import request_from_dict
from calc.sim import presets as sim_presets

__all__ = ["NAMES", "LESSON_TRAFFIC_PRESET", "POOLS_PRESET", "TARGETS", "request_data", "request", "baseline",
           "traffic_rates"]

NAMES = ("lesson", "chat", "long-document", "batch")
#: The lesson preset whose traffic ramps the running example to its peak (steps 14-15).
LESSON_TRAFFIC_PRESET = "step15-scale-on-queue"
#: The lesson preset whose three request classes the chat, long-document and batch presets take (step 20).
POOLS_PRESET = "step20-pools"
#: The presets' targets (seconds). The lesson's come from its pages; the others are assumptions stated here:
#: chat answers within a second at p99 and streams at step 17's pace; a long document may take ten seconds to
#: start (its prefill alone takes seconds) and streams at the same pace; a batch job wants throughput, so its
#: answers may start within a minute and run at five tokens a second.
TARGETS = {
    "lesson": {"ttft_p99_s": TTFT_ALERT_S, "tpot_p99_s": ITL_TARGET_S},
    "chat": {"ttft_p99_s": 1.0, "tpot_p99_s": ITL_TARGET_S},
    "long-document": {"ttft_p99_s": 10.0, "tpot_p99_s": ITL_TARGET_S},
    "batch": {"ttft_p99_s": 60.0, "tpot_p99_s": 0.2},
}
_POOL_CLASS = {"chat": "chat", "long-document": "document", "batch": "batch"}


def traffic_rates(preset: str = LESSON_TRAFFIC_PRESET) -> tuple[float, float]:
    """(mean, peak) arrival rate of a lesson preset's traffic phases: time-weighted mean, highest rate.

    >>> traffic_rates()
    (8.882352941176471, 20)
    """
    phases = sim_presets.load_data(preset)["fleet"]["traffic"]
    peak = max(max(p["rate_per_s"], p.get("end_rate_per_s", p["rate_per_s"])) for p in phases)
    area = math.fsum((p["rate_per_s"] + p.get("end_rate_per_s", p["rate_per_s"])) / 2 * p["duration_s"]
                     for p in phases)
    return area / math.fsum(p["duration_s"] for p in phases), peak


def baseline(name: str) -> dict | None:
    """The hand-made deployment a preset's plan is compared with (dimension name -> value), or None.

    >>> baseline("lesson")["tp"], baseline("lesson")["weights"], baseline("chat") is None
    (4, 'bf16', True)
    """
    if name != "lesson":
        return None
    from calc.sim.scenario import Scenario

    engine = Scenario()  # the simulator's defaults are vLLM's: 256 running, 8,192-token steps, no speculation
    return {"gpu": lesson.GPU, "tp": lesson.TP, "pp": 1, "weights": lesson.WEIGHTS, "kv_dtype": lesson.KV_DTYPE,
            "max_num_seqs": engine.max_num_seqs, "max_num_batched_tokens": engine.max_num_batched_tokens,
            "speculation": "off", "prefix_caching": engine.prefix_caching, "layout": "aggregated"}


def request_data(name: str) -> dict:
    """A preset as plan-request data (:func:`calc.plan.inputs.request_from_dict` reads it; flags go on top).

    >>> request_data("chat")["classes"][0]["lengths"], request_data("batch")["peak_rate_per_s"]
    ('lognormal', 0.3)
    >>> request_data("nope")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: preset must be one of lesson, chat, long-document, batch; got 'nope'
    """
    if name not in NAMES:
        raise CalcError(f"preset must be one of {', '.join(NAMES)}; got {name!r}", "preset")
    if name == "lesson":
        mean, peak = traffic_rates()
        cls = {"name": "chat", "lengths": "fixed", "prompt_tokens": lesson.PROMPT_TOKENS,
               "output_tokens": lesson.ANSWER_TOKENS}
        return {"name": name, "model": lesson.MODEL, "peak_rate_per_s": peak, "mean_rate_per_s": mean,
                "classes": [cls], "targets": dict(TARGETS[name]), "parameter_count": "lesson"}
    data = sim_presets.load_data(POOLS_PRESET)
    wl = data["workload"]
    cls = next(dict(c) for c in wl["classes"] if c["name"] == _POOL_CLASS[name])
    share = cls.pop("share")
    if name == "long-document":  # no documents at the calm phase: their share during the surge (step 19)
        share = data["fleet"]["traffic"][1]["shares"]["document"]
    rate = wl["rate_per_s"] * share
    return {"name": name, "model": data.get("model", lesson.MODEL), "peak_rate_per_s": round(rate, 9),
            "mean_rate_per_s": round(rate, 9), "classes": [cls], "targets": dict(TARGETS[name]),
            "max_model_len": data.get("max_model_len")}


def request(name: str, **changes):
    """A preset as a checked :class:`calc.plan.inputs.PlanRequest`, with fields changed.

    >>> request("long-document").classes[0].prompt_tokens, request("long-document", peak_rate_per_s=2).peak_rate_per_s
    (19300, 2)
    """
    data = request_data(name)
    data.update(changes)
    if "peak_rate_per_s" in changes and "mean_rate_per_s" not in changes:
        data["mean_rate_per_s"] = min(data["mean_rate_per_s"], changes["peak_rate_per_s"])
    return request_from_dict(data)

