"""Engine versions: which profile an engine and version map to, and that version's own defaults.

The fitted profiles of :mod:`calc.engine_profiles` are the engines the calibration rows ran (vLLM's
nightly benchmark, vLLM 0.6 with multi-step scheduling, SGLang 0.3, NIM's TensorRT-LLM). The engines
people run today differ from those by their defaults more than by their step costs, so each current
version has a profile of its own here (:data:`CURRENT_PROFILES`): its step terms inherited from the
nearest fitted profile (an ``assumption``, said in its sources, until calibration rows of its own
exist), and its version's defaults (:func:`engine_defaults`): the running cap, the step's token
budget, the memory fraction and how the engine sizes its KV cache (:mod:`calc.engine_memory`).

:func:`resolve_engine` maps an engine name and version to a profile; a version no profile covers maps
to the nearest one and says so.

vLLM's current line runs Model Runner V2 (``vllm/v1/worker/gpu/model_runner.py``): the default for every
dense model from v0.25.0 (2026-07-11; release notes: "Model Runner V2 is now the default for all dense
models (#44443)"), for every model from v0.29.0 (2026-09-09; "Model Runner V2 is now the default for all
models (#53183)"). So vLLM 0.25 and later maps to ``vllm-mrv2`` (its memory model
``vllm-v1-mrv2``, :mod:`calc.engine_memory`), 0.8-0.24 to ``vllm-v1`` (Model Runner V1), and an MoE
model on 0.25-0.28 (still Model Runner V1 there) to ``vllm-v1`` too (:func:`resolve_engine` ``moe``).
Both inherit the fitted ``vllm`` profile's step terms (assumptions: no calibration row of either yet).

>>> resolve_engine("vllm", "0.10.1")
('vllm-v1', 'vllm 0.10.1: profile vllm-v1 (vLLM V1 engine, 0.8-0.24: Model Runner V1)')
>>> resolve_engine("vllm", "0.27.1")[0], resolve_engine("vllm", "0.27.1", moe=True)[0]
('vllm-mrv2', 'vllm-v1')
>>> engine_defaults("vllm-v1", "h100-sxm-80gb", tp=4)["max_num_seqs"]
1024
"""

from __future__ import annotations

from calc.errors import CalcError, check_choice, check_range

__all__ = ["VERSIONS", "MRV2_DEFAULT_DENSE", "MRV2_DEFAULT_ALL", "MRV2_SOURCE", "CURRENT_PROFILES", "FAMILIES", "resolve_engine", "engine_defaults", "parse_version",
           "SGLANG_MEM_FRACTION_BY_TP", "SGLANG_SOURCE", "sglang_running_cap", "TRTLLM_SERVE_SOURCE", "profile_memory_model"]

FAMILIES = ("vllm", "sglang", "trtllm")

#: SGLang 0.4-0.5 ``ServerArgs.__post_init__`` (python/sglang/srt/server_args.py): mem_fraction_static by
#: tensor-parallel size (0.88 on one GPU, 0.87 on 2, 0.85 on 4, 0.81 on 8, 0.79 on 16 or more);
#: chunked_prefill_size 2,048 on a GPU under 25,000 MB, else 8,192.
SGLANG_MEM_FRACTION_BY_TP = ((16, 0.79), (8, 0.81), (4, 0.85), (2, 0.87), (1, 0.88))
SGLANG_SOURCE = ("sglang python/sglang/srt/server_args.py ServerArgs.__post_init__ (0.4.x): mem_fraction_static "
                 "0.88 / 0.87 / 0.85 / 0.81 / 0.79 at TP 1 / 2 / 4 / 8 / 16; chunked_prefill_size 2048 below "
                 "25,000 MB of GPU memory, else 8192; max_running_requests from the KV pool (scheduler.py: "
                 "max_total_num_tokens // 2, at most the request pool)")
#: trtllm-serve's defaults (tensorrt_llm/commands/serve.py): --max_batch_size 2048, --max_num_tokens 8192,
#: --kv_cache_free_gpu_memory_fraction 0.9.
TRTLLM_SERVE_SOURCE = ("TensorRT-LLM tensorrt_llm/commands/serve.py (trtllm-serve): max_batch_size 2048, "
                       "max_num_tokens 8192, kv_cache_free_gpu_memory_fraction 0.9 (PyTorch backend)")

