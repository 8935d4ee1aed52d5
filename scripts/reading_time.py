"""Reading time of the 22 lesson steps, measured on the BUILT site (facts filled in).

Rule (issue 32's honest count of what a reader does):

* prose: every word of the page's article (paragraphs, lists, headings, admonitions, tables, figure captions,
  formulas' source, and the title of each closed fold, which the reader sees) that is not inside a
  ``<details>`` fold, at 200 words a minute;
* 1.5 minutes per unfolded calculator (``data-kind="widget"``), 2.5 per unfolded simulation
  (``data-kind="simulation"``: pressing Play and watching it run), 1.5 per unfolded drill
  (``data-kind="drill"``: working an answer out); the words inside a block are its own and not counted as prose;
* a fold a "Try this" tip points into is on the core path: its words, calculators, simulations and drills count
  as above. A tip points into a fold when it links into it (``href="#id"`` of the fold or of an element inside
  it), or when its text says to open it ("open the quiz below", "open Before and after below") or names it as
  a fold ("the FlashAttention fold"), the words that follow "open" (or precede "fold") matching the fold's title;
* every other fold is off the core path: its words and blocks are reported but not timed; so are a figure's
  drawing (``<svg>``; its caption counts), scripts and heading anchors.

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
MINUTES_PER_BLOCK = {"widget": 1.5, "simulation": 2.5, "drill": 1.5}  # a calculator, a simulation, a drill
LIMIT_MINUTES = 45.0
RULE = (f"prose outside <details> (fold titles included) at {WORDS_PER_MINUTE} words a minute, "
        f"{MINUTES_PER_BLOCK['widget']:g} min per calculator, {MINUTES_PER_BLOCK['simulation']:g} per simulation, "
        f"{MINUTES_PER_BLOCK['drill']:g} per drill, plus every fold a Try this points into (its words and blocks)")

_WORD = re.compile(r"\S*[0-9A-Za-z]\S*")
_VOID = {"area", "base", "br", "col", "embed", "hr", "img", "input", "link", "meta", "source", "track", "wbr"}
_SKIPPED = {"script", "style", "svg", "template", "noscript"}
_BLOCK_KINDS = ("widget", "simulation", "drill")
# Words that say nothing about which fold is meant ("open the quiz below"): a pointer needs one other word.
_FILLER = {"the", "a", "an", "and", "it", "its", "of", "to", "in", "on", "below", "above", "fold", "this", "that"}
_OPEN = re.compile(r"\bopen\s+([^.,;:!?()]+)", re.I)
_NAMED_FOLD = re.compile(r"([^.,;:!?()]+?)\s+fold\b", re.I)


def _words(text: str) -> list[str]:
    return re.findall(r"[0-9a-z][0-9a-z'_-]*", text.lower())


def _match_length(phrase: list[str], title: list[str]) -> int:
    """How many leading words of ``phrase`` (or, for a "... fold" phrase given reversed, trailing words) appear
    in a row in ``title``; 0 unless one of them is more than a filler word.

    >>> _match_length(["before", "and", "after", "below"], ["before", "and", "after"])
    3
    >>> _match_length(["the", "quiz", "below"], ["quiz", "the", "team", "raises"])
    0
    >>> _match_length(["quiz", "below"], ["quiz", "the", "team", "raises"])
    1
    """
    best = 0
    for length in range(1, len(phrase) + 1):
        run = phrase[:length]
        found = any(title[i:i + length] == run for i in range(len(title) - length + 1))
        if not found:
            break
        best = length
    return best if any(word not in _FILLER for word in phrase[:best]) else 0


def pointed_folds(tip_text: str, tip_links: list[str], folds: list[dict], folds_before_tip: int) -> list[int]:
    """The indices in ``folds`` (each ``{"title", "ids"}``) of the folds a Try this tip points into.

    A link to an id in a fold points into it; so does "open <title words>" or "<title words> fold" in the tip's
    text, matched against each fold's title (the fold with the longest match; on a tie the first below the tip).

    >>> folds = [{"title": "Quiz: how many blocks?", "ids": set()},
    ...          {"title": "Before and after", "ids": {"before-and-after"}},
    ...          {"title": "FlashAttention: what it changes", "ids": set()},
    ...          {"title": "More to try", "ids": set()}]
    >>> pointed_folds("Then open the quiz below and predict.", [], folds, 0)
    [0]
    >>> pointed_folds("Then open Before and after below.", [], folds, 0)
    [1]
    >>> pointed_folds("Read the FlashAttention fold to see why.", [], folds, 0)
    [2]
    >>> pointed_folds("Press Play and watch the queue.", ["#before-and-after"], folds, 0)
    [1]
    >>> pointed_folds("Press Play, then open the settings menu.", [], folds, 0)
    []
    """
    chosen: list[int] = []
    for link in tip_links:
        if link.startswith("#"):
            chosen += [i for i, fold in enumerate(folds) if link[1:] in fold["ids"] and i not in chosen]
    phrases = [_words(m.group(1)) for m in _OPEN.finditer(tip_text)]
    phrases = [p[1:] if p and p[0] in ("the", "its") else p for p in phrases]
    named = [list(reversed(_words(m.group(1))))[:5] for m in _NAMED_FOLD.finditer(tip_text)]
    candidates = [(phrase, False) for phrase in phrases] + [(phrase, True) for phrase in named]
    for phrase, reverse in candidates:
        best, best_index = 0, None
        order = list(range(folds_before_tip, len(folds))) + list(range(folds_before_tip))  # below the tip first
        for index in order:
            title = _words(folds[index]["title"])
            length = _match_length(phrase, list(reversed(title)) if reverse else title)
            if length > best:
                best, best_index = length, index
        if best_index is not None and best_index not in chosen:
            chosen.append(best_index)
    return sorted(chosen)


class _ArticleCounter(HTMLParser):
    """Walks one page's HTML and counts inside ``<article>`` only."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.stack: list[dict] = []  # one frame per open element inside the article
        self.in_article = False
        self.core_words = 0
        self.title_words = 0  # of core_words: the titles of closed folds
        self.fold_words = 0
        self.counts = {"calculators": 0, "simulations": 0, "drills": 0, "fold_widgets": 0, "fold_drills": 0,
                       "folds": 0, "figures": 0}
        self.folds: list[dict] = []  # each top-level fold: title, ids, words and blocks inside
        self.tips: list[dict] = []  # each unfolded Try this: its text, links, and how many folds came before it
        self.first_block_at_word: int | None = None  # core words read before the first unfolded block
        self.first_block_kind: str | None = None
        self.has_takeaway = False
        self._first_paragraph_text = ""
        self.first_sentences = ""
        self.deep_dive_links: set[str] = set()

    def _inside(self, key: str) -> bool:
        return any(frame.get(key) for frame in self.stack)

    def _current(self, key: str):
        for frame in reversed(self.stack):
            if key in frame:
                return frame[key]
        return None

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
        in_block = self._inside("block")
        fold = self._current("fold_record")
        if tag == "details":
            frame["fold"] = True
            if not folded and not in_block:
                self.counts["folds"] += 1
                fold = {"title": "", "ids": set(), "words": 0, "widget": 0, "simulation": 0, "drill": 0}
                self.folds.append(fold)
                frame["fold_record"] = fold
        if fold is not None and attributes.get("id"):
            fold["ids"].add(attributes["id"])
        if tag == "summary" and frame.get("fold_record") is None and self.stack and self.stack[-1].get("fold_record"):
            frame["title_of"] = self.stack[-1]["fold_record"]  # a closed fold's title: read, so prose
        kind = attributes.get("data-kind")
        if kind in _BLOCK_KINDS and not in_block:
            frame["block"] = True
            if folded:
                self.counts["fold_drills" if kind == "drill" else "fold_widgets"] += 1
                if fold is not None:
                    fold[kind] += 1
            else:
                self.counts["drills" if kind == "drill" else kind + "s" if kind == "simulation" else "calculators"] += 1
                if self.first_block_at_word is None:
                    self.first_block_at_word = self.core_words
                    self.first_block_kind = kind
        if tag in _SKIPPED or "headerlink" in classes:
            frame["skip"] = True
        if tag == "figure" and "calc-figure" in classes and not folded:  # explanatory pictures, not charts
            self.counts["figures"] += 1
        if "admonition" in classes and "tip" in classes and not folded and not in_block:
            frame["tip"] = {"text": "", "links": [], "folds_before": len(self.folds)}
            self.tips.append(frame["tip"])
        tip = self._current("tip")
        if tag == "a" and tip is not None and attributes.get("href"):
            tip["links"].append(attributes["href"])
        if tag == "p" and not self.first_sentences and not self._first_paragraph_text and not folded \
                and not in_block and not self._inside("skip"):
            frame["first_paragraph"] = True
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
                self.first_sentences = " ".join(self._first_paragraph_text.split())
            if frame["tag"] == tag:
                break
        if not self.stack:
            self.in_article = False

    def handle_data(self, data):
        if not self.in_article or self._inside("skip") or self._inside("block"):
            return
        words = len(_WORD.findall(data))
        title_of = self._current("title_of")
        if title_of is not None:  # a top-level fold's title
            title_of["title"] += " " + data
            self.core_words += words
            self.title_words += words
            return
        if self._inside("fold"):
            self.fold_words += words
            fold = self._current("fold_record")
            if fold is not None:
                fold["words"] += words
            return
        self.core_words += words
        if self._inside("first_paragraph"):
            self._first_paragraph_text += data
        tip = self._current("tip")
        if tip is not None:
            tip["text"] += " " + data  # a space between elements: "Try this" + "Open ..."
        if data.strip().lower() == "takeaway":
            self.has_takeaway = True

    def try_these(self) -> list[dict]:
        return [tip for tip in self.tips if "try this" in tip["text"].lower()]


