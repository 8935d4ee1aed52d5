"""The published-measurements data file: every entry sourced, described and figured; calibration as named in calc."""

from __future__ import annotations

import json
import math
import re

import pytest

from calc import accuracy, roofline, speculative
from calc.accuracy import KINDS, ROLES, calibration_ids, load_measurements
from calc.catalog import GPUS, MODELS, model_from_config

MEASUREMENTS = load_measurements()
BY_ID = {m["id"]: m for m in MEASUREMENTS}

REQUIRED_INPUTS = {
    "kv_capacity": {"model", "gpu", "tp", "weights", "kv_dtype", "gpu_memory_utilization", "block_size", "engine"},
    "throughput": {"mode", "model", "gpu", "tp", "weights", "kv_dtype", "engine"},
    "paged_utilization": {"policy", "mean_prompt_tokens", "mean_output_tokens", "max_model_len", "block_size",
                          "requests", "seed", "engine"},
    "speculative": {"mode", "method", "model", "gpu", "tp", "weights", "kv_dtype", "context_tokens", "engine"},
    "prefix_caching": {"mode", "min_prompt_tokens", "max_prompt_tokens", "repeats", "block_size", "engine"},
}


def test_the_file_is_plain_json_with_an_about_line():
    with open(accuracy.DATA_PATH, encoding="utf-8") as handle:
        data = json.load(handle)
    assert set(data) == {"about", "measurements"}
    assert "calibration" in data["about"] and "validation" in data["about"]


def test_at_least_thirty_measurements_with_unique_ids_and_every_kind():
    assert len(MEASUREMENTS) >= 30
    assert len(BY_ID) == len(MEASUREMENTS)
    assert {m["kind"] for m in MEASUREMENTS} == set(KINDS)


@pytest.mark.parametrize("m", MEASUREMENTS, ids=[m["id"] for m in MEASUREMENTS])
def test_every_entry_has_source_inputs_figure_and_role(m):
    assert set(m) >= {"id", "kind", "role", "label", "figure", "inputs", "source", "notes"}
    assert m["kind"] in KINDS and m["role"] in ROLES
    assert m["label"].strip() and m["notes"].strip()
    source = m["source"]
    assert set(source) == {"cite", "name", "url", "where", "read"}
    assert source["url"].startswith("https://") and all(source[k].strip() for k in ("cite", "name", "where", "read"))
    figure = m["figure"]
    assert isinstance(figure["value"], (int, float)) and figure["value"] > 0 and math.isfinite(figure["value"])
    assert figure["unit"] and figure["metric"]
    if "over" in figure:
        assert figure["over"] > 0 and figure["as_published"], "a ratio keeps both published numbers"
    assert REQUIRED_INPUTS[m["kind"]] <= set(m["inputs"]), sorted(REQUIRED_INPUTS[m["kind"]] - set(m["inputs"]))


@pytest.mark.parametrize("m", MEASUREMENTS, ids=[m["id"] for m in MEASUREMENTS])
def test_models_and_gpus_are_catalog_keys_or_carry_their_own_spec_and_source(m):
    x = m["inputs"]
    model, gpu = x.get("model"), x.get("gpu")
    if m["kind"] == "prefix_caching":
        return  # token counts only: the model and GPU are described in words
    if isinstance(model, dict):
        assert model["config"] and "config.json" in model["source"]
    elif model is not None:
        assert model in MODELS
    if isinstance(gpu, dict):
        assert gpu["memory_gib"] > 0 and gpu["source"]
    elif gpu is not None:
        assert gpu in GPUS


def test_exactly_the_calibration_rows_named_in_calc_are_calibration():
    marked = {m["id"] for m in MEASUREMENTS if m["role"] == "calibration"}
    assert marked == calibration_ids()


def test_calibration_rows_match_the_figures_calc_fits_on():
    for isl, osl, tokens_per_s in roofline.CALIBRATION_ROW:
        m = BY_ID[f"trtllm-llama-3.1-8b-fp8-h100-tp1-{isl}-{osl}"]
        assert m["figure"]["value"] == tokens_per_s
        assert m["inputs"]["input_tokens"] == isl and m["inputs"]["output_tokens"] == osl
    assert BY_ID[accuracy.EAGLE_CALIBRATION_ID]["figure"]["value"] == 1.40
    assert "1.40x at batch 2" in speculative.EAGLE_LIKE.source
    assert "1.81x" in accuracy.EAGLE3_LIKE.source
    assert BY_ID[accuracy.EAGLE3_CALIBRATION_ID]["figure"]["value"] == 1.81


