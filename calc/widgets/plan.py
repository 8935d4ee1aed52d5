"""Widgets and facts of the page "Plan a deployment" (docs/plan.md).

The planner is :mod:`calc.plan` (issue 34); this module only turns its answer into views. The page's inputs
are the flags of ``python -m calc plan`` and are read by the CLI's own code (:func:`calc.cli.plan.run`), so
the JSON the page shows is the CLI's, byte for byte. Three widgets share the inputs (the runtime's playground
component keeps them equal and writes them to the address): the screen's answer first (a second or two), the
answer the simulator confirms (several seconds in the browser), and that answer as JSON (the same call, kept).
None of them is rerun on a page load (``warm=False``): the build rendered their defaults.

In the browser the confirmed answer's simulations run across a pool of Web Workers (``calc-pool.js``), driven
by two functions the page does not show: :func:`confirmed_jobs` (the main worker: the next round of
simulations the plan needs, :func:`calc.plan.pool.next_jobs`, and once all are done the answer, kept for
:func:`confirmed` and :func:`plan_json`) and :func:`simulated_jobs` (each pool worker: a share of a round).

>>> first = first_answer(preset="batch")
>>> first["outputs"]["command"]["text"]
'python -m calc plan --preset batch --screen-only --json'
>>> first["outputs"]["status"]["text"].startswith("First answer (analytic screen)")
True
"""

from __future__ import annotations

import argparse
import functools
import json
from typing import Annotated

from calc import lesson
from calc.catalog import GPUS
from calc.cli import plan as plan_cli
from calc.errors import CalcError
from calc.plan import pool, presets
from calc.plan.explain import LESSON_STEPS
from calc.plan.inputs import request_from_dict
from calc.plan.screen import BINDINGS
from calc.plan.search import FINALISTS
from calc.units import format_number, s_to_ms
from calc.widgets.charts import PALETTE
from calc.widgets.framework import Choice, FloatRange, IntRange, Text, fact, facts_of, output, table, view, widget

__all__ = ["first_answer", "confirmed", "plan_json", "confirmed_jobs", "simulated_jobs", "command_text",
           "pareto_figure", "top_five_table", "facts"]

_PRESETS = (("lesson", "The lesson's running example at its peak"), ("chat", "A chat service"),
            ("long-document", "A long-document service"), ("batch", "A batch job"))
_GPU_CHOICES = (("", "Every GPU with a price"),) + tuple((k, g.name) for k, g in sorted(GPUS.items()))
_FORMATS = (("", "bf16 and fp8 (default)"), ("bf16", "bf16 only"), ("fp8", "fp8 only"))
#: Answers kept between calls: the JSON widget asks for the plan the confirmed widget has just computed.
_KEPT = 4
_answers: dict[tuple, dict] = {}

Preset = Annotated[str, Choice(_PRESETS, label="Start from",
                               help="A preset sets the model, traffic and targets; the fields below change it")]
Rate = Annotated[float, FloatRange(0, 100_000, 0.1, "requests/s", label="Peak rate",
                                   help="0: the preset's (the lesson's peak is 20 requests/s)")]
TtftTarget = Annotated[float, FloatRange(0, 3600, 0.1, "s", label="p99 TTFT target", help="0: the preset's")]
TpotTarget = Annotated[float, FloatRange(0, 3600, 0.001, "s", label="p99 TPOT target", help="0: the preset's")]
Gpus = Annotated[str, Choice(_GPU_CHOICES, label="GPU")]
Weights = Annotated[str, Choice(_FORMATS, label="Weight formats")]
KvDtypes = Annotated[str, Choice(_FORMATS, label="KV cache formats")]
Budget = Annotated[int, IntRange(0, 100_000, 1, "GPUs", label="GPU budget", help="0: no limit")]
Prices = Annotated[str, Text(label="Prices, USD per GPU-hour", rows=2,
                             help="GPU=USD, comma-separated (e.g. h200=4.5, h100-sxm-80gb=2.5); empty: the "
                                  "catalog's dated listings")]
Done = Annotated[str, Text(label="Rounds of simulations done (JSON)", rows=2,
                           help="{for: the flags, rounds: [{jobs, results}, ...]} (calc.plan.pool.next_jobs's "
                                "rounds); empty: none yet")]
