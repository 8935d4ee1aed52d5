"""The ``/// figure | module.function`` block: an explanatory picture from :mod:`calc.diagrams`, drawn at build.

In a page::

    /// figure | kv.block_table
    ///

renders ``calc.diagrams.kv.block_table()`` as a ``<figure>`` with an inline SVG (labelled by its ``<title>``
and ``<desc>``) and a ``<figcaption>``. Markdown inside the block is added to the caption. The SVG goes
through Markdown's HTML stash, so no inline processor (abbreviations, emphasis) touches its text. An unknown
picture fails the build.

A picture is a build-cache entry (kind ``figure``, :mod:`build_cache`): its SVG is drawn again only when a file
of ``calc`` it depends on changed (its ``calc.diagrams`` module and what that imports), and under ``make serve``
an edit to ``calc/diagrams/kv.py`` marks the pages that show one of its pictures for rebuilding. With
``collect`` (a list), the extension draws nothing and records each block's request (the prefetch's scan).
"""

from __future__ import annotations

import importlib
import xml.etree.ElementTree as etree

from pymdownx.blocks import BlocksExtension
from pymdownx.blocks.block import Block

import prefetch


def render_figure(name: str) -> str:
    """The HTML of picture ``module.function`` of :mod:`calc.diagrams`."""
    module_name, _, function_name = name.strip().rpartition(".")
    if not module_name or not function_name.isidentifier():
        raise ValueError(f"figure {name!r}: write module.function, e.g. kv.block_table")
    module = importlib.import_module(f"calc.diagrams.{module_name}")
    function = getattr(module, function_name, None)
    if function is None or function_name not in getattr(module, "__all__", ()):
        raise ValueError(f"figure {name!r}: calc.diagrams.{module_name} has no picture {function_name}")
    return function().to_html()


class FigureBlock(Block):
    NAME = "figure"
    ARGUMENT = True

    def on_markdown(self) -> str:
        return "block"

    def on_create(self, parent: etree.Element) -> etree.Element:
        self.holder = etree.SubElement(parent, "div", {"class": "calc-figure-block"})
        self.extra = etree.SubElement(self.holder, "div", {"class": "calc-figure-note"})
        return self.holder

    def on_add(self, block: etree.Element) -> etree.Element:
        return self.extra

    def on_end(self, block: etree.Element) -> None:
        request = figure_request(self.argument)
        collect = self.config.get("collect")
        if collect is not None:
            collect.append(("figure", request))
            return
        placeholder = etree.Element("p")
        placeholder.text = self.md.htmlStash.store(prefetch.value("figure", request))
        block.insert(0, placeholder)
        if not len(self.extra) and not (self.extra.text or "").strip():
            block.remove(self.extra)


def figure_request(argument: str) -> dict:
    """The build-cache request of a figure block: the picture's name as written, trimmed.

    >>> figure_request(" kv.block_table ")
    {'name': 'kv.block_table'}
    """
    return {"name": argument.strip()}


class FigureBlocksExtension(BlocksExtension):
    def __init__(self, *args, collect: list | None = None, **kwargs):
        self.collect = collect
        super().__init__(*args, **kwargs)

    def extendMarkdownBlocks(self, md, block_mgr) -> None:
        block_mgr.register(FigureBlock, {"collect": self.collect})