def test_calcs_own_validation_rows_are_in_the_data_set_as_validation():
    for row in roofline.VALIDATION_ROWS:
        gpu = "h100" if row["gpu"] == "h100-sxm-80gb" else row["gpu"]
        m = BY_ID[f"trtllm-llama-3.1-8b-fp8-{gpu}-tp1-{row['input_tokens']}-{row['output_tokens']}"]
        assert m["role"] == "validation" and m["figure"]["value"] == row["tokens_per_s"]


def test_kv_logs_cover_several_models_gpus_and_tp_sizes():
    kv = [m["inputs"] for m in MEASUREMENTS if m["kind"] == "kv_capacity"]
    models = {json.dumps(x["model"], sort_keys=True) for x in kv}
    gpus = {json.dumps(x["gpu"], sort_keys=True) for x in kv}
    assert len(models) >= 3 and len(gpus) >= 3 and {x["tp"] for x in kv} >= {1, 2, 4}


def test_throughput_tables_cover_several_models_gpus_tp_and_lengths():
    rows = [m["inputs"] for m in MEASUREMENTS if m["kind"] == "throughput"]
    assert len({r["model"] for r in rows}) >= 3 and len({r["gpu"] for r in rows}) >= 2
    assert len({r["tp"] for r in rows}) >= 3
    assert len({(r.get("input_tokens"), r.get("output_tokens")) for r in rows}) >= 10


def test_models_and_gpus_in_the_catalog_are_named_by_key_not_described_inline():
    shape = ("layers", "hidden_size", "attention_heads", "kv_heads", "head_dim", "intermediate_size", "vocab_size",
             "tied_embeddings", "attention")
    catalog_shapes = {tuple(getattr(m, f) for f in shape) for m in MODELS.values()}
    for m in MEASUREMENTS:
        model, gpu = m["inputs"].get("model"), m["inputs"].get("gpu")
        if isinstance(model, dict):
            inline = model_from_config(model["config"])
            assert tuple(getattr(inline, f) for f in shape) not in catalog_shapes, m["id"]
        if isinstance(gpu, dict):  # e.g. "GeForce RTX 3090 24GB" is the catalog's "RTX 3090 24GB"
            assert gpu["name"].lower().replace("geforce ", "") not in {g.name.lower() for g in GPUS.values()}, m["id"]


def test_the_llama_3_3_rtx_3090_and_llama_2_rows_use_their_own_catalog_entries():
    rows = {m["id"]: m["inputs"] for m in MEASUREMENTS}
    llama_33 = [i for i, x in rows.items() if "llama-3.3-70b" in i]
    assert len(llama_33) == 22 and all(rows[i]["model"] == "llama-3.3-70b" for i in llama_33)
    rtx = [i for i in rows if "rtx3090" in i]
    assert len(rtx) == 2 and all(rows[i]["gpu"] == "rtx-3090" for i in rtx)
    assert rows["vllm-llama-2-7b-fp16-a100-80gb-tp1"]["model"] == "llama-2-7b"
    assert not any(x.get("model") == "llama-3.1-70b" for i, x in rows.items() if "llama-3.3" in i)


# --- published online-serving runs (kind online_latency, issue 18): predicted by calc.latency_accuracy ----------

LATENCY_ROWS = load_measurements(kinds=("online_latency",))
LATENCY_BY_ID = {m["id"]: m for m in LATENCY_ROWS}
CLIENT_FIELDS = {"batch": {"batch"}, "all_at_once": {"requests"}, "poisson": {"rate_per_s"},
                 "closed_loop": {"concurrency"}}