Jobs = Annotated[str, Text(label="Simulations to run (JSON)", rows=2,
                           help="jobs of calc.plan.pool.next_jobs, as calc.plan.pool.run_jobs takes them")]


def _prices(text: str) -> list[tuple[str, str]]:
    pairs = []
    for item in text.replace(";", ",").replace("\n", ",").split(","):
        item = item.strip()
        if not item:
            continue
        if "=" not in item:
            raise CalcError(f"Prices (prices) must be GPU=USD items; got {item!r}", "prices")
        gpu, usd = (part.strip() for part in item.split("=", 1))
        if gpu not in GPUS:
            raise CalcError(f"Prices (prices): {gpu!r} is not a catalog GPU; one of {', '.join(sorted(GPUS))}",
                            "prices")
        pairs.append((gpu, usd))
    return pairs


def _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices) -> list[str]:
    """The ``python -m calc plan`` flags of the page's inputs (a zero or empty field is the preset's)."""
    flags = ["--preset", preset]
    for flag, value in (("--rate", rate), ("--ttft-p99-s", ttft_p99_s), ("--tpot-p99-s", tpot_p99_s)):
        if value:
            flags += [flag, format(value, "g")]
    for flag, value in (("--gpus", gpus), ("--weights", weights), ("--kv-dtypes", kv_dtypes)):
        if value:
            flags += [flag, value]
    if gpu_budget:
        flags += ["--gpu-budget", str(gpu_budget)]
    for gpu, usd in _prices(prices):
        flags += ["--price", f"{gpu}={usd}"]
    return flags


def command_text(flags: list[str], screen_only: bool = False) -> str:
    """The command that prints this answer's JSON in a terminal.

    >>> command_text(["--preset", "chat", "--price", "h200=4.5"])
    'python -m calc plan --preset chat --price h200=4.5 --json'
    """
    return " ".join(["python -m calc plan", *flags] + (["--screen-only"] if screen_only else []) + ["--json"])


def _args(flags: list[str], screen_only: bool) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m calc plan")
    plan_cli.add_arguments(parser)
    return parser.parse_args(flags + (["--screen-only"] if screen_only else []) + ["--serial"])


def _keep(key: tuple, result: dict) -> dict:
    while len(_answers) >= _KEPT:
        _answers.pop(next(iter(_answers)))
    _answers[key] = result
    return result


def _answer(flags: list[str], screen_only: bool) -> dict:
    """The CLI's answer for ``flags`` (its parser, its request, its search), in this process."""
    key = (tuple(flags), screen_only)
    if key in _answers:
        return _answers[key]
    return _keep(key, plan_cli.run(_args(flags, screen_only)))  # a CalcError names the field; the page shows it


def _json(text: str, field: str, kind: type):
    try:
        value = json.loads(text)
    except ValueError as error:
        raise CalcError(f"{field} must be JSON; {error}", field) from None
    if not isinstance(value, kind):
        raise CalcError(f"{field} must be a JSON {kind.__name__}; got {type(value).__name__}", field)
    return value


def _rounds_done(text: str, flags: list[str]) -> list:
    """The rounds in ``done``, which must be this plan's (``for`` its flags): a round of other inputs is never mixed in."""
    if not text.strip():
        return []
    done = _json(text, "done", dict)
    if set(done) != {"for", "rounds"} or not isinstance(done["rounds"], list):
        raise CalcError("done must be {for, rounds}", "done")
    if done["for"] != flags:
        raise CalcError(f"done holds the rounds of other inputs ({done['for']!r}), not of {flags!r}", "done")
    return done["rounds"]


def _json_text(result: dict) -> str:
    return json.dumps(result, indent=2, sort_keys=True)  # as calc.cli.main prints it (plus its newline)


# The CLI's own formatting, so the page's tables read as `python -m calc plan` prints them.
_ms, _usd = plan_cli._ms, plan_cli._usd


def _step(constraint: str | None) -> str:
    path = LESSON_STEPS.get(constraint or "")
    return f"step {int(path.split('/')[-1][:2])}" if path else "-"


