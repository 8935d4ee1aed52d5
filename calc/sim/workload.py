"""The requests a simulated replica serves: when they arrive and how long they are.

Arrivals are Poisson (independent users), bursty (the same mean rate, with
gaps more variable than Poisson's), all at once (an offline benchmark, as
vLLM's ``benchmark_serving --request-rate inf``) or a closed loop of
``concurrency`` clients, each sending its next request when its previous one
finishes (vLLM's ``benchmark_serving --max-concurrency N``, NVIDIA AIPerf's
concurrency mode): their send times are set by the engine during the run
(:mod:`calc.sim.arrivals`), so here they are all 0 and only the lengths are drawn. Lengths are fixed, or drawn
from a long-tailed lognormal; ``"chat"`` is the lognormal fixed in advance from
the ShareGPT means the vLLM paper publishes (see :data:`CHAT_PROMPT_MEAN_TOKENS`).
Requests belong to classes (chat, long document, batch job, ...) with a share
of the traffic and an optional shared system prompt (the prefix that prefix
caching can reuse).

One seed drives it all, split into fixed-number sub-streams so that changing
the lengths never moves the arrival times (no ``hash()`` of strings anywhere).

>>> wl = Workload(arrival="poisson", rate_per_s=2.0, requests=3,
...               classes=(RequestClass(prompt_tokens=100, output_tokens=20),))
>>> [(r.rid, r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, seed=1, max_model_len=4096)]
[(0, 100, 20), (1, 100, 20), (2, 100, 20)]
>>> [r.arrival_ns for r in generate_requests(wl, seed=1, max_model_len=4096)]
[344089031, 428064933, 545728316]
"""

from __future__ import annotations

import bisect
import functools
import json
import math
import os
import random
from dataclasses import dataclass
from statistics import NormalDist

from calc.catalog.model import TOKENIZER_FAMILIES
from calc.errors import CalcError, check_range
from calc.units import NS_PER_S, bisect_increasing

__all__ = [
    "ARRIVALS",
    "CLOSED_LOOP",
    "MAX_CONCURRENCY",
    "LENGTH_KINDS",
    "CHAT_PROMPT_MEAN_TOKENS",
    "CHAT_OUTPUT_MEAN_TOKENS",
    "CHAT_LENGTHS_SOURCE",
    "CHAT_CV",
    "SHAREGPT_BENCH_PROMPT_MEAN_TOKENS",
    "SHAREGPT_BENCH_OUTPUT_MEAN_TOKENS",
    "SHAREGPT_BENCH_SOURCE",
    "SHAREGPT_FILTER",
    "SHAREGPT_QUANTILE_LEVELS",
    "SHAREGPT_PROMPT_QUANTILES",
    "SHAREGPT_OUTPUT_QUANTILES",
    "SHAREGPT_LENGTHS_PATH",
    "DEFAULT_TOKENIZER",
    "ShareGPTTable",
    "sharegpt_table",
    "tokenizer_of",
    "convert_sharegpt_means",
    "sharegpt_bench_means",
    "quantile_at",
    "quantile_mean",
    "quantile_scale_for_kept_mean",
    "SHAREGPT_CAP_TRIM_MAX",
    "sharegpt_scale_and_cap",
    "lognormal_params",
    "truncated_lognormal_mu",
    "hyperexponential_params",
    "RequestClass",
    "Workload",
    "Request",
    "substream",
    "check_class_fits",
    "generate_requests",
]

ARRIVALS = ("poisson", "bursty", "all-at-once", "closed-loop")
CLOSED_LOOP = "closed-loop"
#: Range of ``workload.concurrency`` (clients of a closed loop).
MAX_CONCURRENCY = 100_000
LENGTH_KINDS = ("fixed", "chat", "lognormal", "sharegpt")

# Published ShareGPT statistics: the vLLM paper's Fig. 11 prints the mean input
# and output lengths of the ShareGPT requests it serves (Kwon et al., "Efficient
# Memory Management for Large Language Model Serving with PagedAttention",
# SOSP 2023, Sec. 6.1, Fig. 11: input 161.31, output 337.99 tokens).
CHAT_PROMPT_MEAN_TOKENS = 161.31
CHAT_OUTPUT_MEAN_TOKENS = 337.99
CHAT_LENGTHS_SOURCE = (
    "ShareGPT means from Kwon et al. SOSP 2023 (vLLM paper), Fig. 11: input 161.31, output 337.99 tokens; "
    "lognormal with coefficient of variation 1 (an assumption: the paper gives means only; CV 1 is the "
    "exponential's, the maximum-entropy spread when only a mean is known), redrawn when prompt + output "
    "exceed max_model_len, as benchmark scripts drop such ShareGPT pairs"
)
# The paper publishes means only. The spread is fixed, before any result was
# seen, at the coefficient of variation of an exponential distribution (1.0),
# the maximum-entropy choice for a positive length with a known mean; the
# lognormal keeps the long right tail chat lengths show.
CHAT_CV = 1.0

