"""The table of block kinds: what ``/// <kind> | module.function`` in a page becomes, and how it is made.

Everything else follows from a row: the page scan's pattern and the Markdown blocks registered
(:mod:`scan`), the compute dispatch (:mod:`entries`), the entry's key (the row's sources are the hook code
that makes it: :mod:`build_cache`), the scheduling's first guess of its cost (:mod:`prefetch`). A new kind is
one row here and its renderer, a function ``(name, options) -> HTML text`` in a hook file (CONTRIBUTING.md,
"Add a block kind").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

import blocks
import replica


@dataclass(frozen=True)
class BlockKind:
    block: type  # the block class that reads the request from the page and places the value (blocks.py)
    render: str  # "module.function" under hooks/: (name, options) -> the block's HTML, which the cache keeps
    sources: tuple[str, ...]  # the hook files whose code makes the value: part of every entry's key
    seconds: float  # its cost before one is measured (the first build starts the slowest first)

    def renderer(self):
        module, _, function = self.render.rpartition(".")
        return getattr(importlib.import_module(module), function)


BLOCK_KINDS = {
    "widget": BlockKind(blocks.WidgetBlock, "widget_html.widget", ("blocks.py", "widget_html.py"), 0.3),
    "drill": BlockKind(blocks.DrillBlock, "widget_html.drill", ("blocks.py", "widget_html.py"), 0.2),
    "simulation": BlockKind(blocks.WidgetBlock, "widget_html.simulation", ("blocks.py", "widget_html.py"), 2.0),
    "figure": BlockKind(blocks.FigureBlock, "figures.figure", ("blocks.py", "figures.py"), 0.2),
    "replica-change": BlockKind(replica.ReplicaChangeBlock, "replica.change", ("blocks.py", "replica.py"), 3.0),
}


def page_module_of(kind: str, request) -> str | None:
    """The page module an entry belongs to (its digest is part of the key): a block's function's module, the
    facts' module; None for a notebook and a page scan.

    >>> page_module_of("widget", {"name": "kv_cache_arithmetic.kv_per_token", "options": {}})
    'kv_cache_arithmetic'
    >>> page_module_of("facts", {"module": "accuracy", "names": ["mape"]}), page_module_of("scan", {"text_sha256": "0"})
    ('accuracy', None)
    """
    if kind in BLOCK_KINDS:
        return request["name"].strip().rpartition(".")[0] or None
    return request["module"] if kind == "facts" else None
