"""Fit each engine profile's step and request costs on its ``calibration`` rows, and only on them.

Rerun: ``python -m calc.latency_fit`` prints the fit beside the stored constants; ``--write`` stores it in
``calc/data/engine_profiles.json`` (what :mod:`calc.engine_profiles` reads; tests/test_latency_fit.py
checks that the stored constants equal a fresh fit).

How the calibration rows are chosen (a principle, not a search over rows): for each engine, the
lowest-load published figure that isolates one term, one row per term, at most four per engine; every
other row is validation.

* per-step cost (``step_overhead_s``): a decode at low load on one GPU where the engine has one (vLLM's
  nightly ``benchmark_latency``: one batch of 8, 128 steps, Llama 8B on one H100; SGLang's and vLLM
  0.6's median ITL / TPOT at their lowest rate on one A100), else the lowest-concurrency decode row
  (NIM: ITL at concurrency 1, two H100s, with the tensor-parallel term inherited);
* tensor-parallel cost (``tp_step_overhead_s``): the same test on four GPUs (vLLM nightly, Llama 70B
  TP4 on H100), fitted after the one-GPU term and on top of the measured all-reduce latency
  (:data:`calc.parallel.ALLREDUCE_SMALL_MESSAGE_S`) and the prefill-sized share of the two-stage kernel
  (:data:`calc.engine_profiles.ALLREDUCE_BUS_EFFICIENCY`); engines without such a row inherit vLLM's (an
  assumption, said in the profile);
* request cost (``request_overhead_s``): the engine's lowest-load TTFT with the shortest prompt (NIM at
  concurrency 1 with 500-token prompts; the first, uncached, Azure vLLM run at 1 request/s; SGLang and
  vLLM 0.6 at 4 requests/s on one A100; vLLM 0.6's on top of the wait for the running multi-step window
  to end, which the simulator runs step by step, :mod:`calc.sim.scheduler`, not a constant);
* per-sequence cost (``seq_overhead_s``, each sequence scheduled in a step: input preparation, sampling,
  output processing on a Python engine's CPU): the run at the largest batch with arrivals spread out
  (Azure's vLLM suite, Llama 3.3 70B TP8, 16 requests/s, median ITL: 38 sequences running on average in
  calc's run, up to 89, where the term is the largest one beyond the fitted ones). Not its 4 requests/s
  run (16 on average): there the
  slope would take every other residual of that TP8 A100 set-up (the 1 request/s TPOT is already 5% short)
  and come out at 0.44 ms per sequence, leaving no per-step cost for the batch-8 rows. The all-at-once run
  is not taken either (its steps carry whole prompts). SGLang 0.3 has its own, on the same principle
  (:data:`SEQ_ROW_SGLANG`: its 8B run at 8 requests/s, median ITL, about 17 sequences running where the
  4 requests/s run that fits its step cost has about 7; its 5,000-prompt runs carry whole prompts);
  vLLM 0.6's multi-step scheduling and NIM's C++ runtime take 0 (sourced assumptions in the profile). The term is the serving path's (each
  token streamed to its client through the API server): vLLM's offline maximum-throughput runs
  (benchmark_throughput, LLM.generate, no API server) came out 28-37% slow with it and run without it
  (scenario ``frontend`` offline, :func:`calc.latency_accuracy.frontend_of`): 5-19% slow to 7% fast on
  Llama. The fit does not move with that (its rows are served, or batch-8 rows the split between fixed and
  per-sequence cost is fitted on as served). Left: SGLang 0.3's 5,000-prompt runs, served at rate inf,
  still come out 28-35% slow with its own 100 us per sequence (41-33% with vLLM's 138 us): under calc's
  roofline their answers run compute-bound at a large batch, where a per-sequence cost that size cannot
  be paid in series (a term whose shape at a batch of hundreds no source read gives);
* SGLang 0.3's tensor-parallel cost (:data:`TP_ROW_SGLANG`): its own 4-GPU row at its lowest rate (70B on
  4 H100s, 4 requests/s, median ITL), fitted after its one-GPU terms. SGLang 0.3 runs a whole scheduler in
  every tensor-parallel rank and rank 0 sends each loop's new requests to the others over a CPU (gloo)
  broadcast before every step (``ControllerSingle.loop_for_forward`` -> ``broadcast_recv_input``,
  python/sglang/srt/managers/controller_single.py and tp_worker.py of the v0.3 line), where vLLM's driver
  hands its workers a prepared tensor dict; vLLM's own 0.63 ms per GPU (fitted on vLLM's nightly TP4 row)
  left SGLang's 70B rows 7-16% fast. The row's launch command also differs from the 8B one beyond TP (no
  ``--enable-torch-compile``, H100 rather than A100): the term takes that too, and says so.

Each term is fitted alone, in that order, by bisection on the simulated figure
(:func:`calc.latency_accuracy.predict_row`, which rises with each term, though not everywhere: vLLM 0.6's
TPOT moves in jumps with its multi-step windows, and a root-finder that skips bisection's midpoints lands 1 us
away there, tried 2026-12-02); a term whose zero already over-predicts is 0. Since every row pays every term (the batch-8 row also pays 8 sequences' cost), an
engine's terms are refitted in turn until none moves, or for at most :data:`_MAX_ROUNDS` rounds. Two engines
stop at that cap, and their stored constants are the sixth round's (each round's terms printed by refitting in
turn, 2026-12-02): SGLang 0.3's still converge, slowly (its step cost 0.756 -> 0.740 ms over the last round, a
geometric approach); vLLM's cycle. Its request cost is fitted on a median TTFT at 1 request/s, which moves with
the phase of the decode steps a new request waits behind: 1.3 ms for 3 us more step cost, and not monotone in
it. The batch-8 row, which pays one request cost, then moves the step cost back, so from the fourth round the
step cost wanders within 0.599-0.614 ms and the request cost within 11.0-12.3 ms (about 2% of that row's 56 ms
TTFT). A joint solve of an engine's terms would end both; it would move every served figure slightly, so it is
left for a change that re-records the goldens. The fit is deterministic: a rerun gives the stored constants.
The maximum-throughput efficiency factors (:func:`calc.roofline.calibrate`) are not touched.

>>> PLAN["vllm"]["step_overhead_s"]
('row', 'vllm-nightly-latency-llama8b-tp1-h100')
"""