def measure_page(html: str) -> dict:
    """The counts and minutes of one built page.

    >>> page = ('<article class="md-content__inner md-typeset"><h1>Step</h1><p>One idea. Two.</p>'
    ...         '<div data-kind="widget"><p>not prose</p></div>'
    ...         '<div class="admonition tip"><p class="admonition-title">Try this</p><p>Open the quiz below.</p></div>'
    ...         '<details class="question"><summary>Quiz: why?</summary><p>folded words here</p></details>'
    ...         '<details><summary>More</summary><p>not read</p><div data-kind="simulation"></div></details>'
    ...         '<h2>Takeaway</h2></article>')
    >>> m = measure_page(page)
    >>> m["core_words"], m["fold_words"], m["widgets"], m["fold_widgets"], m["pointed_folds"], m["pointed_words"]
    (14, 5, 1, 1, ['Quiz: why?'], 3)
    >>> m["minutes"], m["has_try_this"], m["has_takeaway"]  # (14 + 3) / 200 + 1.5
    (1.585, True, True)
    """
    counter = _ArticleCounter()
    counter.feed(html)
    counter.close()
    tips = counter.try_these()
    pointed: list[int] = []
    for tip in tips:
        pointed += [i for i in pointed_folds(tip["text"], tip["links"], counter.folds, tip["folds_before"])
                    if i not in pointed]
    pointed_records = [counter.folds[i] for i in sorted(pointed)]
    blocks = {kind: sum(fold[kind] for fold in pointed_records) for kind in _BLOCK_KINDS}
    pointed_words = sum(fold["words"] for fold in pointed_records)
    unfolded = {"widget": counter.counts["calculators"], "simulation": counter.counts["simulations"],
                "drill": counter.counts["drills"]}
    minutes = (counter.core_words + pointed_words) / WORDS_PER_MINUTE + sum(
        MINUTES_PER_BLOCK[kind] * (unfolded[kind] + blocks[kind]) for kind in _BLOCK_KINDS)
    return {
        "core_words": counter.core_words,
        "fold_title_words": counter.title_words,
        "fold_words": counter.fold_words,
        **counter.counts,
        "widgets": counter.counts["calculators"] + counter.counts["simulations"],  # unfolded, either kind
        "pointed_folds": [" ".join(fold["title"].split()) for fold in pointed_records],
        "pointed_words": pointed_words,
        "pointed_calculators": blocks["widget"],
        "pointed_simulations": blocks["simulation"],
        "pointed_drills": blocks["drill"],
        "minutes": round(minutes, 3),
        "first_block_at_word": counter.first_block_at_word,
        "first_block_kind": counter.first_block_kind,
        "has_try_this": bool(tips),
        "try_this": [" ".join(tip["text"].split()) for tip in tips],
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
        "total_fold_title_words": sum(step["fold_title_words"] for step in steps),
        "total_pointed_words": sum(step["pointed_words"] for step in steps),
        "total_fold_words": sum(step["fold_words"] for step in steps),
        "mean_core_words": round(sum(step["core_words"] for step in steps) / max(len(steps), 1)),
        "steps": steps,
    }


