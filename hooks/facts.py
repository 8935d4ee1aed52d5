"""Numbers in a page's prose, filled in from ``calc`` at build.

A page writes ``{{ kv_bytes_per_token_8b }}`` and the build replaces it with the
text that the page's module (``calc.widgets.<page slug>``) returns from its
``facts()`` function; ``{{ other_page:name }}`` takes a fact of another page's
module. An unknown name fails the build, so no page can show a stale figure. The facts come from the build
cache (:mod:`prefetch` computes them, :func:`compute_facts` is how).
"""

from __future__ import annotations

import importlib
import os
import re

FACT = re.compile(r"\{\{\s*(?:([a-z0-9_]+):)?([a-z0-9_]+)\s*\}\}")


def page_module(src_path: str, meta: dict) -> str:
    """The widget module a page belongs to: front matter ``calc_module``, else its file name.

    >>> page_module("lesson/02-kv-cache-arithmetic.md", {})
    'kv_cache_arithmetic'
    """
    if meta.get("calc_module"):
        return meta["calc_module"]
    stem = src_path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    return re.sub(r"^\d+-", "", stem).replace("-", "_")


def page_modules(docs_dir: str) -> set[str]:
    """The module of every Markdown page under ``docs_dir`` (whether the module exists yet or not).

    >>> {"kv_cache_arithmetic", "glossary"} <= page_modules(os.path.join(os.path.dirname(__file__), "..", "docs"))
    True
    """
    from mkdocs.utils.meta import get_data

    modules = set()
    for folder, dirs, names in os.walk(docs_dir):
        dirs.sort()
        for name in sorted(n for n in names if n.endswith(".md")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8-sig") as handle:
                _, meta = get_data(handle.read())
            modules.add(page_module(os.path.relpath(path, docs_dir), meta))
    return modules


def compute_facts(module_name: str) -> dict[str, str]:
    """The facts of page module ``module_name`` as text ({} for a page without a module or without facts).

    >>> compute_facts("no_such_page_module")
    {}
    """
    try:
        module = importlib.import_module(f"calc.widgets.{module_name}")
    except ModuleNotFoundError:
        return {}
    return {k: str(v) for k, v in module.facts().items()} if hasattr(module, "facts") else {}


def fill(markdown: str, module_name: str, where: str, facts_of) -> str:
    """Replace every ``{{ name }}`` with its fact (``facts_of(module)`` gives a module's facts); raise naming the
    page and the fact when one is unknown."""

    def replace(match: re.Match) -> str:
        source = match.group(1) or module_name
        name = match.group(2)
        values = facts_of(source)
        if name not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(f"{where}: no fact {name!r} in calc.widgets.{source}.facts() (known: {known})")
        return values[name]

    return FACT.sub(replace, markdown)
