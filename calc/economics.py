"""Inference economics at scale: what training cost against what serving costs, a query's price, and the search claim.

The deep dive "Economics" (docs/deep-dives/economics.md) puts published figures
(GPT-3's training compute, SemiAnalysis' search estimates, the vLLM paper's KV
utilization) next to what :mod:`calc.roofline` and :mod:`calc.cost` say a
replica serves; every published input carries its source in the constant that
holds it."""

from __future__ import annotations

from functools import lru_cache

from calc.allocation import POLICIES, compare_allocation, sharegpt_like_requests
from calc.catalog import get_gpu, get_model
from calc.cost import usd_per_million_tokens
from calc.errors import check_choice, check_range
from calc.memory import check_tp, kv_capacity
from calc.roofline import max_throughput, step_coefficients
from calc.units import SECONDS_PER_HOUR

__all__ = [
    "GPU", "REPLICAS", "MAX_RUNNING", "PROMPT_TOKENS", "OUTPUT_TOKENS", "GPT3", "SEARCH", "gpt3_training",
    "QUIZ_OUTPUT_TOKENS", "CHAT_QUERIES_PER_DAY",
    "query_cost", "break_even_days", "daily_bill", "days_of_bill", "search_bill", "search_claim_inputs",
    "kv_utilization",
]


GPU = "h100-sxm-80gb"


#: Replicas offered (catalog models on H100s): the lesson's 8B, the running example, and a 405B in fp8 on a server.
REPLICAS = {
    "llama-3.1-8b": {"model": "llama-3.1-8b", "tp": 1, "weights": "bf16", "label": "Llama 3.1 8B, 1 × H100"},
    "llama-3.1-70b": {"model": "llama-3.1-70b", "tp": 4, "weights": "bf16", "label": "Llama 3.1 70B, 4 × H100"},
    "llama-3.1-405b": {"model": "llama-3.1-405b", "tp": 8, "weights": "fp8", "label": "Llama 3.1 405B fp8, 8 × H100"},
}


#: The engine's cap on running sequences (vLLM's default max_num_seqs).
MAX_RUNNING = 256


PROMPT_TOKENS, OUTPUT_TOKENS = 1_024, 256
#: The page's quiz doubles the answer: what does a query cost then?
QUIZ_OUTPUT_TOKENS = 2 * OUTPUT_TOKENS
#: The page's chat product: 10 million queries a day.
CHAT_QUERIES_PER_DAY = 10_000_000


GPT3 = {"flops": 3.14e23, "petaflop_s_days": 3_640, "v100_flops_per_s": 28e12, "training_usd": 4.6e6,
        "source": "Brown et al. 2020, table D.1; Lambda Labs, 'OpenAI's GPT-3 Language Model: A Technical "
                  "Overview', 2020; the AI Engineer workshop 'Deep dive on LLM Inference at Scale'"}


#: The search claim's inputs, as published. SemiAnalysis (Dylan Patel and Afzal Ahmad, "The Inference Cost Of
#: Search Disruption", 2023-02): a search costs Google 1.06 cents and earns 1.61; with ChatGPT-style answers
#: (about 2,000 output tokens) it would cost 1.42 cents; the extra cost over Google's volume, $36B a year.
#: Morgan Stanley (via Reuters, 2023-02): 3.3 trillion Google searches in 2022; SemiAnalysis: answers of Bing's
#: chat (84 samples) ran about 350 tokens.
SEARCH = {
    "cost_cents": 1.06, "revenue_cents": 1.61, "llm_cost_cents": 1.42, "claim_usd": 36e9,
    "chatgpt_output_tokens": 2_000, "bing_output_tokens": 350, "queries_2022": 3.3e12,
    "source": "SemiAnalysis, 'The Inference Cost Of Search Disruption' (2023-02, and its follow-up on Bing's "
              "answer lengths); Morgan Stanley via Reuters (2023-02-22): 3.3 trillion searches in 2022",
}