# The rows calc.latency_fit fits its engine profiles on, jointly per engine (calc/latency_fit.py): each engine's
# lowest-load rows, and for vLLM the same batch-8 test on every GPU of its nightly suite and the Azure run's first
# rates, so that each of its terms has rows from both of its sources.
LATENCY_CALIBRATION_IDS = {
    "vllm-nightly-latency-llama8b-tp1-h100", "vllm-nightly-latency-llama70b-tp4-h100",
    "vllm-nightly-latency-llama8b-tp1-h200", "vllm-nightly-latency-llama70b-tp4-h200",
    "vllm-nightly-latency-llama8b-tp1-a100", "vllm-nightly-latency-llama70b-tp4-a100",
    "vllm-azure-llama-3.3-70b-bf16-a100-40gb-tp8-sharegpt-qps01-ttft",
    "vllm-azure-llama-3.3-70b-bf16-a100-40gb-tp8-sharegpt-qps04-tpot",
    "vllm-azure-llama-3.3-70b-bf16-a100-40gb-tp8-sharegpt-qps16-itl",
    "nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-ttft", "nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-500-2000-c1-itl",
    "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-ttft",
    "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-itl",
    "sglang-060-sglang-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps8-itl",
    "sglang-060-sglang-llama-3.1-70b-bf16-h100-tp4-sharegpt-rps4-itl",
    "sglang-060-vllm-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-ttft",
    "sglang-060-vllm-llama-3.1-8b-bf16-a100-tp1-sharegpt-rps4-tpot"}


def test_the_default_load_keeps_the_kinds_calc_accuracy_predicts_and_the_rest_is_named():
    everything = load_measurements(kinds=None)
    assert len(everything) == len(MEASUREMENTS) + len(LATENCY_ROWS)
    assert {m["kind"] for m in everything} == set(KINDS) | set(accuracy.PREDICTED_ELSEWHERE)
    assert len({m["id"] for m in everything}) == len(everything), "ids are unique across every kind"


def test_forty_online_figures_over_at_least_eight_setups_models_gpus_and_tp_sizes():
    assert len(LATENCY_ROWS) >= 40
    setups = {(x["engine"], _model_key(x), x["gpu"], x["tp"], x["weights"], json.dumps(x["lengths"], sort_keys=True),
               x["client"]["kind"]) for x in (m["inputs"] for m in LATENCY_ROWS)}
    assert len(setups) >= 8
    inputs = [m["inputs"] for m in LATENCY_ROWS]
    assert {"llama-3.1-8b", "llama-3.1-70b", "llama-3.3-70b"} <= {_model_key(x) for x in inputs}
    assert {"h100-sxm-80gb", "h200"} <= {x["gpu"] for x in inputs} and {1, 2, 4} <= {x["tp"] for x in inputs}
    assert {m["figure"]["quantity"] for m in LATENCY_ROWS} == {"ttft", "itl", "tpot", "e2e", "throughput"}
    assert {m["inputs"]["client"]["kind"] for m in LATENCY_ROWS} == {"batch", "all_at_once", "poisson", "closed_loop"}
    assert {"h100-sxm-80gb", "h200", "a100-80gb"} <= {x["gpu"] for x in inputs}
    # Beside the NVLink parts, a card on PCIe (issue 33's "More evidence": PCIe and consumer GPUs).
    assert any(GPUS[x["gpu"]].interconnect.startswith("pcie") for x in inputs)


def _model_key(inputs: dict) -> str:
    model = inputs["model"]
    return model["key"] if isinstance(model, dict) else model