#: The vLLM versions from which Model Runner V2 is the default: for dense models, and for every model.
MRV2_DEFAULT_DENSE = (0, 25)
MRV2_DEFAULT_ALL = (0, 29)
MRV2_SOURCE = ("vLLM v0.25.0 release notes (https://github.com/vllm-project/vllm/releases/tag/v0.25.0, 2026-07-11), "
               "Highlights: 'Model Runner V2 is now the default for all dense models (#44443)'; v0.29.0 release notes "
               "(https://github.com/vllm-project/vllm/releases/tag/v0.29.0, 2026-09-09): 'Model Runner V2 is now the "
               "default for all models (#53183)'")

#: Each profile's engine family, the versions it stands for (inclusive, as (major, minor) pairs; None: open)
#: and how it sizes memory (:data:`calc.engine_memory.MEMORY_MODELS`).
VERSIONS = {
    "vllm-0.6-multistep": ("vllm", (0, 6), (0, 7), "vllm-v0", "vLLM 0.6-0.7 (V0 engine)"),
    "vllm-v1": ("vllm", (0, 8), (0, 24), "vllm-v1", "vLLM V1 engine, 0.8-0.24: Model Runner V1"),
    "vllm-mrv2": ("vllm", MRV2_DEFAULT_DENSE, None, "vllm-v1-mrv2", "vLLM V1 engine with Model Runner V2, 0.25 and later"),
    "vllm": ("vllm", None, None, "vllm-v1", "vLLM nightly (the lesson's engine)"),
    "sglang-0.3": ("sglang", (0, 3), (0, 3), "sglang", "SGLang 0.3"),
    "sglang-0.4": ("sglang", (0, 4), (0, 5), "sglang", "SGLang 0.4-0.5"),
    "nim-trtllm": ("trtllm", None, None, "trtllm", "NVIDIA NIM 1.8 (TensorRT-LLM backend)"),
    "trtllm-serve": ("trtllm", (0, 17), None, "trtllm", "TensorRT-LLM's own server (trtllm-serve), 0.17 and later"),
}

#: The current engines' profiles: (label, the fitted profile whose step terms they inherit, scheduler facts).
CURRENT_PROFILES = {
    "vllm-v1": ("vLLM V1 engine (0.8-0.24, vllm serve; Model Runner V1)", "vllm", {}),
    "vllm-mrv2": ("vLLM V1 engine with Model Runner V2 (0.25 and later, vllm serve)", "vllm", {}),
    "sglang-0.4": ("SGLang 0.4-0.5 (sglang.launch_server)", "sglang-0.3", {}),
    "trtllm-serve": ("TensorRT-LLM trtllm-serve (PyTorch backend)", "nim-trtllm", {}),
}