# ShareGPT as the serving benchmarks sample it (vLLM's benchmark_serving / benchmark_throughput and
# sglang.bench_serving share the filter): conversations whose prompt or answer is under 4 tokens are dropped,
# and so are those whose prompt exceeds 1,024 tokens or whose prompt + answer exceed 2,048 (vLLM
# benchmarks/benchmark_dataset.py, ShareGPTDataset / is_valid_sequence; sglang/bench_serving.py,
# sample_sharegpt_requests). (min tokens, max prompt tokens, max prompt + answer tokens).
SHAREGPT_FILTER = (4, 1024, 2048)
# The means of such a sample with the Llama 3 tokenizer, as a run prints them: vLLM pull request #18566
# (2025-05-22), ``vllm bench serve`` on ShareGPT with meta-llama/Llama-3.1-8B-Instruct, 1,000 prompts:
# "Total input tokens: 229711", "Total generated tokens: 203068".
SHAREGPT_BENCH_PROMPT_MEAN_TOKENS = 229.711
SHAREGPT_BENCH_OUTPUT_MEAN_TOKENS = 203.068
SHAREGPT_BENCH_SOURCE = (
    "ShareGPT as benchmark_serving samples it: prompts and answers of at least 4 tokens, prompt at most 1,024, "
    "prompt + answer at most 2,048 (vLLM benchmark_dataset.py; sglang bench_serving.py); prompt and answer "
    "drawn from the dataset's own length quantiles under that filter with the Llama 3 tokenizer (measured by "
    "bench/sharegpt_lengths.py on 15,822 pairs of ShareGPT_V3_unfiltered_cleaned_split.json), each scaled to the "
    "sample's published mean (a run's total input and output tokens over its prompts; default the Llama 3 "
    "tokenizer's 229.711 / 203.068 from vLLM pull request #18566's 1,000-prompt run)"
)

#: The levels (0 to 1) at which :data:`SHAREGPT_PROMPT_QUANTILES` and :data:`SHAREGPT_OUTPUT_QUANTILES` are given:
#: every 2.5% of the body, finer in the tail, where the longest of a few hundred answers is drawn.
SHAREGPT_QUANTILE_LEVELS = tuple(i / 40 for i in range(39)) + (0.96, 0.97, 0.98, 0.99, 0.995, 0.998, 0.999, 1.0)

#: ShareGPT's length quantiles per tokenizer family, measured on the dataset by ``bench/sharegpt_lengths.py --write``.
SHAREGPT_LENGTHS_PATH = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "data",
                                     "sharegpt_lengths.json")
#: The tokenizer whose counts the lesson and the published ShareGPT means use (and the stand-in for a family with
#: no table of its own).
DEFAULT_TOKENIZER = "llama3"


def _load_sharegpt_tables(path: str = SHAREGPT_LENGTHS_PATH) -> dict:
    """The measured tables by tokenizer, checked against the levels and the filter calc uses."""
    with open(path, encoding="utf-8") as handle:
        data = json.load(handle)
    if tuple(data["levels"]) != SHAREGPT_QUANTILE_LEVELS or tuple(data["filter"]) != SHAREGPT_FILTER:
        raise CalcError(f"{path}: levels and filter must be calc's SHAREGPT_QUANTILE_LEVELS and SHAREGPT_FILTER; "
                        "rerun bench/sharegpt_lengths.py --write", "sharegpt_lengths")
    tables = data["tokenizers"]
    for name, table in tables.items():
        if name not in TOKENIZER_FAMILIES:
            raise CalcError(f"{path}: tokenizer must be one of {', '.join(TOKENIZER_FAMILIES)}; got {name!r}",
                            "tokenizer")
        for key in ("prompt_quantiles", "output_quantiles"):
            if len(table[key]) != len(SHAREGPT_QUANTILE_LEVELS):
                raise CalcError(f"{path}: {name}.{key} must hold one value per level", "sharegpt_lengths")
    return tables


_SHAREGPT_TABLES = _load_sharegpt_tables()

#: ShareGPT's prompt and answer lengths (tokens) at :data:`SHAREGPT_QUANTILE_LEVELS`, as the serving benchmarks
#: sample it (:data:`SHAREGPT_FILTER`), with the Llama 3 tokenizer: the ``llama3`` table of
#: ``calc/data/sharegpt_lengths.json``, measured on the dataset itself by ``bench/sharegpt_lengths.py`` (15,822 kept
#: first-turn pairs of ShareGPT_V3_unfiltered_cleaned_split.json; means 221.1 / 198.9, answer median 130, p99 772,
#: longest 1,857). Many answers are short (a quarter under 27 tokens) and the tail is short too: the longest of 200
#: answers is about the p99.5, 894 tokens. Other tokenizers' tables: :func:`sharegpt_table`.
SHAREGPT_PROMPT_QUANTILES = tuple(_SHAREGPT_TABLES[DEFAULT_TOKENIZER]["prompt_quantiles"])
SHAREGPT_OUTPUT_QUANTILES = tuple(_SHAREGPT_TABLES[DEFAULT_TOKENIZER]["output_quantiles"])


@dataclass(frozen=True)
class ShareGPTTable:
    """ShareGPT's lengths in one tokenizer's tokens: the quantile tables a ``sharegpt`` class draws from.

    ``tokenizer`` is the family asked for; ``measured_with`` the family whose counts the table holds (the same,
    or :data:`DEFAULT_TOKENIZER` standing in, said in ``note``); the means are the kept sample's (tokens).
    """

    tokenizer: str | None
    measured_with: str
    prompt_quantiles: tuple
    output_quantiles: tuple
    mean_prompt_tokens: float
    mean_output_tokens: float
    pairs_kept: int
    note: str = ""