def top_five_table(result: dict) -> dict:
    """The plan and its runners-up (then the hand-made baseline), as rows of text.

    >>> t = top_five_table(_answer(["--preset", "batch"], screen_only=True))
    >>> t["columns"][:3], t["rows"][0][0]
    (['Rank', 'Configuration', 'Replicas x GPUs, $/hour'], 'plan')
    """
    entries = ([("plan", result["best"])] if result["best"] else []) + \
        [(f"#{i}", e) for i, e in enumerate(result["runners_up"], 2)]
    entries = entries[:5]
    if result.get("baseline") and result["baseline"].get("key"):
        entries.append(("hand-made", result["baseline"]))
    rows = []
    for tag, e in entries:
        um = e["usd_per_million"]
        constraint = e["binding"]["constraint"]
        rows.append([tag, e["label"], f"{e['replicas']} x {e['gpus_per_replica']} = {e['gpus']}, "
                                      f"{_usd(e['usd_per_hour'])}/h",
                     f"{_usd(um['input_at_peak'])} / {_usd(um['output_at_peak'])}",
                     f"{_ms(e['predicted']['ttft_p99_s'])} / {_ms(e['predicted']['tpot_p99_s'])} ({e['source']})",
                     f"{constraint} ({_step(constraint)})"])
    return table(["Rank", "Configuration", "Replicas x GPUs, $/hour", "$/M input / output", "p99 TTFT / TPOT",
                  "Binds on (lesson step)"], rows,
                 caption=f"The cheapest deployments ({result['status']}), at {format_number(result['request']['peak_rate_per_s'])} "
                         "requests/s")


def pareto_figure(result: dict) -> dict:
    """USD per million tokens against p99 TTFT and p99 TPOT of every confirmed deployment, the fronts joined.

    >>> fig = pareto_figure({"pareto": {"points": [], "front_ttft_p99": [], "front_tpot_p99": []}, "targets": {}})
    >>> [t["name"] for t in fig["data"]], fig["layout"]["yaxis"]["title"]["text"]
    (['p99 TTFT', 'p99 TPOT'], 'p99 latency (s)')
    """
    points = result["pareto"]["points"]
    data = []
    for index, (metric, name, front) in enumerate((("ttft_p99_s", "p99 TTFT", "front_ttft_p99"),
                                                    ("tpot_p99_s", "p99 TPOT", "front_tpot_p99"))):
        on_front = set(result["pareto"][front])
        shown = [p for p in points if p[metric] is not None]
        data.append({"type": "scatter", "mode": "markers", "name": name,
                     "x": [p["usd_per_million"] for p in shown], "y": [p[metric] for p in shown],
                     "text": [f"{p['label']} ({p['gpus']} GPUs)" + (", on the front" if p["key"] in on_front else "")
                              for p in shown],
                     "hovertemplate": "%{text}<br>$%{x:.3g} per million tokens, %{y:.3g} s<extra></extra>",
                     "marker": {"color": PALETTE[index], "size": 10, "symbol": ("circle", "diamond")[index]}})
        front_points = [p for p in shown if p["key"] in on_front]
        if front_points:
            data.append({"type": "scatter", "mode": "lines", "name": f"{name} front",
                         "x": [p["usd_per_million"] for p in front_points], "y": [p[metric] for p in front_points],
                         "line": {"color": PALETTE[index], "width": 1.5, "dash": "dot"}, "hoverinfo": "skip"})
    for index, (metric, name) in enumerate((("ttft_p99_s", "TTFT target"), ("tpot_p99_s", "TPOT target"))):
        target = result["targets"].get(metric)
        xs = [p["usd_per_million"] for p in points]
        if target and xs:
            data.append({"type": "scatter", "mode": "lines", "name": f"p99 {name}", "x": [min(xs), max(xs)],
                         "y": [target, target], "hoverinfo": "skip",
                         "line": {"color": PALETTE[index], "width": 1, "dash": "dash"}})
    best = result.get("best")
    summary = (f"{len(points)} simulated deployments; the plan, {best['label']}, costs "
               f"{_usd(best['usd_per_million']['all_at_peak'])} per million tokens at the peak." if best and points
               else "No simulated deployment to show yet: the screen's answer is above.")
    return {
        "data": data,
        "layout": {
            "title": {"text": "USD per million tokens against p99 latency", "font": {"size": 15}},
            "xaxis": {"title": {"text": "USD per million tokens at the peak"}, "zeroline": False},
            "yaxis": {"title": {"text": "p99 latency (s)"}, "type": "log", "zeroline": False},
            "legend": {"orientation": "h", "x": 0, "xanchor": "left", "y": -0.2, "yanchor": "top"},
            "margin": {"l": 60, "r": 20, "t": 50, "b": 120}, "height": 460,
        },
        "summary": summary,
    }


