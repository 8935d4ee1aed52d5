"""The lesson's pictures: well-formed SVG with a text alternative, and drawn from calc's state."""

import xml.etree.ElementTree as ElementTree

import pytest

from calc.catalog import get_model
from calc.diagrams import batching, kv, pools, prefix, speculation
from calc.memory import kv_bytes_per_request, kv_bytes_per_token
from calc.parallel import pipeline_bubble_fraction
from calc.prefix import hit_tokens_for_layout
from calc.speculative import expected_tokens_per_step

ALL = [kv.kv_per_layer_head, kv.block_table, batching.chunked_prefill_steps, speculation.draft_verify_accept,
       prefix.hash_chain, pools.kv_handoff, pools.pipeline_bubble, pools.routing_into_pools]


@pytest.mark.parametrize("make", ALL, ids=lambda f: f.__name__)
def test_each_picture_is_a_labelled_figure_with_parseable_svg(make):
    diagram = make()
    root = ElementTree.fromstring(diagram.to_html())
    assert root.tag == "figure" and root.find("figcaption").text == diagram.caption
    svg = root.find("svg")
    assert svg.get("role") == "img" and svg.get("width") == "100%" and svg.get("viewBox").startswith("0 0 ")
    title_id, desc_id = svg.get("aria-labelledby").split()
    assert svg.find("title").get("id") == title_id and svg.find("desc").get("id") == desc_id
    assert len(svg.find("desc").text) > 40
    assert "fill=\"#" not in diagram.svg() and "style=" not in diagram.svg()  # colours come from the theme's CSS


def test_kv_grid_caption_is_calcs_bytes_per_token():
    for model in ("llama-3.1-8b", "llama-3.1-70b"):
        assert f"= {kv_bytes_per_token(get_model(model)):,} bytes per token" in kv.kv_per_layer_head(model).caption


def test_block_table_uses_every_block_once_and_wastes_under_a_block_per_request():
    pool, tables = kv._grow_block_tables([7, 10, 3], 4, 10)
    physical = [b for table in tables for b in table]
    assert sorted(physical) == list(range(6)) and pool.used == 6
    assert tables == [[0, 3], [1, 4, 5], [2]]  # the requests grew side by side, so their blocks interleave
    assert all(len(t) * 4 - n < 4 for t, n in zip(tables, [7, 10, 3]))


def test_chunked_prefill_steps_come_from_the_scheduler():
    plans = batching._plans(running=4, prompt_tokens=60, budget_tokens=24, steps=4)
    assert plans == [(4, 20), (4, 20), (4, 20), (5, 0)]


def test_speculation_caption_uses_the_expected_tokens_formula():
    assert f"{expected_tokens_per_step(0.8, 4):.2f}" in speculation.draft_verify_accept(acceptance=0.8).caption
    with pytest.raises(Exception, match="accepted"):
        speculation.draft_verify_accept(accepted=9)


def test_hash_chain_matches_calc_prefix_and_keys_depend_on_the_parent():
    caption = prefix.hash_chain().caption
    hit = hit_tokens_for_layout([("stable", 12), ("variable", 4)], 4)["hit_tokens"]
    assert f"reuses {hit // 4} blocks ({hit} tokens)" in caption and "reuses 0" in caption
    a = prefix.block_hashes(prefix.SYSTEM_PROMPT + prefix.QUESTION_A, 4)
    b = prefix.block_hashes(prefix.SYSTEM_PROMPT + prefix.QUESTION_B, 4)
    assert a[:3] == b[:3] and a[3] != b[3]


def test_pools_pictures_follow_calc():
    assert "336 MB" in pools.kv_handoff().caption
    assert kv_bytes_per_request(get_model("llama-3.1-70b"), 1024) == 335_544_320
    assert f"({pipeline_bubble_fraction(4, 8):.0%})" in pools.pipeline_bubble(4, 8).caption
    description = pools.routing_into_pools().description
    assert "pool documents takes document requests" in description and "max_num_seqs 16" in description