def sglang_running_cap(kv_cache_tokens: int, context_tokens: int) -> int:
    """SGLang's default running cap: half the KV pool's tokens, at most its request pool.

    ``min(max_total_num_tokens // 2, min(max(int(max_total_num_tokens / context_len x 512), 2048), 4096))``
    (sglang/srt/managers/scheduler.py, max_running_requests; model_runner.py, the request-to-token pool's
    size). Source: :data:`SGLANG_SOURCE`.

    >>> sglang_running_cap(500_000, 131_072), sglang_running_cap(3_000, 8192), sglang_running_cap(10**7, 8192)
    (2048, 1500, 4096)
    """
    kv = check_range("kv_cache_tokens", kv_cache_tokens, 1, 10**12, integer=True)
    context = check_range("context_tokens", context_tokens, 1, 10**9, integer=True)
    pool = min(max(int(kv / context * 512), 2048), 4096)
    return max(1, min(kv // 2, pool))


def parse_version(text) -> tuple[int, int]:
    """(major, minor) of a version string such as ``0.10.1`` or ``v0.4.3.post2``; CalcError otherwise.

    >>> parse_version("v0.4.3.post2"), parse_version("1.0")
    ((0, 4), (1, 0))
    >>> parse_version("latest")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: engine version must look like 0.10.1 (major.minor[.patch]); got 'latest'
    """
    parts = str(text).strip().lstrip("vV").split(".")
    try:
        return int(parts[0]), int(parts[1])
    except (ValueError, IndexError):
        raise CalcError(f"engine version must look like 0.10.1 (major.minor[.patch]); got {text!r}",
                        "engine_version") from None


def _distance(version: tuple[int, int], low, high) -> float:
    as_number = lambda v: v[0] * 100 + v[1]  # noqa: E731  (minor versions stay below 100)
    x = as_number(version)
    if low is not None and x < as_number(low):
        return as_number(low) - x
    if high is not None and x > as_number(high):
        return x - as_number(high)
    return 0


def resolve_engine(engine: str, version: str | None = None, *, moe: bool = False) -> tuple[str, str]:
    """(profile key, what was chosen and why) for an engine name or profile key, with an optional version.

    A profile key passes through (``vllm`` without a version is the lesson's profile). A family (``vllm``, ``sglang``, ``trtllm``) with a version maps to the
    profile whose versions cover it, else to the nearest one (the note says so); without a version,
    ``vllm`` is the lesson's profile and the others their current profile. vLLM 0.25-0.28 runs Model Runner
    V2 for dense models only (:data:`MRV2_SOURCE`): with ``moe`` true those versions map to ``vllm-v1``
    (Model Runner V1), and the note says why.

    >>> resolve_engine("sglang", "0.5.2")[0], resolve_engine("sglang", "0.2.9")
    ('sglang-0.4', ('sglang-0.3', 'sglang 0.2.9: no profile covers it; nearest is sglang-0.3 (SGLang 0.3)'))
    >>> resolve_engine("vllm", "0.26.0", moe=True)[1]
    'vllm 0.26.0: profile vllm-v1 (vLLM V1 engine, 0.8-0.24: Model Runner V1): Model Runner V2 is the default for dense models only before 0.29'
    >>> resolve_engine("vllm", "0.31.0")
    ('vllm-mrv2', 'vllm 0.31.0: profile vllm-mrv2 (vLLM V1 engine with Model Runner V2, 0.25 and later)')
    >>> resolve_engine("nim-trtllm")
    ('nim-trtllm', 'nim-trtllm: NVIDIA NIM 1.8 (TensorRT-LLM backend)')
    >>> resolve_engine("ollama")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: engine must be a profile (nim-trtllm, sglang-0.3, sglang-0.4, trtllm-serve, vllm, vllm-0.6-multistep, vllm-mrv2, vllm-v1) or an engine family (vllm, sglang, trtllm); got 'ollama'
    """
    name = str(engine).strip().lower()
    if name in VERSIONS and not (version is not None and name in FAMILIES):
        if version is not None:
            raise CalcError(f"engine {name!r} is a profile: give a family (vllm, sglang, trtllm) with a version, "
                            "or the profile alone", "engine_version")
        return name, f"{name}: {VERSIONS[name][4]}"
    if name not in FAMILIES:
        raise CalcError(f"engine must be a profile ({', '.join(sorted(VERSIONS))}) or an engine family "
                        f"({', '.join(FAMILIES)}); got {engine!r}", "engine")
    if version is None:
        key = {"sglang": "sglang-0.4", "trtllm": "trtllm-serve"}[name]
        return key, f"{name}: profile {key} ({VERSIONS[key][4]}); no version given"
    wanted = parse_version(version)
    candidates = [(k, v) for k, v in VERSIONS.items() if v[0] == name and (v[1] or v[2])]
    best = min(candidates, key=lambda kv: (_distance(wanted, kv[1][1], kv[1][2]), kv[0]))
    if best[0] == "vllm-mrv2" and moe and wanted < MRV2_DEFAULT_ALL:
        v1 = VERSIONS["vllm-v1"]
        return "vllm-v1", (f"{name} {version}: profile vllm-v1 ({v1[4]}): Model Runner V2 is the default for "
                           f"dense models only before {MRV2_DEFAULT_ALL[0]}.{MRV2_DEFAULT_ALL[1]}")
    if _distance(wanted, best[1][1], best[1][2]) == 0:
        return best[0], f"{name} {version}: profile {best[0]} ({best[1][4]})"
    return best[0], f"{name} {version}: no profile covers it; nearest is {best[0]} ({best[1][4]})"


def profile_memory_model(profile_key: str) -> str:
    """How the profile's engine sizes its KV cache (:data:`calc.engine_memory.MEMORY_MODELS`).

    >>> profile_memory_model("sglang-0.3"), profile_memory_model("vllm-0.6-multistep")
    ('sglang', 'vllm-v0')
    """
    check_choice("engine", profile_key, tuple(VERSIONS))
    return VERSIONS[profile_key][3]


def engine_defaults(profile_key: str, gpu, *, tp: int = 1, offline: bool = False) -> dict:
    """The version's defaults on ``gpu`` at ``tp``: running cap, token budget, memory fraction, memory model.

    * vLLM V1 (and the nightly profile): :func:`calc.engine_memory.vllm_v1_batch_defaults` (1,024 sequences
      and 8,192 tokens, 16,384 offline, on GPUs of 70 GiB or more that are not A100s; else 256 and 2,048),
      gpu_memory_utilization 0.9;
    * vLLM 0.6 (V0): 256 sequences, max(max_model_len, 2,048) tokens without chunked prefill (``None``
      here: the caller's max_model_len decides), utilization 0.9;
    * SGLang 0.3-0.5: :data:`SGLANG_MEM_FRACTION_BY_TP`, chunked prefill 2,048 under 25,000 MB else 8,192;
      the running cap follows the KV pool (``None``: :data:`SGLANG_SOURCE`);
    * TensorRT-LLM (trtllm-serve, NIM): 2,048 in flight, 8,192 tokens, 0.9 of free memory.

    >>> d = engine_defaults("sglang-0.4", "l4", tp=2)
    >>> d["gpu_memory_utilization"], d["max_num_batched_tokens"], d["max_num_seqs"], d["memory_model"]
    (0.87, 2048, None, 'sglang')
    >>> engine_defaults("vllm-v1", "a100-80gb")["max_num_batched_tokens"]
    2048
    """
    from calc import engine_memory
    from calc.catalog import get_gpu

    check_choice("engine", profile_key, tuple(VERSIONS))
    g = get_gpu(gpu)
    tp = check_range("tp", tp, 1, 1024, integer=True)
    family, _, _, memory_model, _ = VERSIONS[profile_key]
    if memory_model in ("vllm-v1", "vllm-v1-mrv2"):  # Model Runner V2 keeps the V1 engine's scheduler defaults
        tokens, seqs = engine_memory.vllm_v1_batch_defaults(g, offline=offline)
        out = dict(max_num_seqs=seqs, max_num_batched_tokens=tokens, gpu_memory_utilization=0.9,
                   source=engine_memory.VLLM_V1_DEFAULTS_SOURCE + "; gpu_memory_utilization 0.9")
    elif memory_model == "vllm-v0":
        out = dict(max_num_seqs=256, max_num_batched_tokens=None, gpu_memory_utilization=0.9,
                   source="vLLM 0.6 vllm/engine/arg_utils.py: max_num_seqs 256, max_num_batched_tokens "
                          "max(max_model_len, 2048) without chunked prefill, gpu_memory_utilization 0.9")
    elif family == "sglang":
        fraction = next(f for n, f in SGLANG_MEM_FRACTION_BY_TP if tp >= n)
        small = g.memory_bytes("runtime") < 25_000 * 2**20
        out = dict(max_num_seqs=None, max_num_batched_tokens=2048 if small else 8192,
                   gpu_memory_utilization=fraction, source=SGLANG_SOURCE)
    else:
        out = dict(max_num_seqs=2048, max_num_batched_tokens=8192, gpu_memory_utilization=0.9,
                   source=TRTLLM_SERVE_SOURCE)
    out["memory_model"] = memory_model
    return out
