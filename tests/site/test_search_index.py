"""Search indexes the lesson, not the widgets' machinery.

Two halves. The first renders widget blocks with ``hooks/widget_html.py`` and feeds
their HTML to Material's own search parser (no built site needed; it runs in the
fast suite). The second, marked ``site``, reads the built ``search/search_index.json``
against the built pages: no chart data rows, option lists or status notes in it, and
every lesson heading and the lesson's key words still in it, on the right pages.
"""

from __future__ import annotations

import html
import json
import os
import re
import sys
import xml.etree.ElementTree as etree

import pytest
from markdown.serializers import to_html_string
from material.plugins.search.plugin import Parser

from tests.site.parsed import parsed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
sys.path.insert(0, os.path.join(ROOT, "hooks"))
from widget_html import (  # noqa: E402
    NOT_SEARCHED, SPEED_CHOICES, STATIC_NOTE, chart_rows, render_drill, render_simulation, render_widget,
)

EXCLUDE = "data-search-exclude"
assert NOT_SEARCHED == {"data_search_exclude": "true"}


def plain(text: str) -> str:
    """Index or page text as a reader reads it: no tags, entities decoded, whitespace collapsed."""
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", text))).strip()


def indexed_text(element: etree.Element) -> str:
    """What Material's search plugin would index from this block, all sections joined."""
    parser = Parser()
    parser.feed(to_html_string(element))
    parser.close()
    return plain(" ".join("".join(section.title + section.text) for section in parser.data))


# ---------------------------------------------------------------------------------------------
# Rendered blocks through Material's parser (fast suite)


@pytest.fixture(scope="module")
def blocks():
    return {
        "widget": render_widget("kv_cache_arithmetic.kv_per_token"),
        "drill": render_drill("kv_cache_arithmetic.kv_bytes_drill"),
        "simulation": render_simulation("paged_attention.side_by_side", hide=["frame_interval_s"]),
    }


@pytest.mark.parametrize("kind", ["widget", "drill", "simulation"])
def test_a_marked_element_holds_no_element_of_its_own_tag(blocks, kind):
    # Material's parser keeps skipped elements in a set keyed by tag name: an inner <span> closing
    # inside a marked <span> would end the skip and index the rest of it.
    marked = [element for element in blocks[kind].iter() if EXCLUDE in element.attrib]
    assert marked, f"the {kind} marks nothing as not searched"
    for element in marked:
        inner = [child.tag for child in element.iter() if child is not element]
        assert element.tag not in inner, f"<{element.tag} {EXCLUDE}> holds a <{element.tag}>"


def test_widget_indexes_its_outputs_and_captions_not_its_controls_or_data(blocks):
    root = blocks["widget"]
    text = indexed_text(root)
    labels = [plain(dt.text) for dt in root.iter("dt")]
    values = [plain(dd.text) for dd in root.iter("dd")]
    captions = [plain(span.text) for span in root.iter("span") if "data-chart-summary" in span.attrib]
    assert labels and values and captions
    for kept in labels + values + captions:
        assert kept in text
    options = [plain(option.text) for option in root.iter("option")]
    assert len(options) >= 2
    assert "".join(options) not in text and " ".join(options) not in text
    assert "The numbers" not in text and STATIC_NOTE not in text
    rows = [" ".join(plain(cell.text) for cell in row) for table in root.iter("table")
            if "data-chart-table" in table.attrib for row in table.iter("tr")][1:]  # the header first
    assert len(rows) > 2
    for first, second in zip(rows, rows[1:]):
        assert f"{first} {second}" not in text


def test_drill_indexes_its_question_and_explanation_not_its_form(blocks):
    root = blocks["drill"]
    text = indexed_text(root)
    question = next(p for p in root.iter("p") if p.get("data-output") == "question")
    explanation = next(p for p in root.iter("p") if p.get("data-output") == "explanation")
    assert plain(question.text) in text
    assert plain(explanation.text) in text  # the worked answer stays findable, as a quiz answer does
    for button in ("Check", "New numbers", "Your answer", "answers are checked"):
        assert button not in text
    assert "<p></p>" not in "".join("".join(s.text) for s in _sections(root))  # the empty verdict and error lines


def test_simulation_indexes_results_and_captions_not_its_panel(blocks):
    root = blocks["simulation"]
    text = indexed_text(root)
    for dt in root.iter("dt"):
        assert plain(dt.text) in text
    summaries = [plain(span.text) for span in root.iter("span")
                 if "data-chart-summary" in span.attrib or "data-blockmap-summary" in span.attrib]
    assert len(summaries) >= 2
    for summary in summaries:
        assert summary in text
    speeds = "".join(label for _, label in SPEED_CHOICES)
    for gone in ("PlayPauseReset", "Play", speeds, "s simulated", "holds tokens", "cached prefix",
                 "reserved, empty", "press Play", "The numbers"):
        assert gone not in text, gone


def _sections(element):
    parser = Parser()
    parser.feed(to_html_string(element))
    parser.close()
    return parser.data


def test_material_strips_the_marker_from_the_page():
    # The plugin removes data-search-*="<non-empty>" after indexing; an empty value would stay in the page.
    page = to_html_string(render_drill("kv_cache_arithmetic.kv_bytes_drill"))
    assert page.count(f'{EXCLUDE}="true"') == 4  # form, error, verdict, status
    stripped = re.sub(r"\s?data-search-\w+=\"[^\"]+\"", "", page)  # the plugin's on_page_context
    assert EXCLUDE not in stripped


