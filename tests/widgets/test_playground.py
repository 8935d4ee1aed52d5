"""Step 22: the playground's knobs, its widgets' numbers, and the scenario file that reruns the page's simulation."""

import contextlib
import io
import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import lesson
from calc.cli import main
from calc.errors import CalcError
from calc.sim import presets
from calc.sim.run import simulate
from calc.sim.scenario import Scenario
from calc.widgets import framework
from calc.widgets.framework import collect_stream
from calc.widgets import playground as pg
from calc.widgets.simulation import metrics

WIDGETS = ("playground.replica", "playground.simulation", "playground.speed_and_cost", "playground.scenario_file")


def outputs(name, **args):
    return framework.call(name, args)["outputs"]


def final_view(**args):
    entry, bound = framework.bind("playground.simulation", args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def cli_summary(tmp_path, text):
    path = tmp_path / "scenario.json"
    path.write_text(text)
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["simulate", "--scenario", str(path), "--json"]) == 0
    return json.loads(out.getvalue())


# --- the knobs -------------------------------------------------------------------------------------------------

def test_a_knob_is_the_same_control_in_every_widget_that_has_it():
    """The page's script copies a knob's value by name between widgets: the name must mean one control."""
    specs = {}
    for name in WIDGETS:
        for control in framework.describe(name)["controls"]:
            key = control["name"]
            assert key in pg.KNOBS, f"{name}: {key} is not a playground knob"
            specs.setdefault(key, []).append({k: v for k, v in control.items()})
    for key, seen in specs.items():
        assert all(s == seen[0] for s in seen), key
    # The simulation exposes every scenario knob; the file widget takes the same ones.
    sim = {c["name"] for c in framework.describe("playground.simulation")["controls"]}
    assert sim == set(pg.SCENARIO_KNOBS) | {"frame_interval_s"}
    assert {c["name"] for c in framework.describe("playground.scenario_file")["controls"]} == set(pg.SCENARIO_KNOBS)


def test_no_knob_is_a_checkbox():
    """Hidden copies of a knob are <input type=hidden>, whose value is text: on/off choices survive that, toggles do not."""
    for name in WIDGETS:
        assert all(c["kind"] != "toggle" for c in framework.describe(name)["controls"]), name


def test_the_defaults_are_the_step22_preset():
    data = pg.scenario_data()
    preset = presets.load(pg.PRESET).to_dict()
    for meta in ("name", "description"):
        data.pop(meta), preset.pop(meta)
    assert data == preset
    assert pg.DEFAULTS["rate_per_s"] == 6.0 and pg.DEFAULTS["requests"] == 600


def test_knobs_map_onto_the_scenario():
    data = pg.scenario_data(tp=8, weights="fp8", prefix_caching="on", chunked_prefill="off", max_num_batched_tokens=8192,
                            speculation="custom", spec_k=2, spec_acceptance=0.6, spec_draft_cost_ratio=0.1,
                            gpu_price_usd_per_hour=2.5, prefix_tokens=500, prefix_variants=3, lengths="chat")
    assert (data["tp"], data["weights"], data["prefix_caching"], data["chunked_prefill"]) == (8, "fp8", True, False)
    assert data["speculation"]["k"] == 2 and data["speculation"]["acceptance"] == 0.6
    assert data["speculation"]["verify_tokens"] == 3
    assert data["gpu_price_usd_per_hour"] == 2.5
    assert data["workload"]["classes"][0]["prefix_tokens"] == 500
    assert pg.scenario_data(speculation="eagle-like")["speculation"]["verify_tokens"] == 16
    assert pg.scenario_data()["gpu_price_usd_per_hour"] is None  # 0 on the page: the catalog's dated price


# --- the widgets' numbers --------------------------------------------------------------------------------------