def gpt3_training() -> dict:
    """GPT-3's training compute and the V100-years and dollars the workshop's $4.6M stands for.

    FLOPs as Lambda counts them (3,640 petaflop/s-days x 1e15 x 86,400 = 3.145E23,
    rounded to 3.14E23); GPU-years at a V100's theoretical 28 TFLOP/s; the price per
    GPU-hour that $4.6M implies over those hours. Source: :data:`GPT3`.

    >>> t = gpt3_training()
    >>> f"{t['flops']:.3g}", round(t["gpu_years"]), round(t["implied_usd_per_gpu_hour"], 2)
    ('3.14e+23', 355, 1.48)
    """
    flops = GPT3["flops"]
    seconds = flops / GPT3["v100_flops_per_s"]
    hours = seconds / SECONDS_PER_HOUR
    return {"flops": flops, "gpu_hours": hours, "gpu_years": hours / (24 * 365.25), "usd": GPT3["training_usd"],
            "implied_usd_per_gpu_hour": GPT3["training_usd"] / hours}


@lru_cache(maxsize=64)
def _throughput(replica: str, prompt_tokens: int, output_tokens: int) -> dict:
    spec = REPLICAS[check_choice("replica", replica, tuple(REPLICAS))]
    model = get_model(spec["model"])
    tp = check_tp(model, spec["tp"])
    coef = step_coefficients(model, GPU, tp=tp, weights=spec["weights"])
    cap = kv_capacity(model, GPU, tp=tp, weights=spec["weights"])
    return max_throughput(coef, input_tokens=prompt_tokens, output_tokens=output_tokens,
                          kv_capacity_tokens=cap.kv_cache_tokens, max_running=MAX_RUNNING)


def query_cost(replica: str = "llama-3.1-70b", *, prompt_tokens: int = PROMPT_TOKENS,
               output_tokens: int = OUTPUT_TOKENS, usd_per_gpu_hour: float | None = None,
               utilization: float = 1.0) -> dict:
    """What one query costs on a replica kept busy ``utilization`` of the time (1.0: every GPU-hour used).

    ``queries_per_s`` = saturated output tokens/s (:func:`calc.roofline.max_throughput`)
    / ``output_tokens``; the replica's price is its GPUs x ``usd_per_gpu_hour`` (the
    catalog's dated H100 price when None). Source: the cost formula of
    :mod:`calc.cost` per query.

    >>> q = query_cost("llama-3.1-8b", output_tokens=350, prompt_tokens=1024)
    >>> round(q["output_tokens_per_s"]), round(q["usd_per_query"] * 100, 4)
    (5594, 0.0066)
    """
    prompt_tokens = check_range("prompt_tokens", prompt_tokens, 1, 1_000_000, integer=True)
    output_tokens = check_range("output_tokens", output_tokens, 1, 1_000_000, integer=True)
    utilization = float(check_range("utilization", utilization, 0.01, 1.0))
    spec = REPLICAS[check_choice("replica", replica, tuple(REPLICAS))]
    gpu = get_gpu(GPU)
    price = gpu.price_usd_per_hour if usd_per_gpu_hour is None else float(
        check_range("usd_per_gpu_hour", usd_per_gpu_hour, 0.0, 1000.0))
    run = _throughput(replica, prompt_tokens, output_tokens)
    tokens_per_s = run["output_tokens_per_s"] * utilization
    usd_per_hour = price * spec["tp"]
    queries_per_s = tokens_per_s / output_tokens
    return {"replica": spec["label"], "gpus": spec["tp"], "usd_per_gpu_hour": price, "usd_per_hour": usd_per_hour,
            "batch": run["batch"], "limited_by": run["limited_by"], "output_tokens_per_s": tokens_per_s,
            "queries_per_s": queries_per_s, "usd_per_query": usd_per_hour / (SECONDS_PER_HOUR * queries_per_s),
            "usd_per_million_output_tokens": usd_per_million_tokens(usd_per_hour, tokens_per_s)}


