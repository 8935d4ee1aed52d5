"""The lesson's core path, measured on the built site by scripts/reading_time.py: at most 45 minutes, and every
step in the shape CONTRIBUTING.md describes (its idea first, a primary block early, a Try this, a takeaway, a
link to the deep dive that goes deeper)."""

from __future__ import annotations

import importlib.util
import os
import re

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))
MAX_WORDS_BEFORE_PRIMARY = 200  # the idea, a formula and a caption: about 12 lines at 1280 px, the first screen
MECHANISM_FIGURES = {2: ["kv-per-layer-head"], 5: ["block-table"], 6: ["chunked-prefill"], 9: ["draft-verify-accept"],
                     12: ["hash-chain"], 18: ["kv-handoff", "pipeline-bubble"], 20: ["routing-into-pools"]}


def _load():
    spec = importlib.util.spec_from_file_location("reading_time", os.path.join(ROOT, "scripts", "reading_time.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


reading_time = _load()


def test_the_rule_counts_prose_outside_folds_and_blocks_by_kind():
    html = ('<article class="md-content__inner md-typeset"><h1>Two words</h1><p>One idea here. Then two.</p>'
            '<div data-kind="simulation"><p>inside the block</p></div><div data-kind="drill"></div>'
            '<details><summary>Fold</summary><p>three more words</p><div data-kind="widget"></div></details>'
            '<figure class="calc-figure"><svg><text>not counted</text></svg><figcaption>A caption.</figcaption>'
            '</figure></article><p>outside the article</p>')
    m = reading_time.measure_page(html)
    assert (m["core_words"], m["fold_words"]) == (2 + 5 + 2, 1 + 3)
    assert (m["widgets"], m["drills"], m["fold_widgets"], m["figures"]) == (1, 1, 1, 1)
    assert m["minutes"] == pytest.approx(9 / 200 + 1 + 0.5)
    assert m["first_block_at_word"] == 7 and m["first_paragraph"] == "One idea here. Then two."


@pytest.fixture(scope="module")
def result():
    if not os.path.isdir(os.path.join(SITE, "lesson")):
        pytest.skip("no built site (make build)")
    return reading_time.report(SITE)


@pytest.mark.site
def test_core_path_is_at_most_45_minutes(result):
    assert len(result["steps"]) == 22
    assert result["total_minutes"] <= reading_time.LIMIT_MINUTES, result["total_minutes"]
    assert reading_time.main(["--site", SITE, "--out", "", "--check"]) == 0


@pytest.mark.site
@pytest.mark.parametrize("step", range(1, 23))
def test_each_step_has_the_shape(result, step):
    page = result["steps"][step - 1]
    assert page["step"] == step
    sentences = [s for s in re.split(r"(?<=[.!?:])\s+", page["first_paragraph"]) if s]
    assert len(sentences) >= 2 and len(page["first_paragraph"].split()) >= 20, page["first_paragraph"]
    assert page["widgets"] + page["drills"] >= 1, "no unfolded primary widget, simulation or drill"
    assert page["widgets"] <= 1, "one unfolded primary widget or simulation a step"
    assert page["first_block_at_word"] <= MAX_WORDS_BEFORE_PRIMARY, page["first_block_at_word"]
    assert page["has_try_this"] and page["has_takeaway"]
    assert page["deep_dive_links"], "link the deep dive that goes deeper"


@pytest.mark.site
@pytest.mark.parametrize("step, names", sorted(MECHANISM_FIGURES.items()))
def test_mechanism_pictures_are_on_their_steps(step, names):
    slug = next(s for s, _ in reading_time.step_pages(SITE) if s.startswith(f"{step:02d}-"))
    with open(os.path.join(SITE, "lesson", slug, "index.html"), encoding="utf-8") as handle:
        html = handle.read()
    for name in names:
        assert f'<figure class="calc-figure" id="figure-{name}">' in html
        assert f'aria-labelledby="figure-{name}-title figure-{name}-desc"' in html


@pytest.mark.site
def test_no_dollar_amount_renders_as_math():
    """A fact such as "$4.60" shows as text: two on one line, unescaped, would become one formula (step 20's quiz)."""
    from tests.site.built_facts import built_facts

    shown = 0
    for slug, path in reading_time.step_pages(SITE):
        facts = built_facts(slug[3:].replace("-", "_"))  # as the build filled them in (the build cache's)
        with open(path, encoding="utf-8") as handle:
            html = handle.read()
        math = " ".join(re.findall(r'<span class="arithmatex">(.*?)</span>', html, re.S))
        for name, value in facts.items():
            if isinstance(value, str) and value.startswith("$") and f"{{{{ {name} }}}}" in _source(slug):
                assert value in html, (slug, name, value)
                assert value[1:] not in math, (slug, name, value)
                shown += 1
    assert shown >= 2


def _source(slug: str) -> str:
    with open(os.path.join(ROOT, "docs", "lesson", slug + ".md"), encoding="utf-8") as handle:
        return handle.read()
