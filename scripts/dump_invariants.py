"""Dump what a refactor must not change, to diff before and after.

What is dumped (one JSON document, keys sorted):

* ``facts``: every page module's ``facts()`` (the numbers the prose quotes);
* ``widgets``: every registered widget and drill called at its defaults, and every stream collected
  at its defaults (the views the build pre-renders);
* ``presets``: every lesson preset's result (``python -m calc simulate --preset NAME --json``);
* ``goldens``: the golden scenarios' results (``tests/sim/golden``);
* ``pages``: the article of every built page in ``--site`` (if given), with content hashes in asset names
  replaced by ``#`` (the calc zip's name changes with any edit to calc's sources), and so are the notebook
  cells' ids (random at each build); a notebook page is kept as its text (its outputs split into
  chunks by timing).

Use::

    python scripts/dump_invariants.py --site site --out build/invariants-before.json
    # ... refactor, rebuild ...
    python scripts/dump_invariants.py --site site --out build/invariants-after.json
    python scripts/dump_invariants.py --diff build/invariants-before.json build/invariants-after.json
"""

from __future__ import annotations

import argparse
import importlib
import json
import os
import pkgutil
import re
import sys

PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, PROJECT_DIR)

ARTICLE = re.compile(r"<article[^>]*>(.*?)</article>", re.S)
HASHED_NAME = re.compile(r"([A-Za-z0-9_-]+)[.-][0-9a-f]{8,64}(\.[a-z]+)")
TAG = re.compile(r"<[^>]+>")
NOTEBOOK_CELL_ID = re.compile(r'id="cell-id=[0-9a-f-]+"')  # jupytext gives cells random ids at each build


def dump_facts() -> dict:
    import calc.widgets as widgets

    facts = {}
    for info in sorted(pkgutil.iter_modules(widgets.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"calc.widgets.{info.name}")
        if hasattr(module, "facts"):
            facts[info.name] = {k: str(v) for k, v in module.facts().items()}
    return facts


def dump_widgets() -> dict:
    import calc.widgets as widgets
    from calc.widgets import framework

    for info in pkgutil.iter_modules(widgets.__path__):
        importlib.import_module(f"calc.widgets.{info.name}")
    views = {}
    for name in sorted(framework.REGISTRY):
        entry = framework.REGISTRY[name]
        if name.startswith(("framework.", "diagnostics.")):
            continue
        if entry.kind == "stream":
            views[name] = framework.collect_stream(entry.function(**entry.defaults))
        else:
            views[name] = framework.call(name, {})
    return json.loads(json.dumps(views, sort_keys=True, default=str))


def dump_presets() -> dict:
    from calc.sim import presets

    return {name: json.loads(json.dumps(presets.run(name).to_dict(), sort_keys=True, default=str))
            for name in presets.names()}


def dump_goldens() -> dict:
    from tests.sim import goldens  # the golden scenarios and how they run

    return {name: goldens.run_case(name) for name in goldens.SCENARIOS}


def dump_pages(site_dir: str) -> dict:
    pages = {}
    for root, _dirs, files in os.walk(site_dir):
        for file in files:
            if not file.endswith(".html"):
                continue
            path = os.path.join(root, file)
            with open(path, encoding="utf-8") as handle:
                html = handle.read()
            match = ARTICLE.search(html)
            if match:
                article = NOTEBOOK_CELL_ID.sub('id="cell-id=#"', HASHED_NAME.sub(r"\1.#\2", match.group(1)))
                if "jp-Notebook" in article:  # a cell's printed output splits into chunks by timing: keep the text
                    article = " ".join(TAG.sub(" ", article).split())
                pages[os.path.relpath(path, site_dir)] = article
    return dict(sorted(pages.items()))


def diff(before_path: str, after_path: str) -> int:
    with open(before_path) as handle:
        before = json.load(handle)
    with open(after_path) as handle:
        after = json.load(handle)
    changed = 0
    for part in sorted(set(before) | set(after)):
        old, new = before.get(part, {}), after.get(part, {})
        for key in sorted(set(old) | set(new)):
            if old.get(key) != new.get(key):
                changed += 1
                print(f"{part}: {key}: {'missing before' if key not in old else 'missing after' if key not in new else 'differs'}")
    print(f"{changed} differences" if changed else "identical")
    return 1 if changed else 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--site", help="built site folder whose pages to dump")
    parser.add_argument("--out", help="write the dump here (default: standard output)")
    parser.add_argument("--skip", action="append", default=[], choices=["facts", "widgets", "presets", "goldens", "pages"])
    parser.add_argument("--diff", nargs=2, metavar=("BEFORE", "AFTER"), help="compare two dumps")
    args = parser.parse_args(argv)
    if args.diff:
        return diff(*args.diff)
    parts = {"facts": dump_facts, "widgets": dump_widgets, "presets": dump_presets, "goldens": dump_goldens}
    dump = {name: make() for name, make in parts.items() if name not in args.skip}
    if args.site and "pages" not in args.skip:
        dump["pages"] = dump_pages(args.site)
    text = json.dumps(dump, indent=1, sort_keys=True)
    if args.out:
        os.makedirs(os.path.dirname(os.path.abspath(args.out)), exist_ok=True)
        with open(args.out, "w") as handle:
            handle.write(text)
    else:
        print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
