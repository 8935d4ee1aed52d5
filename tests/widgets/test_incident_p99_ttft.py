"""Step 19: the incident's dashboard, its drills and its facts, against the simulator's preset."""

import copy
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc import incident
from calc.answers import check_answer
from calc.errors import CalcError
from calc.sim import presets
from calc.sim.workload import Request
from calc.units import NS_PER_S
from calc.widgets import framework
from calc.widgets import incident_p99_ttft as step

DASHBOARD = "incident_p99_ttft.dashboard"


@pytest.fixture(scope="module")
def facts():
    return step.facts()


@pytest.fixture(scope="module")
def preset_summary():
    return presets.run(step.PRESET).summary


def test_facts_are_the_preset_run(facts, preset_summary):
    assert facts["ttft_p99"] == "28.8 s"
    assert preset_summary["ttft_p99_s"] == pytest.approx(28.8454)
    assert facts["ttft_p50"] == "0.435 s"
    assert facts["replicas"] == "3" and facts["rate"] == "15"
    assert facts["queue_max"] == str(preset_summary["queue_depth_max"]) == "196"
    assert facts["preemptions"] == "138"
    assert facts["kv_peak"] == "100%"


def test_what_looks_normal_and_what_tells_the_story(facts):
    # Request rate and GPU-Util do not move between the calm minute and the surge ...
    assert facts["rate_before"] == "14.7" and facts["rate_during"] == "15.3"
    assert facts["gpu_util_before"] == facts["gpu_util_during"] == "100%"
    # ... while tokens per request, the queue and the KV cache do.
    assert (facts["prompt_before"], facts["prompt_during"]) == ("1,029", "1,926")
    assert facts["queue_before_max"] == "3"
    assert facts["kv_before_peak"] == "20%"
    assert facts["prefill_share_before"] == "41%" and facts["prefill_share_during"] == "77%"
    assert facts["queue_alert_s"] == "70" and facts["queue_alert_lead_s"] == "10"


def test_the_p99_depends_on_the_seed(facts):
    sweep = incident.seed_sweep()
    assert len(sweep) == 16
    assert (facts["sweep_min"], facts["sweep_max"], facts["sweep_median"]) == ("17.2 s", "76.8 s", "45.6 s")
    assert statistics.median(sweep) == pytest.approx(45.6, abs=0.05)
    assert sweep[3] == pytest.approx(28.8454)  # the preset's own seed


def test_try_this_cases(facts):
    assert facts["quiet_ttft_p99"] == "0.688 s"  # no documents: no incident
    assert facts["high_queue_max"] == "1,732"
    assert facts["more_replicas"] == "4" and facts["more_ttft_p99"] == "2.97 s"


def test_dashboard_stream_ends_where_the_preset_ends(preset_summary):
    entry, bound = framework.bind(DASHBOARD, {})
    views = [framework.check_view(v) for v in entry.function(**bound)]
    merged = framework.collect_stream(views)
    assert merged["outputs"]["ttft_p99_s"]["text"] == "28.8 s"
    assert merged["outputs"]["queue_depth_max"]["value"] == preset_summary["queue_depth_max"]
    assert merged["outputs"]["gpu_util_reported"]["text"] == "95%"
    assert set(merged["figures"]) == {"requests", "gpu_util", "ttft", "prompt", "queue", "kv", "running", "preemptions"}
    times = [t for v in views for t in v["series"]["t_s"]]
    tokens = [x for v in views for x in v["series"]["prompt_tokens_per_request"]]
    assert len(tokens) == len(times)
    assert merged["figures"]["prompt"]["data"][0]["y"] == tokens
    assert "blockmap" in merged


def test_prompt_tokens_per_sample_windows():
    reqs = [Request(0, 0, 100, 1), Request(1, 5 * NS_PER_S, 300, 1), Request(2, 6 * NS_PER_S, 500, 1)]
    # (0, 5] holds the second request (the first arrived at 0, outside the window), (5, 10] the third.
    assert incident.prompt_tokens_per_sample(reqs, [5.0, 10.0], 5.0) == [300.0, 500.0]


