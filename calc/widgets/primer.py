"""Widget and facts of the primer "How one request runs" (docs/primer.md).

One request on an idle replica, step by step, priced on the roofline of
:mod:`calc.roofline`:

* **prefill**: one engine step runs the whole prompt through the model at once
  and writes its KV cache; its last position gives the first answer token, so
  time to first token (TTFT) = the prefill step (:func:`calc.roofline.ttft_s`);
* **decode**: every further answer token is one more step of one new token that
  reads all the weights and the request's KV cache from HBM; the gap between
  two tokens is the inter-token latency (ITL, :func:`calc.roofline.itl_s`);
* end to end = TTFT + the sum of the ``answer - 1`` decode steps.

The decode step that produces answer token ``k + 1`` runs with the request
holding ``prompt + k`` tokens (the token just produced is its input).

The decode steps are not priced one by one: at batch 1 a step's time is linear
in the context between a few break points (:func:`decode_runs`), so the sum of
thousands of steps and the time of any token come in closed form.

>>> t = request_timeline_s()
>>> t["decode_steps"], round(t["itl_mean_s"] * 1000, 2)
(255, 15.3)
>>> abs(t["e2e_s"] - t["ttft_s"] - t["decode_s"]) < 1e-12
True
>>> request_timeline()["outputs"]["kv_held_bytes"]["text"]
'419 MB (400 MiB)'
"""

from __future__ import annotations

import functools
from typing import Annotated

from calc import memory, roofline
from calc.catalog import GPUS, MODELS
from calc.lesson import ANSWER_TOKENS, DECODE_CONTEXT_TOKENS, PROMPT_TOKENS, REQUEST_TOKENS
from calc.saturation import weights_read_s
from calc.units import KiB, format_bytes, format_number, per_second, ratio
from calc.widgets.charts import PALETTE
from calc.widgets.controls import Gpu, Model, tensor_parallel
from calc.widgets.framework import Choice, IntRange, fact, facts_of, output, table, view, widget
from calc.timeline import KV_DTYPE, MAX_ANSWER_TOKENS, MAX_PROMPT_TOKENS, elapsed_s, request_timeline_s
from calc.widgets.views import percent_text

__all__ = ["request_timeline", "timeline_figure", "facts"]

#: The timeline chart draws at most this many points (the line is straight between them).
MAX_POINTS = 240
#: A busier moment for the same replica: this many requests decoding together (the prose's comparison).
BUSY_BATCH = 64
#: A long prompt for the prose's "try this" (32K tokens: a long document).
LONG_PROMPT_TOKENS = 32_768

WEIGHT_CHOICES = tuple((w, w) for w in memory.WEIGHT_FORMATS)


def _ms(seconds: float) -> str:
    return f"{format_number(seconds * 1000)} ms"


def _time(seconds: float) -> str:
    return f"{format_number(seconds)} s" if seconds >= 1 else _ms(seconds)


def _sample(count: int, limit: int = MAX_POINTS) -> list[int]:
    """Indices ``0..count-1`` thinned to at most ``limit``, first and last kept.

    >>> _sample(5, 10), _sample(10, 4)
    ([0, 1, 2, 3, 4], [0, 3, 6, 9])
    """
    if count <= limit:
        return list(range(count))
    return sorted({round(i * (count - 1) / (limit - 1)) for i in range(limit)})


def timeline_figure(t: dict) -> dict:
    """A Plotly figure of one request: answer tokens out against time, the prefill shaded.

    Built by hand (a step line plus a shaded band and two notes), from the
    output of :func:`request_timeline_s`.

    >>> fig = timeline_figure(request_timeline_s(answer_tokens=3))
    >>> fig["data"][0]["y"], fig["data"][0]["line"]["shape"]
    ([0, 1, 2, 3], 'hv')
    """
    # Token i (i >= 1) is out after the prefill and i - 1 decode steps; only the drawn points are priced.
    keep = _sample(t["answer_tokens"] + 1)
    xs = [round(elapsed_s(t, i), 6) for i in keep]
    ys = list(keep)
    ttft, e2e = t["ttft_s"], t["e2e_s"]
    summary = (f"One request on {t['model'].name}, {t['weights']}, {t['tp']} x {t['gpu'].name}: the prefill of "
               f"{t['prompt_tokens']:,} prompt tokens takes {_time(ttft)} and gives the first token; then "
               f"{t['decode_steps']:,} decode steps of about {_ms(t['itl_mean_s'])} each bring the answer to "
               f"{t['answer_tokens']:,} tokens at {_time(e2e)}.")
    if not t["decode_steps"]:
        summary = (f"One request on {t['model'].name}: the prefill of {t['prompt_tokens']:,} prompt tokens takes "
                   f"{_time(ttft)} and gives the only answer token.")
    return {
        "data": [{
            "type": "scatter", "mode": "lines", "name": "answer tokens out", "x": xs, "y": ys,
            "line": {"color": PALETTE[0], "width": 2, "shape": "hv"},
            "hovertemplate": "%{y} tokens at %{x:.3f} s<extra></extra>",
        }],
        "layout": {
            "title": {"text": "One request: prefill, then one decode step per token", "font": {"size": 15}},
            "xaxis": {"title": {"text": "time since the request arrived (s)"}, "automargin": True,
                      "range": [0, round(e2e * 1.02, 6)]},
            "yaxis": {"title": {"text": "answer tokens out"}, "automargin": True, "rangemode": "tozero"},
            "shapes": [{
                "type": "rect", "xref": "x", "yref": "paper", "x0": 0, "x1": round(ttft, 6), "y0": 0, "y1": 1,
                "fillcolor": PALETTE[1], "opacity": 0.35, "line": {"width": 0}, "layer": "below",
            }],
            "annotations": [
                {"x": round(ttft, 6), "y": 1, "xref": "x", "yref": "y", "text": f"first token: {_time(ttft)}",
                 "showarrow": True, "arrowhead": 2, "ax": 110, "ay": -8, "font": {"size": 12}},
                {"x": round(e2e, 6), "y": t["answer_tokens"], "xref": "x", "yref": "y",
                 "text": f"last token: {_time(e2e)}", "showarrow": True, "arrowhead": 2, "ax": -110, "ay": -6,
                 "font": {"size": 12}},
            ],
            "showlegend": False,
            "margin": {"l": 60, "r": 20, "t": 50, "b": 40},
            "height": 340,
        },
        "summary": summary,
    }


