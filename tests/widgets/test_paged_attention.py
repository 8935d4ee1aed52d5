"""Step 5: paged blocks against reservation, calc beside the vLLM paper, and both allocations in one live run."""

import pytest

from calc.errors import CalcError
from calc.widgets import framework
from calc.widgets import paged_attention as step

SHARES = "paged_attention.allocation_shares"
SIM = "paged_attention.side_by_side"


def final_view(**args):
    entry, bound = framework.bind(SIM, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_shares_sit_beside_the_papers_measurements():
    view = framework.call(SHARES, {})
    out = view["outputs"]
    # calc's shares on ShareGPT-like requests (2,048 max): the paper's order, contiguous ones as upper bounds.
    calc_shares = view["figures"]["shares"]["data"][0]["y"]
    assert calc_shares == sorted(calc_shares)
    assert calc_shares[0] == pytest.approx(out["max_share"]["value"], rel=1e-5) and calc_shares[-1] == pytest.approx(out["paged_share"]["value"], rel=1e-5)
    rows = view["tables"]["policies"]["rows"]
    assert [row[1:] for row in rows] == [["24.1%", "20.4%", "194"], ["46.5%", "26.8%", "620"],
                                         ["60.1%", "38.2%", "788"], ["98.5%", "96.3%", "776"]]
    assert out["max_share"]["text"] == "24.1% (measured 20.4%)"
    assert out["paged_share"]["text"] == "98.5% (measured 96.3%)"
    measured = view["figures"]["shares"]["data"][1]["y"]
    assert measured == [0.204, 0.268, 0.382, 0.963]
    assert all(c >= m for c, m in zip(calc_shares, measured))  # calc leaves out fragmentation between slabs
    assert out["waste_bound"]["text"] == "15 tokens (4.92 MB on the 70B)"


def test_running_example_fits_311_paged_and_48_reserving_the_maximum():
    out = framework.call(SHARES, {"workload": "lesson", "max_model_len": 8192})["outputs"]
    assert out["paged_requests"]["value"] == 311
    assert out["max_requests"]["value"] == 48
    assert out["paged_share"]["value"] == pytest.approx(0.994, abs=0.001)


def test_bigger_blocks_waste_more():
    small = framework.call(SHARES, {"block_size": 16})["outputs"]["paged_share"]["value"]
    big = framework.call(SHARES, {"block_size": 256})["outputs"]["paged_share"]["value"]
    assert big < small - 0.1


@pytest.mark.parametrize("args", [{}, {"max_model_len": 131_072}, {"max_model_len": 512, "block_size": 1},
                                  {"block_size": 256}, {"workload": "lesson", "max_model_len": 8192}])
def test_one_pass_over_the_requests_equals_asking_each_policy_on_its_own(args):
    # The widget draws the ShareGPT-like sample once and prices every policy in one compare_allocation; the same
    # figures must come out as from token_state_percent and concurrency, one policy at a time (the slow way).
    from calc.accuracy import token_state_percent
    from calc.allocation import POLICIES, concurrency, sharegpt_like_requests

    workload = args.get("workload", "sharegpt")
    max_len, block = args.get("max_model_len", 2048), args.get("block_size", 16)
    view = framework.call(SHARES, args)
    requests = [(1024, 256)] if workload == "lesson" else sharegpt_like_requests(
        2000, seed=0, mean_prompt_tokens=step.SHAREGPT_PROMPT_TOKENS, mean_output_tokens=step.SHAREGPT_OUTPUT_TOKENS,
        max_model_len=max_len)
    shares = view["figures"]["shares"]["data"][0]["y"]
    for policy, share, row in zip(POLICIES, shares, view["tables"]["policies"]["rows"]):
        if workload == "sharegpt":
            alone = token_state_percent(policy, mean_prompt_tokens=step.SHAREGPT_PROMPT_TOKENS,
                                        mean_output_tokens=step.SHAREGPT_OUTPUT_TOKENS, max_model_len=max_len,
                                        block_size=block) / 100
            assert share == pytest.approx(alone, abs=5e-7)  # the chart keeps 6 significant digits
        fits = concurrency(step._LESSON_TOKENS, requests, policy, max_model_len=max_len, block_size=block)
        assert row[3] == f"{fits:,}"


def test_side_by_side_runs_both_allocations_on_one_time_axis():
    view = final_view()
    out = view["outputs"]
    assert (out["c_running_max"]["value"], out["p_running_max"]["value"]) == (48, 115)
    assert out["c_ttft_p99_s"]["text"] == "26 s" and out["p_ttft_p99_s"]["text"] == "0.545 s"
    assert out["c_kv_token_share"]["text"] == "13.8%" and out["p_kv_token_share"]["text"] == "98.3%"
    # The same numbers as the two presets run on their own.
    assert out["c_queue_depth_max"]["value"] == step.preset_summary(step.BREAK_PRESET)["queue_depth_max"]
    assert out["p_queue_depth_max"]["value"] == step.preset_summary(step.FIX_PRESET)["queue_depth_max"]
    for figure in view["figures"].values():
        xs = figure["data"][0]["x"]
        assert xs == sorted(xs) and len(set(xs)) == len(xs)
        assert all(len(trace["y"]) == len(xs) for trace in figure["data"])
    # Held tokens never exceed what is reserved, on either side.
    kv = {trace["meta"]: trace["y"] for trace in view["figures"]["kv"]["data"]}
    for side in ("c", "p"):
        assert all(h <= u + 1e-9 for h, u in zip(kv[f"{side}_kv_token_fraction"], kv[f"{side}_kv_use_fraction"]))
    # The block map: two maps side by side, the left one mostly promises (reserved, empty: upper case).
    blockmap = view["blockmap"]
    cols = blockmap["cols"]
    assert cols == 2 * step.BLOCKMAP_COLS + step.GAP_COLS
    left = "".join(blockmap["cells"][r * cols:r * cols + step.BLOCKMAP_COLS] for r in range(blockmap["rows"]))
    right = "".join(blockmap["cells"][r * cols + cols - step.BLOCKMAP_COLS:(r + 1) * cols]
                    for r in range(blockmap["rows"]))
    assert sum(c.isupper() for c in left) > 0.6 * len(left)
    assert sum(c.isupper() for c in right) < 0.05 * len(right)
    assert blockmap["summary"].startswith("Left, reserve the maximum:")


def test_a_longer_max_length_hurts_only_the_contiguous_side():
    out = final_view(max_model_len=32_768, frame_interval_s=60)["outputs"]
    assert out["c_running_max"]["value"] == 12
    assert out["p_running_max"]["value"] == 115


def test_facts():
    f = step.facts()
    assert (f["paged_requests"], f["contiguous_requests"], f["paged_gain"]) == ("311", "48", "6.48")
    assert (f["waste_bound_tokens"], f["waste_bound_bytes"], f["contiguous_promise_bytes"]) == ("15", "4.92 MB", "2.26 GB")
    assert (f["quiz_tokens"], f["quiz_blocks"], f["quiz_slots"], f["quiz_empty"]) == ("1,037", "65", "1,040", "3")
    assert f["waste_published"] == "3.7%"
    assert f["side_c_ttft_p99"] == "26 s" and f["side_p_ttft_p99"] == "0.545 s"
    assert f["saturated_running_max"] == "256"
    # Little's law holds in the simulator: mean batch = throughput x time in the system.
    assert float(f["little_batch"]) == pytest.approx(float(f["sim_running_mean"]), rel=0.02)


@pytest.mark.parametrize("name, args, field", [
    (SHARES, {"workload": "lesson", "max_model_len": 1024}, "max_model_len"),
    (SHARES, {"block_size": 0}, "block_size"),
    (SHARES, {"workload": "everything"}, "workload"),
    (SIM, {"rate_per_s": 0}, "rate_per_s"),
    (SIM, {"max_model_len": 1000}, "max_model_len"),
])
def test_bad_input_is_a_calc_error_naming_the_field(name, args, field):
    with pytest.raises(CalcError) as caught:
        entry, bound = framework.bind(name, args)
        if entry.kind == "stream":
            next(entry.function(**bound))
        else:
            framework.call(name, args)
    assert caught.value.field == field