@settings(max_examples=40, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 60 * NS_PER_S), st.integers(1, 40_000)), min_size=1, max_size=60))
def test_window_means_lie_within_their_requests(pairs):
    pairs.sort()
    reqs = [Request(i, t, p, 1) for i, (t, p) in enumerate(pairs)]
    times = [5.0 * k for k in range(1, 13)]
    means = incident.prompt_tokens_per_sample(reqs, times, 5.0)
    for t, mean in zip(times, means):
        inside = [r.prompt_tokens for r in reqs if (t - 5) * NS_PER_S < r.arrival_ns <= t * NS_PER_S]
        if inside:
            assert min(inside) <= mean <= max(inside)
        else:
            assert mean is None


def test_documents_drill_worked_case():
    q = step.documents_per_minute_drill(0)
    assert q["answer"] == pytest.approx(69.0, abs=0.05)  # 60 x 15 x (1,926 - 1,029) / (12,733 - 1,032)
    assert "66 documents" in q["explanation"]  # what the simulation actually sent
    assert check_answer("69", q["answer"], q["unit"], q["tolerance"])["correct"]
    assert not check_answer("90000", q["answer"], q["unit"], q["tolerance"])["correct"]


def test_prefill_drill_worked_case():
    q = step.prefill_load_drill(0)
    assert q["answer_text"] == "2.31 replicas"
    assert q["answer"] == pytest.approx(15 * 1926 / incident.prefill_tokens_per_s(), rel=1e-5)


@pytest.mark.parametrize("drill", [step.documents_per_minute_drill, step.prefill_load_drill])
def test_fresh_variants_are_answerable(drill):
    for seed in range(1, 40):
        q = framework.check_view(drill(seed))
        assert q["answer"] > 0
        assert check_answer(q["answer_text"].split()[0], q["answer"], q["unit"], q["tolerance"])["correct"]


@pytest.mark.parametrize("args, field", [
    ({"scenario": "z"}, "scenario"),
    ({"replicas": 0}, "replicas"),
    ({"seed": -1}, "seed"),
])
def test_bad_input_names_the_field(args, field):
    with pytest.raises(CalcError) as caught:
        framework.bind(DASHBOARD, args)
    assert caught.value.field == field


def test_scenario_checks_its_own_arguments():
    with pytest.raises(CalcError) as caught:
        incident.incident_scenario(replicas=40)
    assert caught.value.field == "replicas"


def test_the_dashboards_controls_do_not_name_the_cause():
    """Step 19's controls are read before the diagnosis: no label or choice says documents, prompts or tokens."""
    from calc.widgets.framework import REGISTRY

    words = []
    for control in REGISTRY["incident_p99_ttft.dashboard"].controls.values():
        words += [control.label, control.help] + [label for _, label in getattr(control, "options", ())]
    text = " ".join(words).lower()
    assert not [w for w in ("document", "long", "prompt", "token", "kv") if w in text], text
    # Scenario A is the incident (the preset's own mix); B, C and D differ from it by the share of documents only.
    shares = {key: share for key, (_, share) in step.SCENARIOS.items()}
    assert shares["a"] is None and shares["b"] == 0 < shares["c"] < shares["d"]


def test_the_dashboard_crosses_the_alert_it_draws_and_the_title_quotes_its_peak(facts):
    page = incident.alert_page()
    ts = presets.run(step.PRESET).time_series
    p99 = [v for v in ts["ttft_p99_s"] if v is not None]
    # The panel's p99 crosses the alert's threshold, holds above it for the rule's 30 s, and peaks later;
    # the title's figure is the panel's own peak, to the whole second.
    assert max(p99) == page["peak_s"] > 2 * page["threshold_s"]
    assert page["crossed_s"] < page["fired_s"] < page["peak_at_s"]
    assert facts["alert_peak_title"] == f"{round(max(p99))} seconds"
    # The whole run's p99 (the other TTFT tile) is lower than the worst window's: two figures, two labels.
    assert page["peak_s"] > presets.run(step.PRESET).summary["ttft_p99_s"] > page["threshold_s"]
    assert facts["ttft_alert"] == f"{page['threshold_s']:g} s" and facts["ttft_alert_for"] == f"{page['for_s']:g} s"
    # The alert's threshold is drawn on the TTFT panel the stream's first view sets up.
    entry, bound = framework.bind(DASHBOARD, {"frame_interval_s": "60"})
    first = next(iter(entry.function(**bound)))
    shapes = first["figures"]["ttft"]["layout"]["shapes"]
    assert [s["y0"] for s in shapes] == [page["threshold_s"]]