def sharegpt_table(tokenizer: str | None = DEFAULT_TOKENIZER) -> ShareGPTTable:
    """ShareGPT's length quantiles counted with ``tokenizer`` (a :data:`calc.catalog.model.TOKENIZER_FAMILIES` key).

    The benchmarks count (and filter) with the served model's tokenizer, so each family has its own table, measured
    with the same filter and method (``bench/sharegpt_lengths.py``). A family with no table (no PyPI package ships
    its tokenizer model), or ``None`` (a model whose tokenizer is not known), gets the Llama 3 table with a note.
    Mistral's 32,000 pieces cut the same texts finer than Llama 3's 128,256 tokens: the median answer is 146
    tokens, not 130, and the kept answers average 15% more.

    >>> mistral, llama = sharegpt_table("mistral-v1"), sharegpt_table("llama3")
    >>> mistral.output_quantiles[20], llama.output_quantiles[20], round(mistral.mean_output_tokens / llama.mean_output_tokens, 3)
    (146, 130, 1.151)
    >>> sharegpt_table("llama2").measured_with, sharegpt_table("llama2").note
    ('llama3', 'no ShareGPT length table for tokenizer llama2 (its tokenizer model is not on PyPI): the Llama 3 table stands in')
    >>> sharegpt_table("gpt2")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: tokenizer must be one of llama3, llama2, mistral-v1, qwen2, deepseek-v3, or null (not known); got 'gpt2'
    """
    if tokenizer is not None and tokenizer not in TOKENIZER_FAMILIES:
        raise CalcError(f"tokenizer must be one of {', '.join(TOKENIZER_FAMILIES)}, or null (not known); "
                        f"got {tokenizer!r}", "tokenizer")
    note = ""
    measured_with = tokenizer
    if tokenizer is None:
        measured_with, note = DEFAULT_TOKENIZER, "the model's tokenizer is not known: the Llama 3 table stands in"
    elif tokenizer not in _SHAREGPT_TABLES:
        measured_with = DEFAULT_TOKENIZER
        note = (f"no ShareGPT length table for tokenizer {tokenizer} (its tokenizer model is not on PyPI): "
                "the Llama 3 table stands in")
    t = _SHAREGPT_TABLES[measured_with]
    return ShareGPTTable(tokenizer, measured_with, tuple(t["prompt_quantiles"]), tuple(t["output_quantiles"]),
                         t["mean_prompt_tokens"], t["mean_output_tokens"], t["pairs_kept"], note)


def tokenizer_of(model) -> str | None:
    """The tokenizer family of a model (a catalog key, a config.json, or a :class:`calc.catalog.Model`).

    >>> tokenizer_of("mixtral-8x7b"), tokenizer_of("llama-3.1-70b")
    ('mistral-v1', 'llama3')
    """
    from calc.catalog import get_model  # the catalog is only needed here

    return get_model(model).tokenizer


def convert_sharegpt_means(prompt_mean_tokens: float, output_mean_tokens: float, from_tokenizer: str | None,
                           to_tokenizer: str | None) -> tuple[float, float]:
    """ShareGPT sample means counted with ``from_tokenizer``, in ``to_tokenizer``'s tokens.

    Scaled by the ratio of the two tokenizers' kept means on the same pairs (:func:`sharegpt_table`), prompt and
    answer apart. Used when a run published its means with another model's tokenizer (a Mixtral row whose means
    are the Llama 3 run's).

    >>> [round(x, 1) for x in convert_sharegpt_means(229.711, 203.068, "llama3", "mistral-v1")]
    [253.6, 233.8]
    >>> convert_sharegpt_means(229.711, 203.068, "llama3", "llama3")
    (229.711, 203.068)
    """
    prompt_mean_tokens = check_range("prompt_mean_tokens", prompt_mean_tokens, 1e-9, _MAX_TOKENS)
    output_mean_tokens = check_range("output_mean_tokens", output_mean_tokens, 1e-9, _MAX_TOKENS)
    source, target = sharegpt_table(from_tokenizer), sharegpt_table(to_tokenizer)
    if source.measured_with == target.measured_with:
        return prompt_mean_tokens, output_mean_tokens
    return (prompt_mean_tokens * target.mean_prompt_tokens / source.mean_prompt_tokens,
            output_mean_tokens * target.mean_output_tokens / source.mean_output_tokens)


def sharegpt_bench_means(tokenizer: str | None = DEFAULT_TOKENIZER) -> tuple[float, float]:
    """The benchmarks' ShareGPT sample means (prompt, answer) in ``tokenizer``'s tokens.

    The published run's Llama 3 means (:data:`SHAREGPT_BENCH_PROMPT_MEAN_TOKENS`, :data:`SHAREGPT_BENCH_OUTPUT_MEAN_TOKENS`)
    as they are for Llama 3, converted by :func:`convert_sharegpt_means` for the others.

    >>> sharegpt_bench_means("llama3")
    (229.711, 203.068)
    >>> [round(x, 1) for x in sharegpt_bench_means("qwen2")]
    [228.2, 207.1]
    """
    return convert_sharegpt_means(SHAREGPT_BENCH_PROMPT_MEAN_TOKENS, SHAREGPT_BENCH_OUTPUT_MEAN_TOKENS,
                                  DEFAULT_TOKENIZER, tokenizer)


_MAX_TOKENS = 10_000_000
_MAX_REQUESTS = 10_000_000
_REDRAWS = 1_000

# Fixed sub-stream numbers: one seed, independent streams per purpose.
STREAM_ARRIVALS = 1
STREAM_CLASSES = 2
STREAM_LENGTHS = 3
STREAM_PREFIXES = 4


def substream(seed: int, stream: int) -> random.Random:
    """An independent ``random.Random`` for one purpose, derived from the run's seed by integers only.

    Seeding with an int is the same in every CPython (and in Pyodide), unlike
    seeding with a string's ``hash()``.

    >>> substream(7, 1).random() == substream(7, 1).random()
    True
    >>> substream(7, 1).random() == substream(7, 2).random()
    False
    """
    return random.Random(seed * 1_000_003 + stream)


def lognormal_params(mean: float, cv: float) -> tuple[float, float]:
    """``(mu, sigma)`` of the lognormal with this mean and coefficient of variation.

    ``sigma**2 = ln(1 + cv**2)`` and ``mu = ln(mean) - sigma**2 / 2`` (the
    lognormal's moments; e.g. Johnson, Kotz and Balakrishnan, *Continuous
    Univariate Distributions*, vol. 1, ch. 14). The median is ``exp(mu)``.

    >>> mu, sigma = lognormal_params(CHAT_OUTPUT_MEAN_TOKENS, CHAT_CV)
    >>> round(math.exp(mu), 1), round(sigma, 4)
    (239.0, 0.8326)
    """
    mean = check_range("mean_tokens", mean, 1e-9, _MAX_TOKENS)
    cv = check_range("cv", cv, 0.0, 100.0)
    sigma2 = math.log1p(cv * cv)
    return math.log(mean) - sigma2 / 2.0, math.sqrt(sigma2)


