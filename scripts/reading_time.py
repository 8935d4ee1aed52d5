"""Reading time of the 22 lesson steps, measured on the BUILT site (facts filled in).

Rule (the same one an outside estimator applies):

* prose: every word of the page's article (paragraphs, lists, headings, admonitions, tables, figure captions,
  formulas' source) that is not inside a ``<details>`` fold, at 200 words a minute;
* a minute per unfolded widget or simulation (an element with ``data-kind="widget"`` or ``"simulation"`` that is
  not inside a ``<details>``); the words inside it are its own and are not counted as prose;
* half a minute per unfolded drill (``data-kind="drill"``);
* folds (``<details>``, closed by default) are off the core path: their words, widgets and drills are reported
  but not timed; so are a figure's drawing (``<svg>``; its caption counts), scripts and heading anchors.

Usage::

    python scripts/reading_time.py [--site site] [--out bench-results/reading-time.json] [--check]

It prints a table, writes the JSON, and with ``--check`` exits 1 when the core path of the 22 steps is over
45 minutes (the source lesson promises about 35).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
from html.parser import HTMLParser

WORDS_PER_MINUTE = 200
MINUTES_PER_WIDGET = 1.0  # a widget or a simulation, unfolded
MINUTES_PER_DRILL = 0.5
LIMIT_MINUTES = 45.0
RULE = (f"prose and table words outside <details> at {WORDS_PER_MINUTE} words a minute, "
        f"{MINUTES_PER_WIDGET:g} minute per unfolded widget or simulation, "
        f"{MINUTES_PER_DRILL:g} minute per unfolded drill; folds are not timed")

_WORD = re.compile(r"\S*[0-9A-Za-z]\S*")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SKIPPED = {"script", "style", "svg", "template", "noscript"}


class _ArticleCounter(HTMLParser):
    """Walks one page's HTML and counts inside ``<article>`` only."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[dict] = []  # one frame per open element inside the article
        self.in_article = False
        self.core_words = 0
        self.fold_words = 0
        self.counts = {"widgets": 0, "drills": 0, "fold_widgets": 0, "fold_drills": 0, "folds": 0, "figures": 0}
        self.first_block_at_word: int | None = None  # core words read before the first unfolded block
        self.first_block_kind: str | None = None
        self.has_try_this = False
        self.has_takeaway = False
        self.first_sentences = ""
        self._first_paragraph_open = False
        self.deep_dive_links: set[str] = set()

    def _inside(self, key: str) -> bool:
        return any(frame.get(key) for frame in self.stack)

    def handle_starttag(self, tag, attrs):
        attributes = dict(attrs)
        if not self.in_article:
            if tag == "article" and "md-content__inner" in (attributes.get("class") or ""):
                self.in_article = True
                self.stack = [{"tag": "article"}]
            return
        classes = (attributes.get("class") or "").split()
        frame = {"tag": tag}
        folded = self._inside("fold")
        if tag == "details":
            frame["fold"] = True
            if not folded:
                self.counts["folds"] += 1
        kind = attributes.get("data-kind")
        if kind in ("widget", "simulation", "drill") and not self._inside("block"):
            frame["block"] = True
            key = ("fold_" if folded or tag == "details" else "") + ("drills" if kind == "drill" else "widgets")
            self.counts[key] += 1
            if not folded and self.first_block_at_word is None:
                self.first_block_at_word = self.core_words
                self.first_block_kind = kind
        if tag in _SKIPPED or "headerlink" in classes:
            frame["skip"] = True
        if tag == "figure" and "calc-figure" in classes and not folded:  # explanatory pictures, not charts
            self.counts["figures"] += 1
        if "admonition" in classes and "tip" in classes and not folded:
            frame["tip"] = True
        if tag == "p" and not self.first_sentences and not folded and not self._inside("block") \
                and not self._inside("skip"):
            frame["first_paragraph"] = True
            self._first_paragraph_open = True
        if tag == "a" and not folded and "deep-dives/" in (attributes.get("href") or ""):
            self.deep_dive_links.add(attributes["href"])
        if tag in _VOID:
            return
        self.stack.append(frame)

    def handle_startendtag(self, tag, attrs):
        self.handle_starttag(tag, attrs)
        if self.in_article and tag not in _VOID and self.stack and self.stack[-1]["tag"] == tag:
            self.stack.pop()

    def handle_endtag(self, tag):
        if not self.in_article or tag in _VOID:
            return
        while self.stack:
            frame = self.stack.pop()
            if frame.get("first_paragraph"):
                self._first_paragraph_open = False
            if frame["tag"] == tag:
                break
        if not self.stack:
            self.in_article = False

    def handle_data(self, data):
        if not self.in_article or self._inside("skip") or self._inside("block"):
            return
        words = len(_WORD.findall(data))
        if self._inside("fold"):
            self.fold_words += words
            return
        self.core_words += words
        if self._first_paragraph_open:
            self._first_paragraph_text = getattr(self, "_first_paragraph_text", "") + data
        if self._inside("tip") and "try this" in data.lower():
            self.has_try_this = True
        if data.strip().lower() == "takeaway":
            self.has_takeaway = True

    def close(self):
        super().close()
        self.first_sentences = " ".join(getattr(self, "_first_paragraph_text", "").split())