@pytest.mark.parametrize("m", LATENCY_ROWS, ids=[m["id"] for m in LATENCY_ROWS])
def test_every_online_row_has_source_statistic_client_lengths_and_setup(m):
    assert set(m) >= {"id", "kind", "role", "label", "figure", "inputs", "source", "notes"}
    assert m["kind"] == "online_latency" and m["role"] in ROLES and m["label"].strip() and m["notes"].strip()
    source = m["source"]
    assert set(source) == {"cite", "name", "url", "where", "read"}
    assert source["url"].startswith("https://") and all(source[k].strip() for k in ("cite", "name", "where", "read"))
    figure = m["figure"]
    assert isinstance(figure["value"], (int, float)) and figure["value"] > 0 and math.isfinite(figure["value"])
    assert figure["quantity"] in ("ttft", "itl", "tpot", "e2e", "throughput")
    assert figure["statistic"] in ("mean", "median", "p99", "total over the run")
    assert isinstance(figure["statistic_stated"], bool) and figure["metric"].strip()
    assert figure["unit"] == ("ms" if figure["quantity"] != "throughput" else figure["unit"])
    x = m["inputs"]
    assert x["engine"].strip() and x["engine_version"].strip() and x["model_as_run"].strip()
    if isinstance(x["model"], dict):  # a model outside the catalog: its config.json, where it is read
        assert x["model"]["key"] not in MODELS and x["model"]["config"] and "config.json" in x["model"]["source"]
    else:
        assert x["model"] in MODELS
    assert x["gpu"] in GPUS and x["tp"] in (1, 2, 4, 8)
    assert x["weights"] in ("bf16", "fp16", "fp8", "int8", "int4") and x["kv_dtype"] in ("bf16", "fp16", "fp8")
    client = x["client"]
    assert client["kind"] in CLIENT_FIELDS and CLIENT_FIELDS[client["kind"]] <= set(client) and client["how"].strip()
    lengths = x["lengths"]
    if lengths["kind"] == "fixed":
        assert lengths["input_tokens"] >= 1 and lengths["output_tokens"] >= 1
    else:
        assert lengths["kind"] == "sharegpt" and lengths["dataset"] and lengths["sampling"]
    assert "num_prompts" in x
    if not figure["statistic_stated"]:
        assert "statistic" in m["notes"], "an assumed statistic is said so in the notes"


def test_the_calibration_rows_are_each_engines_lowest_load_rows_and_most_rows_are_validation():
    marked = {m["id"] for m in LATENCY_ROWS if m["role"] == "calibration"}
    assert marked == LATENCY_CALIBRATION_IDS
    # Most rows are for validation: at least four for each calibration row (77 beside 17).
    assert sum(m["role"] == "validation" for m in LATENCY_ROWS) >= 4 * len(marked), "most rows are for validation"
    for mid in marked:
        m = LATENCY_BY_ID[mid]
        assert m["notes"].startswith("Fitted: engine profile")
        x, client = m["inputs"], m["inputs"]["client"]
        # Low load: one batch of 8, one client, or a spread-out rate (the per-sequence cost needs the higher ones).
        assert (client["kind"] == "batch" and client["batch"] == 8 and x["tp"] in (1, 4)) \
            or client.get("concurrency") == 1 or client.get("rate_per_s") in (1, 4, 8, 16), mid


