"""Widgets and facts of the deep dive "Economics of inference" (docs/deep-dives/economics.md).

Training is paid once; inference is paid for every query, for as long as the
product lives (the AI Engineer workshop "Deep dive on LLM Inference at Scale" (Harshul Jain and Tanmay Sah): "GPT-3 training was a one-time cost of
$4.6M, while inference costs scale with every user and token"). The cost of a
query follows from what a replica sustains:

    cost per query = replica USD per hour / (3,600 x queries per second per replica x utilization)
    queries per second = output tokens per second / output tokens per query

Throughput comes from the roofline at saturation
(:func:`calc.roofline.max_throughput`, KV room from :func:`calc.memory.kv_capacity`),
prices from the catalog. The workshop's two "claims worth verifying" are checked
with the same calculators: a $36B profit drain if LLMs answered every search
(:func:`search_bill`), and PagedAttention lifting KV utilization from about 20%
to over 95% (:func:`kv_utilization`).

>>> q = query_cost("llama-3.1-70b", prompt_tokens=1024, output_tokens=256)
>>> round(q["usd_per_query"] * 100, 3), q["batch"]
(0.046, 256)
>>> round(gpt3_training()["gpu_years"])
355
"""

from __future__ import annotations

import functools
import inspect
from typing import Annotated

from calc.allocation import POLICIES, sharegpt_like_requests
from calc.catalog import get_gpu
from calc.economics import (
    CHAT_QUERIES_PER_DAY, GPT3, GPU, OUTPUT_TOKENS, PROMPT_TOKENS, QUIZ_OUTPUT_TOKENS, REPLICAS, SEARCH,
    break_even_days, daily_bill, days_of_bill, gpt3_training, kv_utilization, query_cost, search_bill,
    search_claim_inputs,
)
from calc.errors import CalcError
from calc.units import cents_to_usd, format_number, in_scale, ratio, usd_to_cents
from calc.widgets.charts import PALETTE, bar_chart, line_chart
from calc.widgets.framework import (
    Choice, FloatRange, IntRange, fact, fact_from, facts_of, output, table, view, widget,
)

__all__ = ["inference_bill", "search_claim", "paged_claim", "facts", "PAGED_PAPER"]

#: GPT-3's training, as the workshop quotes it. Compute: Brown et al. 2020 ("Language Models are Few-Shot
#: Learners", table D.1: 3.64E+03 petaflop/s-days for GPT-3 175B, which Lambda rounds to 3.14E23 FLOPs);
#: Lambda Labs' estimate (Chuan Li, "OpenAI's GPT-3 Language Model: A Technical Overview", 2020): 3.14E23 FLOPs
#: at a V100's theoretical 28 TFLOP/s is 355 GPU-years, $4.6M at the lowest cloud price they found.
#: ChatGPT's hardware bill in early 2023: about $700,000 a day (SemiAnalysis, 2023-02).
CHATGPT_USD_PER_DAY = 700_000
#: Share of KV memory holding token states, measured (Kwon et al., "Efficient Memory Management for Large
#: Language Model Serving with PagedAttention", SOSP 2023, figure 2).
PAGED_PAPER = {"max": 0.204, "pow2": 0.268, "oracle": 0.382, "paged": 0.963,
               "source": "Kwon et al., SOSP 2023, figure 2 (Orca (Max), Orca (Pow2), Orca (Oracle), vLLM)"}
POLICY_LABELS = {"max": "reserve the maximum", "pow2": "reserve a power of two", "oracle": "reserve the true length",
                 "paged": "paged blocks (vLLM)"}

