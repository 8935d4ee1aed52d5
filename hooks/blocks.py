"""Markdown blocks (pymdownx.blocks) that embed ``calc`` widgets in a page.

In a page::

    /// widget | kv_cache_arithmetic.kv_per_token
        set: {model: llama-3.1-70b, context_tokens: 8192}
        hide: [dtype]
    ///

    /// drill | kv_cache_arithmetic.kv_bytes_drill
    ///

    /// simulation | reserving_the_maximum.replica
        set: {allocation: contiguous}
    ///

``set`` overrides the defaults of the controls (the build computes the outputs
for them); ``hide`` keeps a control fixed and out of sight. Text inside the
block is Markdown shown above the widget. An unknown widget, control or value
fails the build: a page never ships a widget that cannot run.

Renders go through :mod:`prefetch` and the build cache: a block whose widget module and
options did not change since the last build is not computed again. With ``collect`` (a
list), the extension renders nothing and records each block's request instead (the
prefetch's scan of the pages).
"""

from __future__ import annotations

import xml.etree.ElementTree as etree

from pymdownx.blocks import BlocksExtension
from pymdownx.blocks.block import Block, type_any, type_integer

import prefetch
import widget_html


class _CalcBlock(Block):
    ARGUMENT = True

    def on_markdown(self) -> str:
        return "block"

    def on_create(self, parent: etree.Element) -> etree.Element:
        self.holder = etree.SubElement(parent, "div", {"class": "calc-block"})
        self.intro = etree.SubElement(self.holder, "div", {"class": "calc-intro"})
        return self.holder

    def on_add(self, block: etree.Element) -> etree.Element:
        return self.intro

    def on_end(self, block: etree.Element) -> None:
        if not len(self.intro) and not (self.intro.text or "").strip():
            block.remove(self.intro)
        name = self.argument.strip()
        collect = self.config.get("collect")
        if collect is not None:
            collect.append((self.NAME, {"name": name, "options": self.request_options()}))
            return
        uid = f"w{next(widget_html._ids)}"  # numbered here, in page order, whether rendered now or cached
        block.append(prefetch.block(self.NAME, name, self.request_options(), uid))


def hidden_controls(value) -> list[str]:
    """``hide`` as a YAML list or as a comma-separated string.

    >>> hidden_controls(["tp", " gpu"]), hidden_controls("tp, gpu"), hidden_controls(None)
    (['tp', 'gpu'], ['tp', 'gpu'], [])
    """
    if value is None:
        return []
    if isinstance(value, str):
        value = value.split(",")
    if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise ValueError(f"'hide' must be a list of control names; got {value!r}")
    return [v.strip() for v in value if v.strip()]


class WidgetBlock(_CalcBlock):
    NAME = "widget"
    # Options are parsed here, not by pymdownx: a value it cannot parse would silently turn the block into text.
    OPTIONS = {"set": [{}, type_any], "hide": [[], type_any]}

    def on_validate(self, parent: etree.Element) -> bool:
        if not isinstance(self.options["set"], dict):
            raise ValueError(f"widget {self.argument}: 'set' must be a mapping of control: value")
        self.options["hide"] = hidden_controls(self.options["hide"])
        return True

    def request_options(self) -> dict:
        return {"set": self.options["set"], "hide": self.options["hide"]}


class DrillBlock(_CalcBlock):
    NAME = "drill"
    OPTIONS = {"seed": [0, type_integer]}

    def request_options(self) -> dict:
        return {"seed": self.options["seed"]}


class SimulationBlock(WidgetBlock):
    NAME = "simulation"


class CalcBlocksExtension(BlocksExtension):
    def __init__(self, *args, collect: list | None = None, **kwargs):
        self.collect = collect
        super().__init__(*args, **kwargs)

    def extendMarkdownBlocks(self, md, block_mgr) -> None:
        for block_class in (WidgetBlock, DrillBlock, SimulationBlock):
            block_mgr.register(block_class, {"collect": self.collect})