def _row(name: str, d: dict) -> list[str]:
    flops = f"{format_number(d['flops'] / 1e12)} TFLOP" if d["flops"] >= 1e12 else f"{format_number(d['flops'] / 1e9)} GFLOP"
    return [name, f"{d['new_tokens']:,}", flops, format_bytes(d["bytes"]),
            f"{format_number(d['intensity_flops_per_byte'])}: {d['bound']}-bound", _ms(d["time_s"])]


@widget
def request_timeline(
    model: Model = "llama-3.1-70b",
    gpu: Gpu = "h100-sxm-80gb",
    tp: tensor_parallel("GPUs (tensor parallel)", unit="") = 4,
    weights: Annotated[str, Choice(WEIGHT_CHOICES, label="Weight precision")] = "bf16",
    prompt_tokens: Annotated[int, IntRange(1, MAX_PROMPT_TOKENS, 64, "tokens", label="Prompt")] = PROMPT_TOKENS,
    answer_tokens: Annotated[int, IntRange(1, MAX_ANSWER_TOKENS, 16, "tokens", label="Answer")] = ANSWER_TOKENS,
):
    """One request alone on a replica: TTFT, each decode step (ITL) and the end-to-end time."""
    t = request_timeline_s(model, gpu, tp=tp, weights=weights, prompt_tokens=prompt_tokens,
                           answer_tokens=answer_tokens)
    prefill, first, last = t["prefill"], t["decode_first"], t["decode_last"]
    decode_total = t["decode_s"]
    mean_itl = t["itl_mean_s"]
    ridge = prefill["ridge_flops_per_byte"]
    rows = [_row("Prefill", prefill)]
    if first is not None:
        steps = t["decode_steps"]
        rows.append(_row(f"Decode step 1 of {steps:,}", first))
        if steps > 1:
            rows.append(_row(f"Decode step {steps:,} of {steps:,}", last))
    held = t["kv_held_bytes"]
    gpus = "one GPU" if t["tp"] == 1 else f"each of {t['tp']} GPUs"
    outputs = [
        output("ttft_s", "Time to first token (the prefill)", t["ttft_s"], "s", text=_time(t["ttft_s"])),
        output("itl_first_s", "First decode step (ITL)", first["time_s"] if first else 0.0, "s",
               text=_ms(first["time_s"]) if first else "none: one-token answer"),
        output("itl_last_s", "Last decode step", last["time_s"] if last else 0.0, "s",
               text=_ms(last["time_s"]) if last else "none"),
        output("e2e_s", "End to end (last token)", t["e2e_s"], "s", text=_time(t["e2e_s"])),
        output("decode_share", "Share of the time spent decoding", decode_total / t["e2e_s"], "",
               text=f"{format_number(100 * decode_total / t['e2e_s'])}%"),
        output("tokens_per_s", "Answer speed the user sees", 1 / mean_itl if mean_itl else 0.0, "tokens/s",
               text=f"{format_number(1 / mean_itl)} tokens/s" if mean_itl else "one token"),
        output("prefill_intensity", "Prefill: FLOP per byte read", prefill["intensity_flops_per_byte"], "FLOP/B",
               text=f"{format_number(prefill['intensity_flops_per_byte'])} (ridge {format_number(ridge)}): "
                    f"{prefill['bound']}-bound"),
        output("decode_intensity", "Decode: FLOP per byte read",
               first["intensity_flops_per_byte"] if first else 0.0, "FLOP/B",
               text=(f"{format_number(first['intensity_flops_per_byte'])} (ridge {format_number(ridge)}): "
                     f"{first['bound']}-bound") if first else "no decode step"),
        output("kv_held_bytes", f"KV cache held at the end ({t['prompt_tokens'] + t['answer_tokens']:,} tokens)",
               held, "B", text=f"{format_bytes(held)} ({format_bytes(held, binary=True)})"),
    ]
    return view(
        outputs=outputs,
        figures={"timeline": timeline_figure(t)},
        tables={"steps": table(
            ["step", "tokens computed", "FLOPs", "HBM bytes read", "FLOP per byte", "time"], rows,
            caption=f"Work per GPU ({gpus}); the ridge point of the {t['gpu'].name} is {format_number(ridge)} "
                    f"FLOP per byte.")},
    )