def break_even_days(usd_per_query: float, queries_per_day: float, training_usd: float = GPT3["training_usd"]) -> float:
    """Days of inference after which the inference bill exceeds a one-time training bill.

    ``training_usd / (usd_per_query x queries_per_day)``. Source: the workshop's
    framing (training paid once, inference per query).

    >>> round(break_even_days(0.001, 10e6), 1)
    460.0
    """
    usd_per_query = check_range("usd_per_query", usd_per_query, 1e-12, 1e6)
    queries_per_day = check_range("queries_per_day", queries_per_day, 1, 1e15)
    return training_usd / (usd_per_query * queries_per_day)


def daily_bill(usd_per_query: float, queries_per_day: float) -> float:
    """What serving ``queries_per_day`` costs in a day (USD).

    >>> daily_bill(0.00046, 10e6)
    4600.0
    """
    usd_per_query = check_range("usd_per_query", usd_per_query, 0, 1e6)
    return usd_per_query * check_range("queries_per_day", queries_per_day, 0, 1e15)


def days_of_bill(total_usd: float, usd_per_day: float) -> float:
    """How many days of a ``usd_per_day`` bill add up to ``total_usd`` (GPT-3's training in ChatGPT's days).

    >>> round(days_of_bill(GPT3["training_usd"], 700_000), 1)
    6.6
    """
    total_usd = check_range("total_usd", total_usd, 0, 1e15)
    return total_usd / check_range("usd_per_day", usd_per_day, 1e-12, 1e15)


def search_bill(usd_per_query: float, queries_per_year: float) -> float:
    """The yearly bill of answering ``queries_per_year`` at ``usd_per_query`` (USD).

    >>> search_bill(0.0036, 1e13) / 1e9
    36.0
    """
    usd_per_query = check_range("usd_per_query", usd_per_query, 0, 1e6)
    return usd_per_query * check_range("queries_per_year", queries_per_year, 0, 1e16)


def search_claim_inputs() -> dict:
    """What SemiAnalysis' published figures imply: the extra cost per query and the query volume behind $36B.

    Extra cost = LLM-search cost - today's search cost; implied volume = $36B / extra
    cost; the margin a search leaves = revenue - cost (the workshop's "less than
    0.5 cents" rule). Source: :data:`SEARCH`.

    >>> s = search_claim_inputs()
    >>> round(s["extra_cents"], 2), round(s["implied_queries_per_year"] / 1e12, 1), round(s["margin_cents"], 2)
    (0.36, 10.0, 0.55)
    """
    extra = SEARCH["llm_cost_cents"] - SEARCH["cost_cents"]
    implied = SEARCH["claim_usd"] / (extra / 100)
    return {"extra_cents": extra, "implied_queries_per_year": implied,
            "implied_queries_per_s": implied / (365 * 86_400),
            "margin_cents": SEARCH["revenue_cents"] - SEARCH["cost_cents"],
            "morgan_stanley_ratio": implied / SEARCH["queries_2022"]}


def kv_utilization(*, max_model_len: int = 2048, requests: int = 2000, seed: int = 0) -> dict[str, float]:
    """Share of reserved KV memory holding tokens under each allocation policy, on ShareGPT-like requests.

    Source: :func:`calc.allocation.compare_allocation` over
    :func:`calc.allocation.sharegpt_like_requests` (the vLLM paper's comparison);
    it counts reservation and last-block waste, not fragmentation between slabs,
    so its contiguous shares are upper bounds.

    >>> {k: round(v, 3) for k, v in kv_utilization().items()}
    {'max': 0.241, 'pow2': 0.464, 'oracle': 0.6, 'paged': 0.985}
    """
    reqs = sharegpt_like_requests(check_range("requests", requests, 1, 100_000, integer=True), seed=seed,
                                  max_model_len=max_model_len)
    result = compare_allocation(reqs, max_model_len=max_model_len)
    return {policy: result[policy].token_state_fraction for policy in POLICIES}
