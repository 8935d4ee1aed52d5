"""Deep dive "Serving engines": static against continuous batching in the simulator, prefix reuse, bad input."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.widgets import deep_serving_engines as page
from calc.widgets import framework


def test_facts_static_batching_falls_behind():
    f = page.facts()
    assert (f["static_ttft_p50"], f["continuous_ttft_p50"]) == ("180 s", "0.0488 s")
    assert (f["static_kv_share"], f["continuous_kv_share"]) == ("19%", "98%")
    assert (f["static_queue_max"], f["continuous_queue_max"]) == ("338", "3")
    assert (f["offline_ratio"], f["offline_small_ratio"]) == ("5.51", "11.1")
    assert (f["chat_without"], f["chat_with"], f["chat_saved"]) == ("32,000", "5,072", "84%")


def test_the_live_streams_are_the_two_loops():
    for batching in ("static", "continuous"):
        entry, bound = framework.bind("deep_serving_engines.engine", {"batching": batching, "requests": "40"})
        final = framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))
        assert final["outputs"]["requests_completed"]["text"] == "40 of 40"
        assert final["done"] is True
    static = page.compare_runs(requests=40)["static"]
    assert static["batching"] == "static" and static["running_max"] <= page.STATIC_BATCH


def test_conversation_widget_defaults():
    out = framework.call("deep_serving_engines.conversation", {})["outputs"]
    assert (out["without"]["value"], out["with"]["value"]) == (32_000, 5_072)
    assert out["ttft_warm"]["value"] < out["ttft_cold"]["value"] / 5


@settings(max_examples=40, deadline=None)
@given(turns=st.integers(1, 30), turn=st.integers(1, 3000), system=st.integers(0, 5000))
def test_reuse_never_prefills_more(turns, turn, system):
    r = page.conversation_prefill(turns=turns, turn_tokens=turn, system_tokens=system)
    assert r["tokens_with_cache"] <= r["tokens_without_cache"]
    assert r["tokens_without_cache"] == sum(system + (i + 1) * turn for i in range(turns))


@pytest.mark.parametrize("name, args, field", [
    ("deep_serving_engines.conversation", {"turns": "0"}, "turns"),
    ("deep_serving_engines.engine", {"static_batch_size": "0"}, "static_batch_size"),
    ("deep_serving_engines.engine", {"lengths": "short"}, "lengths"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as error:
        entry, bound = framework.bind(name, args)
        framework.check_view(next(iter(entry.function(**bound))) if entry.kind == "stream" else entry.function(**bound))
    assert error.value.field == field