def test_online_figures_match_the_sources_as_read():
    # ai.wmx.dev: vLLM 0.23.0 on one L4, Qwen2.5 0.5B (given by its config.json), closed loop at 1 to 32 clients.
    l4 = "wmx-vllm-0.23.0-qwen2.5-0.5b-bf16-l4-tp1-256-128-c"
    assert [LATENCY_BY_ID[f"{l4}{c}-ttft-p50"]["figure"]["value"] for c in (1, 2, 4, 8, 16, 32)] == \
        [27.0, 37.8, 50.1, 60.9, 103.8, 135.3]
    assert [LATENCY_BY_ID[f"{l4}{c}-{q}"]["figure"]["value"] for c, q in ((1, "itl-p50"), (32, "itl-p50"),
                                                                          (32, "throughput"), (32, "e2e-p50"))] == \
        [5.1, 7.1, 3773, 1082]
    assert LATENCY_BY_ID[f"{l4}1-ttft-p50"]["inputs"]["model"]["config"]["hidden_size"] == 896
    # InferenceBench envelopes: vLLM 0.22.1, Qwen2.5 72B on four H100s, closed loop of 1, 4 and 16 chat clients.
    ib = "inferencebench-vllm-0.22.1-qwen2.5-72b-bf16-h100-tp4-chat-40-128-c"
    assert [LATENCY_BY_ID[f"{ib}{c}-{q}-p50"]["figure"]["value"] for c, q in
            ((1, "ttft"), (1, "tpot"), (1, "e2e"), (4, "tpot"), (4, "e2e"), (16, "tpot"), (16, "e2e"))] == \
        [24.21, 16.05, 2061.99, 16.43, 2130.02, 17.3, 2239.5]
    assert {LATENCY_BY_ID[f"{ib}1-ttft-p50"]["inputs"][k] for k in ("gpu", "tp", "model")} == {"h100-sxm-80gb", 4, "qwen2.5-72b"}
    assert f"{ib}4-ttft-p50" not in LATENCY_BY_ID, "TTFT above one client depends on unpublished answer lengths"
    # kvcached's H100 sweep, vanilla vLLM 0.19.0, Qwen3 0.6B: seed 42's result files at 16 req/s and all at once.
    kv = "kvcached-vllm-0.19.0-qwen3-0.6b-bf16-h100-tp1-512-128-"
    assert [LATENCY_BY_ID[kv + k]["figure"]["value"] for k in ("rps16-ttft-p50", "rps16-tpot-p50", "rps16-itl-p50",
            "inf-ttft-p50", "inf-tpot-p50", "inf-itl-p50", "inf-throughput")] == \
        [36.03, 2.4, 2.03, 2869.83, 5.71, 4.51, 11852.1]
    assert LATENCY_BY_ID[kv + "inf-throughput"]["inputs"]["model"]["config"]["head_dim"] == 128
    # vLLM nightly latency tests (Buildkite annotations), median of 15 iterations of one batch of 8.
    assert LATENCY_BY_ID["vllm-nightly-latency-llama8b-tp1-h100"]["figure"]["value"] == 997.365
    assert LATENCY_BY_ID["vllm-nightly-latency-llama70b-tp4-h200"]["figure"]["value"] == 2077.56
    lat = LATENCY_BY_ID["vllm-nightly-latency-llama8b-tp1-h100"]["inputs"]
    assert lat["lengths"] == {"kind": "fixed", "input_tokens": 32, "output_tokens": 128}
    assert lat["client"]["batch"] == 8 and lat["model_as_run"] == "meta-llama/Meta-Llama-3-8B"
    # Build 9523 on A100 (GPU column 'A100-SXM4-80GB'): median batch latency and offline throughput, three models.
    a100 = {(q, mt): LATENCY_BY_ID[f"vllm-nightly-{q}-{mt}-a100"] for q in ("latency", "throughput")
            for mt in ("llama8b-tp1", "llama70b-tp4", "mixtral8x7b-tp2")}
    assert [m["figure"]["value"] for m in a100.values()] == [1579.34, 3990.39, 3648.91, 11.0567, 4.78859, 5.2096]
    assert {m["inputs"]["gpu"] for m in a100.values()} == {"a100-80gb"}
    # Its batch-8 latency rows of the 8B and 70B models are calibration (calc.latency_fit's joint fit); the rest validation.
    assert [m["role"] for m in a100.values()] == ["calibration", "calibration"] + ["validation"] * 4
    assert {m["source"]["url"] for m in a100.values()} == {"https://buildkite.com/vllm/performance-benchmark/builds/9523"}
    # NIM 1.8.0, Llama 3.3 70B fp8 TP2 on 2 x H100, AIPerf at fixed concurrency.
    nim = "nim-1.8.0-llama-3.3-70b-fp8-h100-tp2-"
    assert [LATENCY_BY_ID[f"{nim}5000-500-c1-{q}"]["figure"]["value"] for q in ("ttft", "itl", "throughput")] == \
        [406.77, 18.58, 51.67]
    assert LATENCY_BY_ID[f"{nim}5000-500-c250-ttft"]["figure"]["value"] == 88605.32
    assert LATENCY_BY_ID[f"{nim}500-2000-c1-ttft"]["figure"]["value"] == 47.77
    c50 = LATENCY_BY_ID[f"{nim}5000-500-c50-ttft"]["inputs"]["client"]
    assert c50 == {"kind": "closed_loop", "concurrency": 50, "how": c50["how"], "warmup_request_count": 100,
                   "request_count": 500, "request_count_source": c50["request_count_source"]}
    assert "--request-count $((N*10))" in c50["request_count_source"], "AIPerf's sweep: 10 profiled per client"
    assert "docs.nvidia.com/nim/benchmarking" in LATENCY_BY_ID[f"{nim}5000-500-c1-ttft"]["source"]["url"]
    assert LATENCY_BY_ID[f"{nim}5000-500-c1-itl"]["figure"]["quantity"] == "tpot", "AIPerf's ITL is per request"
    # SGLang's reproduction of SGLang v0.3.0 against vLLM v0.6.0: Poisson ShareGPT traffic, medians.
    sg = "sglang-060-sglang-llama-3.1-70b-bf16-h100-tp4-sharegpt-rps4-"
    assert [LATENCY_BY_ID[sg + q]["figure"]["value"] for q in ("e2e", "ttft", "tpot", "itl")] == \
        [3005.24, 53.94, 25.03, 21.67]
    assert LATENCY_BY_ID[sg + "ttft"]["inputs"]["client"]["rate_per_s"] == 4
    assert LATENCY_BY_ID[sg + "ttft"]["inputs"]["num_prompts"] == 1200
    assert "sglang-060-vllm-llama-3.1-70b-bf16-h100-tp4-sharegpt-rps4-itl" not in LATENCY_BY_ID, \
        "vLLM's multi-step ITL measures 10-token chunks: not kept"


