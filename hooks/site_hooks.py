"""MkDocs hooks: the build half of the lesson's runtime.

* ``on_config``: puts the project on ``sys.path`` and registers the widget, drill
  and simulation blocks (:mod:`blocks`).
* ``on_page_markdown``: fills ``{{ fact }}`` numbers in the prose from ``calc`` (:mod:`facts`).
* ``on_page_content``: marks pages that hold a widget (``page.meta["calc_live"]``), so that
  ``overrides/main.html`` starts the Python worker from the page's head, before the body is parsed.
* ``on_post_build``: vendors the browser runtime (Pyodide, Plotly.js, KaTeX) from
  ``node_modules`` into the built site, packs ``calc`` into a zip for the worker,
  adds the Content-Security-Policy and writes the offline cache's list (:mod:`vendor`,
  :mod:`security`).
"""

from __future__ import annotations

import importlib
import os
import sys

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)

COMMAND_VARIABLE = "CALC_MKDOCS_COMMAND"  # survives `mkdocs serve` re-running this file, unlike a global
HOOK_MODULES = ("blocks", "facts", "vendor", "widget_html", "security")
_modules: dict = {}


def _fresh_imports() -> None:
    """Import calc and the hook modules anew: `mkdocs serve` rebuilds in one process, and an edit to
    calc or to a hook must show up without restarting it."""
    for path in (PROJECT_DIR, HOOKS_DIR):  # MkDocs restores sys.path after loading this file, so add them here
        if path not in sys.path:
            sys.path.insert(0, path)
    for name in list(sys.modules):
        if name == "calc" or name.startswith("calc.") or name in HOOK_MODULES:
            del sys.modules[name]
    for name in ("blocks", "facts", "vendor", "security"):
        _modules[name] = importlib.import_module(name)


def on_startup(command, dirty=False, **kwargs):
    os.environ[COMMAND_VARIABLE] = command


def on_config(config, **kwargs):
    _fresh_imports()
    config.markdown_extensions.append(_modules["blocks"].CalcBlocksExtension())
    sys.modules.pop("figures", None)  # explanatory pictures, /// figure | module.function (hooks/figures.py)
    config.markdown_extensions.append(importlib.import_module("figures").FigureBlocksExtension())
    sys.modules.pop("replica", None)  # the steps' changes to the reader's replica, /// replica-change | N
    config.markdown_extensions.append(importlib.import_module("replica").ReplicaBlocksExtension())
    return config


def on_page_markdown(markdown, page, config, files, **kwargs):
    facts = _modules["facts"]
    return facts.fill(markdown, facts.page_module(page.file.src_uri, page.meta), page.file.src_uri)


def on_page_content(html, page, config, files, **kwargs):
    page.meta["calc_live"] = "data-widget=" in html
    return html


def on_post_build(config, **kwargs):
    vendor, security = _modules["vendor"], _modules["security"]
    vendor.vendor_runtime(PROJECT_DIR, config.site_dir, config.site_url or "")
    if os.environ.get(COMMAND_VARIABLE) != "serve":  # serve injects a live-reload script into every response
        security.protect_site(config.site_dir)
    vendor.write_precache_list(config.site_dir)