def measure_page(html: str) -> dict:
    """The counts and minutes of one built page.

    >>> page = ('<article class="md-content__inner md-typeset"><h1>Step</h1><p>One idea. Two.</p>'
    ...         '<div data-kind="widget"><p>not prose</p></div><details><p>folded words here</p></details>'
    ...         '<div class="admonition tip"><p class="admonition-title">Try this</p></div><h2>Takeaway</h2></article>')
    >>> m = measure_page(page)
    >>> m["core_words"], m["fold_words"], m["widgets"], m["minutes"], m["has_try_this"], m["has_takeaway"]
    (7, 3, 1, 1.035, True, True)
    """
    counter = _ArticleCounter()
    counter.feed(html)
    counter.close()
    minutes = (counter.core_words / WORDS_PER_MINUTE + MINUTES_PER_WIDGET * counter.counts["widgets"]
               + MINUTES_PER_DRILL * counter.counts["drills"])
    return {
        "core_words": counter.core_words,
        "fold_words": counter.fold_words,
        **counter.counts,
        "minutes": round(minutes, 3),
        "first_block_at_word": counter.first_block_at_word,
        "first_block_kind": counter.first_block_kind,
        "has_try_this": counter.has_try_this,
        "has_takeaway": counter.has_takeaway,
        "first_paragraph": counter.first_sentences,
        "deep_dive_links": sorted(counter.deep_dive_links),
    }


def step_pages(site_dir: str) -> list[tuple[str, str]]:
    """(slug, path of index.html) of every built lesson step, in step order."""
    lesson_dir = os.path.join(site_dir, "lesson")
    if not os.path.isdir(lesson_dir):
        raise SystemExit(f"no built lesson under {lesson_dir}: build the site first (mkdocs build)")
    slugs = sorted(name for name in os.listdir(lesson_dir) if re.match(r"\d\d-", name))
    return [(slug, os.path.join(lesson_dir, slug, "index.html")) for slug in slugs]


def report(site_dir: str) -> dict:
    steps = []
    for slug, path in step_pages(site_dir):
        with open(path, encoding="utf-8") as handle:
            steps.append({"step": int(slug[:2]), "slug": slug, **measure_page(handle.read())})
    total = round(sum(step["minutes"] for step in steps), 1)
    return {
        "rule": RULE,
        "limit_minutes": LIMIT_MINUTES,
        "total_minutes": total,
        "total_core_words": sum(step["core_words"] for step in steps),
        "total_fold_words": sum(step["fold_words"] for step in steps),
        "mean_core_words": round(sum(step["core_words"] for step in steps) / max(len(steps), 1)),
        "steps": steps,
    }


def print_table(result: dict) -> None:
    print(f"Reading time of the lesson's core path. Rule: {result['rule']}.")
    header = f"{'step':<34} {'core words':>10} {'fold words':>10} {'widgets':>8} {'drills':>7} " \
             f"{'folded w/d':>10} {'figures':>7} {'minutes':>8}"
    print(header)
    print("-" * len(header))
    for step in result["steps"]:
        print(f"{step['slug'][:34]:<34} {step['core_words']:>10} {step['fold_words']:>10} {step['widgets']:>8} "
              f"{step['drills']:>7} {str(step['fold_widgets']) + '/' + str(step['fold_drills']):>10} "
              f"{step['figures']:>7} {step['minutes']:>8.1f}")
    print("-" * len(header))
    print(f"{'total (' + str(len(result['steps'])) + ' steps)':<34} {result['total_core_words']:>10} "
          f"{result['total_fold_words']:>10} {'':>8} {'':>7} {'':>10} {'':>7} {result['total_minutes']:>8.1f}")
    print(f"Core path: {result['total_minutes']:.1f} min (limit {result['limit_minutes']:g} min); "
          f"{result['mean_core_words']} core words a step on average.")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", default="site", help="the built site's directory (default: site)")
    parser.add_argument("--out", default="bench-results/reading-time.json", help="where to write the JSON")
    parser.add_argument("--check", action="store_true", help=f"exit 1 over {LIMIT_MINUTES:g} minutes")
    args = parser.parse_args(argv)
    result = report(args.site)
    print_table(result)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w", encoding="utf-8") as handle:
            json.dump(result, handle, indent=1)
            handle.write("\n")
    if args.check and result["total_minutes"] > LIMIT_MINUTES:
        print(f"FAIL: the core path takes {result['total_minutes']:.1f} min, over {LIMIT_MINUTES:g}",
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