# --- vLLM's nightly Performance Benchmark (Buildkite annotations): one id scheme, the suite's set-up per test ----
# The test definitions (vllm-project/vllm .buildkite/nightly-benchmarks/tests/: latency-tests.json at d5ce924,
# throughput-tests.json at 9ddbe88, serving-tests.json at fc10a04): each model at its own TP, dummy weights in bf16;
# latency one batch of 8 x 32 in / 128 out; throughput and serving 200 ShareGPT prompts, serving at qps 1, 4, 16
# (Poisson) and inf (all at once), figures read from the tables' Tput (req/s), Median TTFT and Median ITL columns.
NIGHTLY_ID = re.compile(r"^vllm-nightly-(latency|throughput|serving)-(llama8b|llama70b|mixtral8x7b)-tp(\d)-"
                        r"(h100|h200|a100)(?:-qps(1|4|16|inf)-(ttft|itl|throughput))?$")
# id part -> (catalog model, the suite's TP, the suite's spelling in its test names)
NIGHTLY_MODELS = {"llama8b": ("llama-3.1-8b", 1, "llama8B"), "llama70b": ("llama-3.1-70b", 4, "llama70B"),
                  "mixtral8x7b": ("mixtral-8x7b", 2, "mixtral8x7B")}
NIGHTLY_GPUS = {"h100": ("h100-sxm-80gb", "H100"), "h200": ("h200", "H200"), "a100": ("a100-80gb", "A100")}
NIGHTLY_SERVING_FIGURES = {"ttft": ("ttft", "median", "ms"), "itl": ("itl", "median", "ms"),
                           "throughput": ("throughput", "total over the run", "requests/s")}
NIGHTLY_ROWS = [m for m in LATENCY_ROWS if m["id"].startswith("vllm-nightly-")]


def nightly_setup_problems(m: dict) -> list[str]:
    """What in a ``vllm-nightly-*`` row disagrees with its id or the suite's test definitions (empty: nothing)."""
    match = NIGHTLY_ID.match(m["id"])
    if not match:
        return [f"id {m['id']!r} is not vllm-nightly-<test>-<model>-tp<N>-<gpu>[-qps<q>-<figure>]"]
    test, model_part, tp, gpu_part, qps, what = match.groups()
    model, suite_tp, suite_name = NIGHTLY_MODELS[model_part]
    gpu, gpu_name = NIGHTLY_GPUS[gpu_part]
    x, figure, source = m["inputs"], m["figure"], m["source"]
    client, lengths = x["client"], x["lengths"]
    problems = []

    def expect(what_, got, want):
        if got != want:
            problems.append(f"{what_}: {got!r}, the suite's is {want!r}")

    expect("kind", m["kind"], "online_latency")
    expect("model", x["model"], model)
    expect("tp", x["tp"], suite_tp)
    expect("tp in the id", int(tp), suite_tp)
    expect("gpu", x["gpu"], gpu)
    expect("engine_profile", x.get("engine_profile"), "vllm")
    expect("weights", (x["weights"], x["kv_dtype"]), ("bf16", "bf16"))
    if not (isinstance(figure["value"], (int, float)) and math.isfinite(figure["value"]) and figure["value"] > 0):
        problems.append(f"figure.value must be a positive number; got {figure['value']!r}")
    if not (source["url"].startswith("https://buildkite.com/") and gpu_name in source["cite"]):
        problems.append(f"source must be a Buildkite annotation cited with its GPU ({gpu_name}); got {source['cite']!r}")
    if test == "serving":
        expect("a serving id ends in -qps<q>-<figure>", qps is None, False)
        expect("num_prompts", x.get("num_prompts"), 200)
        expect("lengths.kind", lengths["kind"], "sharegpt")
        wanted_client = ({"kind": "all_at_once", "requests": 200} if qps == "inf"
                         else {"kind": "poisson", "rate_per_s": int(qps or 0)})
        expect("client", {k: client.get(k) for k in wanted_client}, wanted_client)
        expect("figure (quantity, statistic, unit)", (figure["quantity"], figure["statistic"], figure["unit"]),
               NIGHTLY_SERVING_FIGURES.get(what))
        row_name = f"serving_{suite_name}_tp{suite_tp}_sharegpt_qps_{qps}"
    else:
        expect("only serving ids carry -qps<q>-<figure>", qps, None)
        if test == "latency":
            expect("client", (client["kind"], client.get("batch")), ("batch", 8))
            expect("lengths", lengths, {"kind": "fixed", "input_tokens": 32, "output_tokens": 128})
            expect("figure (quantity, unit)", (figure["quantity"], figure["unit"]), ("e2e", "ms"))
        else:
            expect("client", (client["kind"], client.get("requests")), ("all_at_once", 200))
            expect("lengths.kind", lengths["kind"], "sharegpt")
            expect("figure (quantity, unit)", (figure["quantity"], figure["unit"]), ("throughput", "requests/s"))
        row_name = f"{test}_{suite_name}_tp{suite_tp}"
    if f"row {row_name}," not in source["where"]:
        problems.append(f"source.where must name the table row {row_name}; got {source['where']!r}")
    return problems