# ---------------------------------------------------------------------------------------------
# The built index (site)

INDEX_BUDGET_BYTES = 500_000  # 860,168 bytes before the widgets' machinery was left out; 397,902 after

KEY_WORDS = {  # a reader's query -> a page that must answer it
    "paged attention": "lesson/05-paged-attention/",
    "prefix caching": "lesson/12-prefix-caching/",
    "p99": "lesson/19-incident-p99-ttft/",
    "speculative": "lesson/09-speculative-decoding/",
}


@pytest.fixture(scope="module")
def index():
    path = os.path.join(SITE, "search", "search_index.json")
    if not os.path.exists(path):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    with open(path, "rb") as handle:
        raw = handle.read()
    return len(raw), json.loads(raw)["docs"]


@pytest.fixture(scope="module")
def page_texts(index):
    """Each page's url -> all its indexed text (titles and sections), made plain."""
    texts: dict[str, list[str]] = {}
    for doc in index[1]:
        texts.setdefault(doc["location"].split("#")[0], []).append(doc["title"] + " " + doc["text"])
    return {url: plain(" ".join(parts)) for url, parts in texts.items()}


def built_pages():
    for folder, _, files in os.walk(SITE):
        if "index.html" in files:
            url = os.path.relpath(folder, SITE).replace(os.sep, "/")
            url = "" if url == "." else url + "/"
            yield url, parsed(os.path.join(folder, "index.html"))


@pytest.fixture(scope="module")
def pages():
    return {url: soup for url, soup in built_pages() if soup.select_one("article")}


@pytest.mark.site
def test_index_is_small(index):
    size_bytes, docs = index
    assert size_bytes < INDEX_BUDGET_BYTES, f"search_index.json is {size_bytes:,} bytes"
    assert len(docs) >= 22 * 2  # each lesson page and its sections


@pytest.mark.site
def test_no_chart_data_rows_are_indexed(pages, page_texts):
    checked = 0
    for url, soup in pages.items():
        text = page_texts.get(url, "")
        for table in soup.select("table[data-chart-table]"):
            rows = [" ".join(plain(td.get_text()) for td in tr.find_all("td")) for tr in table.select("tbody tr")]
            for first, second in zip(rows, rows[1:]):  # two rows in a row cannot be prose
                assert f"{first} {second}" not in text, f"{url}: chart rows '{first} {second}' are in the search index"
                checked += 1
        assert "The numbers series" not in text, f"{url}: a chart's table header is in the search index"
    assert checked > 1000


@pytest.mark.site
def test_no_control_option_lists_or_notes_are_indexed(pages, page_texts):
    selects = 0
    for url, soup in pages.items():
        text = page_texts.get(url, "")
        for select in soup.select(".calc-widget form select"):
            options = [plain(option.get_text()) for option in select.find_all("option")]
            if len(options) >= 2:
                assert "".join(options) not in text, f"{url}: the options of {select.get('name')} are indexed"
                assert " ".join(options) not in text, f"{url}: the options of {select.get('name')} are indexed"
                selects += 1
        for note in ("PlayPauseReset", plain(STATIC_NOTE), "press Play to watch it unfold"):
            assert note.lower() not in text.lower(), f"{url}: '{note}' is indexed"
    assert selects > 20


@pytest.mark.site
def test_lesson_headings_are_indexed(pages, index):
    docs = {doc["location"]: plain(doc["title"]) for doc in index[1]}
    lessons = [url for url in pages if url.startswith("lesson/")]
    assert len(lessons) == 22
    for url in lessons:
        article = pages[url].select_one("article")
        h1 = plain(article.find("h1").get_text())
        assert docs.get(url) == h1.rstrip("¶").strip(), f"{url}: its title is not the index's"
        for h2 in article.select("h2[id]"):
            heading = plain(h2.get_text()).rstrip("¶").strip()
            assert docs.get(f"{url}#{h2['id']}") == heading, f"{url}: heading '{heading}' is not indexed"


@pytest.mark.site
def test_prose_kept_in_widgets_is_indexed(pages, page_texts):
    found = 0
    for url, soup in pages.items():
        text = page_texts.get(url, "")
        for element in soup.select("[data-chart-summary], [data-output=question], [data-output=explanation], "
                                   ".calc-widget dt, .calc-intro p"):
            kept = plain(element.get_text())
            if kept:
                assert kept in text, f"{url}: '{kept[:60]}' is missing from the search index"
                found += 1
    assert found > 300


@pytest.mark.site
@pytest.mark.parametrize("query", sorted(KEY_WORDS))
def test_lesson_words_find_their_page(index, query):
    hits = {doc["location"].split("#")[0] for doc in index[1]
            if query in plain(doc["title"] + " " + doc["text"]).lower()}
    assert KEY_WORDS[query] in hits, f"'{query}' finds {sorted(hits)[:8]}"


@pytest.mark.site
def test_notebook_code_cells_are_indexed_once(pages, page_texts):
    checked = 0
    for url, soup in pages.items():
        copies = soup.select("div.clipboard-copy-txt")  # the clipboard's hidden copy of each code cell
        if not copies:
            continue
        text = page_texts.get(url, "")
        assert "Copied!" not in text, f"{url}: the clipboard's notice is in the search index"
        for copy in copies:
            source = plain(copy.get_text())
            if len(source) > 40:  # long enough to occur only where the cell is
                assert text.count(source) == 1, f"{url}: a code cell is indexed {text.count(source)} times"
                checked += 1
    assert checked >= 7  # every notebook has code cells
