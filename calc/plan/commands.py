"""The commands that check a plan on real GPUs: ``vllm serve`` with the plan's flags, ``vllm bench serve`` replaying its traffic.

The flags are vLLM's engine arguments (docs.vllm.ai, "Engine Arguments": ``--tensor-parallel-size``,
``--quantization``, ``--kv-cache-dtype``, ``--max-num-seqs``, ``--max-num-batched-tokens``,
``--enable-prefix-caching``, ``--speculative-config``, ``--gpu-memory-utilization``, ``--max-model-len``), each
spelled by its search dimension (:data:`calc.plan.space.DIMENSIONS`). The benchmark is ``vllm bench serve``
(docs.vllm.ai, "vllm bench serve"): the random dataset at the plan's mean lengths (and shared prefix), Poisson
arrivals at the peak rate, TTFT and TPOT at the 50th and 99th percentiles; run it against one replica at its
share of the peak (the fleet's router spreads the rest), so one server checks the plan.

>>> from calc.plan.inputs import PlanRequest
>>> c = (("gpu", "h100-sxm-80gb"), ("tp", 2), ("weights", "fp8"), ("kv_dtype", "fp8"), ("max_num_seqs", 64))
>>> serve_command(PlanRequest(), c)
'vllm serve meta-llama/Llama-3.1-70B --tensor-parallel-size 2 --quantization fp8 --kv-cache-dtype fp8 --max-num-seqs 64 --gpu-memory-utilization 0.9 --max-model-len 8192'
"""

from __future__ import annotations

import math
import re
import shlex

from calc.catalog import get_model
from calc.plan.confirm import SIMULATED_S
from calc.plan.space import BY_NAME

__all__ = ["hf_repo", "serve_command", "bench_command", "commands"]


def hf_repo(model_key: str) -> str:
    """The Hugging Face repository a catalog model's config.json comes from (its ``source``), else its key.

    >>> hf_repo("llama-3.1-8b")
    'meta-llama/Llama-3.1-8B'
    """
    model = get_model(model_key)
    found = re.search(r"huggingface\.co/([\w.-]+/[\w.-]+)", model.source or "")
    return found.group(1) if found else model.key


def serve_command(request, candidate, *, max_model_len: int | None = None) -> str:
    """``vllm serve`` for one replica of ``candidate`` (each search dimension's flags, in registry order).

    >>> from calc.plan.inputs import PlanRequest
    >>> serve_command(PlanRequest(model="llama-3.1-8b"), (("tp", 1), ("speculation", "eagle")))  # doctest: +ELLIPSIS
    'vllm serve meta-llama/Llama-3.1-8B --tensor-parallel-size 1 --speculative-config \\'{"method": "eagle", ...}\\' ...'
    """
    from calc.plan.screen import max_model_len_of

    args = ["vllm", "serve", hf_repo(request.model)]
    for name, value in candidate:
        args += BY_NAME[name].vllm(value)
    args += ["--gpu-memory-utilization", "0.9", "--max-model-len", str(max_model_len or max_model_len_of(request))]
    return " ".join(shlex.quote(a) for a in args)


def bench_command(request, replicas: int, *, num_prompts: int | None = None) -> str:
    """``vllm bench serve`` replaying the plan's traffic against one replica at its share of the peak rate.

    >>> from calc.plan.inputs import PlanRequest
    >>> bench_command(PlanRequest(peak_rate_per_s=20), 4)
    'vllm bench serve --backend vllm --model meta-llama/Llama-3.1-70B --dataset-name random --random-input-len 1024 --random-output-len 256 --random-range-ratio 0 --request-rate 5 --num-prompts 600 --ignore-eos --percentile-metrics ttft,tpot,itl --metric-percentiles 50,99 --seed 0'
    """
    prompt, answer = request.prompt_answer_means()
    prefix = round(request.shared_prefix_tokens())
    fixed = not request.trace and all(c.lengths == "fixed" for c in request.classes)
    rate = request.peak_rate_per_s / max(1, replicas)
    prompts = num_prompts or max(200, math.ceil(rate * SIMULATED_S))  # as long as the simulated run
    args = ["vllm", "bench", "serve", "--backend", "vllm", "--model", hf_repo(request.model),
            "--dataset-name", "random", "--random-input-len", str(max(1, round(prompt) - prefix)),
            "--random-output-len", str(round(answer)), "--random-range-ratio", "0" if fixed else "0.5"]
    if prefix:
        args += ["--random-prefix-len", str(prefix)]
    args += ["--request-rate", f"{rate:.4g}", "--num-prompts", str(prompts), "--ignore-eos",
             "--percentile-metrics", "ttft,tpot,itl", "--metric-percentiles", "50,99", "--seed", str(request.seed)]
    return " ".join(shlex.quote(a) for a in args)


def commands(request, candidate, replicas: int) -> dict:
    """The serve and bench commands of a plan, and what they check, as the answer carries them.

    >>> from calc.plan.inputs import PlanRequest
    >>> sorted(commands(PlanRequest(), (("tp", 4),), 4))
    ['bench', 'note', 'serve']
    """
    layout = dict(candidate).get("layout", "aggregated")
    note = (f"Start {replicas} replicas with the serve command behind a least-outstanding-requests router; the "
            "bench command sends one replica its share of the peak rate: its p99 TTFT and TPOT should fall in the "
            "plan's bands.")
    if layout != "aggregated":
        note += (" The pools run as vLLM's disaggregated prefill (--kv-transfer-config with a KV connector, "
                 "one instance per pool); the serve command gives each pool's engine flags.")
    if not request.engine.startswith("vllm"):
        note += f" The commands are vLLM's; the plan's engine profile is {request.engine}, whose server takes its own flags."
    if request.trace:
        note += (" The trace's own arrival times are replayed only by a trace-replay client; the bench command "
                 "sends its mean lengths at its busiest minute's rate.")
    return {"serve": serve_command(request, candidate), "bench": bench_command(request, replicas), "note": note}
