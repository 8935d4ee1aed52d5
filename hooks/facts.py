"""Numbers in a page's prose, filled in from ``calc`` at build.

A page writes ``{{ kv_bytes_per_token_8b }}`` and the build replaces it with the
text that the page's module (``calc.widgets.<page slug>``) returns from its
``facts()`` function; ``{{ other_page:name }}`` takes a fact of another page's
module. An unknown name fails the build, so no page can show a stale figure.
"""

from __future__ import annotations

import importlib
import re

FACT = re.compile(r"\{\{\s*(?:([a-z0-9_]+):)?([a-z0-9_]+)\s*\}\}")
_cache: dict[str, dict[str, str]] = {}


def page_module(src_path: str, meta: dict) -> str:
    """The widget module a page belongs to: front matter ``calc_module``, else its file name.

    >>> page_module("lesson/02-kv-cache-arithmetic.md", {})
    'kv_cache_arithmetic'
    """
    if meta.get("calc_module"):
        return meta["calc_module"]
    stem = src_path.replace("\\", "/").rsplit("/", 1)[-1].removesuffix(".md")
    return re.sub(r"^\d+-", "", stem).replace("-", "_")


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


def facts_of(module_name: str) -> dict[str, str]:
    """The facts of a page module, through the build cache (:mod:`prefetch` may have computed them already)."""
    if module_name not in _cache:
        import prefetch

        _cache[module_name] = prefetch.facts(module_name)
    return _cache[module_name]


def fill(markdown: str, module_name: str, where: str) -> str:
    """Replace every ``{{ name }}`` with its fact; raise naming the page and the fact when one is unknown."""

    def replace(match: re.Match) -> str:
        source = match.group(1) or module_name
        name = match.group(2)
        values = facts_of(source)
        if name not in values:
            known = ", ".join(sorted(values)) or "none"
            raise ValueError(f"{where}: no fact {name!r} in calc.widgets.{source}.facts() (known: {known})")
        return values[name]

    return FACT.sub(replace, markdown)
