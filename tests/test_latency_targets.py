"""The latency section of the accuracy page against issue 33's targets, and a ratchet on its medians."""

import json
import os

import pytest

from calc import engine_profiles
from calc import latency_accuracy as la
from calc import latency_loso
from calc.widgets import accuracy as page

RESULTS = la.evaluate()
LOSO = latency_loso.stored()
SUMMARY = latency_loso.summary(LOSO)
FACTS = page.latency_facts(RESULTS)
BASELINE = json.load(open(os.path.join(os.path.dirname(__file__), "data", "latency_baseline.json"), encoding="utf-8"))


@pytest.mark.parametrize("metric", la.METRICS)
def test_a_loso_median_above_its_target_is_said_on_the_page_with_its_mechanism(metric):
    median = SUMMARY[metric]["all"]["loso"]["median_abs_error"]
    verdict = FACTS[f"lat_verdict_{metric}"]
    if median > la.LOSO_TARGETS[metric]:
        assert verdict.startswith("misses the target") and page.MISS_MECHANISMS[metric] in verdict
        assert la.METRIC_LABELS[metric] in FACTS["lat_missed"]
    else:
        assert verdict.startswith("meets the target")
        assert la.METRIC_LABELS[metric] not in FACTS["lat_missed"]


@pytest.mark.parametrize("metric", la.METRICS)
@pytest.mark.parametrize("kind", ["in_sample", "loso"])
def test_no_validation_median_gets_worse_than_recorded(metric, kind):
    # Rerecord with `python bench/latency_report.py --write-baseline` when a change makes them better.
    now = SUMMARY[metric]["all"][kind]
    assert now["n"] == BASELINE[kind][metric]["n"]
    assert now["median_abs_error"] <= BASELINE[kind][metric]["median_abs_error"] + 1e-9, (metric, kind)
    # The same ratchet on the sources the page had before issue 33's added ones: adding rows moves the medians
    # above, not these.
    before = latency_loso.before_after(LOSO)[metric]["all"]["before"][kind]
    recorded = BASELINE["before_added_sources"][kind][metric]
    assert before["n"] == recorded["n"]
    assert before["median_abs_error"] <= recorded["median_abs_error"] + 1e-9, (metric, kind)


def test_the_verdict_turns_when_a_median_crosses_its_target(monkeypatch):
    # The same facts from made-up leave-one-source-out errors: every TTFT at 5%, then at 20% (every engine then
    # misses, each with a made-up mechanism: an engine's miss without one fails the build).
    for key in engine_profiles.ENGINES:
        monkeypatch.setitem(page.ENGINE_MISS_MECHANISMS, (key, "ttft"), "made up")
    def shifted(error):
        moved = json.loads(json.dumps(LOSO))
        for r in moved["rows"]:
            if r["metric"] == "ttft":
                r["loso_error"] = error
        return moved
    assert page.latency_facts(RESULTS, shifted(0.05))["lat_verdict_ttft"].startswith("meets")
    assert page.latency_facts(RESULTS, shifted(0.20))["lat_verdict_ttft"].startswith("misses")


def test_an_engine_that_misses_a_target_without_a_mechanism_fails_the_build(monkeypatch):
    from calc.errors import CalcError

    missing = next((key, m) for m in la.METRICS for key, cell in SUMMARY[m].items()
                   if key != "all" and cell["loso"]["n"] and cell["loso"]["median_abs_error"] > la.LOSO_TARGETS[m])
    monkeypatch.delitem(page.ENGINE_MISS_MECHANISMS, missing)
    with pytest.raises(CalcError):
        page.latency_facts(RESULTS)


def test_the_page_tables_list_every_figure_and_every_engine_term():
    assert len(FACTS["latency_table"].splitlines()) == len(RESULTS) + 2  # header, rule, one line per figure
    assert all(r.id.split("-")[0] in FACTS["latency_table"] or r.label in FACTS["latency_table"] for r in RESULTS)
    for key in ("vllm", "vllm-0.6-multistep", "sglang-0.3", "nim-trtllm"):
        assert FACTS["engine_terms_table"].count(f"| `{key}` |") == len(engine_profiles.TERMS)
    assert FACTS["lat_n_figures"] == str(len(RESULTS))
    # Each metric's headline row and one row per engine that has validation figures of it.
    for m in la.METRICS:
        engines = {r["engine"] for r in LOSO["rows"] if r["role"] == "validation" and r["metric"] == m}
        assert FACTS["latency_summary_table"].count(f"| {la.METRIC_LABELS[m]} | `") == len(engines)
