"""``python -m calc plan``: the cheapest deployment that meets p99 latency targets at the peak rate, and why.

Start from a preset (``--preset lesson|chat|long-document|batch``, :mod:`calc.plan.presets`) or the lesson's
running example, and change any input with a flag. The search screens every configuration analytically, then
confirms the cheapest finalists in the simulator across processes (:mod:`calc.plan.search`); ``--screen-only``
prints the first stage's answer. ``--json`` prints the whole answer, keys sorted and floats rounded, the same
bytes for the same inputs.

>>> from calc.cli import main
>>> main(["plan", "--model", "llama-3.1-8b", "--rate", "2", "--gpus", "h100-sxm-80gb", "--weights", "fp8",
...       "--kv-dtypes", "fp8", "--screen-only", "--json"])  # doctest: +ELLIPSIS
{
...
  "status": "screened",
...
0
>>> main(["plan", "--rate", "0"])
2
"""

from __future__ import annotations

import argparse

from calc.cli.table import format_table
from calc.errors import CalcError
from calc.plan import presets
from calc.plan.inputs import read_trace, request_from_dict
from calc.plan.search import plan
from calc.units import round_sig

HELP = ("plan a deployment: the cheapest GPU, parallelism, precision, engine limits, speculation, prefix caching "
        "and pools that meet p99 TTFT/TPOT targets at the peak rate (screened, then simulated)")

#: Request field -> the flag that sets it, so an error names the flag.
FLAGS = {
    "model": "--model", "engine": "--engine", "peak_rate_per_s": "--rate", "mean_rate_per_s": "--mean-rate",
    "ttft_p99_s": "--ttft-p99-s", "tpot_p99_s": "--tpot-p99-s", "ttft_p50_s": "--ttft-p50-s",
    "tpot_p50_s": "--tpot-p50-s", "gpus": "--gpus", "gpu_budget": "--gpu-budget",
    "prices_usd_per_gpu_hour": "--price", "owned": "--owned", "weights": "--weights", "kv_dtypes": "--kv-dtypes",
    "speculation_acceptance": "--acceptance", "max_model_len": "--max-model-len", "seed": "--seed",
    "requests": "--requests", "trace": "--trace", "targets": "--ttft-p99-s/--tpot-p99-s", "preset": "--preset",
    "classes[0].prompt_tokens": "--prompt-tokens", "classes[0].output_tokens": "--answer-tokens",
    "classes[0].lengths": "--lengths", "classes[0].prefix_tokens": "--prefix-tokens/--prefix-share",
    "classes[0].prefix_variants": "--prefix-variants", "prefix_share": "--prefix-share",
}


