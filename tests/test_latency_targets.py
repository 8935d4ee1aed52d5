"""The latency section of the accuracy page against issue 18's targets, and a ratchet on its medians."""

import json
import os

import pytest

from calc import engine_profiles
from calc import latency_accuracy as la
from calc.widgets import accuracy as page

RESULTS = la.evaluate()
SUMMARY = la.summary(RESULTS)
FACTS = page.latency_facts(RESULTS)
BASELINE = json.load(open(os.path.join(os.path.dirname(__file__), "data", "latency_baseline.json"), encoding="utf-8"))


@pytest.mark.parametrize("metric", la.METRICS)
def test_a_validation_median_above_its_target_is_said_on_the_page_with_its_mechanism(metric):
    median = SUMMARY["validation"][metric]["median_abs_error"]
    verdict = FACTS[f"lat_verdict_{metric}"]
    if median > la.TARGETS[metric]:
        assert verdict.startswith("misses the target") and page.MISS_MECHANISMS[metric] in verdict
        assert la.METRIC_LABELS[metric] in FACTS["lat_missed"]
    else:
        assert verdict.startswith("meets the target")
        assert la.METRIC_LABELS[metric] not in FACTS["lat_missed"]


@pytest.mark.parametrize("metric", la.METRICS)
def test_no_validation_median_gets_worse_than_recorded(metric):
    # Rerecord with `python bench/latency_report.py --write-baseline` when a change makes them better.
    now = SUMMARY["validation"][metric]
    assert now["n"] == BASELINE[metric]["n"]
    assert now["median_abs_error"] <= BASELINE[metric]["median_abs_error"] + 1e-9, (metric, now["median_abs_error"])


def test_the_verdict_turns_when_a_median_crosses_its_target():
    # The same facts from made-up results: every TTFT exactly on target, then just past it.
    def shifted(error):
        return tuple(la.LatencyResult(r.id, r.role, r.metric, r.label, r.unit, r.measured,
                                      r.measured * (1 + error) if r.metric == "ttft" else r.predicted,
                                      error if r.metric == "ttft" else r.error, r.optimistic, r.client_used,
                                      r.source_cite, r.source_where) for r in RESULTS)
    assert page.latency_facts(shifted(0.05))["lat_verdict_ttft"].startswith("meets")
    assert page.latency_facts(shifted(0.15))["lat_verdict_ttft"].startswith("misses")


def test_the_page_tables_list_every_figure_and_every_engine_term():
    assert len(FACTS["latency_table"].splitlines()) == len(RESULTS) + 2  # header, rule, one line per figure
    assert all(r.id.split("-")[0] in FACTS["latency_table"] or r.label in FACTS["latency_table"] for r in RESULTS)
    for key in ("vllm", "vllm-0.6-multistep", "sglang-0.3", "nim-trtllm"):
        assert FACTS["engine_terms_table"].count(f"| `{key}` |") == len(engine_profiles.TERMS)
    assert FACTS["lat_n_figures"] == str(len(RESULTS))
