"""The plan's answer: the cheapest deployment meeting every target, and why, as deterministic JSON-ready data.

What the answer holds (:func:`answer`): the winner with its predicted p50/p99 TTFT and TPOT (the simulator's,
with the error band of :mod:`calc.plan.bands`), USD per million input and output tokens and per hour, its GPUs
(replicas x GPUs per replica, x pools), the constraint that binds it and the evidence (what the simulator
says with one replica fewer), the cheaper candidates that failed and by how much, its sensitivity (rate +20%,
targets -20%), three runners-up, the USD-per-million against p99 Pareto front, the commands that check it
on real GPUs, and the comparison with a hand-made baseline. Floats are rounded to :data:`DIGITS`
significant digits and keys sorted when printed, so the same request gives the same bytes anywhere.

>>> tidy({"b": 1 / 3, "a": [float("inf"), 2.0]})
{'b': 0.33333, 'a': [None, 2.0]}
"""

from __future__ import annotations

import math

from calc.catalog import get_model
from calc.plan.bands import bands_for
from calc.plan.commands import commands
from calc.plan.confirm import fleet_window_s
from calc.plan.screen import BINDINGS, ScreenResult, usd_per_million
from calc.plan.space import DIMENSIONS, as_dict, complexity, key, label, one_server_holds, unpriced_gpus
from calc.units import round_sig

__all__ = ["DIGITS", "LESSON_STEPS", "tidy", "cheapest_confirmed", "entry", "pareto_front", "answer"]

#: Significant digits of every float in the answer (the same JSON in CPython 3.11 and Pyodide's 3.14).
DIGITS = 5
#: The lesson step that teaches each binding constraint (the page links there).
LESSON_STEPS = {
    "memory": "lesson/01-a-70b-assistant.md", "prefill compute": "lesson/06-twice-the-traffic.md",
    "decode bandwidth": "lesson/07-fp8-weights.md", "queueing": "lesson/19-incident-p99-ttft.md",
    "interconnect": "lesson/18-disaggregation.md", "budget": "lesson/16-cost-per-million-tokens.md",
    "engine": "lesson/05-paged-attention.md", "topology": "lesson/18-disaggregation.md",
}
_BINDING_WORDS = {
    "memory": "memory: the KV cache runs out of room for more requests, or the weights set the smallest replica",
    "prefill compute": "prefill compute: the prompts' matrix multiplications fill the steps",
    "decode bandwidth": "decode bandwidth: every step reads the weights and the batch's KV cache from HBM",
    "queueing": "queueing: requests wait for a running slot or for the prefill ahead of them",
    "interconnect": "the interconnect: tensor-parallel all-reduces (or the KV transfer) take a large share",
    "budget": "the GPU budget or a missing price",
    "engine": "an engine rule: vLLM refuses these settings",
    "topology": "a layout calc's simulator cannot run (pipeline stages across servers)",
}


