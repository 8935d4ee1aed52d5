"""calc against published online-serving runs: TTFT, ITL/TPOT, end to end and throughput (issue 18).

The ``online_latency`` rows of ``calc/data/measurements.json`` are published runs with their full set-up
(engine, model, GPU, TP, precision, client, lengths, statistic, source). Each one is predicted here with the
simulator as it stands (:func:`calc.sim.simulate`), driven the way the row's client drove the engine:

* ``batch``: the whole batch arrives at once (vLLM's ``benchmark_latency``: one batch of 8, fixed lengths);
* ``all_at_once``: every request at time 0 (``benchmark_throughput``, QPS inf);
* ``poisson``: Poisson arrivals at the row's rate (``benchmark_serving --request-rate``);
* ``closed_loop``: N clients, each sending its next request when its previous one finishes (AIPerf,
  ``--max-concurrency``). The simulator's public API has no such client yet (requests are drawn before the
  run), so the stand-in is the Poisson rate at which the run keeps N requests in flight on average (Little's
  law, found by bisection on the simulated mean of queued + running requests). Every result says which
  client it used (``client_used``); the closed-loop ones are flagged ``needs the closed-loop client``.
  With one client the closed loop is exactly one request at a time, and is run so.
  Since the engine has its own closed-loop client, rows run on it. A row whose client states its request
  count (``client.request_count``, NIM's AIPerf sweep: 10 per client after 2 per client of warm-up) is run
  with its warm-up first and then that many requests, and only those are measured
  (:func:`warmup_requests`): NIM's own figures rule out an idle start (at concurrency 50 the first round's
  queue of 5,000-token prompts alone would add about 1 s to a mean TTFT measured at 835 ms). NIM runs
  TensorRT-LLM, whose in-flight batching admits a prompt only whole beside the decodes (engine profile
  ``nim-trtllm``: ``context_chunking`` off, :mod:`calc.engine_profiles`). What remains: with fixed lengths
  every request runs exactly ``output - 1`` decode steps after its first token, so requests whose first
  tokens came one long prefill step apart finish one short decode step apart, their successors are sent
  together and the second waits for the first one's prefill; the simulator keeps such pairs for the whole
  run (steady state at concurrency 5: TTFT 0.43 s for one client in five, 0.82 s for the others, where
  NIM's 547 ms mean says most prompts met no queue). A random send delay of 20-50 ms (measured here) makes
  it worse, not better (the pairs stay within one prefill); what splits them on a real server is not in
  any source read, so nothing is added for it. The client read in sources leaves no spread to split them:
  the sweep's AIPerf command (``client.request_count_source``: ai-dynamo/dynamo benchmarks/llm/perf.sh) fixes
  both lengths (``--synthetic-input-tokens-stddev 0``,
  ``--output-tokens-stddev 0``, ``max_tokens`` = ``min_tokens`` with ``ignore_eos``) and its concurrency
  burst mode issues credits with no delay, the semaphore alone holding N in flight (ai-dynamo/aiperf
  tests/component_integration/timing/test_concurrency_burst.py: the first N credits within 0.2 s, mean gap
  under 0.1 s; ramping is an opt-in, docs "Gradual Ramping"): the N first at once, no stagger. NIM's own
  tables confirm it: their throughput is N x 500 / (TTFT + 499 x ITL) within 0.6% on all nine runs
  (tests/test_latency_accuracy.py), so every answer ran to its 500 tokens and no client paused between
  requests (at concurrency 5 the identity leaves 2 ms of an 11.4 s cycle, where splitting a pair takes a
  400 ms prefill).
  TensorRT-LLM's no-chunking rule (a whole prompt beside the decodes within ``max_num_tokens`` 8192) runs
  one 5,000-token prompt per step and several 500-token ones together, as calc does (the 500/2,000 run at
  concurrency 5 prefills four prompts in one step). Two sourced variants, measured by
  ``bench/nim_closed_loop_variants.py``, do not help: profiling from an idle server (AIPerf's warm-up
  grace period) puts concurrency 5, 25 and 50 at +45%, +84% and +115% (NIM's figures rule it out, as said
  above); the chat template's tokens, which AIPerf's synthetic length
  leaves out, shorten the cache by about one request (30 tokens a prompt: concurrency 100 -23% -> -15%,
  150-250 +0..+5% -> +3..+6%, concurrency 5 +36% -> +37%), a count not read for Llama 3.3, so not applied.

All-at-once throughput rows (vLLM nightly ``benchmark_throughput``, the Azure run at QPS inf; 200 ShareGPT
prompts each, as the rows say: the nightly test definition sends ``num_prompts`` 200 of
ShareGPT_V3_unfiltered_cleaned_split.json with dummy weights) measure requests over the run's wall time, and with
200 requests that wall time ends with the longest answer decoding almost alone. calc draws the 200 lengths from
ShareGPT's own length quantiles (:data:`calc.sim.workload.SHAREGPT_OUTPUT_QUANTILES`, measured on the dataset
with the benchmarks' filter and the Llama 3 tokenizer by ``bench/sharegpt_lengths.py``), whose longest of 200
is about the p99.5 (894 tokens; 1,130-1,300 in seeds 0-2), where the old lognormal's was 1,550-1,720; the
seeded sample the benchmarks drew is still a different draw. Each model draws from its own tokenizer's table
(:func:`calc.sim.workload.sharegpt_table`): Mixtral's (Mistral's 32,000-piece SentencePiece) counts the kept
answers 15% longer than Llama 3's; the Mixtral rows' means, borrowed from a Llama 3 run (``means_tokenizer``), are
converted by that measured ratio.

SGLang v0.3.0 and vLLM v0.6.0 with ``--num-scheduler-steps`` ran every new prompt in a prefill-only step that
pauses the running answers (SGLang mixes prefill and decode only with ``--enable-mixed-chunk``, off by
default; vLLM 0.6.0 refuses chunked prefill with multi-step): those rows say so in ``inputs.engine_settings``
(``chunked_prefill`` false, with its source), and :func:`scenario_for` applies the row's settings
(:data:`ENGINE_SETTINGS`).

Rows of a TensorRT-LLM engine (NIM) size their KV cache TensorRT-LLM's way (:func:`trtllm_kv_cache_tokens`:
0.9 of the memory free after loading, not 0.9 of the total) and admit requests the way its default capacity
scheduler does (profile ``nim-trtllm``, ``capacity_policy`` ``guaranteed-no-evict``, :mod:`calc.sim.scheduler`):
a request starts only when its whole 5,000 + 500 tokens fit beside what the running ones still need, and no
one is ever preempted. So the saturated NIM runs (concurrency 100 and up, where TTFT is the queue for KV room)
hold at most 90 requests (81 by vLLM's sizing); vLLM's policy, used here before, admitted on the prompt's
blocks and then preempted and recomputed 5,000-token prompts, which cost calc about 5% of its throughput and
put its ITL 15-17% above NIM's (now 7-9%). NIM's plateau (920 tokens/s at 93 ms per token) says about 86-87
in service, where calc's cache holds 90: TTFT at concurrency 100, the wait of the clients not in service,
is about a fifth short; what makes NIM's cache about 4% smaller (its engine's activation and runtime
buffers, sized for its max batch and sequence length, are not published for this profile) is not in any
source read, so nothing is added for it. The ITL left over is the decode step's cost at about 90 x 5,250
tokens of fp8 KV (``python -m calc step --engine nim-trtllm --model llama-3.3-70b --tp 2 --weights fp8
--kv-dtype fp8 --batch 90 --context-tokens 5250``), outside this module.

Rows of ``trtllm-bench throughput`` (TensorRT-LLM's performance overview) run with the limits that benchmark
derives for itself when none are given (:func:`trtllm_bench_settings`: up to 4,096 requests and a token budget
from the dataset's lengths), not the simulator's defaults; :class:`reading_as_received` switches that reading
off, for the accuracy page's before/after table. A row whose set-up calc does not model is refused by name
(:func:`check_modelled`: SGLang's data-parallel attention, ``inputs.engine_settings.dp_attention``), left out of
:func:`load_rows` and listed by :func:`refused` with its reason, so it counts in no median.

Nothing is fitted here (:mod:`calc.latency_fit` fits the engine profiles on the calibration rows through
:func:`predict_row`); each row runs on its engine's profile (``inputs.engine_profile``). Errors are
``(predicted - measured) / measured``; :func:`summary` gives, per metric and per role (calibration rows
apart from validation rows), the count, the median absolute error, the median signed error and how many
predictions are optimistic (latency below the measured one, throughput above it).

>>> rows = load_rows()
>>> len(rows) >= 40, {r["inputs"]["client"]["kind"] for r in rows} >= {"batch", "closed_loop"}
(True, True)
"""

