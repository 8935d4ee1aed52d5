"""Deep dive "The trade-off triangle": the simulated frontier, its corners, the live operating point, bad input."""

import pytest

from calc.errors import CalcError
from calc.widgets import deep_trade_off_triangle as page
from calc.widgets import framework


def test_facts():
    f = page.facts()
    assert (f["bf16_cap1_itl"], f["bf16_cap1_tps"], f["bf16_cap256_tps"]) == ("19.4 ms", "50.8", "1,823")
    assert f["cost_ratio"] == "35.9"
    assert (f["live_small_ttft"], f["live_fp8_ttft"]) == ("26.6 s", "0.075 s")  # at 6 req/s
    assert (f["corner_lq_cap"], f["corner_lt_weights"], f["corner_lt_cap"]) == ("16", "fp8", "64")
    assert f["corner_lt_delta"] == "-0.11"


def test_frontier_moves_right_with_the_batch_and_fp8_beats_bf16():
    f = page.frontier()
    for fmt in page.FORMATS:
        tps = [p["tokens_per_s"] for p in f[fmt]]
        assert tps == sorted(tps)
    assert all(a["itl_p50_s"] > b["itl_p50_s"] for a, b in zip(f["bf16"], f["fp8"]))


def test_triangle_widget_defaults():
    view = framework.call("deep_trade_off_triangle.triangle", {})
    assert view["outputs"]["best_bf16"]["text"] == "608 tokens/s (cap 16)"
    rows = view["tables"]["corners"]["rows"]
    assert [r[0] for r in rows] == ["latency + quality", "throughput + quality", "latency + throughput"]
    assert rows[2][5] == "-0.11 points (OpenLLM v1)"
    tight = framework.call("deep_trade_off_triangle.triangle", {"itl_target_ms": "1"})
    assert tight["outputs"]["best_bf16"]["text"] == "none meets the target"


def test_best_under():
    points = [{"tokens_per_s": 1, "itl_p50_s": 0.001}, {"tokens_per_s": 9, "itl_p50_s": 0.05}]
    assert page.best_under(points, 0.01) == points[0]
    assert page.best_under(points, 0.0001) is None


@pytest.mark.parametrize("name, args, field", [
    ("deep_trade_off_triangle.triangle", {"replica": "gpt-4"}, "replica"),
    ("deep_trade_off_triangle.triangle", {"itl_target_ms": "0"}, "itl_target_ms"),
    ("deep_trade_off_triangle.operating_point", {"max_num_seqs": "0"}, "max_num_seqs"),
])
def test_bad_input_names_the_field(name, args, field):
    with pytest.raises(CalcError) as error:
        framework.bind(name, args)
    assert error.value.field == field