def hyperexponential_params(rate_per_s: float, burstiness: float) -> tuple[float, float, float]:
    """Two-phase hyperexponential gaps with mean ``1/rate`` and squared CV ``burstiness``.

    Returns ``(p, rate_a, rate_b)``: a gap is exponential at ``rate_a`` with
    probability ``p``, else at ``rate_b``. The "balanced means" fit
    ``p = (1 + sqrt((c2 - 1)/(c2 + 1))) / 2``, ``rate_a = 2 p rate``,
    ``rate_b = 2 (1 - p) rate`` (Whitt, "Approximating a point process by a
    renewal process", Operations Research 1982; standard in queueing texts).
    ``burstiness`` 1 is Poisson; 4 means gaps twice as variable.

    >>> p, a, b = hyperexponential_params(10.0, 4.0)
    >>> round(p, 4), round(p / a + (1 - p) / b, 6)   # the mean gap stays 1/rate
    (0.8873, 0.1)
    """
    rate = check_range("rate_per_s", rate_per_s, 1e-9, 1e9)
    c2 = check_range("burstiness", burstiness, 1.0, 1000.0)
    p = (1.0 + math.sqrt((c2 - 1.0) / (c2 + 1.0))) / 2.0
    if p >= 1.0:  # only at the top of the range, where the square root rounds to 1
        p = 1.0 - 1e-12
    return p, 2.0 * p * rate, 2.0 * (1.0 - p) * rate


def truncated_lognormal_mu(mean: float, sigma: float, low: float, high: float) -> float:
    """The ``mu`` of a lognormal of shape ``sigma`` whose mean, kept to ``[low, high]``, is ``mean``.

    The mean of a lognormal restricted to ``[a, b]`` is
    ``exp(mu + s**2 / 2) (Phi((ln b - mu - s**2) / s) - Phi((ln a - mu - s**2) / s))
    / (Phi((ln b - mu) / s) - Phi((ln a - mu) / s))`` (Johnson, Kotz and Balakrishnan, vol. 1, ch. 14,
    truncated moments); it rises with ``mu``, so ``mu`` is found by bisection. Used to draw lengths whose
    *filtered* sample has a published mean (:data:`SHAREGPT_FILTER`).

    >>> sigma = lognormal_params(1.0, CHAT_CV)[1]
    >>> mu = truncated_lognormal_mu(229.711, sigma, 4, 1024)
    >>> round(mu, 2), math.exp(mu + sigma ** 2 / 2) > 229.711   # the untruncated mean is above the kept one
    (5.18, True)
    """
    mean = check_range("mean_tokens", mean, 1e-9, _MAX_TOKENS)
    sigma = check_range("sigma", sigma, 1e-6, 100.0)
    low = check_range("low", low, 1e-9, _MAX_TOKENS)
    high = check_range("high", high, low * (1 + 1e-9), _MAX_TOKENS)
    if not low < mean < high:
        raise CalcError(f"mean_tokens must lie strictly between {low:g} and {high:g}; got {mean!r}", "mean_tokens")
    cdf = NormalDist().cdf
    la, lb, s2 = math.log(low), math.log(high), sigma * sigma

    def kept_mean(mu):
        kept = cdf((lb - mu) / sigma) - cdf((la - mu) / sigma)
        if kept <= 1e-300:
            return high if mu > lb else low
        return math.exp(mu + s2 / 2) * (cdf((lb - mu - s2) / sigma) - cdf((la - mu - s2) / sigma)) / kept

    return bisect_increasing(kept_mean, mean, la - 10 * sigma, lb + 10 * sigma, 200)


@dataclass(frozen=True)
class RequestClass:
    """One kind of request: its share of traffic, its lengths and its shared system prompt.

    ``lengths`` is ``"fixed"`` (exactly ``prompt_tokens`` in, ``output_tokens``
    out), ``"lognormal"`` (those two as means, coefficient of variation
    :data:`CHAT_CV`), ``"chat"`` (the ShareGPT lognormal of
    :data:`CHAT_LENGTHS_SOURCE`; ``prompt_tokens``/``output_tokens`` unused) or
    ``"sharegpt"`` (ShareGPT as a serving benchmark samples it, :data:`SHAREGPT_BENCH_SOURCE`:
    ``prompt_tokens``/``output_tokens`` are the filtered sample's means).
    ``prefix_tokens`` of system prompt are put in front of every prompt of the
    class; ``prefix_variants`` distinct such prompts are drawn uniformly (one
    per tenant, say), so a prefix cache may have to hold several.

    >>> RequestClass(name="doc", share=0.2, prompt_tokens=8000, output_tokens=300).mean_prompt_tokens()
    8000.0
    >>> RequestClass(lengths="chat", prefix_tokens=100).mean_prompt_tokens()
    261.31
    """

    name: str = "chat"
    share: float = 1.0
    lengths: str = "fixed"
    prompt_tokens: int = 1024
    output_tokens: int = 256
    prefix_tokens: int = 0
    prefix_variants: int = 1

    def mean_prompt_tokens(self) -> float:
        """Mean prompt length before redraws, system prompt included (tokens)."""
        body = CHAT_PROMPT_MEAN_TOKENS if self.lengths == "chat" else float(self.prompt_tokens)
        return self.prefix_tokens + body

    def mean_output_tokens(self) -> float:
        """Mean answer length before redraws (tokens).

        >>> RequestClass(lengths="chat").mean_output_tokens()
        337.99
        """
        return CHAT_OUTPUT_MEAN_TOKENS if self.lengths == "chat" else float(self.output_tokens)