def tidy(value):
    """JSON-ready with floats to :data:`DIGITS` significant digits and non-finite floats as None (recursively).

    >>> tidy((1.23456789, {"x": float("nan")}))
    [1.2346, {'x': None}]
    """
    if isinstance(value, bool) or value is None or isinstance(value, (int, str)):
        return value
    if isinstance(value, float):
        return round_sig(value, DIGITS) if math.isfinite(value) else None
    if isinstance(value, dict):
        return {str(k): tidy(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [tidy(v) for v in value]
    return str(value)


def _worst_ratio(summary: dict, targets) -> float:
    return max((summary.get(k) or math.inf) / v for k, v in targets.items())


def _unit_gpus(screen_row: ScreenResult) -> int:
    return screen_row.gpus // max(1, screen_row.replicas)


def cheapest_confirmed(request, confirmed) -> tuple | None:
    """The (screen row, confirmation) the simulator confirms cheapest (ties: more headroom, then the key).

    >>> cheapest_confirmed(None, []) is None
    True
    """
    ok = []
    for row, outcome in confirmed or ():
        n = outcome["replicas"]
        if n is None:
            continue
        gpus = n * _unit_gpus(row)
        if request.gpu_budget is not None and gpus > request.gpu_budget:
            continue
        ok.append((gpus * row.usd_per_gpu_hour, _complexity(row.candidate),
                   _worst_ratio(outcome["run"]["summary"], dict(request.targets.items())), key(row.candidate), row,
                   outcome))
    if not ok:
        return None
    ok.sort(key=lambda t: t[:4])
    return ok[0][4], ok[0][5]


_complexity = complexity


def _pools(row: ScreenResult, replicas: int) -> dict | None:
    layout = as_dict(row.candidate).get("layout", "aggregated")
    if layout == "aggregated":
        return None
    p, d = (int(x) for x in layout.split()[1].split(":"))
    tp = as_dict(row.candidate)["tp"]
    return {"prefill_replicas": p * replicas, "decode_replicas": d * replicas, "gpus_per_replica": tp,
            "ratio": f"{p}:{d}"}


def _confirmed_binding(row: ScreenResult, outcome: dict) -> str:
    """The binding constraint as the simulator shows it: what one replica fewer misses, priced by the screen.

    A miss of TPOT names what the steps spend their time on (HBM, compute, the interconnect: the screen's
    ``step_binding``), a miss of TTFT alone what the first token waits for (``ttft_binding``); with no smaller
    fleet to try, the screen's reading stands.
    """
    fewer = outcome.get("cheaper")
    if fewer is None:
        return row.binding
    misses = fewer["misses"]
    if any(k.startswith("tpot") for k in misses):
        return row.limits.get("step_binding", row.binding)
    if any(k.startswith("ttft") for k in misses):
        return row.limits.get("ttft_binding", row.binding)
    return "queueing"  # requests left unserved: the fleet cannot keep up


def entry(request, row: ScreenResult, outcome: dict | None = None, table: dict | None = None) -> dict:
    """One deployment as the answer shows it: the simulator's numbers where it ran (``outcome``), else the screen's.

    >>> from calc.plan.inputs import PlanRequest
    >>> from calc.plan.screen import screen
    >>> from calc.plan.presets import baseline
    >>> req = PlanRequest(peak_rate_per_s=20)
    >>> e = entry(req, screen(req, tuple(baseline("lesson").items())))
    >>> e["gpus"], e["usd_per_hour"], e["source"], e["binding"]["constraint"]
    (16, 60.48, 'screen', 'prefill compute')
    """
    confirmed = outcome is not None and outcome.get("replicas") is not None
    replicas = outcome["replicas"] if confirmed else row.replicas
    unit = _unit_gpus(row)
    usd_per_hour = replicas * unit * row.usd_per_gpu_hour
    priced = ScreenResult(candidate=row.candidate, ok=True, usd_per_hour=usd_per_hour, prefill_share=row.prefill_share)
    keys = ("ttft_p50_s", "ttft_p99_s", "tpot_p50_s", "tpot_p99_s")
    if confirmed:
        summary = outcome["run"]["summary"]
        predicted = {k: summary.get(k) for k in keys}
    else:
        summary = None
        predicted = {k: row.predicted.get(k) for k in keys}
    constraint = _confirmed_binding(row, outcome) if confirmed else row.binding
    binding = {"constraint": constraint, "words": _BINDING_WORDS.get(constraint, constraint),
               "lesson_step": LESSON_STEPS.get(constraint), "screen": row.binding}
    if confirmed and outcome.get("cheaper") is not None:
        fewer = outcome["cheaper"]
        binding["one_replica_fewer"] = {"replicas": fewer["replicas"], "misses": fewer["misses"],
                                        "summary": {k: fewer["summary"].get(k) for k in keys}}
    out = {
        "key": key(row.candidate), "label": label(row.candidate), "config": as_dict(row.candidate),
        "replicas": replicas, "gpus_per_replica": unit, "gpus": replicas * unit, "pools": _pools(row, replicas),
        "usd_per_hour": usd_per_hour, "usd_per_gpu_hour": row.usd_per_gpu_hour, "price": row.price,
        "usd_per_million": usd_per_million(priced, request), "predicted": predicted,
        "source": "simulator" if confirmed else "screen", "confirmed": confirmed,
        "simulated_replicas": outcome["run"]["simulated_replicas"] if confirmed else None, "binding": binding,
        "screen": {"replicas": row.replicas, "predicted": {k: row.predicted.get(k) for k in keys},
                   "kv_cache_tokens": row.kv_cache_tokens, "running_max": row.running_max, "limits": row.limits},
        "commands": commands(request, row.candidate, replicas),
    }
    if table is not None:
        out["bands"] = bands_for(request.engine, predicted, table)
    if summary is not None:
        out["simulation"] = summary
    return out


def pareto_front(points: list[dict], metric: str) -> list[str]:
    """Keys of the points no other point beats on both USD per million tokens and ``metric`` (lower is better).

    >>> pts = [{"key": "a", "x": 1.0, "m": 3.0}, {"key": "b", "x": 2.0, "m": 1.0}, {"key": "c", "x": 3.0, "m": 2.0}]
    >>> pareto_front([{"key": p["key"], "usd_per_million": p["x"], "m": p["m"]} for p in pts], "m")
    ['a', 'b']
    """
    front, best = [], math.inf
    for p in sorted(points, key=lambda p: (p["usd_per_million"], p[metric] if p[metric] is not None else math.inf,
                                           p["key"])):
        y = p[metric]
        if y is not None and y < best:
            front.append(p["key"])
            best = y
    return front


def _pct(x: float) -> str:
    return f"{x * 100:+.0f}%"


def _s(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g} s" if x >= 1 else f"{x * 1000:.3g} ms"


def _usd(x) -> str:
    return "-" if x is None else (f"${x:,.2f}" if x >= 0.1 else f"${x:.3g}")


def _words(request, best: dict | None, cheaper: list, sensitivity: dict | None, baseline: dict | None,
           verdict: str, refusals: dict | None = None) -> list[str]:
    model = get_model(request.model).name
    if best is None:
        why = [f"{name} ({r['count']:,}), e.g. {r['example_label']}: {r['example']}"
               for name, r in sorted((refusals or {}).items(), key=lambda kv: (-kv[1]["count"], kv[0]))[:3]]
        return [f"No configuration in the search space serves {model} at {request.peak_rate_per_s:.3g} requests/s "
                f"within every target."] + (["Refused most for " + "; ".join(why) + "."] if why else []) + [verdict]
    um = best["usd_per_million"]
    noun = ("unit" if best["pools"] else "replica") + ("s" if best["replicas"] != 1 else "")
    lines = [f"Serve {model} at {request.peak_rate_per_s:.3g} requests/s on {best['replicas']} {noun} of {best['label']}: {best['gpus']} GPU{'s' if best['gpus'] != 1 else ''}, "
             f"{_usd(best['usd_per_hour'])} an hour, {_usd(um['input_at_peak'])} per million input and "
             f"{_usd(um['output_at_peak'])} per million output tokens at the peak "
             f"({_usd(um['all_at_mean'])} per million tokens at the mean rate of {request.mean_rate_per_s:.3g}/s)."]
    p = best["predicted"]
    targets = dict(request.targets.items())
    parts = []
    for k in ("ttft_p99_s", "tpot_p99_s", "ttft_p50_s", "tpot_p50_s"):
        if p.get(k) is None:
            continue
        band = (best.get("bands") or {}).get(k)
        text = f"{k.split('_')[0].upper()} {k.split('_')[1]} {_s(p[k])}"
        if band and band.get("low") is not None:
            text += f" (measured would be {_s(band['low'])}-{_s(band['high'])} by {band['n']} held-out runs)"
        if k in targets:
            text += f" against {_s(targets[k])}"
        parts.append(text)
    lines.append(f"The {best['source']} gives " + "; ".join(parts) + ".")
    simulated = best.get("simulated_replicas")
    if simulated and simulated < best["replicas"]:
        whole_s = fleet_window_s(request)
        lines.append(f"It ran {simulated} of the {best['replicas']} {noun} at their share of the traffic, so that "
                     f"the run covers {_s(whole_s * best['replicas'] / simulated)} of it (the whole fleet would "
                     f"have seen {_s(whole_s)}); fewer replicas behind the router pool less, so the count errs high.")
    b = best["binding"]
    why = f"What sets the count: {b['words']}."
    fewer = b.get("one_replica_fewer")
    if fewer:
        misses = ", ".join(f"{k.split('_')[0].upper()} {k.split('_')[1]} {_pct(v)}" for k, v in fewer["misses"].items()
                           if v is not None) or "requests left unserved"
        why += f" With {fewer['replicas']} the simulator misses: {misses}."
    lines.append(why)
    if cheaper:
        lines.append("Cheaper candidates that fail: " + "; ".join(
            f"{c['label']} x{c['replicas']} ({_usd(c['usd_per_hour'])}/h): " + (", ".join(
                f"{k.split('_')[0].upper()} {k.split('_')[1]} {_pct(v)}" for k, v in c["misses"].items()
                if v is not None) or "requests left unserved") for c in cheaper) + ".")
    if sensitivity:
        sens = []
        for name, text in (("rate_plus_20_percent", "20% more traffic"),
                           ("targets_minus_20_percent", "targets 20% tighter")):
            s = sensitivity.get(name)
            if not s:
                continue
            if s["same_fleet_meets"]:
                sens.append(f"{text}: the same fleet still meets every target")
            elif s["replicas"] is not None:
                sens.append(f"{text}: {s['replicas']} replicas ({_usd(s['usd_per_hour'])}/h)")
            else:
                sens.append(f"{text}: no fleet of this configuration within the search")
        lines.append("Sensitivity: " + "; ".join(sens) + ".")
    lines.append(verdict)
    return lines


def _refusals(screened) -> dict:
    out: dict = {}
    for r in screened:
        if r.ok:
            continue
        name = r.binding or "other"
        if name not in out:  # the first refusal of each kind is its example (labelled once, not per refusal)
            out[name] = {"count": 0, "example": r.reason, "example_label": label(r.candidate)}
        out[name]["count"] += 1
    return out


def answer(request, screened, picked, confirmed, base_screen, base_confirmed, table, sensitivity) -> dict:
    """The whole answer (see the module docstring), tidied: what ``python -m calc plan --json`` prints.

    ``confirmed`` None means the screen's answer (the first stage alone).

    >>> from calc.plan.inputs import PlanRequest
    >>> out = answer(PlanRequest(), [], [], None, None, None, None, None)
    >>> out["status"], out["best"], out["verdict"]
    ('screened', None, 'No configuration meets every target: relax a target, allow more GPUs or other formats.')
    """
    status = "screened" if confirmed is None else "confirmed"
    best_entry, runners, cheaper, points = None, [], [], []
    targets = dict(request.targets.items())
    if confirmed is None:
        rows = [(r, None) for r in picked]
        if rows:
            best_entry = entry(request, rows[0][0])
            runners = [entry(request, r) for r, _ in rows[1:4]]
    else:
        best = cheapest_confirmed(request, confirmed)
        ranked = []
        for row, outcome in confirmed:
            if outcome["replicas"] is None:
                continue
            e = entry(request, row, outcome, table)
            ranked.append(e)
        ranked.sort(key=lambda e: (e["usd_per_hour"], _complexity(tuple(e["config"].items())),
                                   _worst_ratio(e["predicted"], targets), e["key"]))
        if best is not None:
            best_entry = entry(request, best[0], best[1], table)
            runners = [e for e in ranked if e["key"] != best_entry["key"]][:3]
            limit = best_entry["usd_per_hour"]
            for row, outcome in confirmed:
                for n, run in sorted(outcome["runs"].items()):
                    cost = n * _unit_gpus(row) * row.usd_per_gpu_hour
                    if not run["meets"] and cost < limit:
                        cheaper.append({"key": key(row.candidate), "label": label(row.candidate), "replicas": n,
                                        "gpus": n * _unit_gpus(row), "usd_per_hour": cost, "misses": run["misses"]})
            cheaper.sort(key=lambda c: (-c["usd_per_hour"], c["key"], c["replicas"]))
            cheaper = cheaper[:3]
        else:
            status = "none"
        points = [{"key": e["key"], "label": e["label"], "usd_per_million": e["usd_per_million"]["all_at_peak"],
                   "ttft_p99_s": e["predicted"]["ttft_p99_s"], "tpot_p99_s": e["predicted"]["tpot_p99_s"],
                   "gpus": e["gpus"]} for e in ranked]
    base = None
    if base_screen is not None:
        base = entry(request, base_screen, base_confirmed, table) if base_screen.ok else {
            "label": label(base_screen.candidate), "config": as_dict(base_screen.candidate), "refused": base_screen.reason,
            "binding": {"constraint": base_screen.binding}}
        if base_screen.ok and base.get("confirmed") and base["key"] not in {p["key"] for p in points}:
            points.append({"key": base["key"], "label": base["label"],
                           "usd_per_million": base["usd_per_million"]["all_at_peak"],
                           "ttft_p99_s": base["predicted"]["ttft_p99_s"], "tpot_p99_s": base["predicted"]["tpot_p99_s"],
                           "gpus": base["gpus"]})
    refusals = _refusals(screened)
    holding = tuple(g for g in unpriced_gpus(request) if one_server_holds(request, g))  # what a price would let in
    verdict = _verdict(best_entry, base, status, refusals, holding)
    sens_out = None
    if sensitivity and best_entry is not None:
        sens_out = {}
        for name, outcome in sensitivity.items():
            n = outcome["replicas"]
            same = outcome["runs"].get(best_entry["replicas"])
            sens_out[name] = {"replicas": n, "same_fleet_meets": bool(same and same["meets"]),
                              "same_fleet_misses": same["misses"] if same else None,
                              "usd_per_hour": None if n is None else n * best_entry["gpus_per_replica"]
                              * best_entry["usd_per_gpu_hour"]}
    screened_ok = sum(r.ok for r in screened)
    out = {
        "request": request.to_dict(), "status": status, "best": best_entry, "runners_up": runners,
        "cheaper_failed": cheaper, "sensitivity": sens_out, "baseline": base, "verdict": verdict,
        "pareto": {"points": sorted(points, key=lambda p: (p["usd_per_million"], p["key"])),
                   "front_ttft_p99": pareto_front(points, "ttft_p99_s"),
                   "front_tpot_p99": pareto_front(points, "tpot_p99_s")},
        "space": {"dimensions": [d.name for d in DIMENSIONS], "candidates": len(screened), "screened_ok": screened_ok,
                  "refused": len(screened) - screened_ok, "finalists": len(picked),
                  "refusals": refusals, "unpriced_gpus": list(unpriced_gpus(request))},
        "targets": targets, "bindings": list(BINDINGS),
        "limits": [
            "Pipeline parallelism across servers is screened out: calc's simulator runs tensor-parallel replicas only.",
            "Disaggregated pools are simulated as a prefill fleet and a decode fleet whose prompts' KV arrives over "
            "the network (one NIC per GPU); the transfer is not queued.",
            "GPUs without a dated price are left out unless a price is given or the GPU is owned.",
            "Error bands are the accuracy page's held-out relative errors for the engine, not a confidence interval.",
        ],
    }
    out["explanation"] = _words(request, best_entry, cheaper, sens_out, base, verdict, out["space"]["refusals"])
    return tidy(out)


def _verdict(best: dict | None, base: dict | None, status: str, refusals: dict | None = None,
             unpriced: tuple = ()) -> str:
    """The answer's last sentence: the pick against the hand-made deployment, or why there is no pick.

    With no pick and every candidate refused for its topology (the weights need pipeline stages across
    servers, which the simulator does not run), no target is to blame, so the sentence says what would help.

    >>> _verdict(None, None, "none", {"topology": {"count": 3}}, ("h200",))
    'Every configuration searched needs pipeline stages across servers, which calc does not simulate: ...(h200 needs a price: --price GPU=USD) or a lighter weight format.'
    >>> _verdict(None, None, "none", {"ttft_p99": {"count": 3}})
    'No configuration meets every target: relax a target, allow more GPUs or other formats.'
    """
    if best is None:
        if refusals and set(refusals) == {"topology"}:
            wanted = f" ({', '.join(unpriced)} {'needs' if len(unpriced) == 1 else 'need'} a price: --price GPU=USD)" \
                if unpriced else ""
            return ("Every configuration searched needs pipeline stages across servers, which calc does not simulate: "
                    f"allow a GPU whose server holds the weights{wanted} or a lighter weight format.")
        return "No configuration meets every target: relax a target, allow more GPUs or other formats."
    if base is None:
        return f"Cheapest {'confirmed' if status == 'confirmed' else 'screened'} configuration: {best['label']}."
    if base.get("refused"):
        return f"The hand-made deployment ({base['label']}) is refused: {base['refused']}"
    if not base.get("confirmed") and status == "confirmed":
        return (f"The hand-made deployment ({base['label']}) meets no target set within the replica walk; the plan "
                f"does, at {_usd(best['usd_per_million']['all_at_peak'])} per million tokens.")
    mine, theirs = best["usd_per_million"]["all_at_peak"], base["usd_per_million"]["all_at_peak"]
    if best["key"] == base["key"]:
        return f"The hand-made deployment ({base['label']}) is already the cheapest found."
    if mine < theirs:
        return (f"Beats the hand-made deployment ({base['label']} x{base['replicas']}, {base['gpus']} GPUs, "
                f"{_usd(theirs)} per million tokens) by {(1 - mine / theirs) * 100:.0f}%: {_usd(mine)} per million "
                f"on {best['gpus']} GPUs.")
    return (f"Nothing in the space beats the hand-made deployment ({base['label']}): it costs {_usd(theirs)} per "
            f"million tokens against the plan's {_usd(mine)}.")