from __future__ import annotations

import functools
import json
import math
from dataclasses import asdict, dataclass

from calc.accuracy import load_measurements, median, relative_error
from calc.errors import CalcError, check_choice, check_range
from calc.units import round_sig

__all__ = ["LATENCY_KIND", "TARGETS", "LOSO_TARGETS", "CACHED_PROMPT_TAIL_TOKENS", "closed_loop_client_available", "warmup_requests", "METRICS", "METRIC_LABELS", "CLIENTS", "CLOSED_LOOP_STANDIN", "TRTLLM_ENGINES", "OFFLINE_BENCHMARK", "frontend_of", "ENGINE_SETTINGS",
           "TRTLLM_FREE_GPU_MEMORY_FRACTION", "trtllm_kv_cache_tokens", "kv_capacity_tokens_vllm", "load_rows", "REFUSED_SETTINGS", "TRTLLM_BENCH", "TRTLLM_BENCH_KV_FRACTION", "TRTLLM_BENCH_SOURCE", "trtllm_bench_settings", "READINGS", "reading_as_received", "check_modelled", "model_of", "refusal", "refused", "metric_of",
           "source_of", "SOURCE_GROUPS", "scenario_for", "simulate_row", "predict_row", "LatencyResult", "evaluate", "summary", "by_source", "report"]

LATENCY_KIND = "online_latency"
#: The four figures the issue's targets are set on, and the published quantities each one gathers.
METRICS = ("ttft", "tpot_itl", "e2e", "throughput")
METRIC_LABELS = {"ttft": "TTFT", "tpot_itl": "TPOT / ITL", "e2e": "end to end", "throughput": "throughput"}
_METRIC_OF_QUANTITY = {"ttft": "ttft", "tpot": "tpot_itl", "itl": "tpot_itl", "e2e": "e2e", "throughput": "throughput"}
CLIENTS = ("batch", "all_at_once", "poisson", "closed_loop")
#: Prompt tokens computed when a prompt's full 16-token blocks are in vLLM's prefix cache: the last
#: partial block, always at least one token (1 to 16, 8.5 on average, rounded up).
CACHED_PROMPT_TAIL_TOKENS = 9
#: Engine profiles whose backend is TensorRT-LLM (its KV cache rule: :func:`trtllm_kv_cache_tokens`).
TRTLLM_ENGINES = ("nim-trtllm",)
#: TensorRT-LLM's ``KvCacheConfig.free_gpu_memory_fraction`` default: the share of the memory left free after
#: the model loads that goes to the KV cache (TensorRT-LLM docs, "How to Change KV Cache Behavior",
#: nvidia.github.io/TensorRT-LLM/examples/kvcacheconfig.html: "The default for free_gpu_memory_fraction is 0.9").
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
#: Scheduler settings a row may state in ``inputs.engine_settings`` (scenario fields of :class:`calc.sim.Scenario`):
#: SGLang v0.3.0 and vLLM v0.6.0 with multi-step ran prompts in prefill-only steps (``chunked_prefill`` false), as
#: did vLLM 0.5.4 below a 32K max_model_len; a launch's ``--max-model-len`` and ``--gpu-memory-utilization``.
ENGINE_SETTINGS = ("chunked_prefill", "max_num_seqs", "max_num_batched_tokens", "max_model_len",
                   "gpu_memory_utilization")
#: The issue's targets: validation median |error| at most this, per metric (issue 18, "Done when").
TARGETS = {"ttft": 0.10, "tpot_itl": 0.10, "e2e": 0.10, "throughput": 0.08}
#: Issue 33's targets: leave-one-source-out validation median |error| at most this (:mod:`calc.latency_loso`).
LOSO_TARGETS = {"ttft": 0.15, "tpot_itl": 0.15, "e2e": 0.15, "throughput": 0.12}
CLOSED_LOOP_STANDIN = ("Poisson at the rate that keeps N requests in flight on average (Little's law); "
                       "needs the closed-loop client")

# The simulator's time-averaged in-flight count must land this close to N (relative), after at most
# _BISECTION_STEPS halvings of the rate bracket.
_IN_FLIGHT_TOLERANCE = 0.02
_BISECTION_STEPS = 18
# Requests per closed-loop stand-in run: enough for the in-flight average to settle, bounded for speed.
_MIN_REQUESTS, _REQUESTS_PER_CLIENT, _MAX_REQUESTS = 100, 4, 1_200
# A row's own profiled request count may be larger (AIPerf's 10 per client: 2,500 at concurrency 250).
_MAX_PROFILED_REQUESTS = 100_000