def _binding_text(result: dict) -> str:
    best = result["best"]
    if not best:
        return "-"
    b = best["binding"]
    return f"{b['constraint']}: taught in {_step(b['constraint'])} of the lesson ({b['words']})"


@widget(budget_s=30.0, warm=False)
def first_answer(preset: Preset = "lesson", rate: Rate = 0.0, ttft_p99_s: TtftTarget = 0.0,
                 tpot_p99_s: TpotTarget = 0.0, gpus: Gpus = "", weights: Weights = "", kv_dtypes: KvDtypes = "",
                 gpu_budget: Budget = 0, prices: Prices = ""):
    """Plan a deployment: the first answer, from the analytic screen (roofline, Little's law, queueing)."""
    flags = _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices)
    result = _answer(flags, screen_only=True)
    space = result["space"]
    searched = (f"{space['candidates']:,} configurations screened, {space['screened_ok']:,} pass"
                + (f"; no price for {', '.join(space['unpriced_gpus'])} (enter one below the GPU)"
                   if space["unpriced_gpus"] else ""))
    return view(outputs=[
        output("status", "Stage", "screened", text="First answer (analytic screen); the simulator's follows below"),
        output("searched", "Searched", space["candidates"], text=searched),
        output("command", "In a terminal", " ".join(flags), text=command_text(flags, screen_only=True)),
    ], tables={"words": table(["The screen's answer, in words"], [[line] for line in result["explanation"]])})


@widget(budget_s=90.0, warm=False)
def confirmed(preset: Preset = "lesson", rate: Rate = 0.0, ttft_p99_s: TtftTarget = 0.0,
              tpot_p99_s: TpotTarget = 0.0, gpus: Gpus = "", weights: Weights = "", kv_dtypes: KvDtypes = "",
              gpu_budget: Budget = 0, prices: Prices = ""):
    """The plan the simulator confirms: why, what binds it, the runners-up and the USD-against-p99 front."""
    flags = _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices)
    result = _answer(flags, screen_only=False)
    outputs = [output("verdict", "The plan", result["verdict"], text=result["verdict"]),
               output("binding", "What binds it", _binding_text(result), text=_binding_text(result)),
               output("command", "The same plan in a terminal", " ".join(flags), text=command_text(flags))]
    best = result["best"]
    commands = [["Serve it on real GPUs", best["commands"]["serve"]],
                ["Replay the traffic against it", best["commands"]["bench"]]] if best else []
    return view(outputs=outputs, figures={"pareto": pareto_figure(result)}, tables={
        "words": table(["The plan, in words"], [[line] for line in result["explanation"]]),
        "top": top_five_table(result),
        "commands": table(["Check it", "Command"], commands, caption="vLLM commands that verify the plan"),
    })


@widget(budget_s=90.0, warm=False)
def plan_json(preset: Preset = "lesson", rate: Rate = 0.0, ttft_p99_s: TtftTarget = 0.0,
              tpot_p99_s: TpotTarget = 0.0, gpus: Gpus = "", weights: Weights = "", kv_dtypes: KvDtypes = "",
              gpu_budget: Budget = 0, prices: Prices = ""):
    """The plan as JSON: what ``python -m calc plan ... --json`` prints for the same inputs."""
    flags = _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices)
    text = _json_text(_answer(flags, screen_only=False))
    return view(outputs=[output("command", "Command", " ".join(flags), text=command_text(flags)),
                         output("json", "JSON", len(text), text=text)])


