"""Facts as named, lazy functions (issue 31): a page, or another page borrowing with ``{{ page:name }}``, computes
only the facts it names; each fact can be called (and doctested) alone; older ``facts()`` modules still work."""

from __future__ import annotations

import os
import sys
import types

import pytest

from calc.widgets import framework, page_modules
from calc.widgets.framework import FACTS, fact, fact_names, fact_values, facts_of

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(ROOT, "hooks") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "hooks"))

import facts as facts_hook  # noqa: E402 (hooks/, on the path above)


@pytest.fixture
def page(monkeypatch):
    """A page module ``calc.widgets.probe_page`` with two facts, one of them slow, counting their calls."""
    calls = []
    module = types.ModuleType("calc.widgets.probe_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)

    def cheap():
        calls.append("cheap")
        return 4

    def slow():
        calls.append("slow")
        return "a whole simulation"

    for function in (cheap, slow):
        function.__module__ = module.__name__
    fact(cheap)
    fact("slow_fact")(slow)
    module.facts = facts_of(module.__name__)
    yield calls
    del FACTS["probe_page"]


def test_only_the_named_facts_are_computed(page):
    assert fact_values("probe_page", ["cheap"]) == {"cheap": "4"}
    assert page == ["cheap"]  # the slow one never ran
    assert fact_values("probe_page", ["slow_fact", "no_such_fact"]) == {"slow_fact": "a whole simulation"}
    assert page == ["cheap", "slow"]


def test_the_module_keeps_its_one_call_form(page):
    assert sys.modules["calc.widgets.probe_page"].facts() == {"cheap": 4, "slow_fact": "a whole simulation"}
    assert fact_names("probe_page") == ["cheap", "slow_fact"]


def test_a_fact_takes_no_arguments_and_is_registered_once(page):
    def needs(x):
        return x

    with pytest.raises(TypeError, match="takes no arguments"):
        fact(needs)

    def cheap():
        return 5

    cheap.__module__ = "calc.widgets.probe_page"
    with pytest.raises(TypeError, match="registered twice"):
        fact(cheap)


def test_a_fact_group_runs_once_for_all_its_names_and_only_when_one_is_named(monkeypatch):
    """The accuracy page's latency section comes out of one computation: fact_group runs it once, lazily."""
    module = types.ModuleType("calc.widgets.group_page")
    monkeypatch.setitem(sys.modules, module.__name__, module)
    runs = []

    def section():
        runs.append(1)
        return {"table": "| a |", "n_rows": 1}

    section.__module__ = module.__name__
    try:
        framework.fact_group(section, ["table", "n_rows"])
        assert fact_names("group_page") == ["table", "n_rows"] and runs == []
        assert fact_values("group_page", ["n_rows", "table"]) == {"n_rows": "1", "table": "| a |"}
        assert fact_values("group_page", ["n_rows"]) == {"n_rows": "1"}
        assert runs == [1]
    finally:
        del FACTS["group_page"]
    assert fact_values("no_such_page_module", ["a"]) == {} and fact_names("no_such_page_module") == []


def test_a_borrowed_fact_of_step_19_does_not_run_the_whole_page(monkeypatch):
    """Step 19's facts run a dozen simulations; a page borrowing the replica count runs none of them."""
    from calc.widgets import incident_p99_ttft as step

    ran = []
    monkeypatch.setattr(step, "incident_run", lambda *a, **k: ran.append((a, k)))
    monkeypatch.setattr(step, "seed_sweep", lambda *a, **k: ran.append("sweep"))
    assert fact_values("incident_p99_ttft", ["replicas", "gpus", "kv_tokens"]) == {
        "replicas": "3", "gpus": "12", "kv_tokens": "399,169"}
    assert ran == []


def test_the_page_asks_each_module_for_the_names_it_uses():
    text = "{{ a }} {{ b }} {{ a_70b_assistant:kv_tokens }} and {{ a }} again, {{ a_70b_assistant:tp }}"
    assert facts_hook.requests(text, "probe") == [
        {"module": "a_70b_assistant", "names": ["kv_tokens", "tp"]}, {"module": "probe", "names": ["a", "b"]}]
    asked = []

    def facts_of_request(request):
        asked.append(request)
        return facts_hook.compute_facts(request) if request["module"] != "probe" else {"a": "1", "b": "2"}

    assert facts_hook.fill(text, "probe", "probe.md", facts_of_request) == "1 2 399,169 and 1 again, 4"
    assert [r["module"] for r in asked] == ["a_70b_assistant", "probe"]  # one request a module, not one a use


def test_an_unknown_fact_fails_naming_the_page_and_the_known_facts():
    with pytest.raises(ValueError, match=r"step\.md: no fact 'kv_tokenz' in calc\.widgets\.a_70b_assistant "
                                         r"\(known: .*kv_tokens.*\)"):
        facts_hook.fill("{{ a_70b_assistant:kv_tokenz }}", "probe", "step.md", facts_hook.compute_facts)


def test_every_page_module_lists_its_facts_without_computing_them(monkeypatch):
    """fact_names reads the registry only: listing the facts of every migrated module computes none."""
    computed = []
    for module in page_modules():
        fact_names(module)  # imports the module: registers its facts
    for module, registered in FACTS.items():
        for name, function in list(registered.items()):
            monkeypatch.setitem(registered, name, lambda n=name: computed.append(n))
    for module in list(FACTS):
        fact_names(module)
    assert computed == []
    assert {"incident_p99_ttft", "the_fix", "a_70b_assistant", "twice_the_traffic"} <= set(FACTS)
    assert {"accuracy", "plan", "playground", "disaggregation", "deep_economics"} <= set(FACTS)


def test_framework_exports_the_fact_api():
    assert {"fact", "fact_names", "fact_values", "facts_of", "FACTS"} <= set(framework.__all__)
