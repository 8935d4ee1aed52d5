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


ARTICLE = '<article class="md-content__inner md-typeset">{}</article><p>outside the article</p>'


def test_the_rule_counts_prose_outside_folds_and_blocks_by_kind():
    html = ARTICLE.format(
        '<h1>Two words</h1><p>One idea here. Then two.</p>'
        '<div data-kind="simulation"><p>inside the block</p></div><div data-kind="drill"></div>'
        '<div data-kind="widget"><details><summary>The numbers</summary><p>a chart table</p></details></div>'
        '<details><summary>Fold</summary><p>three more words</p><div data-kind="widget"></div></details>'
        '<figure class="calc-figure"><svg><text>not counted</text></svg><figcaption>A caption.</figcaption>'
        '</figure>')
    m = reading_time.measure_page(html)
    # prose: the heading, the paragraph, the closed fold's title and the caption; the chart table is the widget's
    assert (m["core_words"], m["fold_words"]) == (2 + 5 + 1 + 2, 3)
    assert (m["calculators"], m["simulations"], m["drills"]) == (1, 1, 1)
    assert (m["widgets"], m["fold_widgets"], m["folds"], m["figures"]) == (2, 1, 1, 1)
    assert m["pointed_folds"] == [] and m["has_try_this"] is False
    assert m["minutes"] == pytest.approx(10 / 200 + 1.5 + 2.5 + 1.5)
    assert m["first_block_at_word"] == 7 and m["first_paragraph"] == "One idea here. Then two."


QUIZ = '<details class="question" id="quiz"><summary>Quiz: how many blocks?</summary><p>{}</p></details>'
PLAY_IT_LIVE = '<details class="note"><summary>Play it live</summary><p>{}</p><div data-kind="simulation"></div></details>'
MORE = '<details class="note"><summary>More to try</summary><p>{}</p><div data-kind="widget"></div></details>'


def _page(tip: str, *folds: str) -> str:
    return ARTICLE.format('<div class="admonition tip"><p class="admonition-title">Try this</p>'
                          f'<p>{tip}</p></div>' + "".join(folds))


@pytest.mark.parametrize("tip, pointed, extra_minutes", [
    ("Press Play and watch the queue.", [], 0),
    ("Then open the quiz below and predict the answer.", ["Quiz: how many blocks?"], 10 / 200),
    ("Open <em>Play it live</em> below and press Play.", ["Play it live"], 10 / 200 + 2.5),
    ("Read the Play it live fold, then the quiz.", ["Play it live"], 10 / 200 + 2.5),
    ('Check with <a href="#quiz">the quiz</a>.', ["Quiz: how many blocks?"], 10 / 200),
    ("Open the quiz, then open More to try.", ["Quiz: how many blocks?", "More to try"], 20 / 200 + 1.5),
    ("Open the settings and play.", [], 0),  # "open" naming no fold on the page
])
def test_a_fold_a_try_this_points_into_is_on_the_core_path(tip, pointed, extra_minutes):
    ten_words = "one two three four five six seven eight nine ten"
    folds = [QUIZ.format(ten_words), PLAY_IT_LIVE.format(ten_words), MORE.format(ten_words)]
    baseline = reading_time.measure_page(_page("Press Play and watch the queue.", *folds))
    m = reading_time.measure_page(_page(tip, *folds))
    assert m["pointed_folds"] == pointed
    assert m["pointed_words"] == 10 * len(pointed)
    prose_difference = (m["core_words"] - baseline["core_words"]) / 200
    assert m["minutes"] - baseline["minutes"] == pytest.approx(prose_difference + extra_minutes, abs=1e-3)


def test_only_a_try_this_tip_points():
    other_tip = ARTICLE.format('<div class="admonition tip"><p class="admonition-title">Tip</p>'
                               '<p>Open the quiz below.</p></div>' + QUIZ.format("ten words of answer"))
    m = reading_time.measure_page(other_tip)
    assert m["has_try_this"] is False and m["pointed_folds"] == [] and m["pointed_words"] == 0


@pytest.fixture(scope="module")
def result():
    if not os.path.isdir(os.path.join(SITE, "lesson")):
        pytest.skip("no built site (make build)")
    return reading_time.report(SITE)


#: LESSON.md's shape of a step: "one primary live widget or the live simulation" and "the core path of a step is
#: about 150-250 words".
LESSON_MIN_CORE_WORDS = 150


def lesson_shape_floor_minutes(result) -> float:
    """The shortest core path LESSON.md's step shape allows by this rule: each step's one primary block (the
    cheapest of the blocks it shows unfolded) and 150 words of prose."""
    minutes = 0.0
    for page in result["steps"]:
        shown = [reading_time.MINUTES_PER_BLOCK[kind] for kind, n in
                 (("widget", page["calculators"]), ("simulation", page["simulations"]), ("drill", page["drills"])) if n]
        minutes += min(shown) + LESSON_MIN_CORE_WORDS / reading_time.WORDS_PER_MINUTE
    return minutes


@pytest.mark.site
def test_no_try_this_sends_the_reader_into_a_fold(result):
    """Issue 32, Deliver 5: one Try this action on the page's own block, none into a fold."""
    assert {page["step"]: page["pointed_folds"] for page in result["steps"] if page["pointed_folds"]} == {}


@pytest.mark.site
def test_the_45_minute_limit_lies_below_the_floor_of_the_lessons_step_shape(result):
    """Why the next test fails: with one live block per step (12 calculators, 8 simulations, 2 drills: 41 minutes
    by the rule) and LESSON.md's 150 words of prose a step (16.5 minutes), no cut of the prose reaches 45. When
    the rule, the limit or the step shape changes, this fails, and the xfail below is to be looked at again."""
    floor = lesson_shape_floor_minutes(result)
    assert floor > reading_time.LIMIT_MINUTES, floor
    assert result["total_minutes"] >= floor


@pytest.mark.site
@pytest.mark.xfail(strict=True, reason="issue 32: the 45-minute limit is below the floor of LESSON.md's step shape "
                   "(one live block and 150 words a step: see the test above); 70.9 minutes on the build of "
                   "2026-12-07, 57.5 the floor")
def test_core_path_is_at_most_45_minutes(result):
    assert len(result["steps"]) == 22
    assert result["total_minutes"] <= reading_time.LIMIT_MINUTES, result["total_minutes"]
    assert reading_time.main(["--site", SITE, "--out", "", "--check"]) == 0


@pytest.mark.site
def test_every_fold_a_try_this_names_is_counted(result):
    """A second way to find the folds a Try this points into, by a fold's title (up to its colon) quoted in the
    tip: whatever it finds, the count must have found too."""
    for page in result["steps"]:
        with open(os.path.join(SITE, "lesson", page["slug"], "index.html"), encoding="utf-8") as handle:
            html = handle.read()
        titles = [" ".join(re.sub(r"<[^>]+>", " ", t).split())
                  for t in re.findall(r"<details[^>]*>\s*<summary>(.*?)</summary>", html, re.S)]
        for tip in page["try_this"]:
            for title in titles:
                head = title.split(":")[0].strip()
                if len(head) > 8 and re.search(r"\bopen\b", tip, re.I) and head.lower() in tip.lower():
                    assert any(p.startswith(head) for p in page["pointed_folds"]), (page["slug"], head)
    assert sum(len(page["pointed_folds"]) for page in result["steps"]) == \
        len({(page["slug"], f) for page in result["steps"] for f in page["pointed_folds"]})


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
