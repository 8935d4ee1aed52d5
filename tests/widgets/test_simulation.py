"""The live simulation panel: its KV chart is one whole cache (holding + reserved-empty + free = 1), consistent with
the run's series and metrics; the stream's views carry every series of the run."""

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from calc.errors import CalcError
from calc.sim.fleet import SERIES_KEYS
from calc.units import round_sig
from calc.widgets import simulation as sim
from calc.widgets.framework import collect_stream

KV_KEYS = ("kv_token_fraction", "kv_reserved_empty_fraction", "kv_free_fraction")


def _run(preset, **overrides):
    views = list(sim.simulation_views(sim.scenario_for(preset, **overrides), 30.0))
    return views, collect_stream(views)


@pytest.fixture(scope="module")
def contiguous():
    # step 4's "break it": the page's own overrides
    return _run("step04-reserve-max", rate_per_s=6, allocation="contiguous")


@pytest.fixture(scope="module")
def paged():
    return _run("step05-paged")


def test_kv_chart_plots_shares_of_the_whole_cache():
    figure = sim.simulation_views(sim.scenario_for("step05-paged"), 30.0).__next__()["figures"]["kv"]
    assert [t["meta"] for t in figure["data"]] == list(KV_KEYS)
    assert [t["name"] for t in figure["data"]] == ["holding tokens", "reserved, holding no token", "free"]
    assert {t["stackgroup"] for t in figure["data"]} == {"kv"}  # stacked: the bands add up to the whole
    assert figure["layout"]["yaxis"]["title"]["text"] == "share of the KV cache"
    assert figure["layout"]["yaxis"]["tickformat"] == ".0%" and figure["layout"]["yaxis"]["range"] == [0, 1.02]
    assert "add up to 100%" in figure["summary"]
    # the same colours as step 4's cache chart: tokens blue, promises orange, free grey
    assert [t["line"]["color"] for t in figure["data"]] == ["#0072B2", "#E69F00", "#999999"]


def test_kv_cache_shares_by_value():
    shares = sim.kv_cache_shares([0.9844, 0.5, 0.0], [0.8515, 0.02, 0.0])
    assert shares == {"kv_token_fraction": [0.1462, 0.49, 0.0],
                      "kv_reserved_empty_fraction": [0.8382, 0.01, 0.0],
                      "kv_free_fraction": [0.0156, 0.5, 1.0]}
    with pytest.raises(CalcError) as err:
        sim.kv_cache_shares([0.5, 0.5], [0.1])
    assert err.value.field == "kv_waste_fraction"


@settings(max_examples=200, deadline=None)
@given(use=st.lists(st.floats(0, 1), max_size=20), waste=st.floats(0, 1))
def test_the_bands_add_up_to_the_cache_and_the_lower_two_to_its_use(use, waste):
    use = [round_sig(u, 4) for u in use]
    shares = sim.kv_cache_shares(use, [waste] * len(use))
    for u, h, e, f in zip(use, *(shares[k] for k in KV_KEYS)):
        assert min(h, e, f) >= 0
        assert h + e == pytest.approx(u, abs=2e-4)
        assert h + e + f == pytest.approx(1.0, abs=2e-4)


@pytest.mark.parametrize("run_name", ["contiguous", "paged"])
def test_live_kv_series_follow_the_runs_own(run_name, request):
    views, merged = request.getfixturevalue(run_name)
    for v in views:
        series = v["series"]
        assert set(SERIES_KEYS) <= set(series)  # the run's series pass through untouched
        assert len({len(col) for col in series.values()}) == 1
        assert {k: series[k] for k in KV_KEYS} == sim.kv_cache_shares(series["kv_use_fraction"],
                                                                      series["kv_waste_fraction"])
    kv = {t["meta"]: t["y"] for t in merged["figures"]["kv"]["data"]}
    held, empty, free = (kv[k] for k in KV_KEYS)
    assert all(h + e + f == pytest.approx(1.0, abs=2e-4) for h, e, f in zip(held, empty, free))
    json.dumps(merged)


def test_reserving_the_maximum_is_mostly_promises(contiguous):
    # step 4: the cache in use reaches 98.5% at 1-s samples while tokens fill at most 14.4% of it
    _, merged = contiguous
    kv = {t["meta"]: t["y"] for t in merged["figures"]["kv"]["data"]}
    held, empty = kv["kv_token_fraction"], kv["kv_reserved_empty_fraction"]
    assert round(max(h + e for h, e in zip(held, empty)), 3) == 0.985
    assert max(held) == 0.1437
    # the share of the reserved memory holding tokens, averaged over the samples, is the panel's (time-weighted)
    # figure to within half a point: 13.8%
    assert merged["outputs"]["kv_token_share"]["text"] == "13.8%"
    assert sum(held) / sum(h + e for h, e in zip(held, empty)) == pytest.approx(0.138, abs=0.005)


def test_paged_blocks_hold_tokens_in_nearly_all_they_reserve(paged):
    # step 5: the cache is never full (33% at most) and almost all of what is in use holds tokens
    _, merged = paged
    kv = {t["meta"]: t["y"] for t in merged["figures"]["kv"]["data"]}
    held, empty, free = kv["kv_token_fraction"], kv["kv_reserved_empty_fraction"], kv["kv_free_fraction"]
    assert max(held) == 0.3271 and min(free) == pytest.approx(0.6681, abs=2e-4)
    assert merged["outputs"]["kv_token_share"]["text"] == "98.3%"
    assert sum(held) / sum(h + e for h, e in zip(held, empty)) == pytest.approx(0.984, abs=0.005)
