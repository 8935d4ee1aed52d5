"""calc.sim.scenario: the JSON schema, its defaults, and errors that name the field."""

import json

import pytest
from hypothesis import given, settings, strategies as st

from calc.errors import CalcError
from calc.sim.scenario import Scenario, dump_scenario, load_scenario
from calc.speculative import EAGLE_LIKE


def test_defaults_are_the_lesson_replica():
    s = Scenario.from_dict({})
    assert (s.model, s.gpu, s.tp, s.weights) == ("llama-3.1-70b", "h100-sxm-80gb", 4, "bf16")
    c = s.workload.classes[0]
    assert (c.prompt_tokens, c.output_tokens, s.workload.arrival) == (1024, 256, "poisson")


@settings(max_examples=40, deadline=None)
@given(tp=st.sampled_from([1, 2, 4, 8]), rate=st.floats(0.01, 100), seed=st.integers(0, 2**32 - 1),
       chunked=st.booleans(), spec=st.sampled_from([None, "eagle-like"]), lengths=st.sampled_from(["fixed", "chat"]))
def test_round_trip_through_json(tp, rate, seed, chunked, spec, lengths):
    s = Scenario.from_dict({"tp": tp, "seed": seed, "chunked_prefill": chunked, "speculation": spec,
                            "workload": {"rate_per_s": rate, "lengths": lengths}})
    again = Scenario.from_dict(json.loads(dump_scenario(s)))
    assert again == s


def test_speculation_by_name_or_by_figures():
    assert Scenario.from_dict({"speculation": "eagle-like"}).speculation == EAGLE_LIKE
    s = Scenario.from_dict({"speculation": {"k": 4, "acceptance": 0.8, "draft_cost_ratio": 0.1}})
    assert (s.speculation.k, s.speculation.verify_tokens) == (4, 5)
    assert s.scheduler_config().tokens_per_decode == 5


@pytest.mark.parametrize("data, field", [
    ({"tp": 0}, "tp"),
    ({"weights": "fp4"}, "weights"),
    ({"gpu_memory_utilization": 1.5}, "gpu_memory_utilization"),
    ({"block_size": 0}, "block_size"),
    ({"chunked_prefill": "yes"}, "chunked_prefill"),
    ({"allocation": "buddy"}, "allocation"),
    ({"batching": "dynamic"}, "batching"),
    ({"seed": -1}, "seed"),
    ({"kv_cache_tokens": 0}, "kv_cache_tokens"),
    ({"speculation": "medusa"}, "speculation"),
    ({"speculation": {"k": 0}}, "speculation.k"),
    ({"speculation": {"acceptance": 2}}, "speculation.acceptance"),
    ({"workload": {"arrival": "weekly"}}, "workload.arrival"),
    ({"workload": {"rate_per_s": 0}}, "workload.rate_per_s"),
    ({"workload": {"requests": 2.5}}, "workload.requests"),
    ({"workload": {"lengths": "zipf"}}, "workload.lengths"),
    ({"workload": {"classes": []}}, "workload.classes"),
    ({"workload": {"classes": [{"share": -1}]}}, "workload.classes[0].share"),
    ({"workload": {"classes": [{"share": 0}]}}, "workload.classes"),
    ({"workload": {"prompt_tokens": 0}}, "workload.prompt_tokens"),
    ({"workload": {"prompt_tokens": 9000}}, "max_model_len"),
    ({"max_num_seqs": 512, "max_num_batched_tokens": 256}, "max_num_batched_tokens"),
    ({"prefix_caching": True, "allocation": "contiguous"}, "prefix_caching"),
    ({"workload": {"classes": [{}], "prompt_tokens": 5}}, "workload.classes"),
])
def test_bad_fields_are_named(data, field):
    with pytest.raises(CalcError) as err:
        Scenario.from_dict(data)
    assert err.value.field == field, str(err.value)


def test_unknown_keys_are_refused_with_the_allowed_list():
    with pytest.raises(CalcError) as err:
        Scenario.from_dict({"workload": {"rps": 3}})
    assert err.value.field == "rps"
    assert "rate_per_s" in str(err.value) and "prompt_tokens" in str(err.value)
    with pytest.raises(CalcError) as err:
        Scenario.from_dict([1, 2])
    assert err.value.field == "scenario"


def test_files(tmp_path):
    path = tmp_path / "s.json"
    path.write_text(json.dumps({"tp": 8, "workload": {"requests": 12}}))
    assert load_scenario(str(path)).workload.requests == 12
    path.write_text("{not json")
    with pytest.raises(CalcError) as err:
        load_scenario(str(path))
    assert "not valid JSON" in str(err.value)


def test_replace_changes_class_keys_through_the_workload():
    s = Scenario().replace(workload={"prompt_tokens": 300, "requests": 9}, tp=8)
    assert (s.tp, s.workload.requests, s.workload.classes[0].prompt_tokens) == (8, 9, 300)
