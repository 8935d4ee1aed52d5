"""Numbers in a page's prose, filled in from ``calc`` at build.

A page writes ``{{ kv_bytes_per_token_8b }}`` and the build replaces it with the
text of that fact of the page's module (``calc.widgets.<page slug>``, a function registered with
:func:`calc.widgets.framework.fact`); ``{{ other_page:name }}`` takes a fact of another page's
module. An unknown name fails the build, so no page can show a stale figure. A page asks each module only for
the facts it names (:func:`requests`), and only those are computed. The facts come from the build cache
(:mod:`prefetch` computes them, :func:`compute_facts` is how).
"""

from __future__ import annotations

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


def requests(markdown: str, module_name: str) -> list[dict]:
    """The facts a page's text names, as one request per page module: ``{"module": ..., "names": [...]}``
    (``module_name`` is the page's own module). The scan and the page's fill ask the same requests.

    >>> requests("{{ kv_tokens }} and {{ a_70b_assistant:tp }}, {{ kv_tokens }}", "long_context")
    [{'module': 'a_70b_assistant', 'names': ['tp']}, {'module': 'long_context', 'names': ['kv_tokens']}]
    """
    names: dict[str, set[str]] = {}
    for match in FACT.finditer(markdown):
        names.setdefault(match.group(1) or module_name, set()).add(match.group(2))
    return [{"module": module, "names": sorted(names[module])} for module in sorted(names)]


def compute_facts(request: dict) -> dict[str, str]:
    """The facts a request names, as text; a name the module lacks is left out ({} for a page without a module).

    >>> compute_facts({"module": "no_such_page_module", "names": ["x"]})
    {}
    """
    from calc.widgets.framework import fact_values

    return fact_values(request["module"], request["names"])


def fill(markdown: str, module_name: str, where: str, facts_of) -> str:
    """Replace every ``{{ name }}`` with its fact (``facts_of(request)`` gives the facts of one of
    :func:`requests`); raise naming the page and the fact when one is unknown."""
    from calc.widgets.framework import fact_names

    values = {request["module"]: facts_of(request) for request in requests(markdown, module_name)}

    def replace(match: re.Match) -> str:
        source = match.group(1) or module_name
        name = match.group(2)
        if name not in values[source]:
            known = ", ".join(sorted(fact_names(source))) or "none"
            raise ValueError(f"{where}: no fact {name!r} in calc.widgets.{source} (known: {known})")
        return values[source][name]

    return FACT.sub(replace, markdown)