# --------------------------------------------------------------------------------------- facts
# Each fact is computed alone when a page names it; the request's timeline once (cached).
@functools.cache
def _t() -> dict:
    return request_timeline_s()


def _weights_gpu() -> float:
    t = _t()
    return memory.weights_bytes_per_gpu(t["model"], t["tp"], t["weights"])


def _per_token() -> int:
    return memory.kv_bytes_per_token(_t()["model"], KV_DTYPE)


@functools.cache
def _coefficients():
    t = _t()
    return roofline.step_coefficients(t["model"], t["gpu"], tp=t["tp"], weights=t["weights"], kv_dtype=KV_DTYPE)


@functools.cache
def _itl_mid(batch: int) -> float:
    """The inter-token latency halfway through the answer, at ``batch`` running sequences."""
    return roofline.itl_s(_coefficients(), batch=batch, context_tokens=DECODE_CONTEXT_TOKENS)


@functools.cache
def _long_ttft() -> float:
    return roofline.ttft_s(_coefficients(), prompt_tokens=LONG_PROMPT_TOKENS)


def _tera(value: float) -> str:
    return format_number(value / 1e12)


def _kib(n_bytes: float) -> str:
    return format_number(n_bytes / KiB)


@fact
def prompt_tokens():
    """>>> prompt_tokens(), answer_tokens(), decode_steps(), kv_per_token()
    ('1,024', '256', '255', '327,680 bytes (320 KiB)')
    """
    return f"{_t()['prompt_tokens']:,}"


@fact
def answer_tokens():
    return f"{_t()['answer_tokens']:,}"


@fact
def decode_steps():
    return f"{_t()['decode_steps']:,}"


@fact
def ttft():
    return _time(_t()["ttft_s"])


@fact
def itl_first():
    return _ms(_t()["decode_first"]["time_s"])


@fact
def itl_mean():
    return _ms(_t()["itl_mean_s"])


@fact
def e2e():
    return _time(_t()["e2e_s"])


@fact
def decode_share():
    return percent_text(ratio(_t()["decode_s"], _t()["e2e_s"]))


@fact
def tokens_per_s():
    return f"{format_number(per_second(_t()['itl_mean_s']))}"


@fact
def weights_per_gpu():
    return format_bytes(_weights_gpu())


@fact
def hbm_bandwidth():
    return f"{_tera(_t()['gpu'].hbm_bytes_per_s)} TB/s"


@fact
def weights_read_floor():
    return _ms(weights_read_s(_weights_gpu(), _t()["gpu"].hbm_bytes_per_s))


@fact
def kv_per_token():
    return f"{_per_token():,} bytes ({_kib(_per_token())} KiB)"


@fact
def kv_per_token_per_gpu():
    return f"{memory.kv_bytes_per_token_per_gpu(_t()['model'], _t()['tp'], KV_DTYPE):,} bytes"


@fact
def request_tokens():
    return f"{REQUEST_TOKENS:,}"


@fact
def kv_held():
    return format_bytes(_t()["kv_held_bytes"])


@fact
def prefill_intensity():
    return format_number(_t()["prefill"]["intensity_flops_per_byte"])


@fact
def decode_intensity():
    return format_number(_t()["decode_first"]["intensity_flops_per_byte"])


@fact
def ridge():
    return format_number(_t()["prefill"]["ridge_flops_per_byte"])


@fact
def replica_kv_tokens():
    return f"{_t()['capacity'].kv_cache_tokens:,}"


@fact
def busy_batch():
    return f"{BUSY_BATCH}"


@fact
def itl_alone_mid():
    return _ms(_itl_mid(1))


@fact
def itl_busy_mid():
    return _ms(_itl_mid(BUSY_BATCH))


@fact
def busy_tokens_per_s():
    return format_number(ratio(BUSY_BATCH, _itl_mid(BUSY_BATCH)))


@fact
def busy_over_alone():
    return f"{format_number(ratio(_itl_mid(BUSY_BATCH), _itl_mid(1)))}"


@fact
def long_prompt_tokens():
    return f"{LONG_PROMPT_TOKENS:,}"


@fact
def long_ttft():
    return _time(_long_ttft())


@fact
def long_prompt_ratio():
    return format_number(ratio(LONG_PROMPT_TOKENS, _t()["prompt_tokens"]))


@fact
def long_ttft_ratio():
    return format_number(ratio(_long_ttft(), _t()["ttft_s"]))


facts = facts_of(__name__)
