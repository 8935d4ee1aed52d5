"""One story: a labelled quantity has one value on every built page (issue 19, item 4).

The test reads every built page's article as text and finds labelled quantities: a
label and a number with its unit ("KV cache of the replica 399,169 tokens", "fp8
weights ... 18.2 GB per GPU", "Scale-up delay ... = 47.6 s", "Within 50 ms per token
... $1.85 per million"). A label seen with two different values on two pages fails,
naming both pages and both values. The running example's capacity has one value
(:data:`calc.lesson.KV_CAPACITY_TOKENS`); its alternative counts may appear on step 1
only, which explains where each comes from.

``test_a_contradiction_is_caught`` proves the test can fail: it copies one built page,
changes one quantity in the copy, and checks that the finder reports it.

Run after a build: ``.venv/bin/python -m pytest -q tests/site/test_one_story.py`` (``CALC_SITE_DIR`` names another built folder).
"""

from __future__ import annotations

import html
import os
import pathlib
import re
import shutil

import pytest

from calc import lesson

ROOT = pathlib.Path(__file__).resolve().parents[2]
SITE = pathlib.Path(os.environ.get("CALC_SITE_DIR", ROOT / "site"))  # the built site; another folder for a private build
STEP_1 = "lesson/01-a-70b-assistant/"
#: The step that owns a quantity's alternatives: each may be shown there, once, with where it comes from.
ALTERNATIVES_HOME = {"running example's KV capacity": STEP_1}

_N = r"\d[\d,]*(?:\.\d+)?"
#: Within one sentence: any character but a full stop, or a decimal point inside a number.
_S = r"(?:[^.]|(?<=\d)\.(?=\d))"
#: label -> patterns; group 1 is the value with its unit. Patterns are matched on the article's text
#: (tags stripped, entities decoded, whitespace collapsed), so a table row reads "label value".
LABELLED = {
    # Any count of tokens from 399,000 to 399,999 is the replica's capacity (or one of its alternatives,
    # which belong on step 1 only).
    "running example's KV capacity": [r"\b(399,\d{3}) tokens\b", rf"KV cache of the replica:? (?:is )?({_N})"],
    "requests of 1,280 tokens at once (bf16)": [r"(?<!→ )\b(\d{3}) (?:average )?(?:requests|conversations) of 1,280 tokens",
                                                r"Requests of 1,280 tokens at once (\d+)"],
    "fp8 weights per GPU": [rf"fp8 weights(?: \[\d+\])?:{_S}{{0,80}}?({_N} GB) per GPU", rf"Weights per GPU, fp8 ({_N} GB)"],
    "KV tokens with fp8 weights": [rf"fp8 weights(?: \[\d+\])?:{_S}{{0,100}}?({_N}) tokens", rf"KV cache, fp8 weights ({_N})",
                                   rf"KV cache, fp8 ({_N}) tokens"],
    "scale-up delay of step 15": [rf"[Ss]cale-up delay\b{_S}*?= ({_N} s)\b(?!{_S}*?=)"],
    "FlashAttention score matrix per layer on each GPU": [rf"({_N} [GT]B) per layer on each GPU",
                                                          rf"one layer's scores for the \d+ heads on one GPU would take ({_N} [GT]B)",
                                                          rf"Scores of one layer, if materialised ({_N} [GT]B) per GPU"],
    "price of the replica within 50 ms per token": [rf"[Ww]ithin 50 ms per token{_S}*?(\$?{_N}) per million",
                                                    rf"With prefill: cost (\${_N}) per million",
                                                    rf"Per million output tokens: batch 1 / at the target \${_N} / (\${_N})"],
    "GPU-Util over the incident's run": [rf"GPU-Util \(reported(?:, run)?\) ({_N}%)", rf"GPU-Util ({_N}%) over the run"],
    "speculation example speed-up (a = 0.7, k = 4)": [rf"\ba\W{{0,4}}= 0\.7\W{{0,8}}k\W{{0,4}}= 4\W{_S}{{0,60}}?\b({_N})x\b"],
}
#: Pages the incident's GPU-Util label is read on (others quote GPU-Util of other runs under the same words).
SCOPE = {"GPU-Util over the incident's run": ("lesson/19-incident-p99-ttft/", "lesson/21-cheat-sheet/")}


def article_text(page_html: str) -> str:
    """The article of a built page as plain text (tags stripped, entities decoded, spaces collapsed).

    >>> article_text('<article><p>KV cache of the replica</p><td>399,169&nbsp;tokens</td></article>')
    'KV cache of the replica 399,169 tokens'
    """
    m = re.search(r"<article\b.*?</article>", page_html, re.S)
    text = re.sub(r"<[^>]+>", " ", m.group(0) if m else "")
    return re.sub(r"\s+", " ", html.unescape(text)).strip()