def test_memory_view_shows_the_cache_the_simulator_gets():
    out = outputs("playground.replica")
    assert out["weights_bytes_per_gpu"]["text"] == "35.3 GB"
    assert out["kv_cache_tokens"]["value"] == 399_169  # step 1's count: 70.6 B parameters, before whole blocks
    assert out["kv_cache_blocks"]["value"] == 24_948   # what the simulator allocates: 399,168 tokens
    assert out["max_concurrency"]["text"] == "48.7x at 8,192 tokens"  # vLLM: whole blocks / max_model_len
    assert out["requests_that_fit"]["value"] == 399_169 // 1_280 == 311
    assert simulate(Scenario.from_dict(pg.scenario_data(requests=1))).summary["kv_cache_tokens"] == 24_948 * 16
    # Knobs as the browser sends them: strings. fp8 has scales: weighed tensor by tensor, as step 7 does.
    fp8 = outputs("playground.replica", weights="fp8", block_size="32", max_model_len="16384")
    assert fp8["kv_cache_tokens"]["value"] == lesson.kv_capacity(weights="fp8").kv_cache_tokens_raw == 608_266
    assert fp8["kv_cache_blocks"]["text"] == "19,008 of 32 tokens"
    assert simulate(Scenario.from_dict(pg.scenario_data(weights="fp8", block_size=32, max_model_len=16384,
                                                        requests=1))).summary["kv_cache_tokens"] == 19_008 * 32


def test_the_playground_holds_the_lessons_capacity():
    """Step 22's capacity is the one every page quotes (issue 19 item 4): its memory view, its prose, its simulation."""
    out = outputs("playground.replica")
    assert out["kv_cache_tokens"]["value"] == lesson.KV_CAPACITY_TOKENS
    assert out["kv_cache_blocks"]["value"] * 16 == lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS
    assert out["requests_that_fit"]["value"] == lesson.kv_batch_limit()
    f = pg.facts()
    assert f["kv_tokens"] == f"{lesson.KV_CAPACITY_TOKENS:,}" and f["fit_at_request_len"] == f"{lesson.kv_batch_limit():,}"
    run = simulate(Scenario.from_dict(pg.scenario_data(requests=1))).summary
    assert run["kv_cache_tokens"] == lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS  # the same cache, in whole blocks
    assert pg.scenario_data()["parameter_count"] == "lesson" == presets.load(pg.PRESET).parameter_count


def test_speed_and_cost_defaults():
    out = outputs("playground.speed_and_cost")
    assert out["usd_per_hour"]["text"] == "$15.12 per hour"
    assert out["usd_per_month"]["text"] == "$11,038"
    assert out["ttft_floor_s"]["text"] == "81.8 ms"
    assert out["itl_batch_1_s"]["text"] == "15.3 ms"
    assert out["batch_at_target"]["value"] == 256  # max_num_seqs binds before the 50 ms target
    assert out["usd_per_million_at_target"]["text"] == "$0.508"
    tight = outputs("playground.speed_and_cost", itl_target_s="0.02")
    assert 1 < tight["batch_at_target"]["value"] < 256
    assert tight["batch_at_target"]["text"].endswith("(set by the latency target)")
    # A GPU the catalog has no price for asks for one instead of inventing it.
    l40s = outputs("playground.speed_and_cost", gpu="h200", model="llama-3.1-8b", tp="1")
    assert l40s["usd_per_hour"]["text"] == "enter a GPU price"
    assert outputs("playground.speed_and_cost", gpu="h200", model="llama-3.1-8b", tp="1",
                   gpu_price_usd_per_hour="1.5")["usd_per_hour"]["text"] == "$1.5 per hour"


def test_the_scenario_file_runs_to_the_pages_numbers(tmp_path):
    args = {"requests": "80", "rate_per_s": "12", "allocation": "contiguous", "seed": "7"}
    text = outputs("playground.scenario_file", **args)["scenario_json"]["text"]
    summary = cli_summary(tmp_path, text)
    shown = final_view(**args, frame_interval_s="2")["outputs"]
    for item in metrics(summary):
        assert shown[item["key"]]["text"] == item["text"], item["key"]
    assert summary["requests_completed"] == 80 and summary["running_max"] <= 399_440 // 8_192


def test_the_file_is_complete_and_stable():
    text = outputs("playground.scenario_file")["scenario_json"]["text"]
    data = json.loads(text)
    assert set(Scenario(parameter_count="lesson").to_dict()) == set(data)  # every key written out
    assert text == outputs("playground.scenario_file")["scenario_json"]["text"]
    assert outputs("playground.scenario_file")["command"]["text"] == "python -m calc simulate --scenario scenario.json"