from __future__ import annotations

import argparse
import json
import sys

from calc import engine_profiles
from calc.errors import CalcError
from calc.units import round_sig

__all__ = ["PLAN", "FIT_ORDER", "SEQ_ROW_VLLM", "SEQ_ROW_SGLANG", "TP_ROW_SGLANG", "fit_term", "fit", "stored", "write", "main"]

#: The row that fits vLLM's per-sequence cost: the run at the largest batch with arrivals spread out (Azure's
#: vLLM suite at 16 requests/s, median ITL: the time of a typical decode step; the same run series whose first
#: run fits the request cost). Not the lowest load: at 4 requests/s (16 sequences on average) the slope takes every
#: other residual of that TP8 A100 set-up and comes out at 0.44 ms per sequence, leaving no per-step cost for
#: the batch-8 rows; the all-at-once run's steps carry whole prompts.
SEQ_ROW_VLLM = "vllm-azure-llama-3.3-70b-bf16-a100-40gb-tp8-sharegpt-qps16-itl"
#: The row that fits SGLang 0.3's own per-sequence cost, on vLLM's principle: its run at the largest batch with
#: arrivals spread out (the 8B on one A100 at 8 requests/s, median ITL: about 17 sequences per step in calc's run,
#: where the 4 requests/s row that fits its step cost has about 7); the 5,000-prompt runs carry whole prompts.
SEQ_ROW_SGLANG = "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps8-itl"
#: The row that fits SGLang 0.3's own tensor-parallel cost: its 4-GPU run at its lowest rate (70B, 4 H100s,
#: 4 requests/s, median ITL), the TP4 counterpart of the row its step cost is fitted on.
TP_ROW_SGLANG = "sglang-060-sglang-llama-3.1-70b-bf16-h100-tp4-sharegpt-rps4-itl"
SEQ_ZERO_MULTISTEP = ("vLLM v0.6.0's multi-step scheduling prepares the inputs once per window of "
                      "--num-scheduler-steps steps and its asynchronous output processing runs beside the GPU's "
                      "work (vLLM blog 'vLLM v0.6.0: 2.7x Throughput Improvement and 5x Latency Reduction', "
                      "2024-09-05); no own row at a larger batch is calibration")
SEQ_ZERO_TRTLLM = ("TensorRT-LLM's runtime is C++ (its batch manager schedules and samples without a Python loop "
                   "over the sequences; TensorRT-LLM docs, 'Overview'); no NIM row at a large batch is "
                   "calibration (its rows at concurrency 100-250 are over-predicted, not short)")