def load_rows(path: str | None = None, *, include_refused: bool = False) -> tuple[dict, ...]:
    """The ``online_latency`` rows of the data file that calc prices, in its order.

    Rows calc refuses to price (:func:`refusal`: a parallel layout it does not model) are left out unless
    ``include_refused``; :func:`refused` lists them with the reason. Source: ``calc/data/measurements.json``
    through :func:`calc.accuracy.load_measurements`.

    >>> load_rows()[0]["id"]
    'vllm-nightly-latency-llama8b-tp1-h100'
    >>> len(load_rows(include_refused=True)) - len(load_rows()) == len(refused())
    True
    """
    rows = load_measurements(path, kinds=(LATENCY_KIND,))
    return rows if include_refused else tuple(r for r in rows if refusal(r) is None)


#: Settings a row may state in ``inputs.engine_settings`` that calc refuses to price, each checked by
#: :func:`calc.moe.check_moe_parallelism` (its reason in :data:`calc.moe.NOT_MODELLED`).
REFUSED_SETTINGS = ("dp_attention",)


def check_modelled(row: dict) -> None:
    """Raise :class:`calc.errors.CalcError`, naming the reason, when calc does not model the row's set-up.

    Today: data-parallel attention (SGLang ``--enable-dp-attention``, stated by the row as
    ``inputs.engine_settings.dp_attention``), refused by :func:`calc.moe.check_moe_parallelism`.

    >>> check_modelled(load_rows()[0])
    >>> check_modelled({"inputs": {"model": "deepseek-v3", "tp": 8, "engine_settings": {"dp_attention": True}}})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: not modelled: data-parallel attention (SGLang --enable-dp-attention, vLLM data parallelism with expert parallelism) dispatches tokens to experts with all-to-all and runs attention without tensor parallelism; calc prices tensor-parallel attention with one all-reduce after each layer only
    """
    from calc.moe import check_moe_parallelism

    x = row["inputs"]
    settings = x.get("engine_settings", {})
    dp_attention = settings.get("dp_attention", False)
    if not isinstance(dp_attention, bool):
        raise CalcError(f"inputs.engine_settings.dp_attention must be true or false; got {dp_attention!r}",
                        "dp_attention")
    check_moe_parallelism(model_of(row), tp=x["tp"], dp_attention=dp_attention)


def model_of(row: dict) -> str:
    """The row's model as :func:`calc.catalog.get_model` takes it: a catalog key, or a checkpoint's ``config.json``.

    A model outside the catalog is given in the row as ``{"key", "config", "source"}`` (its ``config.json``
    keys and where they are read); the simulator gets the config as JSON text.

    >>> model_of(load_rows()[0])
    'llama-3.1-8b'
    >>> from calc.catalog import get_model
    >>> tiny = {"key": "tiny", "config": {"num_hidden_layers": 2, "hidden_size": 64, "num_attention_heads": 4,
    ...                                   "intermediate_size": 128, "vocab_size": 100}, "source": "made up"}
    >>> get_model(model_of({"inputs": {"model": tiny}})).layers
    2
    """
    spec = row["inputs"]["model"]
    if isinstance(spec, dict):
        return json.dumps(spec["config"], sort_keys=True)
    return spec


def refusal(row: dict) -> str | None:
    """Why calc refuses to price a row (the :class:`calc.errors.CalcError` of :func:`check_modelled`), or None.

    >>> refusal(load_rows()[0]) is None
    True
    """
    try:
        check_modelled(row)
    except CalcError as error:
        return str(error)
    return None


def refused(path: str | None = None) -> tuple[dict, ...]:
    """The rows calc refuses to price, each with its id, source, engine profile, metric and the reason.

    They are shown on the accuracy page as a counted, named list, outside every median.

    >>> r = refused()
    >>> len(r) >= 1, r[0]["reason"].startswith("not modelled: data-parallel attention")
    (True, True)
    """
    return tuple({"id": r["id"], "source": source_of(r), "engine": r["inputs"].get("engine_profile", "vllm"),
                  "metric": metric_of(r), "label": r["label"], "reason": reason}
                 for r in load_rows(path, include_refused=True) if (reason := refusal(r)) is not None)


#: Sources that are one for cross-validation although their rows cite them apart: vLLM's nightly benchmark on
#: H100, H200 and A100 is one benchmark suite (the same scripts, test definitions and engine team), read from
#: three Buildkite builds. Keyed by the start of ``source.cite``.
SOURCE_GROUPS = {"vLLM nightly benchmark": "vLLM nightly benchmark"}


def source_of(row: dict) -> str:
    """The independent source a row comes from (what leave-one-source-out leaves out whole).

    Its ``source.cite``, except where several cites are one source (:data:`SOURCE_GROUPS`).

    >>> source_of(load_rows()[0]), source_of({"source": {"cite": "NVIDIA NIM benchmarking guide"}})
    ('vLLM nightly benchmark', 'NVIDIA NIM benchmarking guide')
    """
    cite = row["source"]["cite"]
    return next((group for prefix, group in SOURCE_GROUPS.items() if cite.startswith(prefix)), cite)


def metric_of(row: dict) -> str:
    """The report metric a row's published quantity belongs to (ITL and TPOT are reported together).

    >>> metric_of({"figure": {"quantity": "itl"}}), metric_of({"figure": {"quantity": "e2e"}})
    ('tpot_itl', 'e2e')
    """
    quantity = row["figure"].get("quantity")
    if quantity not in _METRIC_OF_QUANTITY:
        raise CalcError(f"figure.quantity must be one of {', '.join(_METRIC_OF_QUANTITY)}; got {quantity!r}",
                        "quantity")
    return _METRIC_OF_QUANTITY[quantity]