@pytest.mark.parametrize("m", NIGHTLY_ROWS, ids=[m["id"] for m in NIGHTLY_ROWS])
def test_every_vllm_nightly_row_has_the_suites_set_up_for_its_id(m):
    assert nightly_setup_problems(m) == []


def _nightly_serving_row(qps: str, what: str) -> dict:
    """A serving row as the suite defines it, built on the H100 throughput row (same server, model and prompts)."""
    import copy

    row = copy.deepcopy(LATENCY_BY_ID["vllm-nightly-throughput-llama8b-tp1-h100"])
    row["id"] = f"vllm-nightly-serving-llama8b-tp1-h100-qps{qps}-{what}"
    row["inputs"]["client"] = ({"kind": "all_at_once", "requests": 200, "how": "benchmark_serving --request-rate inf"}
                               if qps == "inf" else
                               {"kind": "poisson", "rate_per_s": int(qps), "how": f"--request-rate {qps}"})
    quantity, statistic, unit = NIGHTLY_SERVING_FIGURES[what]
    row["figure"] = {"value": 12.5, "unit": unit, "metric": what, "quantity": quantity, "statistic": statistic,
                     "statistic_stated": True}
    row["source"]["where"] = f"table 'Serving tests', row serving_llama8B_tp1_sharegpt_qps_{qps}, column x"
    return row


@pytest.mark.parametrize("qps,what", [("1", "ttft"), ("16", "itl"), ("inf", "throughput")])
def test_the_nightly_check_accepts_a_serving_row_set_up_as_the_suite_ran_it(qps, what):
    assert nightly_setup_problems(_nightly_serving_row(qps, what)) == []


@pytest.mark.parametrize("change,problem", [
    (lambda r: r["inputs"]["client"].update(rate_per_s=16), "client"),              # qps 4 run at 16
    (lambda r: r["figure"].update(statistic="mean"), "figure (quantity"),           # a mean read as the median
    (lambda r: r["figure"].update(value=-1.0), "figure.value"),
    (lambda r: r["inputs"].update(tp=2), "tp"),
    (lambda r: r["inputs"].update(num_prompts=1000), "num_prompts"),
    (lambda r: r["source"].update(where="table 'Serving tests', row serving_llama8B_tp1_sharegpt_qps_16"), "source.where"),
    (lambda r: r.update(id="vllm-nightly-serving-llama8b-tp1-h100-ttft"), "id"),      # no qps in the id
])
def test_the_nightly_check_names_what_disagrees_with_the_suite(change, problem):
    row = _nightly_serving_row("4", "ttft")
    change(row)
    problems = nightly_setup_problems(row)
    assert len(problems) == 1 and problems[0].startswith(problem), problems