@widget(budget_s=60.0, warm=False)
def confirmed_jobs(preset: Preset = "lesson", rate: Rate = 0.0, ttft_p99_s: TtftTarget = 0.0,
                   tpot_p99_s: TpotTarget = 0.0, gpus: Gpus = "", weights: Weights = "", kv_dtypes: KvDtypes = "",
                   gpu_budget: Budget = 0, prices: Prices = "", done: Done = ""):
    """The simulations the confirmed answer still needs, for the page's worker pool; none once it is kept here.

    >>> import json
    >>> wanted = json.loads(confirmed_jobs(preset="batch")["outputs"]["jobs"]["text"])
    >>> len(wanted), sorted(wanted[-1])  # six finalists (the batch preset has no hand-made baseline)
    (6, ['candidate', 'rate_factor', 'start', 'targets'])
    """
    flags = _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices)
    rounds = _rounds_done(done, flags)
    key = (tuple(flags), False)
    jobs: list = []
    if key not in _answers:
        args = _args(flags, screen_only=False)
        jobs, result = pool.next_jobs(lambda: plan_cli.run(args), rounds)
        if result is not None:
            _keep(key, result)
    return view(outputs=[
        output("jobs", "Simulations wanted", len(jobs), text=json.dumps(jobs)),
        output("for", "The plan's flags (done's for)", " ".join(flags), text=json.dumps(flags)),
    ])


@widget(budget_s=60.0, warm=False)
def simulated_jobs(preset: Preset = "lesson", rate: Rate = 0.0, ttft_p99_s: TtftTarget = 0.0,
                   tpot_p99_s: TpotTarget = 0.0, gpus: Gpus = "", weights: Weights = "", kv_dtypes: KvDtypes = "",
                   gpu_budget: Budget = 0, prices: Prices = "", jobs: Jobs = ""):
    """A worker of the page's pool: the results of its share of a round of simulations (JSON, in order).

    >>> import json
    >>> first = json.loads(confirmed_jobs(preset="batch")["outputs"]["jobs"]["text"])[:1]
    >>> done = json.loads(simulated_jobs(preset="batch", jobs=json.dumps(first))["outputs"]["results"]["text"])
    >>> len(done), "replicas" in done[0]
    (1, True)
    """
    flags = _flags(preset, rate, ttft_p99_s, tpot_p99_s, gpus, weights, kv_dtypes, gpu_budget, prices)
    wanted = _json(jobs, "jobs", list) if jobs.strip() else []
    results = []
    if wanted:
        request = request_from_dict(plan_cli.request_data(_args(flags, screen_only=False)))
        results = pool.run_jobs(request, wanted)
    return view(outputs=[output("results", "Simulated", len(results), text=json.dumps(results))])


# --- facts --------------------------------------------------------------------------------------

@functools.cache
def _lesson_request():
    return presets.request("lesson")


@fact
def lesson_rate() -> str:
    """>>> lesson_rate(), lesson_model()
    ('20 requests/s', 'llama-3.1-70b')
    """
    return f"{format_number(_lesson_request().peak_rate_per_s)} requests/s"


@fact
def lesson_model() -> str:
    return lesson.MODEL


@fact
def lesson_ttft() -> str:
    return f"{format_number(_lesson_request().targets.ttft_p99_s)} s"


@fact
def lesson_tpot() -> str:
    return f"{format_number(s_to_ms(_lesson_request().targets.tpot_p99_s))} ms"


@fact
def binding_steps() -> str:
    """The lesson step that teaches each binding constraint, as a list of links.

    >>> "[step 6](lesson/06-twice-the-traffic.md)" in binding_steps()
    True
    """
    return "\n".join(f"- **{name}**: [step {int(LESSON_STEPS[name].split('/')[-1][:2])}]({LESSON_STEPS[name]})"
                     for name in BINDINGS if name in LESSON_STEPS)


@fact
def finalists() -> str:
    return f"{FINALISTS}"


@fact
def priced_gpus() -> str:
    return ", ".join(f"{g.name} ${g.price_usd_per_hour:g} ({g.price_source.split(' ')[0]}, {g.price_date})"
                     for g in GPUS.values() if g.price_usd_per_hour is not None)


facts = facts_of(__name__)