def _pair(text: str) -> tuple[str, str]:
    if "=" not in text:
        raise argparse.ArgumentTypeError(f"expected GPU=VALUE; got {text!r}")
    gpu, value = text.split("=", 1)
    return gpu.strip(), value.strip()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``plan`` (every one defaults to the preset's value; the default preset is ``lesson``).

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args(["--price", "h200=4.5"])
    >>> a.preset, a.price
    ('lesson', [('h200', '4.5')])
    """
    a = parser.add_argument
    a("--preset", default="lesson", help="lesson (the running example at its peak, default), chat, long-document "
                                         "or batch (calc.plan.presets); flags change it")
    a("--model", help="catalog key or a config.json path")
    a("--engine", help="engine profile (calc.engine_profiles; default vllm)")
    a("--rate", type=float, help="peak arrival rate, requests/s (the fleet is sized for it)")
    a("--mean-rate", type=float, help="mean arrival rate, requests/s (prices the tokens on average; default: the "
                                       "preset's mean, scaled with --rate)")
    a("--prompt-tokens", type=int, help="prompt tokens per request (the mean for drawn lengths)")
    a("--answer-tokens", type=int, help="answer tokens per request (the mean for drawn lengths)")
    a("--lengths", help="fixed, lognormal, chat or sharegpt (calc.sim.workload)")
    a("--prefix-tokens", type=int, help="tokens of a system prompt shared by every request, before the prompt")
    a("--prefix-share", type=float, help="share of each prompt that is a shared prefix (0 to 1; sets --prefix-tokens)")
    a("--prefix-variants", type=int, help="distinct shared prefixes (one per tenant, say)")
    a("--trace", metavar="CSV", help="a trace: arrival_s, prompt_tokens, answer_tokens[, prefix_group, prefix_tokens]"
                                     " per row; replaces the rates and lengths")
    a("--ttft-p99-s", type=float, help="p99 time-to-first-token target, seconds")
    a("--tpot-p99-s", type=float, help="p99 time-per-output-token target, seconds")
    a("--ttft-p50-s", type=float, help="median TTFT target, seconds")
    a("--tpot-p50-s", type=float, help="median TPOT target, seconds")
    a("--gpus", help="allowed GPUs, comma-separated catalog keys (default: every GPU with a price)")
    a("--gpu-budget", type=int, help="most GPUs in all")
    a("--price", type=_pair, action="append", metavar="GPU=USD", help="USD per GPU-hour for a GPU (repeatable)")
    a("--owned", type=_pair, action="append", metavar="GPU=PURCHASE,YEARS,WATTS,USD_PER_KWH[,PUE]",
      help="price a GPU you own from its purchase, lifetime, power and electricity (PUE default 1.58)")
    a("--weights", help="weight formats to search, comma-separated (default bf16,fp8)")
    a("--kv-dtypes", help="KV cache formats to search, comma-separated (default bf16,fp8)")
    a("--acceptance", type=float, help="speculative decoding's acceptance rate per drafted token "
                                       "(default: the calibrated EAGLE drafter's, calc.speculative.EAGLE_LIKE)")
    a("--max-model-len", type=int, help="longest request the server admits (default 8192 or the longest request)")
    a("--requests", type=int, help="requests per simulated run (default: 120 s of the peak, 1,000 to 5,000)")
    a("--seed", type=int, help="seed of every simulated draw (default 0)")
    a("--screen-only", action="store_true", help="stop after the analytic screen (the first answer)")
    a("--serial", action="store_true", help="run the simulations in this process only")


def _float(flag: str, text: str) -> float:
    try:
        return float(text)
    except ValueError:
        raise CalcError(f"{flag} must be a number; got {text!r}", flag.lstrip("-")) from None


def request_data(args) -> dict:
    """The plan request the command line gives: the preset's data with each given flag on top.

    >>> d = request_data(argparse.Namespace(preset="chat", rate=3.0, ttft_p99_s=0.5, gpus="h100-sxm-80gb,h200"))
    >>> d["peak_rate_per_s"], d["mean_rate_per_s"], d["targets"]["ttft_p99_s"], d["gpus"]
    (3.0, 3.0, 0.5, ['h100-sxm-80gb', 'h200'])
    >>> lesson = request_data(argparse.Namespace(preset="lesson", rate=1000.0))
    >>> lesson["peak_rate_per_s"], lesson["mean_rate_per_s"]   # the lesson's day curve, scaled: 8.88 of 20 a second
    (1000.0, 444.118)
    """
    get = lambda name: getattr(args, name, None)  # noqa: E731
    data = presets.request_data(get("preset") or "lesson")
    for flag, field in (("model", "model"), ("engine", "engine"), ("max_model_len", "max_model_len"),
                        ("requests", "requests"), ("seed", "seed"), ("gpu_budget", "gpu_budget"),
                        ("acceptance", "speculation_acceptance")):
        if get(flag) is not None:
            data[field] = get(flag)
    if get("rate") is not None:
        # The preset's traffic shape scaled to the new peak: its mean keeps its share of the peak (the lesson's day
        # curve averages 44% of it), so a --rate of 1,000 does not price the tokens at the lesson's 8.9 a second.
        preset_peak = data["peak_rate_per_s"]
        share = data.get("mean_rate_per_s", preset_peak) / preset_peak
        data["peak_rate_per_s"] = get("rate")
        data["mean_rate_per_s"] = round_sig(get("rate") * share)
    if get("mean_rate") is not None:
        data["mean_rate_per_s"] = get("mean_rate")
    cls = dict(data["classes"][0]) if len(data["classes"]) == 1 else None
    for flag, field in (("prompt_tokens", "prompt_tokens"), ("answer_tokens", "output_tokens"),
                        ("lengths", "lengths"), ("prefix_tokens", "prefix_tokens"),
                        ("prefix_variants", "prefix_variants")):
        if get(flag) is not None:
            if cls is None:
                raise CalcError(f"--{flag.replace('_', '-')} applies to one request class; the preset has several",
                                flag)
            cls[field] = get(flag)
    if get("prefix_share") is not None:
        share = get("prefix_share")
        if not 0 <= share < 1:
            raise CalcError(f"--prefix-share must be between 0 and 1 (below 1: a prompt keeps its own question); "
                            f"got {share!r}", "prefix_share")
        total = cls["prompt_tokens"] + cls.get("prefix_tokens", 0)
        cls["prefix_tokens"] = round(share * total)
        cls["prompt_tokens"] = max(1, total - cls["prefix_tokens"])
    if cls is not None:
        data["classes"] = [cls]
    targets = dict(data.get("targets", {}))
    for name in ("ttft_p99_s", "tpot_p99_s", "ttft_p50_s", "tpot_p50_s"):
        if get(name) is not None:
            targets[name] = get(name)
    data["targets"] = targets
    if get("gpus"):
        data["gpus"] = [g.strip() for g in get("gpus").split(",") if g.strip()]
    for flag, field in (("weights", "weights"), ("kv_dtypes", "kv_dtypes")):
        if get(flag):
            data[field] = [w.strip() for w in get(flag).split(",") if w.strip()]
    if get("price"):
        data["prices_usd_per_gpu_hour"] = {g: _float("--price", v) for g, v in get("price")}
    if get("owned"):
        owned = {}
        for gpu, text in get("owned"):
            parts = [_float("--owned", p) for p in text.split(",")]
            if len(parts) not in (4, 5):
                raise CalcError(f"--owned must be GPU=PURCHASE_USD,LIFETIME_YEARS,POWER_W,USD_PER_KWH[,PUE]; got "
                                f"{gpu}={text}", "owned")
            owned[gpu] = dict(zip(("purchase_usd", "lifetime_years", "power_w", "usd_per_kwh", "pue"), parts))
        data["owned"] = owned
    if get("trace"):
        try:
            with open(get("trace"), encoding="utf-8") as handle:
                data["trace"] = read_trace(handle.read())
        except OSError as exc:
            raise CalcError(f"--trace {get('trace')} cannot be read: {exc.strerror}", "trace") from None
    return data


def run(args) -> dict:
    """Plan and return the answer (:func:`calc.plan.search.plan`), an error naming the flag at fault.

    >>> run(argparse.Namespace(preset="chat", tpot_p99_s=0))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: --tpot-p99-s: tpot_p99_s must be between 0.001 and 3600; got 0
    """
    try:
        data = request_data(args)
        request = request_from_dict(data)
    except CalcError as error:
        flag = FLAGS.get(error.field or "", None)
        if flag is None or str(error).startswith("--"):
            raise
        raise CalcError(f"{flag}: {error}", error.field) from None
    return plan(request, baseline=presets.baseline(data.get("name", "")) if not getattr(args, "model", None) else None,
                confirm=not getattr(args, "screen_only", False), parallel=not getattr(args, "serial", False))


def _ms(x) -> str:
    if x is None:
        return "-"
    return f"{x:.3g} s" if x >= 1 else f"{x * 1000:.3g} ms"


def _usd(x) -> str:
    return "-" if x is None else f"${x:,.2f}"


def render(result: dict) -> str:
    """The answer as text: the explanation, the top five and the baseline as a table, the commands.

    >>> out = render(run(argparse.Namespace(preset="lesson", screen_only=True, weights="fp8", kv_dtypes="fp8")))
    >>> print(out.splitlines()[0])  # doctest: +ELLIPSIS
    Plan (screened): Serve Llama 3.1 70B at 20 requests/s on ...
    """
    lines = [f"Plan ({result['status']}): " + result["explanation"][0]] + result["explanation"][1:]
    rows = []
    entries = ([("best", result["best"])] if result["best"] else []) + \
        [(f"#{i}", e) for i, e in enumerate(result["runners_up"], 2)]
    if result.get("baseline") and result["baseline"].get("key"):
        entries.append(("baseline", result["baseline"]))
    for tag, e in entries:
        um = e["usd_per_million"]
        rows.append((tag, e["label"], f"{e['replicas']} x {e['gpus_per_replica']} = {e['gpus']}",
                     _usd(e["usd_per_hour"]), _usd(um["input_at_peak"]), _usd(um["output_at_peak"]),
                     _ms(e["predicted"]["ttft_p99_s"]), _ms(e["predicted"]["tpot_p99_s"]), e["binding"]["constraint"],
                     e["source"]))
    if rows:
        lines += ["", format_table(rows, headers=("", "configuration", "replicas x GPUs", "$/hour", "$/M in",
                                                  "$/M out", "TTFT p99", "TPOT p99", "binds on", "from"))]
    if result["best"]:
        lines += ["", "Verify on real GPUs:", "  " + result["best"]["commands"]["serve"],
                  "  " + result["best"]["commands"]["bench"]]
    s = result["space"]
    lines += ["", f"Searched {s['candidates']:,} configurations ({', '.join(s['dimensions'])}): {s['screened_ok']:,} "
                  f"passed the screen, {s['finalists']} simulated."
              + (f" Left out for want of a price: {', '.join(s['unpriced_gpus'])} (give one with --price GPU=USD)."
                 if s["unpriced_gpus"] else "")]
    return "\n".join(lines)