def scenario_for(row: dict, *, rate_per_s: float | None = None, requests: int | None = None) -> dict:
    """The simulator scenario (a :class:`calc.sim.Scenario` dict) that replays a row's set-up.

    The replica is the row's model, GPU, TP and precisions, sized on the memory the driver reports (vLLM
    sizes its cache so) at vLLM's default 0.9 utilisation; ``max_model_len`` fits the row's lengths. The
    client sets the arrivals: ``batch`` and ``all_at_once`` send everything at time 0, ``poisson`` at the
    row's rate, ``closed_loop`` at ``rate_per_s`` (the stand-in's rate, which the caller chooses).

    >>> s = scenario_for(load_rows()[0])
    >>> s["model"], s["tp"], s["workload"]["arrival"], s["workload"]["requests"], s["workload"]["prompt_tokens"]
    ('llama-3.1-8b', 1, 'all-at-once', 8, 32)
    """
    check_modelled(row)  # a set-up calc does not model is refused by name, not priced
    x = row["inputs"]
    model = model_of(row)
    client, lengths = x["client"], x["lengths"]
    kind = check_choice("client", client.get("kind"), CLIENTS)
    if lengths["kind"] == "fixed":
        cls = {"lengths": "fixed", "prompt_tokens": lengths["input_tokens"], "output_tokens": lengths["output_tokens"]}
        longest = lengths["input_tokens"] + lengths["output_tokens"]
    elif lengths["kind"] == "sharegpt":
        # ShareGPT as the row's benchmark client sampled it (its filter, the sample's means: calc.sim.workload), in
        # the served model's tokens: means published with another tokenizer (``means_tokenizer``, a Mixtral row
        # borrowing the Llama 3 run's) are converted by the measured ratio of the two tokenizers' ShareGPT lengths.
        from calc.sim.workload import convert_sharegpt_means, sharegpt_bench_means, tokenizer_of

        tokenizer = tokenizer_of(model)
        default_prompt, default_output = sharegpt_bench_means(tokenizer)
        prompt_mean = lengths.get("mean_input_tokens", default_prompt)
        output_mean = lengths.get("mean_output_tokens", default_output)
        if "means_tokenizer" in lengths:
            prompt_mean, output_mean = convert_sharegpt_means(prompt_mean, output_mean, lengths["means_tokenizer"],
                                                              tokenizer)
        if x.get("prompts_cached"):
            # Every prompt was served by an earlier run on the same server (inputs.prompts_cached_why): vLLM
            # reuses its full KV blocks and computes only the rest, at least the last token; with 16-token
            # blocks that is 8.5 tokens on average. The cached part's KV reads are left out (a small share
            # of a decode step next to the weights).
            prompt_mean = CACHED_PROMPT_TAIL_TOKENS
        cls = {"lengths": "sharegpt", "prompt_tokens": round(prompt_mean), "output_tokens": round(output_mean)}
        longest = 0
    else:
        raise CalcError(f"inputs.lengths.kind must be fixed or sharegpt; got {lengths['kind']!r}", "lengths")
    if kind == "batch":
        workload = {"arrival": "all-at-once", "requests": client["batch"]}
    elif kind == "all_at_once":
        workload = {"arrival": "all-at-once", "requests": client["requests"]}
    elif kind == "poisson":
        workload = {"arrival": "poisson", "rate_per_s": client["rate_per_s"],
                    "requests": requests or x.get("num_prompts") or 1_000}
    elif rate_per_s is None:
        # The engine's own closed-loop client (N clients, each sending its next request when its previous one ends):
        # the client's warm-up requests first, then the profiled ones (warmup_requests says which are measured).
        workload = {"arrival": "closed-loop", "concurrency": client["concurrency"],
                    "requests": requests or warmup_requests(row) + _closed_requests(row)}
    else:
        workload = {"arrival": "poisson", "rate_per_s": rate_per_s, "requests": requests or _closed_requests(row)}
    workload.update(cls)
    engine = x.get("engine_profile", "vllm")
    scenario = {"model": model, "gpu": x["gpu"], "tp": x["tp"], "weights": x["weights"], "kv_dtype": x["kv_dtype"],
                "engine": engine, "memory_basis": "runtime", "gpu_memory_utilization": 0.9,
                "max_model_len": max(8192, 1 << max(0, longest - 1).bit_length()), "workload": workload}
    settings = x.get("engine_settings", {})
    if settings.get("reading") and not _READINGS[check_choice("engine_settings.reading", settings["reading"],
                                                                tuple(READINGS))]:
        settings = {}  # settings a reading added (READINGS), left out while rows are read as received
    for key, value in settings.items():
        # The engine's scheduler as the row ran it (each setting with its source in ``<key>_why``).
        if key in ENGINE_SETTINGS:
            scenario[key] = value
    if frontend_of(row) != "api-server":
        scenario["frontend"] = frontend_of(row)  # no API server: no per-sequence serving cost (frontend_of)
    if (_READINGS["trtllm_bench_limits"] and TRTLLM_BENCH in x.get("engine", "") and lengths["kind"] == "fixed"
            and not x.get("engine_settings", {}).get("max_num_seqs")):
        # trtllm-bench throughput derives its own limits from the dataset when none are given (trtllm_bench_settings),
        # and its max_seq_len is the dataset's longest request (bench/build/build.py: metadata.max_sequence_length).
        # The simulator runs a whole-prompt engine only with a budget of at least max_model_len (calc.sim.scheduler),
        # so a smaller trtllm-bench budget is raised to that: at these batches it binds only while the batch fills.
        batch, tokens = trtllm_bench_settings(model, x["gpu"], tp=x["tp"], weights=x["weights"],
                                              kv_dtype=x["kv_dtype"], input_tokens=lengths["input_tokens"],
                                              output_tokens=lengths["output_tokens"])
        scenario["max_model_len"] = longest
        scenario["max_num_seqs"], scenario["max_num_batched_tokens"] = batch, max(tokens, longest)
    if engine in TRTLLM_ENGINES:
        scenario["kv_cache_tokens"] = trtllm_kv_cache_tokens(model, x["gpu"], tp=x["tp"], weights=x["weights"],
                                                             kv_dtype=x["kv_dtype"])
    return scenario


#: The offline benchmark whose rows are priced without the per-sequence serving cost (named in ``inputs.engine``).
OFFLINE_BENCHMARK = "benchmark_throughput"


def frontend_of(row: dict) -> str:
    """How the row's requests reach the engine in calc: ``offline`` or ``api-server`` (:data:`calc.engine_profiles.FRONTENDS`).

    ``offline`` for vLLM's nightly ``benchmark_throughput`` rows (``inputs.engine`` names
    :data:`OFFLINE_BENCHMARK`; ``inputs.client.how`` "offline LLM.generate on all 200 prompts"): the script
    builds ``LLM(...)`` and calls ``llm.generate(prompts, sampling_params)`` in its own process, no API server
    and no token streamed to a client (vllm-project/vllm benchmarks/benchmark_throughput.py, backend vllm;
    test definitions tests/throughput-tests.json). Every other row was served through an API server, whatever
    its arrival pattern: the SGLang README's "offline" tables were measured by ``sglang.bench_serving``
    against a running server (``--backend sglang`` / ``--backend vllm``, request rate inf), the Azure run at
    QPS inf by ``benchmark_serving``. Only served rows pay the engine's per-sequence streaming cost
    (:func:`calc.engine_profiles.efficiency_for`). The nightly ``benchmark_latency`` rows also run
    ``LLM.generate`` but stay priced as served: they are the fit's calibration rows of the fixed step terms,
    and pricing them offline moves the fit (vLLM's step cost 0.60 -> 1.71 ms, the per-sequence one 138 -> 118
    us) and with it every served scenario of the lesson. Tried and measured: that refit improves the served
    rows (TPOT/ITL median 6.5 -> 4.1%) but makes the offline 200-prompt rows 8-23% slow (throughput median 6.4
    -> 7.6%), and an engine-side per-sequence term paid offline too, fitted on one of them, comes out 0 (the
    batch-8 and 200-prompt rows imply a negative slope): at 200 sequences the fixed step cost is not paid in
    series with the GPU's work as it is at 8. Until a step model explains both, they stay priced as served.

    >>> [frontend_of(r) for r in load_rows() if r["id"].startswith("vllm-nightly-throughput-llama8b")]
    ['offline', 'offline', 'offline']
    >>> frontend_of(load_rows()[0]), frontend_of({"inputs": {"engine": "SGLang (sglang.launch_server)"}})
    ('api-server', 'api-server')
    """
    return "offline" if OFFLINE_BENCHMARK in row["inputs"].get("engine", "") else "api-server"