def test_the_incident_reaches_the_lessons_36_seconds_on_its_seed():
    """The lesson's incident is "TTFT p99 at 36 seconds": the preset, tuned by one knob, makes the panel say so."""
    peak = incident.alert_page()["peak_s"]
    assert round(peak) == incident.TITLE_PEAK_S == 36
    # The knob is the preset's value, and the scan the re-tune reads gives the same peak for it.
    name, field = incident.TUNING_KNOB
    knob = incident.request_class(presets.load_data(step.PRESET), name)[field]
    assert incident.peak_scan([knob]) == [(knob, peak)]


def test_the_nav_title_names_the_computed_peak():
    """mkdocs.yml's nav title is typed text: its number must be the panel's peak, rounded to a whole second."""
    import pathlib
    import re

    nav = (pathlib.Path(__file__).resolve().parents[2] / "mkdocs.yml").read_text(encoding="utf-8")
    titles = re.findall(r'"19\. Incident: TTFT p99 at (\d+) seconds": lesson/19-incident-p99-ttft\.md', nav)
    assert titles == [str(round(incident.alert_page()["peak_s"]))], titles


def test_the_alert_fires_only_after_holding_its_line():
    page = incident.alert_page()
    ts = presets.run(step.PRESET).time_series
    held = [(t, v) for t, v in zip(ts["t_s"], ts["ttft_p99_s"]) if page["fired_s"] - page["for_s"] <= t <= page["fired_s"]]
    assert held and all(v is not None and v >= page["threshold_s"] for _, v in held)
    # With no "for" it fires at the first crossing; a rule longer than the incident never fires.
    assert incident.alert_page(for_s=0)["fired_s"] == page["crossed_s"]
    assert incident.alert_page(for_s=600)["fired_s"] is None


def test_the_dashboard_labels_each_ttft_p99_for_what_it_measures():
    entry, bound = framework.bind(DASHBOARD, {})
    merged = framework.collect_stream([framework.check_view(v) for v in entry.function(**bound)])
    tiles = merged["outputs"]
    page = incident.alert_page()
    assert tiles["ttft_p99_peak_s"]["label"] == "TTFT p99 at the peak (10 s window)"
    assert tiles["ttft_p99_peak_s"]["value"] == page["peak_s"]
    assert tiles["ttft_p99_s"]["label"] == "TTFT p99 over the run"
    assert tiles["ttft_p99_s"]["value"] == presets.run(step.PRESET).summary["ttft_p99_s"]
    keys = list(tiles)
    assert keys.index("ttft_p99_peak_s") + 1 == keys.index("ttft_p99_s")  # side by side


def test_the_copies_of_the_incidents_traffic_follow_the_preset():
    """A re-tune is one line in step 19's preset; these copies must follow it, and this names them."""
    incident_data = presets.load_data(step.PRESET)
    fix = presets.load_data("step20-pools")
    assert fix["workload"] == incident_data["workload"], "calc/sim/presets/step20-pools.json: workload"
    assert fix["fleet"]["traffic"] == incident_data["fleet"]["traffic"], "calc/sim/presets/step20-pools.json: traffic"
    from calc.replica import CARRIED_DOCUMENT_SHARE, LESSON_CHANGES

    # The reader's replica carries the incident's traffic on steps 19 and 20, its surge sized for the fp8 replica
    # (calc.replica.CARRIED_DOCUMENT_SHARE of documents, chat giving up the difference; tests/test_replica_story.py).
    carried = copy.deepcopy(incident_data["fleet"]["traffic"])
    shares = carried[1]["shares"]
    shares["chat"] = round(shares["chat"] + shares["document"] - CARRIED_DOCUMENT_SHARE, 9)
    shares["document"] = CARRIED_DOCUMENT_SHARE
    for step_number in (19, 20):
        delta = LESSON_CHANGES[step_number]["delta"]
        assert delta["workload"]["classes"] == incident_data["workload"]["classes"], f"calc.replica step {step_number}"
        assert delta["fleet"]["traffic"] == carried, f"calc.replica step {step_number}"