def print_table(result: dict) -> None:
    print(f"Reading time of the lesson's core path. Rule: {result['rule']}.")
    header = (f"{'step':<30} {'prose w':>7} {'+ try w':>7} {'calc':>4} {'sim':>3} {'drill':>5} {'+ try blocks':>12} "
              f"{'fold w':>6} {'minutes':>7}")
    print(header)
    print("-" * len(header))
    for step in result["steps"]:
        pointed = f"{step['pointed_calculators']}/{step['pointed_simulations']}/{step['pointed_drills']}"
        print(f"{step['slug'][:30]:<30} {step['core_words']:>7} {step['pointed_words']:>7} {step['calculators']:>4} "
              f"{step['simulations']:>3} {step['drills']:>5} {pointed:>12} {step['fold_words']:>6} "
              f"{step['minutes']:>7.1f}")
    print("-" * len(header))
    print(f"{'total (' + str(len(result['steps'])) + ' steps)':<30} {result['total_core_words']:>7} "
          f"{result['total_pointed_words']:>7} {'':>4} {'':>3} {'':>5} {'':>12} {result['total_fold_words']:>6} "
          f"{result['total_minutes']:>7.1f}")
    print("(+ try: the words and calculator/simulation/drill blocks of the folds a Try this points into)")
    for step in result["steps"]:
        if step["pointed_folds"]:
            print(f"  step {step['step']:>2}'s Try this opens: " + "; ".join(step["pointed_folds"])[:110])
    blocks = sum(MINUTES_PER_BLOCK[kind] * step[key] for step in result["steps"]
                 for kind, key in (("widget", "calculators"), ("simulation", "simulations"), ("drill", "drills")))
    print(f"Core path: {result['total_minutes']:.1f} min (limit {result['limit_minutes']:g} min): {blocks:g} min of "
          f"unfolded blocks, {result['total_core_words'] / WORDS_PER_MINUTE:.1f} of prose (of which fold titles "
          f"{result['total_fold_title_words'] / WORDS_PER_MINUTE:.1f}), the rest in the folds Try this opens; "
          f"{result['mean_core_words']} prose words a step on average.")


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
