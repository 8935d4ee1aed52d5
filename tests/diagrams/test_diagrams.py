"""The lesson's pictures: well-formed SVG with a text alternative, and drawn from calc's state."""

import xml.etree.ElementTree as ElementTree

import pytest

from calc.catalog import get_model
from calc.diagrams import batching, kv, pools, prefix, speculation, svg as primitives
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
    wide, narrow = root.findall("svg")  # one picture, drawn for wide screens and for a phone
    assert [wide.get("data-layout"), narrow.get("data-layout")] == ["wide", "narrow"]
    assert "calc-diagram--wide" in wide.get("class") and "calc-diagram--narrow" in narrow.get("class")
    for svg in (wide, narrow):
        _, _, width, _ = map(float, svg.get("viewBox").split())
        assert svg.get("role") == "img" and svg.get("viewBox").startswith("0 0 ")
        assert float(svg.get("width")) == round(width * primitives.DISPLAY_SCALE)  # 1.25 px a unit at most
        title_id, desc_id = svg.get("aria-labelledby").split()
        assert svg.find("title").get("id") == title_id and svg.find("desc").get("id") == desc_id
        assert len(svg.find("desc").text) > 40
    # One text alternative: the same title and description in both (the stylesheet shows one), the phone's
    # copy out of the search index.
    assert (wide.find("title").text, wide.find("desc").text) == (narrow.find("title").text, narrow.find("desc").text)
    assert narrow.get("data-search-exclude") == "" and wide.get("data-search-exclude") is None
    ids = [e.get("id") for e in root.iter() if e.get("id")]
    assert len(ids) == len(set(ids))
    for drawing in (diagram.svg(), diagram.narrow.svg()):
        assert "fill=\"#" not in drawing and "style=" not in drawing  # colours come from the theme's CSS


def _labels_and_boxes(svg: ElementTree.Element):
    """Each label's estimated box (x0, y0, x1, y1, text) and each rectangle's box, in viewBox units."""
    labels = []
    for label in svg.iter("text"):
        size = float(label.get("font-size"))
        width = primitives.text_width(label.text, size, bold=bool(label.get("font-weight")))
        x, y = float(label.get("x")), float(label.get("y"))
        x0 = {"start": x, "middle": x - width / 2, "end": x - width}[label.get("text-anchor")]
        labels.append((x0, y - 0.75 * size, x0 + width, y + 0.25 * size, label.text, size))  # ascent, descent
    boxes = [(float(r.get("x")), float(r.get("y")), float(r.get("x")) + float(r.get("width")),
              float(r.get("y")) + float(r.get("height"))) for r in svg.iter("rect")]
    return labels, boxes


def _segment_meets_box(x1, y1, x2, y2, box) -> bool:
    """Whether the segment from (x1, y1) to (x2, y2) crosses the inside of ``box`` (Liang-Barsky clipping).

    >>> _segment_meets_box(0, 5, 10, 5, (2, 0, 4, 10)), _segment_meets_box(0, 0, 10, 0, (2, 1, 4, 10))
    (True, False)
    """
    bx0, by0, bx1, by1 = box[0] + 0.5, box[1] + 0.5, box[2] - 0.5, box[3] - 0.5  # touching is not crossing
    low, high = 0.0, 1.0
    for p, q in ((-(x2 - x1), x1 - bx0), (x2 - x1, bx1 - x1), (-(y2 - y1), y1 - by0), (y2 - y1, by1 - y1)):
        if p == 0:
            if q < 0:
                return False
        elif p < 0:
            low = max(low, q / p)
        else:
            high = min(high, q / p)
    return low < high


