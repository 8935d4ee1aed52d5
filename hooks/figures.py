"""The renderer of ``/// figure | module.function``: an explanatory picture from :mod:`calc.diagrams`, drawn at build.

In a page::

    /// figure | kv.block_table
    ///

renders ``calc.diagrams.kv.block_table()`` as a ``<figure>`` with an inline SVG (labelled by its ``<title>``
and ``<desc>``) and a ``<figcaption>``. Markdown inside the block is added to the caption. The SVG goes
through Markdown's HTML stash (:class:`blocks.FigureBlock`), so no inline processor (abbreviations, emphasis)
touches its text. An unknown picture fails the build. A picture is a build-cache entry like any block
(:mod:`kinds`, :mod:`build_cache`).
"""

from __future__ import annotations

import importlib


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


def figure(name: str, options: dict) -> str:
    """The renderer of the figure kind (:mod:`kinds`): the picture's HTML (a figure takes no options)."""
    return render_figure(name)