@dataclass(frozen=True)
class Workload:
    """The traffic: arrival process, how many requests (or for how long), and the request classes.

    ``rate_per_s`` is the mean arrival rate (unused for ``all-at-once``); the
    default, 5 requests/s, is about half of what the lesson's replica (Llama 3.1
    70B on four H100s, 1,024 tokens in, 256 out) sustains on the roofline, so
    "twice the traffic" saturates it;
    ``duration_s``, when set, stops arrivals at that simulated time even if
    fewer than ``requests`` have come; ``burstiness`` is the squared
    coefficient of variation of the gaps for ``bursty`` arrivals.
    ``concurrency`` is the number of clients of a ``closed-loop`` workload
    (each sends its next request ``think_time_s`` after its previous one
    finished; ``duration_s`` stops the sending); unused by the other kinds.

    >>> Workload().classes[0].prompt_tokens
    1024
    """

    arrival: str = "poisson"
    rate_per_s: float = 5.0
    requests: int = 1000
    duration_s: float | None = None
    burstiness: float = 4.0
    classes: tuple[RequestClass, ...] = (RequestClass(),)
    concurrency: int | None = None
    think_time_s: float = 0.0


class Request:
    """One request as the engine sees it (plain slots, for speed).

    ``prompt_tokens`` includes the shared system prompt (``prefix_tokens`` of
    it, identical for every request with the same ``prefix_key``);
    ``prefix_key`` is ``-1`` when there is none; ``ttft_ns`` is its time to
    first token once the engine has it (-1 before).

    >>> r = Request(0, 0, 1100, 50, 0, 3, 100)
    >>> r.prompt_tokens + r.output_tokens
    1150
    """

    __slots__ = ("rid", "arrival_ns", "prompt_tokens", "output_tokens", "class_index", "prefix_key", "prefix_tokens",
                 "ttft_ns")

    def __init__(self, rid, arrival_ns, prompt_tokens, output_tokens, class_index=0, prefix_key=-1, prefix_tokens=0):
        self.rid = rid
        self.arrival_ns = arrival_ns
        self.prompt_tokens = prompt_tokens
        self.output_tokens = output_tokens
        self.class_index = class_index
        self.prefix_key = prefix_key
        self.prefix_tokens = prefix_tokens
        self.ttft_ns = -1  # set by the latency sink at the first token (for the request's TPOT)

    def __repr__(self):
        return (f"Request(rid={self.rid}, arrival_ns={self.arrival_ns}, prompt_tokens={self.prompt_tokens}, "
                f"output_tokens={self.output_tokens}, class_index={self.class_index})")


def _arrival_times_ns(workload: Workload, rng: random.Random):
    """Yield arrival times in integer nanoseconds (non-decreasing), at most ``requests`` of them."""
    limit_ns = None if workload.duration_s is None else round(workload.duration_s * NS_PER_S)
    if workload.arrival == CLOSED_LOOP:  # send times come from the run (calc.sim.arrivals); lengths as for any kind
        for _ in range(workload.requests):
            yield 0
        return
    if workload.arrival == "all-at-once":
        for _ in range(workload.requests):
            yield 0
        return
    log = math.log
    t_ns = 0
    if workload.arrival == "poisson":
        mean_gap_ns = NS_PER_S / workload.rate_per_s
        for _ in range(workload.requests):
            t_ns += round(-log(1.0 - rng.random()) * mean_gap_ns)
            if limit_ns is not None and t_ns > limit_ns:
                return
            yield t_ns
        return
    p, rate_a, rate_b = hyperexponential_params(workload.rate_per_s, workload.burstiness)
    gap_a_ns, gap_b_ns = NS_PER_S / rate_a, NS_PER_S / rate_b
    for _ in range(workload.requests):
        mean_gap_ns = gap_a_ns if rng.random() < p else gap_b_ns
        t_ns += round(-log(1.0 - rng.random()) * mean_gap_ns)
        if limit_ns is not None and t_ns > limit_ns:
            return
        yield t_ns