def _legibility_problems(diagram) -> list[str]:
    """What would keep ``diagram`` from being read where its layout shows (estimated from font metrics)."""
    limit = primitives.WIDE_WIDTH if diagram.layout == "wide" else primitives.NARROW_WIDTH
    svg = ElementTree.fromstring(diagram.svg())
    _, _, width, height = map(float, svg.get("viewBox").split())
    found = [f"{diagram.layout} layout {width:g} wide > {limit}"] if width > limit else []
    labels, boxes = _labels_and_boxes(svg)
    for x0, y0, x1, y1, content, size in labels:
        if size < primitives.MIN_FONT_SIZE:
            found.append(f"{content!r} at {size:g} < {primitives.MIN_FONT_SIZE}")
        if x0 < 0 or x1 > width + 0.5 or y0 < 0 or y1 > height + 0.5:
            found.append(f"{content!r} leaves the picture")
        cx, cy = (x0 + x1) / 2, (y0 + y1) / 2
        inside = [b for b in boxes if b[0] <= cx <= b[2] and b[1] <= cy <= b[3]]
        if inside:  # a label that starts inside a box stays inside it
            bx0, by0, bx1, by1 = min(inside, key=lambda b: (b[2] - b[0]) * (b[3] - b[1]))
            if x0 < bx0 - 0.5 or x1 > bx1 + 0.5 or y0 < by0 - 0.5 or y1 > by1 + 0.5:
                found.append(f"{content!r} overflows its box")
        elif any(min(x1, b[2]) - max(x0, b[0]) > 0.5 and min(y1, b[3]) - max(y0, b[1]) > 0.5 for b in boxes):
            found.append(f"{content!r} runs into a box")  # a label outside every box touches none
    for line in svg.iter("line"):  # no line (an arrow's shaft) through a label
        x1, y1, x2, y2 = (float(line.get(key)) for key in ("x1", "y1", "x2", "y2"))
        for x0, y0, lx1, ly1, content, _ in labels:
            if _segment_meets_box(x1, y1, x2, y2, (x0, y0, lx1, ly1)):
                found.append(f"a line runs through {content!r}")
    for i, a in enumerate(labels):  # no two labels on one spot
        for b in labels[i + 1:]:
            if min(a[2], b[2]) - max(a[0], b[0]) > 1 and min(a[3], b[3]) - max(a[1], b[1]) > 1:
                found.append(f"{a[4]!r} overlaps {b[4]!r}")
    return found


@pytest.mark.parametrize("make", ALL, ids=lambda f: f.__name__)
def test_each_layout_fits_its_screen_with_labels_of_11_px_inside_their_boxes(make):
    """The wide layout fits the column of a 640 px screen, the narrow one a 360 px phone's, at a scale of 1
    or more: every label of at least 11 units is then at least 11 CSS px, inside the picture and its box."""
    diagram = make()
    assert diagram.layout == "wide" and diagram.narrow.layout == "narrow"
    assert _legibility_problems(diagram) == [] and _legibility_problems(diagram.narrow) == []


def test_the_legibility_check_finds_a_small_label_a_cut_one_and_an_overflowing_box():
    from calc.diagrams.svg import Diagram, line, rect, text

    shapes = [text(5, 20, "tiny", size=9, anchor="start"), text(95, 40, "cut off at the right edge", size=12),
              line(8, 0, 8, 30),
              rect(10, 50, 30, 20, "d-k"), text(25, 64, "far too long for its box", size=11),
              text(25, 52, "on edge", size=11)]
    found = _legibility_problems(Diagram("t", "T", "D.", 100, 80, shapes, "C."))
    assert found[0] == "'tiny' at 9 < 11" and "'cut off at the right edge' leaves the picture" in found
    assert "'far too long for its box' overflows its box" in found
    assert "'on edge' runs into a box" in found and "a line runs through 'tiny'" in found
    assert _legibility_problems(Diagram("t", "T", "D.", 700, 80, [], "C.")) == ["wide layout 700 wide > 600"]


def test_a_layout_wider_than_its_screen_or_a_second_text_alternative_is_refused():
    from calc.diagrams.svg import Diagram, for_every_screen, layout_for

    with pytest.raises(ValueError, match="narrow layout is 400 wide, over the 328"):
        for_every_screen(lambda w: Diagram("t", "T", "D.", 400, 10, [], "C.", layout=layout_for(w)))
    with pytest.raises(ValueError, match="one text alternative"):
        for_every_screen(lambda w: Diagram("t", "T", f"D {w}.", w, 10, [], "C.", layout=layout_for(w)))
    with pytest.raises(Exception, match="width must be between 200 and 2000"):
        kv.block_table(width=50)


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


def test_the_figure_block_renders_a_named_picture_and_refuses_unknown_ones():
    import os
    import sys

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "hooks"))
    from figures import render_figure

    assert render_figure("kv.block_table") == kv.block_table().to_html()
    assert render_figure("kv.block_table").count("<svg") == 2
    for bad in ("kv", "kv.nope", "kv._grow_block_tables", "nope.block_table"):
        with pytest.raises((ValueError, ImportError)):
            render_figure(bad)


def test_a_page_with_a_figure_block_renders_it_through_markdown():
    import os
    import sys

    import markdown

    sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))),
                                    "hooks"))
    from scan import CalcBlocksExtension  # every block kind, computed on the spot

    html = markdown.markdown("Text.\n\n/// figure | pools.pipeline_bubble\n///\n\nMore KV text.",
                             extensions=["abbr", CalcBlocksExtension()])
    assert '<figure class="calc-figure" id="figure-pipeline-bubble">' in html
    assert html.count("<svg") == 2 and "<p><figure" not in html
