"""The Markdown blocks (pymdownx.blocks) that embed what ``calc`` computes in a page.

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

    /// figure | kv.block_table
    ///

``set`` overrides the defaults of the controls (the build computes the outputs for them); ``hide`` keeps a
control fixed and out of sight; ``key: [output, ...]`` puts the picture first with those outputs beside it and
folds the other outputs under "All numbers". Text inside the block is Markdown shown above the widget (below a figure, in
its caption). An unknown widget, control or value fails the build: a page never ships a widget that cannot run.

A block computes nothing: it reads its request from the page and asks the build for the value
(``config["values"](kind, request)``, the build cache's entry: :mod:`kinds` says which renderer makes it), or,
when the page scan runs it (``config["collect"]``, a list), records the request and renders nothing. Which
kind each class serves is the table in :mod:`kinds`; :mod:`scan` registers them.
"""

from __future__ import annotations

import xml.etree.ElementTree as etree

from pymdownx.blocks.block import Block, type_any, type_integer

from widget_html import UID_PLACEHOLDER  # the id of a render in the cache, until the page numbers it


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


class _RequestBlock(Block):
    """A block whose argument names a ``calc`` function (``module.function``) and whose value the build supplies."""

    ARGUMENT = True

    def on_markdown(self) -> str:
        return "block"

    def request_options(self) -> dict:
        return {}

    def request(self) -> dict:
        return {"name": self.argument.strip(), "options": self.request_options()}

    def collected(self) -> bool:
        """Under the page scan: record the request, render nothing."""
        collect = self.config.get("collect")
        if collect is not None:
            collect.append((self.NAME, self.request()))
        return collect is not None


class WidgetBlock(_RequestBlock):
    """A widget (and any kind whose renderer returns one XML element with the placeholder id): placed after the
    block's intro text, numbered ``w<n>`` in page order."""

    # Options are parsed here, not by pymdownx: a value it cannot parse would silently turn the block into text.
    # ``key`` lays the widget out picture first: its picture with these outputs beside it, then the controls, and
    # the other outputs in an "All numbers" fold (widget_html.py).
    # ``picture: charts`` makes a simulation's charts its picture instead of its block map.
    OPTIONS = {"set": [{}, type_any], "hide": [[], type_any], "key": [[], type_any], "picture": ["", type_any]}

    def on_validate(self, parent: etree.Element) -> bool:
        if not isinstance(self.options["set"], dict):
            raise ValueError(f"{self.NAME} {self.argument}: 'set' must be a mapping of control: value")
        self.options["hide"] = hidden_controls(self.options["hide"])
        self.options["key"] = hidden_controls(self.options["key"])  # a list of names, as hide
        if self.options["picture"] not in ("", "charts", "blockmap"):
            raise ValueError(f"{self.NAME} {self.argument}: 'picture' must be charts or blockmap; "
                             f"got {self.options['picture']!r}")
        return True

    def request_options(self) -> dict:
        options = {"set": self.options["set"], "hide": self.options["hide"]}
        if self.options["key"]:
            options["key"] = self.options["key"]
        if self.options["picture"]:
            options["picture"] = self.options["picture"]
        return options

    def on_create(self, parent: etree.Element) -> etree.Element:
        self.holder = etree.SubElement(parent, "div", {"class": "calc-block"})
        self.intro = etree.SubElement(self.holder, "div", {"class": "calc-intro"})
        return self.holder

    def on_add(self, block: etree.Element) -> etree.Element:
        return self.intro

    def on_end(self, block: etree.Element) -> None:
        from markdown.util import AtomicString

        if not len(self.intro) and not (self.intro.text or "").strip():
            block.remove(self.intro)
        if self.collected():
            return
        uid = self.config["next_uid"]()  # numbered here, in page order, whether rendered now or cached
        element = etree.fromstring(self.config["values"](self.NAME, self.request()).replace(UID_PLACEHOLDER, uid))
        for node in element.iter():  # every string was an AtomicString when rendered: keep it out of Markdown's reach
            if node.text is not None:
                node.text = AtomicString(node.text)
            if node.tail is not None:
                node.tail = AtomicString(node.tail)
        block.append(element)


class DrillBlock(WidgetBlock):
    OPTIONS = {"seed": [0, type_integer]}

    def on_validate(self, parent: etree.Element) -> bool:
        return True

    def request_options(self) -> dict:
        return {"seed": self.options["seed"]}


class FigureBlock(_RequestBlock):
    """A picture: its HTML through Markdown's stash, the block's text below it as a note."""

    def on_create(self, parent: etree.Element) -> etree.Element:
        self.holder = etree.SubElement(parent, "div", {"class": "calc-figure-block"})
        self.extra = etree.SubElement(self.holder, "div", {"class": "calc-figure-note"})
        return self.holder

    def on_add(self, block: etree.Element) -> etree.Element:
        return self.extra

    def on_end(self, block: etree.Element) -> None:
        if self.collected():
            return
        placeholder = etree.Element("p")
        placeholder.text = self.md.htmlStash.store(self.config["values"](self.NAME, self.request()))
        block.insert(0, placeholder)
        if not len(self.extra) and not (self.extra.text or "").strip():
            block.remove(self.extra)