def trtllm_kv_cache_tokens(model: str, gpu: str, *, tp: int, weights: str, kv_dtype: str,
                           block_size: int = 16) -> int:
    """KV cache tokens of a TensorRT-LLM replica: 90% of the memory left free once the model is loaded.

    TensorRT-LLM sizes its cache as ``free_gpu_memory_fraction`` (default 0.9) of the *free* memory
    (:data:`TRTLLM_FREE_GPU_MEMORY_FRACTION`), where vLLM takes ``gpu_memory_utilization`` (0.9) of the
    *total* and subtracts the weights: with 35 GB of weights on an 80 GB part the TensorRT-LLM cache is
    about 10% larger. The free memory is the runtime capacity less calc's weights, activation workspace and
    non-torch overhead (:func:`calc.memory.kv_capacity` at utilisation 1.0; the workspace is vLLM's,
    assumed for TensorRT-LLM too).

    >>> vllm_rule = kv_capacity_tokens_vllm("llama-3.3-70b", "h100-sxm-80gb", tp=2, weights="fp8", kv_dtype="fp8")
    >>> trt = trtllm_kv_cache_tokens("llama-3.3-70b", "h100-sxm-80gb", tp=2, weights="fp8", kv_dtype="fp8")
    >>> trt > vllm_rule, round(trt / vllm_rule, 2)
    (True, 1.11)
    """
    from calc import memory

    free = memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, gpu_memory_utilization=1.0,
                              block_size=block_size, memory_basis="runtime")
    blocks = int(TRTLLM_FREE_GPU_MEMORY_FRACTION * free.kv_cache_bytes // (block_size * free.kv_bytes_per_token_per_gpu))
    return blocks * block_size


#: The offline TensorRT-LLM benchmark whose rows run with the engine limits it derives itself (named in ``inputs.engine``).
TRTLLM_BENCH = "trtllm-bench"
#: trtllm-bench's bytes per weight and per KV element by format (tensorrt_llm/bench/build/tuning.py, ``BYTES_PER_ELEM``:
#: no quantization 2.0, FP8 1.0, NVFP4 0.5; anything else 2).
_TRTLLM_BENCH_BYTES = {"fp8": 1.0}
#: trtllm-bench throughput's default ``--kv_cache_free_gpu_mem_fraction`` (the perf-overview page: "a higher KV cache
#: percentage by setting --kv_cache_free_gpu_mem_fraction 0.95 ... better performance than the default setting of 0.90").
TRTLLM_BENCH_KV_FRACTION = 0.90
TRTLLM_BENCH_SOURCE = (
    "NVIDIA/TensorRT-LLM tensorrt_llm/bench/benchmark/utils/general.py get_settings (PyTorch backend: without "
    "--max_batch_size and --max_num_tokens, get_benchmark_engine_settings from the dataset's average ISL and OSL; "
    "chunked prefill off, max_num_tokens = max(heuristic, max ISL + max_batch_size)); tensorrt_llm/bench/build/"
    "tuning.py calc_engine_setting and finetune_setting (KV requests = fraction x (NVML total GiB x GPUs - params x "
    "bytes per weight) / (2 x layers x max(tp, kv heads) x head size x bytes per KV element x (ISL + OSL)); batch "
    "min(requests, 4096) rounded up to 32 / 128 / 256, at least 64; tokens min(batch x (1 + ISL/OSL), 32768) "
    "rounded up to 256 / 512 / 1024, at least 2048); tensorrt_llm/bench/build/utils.py get_device_memory (NVML total); "
    "tensorrt_llm/bench/benchmark/throughput.py (--kv_cache_free_gpu_mem_fraction default 0.90, --scheduler_policy "
    "default guaranteed_no_evict, --enable_chunked_context off, --eos_id -1: no early stop, max_seq_len the "
    "dataset's longest request)")


#: How rows are read, each a switch that :func:`reading_as_received` turns off to show what the reading changed:
#: ``trtllm_bench_limits``, trtllm-bench rows run with the limits trtllm-bench derives (:func:`trtllm_bench_settings`)
#: instead of the simulator's defaults (256 running requests, 8,192 tokens a step); ``vllm_0_5_launch``, the
#: engine settings of rows marked with it (``inputs.engine_settings.reading``).
READINGS = {"trtllm_bench_limits": "trtllm-bench throughput rows run with the max_batch_size and max_num_tokens "
                                   "trtllm-bench derives from the dataset (" + TRTLLM_BENCH_SOURCE + ")",
            "vllm_0_5_launch": "vLLM 0.5.4 rows (Lambda's benchmark) run as their launch set them: chunked prefill off "
                               "below a 32K max_model_len (vLLM pull request 6666), V0's budget max(max_model_len, "
                               "2048), the launch's --max-model-len and --gpu-memory-utilization (the rows' "
                               "engine_settings, marked reading 'vllm_0_5_launch')"}
_READINGS = {key: True for key in READINGS}


class reading_as_received:
    """Context manager: rows read as they were before :data:`READINGS` (every reading switched off).

    The accuracy page's before/after table uses it (:mod:`calc.latency_loso`); nothing else should.

    >>> row = next(r for r in load_rows() if TRTLLM_BENCH in r["inputs"]["engine"])
    >>> with reading_as_received():
    ...     before = scenario_for(row).get("max_num_seqs")
    >>> before, scenario_for(row)["max_num_seqs"] > 256
    (None, True)
    """

    def __enter__(self):
        self._saved = dict(_READINGS)
        _READINGS.update({key: False for key in READINGS})
        return self

    def __exit__(self, *exc):
        _READINGS.update(self._saved)
        return False


def trtllm_bench_settings(model: str, gpu: str, *, tp: int, weights: str, kv_dtype: str, input_tokens: int,
                          output_tokens: int, kv_cache_free_gpu_mem_fraction: float = TRTLLM_BENCH_KV_FRACTION,
                          chunked_prefill: bool = False) -> tuple[int, int]:
    """(max_batch_size, max_num_tokens) trtllm-bench throughput picks for a fixed-length dataset (PyTorch backend).

    Given neither limit, trtllm-bench derives both from the KV memory its own estimate leaves and the dataset's
    lengths, "slightly optimistic" upper bounds (:data:`TRTLLM_BENCH_SOURCE`): the requests that fit in
    ``fraction x (total GiB - weights)``, capped at 4,096 and rounded up, and as many tokens as that batch's
    prompts per answer token, at most 32,768; with chunked prefill off, at least the longest prompt plus the
    batch. So Llama 3.1 405B FP8 on eight H200s at 128/128 runs up to 4,096 requests, not an API server's 256.

    >>> trtllm_bench_settings("llama-3.1-405b", "h200", tp=8, weights="fp8", kv_dtype="bf16", input_tokens=128,
    ...                       output_tokens=128)
    (4096, 8192)
    >>> trtllm_bench_settings("llama-3.1-405b", "h100-sxm-80gb", tp=8, weights="fp8", kv_dtype="bf16",
    ...                       input_tokens=5000, output_tokens=500)
    (96, 5096)
    """
    from calc.catalog import get_gpu, get_model

    m, g = get_model(model), get_gpu(gpu)
    tp = check_range("tp", tp, 1, 1024, integer=True)
    isl = check_range("input_tokens", input_tokens, 1, 10**7, integer=True)
    osl = check_range("output_tokens", output_tokens, 1, 10**7, integer=True)
    fraction = check_range("kv_cache_free_gpu_mem_fraction", kv_cache_free_gpu_mem_fraction, 0.01, 1.0)
    gib = 1024 ** 3
    bytes_per_token_gib = (2 * m.layers * max(tp, m.kv_heads) * m.head_dim
                           * _TRTLLM_BENCH_BYTES.get(kv_dtype, 2.0) / gib)
    engine_gib = m.total_params * _TRTLLM_BENCH_BYTES.get(weights, 2.0) / gib
    available_gib = g.memory_bytes("runtime") / gib * tp - engine_gib
    if available_gib <= 0:
        raise CalcError(f"trtllm-bench: {m.name}'s {engine_gib:.0f} GiB of weights do not fit on {tp} x {g.name}", "tp")
    requests = available_gib * fraction / (bytes_per_token_gib * (isl + osl))
    raw_batch = min(requests, 4096)
    raw_tokens = min(raw_batch * (1 + isl / osl), 32768)
    if raw_batch < 256:
        batch = max(64, 32 * math.ceil(raw_batch / 32))
    elif raw_batch < 1024:
        batch = 128 * math.ceil(raw_batch / 128)
    else:
        batch = 256 * math.ceil(raw_batch / 256)
    if raw_tokens < 4096:
        tokens = max(2048, 256 * math.ceil(raw_tokens / 256))
    elif raw_tokens < 8192:
        tokens = 512 * math.ceil(raw_tokens / 512)
    else:
        tokens = 1024 * math.ceil(raw_tokens / 1024)
    if not chunked_prefill:
        tokens = max(tokens, isl + batch)
    return batch, tokens


def kv_capacity_tokens_vllm(model: str, gpu: str, *, tp: int, weights: str, kv_dtype: str) -> int:
    """KV cache tokens the vLLM way at utilisation 0.9 on the runtime capacity (what the other rows get).

    >>> kv_capacity_tokens_vllm("llama-3.1-8b", "h100-sxm-80gb", tp=1, weights="bf16", kv_dtype="bf16") > 0
    True
    """
    from calc import memory

    return memory.kv_capacity(model, gpu, tp=tp, weights=weights, kv_dtype=kv_dtype, gpu_memory_utilization=0.9,
                              memory_basis="runtime").kv_cache_tokens


def _closed_requests(row: dict) -> int:
    """Profiled requests of a closed-loop row's run: the client's ``request_count`` when the row gives it.

    The warm-up requests sent before them are :func:`warmup_requests`. Rows without a count keep the old
    default (4 per client, 100 to 1,200).

    >>> _closed_requests({"inputs": {"client": {"concurrency": 25, "request_count": 250}}})
    250
    >>> _closed_requests({"inputs": {"client": {"concurrency": 25}}})
    100
    """
    client = row["inputs"]["client"]
    n = check_range("concurrency", client["concurrency"], 1, 100_000, integer=True)
    if client.get("request_count") is not None:
        return check_range("request_count", client["request_count"], n, _MAX_PROFILED_REQUESTS, integer=True)
    return min(_MAX_REQUESTS, max(_MIN_REQUESTS, _REQUESTS_PER_CLIENT * n))


def warmup_requests(row: dict) -> int:
    """Requests a closed-loop row's client sends before the ones it measures (``client.warmup_request_count``).

    They run first, on the same clients, and are left out of the row's latencies
    (:class:`calc.sim.arrivals.ProfiledSink`); the profiled requests follow them with no pause, so they meet a
    server in its steady state rather than an idle one. Why no pause although AIPerf's current code waits
    for the warm-up's responses before it profiles (ai-dynamo/aiperf ``aiperf/timing/credit_issuing_strategy.py``,
    ``_execute_phases``): NIM's own figures rule an idle start out. Started from idle, N clients' first
    prompts queue behind each other, the k-th waiting k - 1 prefills; with 5,000-token prompts (a prefill is
    about 0.4 s: NIM's TTFT at one client is 407 ms) the first round's mean TTFT is about 0.4 x (N + 1) / 2
    s, one tenth of the 10 N profiled requests: at concurrency 50 that round alone adds about 1.0 s to
    the mean, above the whole measured 835 ms. So the measured requests met a running load, as a client that
    measures windows of a load already running does (GenAI-Perf over perf_analyzer, the NIM 1.x
    benchmarking tool: perf_analyzer keeps N requests outstanding and counts the requests completed in
    each window, docs "Measurement Modes"). Rows without a count have no warm-up (0).

    >>> warmup_requests({"inputs": {"client": {"concurrency": 25, "warmup_request_count": 50}}})
    50
    >>> warmup_requests({"inputs": {"client": {"concurrency": 25}}})
    0
    """
    client = row["inputs"]["client"]
    count = client.get("warmup_request_count")
    if count is None:
        return 0
    return check_range("warmup_request_count", count, 0, _MAX_PROFILED_REQUESTS, integer=True)


@functools.lru_cache(maxsize=8192)
def _simulate_json(scenario_json: str, profile_key: tuple, warmup: int = 0) -> dict:
    """The summary of one simulator run, kept by its scenario and engine profile (rows of one run share it).

    Until the engine delays each request by ``hardware.request_overhead_s`` itself (the closed-loop client's
    branch does), its effect is approximated here: every request's TTFT and end-to-end latency grow by it
    (exact with one request in flight; under load the delay would also shift the queue). ``request_overhead``
    in the summary says which way the run was priced. With ``warmup`` > 0 the first ``warmup`` requests sent
    are the client's warm-up: served, but left out of the latencies (:func:`warmup_requests`).
    """
    from calc.sim import Scenario, simulate  # the simulator is imported only when a row is predicted
    from calc.sim.arrivals import ProfiledSink
    from calc.sim.fleet import Fleet, summarize
    from calc.sim.hardware import replica_hardware
    from calc.sim.scheduler import TICKS

    scenario = Scenario.from_dict(json.loads(scenario_json))
    if warmup:
        run = Fleet(scenario, time_series=False, sink=ProfiledSink(TICKS, warmup))
        run.advance()
        summary = summarize(run)
    else:
        summary = dict(simulate(scenario).summary)
    delay = replica_hardware(scenario).request_overhead_s
    if delay and not _engine_applies_request_overhead():
        for key in list(summary):
            if (key.startswith("ttft_") or key.startswith("e2e_")) and key.endswith("_s") and summary[key] is not None:
                summary[key] += delay
        summary["request_overhead"] = f"added to TTFT and e2e here: {round_sig(delay, 4)} s"
    else:
        summary["request_overhead"] = f"applied by the engine: {round_sig(delay, 4)} s"
    return summary


@functools.lru_cache(maxsize=1)
def _engine_applies_request_overhead() -> bool:
    """Whether the simulator delays requests by ``request_overhead_s`` (one tiny run with a 1 s delay)."""
    from calc import engine_profiles
    from calc.sim import Scenario, simulate

    scenario = Scenario.from_dict({"model": "llama-3.1-8b", "tp": 1, "engine": engine_profiles.DEFAULT_ENGINE,
                                   "workload": {"arrival": "all-at-once", "requests": 1, "prompt_tokens": 8,
                                                "output_tokens": 2}})
    base = engine_profiles.get_profile(engine_profiles.DEFAULT_ENGINE)
    saved = dict(engine_profiles._TRIAL)
    try:
        engine_profiles._TRIAL[base.key] = base.with_terms(request_overhead_s=1.0, step_overhead_s=0.0,
                                                           tp_step_overhead_s=0.0)
        return simulate(scenario).summary["ttft_mean_s"] > 0.5
    finally:
        engine_profiles._TRIAL.clear()
        engine_profiles._TRIAL.update(saved)


def _profile_key(engine: str) -> tuple:
    from calc import engine_profiles

    p = engine_profiles.get_profile(engine)
    return (p.key, p.scheduler_steps, p.context_chunking, p.capacity_policy) + tuple(getattr(p, t) for t in engine_profiles.TERMS)


def _run(scenario: dict, warmup: int = 0) -> dict:
    return _simulate_json(json.dumps(scenario, sort_keys=True), _profile_key(scenario.get("engine", "vllm")), warmup)


@functools.lru_cache(maxsize=1)
def closed_loop_client_available() -> bool:
    """Whether :class:`calc.sim.Scenario` accepts the engine's closed-loop client (``arrival: closed-loop``).

    >>> isinstance(closed_loop_client_available(), bool)
    True
    """
    from calc.sim import Scenario

    try:
        Scenario.from_dict({"workload": {"arrival": "closed-loop", "concurrency": 2, "requests": 4}})
    except CalcError:
        return False
    return True


def _in_flight(summary: dict) -> float:
    return (summary["queue_depth_mean"] or 0.0) + (summary["running_mean"] or 0.0)


def simulate_row(row: dict) -> tuple[dict, str, dict]:
    """(simulator summary, client used, its scenario) for one row; closed-loop rows via the Little's-law stand-in.

    For ``closed_loop`` the Poisson rate is bisected until the simulated mean of queued + running requests is
    within 2% of the row's concurrency (or the bracket is spent). Source: :func:`calc.sim.simulate`.

    >>> summary, client, scenario = simulate_row(load_rows()[0])
    >>> client, summary["requests_completed"]
    ('batch', 8)
    """
    kind = row["inputs"]["client"]["kind"]
    if kind != "closed_loop":
        scenario = scenario_for(row)
        return _run(scenario), kind, scenario
    if closed_loop_client_available():
        scenario = scenario_for(row)
        warmup = warmup_requests(row)
        used = "closed_loop (the engine's client)" + (f", {warmup} warm-up requests not measured" if warmup else "")
        return _run(scenario, warmup), used, scenario
    target = float(check_range("concurrency", row["inputs"]["client"]["concurrency"], 1, 100_000))
    if target == 1:
        # One client sends one request at a time: exactly a run of one request (no stand-in needed).
        scenario = scenario_for(row, rate_per_s=1.0, requests=1)
        scenario["workload"] = dict(scenario["workload"], arrival="all-at-once")
        return _run(scenario), "closed_loop, 1 client: one request at a time (exact)", scenario
    # Bracket: a rate far below one request per request-time, and one that floods the replica.
    low, high = 1e-3, 1.0
    while True:
        summary = _run(scenario_for(row, rate_per_s=high))
        if _in_flight(summary) >= target or high > 1e5:
            break
        low, high = high, high * 4
    best = (abs(_in_flight(summary) - target), high, summary)
    for _ in range(_BISECTION_STEPS):
        mid = math.sqrt(low * high)  # rates span decades: bisect in log space
        summary = _run(scenario_for(row, rate_per_s=mid))
        gap = _in_flight(summary) - target
        if abs(gap) < best[0]:
            best = (abs(gap), mid, summary)
        if abs(gap) <= _IN_FLIGHT_TOLERANCE * target:
            break
        low, high = (mid, high) if gap < 0 else (low, mid)
    _, rate, summary = best
    return summary, f"closed_loop stand-in: {CLOSED_LOOP_STANDIN} (rate {round_sig(rate, 4)}/s)", \
        scenario_for(row, rate_per_s=rate)


def _stat_key(prefix: str, statistic: str) -> str:
    return f"{prefix}_p50_s" if statistic == "median" else (f"{prefix}_p99_s" if statistic == "p99"
                                                            else f"{prefix}_mean_s")


def _predicted(row: dict, summary: dict) -> float:
    """The simulated figure in the row's unit."""
    figure, x = row["figure"], row["inputs"]
    quantity, statistic, unit = figure["quantity"], figure["statistic"], figure["unit"]
    scale = 1_000.0 if unit == "ms" else 1.0
    if quantity == "ttft":
        return summary[_stat_key("ttft", statistic)] * scale
    if quantity == "e2e":
        return summary[_stat_key("e2e", statistic)] * scale
    if quantity == "tpot":
        lengths = x["lengths"]
        key = _stat_key("tpot", statistic)
        if summary.get(key) is not None:
            return summary[key] * scale  # the per-request TPOT, once the simulator reports it
        if lengths["kind"] == "fixed" and lengths["output_tokens"] > 1 and statistic == "mean":
            # With every answer the same length, the mean of (e2e - TTFT) / (n - 1) is exactly this.
            return (summary["e2e_mean_s"] - summary["ttft_mean_s"]) / (lengths["output_tokens"] - 1) * scale
        # Until then, the token-weighted ITL of the same statistic stands in for the per-request TPOT.
        return summary[_stat_key("itl", statistic)] * scale
    if quantity == "itl":
        return summary[_stat_key("itl", statistic)] * scale
    if quantity == "throughput":
        if unit == "requests/s":
            return summary["throughput_requests_per_s"]
        if unit == "output tokens/s":
            return summary["throughput_output_tokens_per_s"]
        raise CalcError(f"figure.unit of a throughput must be requests/s or output tokens/s; got {unit!r}", "unit")
    raise CalcError(f"figure.quantity must be one of {', '.join(_METRIC_OF_QUANTITY)}; got {quantity!r}", "quantity")


@dataclass(frozen=True)
class LatencyResult:
    """One published figure beside the simulator's, with the client that produced it.

    ``optimistic`` is True when calc promises better than measured (a shorter latency, a higher throughput).

    >>> r = LatencyResult("x", "validation", "ttft", "a run", "ms", 100.0, 80.0, -0.2, True, "poisson", "src", "row")
    >>> r.optimistic, r.to_dict()["error"]
    (True, -0.2)
    """

    id: str
    role: str
    metric: str
    label: str
    unit: str
    measured: float
    predicted: float
    error: float
    optimistic: bool
    client_used: str
    source_cite: str
    source_where: str

    def to_dict(self) -> dict:
        """JSON-ready, floats to 6 significant digits.

        >>> predict_row(load_rows()[0]).to_dict()["unit"]
        'ms'
        """
        return {k: round_sig(v) if isinstance(v, float) else v for k, v in asdict(self).items()}


def predict_row(row: dict) -> LatencyResult:
    """The simulator's figure for one row, its relative error and whether it is optimistic.

    >>> r = predict_row(load_rows()[0])
    >>> r.metric, r.role, r.measured, abs(r.error) < 0.05   # a fitted row: within the joint fit's residual
    ('e2e', 'calibration', 997.365, True)
    """
    if row.get("kind") != LATENCY_KIND:
        raise CalcError(f"kind must be {LATENCY_KIND}; got {row.get('kind')!r}", "kind")
    summary, client_used, _ = simulate_row(row)
    predicted = _predicted(row, summary)
    measured = float(row["figure"]["value"])
    metric = metric_of(row)
    error = relative_error(predicted, measured)
    return LatencyResult(
        id=row["id"], role=row["role"], metric=metric, label=row["label"], unit=row["figure"]["unit"],
        measured=measured, predicted=predicted, error=error,
        optimistic=(error > 0) if metric == "throughput" else (error < 0), client_used=client_used,
        source_cite=row["source"]["cite"], source_where=row["source"]["where"])


def evaluate(rows=None) -> tuple[LatencyResult, ...]:
    """Every ``online_latency`` row predicted, in the data file's order.

    >>> results = evaluate()
    >>> len(results) == len(load_rows()), sorted({r.metric for r in results}) == sorted(METRICS)
    (True, True)
    """
    return tuple(predict_row(row) for row in (load_rows() if rows is None else rows))


def summary(results=None) -> dict:
    """Per role (calibration, validation) and per metric: n, median |error|, median error, n optimistic.

    >>> s = summary()
    >>> s["validation"]["ttft"]["n"] >= 5, s["calibration"]["e2e"]["n"]
    (True, 6)
    """
    results = evaluate() if results is None else results
    out = {}
    for role in ("calibration", "validation"):
        out[role] = {}
        for metric in METRICS:
            chosen = [r for r in results if r.role == role and r.metric == metric]
            if not chosen:
                out[role][metric] = {"n": 0, "median_abs_error": None, "median_error": None, "n_optimistic": 0}
                continue
            out[role][metric] = {
                "n": len(chosen),
                "median_abs_error": median([abs(r.error) for r in chosen]),
                "median_error": median([r.error for r in chosen]),
                "n_optimistic": sum(r.optimistic for r in chosen),
            }
    return out


def by_source(results=None) -> dict:
    """Per source (its short citation) and metric, over every row of it: n and the median signed error.

    The sign says which way calc is off for that engine and set-up (negative: calc is faster than measured),
    which a single median over all sources hides.

    >>> s = by_source()
    >>> s["NVIDIA NIM benchmarking guide"]["ttft"]["n"]
    10
    """
    results = evaluate() if results is None else results
    out: dict = {}
    for r in results:
        out.setdefault(r.source_cite, {}).setdefault(r.metric, []).append(r.error)
    return {cite: {metric: {"n": len(errors), "median_error": median(errors)} for metric, errors in metrics.items()}
            for cite, metrics in out.items()}


def report(results=None, *, rows: bool = False) -> str:
    """The baseline report as text: the per-role, per-metric table, and with ``rows`` every figure.

    >>> print(report().splitlines()[0])
    calc against published online-serving runs (calc/data/measurements.json, kind online_latency)
    """
    results = evaluate() if results is None else results
    s = summary(results)
    standin = sum(CLOSED_LOOP_STANDIN in r.client_used for r in results)
    closed = sum(r.client_used.startswith("closed_loop") for r in results)
    how = (f"{standin} of them with the stand-in client ({CLOSED_LOOP_STANDIN})" if standin
           else "all driven by the engine's closed-loop client")
    lines = ["calc against published online-serving runs (calc/data/measurements.json, kind online_latency)",
             f"{len(results)} figures; {closed} from closed-loop runs, {how}.", "",
             f"{'role':<12} {'metric':<11} {'n':>3} {'median |err|':>13} {'median err':>11} {'optimistic':>11}"]
    for role in ("calibration", "validation"):
        for metric in METRICS:
            m = s[role][metric]
            if not m["n"]:
                lines.append(f"{role:<12} {METRIC_LABELS[metric]:<11} {0:>3} {'-':>13} {'-':>11} {'-':>11}")
                continue
            lines.append(f"{role:<12} {METRIC_LABELS[metric]:<11} {m['n']:>3} {m['median_abs_error']:>13.1%} "
                         f"{m['median_error']:>+11.1%} {m['n_optimistic']:>5} of {m['n']:<3}")
    lines += ["", "median signed error by source (all roles):"]
    for cite, metrics in by_source(results).items():
        parts = [f"{METRIC_LABELS[m]} {metrics[m]['median_error']:+.0%} (n={metrics[m]['n']})"
                 for m in METRICS if m in metrics]
        lines.append(f"  {cite}: " + "; ".join(parts))
    if rows:
        lines += ["", f"{'id':<58} {'role':<11} {'measured':>11} {'calc':>11} {'error':>8}  client"]
        for r in results:
            lines.append(f"{r.id:<58} {r.role:<11} {r.measured:>11.5g} {r.predicted:>11.5g} {r.error:>+8.1%}  "
                         f"{'closed-loop stand-in' if CLOSED_LOOP_STANDIN in r.client_used else r.client_used}")
    return "\n".join(lines)