#: For each profile: scheduler steps, and per term ``("row", id)`` (fitted on it), ``("inherit", profile)``
#: or ``("zero", why)`` (an assumption of 0, its source said).
PLAN = {
    "vllm": {
        "step_overhead_s": ("row", "vllm-nightly-latency-llama8b-tp1-h100"),
        "tp_step_overhead_s": ("row", "vllm-nightly-latency-llama70b-tp4-h100"),
        "seq_overhead_s": ("row", SEQ_ROW_VLLM),
        "request_overhead_s": ("row", "vllm-azure-llama-3.3-70b-bf16-a100-40gb-tp8-sharegpt-qps01-ttft"),
    },
    "vllm-0.6-multistep": {
        "step_overhead_s": ("row", "sglang-060-vllm-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-tpot"),
        "tp_step_overhead_s": ("inherit", "vllm"),
        "seq_overhead_s": ("zero", SEQ_ZERO_MULTISTEP),
        "request_overhead_s": ("row", "sglang-060-vllm-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-ttft"),
    },
    "sglang-0.3": {
        "step_overhead_s": ("row", "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-itl"),
        "tp_step_overhead_s": ("row", TP_ROW_SGLANG),
        "seq_overhead_s": ("row", SEQ_ROW_SGLANG),
        "request_overhead_s": ("row", "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-ttft"),
    },
    "nim-trtllm": {
        "tp_step_overhead_s": ("inherit", "vllm"),
        "step_overhead_s": ("row", "nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-itl"),
        "seq_overhead_s": ("zero", SEQ_ZERO_TRTLLM),
        "request_overhead_s": ("row", "nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-ttft"),
    },
}
FIT_ORDER = ("vllm", "vllm-0.6-multistep", "sglang-0.3", "nim-trtllm")
_HIGH_S = {"step_overhead_s": 0.05, "tp_step_overhead_s": 0.02, "seq_overhead_s": 0.002, "request_overhead_s": 2.0}
_ROUND_S = {"step_overhead_s": 1e-6, "tp_step_overhead_s": 1e-6, "seq_overhead_s": 1e-7, "request_overhead_s": 1e-5}
_STEPS = 22
#: Rounds of fitting an engine's terms one after another: each row's figure depends on every term (the batch-8
#: row that fits the step cost also pays 8 sequences' cost), so the terms are refitted in turn until none moves
#: (vLLM and SGLang 0.3 reach this cap: see the module's docstring).
_MAX_ROUNDS = 6


def _rows_by_id() -> dict:
    from calc.latency_accuracy import load_rows

    return {r["id"]: r for r in load_rows()}


def _predict(row: dict, profile) -> float:
    from calc.latency_accuracy import predict_row

    saved = dict(engine_profiles._TRIAL)
    try:
        engine_profiles._TRIAL[profile.key] = profile
        return predict_row(row).predicted
    finally:
        engine_profiles._TRIAL.clear()
        engine_profiles._TRIAL.update(saved)


def fit_term(profile, term: str, row: dict) -> float:
    """The value of ``term`` (s) at which the simulated figure of ``row`` equals the published one.

    Bisection over ``[0, high]`` (:data:`_HIGH_S`), the result rounded to 1 us (step terms) or 10 us
    (request). Only ``calibration`` rows of the profile's own engine may be fitted.

    >>> rows = _rows_by_id()
    >>> p = engine_profiles.get_profile("vllm").with_terms(step_overhead_s=0.0, tp_step_overhead_s=0.0, seq_overhead_s=0.0)
    >>> fit_term(p, "step_overhead_s", rows["vllm-nightly-latency-llama8b-tp1-h100"]) > 0.001   # all of it, alone
    True
    """
    if row["role"] != "calibration":
        raise CalcError(f"row {row['id']} is a {row['role']} row; only calibration rows are fitted", "role")
    if row["inputs"].get("engine_profile") != profile.key:
        raise CalcError(f"row {row['id']} ran engine {row['inputs'].get('engine_profile')!r}, not {profile.key!r}",
                        "engine")
    measured = float(row["figure"]["value"])
    low, high = 0.0, _HIGH_S[term]
    if _predict(row, profile.with_terms(**{term: low})) >= measured:
        return 0.0
    unit = _ROUND_S[term]
    for _ in range(_STEPS):
        if round(low / unit) == round(high / unit):
            # Settled: every later midpoint lies in [low, high] and rounds to the same unit, so the full
            # bisection would return the same value (a third fewer simulations).
            break
        mid = (low + high) / 2
        if _predict(row, profile.with_terms(**{term: mid})) < measured:
            low = mid
        else:
            high = mid
    return round(round((low + high) / 2 / unit) * unit, 9)