class _LengthSampler:
    """Draws (prompt body, output) token counts for one class; prefix added by the caller."""

    def __init__(self, cls: RequestClass, max_model_len: int, table: ShareGPTTable | None = None):
        self.kind = cls.lengths
        self.room = max_model_len - cls.prefix_tokens  # tokens left for body + output
        if self.kind == "fixed":
            self.fixed = (cls.prompt_tokens, cls.output_tokens)
            return
        mean_p = CHAT_PROMPT_MEAN_TOKENS if self.kind == "chat" else cls.prompt_tokens
        mean_o = CHAT_OUTPUT_MEAN_TOKENS if self.kind == "chat" else cls.output_tokens
        self.mu_p, self.sigma_p = lognormal_params(mean_p, CHAT_CV)
        self.mu_o, self.sigma_o = lognormal_params(mean_o, CHAT_CV)
        self.filter = None
        if self.kind == "sharegpt":
            # The dataset's own lengths (SHAREGPT_*_QUANTILES), scaled to the sample's means; the benchmark's
            # filter redraws what it would have dropped (rare: the quantiles are of the kept pairs).
            # The scales are set so that the kept means are the published ones (the answer's cap taken at
            # 2,048 less the mean prompt), as the filter keeps them.
            # The table is the model's tokenizer's (sharegpt_table): the benchmark counts and filters in its tokens.
            table = table or sharegpt_table(DEFAULT_TOKENIZER)
            self.prompt_quantiles, self.output_quantiles = table.prompt_quantiles, table.output_quantiles
            # A mean far above the dataset's stretches the benchmark's caps with the lengths (sharegpt_scale_and_cap):
            # the prompt's cap, the total's by as much, and the answer's room within it.
            least, most_prompt, most_total = SHAREGPT_FILTER
            self.scale_p, cap_p = _kept_mean_scale(tuple(self.prompt_quantiles), mean_p, least - 0.5,
                                                   most_prompt + 0.5)
            stretch = cap_p / (most_prompt + 0.5)
            room_o = most_total * stretch - mean_p + 0.5
            self.scale_o, cap_o = _kept_mean_scale(tuple(self.output_quantiles), mean_o, least - 0.5, room_o)
            if stretch == 1.0 and cap_o == room_o:
                self.filter = SHAREGPT_FILTER  # the benchmark's own filter, as it counts
            else:
                self.filter = (least, cap_p - 0.5, most_total * stretch + (cap_o - room_o))

    def draw(self, rng: random.Random, inv_cdf) -> tuple[int, int]:
        if self.kind == "fixed":
            return self.fixed
        exp = math.exp
        for _ in range(_REDRAWS):
            if self.filter is not None:
                # One uniform per length through the dataset's quantile function.
                p = max(1, round(self.scale_p * quantile_at(self.prompt_quantiles, rng.random())))
                o = max(1, round(self.scale_o * quantile_at(self.output_quantiles, rng.random())))
            else:
                # One uniform per draw through the inverse normal CDF (pure arithmetic in the stdlib).
                p = max(1, round(exp(self.mu_p + self.sigma_p * inv_cdf(_open_unit(rng)))))
                o = max(1, round(exp(self.mu_o + self.sigma_o * inv_cdf(_open_unit(rng)))))
            if self.filter is not None:
                least, most_prompt, most_total = self.filter
                if p < least or o < least or p > most_prompt or p + o > most_total:
                    continue
            if p + o <= self.room:
                return p, o
        # Practically unreachable (the room is checked to hold the medians); keep the run going.
        o = max(1, min(o, self.room // 2))
        return max(1, self.room - o), o


def quantile_at(quantiles, level: float) -> float:
    """The length at ``level`` (0 to 1) of a quantile table at :data:`SHAREGPT_QUANTILE_LEVELS`, linearly interpolated.

    >>> quantile_at(SHAREGPT_OUTPUT_QUANTILES, 0.5), round(quantile_at(SHAREGPT_OUTPUT_QUANTILES, 0.9975))
    (130.0, 1088)
    """
    level = check_range("level", level, 0.0, 1.0)
    levels = SHAREGPT_QUANTILE_LEVELS
    if len(quantiles) != len(levels):
        raise CalcError(f"quantiles must hold {len(levels)} values (one per level); got {len(quantiles)}", "quantiles")
    hi = bisect.bisect_left(levels, level)
    if hi == 0:
        return float(quantiles[0])
    lo = hi - 1
    span = levels[hi] - levels[lo]
    return quantiles[lo] + (quantiles[hi] - quantiles[lo]) * (level - levels[lo]) / span


def quantile_mean(quantiles) -> float:
    """The mean of the piecewise-linear quantile function :func:`quantile_at` draws from (its integral over 0 to 1).

    >>> round(quantile_mean(SHAREGPT_PROMPT_QUANTILES), 1), round(quantile_mean(SHAREGPT_OUTPUT_QUANTILES), 1)
    (221.4, 199.2)
    """
    levels = SHAREGPT_QUANTILE_LEVELS
    if len(quantiles) != len(levels):
        raise CalcError(f"quantiles must hold {len(levels)} values (one per level); got {len(quantiles)}", "quantiles")
    return math.fsum((quantiles[i] + quantiles[i + 1]) / 2 * (levels[i + 1] - levels[i]) for i in range(len(levels) - 1))


def _kept_moments(quantiles, scale: float, low: float, high: float) -> tuple[float, float]:
    """(share kept, integral of the kept lengths) of ``scale x`` the quantile function, kept within ``[low, high]``.

    Exact: on each segment between two levels the scaled quantile function is linear, so the part inside the
    bounds is one sub-interval and its integral is the trapezoid's.
    """
    levels = SHAREGPT_QUANTILE_LEVELS
    share = total = 0.0
    for i in range(len(levels) - 1):
        u0, u1 = levels[i], levels[i + 1]
        a, b = scale * quantiles[i], scale * quantiles[i + 1]
        if b <= a:  # a flat step: all in or all out
            if low <= a <= high:
                share += u1 - u0
                total += a * (u1 - u0)
            continue
        lo_u = u0 + (u1 - u0) * max(0.0, min(1.0, (low - a) / (b - a)))
        hi_u = u0 + (u1 - u0) * max(0.0, min(1.0, (high - a) / (b - a)))
        if hi_u <= lo_u:
            continue
        at = lambda u: a + (b - a) * (u - u0) / (u1 - u0)  # noqa: E731
        share += hi_u - lo_u
        total += (at(lo_u) + at(hi_u)) / 2 * (hi_u - lo_u)
    return share, total


def quantile_scale_for_kept_mean(quantiles, mean: float, low: float, high: float) -> float:
    """The factor on a quantile table (:func:`quantile_at`) whose lengths, kept to ``[low, high]``, average ``mean``.

    The kept mean rises with the factor, so it is found by bisection; :func:`_kept_moments` integrates exactly.
    Used to give the benchmarks' filtered ShareGPT sample (:data:`SHAREGPT_FILTER`) a run's published mean.

    >>> scale = quantile_scale_for_kept_mean(SHAREGPT_OUTPUT_QUANTILES, 203.068, 3.5, 2048 - 229.711 + 0.5)
    >>> round(scale, 4), round(quantile_scale_for_kept_mean(SHAREGPT_PROMPT_QUANTILES, 9, 3.5, 1024.5), 4)
    (1.0207, 0.0199)
    """
    mean = check_range("mean_tokens", mean, 1e-9, _MAX_TOKENS)
    low = check_range("low", low, 0.0, _MAX_TOKENS)
    high = check_range("high", high, low * (1 + 1e-9) + 1e-9, _MAX_TOKENS)
    if not low < mean < high:
        raise CalcError(f"mean_tokens must lie strictly between {low:g} and {high:g}; got {mean!r}", "mean_tokens")

    def kept_mean(scale):
        share, total = _kept_moments(quantiles, scale, low, high)
        return total / share if share > 0 else (high if scale * quantiles[0] > high else low)

    found = bisect_increasing(kept_mean, mean, 1e-9, 2.0 * high / max(1.0, min(q for q in quantiles if q > 0)), 200)
    # The kept mean rises with the factor only until the filter drops the stretched tail faster than the rest grows
    # (a table dense near the cap, as Mistral's prompts are near 1,024, peaks early): keep the first crossing, on the
    # rising branch, by a geometric scan below the one found (none below it for the Llama 3 table's means).
    step, scale, below = 1.02, max(low, 1.0) / max(quantiles), 1e-9
    while scale < found:
        if kept_mean(scale) >= mean:
            found = bisect_increasing(kept_mean, mean, below, scale, 200)
            break
        below, scale = scale, scale * step
    if abs(kept_mean(found) - mean) > 1e-6 * mean:
        raise CalcError(f"mean_tokens must be reachable by the lengths kept within [{low:g}, {high:g}]; got {mean!r}",
                        "mean_tokens")
    return found


#: The largest share of a stretched ShareGPT table the benchmark's cap may drop (:func:`sharegpt_scale_and_cap`).
#: A re-count of the same pairs in another tokenizer trims a few percent at the 1,024-token cap (Mistral's tokens
#: of the published Llama 3 run's prompts: 3.2%); a mean that would need the cap to drop more than this is not the
#: dataset's any more, and the cap stretches with the lengths instead. Role: assumption.
SHAREGPT_CAP_TRIM_MAX = 0.05


def _integral_below(quantiles, level: float) -> float:
    """The integral of the quantile function :func:`quantile_at` from 0 to ``level`` (exact: trapezoids)."""
    levels = SHAREGPT_QUANTILE_LEVELS
    total = 0.0
    for i in range(len(levels) - 1):
        u0, u1 = levels[i], min(levels[i + 1], level)
        if u1 <= u0:
            break
        total += (quantiles[i] + quantile_at(quantiles, u1)) / 2 * (u1 - u0)
    return total


def _level_at(quantiles, length: float) -> float:
    """The level (0 to 1) at which the quantile function :func:`quantile_at` reaches ``length`` (its inverse)."""
    levels = SHAREGPT_QUANTILE_LEVELS
    if length <= quantiles[0]:
        return 0.0
    for i in range(len(levels) - 1):
        a, b = quantiles[i], quantiles[i + 1]
        if length <= b:
            return levels[i + 1] if b <= a else levels[i] + (levels[i + 1] - levels[i]) * (length - a) / (b - a)
    return 1.0


def _hand_over_scale(quantiles, low: float, high: float) -> float:
    """The largest factor up to which the benchmark's fixed cap keeps a table stretched by it as ShareGPT.

    From the table as measured (factor 1), the factor grows by 0.2% at a time until the cap drops more than
    :data:`SHAREGPT_CAP_TRIM_MAX` of the draws or the kept mean stops rising (a table crowded just under the cap, as
    Llama 3's prompts at 760-773 tokens, loses that crowd at once).
    """
    keep = 1.0 - SHAREGPT_CAP_TRIM_MAX
    scale, share, total = 1.0, *_kept_moments(quantiles, 1.0, low, high)
    mean = total / share if share > 0 else 0.0
    while True:
        nxt = scale * 1.002
        share_n, total_n = _kept_moments(quantiles, nxt, low, high)
        if share_n < keep or share_n <= 0 or total_n / share_n < mean:
            return scale
        scale, mean = nxt, total_n / share_n


def sharegpt_scale_and_cap(quantiles, mean: float, low: float, high: float) -> tuple[float, float]:
    """(factor on the quantile table, upper cap) that give ShareGPT lengths kept within ``[low, cap]`` a mean ``mean``.

    Near the dataset's own mean the cap is the benchmark's (``high``) and the factor the one
    :func:`quantile_scale_for_kept_mean` finds: the published runs' means are the dataset's pairs counted in their
    tokens, filtered as the benchmark filters them. Far above it (a 1,024-token mean under the 1,024-token cap would
    keep 0.003% of the stretched draws: every draw was redrawn a thousand times and the fallback took the whole
    context), the class is ShareGPT's *shape* at another scale: beyond the factor where the fixed cap would drop more
    than :data:`SHAREGPT_CAP_TRIM_MAX` of the draws or stop raising the kept mean (:func:`_hand_over_scale`), the cap
    stretches with the lengths, dropping the same top share of the table as at the hand-over, so the factor and the
    cap change continuously with the mean and the kept mean is the one asked for. A
    class's sampler stretches the prompt + answer cap (2,048) as the prompt's cap and gives the answer's room within
    it the same rule.

    >>> llama = sharegpt_table("llama3").prompt_quantiles
    >>> scale, cap = sharegpt_scale_and_cap(llama, 229.711, 3.5, 1024.5)   # the published run's mean: as before
    >>> round(scale, 4), cap
    (1.0513, 1024.5)
    >>> scale, cap = sharegpt_scale_and_cap(llama, 1024, 3.5, 1024.5)     # four times the dataset's: the cap stretches
    >>> round(scale, 3), round(cap)
    (4.931, 3811)
    >>> share, total = _kept_moments(llama, scale, low=3.5, high=cap); round(total / share, 6)
    1024.0
    """
    mean = check_range("mean_tokens", mean, 1e-9, _MAX_TOKENS)
    hand_over = _hand_over_scale(quantiles, low, high)
    share, total = _kept_moments(quantiles, hand_over, low, high)
    if share <= 0 or mean <= total / share:
        found = quantile_scale_for_kept_mean(quantiles, mean, low, high)
        if found > hand_over:  # its scan stepped over the narrow top of the rising branch: bisect on that branch
            def kept_mean(factor):
                kept, integral = _kept_moments(quantiles, factor, low, high)
                return integral / kept if kept > 0 else low
            found = bisect_increasing(kept_mean, mean, 1.0, hand_over, 200)
        return found, high
    # Beyond: keep the levels the cap kept at the hand-over, [0, top], and scale them to the mean.
    top = _level_at(quantiles, high / hand_over)
    scale = mean * top / _integral_below(quantiles, top)
    return scale, scale * quantile_at(quantiles, top)


@functools.lru_cache(maxsize=256)
def _kept_mean_scale(quantiles: tuple, mean: float, low: float, high: float) -> tuple[float, float]:
    """:func:`sharegpt_scale_and_cap`, kept per (table, mean, bounds): a pure function that costs about 0.1 s
    (hundreds of exact integrals), which every ShareGPT run would otherwise pay again (a fit's hundreds of runs)."""
    return sharegpt_scale_and_cap(quantiles, mean, low, high)


def _open_unit(rng: random.Random) -> float:
    u = rng.random()
    return u if u > 0.0 else 5e-324


def check_class_fits(cls: RequestClass, max_model_len: int) -> None:
    """CalcError (field ``max_model_len``) unless a request of class ``cls`` can fit ``max_model_len`` tokens.

    Fixed lengths must fit as given; distributed ones need room for the prefix and one token each way
    (longer draws are redrawn). Source: vLLM refuses prompts longer than ``max_model_len``.

    >>> check_class_fits(RequestClass(prompt_tokens=8000, output_tokens=256), 8192)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: class 'chat': prefix_tokens + prompt_tokens + output_tokens = 8256 must be at most max_model_len 8192
    """
    need = cls.prefix_tokens + (cls.prompt_tokens + cls.output_tokens if cls.lengths == "fixed" else 2)
    if need > max_model_len:
        raise CalcError(
            f"class {cls.name!r}: prefix_tokens + prompt_tokens + output_tokens = {need} must be at most "
            f"max_model_len {max_model_len}", "max_model_len")


def generate_requests(workload: Workload, seed: int, max_model_len: int, *,
                      tokenizer: str | None = DEFAULT_TOKENIZER) -> list[Request]:
    """The run's requests, in arrival order, from ``seed`` alone.

    Every request fits ``max_model_len`` (prompt, system prompt included, plus
    answer); distributed lengths that do not are redrawn. Class and prefix
    variant are drawn by share from their own sub-streams.
    Sources: Poisson arrivals as in vLLM's serving benchmark; lengths as in
    :data:`CHAT_LENGTHS_SOURCE`; bursty gaps per :func:`hyperexponential_params`.
    ``sharegpt`` classes draw from the table of ``tokenizer``, the served model's (:func:`sharegpt_table`,
    :func:`tokenizer_of`). Below, 200 ShareGPT requests at the benchmarks' means in each tokenizer's tokens (203
    and 234 answer tokens): Mistral's tokenizer counts 16% more answer tokens in all (46,689 against 40,176).

    >>> def answer_tokens(tokenizer):   # (all answers, the longest)
    ...     p, o = sharegpt_bench_means(tokenizer)
    ...     cls = RequestClass(lengths="sharegpt", prompt_tokens=round(p), output_tokens=round(o))
    ...     reqs = generate_requests(Workload(arrival="all-at-once", requests=200, classes=(cls,)), 0, 8192,
    ...                              tokenizer=tokenizer)
    ...     return sum(r.output_tokens for r in reqs), max(r.output_tokens for r in reqs)
    >>> answer_tokens("llama3"), answer_tokens("mistral-v1")
    ((40176, 1299), (46689, 1352))

    >>> wl = Workload(arrival="all-at-once", requests=4, classes=(RequestClass(lengths="chat"),))
    >>> [(r.prompt_tokens, r.output_tokens) for r in generate_requests(wl, seed=3, max_model_len=2048)]
    [(148, 313), (29, 324), (360, 286), (94, 533)]
    >>> closed = Workload(arrival="closed-loop", concurrency=2, requests=4, classes=wl.classes)
    >>> [(r.prompt_tokens, r.output_tokens) for r in generate_requests(closed, seed=3, max_model_len=2048)]
    [(148, 313), (29, 324), (360, 286), (94, 533)]
    """
    seed = check_range("seed", seed, 0, 2**32 - 1, integer=True)
    max_model_len = check_range("max_model_len", max_model_len, 2, _MAX_TOKENS, integer=True)
    classes = workload.classes
    if not classes:
        raise CalcError("classes must hold at least one request class; got none", "classes")
    for cls in classes:
        check_class_fits(cls, max_model_len)
    shares = [cls.share for cls in classes]
    total_share = math.fsum(shares)
    if total_share <= 0:
        raise CalcError(f"class shares must add up to more than 0; got {total_share!r}", "share")
    cumulative, acc = [], 0.0
    for share in shares:
        acc += share / total_share
        cumulative.append(acc)
    cumulative[-1] = 1.0
    table = sharegpt_table(tokenizer)  # checks the name even when no class draws from it
    samplers = [_LengthSampler(cls, max_model_len, table) for cls in classes]

    r_arrive = substream(seed, STREAM_ARRIVALS)
    r_class = substream(seed, STREAM_CLASSES)
    r_len = substream(seed, STREAM_LENGTHS)
    r_prefix = substream(seed, STREAM_PREFIXES)
    inv_cdf = NormalDist().inv_cdf
    single = len(classes) == 1
    requests = []
    for rid, t_ns in enumerate(_arrival_times_ns(workload, r_arrive)):
        ci = 0
        if not single:
            u = r_class.random()
            while cumulative[ci] <= u and ci < len(classes) - 1:
                ci += 1
        cls = classes[ci]
        body, out = samplers[ci].draw(r_len, inv_cdf)
        key, prefix = -1, cls.prefix_tokens
        if prefix:
            variant = r_prefix.randrange(cls.prefix_variants) if cls.prefix_variants > 1 else 0
            key = ci * 1_000_000 + variant
        requests.append(Request(rid, t_ns, prefix + body, out, ci, key, prefix))
    return requests