@settings(max_examples=25, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), weights=st.sampled_from(["bf16", "fp8", "int4"]),
       rate=st.floats(0.1, 50), prompt=st.integers(1, 4000), answer=st.integers(1, 2000),
       allocation=st.sampled_from(["paged", "contiguous"]), spec=st.sampled_from(["off", "eagle-like", "custom"]))
def test_the_file_holds_exactly_the_scenario_the_page_runs(tp, weights, rate, prompt, answer, allocation, spec):
    knobs = dict(model="llama-3.1-8b", tp=tp, weights=weights, rate_per_s=rate, prompt_tokens=prompt,
                 output_tokens=answer, allocation=allocation, speculation=spec)
    text = framework.call("playground.scenario_file", knobs)["outputs"]["scenario_json"]["text"]
    assert Scenario.from_dict(json.loads(text)) == Scenario.from_dict(pg.scenario_data(**knobs))


# --- bad input -------------------------------------------------------------------------------------------------

@pytest.mark.parametrize("name, args, field", [
    ("playground.replica", {"tp": "3"}, "tp"),
    ("playground.replica", {"gpu_memory_utilization": "1.5"}, "gpu_memory_utilization"),
    ("playground.speed_and_cost", {"prompt_tokens": "2000000"}, "prompt_tokens"),
    ("playground.scenario_file", {"prompt_tokens": "9000"}, None),  # longer than max_model_len: the class's rule
    ("playground.scenario_file", {"speculation": "sometimes"}, "speculation"),
    ("playground.scenario_file", {"rate_per_s": "-1"}, "rate_per_s"),
])
def test_bad_knobs_give_calc_errors_naming_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        framework.call(name, args)
    message = str(caught.value)
    if field:
        assert caught.value.field == field and field in message
    else:
        assert "max_model_len" in message


def test_a_stream_rejects_bad_knobs_before_it_runs():
    with pytest.raises(CalcError) as caught:
        framework.bind("playground.simulation", {"requests": "0"})
    assert caught.value.field == "requests"
    with pytest.raises(CalcError):
        next(pg.simulation(tp=3))


# --- facts -----------------------------------------------------------------------------------------------------

def test_facts():
    f = pg.facts()
    assert f["kv_tokens"] == "399,169" and f["kv_blocks"] == "24,948"
    assert f["contiguous_fit"] == "48" and f["contiguous_running_max"] == "48"  # capacity / max length, and the sim
    assert f["running_max"] == "115" and f["ttft_p99"] == "0.545 s"
    assert f["price"] == r"\$3.78" and f["cost_per_million_sim"] == r"\$2.92"  # escaped: $ opens math in the page
    assert f["fit_at_request_len"] == "311" and f["rate"] == "6"


# --- the client: rate, all at once, or a closed loop ---------------------------------------------------------

def test_the_scenario_knobs_are_the_sciences():
    from calc.sim_views import PLAYGROUND_DEFAULTS

    assert set(pg.SCENARIO_KNOBS) == set(PLAYGROUND_DEFAULTS)
    assert {pg.DEFAULTS[k] for k in ("arrival", "concurrency")} == {"poisson", 32}


def test_the_closed_loop_client_runs_live_and_from_the_file():
    from calc.sim import Scenario, simulate

    knobs = {"arrival": "closed-loop", "concurrency": 6, "requests": 30}
    final = collect_stream(pg.simulation(frame_interval_s=60.0, **knobs))
    assert final["done"] and final["outputs"]["requests_completed"]["text"] == "30 of 30"
    text = pg.scenario_file(**knobs)["outputs"]["scenario_json"]["text"]
    data = json.loads(text)
    assert (data["workload"]["arrival"], data["workload"]["concurrency"]) == ("closed-loop", 6)
    summary = simulate(Scenario.from_dict(data)).summary
    assert summary["running_max"] == 6 and summary["requests_completed"] == 30
    # The knob means nothing to an open client: the file leaves it out.
    assert "concurrency" not in json.loads(pg.scenario_file(concurrency=6)["outputs"]["scenario_json"]["text"])["workload"]


def test_a_bad_client_is_a_message_naming_the_field():
    with pytest.raises(CalcError, match="workload.concurrency must be a whole number between 1 and 100000"):
        pg.scenario_data(arrival="closed-loop", concurrency=0)