def fit() -> dict:
    """Every profile fitted, in :data:`FIT_ORDER`: ``{engine: {term: (value s, role, source)}}``.

    Terms are set to 0 first, then inherited ones taken, then fitted ones fitted in the plan's order
    (so the one-GPU step cost is known before the tensor-parallel one). Slow-ish: tens of simulations.
    """
    rows = _rows_by_id()
    done: dict = {}
    for key in FIT_ORDER:
        plan = PLAN[key]
        profile = engine_profiles.get_profile(key).with_terms(**{t: 0.0 for t in engine_profiles.TERMS})
        out = {}
        for term, (how, what) in plan.items():
            if how == "inherit":
                value = done[what][term][0]
                profile = profile.with_terms(**{term: value})
                out[term] = (value, "assumption", f"inherited from engine profile '{what}' (no own row)")
            elif how == "zero":
                out[term] = (0.0, "assumption", f"0: {what}")
        fitted = [(term, what) for term, (how, what) in plan.items() if how == "row"]
        for _ in range(_MAX_ROUNDS):  # each term on its row with the others as last fitted, until none moves
            before = tuple(getattr(profile, term) for term, _ in fitted)
            for term, what in fitted:
                profile = profile.with_terms(**{term: fit_term(profile, term, rows[what])})
            if tuple(getattr(profile, term) for term, _ in fitted) == before:
                break
        for term, what in fitted:
            row = rows[what]
            out[term] = (getattr(profile, term), "calibration",
                         f"fitted on {what} ({row['source']['cite']}: {row['label']}, "
                         f"{row['figure']['metric']} {row['figure']['value']} {row['figure']['unit']})")
        done[key] = {t: out[t] for t in engine_profiles.TERMS}
    return done


def stored() -> dict:
    """The stored constants in the shape of :func:`fit`.

    >>> stored()["vllm"]["step_overhead_s"][1]
    'calibration'
    """
    out = {}
    for key, p in engine_profiles.load_profiles().items():
        roles, sources = dict(p.roles), dict(p.sources)
        out[key] = {t: (getattr(p, t), roles[t], sources[t]) for t in engine_profiles.TERMS}
    return out


def write(result: dict, path: str | None = None) -> None:
    """Store a :func:`fit` result in ``calc/data/engine_profiles.json`` (labels and scheduler steps kept)."""
    path = path or engine_profiles.PROFILES_PATH
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    data["about"] = ("Engine profiles: each engine's fixed step and request costs (s), fitted by "
                     "`python -m calc.latency_fit --write` on its calibration rows of calc/data/measurements.json "
                     "only (calc/latency_fit.py says how the rows are chosen); read by calc/engine_profiles.py.")
    for key, terms in result.items():
        p = data["profiles"][key]
        for term, (value, role, source) in terms.items():
            p[term] = value
            p["terms"][term] = {"role": role, "source": source}
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(data, handle, indent=1, ensure_ascii=False)
        handle.write("\n")


def _render(result: dict) -> str:
    lines = [f"{'engine':<20} {'term':<20} {'value':>11}  role         source"]
    # seq_overhead_s is per sequence: shown in us
    for key, terms in result.items():
        for term, (value, role, source) in terms.items():
            shown = (f"{round_sig(value * 1e6, 4):>8} us" if term == "seq_overhead_s"
                     else f"{round_sig(value * 1000, 4):>8} ms")
            lines.append(f"{key:<20} {term:<20} {shown}  {role:<12} {source}")
    return "\n".join(lines)


def main(argv=None) -> int:
    """``python -m calc.latency_fit [--write]``: fit, print, and optionally store."""
    parser = argparse.ArgumentParser(prog="python -m calc.latency_fit", description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="store the fit in calc/data/engine_profiles.json")
    args = parser.parse_args(argv)
    result = fit()
    print(_render(result))
    same = {k: {t: v[0] for t, v in terms.items()} for k, terms in result.items()} == \
        {k: {t: v[0] for t, v in terms.items()} for k, terms in stored().items()}
    if args.write:
        write(result)
        print("\nstored in calc/data/engine_profiles.json")
    else:
        print("\nthe stored constants " + ("equal this fit" if same else "differ: rerun with --write"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
