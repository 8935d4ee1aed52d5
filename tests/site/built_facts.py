"""A page module's facts as the build filled them in: read from the build cache while calc is unchanged.

`make test` builds the site first, and the build keeps each page module's facts in ``build/calc-cache``, keyed
on calc's sources (hooks/build_cache.py; tests/site/test_build_cache.py checks that an edit
invalidates them). A site test that compares the built pages with their facts reads them there instead of
computing them again (a page's request names the facts it quotes; a fact no page quotes is computed when read). Without a valid entry (no build cache, or calc changed
since the build) they are computed as the build computes them.

>>> dict(built_facts("no_such_page_module"))
{}
>>> built_facts("kv_cache_arithmetic")["conversation_8b"]
'524 MB'
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(ROOT, "hooks") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "hooks"))

import functools  # noqa: E402
from collections.abc import Mapping  # noqa: E402

import build_cache  # noqa: E402 (hooks/, on the path above)
import entries  # noqa: E402
import facts as facts_hook  # noqa: E402


@functools.lru_cache(maxsize=1)
def _digests() -> build_cache.Digests:
    return build_cache.project_digests()  # calc as it is now: an entry of another calc is another key


@functools.lru_cache(maxsize=1)
def _page_requests() -> list[dict]:
    """Every facts request the pages make (a page asks each module for the facts it names: hooks/facts.py)."""
    from mkdocs.utils.meta import get_data

    docs, found = os.path.join(ROOT, "docs"), []
    for folder, dirs, names in os.walk(docs):
        dirs.sort()
        for name in sorted(n for n in names if n.endswith(".md")):
            with open(os.path.join(folder, name), encoding="utf-8-sig") as handle:
                body, meta = get_data(handle.read())
            own = facts_hook.page_module(os.path.relpath(os.path.join(folder, name), docs), meta)
            found.extend(facts_hook.requests(body, own))
    return found


class BuiltFacts(Mapping):
    """A page module's facts by name: those the pages quote from the build cache, any other computed when read."""

    def __init__(self, module_name: str):
        from calc.widgets.framework import fact_names

        self.module = module_name
        self.names = fact_names(module_name)
        self.values: dict[str, str] = {}
        for request in _page_requests():
            if request["module"] == module_name:
                cached = build_cache.load("facts", entries.key("facts", request, _digests()))
                self.values.update(cached or {})

    def __getitem__(self, name: str) -> str:
        if name not in self.values:
            self.values.update(facts_hook.compute_facts({"module": self.module, "names": [name]}))
        return self.values[name]

    def __iter__(self):
        return iter(self.names)

    def __len__(self) -> int:
        return len(self.names)


def built_facts(module_name: str) -> BuiltFacts:
    """The facts of page module ``module_name`` as text, as the build put them in the pages."""
    return BuiltFacts(module_name)