def labelled_quantities(pages: dict[str, str]) -> dict[str, dict[str, set[str]]]:
    """label -> value -> the pages that show it, from ``{page: article text}``.

    >>> found = labelled_quantities({"a/": "Scale-up delay: 30 s + 35.3 GB / 2 GB/s = 47.6 s.",
    ...                              "b/": "the scale-up delay = 60 s + 141 GB / 2 GB/s = 131 s."})
    >>> sorted(found["scale-up delay of step 15"].items())
    [('131 s', {'b/'}), ('47.6 s', {'a/'})]
    """
    found: dict[str, dict[str, set[str]]] = {}
    for label, patterns in LABELLED.items():
        for page, text in pages.items():
            if label in SCOPE and not page.startswith(SCOPE[label]):
                continue
            for pattern in patterns:
                for m in re.finditer(pattern, text):
                    value = m.group(1).lstrip("$")
                    found.setdefault(label, {}).setdefault(value, set()).add(page)
    return found


def contradictions(pages: dict[str, str]) -> list[str]:
    """Every labelled quantity given two values on two pages, or its alternatives outside their home.

    >>> contradictions({"x/": "fp8 weights: 17.6 GB per GPU", "y/": "Weights per GPU, fp8 18.2 GB"})
    ["fp8 weights per GPU: '17.6 GB' on x/; '18.2 GB' on y/"]
    """
    problems = []
    for label, values in sorted(labelled_quantities(pages).items()):
        home = ALTERNATIVES_HOME.get(label)
        if home:  # the one value everywhere; the alternatives only on their home page
            canonical = f"{lesson.KV_CAPACITY_TOKENS:,}"
            stray = {v: p - {home} for v, p in values.items() if v != canonical and p - {home}}
            if stray:
                problems.append(f"{label}: {canonical} is the one value; also "
                                + "; ".join(f"{v!r} on {', '.join(sorted(p))}" for v, p in sorted(stray.items())))
            continue
        if len(values) > 1:
            problems.append(f"{label}: " + "; ".join(f"{v!r} on {', '.join(sorted(p))}" for v, p in sorted(values.items())))
    return problems


def built_pages(site: pathlib.Path = SITE) -> dict[str, str]:
    pages = {}
    for path in sorted(site.rglob("index.html")):
        rel = path.parent.relative_to(site).as_posix()
        pages[(rel + "/") if rel != "." else ""] = article_text(path.read_text(encoding="utf-8"))
    return pages


@pytest.fixture(scope="module")
def pages():
    if not (SITE / "lesson" / "21-cheat-sheet" / "index.html").exists():
        pytest.skip("build the site first (mkdocs build --site-dir site)")
    return built_pages()


def test_every_labelled_quantity_has_one_value(pages):
    assert not contradictions(pages), "\n".join(contradictions(pages))


def test_the_finder_sees_the_quantities_on_the_summary_pages(pages):
    """The cheat sheet and the steps it summarises are read, not skipped: each label is found on two pages or more."""
    found = labelled_quantities(pages)
    for label in LABELLED:
        seen = set().union(*found.get(label, {}).values()) if found.get(label) else set()
        assert len(seen) >= 2, (label, seen)
    assert "lesson/21-cheat-sheet/" in set().union(*found["scale-up delay of step 15"].values())
    capacity = found["running example's KV capacity"]
    assert set(capacity) - {f"{lesson.KV_CAPACITY_TOKENS:,}"} <= {
        f"{n:,}" for n in (lesson.KV_CAPACITY_TOKENS_LESSON_GB_BLOCKS, lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS,
                           lesson.KV_CAPACITY_TOKENS_EXACT_PARAMETERS_BLOCKS)}


PLAYGROUND = "lesson/22-playground/"


def test_the_playground_quotes_the_lessons_capacity(pages):
    """Step 22 (its memory view, its quiz, its simulation's prose) shows the one capacity and the requests it fits."""
    found = labelled_quantities({PLAYGROUND: pages[PLAYGROUND]})
    assert found["running example's KV capacity"] == {f"{lesson.KV_CAPACITY_TOKENS:,}": {PLAYGROUND}}
    assert found["requests of 1,280 tokens at once (bf16)"] == {f"{lesson.kv_batch_limit():,}": {PLAYGROUND}}


@pytest.mark.parametrize("page, old, new", [
    ("lesson/21-cheat-sheet/", "47.6 s", "131 s"),                # the scale-up delay the issue found
    ("lesson/13-long-context/", "399,169 tokens", "399,440 tokens"),  # an alternative capacity off step 1
    ("lesson/07-fp8-weights/", "18.2 GB", "17.6 GB"),              # fp8 weights counted another way
    (PLAYGROUND, "399,169 tokens", "399,440 tokens"),              # the simulator's exact count on step 22
])
def test_a_contradiction_is_caught(pages, tmp_path, page, old, new):
    """A deliberate break in a temporary copy of one built page makes the test fail."""
    source = SITE / page / "index.html"
    copy = tmp_path / "site"
    shutil.copytree(SITE / "lesson", copy / "lesson")
    broken = copy / page / "index.html"
    text = source.read_text(encoding="utf-8")
    assert old in text
    broken.write_text(text.replace(old, new, 1), encoding="utf-8")
    problems = contradictions(built_pages(copy))
    assert problems and any(new.split()[0] in p for p in problems), problems