REPLICA_CHOICES = tuple((k, v["label"]) for k, v in REPLICAS.items())
_SAMPLE_MEANS = inspect.signature(sharegpt_like_requests).parameters
#: Shortest maximum length the paged-claim widget offers: the first 256-token step that holds the ShareGPT-like
#: sample's mean answer (a shorter one cannot draw that sample; calc.allocation refuses it).
MIN_PAGED_CLAIM_LEN = -(-max(_SAMPLE_MEANS["mean_prompt_tokens"].default,
                             _SAMPLE_MEANS["mean_output_tokens"].default) // 256) * 256
DAYS = 60


_SUPERSCRIPT = str.maketrans("0123456789-", "⁰¹²³⁴⁵⁶⁷⁸⁹⁻")


def _scientific(value: float) -> str:
    """A number as prose writes it in powers of ten.

    >>> _scientific(3.14e23)
    '3.14 × 10²³'
    """
    mantissa, exponent = f"{value:.3g}".split("e")
    return f"{mantissa} × 10{str(int(exponent)).translate(_SUPERSCRIPT)}"


# --------------------------------------------------------------------------- widgets


@widget
def inference_bill(
    replica: Annotated[str, Choice(REPLICA_CHOICES, label="Replica")] = "llama-3.1-70b",
    prompt_tokens: Annotated[int, IntRange(1, 200_000, 128, "tokens", label="Prompt per query")] = PROMPT_TOKENS,
    output_tokens: Annotated[int, IntRange(1, 100_000, 50, "tokens", label="Answer per query")] = OUTPUT_TOKENS,
    queries_per_day_m: Annotated[float, FloatRange(0.01, 100_000, 0.1, "million", label="Queries per day")] = 10.0,
    usd_per_gpu_hour: Annotated[float, FloatRange(0, 100, 0.01, "USD", label="Price per GPU-hour")]
    = get_gpu(GPU).price_usd_per_hour,
    utilization: Annotated[float, FloatRange(0.05, 1.0, 0.05, label="Average utilization of the GPUs paid for")] = 1.0,
):
    """Cost per query, the daily inference bill, and when it overtakes GPT-3's one-time training cost."""
    q = query_cost(replica, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                   usd_per_gpu_hour=usd_per_gpu_hour, utilization=utilization)
    per_day = q["usd_per_query"] * queries_per_day_m * 1e6
    training = gpt3_training()["usd"]
    days = break_even_days(q["usd_per_query"], queries_per_day_m * 1e6) if per_day > 0 else None
    horizon = max(DAYS, int(min(days or DAYS, 3650) * 2))
    axis = list(range(0, horizon + 1, max(1, horizon // 30)))
    chart = line_chart(
        "Training once against inference every day", "days in production", "cumulative USD (millions)", {
            "GPT-3 training (paid once)": (axis, [training / 1e6] * len(axis)),
            "inference": (axis, [per_day * d / 1e6 for d in axis]),
        }, summary=(f"At {format_number(queries_per_day_m)} million queries a day the inference bill is "
                    f"${per_day:,.0f} a day" + (
                        f" and passes the ${format_number(training / 1e6)}M training bill after "
                        f"{format_number(days)} days."
                                                 if days else ".")))
    chart["data"][0]["line"] = {"color": "#757575", "width": 2, "dash": "dash"}
    chart["data"][1]["line"] = {"color": PALETTE[5], "width": 3}
    cents = q["usd_per_query"] * 100
    return view(
        outputs=[
            output("tokens_per_s", f"Output tokens/s per replica ({q['gpus']} GPUs)", q["output_tokens_per_s"],
                   "tokens/s", text=f"{format_number(q['output_tokens_per_s'])} (batch {q['batch']})"),
            output("usd_per_million", "Per million output tokens", q["usd_per_million_output_tokens"], "USD",
                   text=f"${q['usd_per_million_output_tokens']:,.2f}"),
            output("cents_per_query", "Per query", cents, "cents", text=f"{format_number(cents)} ¢"),
            output("usd_per_day", "Inference bill per day", per_day, "USD", text=f"${per_day:,.0f}"),
            output("break_even_days", "Days until it exceeds GPT-3's training cost", days or 0, "days",
                   text="never (free GPUs)" if days is None else f"{format_number(days)} days"),
        ],
        figures={"bill": chart},
    )


@widget
def search_claim(
    replica: Annotated[str, Choice(REPLICA_CHOICES, label="Model answering")] = "llama-3.1-70b",
    output_tokens: Annotated[int, IntRange(1, 100_000, 50, "tokens", label="Answer per search")]
    = SEARCH["chatgpt_output_tokens"],
    prompt_tokens: Annotated[int, IntRange(1, 200_000, 128, "tokens", label="Prompt per search")] = PROMPT_TOKENS,
    queries_per_year_t: Annotated[float, FloatRange(0.01, 100, 0.1, "trillion", label="Searches per year")]
    = SEARCH["queries_2022"] / 1e12,
    usd_per_gpu_hour: Annotated[float, FloatRange(0, 100, 0.01, "USD", label="Price per GPU-hour")]
    = get_gpu(GPU).price_usd_per_hour,
    utilization: Annotated[float, FloatRange(0.05, 1.0, 0.05, label="Average utilization")] = 1.0,
):
    """The '$36B profit drain' claim: the yearly bill of an LLM answer on every search, from the calculators."""
    q = query_cost(replica, prompt_tokens=prompt_tokens, output_tokens=output_tokens,
                   usd_per_gpu_hour=usd_per_gpu_hour, utilization=utilization)
    bill = search_bill(q["usd_per_query"], queries_per_year_t * 1e12)
    inputs = search_claim_inputs()
    cents = q["usd_per_query"] * 100
    chart = bar_chart("Yearly bill of LLM answers", ["the claim", "this calculation"], "USD billions",
                      {"cost": [SEARCH["claim_usd"] / 1e9, bill / 1e9]},
                      summary=f"The claim: ${SEARCH['claim_usd'] / 1e9:g}B a year; this calculation: "
                              f"${format_number(bill / 1e9)}B.")
    chart["layout"]["showlegend"] = False
    verdict = (f"{format_number(bill / SEARCH['claim_usd'])}× the claim; the search margin "
               f"({format_number(inputs['margin_cents'])} ¢) "
               f"{'covers' if cents <= inputs['margin_cents'] else 'does not cover'} "
               f"{format_number(cents)} ¢ a query")
    return view(
        outputs=[
            output("cents_per_query", "Cost per search answered", cents, "cents", text=f"{format_number(cents)} ¢"),
            output("bill", "Per year", bill, "USD", text=f"${format_number(bill / 1e9)}B"),
            output("verdict", "Against $36B and the margin", bill / SEARCH["claim_usd"], "", text=verdict),
            output("implied_volume", "Searches a year behind the $36B", inputs["implied_queries_per_year"], "",
                   text=f"{format_number(inputs['implied_queries_per_year'] / 1e12)} trillion"),
        ],
        figures={"bill": chart},
    )


@widget
def paged_claim(
    max_model_len: Annotated[int, IntRange(MIN_PAGED_CLAIM_LEN, 32_768, 256, "tokens",
                                           label="Maximum length reserved")] = 2_048,
    requests: Annotated[int, IntRange(100, 5_000, 100, "requests", label="ShareGPT-like requests")] = 2_000,
    seed: Annotated[int, IntRange(0, 1_000_000, 1, label="Seed")] = 0,
):
    """'PagedAttention lifts KV utilization from ~20% to over 95%': calc's allocation model beside the paper."""
    shares = kv_utilization(max_model_len=max_model_len, requests=requests, seed=seed)
    labels = [POLICY_LABELS[p] for p in POLICIES]
    chart = bar_chart("Share of KV memory holding tokens", labels, "share", {
        "calc (reservation and last-block waste)": [shares[p] for p in POLICIES],
        "measured in the vLLM paper": [PAGED_PAPER[p] for p in POLICIES],
    }, summary="; ".join(f"{POLICY_LABELS[p]}: calc {shares[p]:.0%}, paper {PAGED_PAPER[p]:.1%}"
                         for p in POLICIES) + ".")
    chart["layout"]["barmode"] = "group"
    chart["layout"]["yaxis"]["tickformat"] = ".0%"
    return view(
        outputs=[
            output("max", "Reserving the maximum (calc / paper)", shares["max"], "",
                   text=f"{shares['max']:.0%} / {PAGED_PAPER['max']:.1%}"),
            output("oracle", "Reserving the true length (calc / paper)", shares["oracle"], "",
                   text=f"{shares['oracle']:.0%} / {PAGED_PAPER['oracle']:.1%}"),
            output("paged", "Paged blocks (calc / paper)", shares["paged"], "",
                   text=f"{shares['paged']:.1%} / {PAGED_PAPER['paged']:.1%}"),
        ],
        figures={"shares": chart},
        tables={"policies": table(["policy", "calc", "paper"],
                                  [[POLICY_LABELS[p], f"{shares[p]:.1%}", f"{PAGED_PAPER[p]:.1%}"] for p in POLICIES],
                                  caption=PAGED_PAPER["source"])},
    )


# --------------------------------------------------------------------------- facts
#
# Each fact is computed alone when the page names it. The page states some orderings in words; the cached
# inputs behind those facts check them, so the build fails (and the prose is reviewed) if calc ever disagrees.

@functools.cache
def _training() -> dict:
    return gpt3_training()


@functools.cache
def _query(replica: str, output_tokens: int = OUTPUT_TOKENS) -> dict:
    return query_cost(replica, output_tokens=output_tokens)


def _chat() -> dict:
    return _query("llama-3.1-70b")


@functools.cache
def _inputs() -> dict:
    return search_claim_inputs()


@functools.cache
def _search() -> dict:
    """The three search answers the page prices: 70B long and short, 405B long; checked to straddle the margin."""
    long70 = _query("llama-3.1-70b", SEARCH["chatgpt_output_tokens"])
    short70 = _query("llama-3.1-70b", SEARCH["bing_output_tokens"])
    long405 = _query("llama-3.1-405b", SEARCH["chatgpt_output_tokens"])
    margin_usd = cents_to_usd(_inputs()["margin_cents"])
    if not (long405["usd_per_query"] > margin_usd > long70["usd_per_query"] > short70["usd_per_query"]):
        raise CalcError("the search costs no longer straddle the search margin as the page says; review it", "search")
    return {"long70": long70, "short70": short70, "long405": long405}


@functools.cache
def _longer() -> dict:
    """The quiz's query with twice the answer; checked to cost under half as much again."""
    longer = _query("llama-3.1-70b", QUIZ_OUTPUT_TOKENS)
    if not ratio(longer["usd_per_query"], _chat()["usd_per_query"]) < 1.5:
        raise CalcError("doubling the answer no longer raises the cost per query by under half; review the quiz",
                        "output_tokens")
    return longer


@functools.cache
def _shares() -> dict:
    """Calc's KV utilization per allocation policy; checked to keep the claim's shape (paged over 95%, max
    under 30%)."""
    shares = kv_utilization()
    if shares["paged"] < 0.95 or shares["max"] > 0.3:
        raise CalcError("the allocation model no longer reproduces the claim's shape; review the page",
                        "kv_utilization")
    return shares


def _billions(usd: float) -> str:
    return f"${format_number(in_scale(usd, 'billion'))}B"


def _cents(query: dict) -> str:
    return f"{format_number(usd_to_cents(query['usd_per_query']))} ¢"


def _bill(answer: str, queries: str) -> str:
    """The yearly bill of one priced search answer over the implied volume or Morgan Stanley's 2022 count."""
    volume = _inputs()["implied_queries_per_year"] if queries == "implied" else SEARCH["queries_2022"]
    return _billions(search_bill(_search()[answer]["usd_per_query"], volume))


@fact
def gpu_years() -> str:
    """>>> gpu_years(), implied_volume_t(), paged_calc()
    ('355', '10', '98.5%')
    """
    return format_number(round(_training()["gpu_years"]))


@fact
def implied_volume_t() -> str:
    return format_number(in_scale(_inputs()["implied_queries_per_year"], "trillion"))


@fact
def paged_calc() -> str:
    return f"{_shares()['paged']:.1%}"


_FACTS = {
    "gpt3_flops": lambda: _scientific(_training()["flops"]),
    "gpt3_pf_days": lambda: f"{GPT3['petaflop_s_days']:,}",
    "gpt3_usd": lambda: f"${format_number(in_scale(GPT3['training_usd'], 'million'))}M",
    "v100_tflops": lambda: format_number(in_scale(GPT3["v100_flops_per_s"], "trillion")),
    "gpu_hours_m": lambda: format_number(in_scale(_training()["gpu_hours"], "million")),
    "implied_price": lambda: f"${_training()['implied_usd_per_gpu_hour']:.2f}",
    "gpu_price": lambda: f"${get_gpu(GPU).price_usd_per_hour:.2f}",
    "gpu_price_date": lambda: get_gpu(GPU).price_date,
    "chat_tokens_per_s": lambda: format_number(_chat()["output_tokens_per_s"]),
    "chat_batch": lambda: str(_chat()["batch"]),
    "chat_usd_per_million": lambda: f"${_chat()['usd_per_million_output_tokens']:,.2f}",
    "chat_cents": lambda: _cents(_chat()),
    "chat_per_day": lambda: f"${daily_bill(_chat()['usd_per_query'], CHAT_QUERIES_PER_DAY):,.0f}",
    "chat_days": lambda: format_number(break_even_days(_chat()["usd_per_query"], CHAT_QUERIES_PER_DAY)),
    "chatgpt_per_day": lambda: f"${CHATGPT_USD_PER_DAY:,}",
    "chatgpt_days": lambda: format_number(days_of_bill(GPT3["training_usd"], CHATGPT_USD_PER_DAY)),
    "search_cost": lambda: f"{SEARCH['cost_cents']:g} ¢",
    "search_revenue": lambda: f"{SEARCH['revenue_cents']:g} ¢",
    "llm_search_cost": lambda: f"{SEARCH['llm_cost_cents']:g} ¢",
    "extra_cents": lambda: f"{format_number(_inputs()['extra_cents'])} ¢",
    "margin_cents": lambda: f"{format_number(_inputs()['margin_cents'])} ¢",
    "implied_qps_k": lambda: format_number(in_scale(_inputs()["implied_queries_per_s"], "thousand")),
    "ms_volume_t": lambda: format_number(in_scale(SEARCH["queries_2022"], "trillion")),
    "volume_ratio": lambda: format_number(_inputs()["morgan_stanley_ratio"]),
    "long_tokens": lambda: f"{SEARCH['chatgpt_output_tokens']:,}",
    "short_tokens": lambda: f"{SEARCH['bing_output_tokens']:,}",
    "long70_cents": lambda: _cents(_search()["long70"]),
    "long70_implied": lambda: _bill("long70", "implied"),
    "long70_ms": lambda: _bill("long70", "morgan_stanley"),
    "short70_cents": lambda: _cents(_search()["short70"]),
    "short70_ms": lambda: _bill("short70", "morgan_stanley"),
    "long405_cents": lambda: _cents(_search()["long405"]),
    "long405_implied": lambda: _bill("long405", "implied"),
    "long405_ms": lambda: _bill("long405", "morgan_stanley"),
    "quiz_output": lambda: f"{OUTPUT_TOKENS:,}",
    "quiz_output_2x": lambda: f"{QUIZ_OUTPUT_TOKENS:,}",
    "quiz_prompt": lambda: f"{PROMPT_TOKENS:,}",
    "quiz_cents_2x": lambda: _cents(_longer()),
    "quiz_ratio": lambda: format_number(ratio(_longer()["usd_per_query"], _chat()["usd_per_query"])),
    "quiz_usd_per_million_2x": lambda: f"${_longer()['usd_per_million_output_tokens']:,.2f}",
    "max_calc": lambda: f"{_shares()['max']:.0%}",
    "oracle_calc": lambda: f"{_shares()['oracle']:.0%}",
    "paged_paper": lambda: f"{PAGED_PAPER['paged']:.1%}",
    "max_paper": lambda: f"{PAGED_PAPER['max']:.1%}",
    "pow2_paper": lambda: f"{PAGED_PAPER['pow2']:.1%}",
    "oracle_paper": lambda: f"{PAGED_PAPER['oracle']:.1%}",
}
for _fact_name, _fact_text in _FACTS.items():
    fact_from(_fact_name, _fact_text)

facts = facts_of(__name__)
