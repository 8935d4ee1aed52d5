"""MkDocs hooks: the build half of the lesson's runtime.

* ``on_config``: puts the project on ``sys.path`` and registers the widget and
  drill blocks (:mod:`blocks`).
* ``on_page_markdown``: fills ``{{ fact }}`` numbers in the prose from ``calc`` (:mod:`facts`).
* ``on_post_build``: vendors the browser runtime (Pyodide, Plotly.js, KaTeX) from
  ``node_modules`` into the built site and packs ``calc`` into a zip for the worker
  (:mod:`vendor`).
"""

from __future__ import annotations

import os
import sys

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)
for path in (PROJECT_DIR, HOOKS_DIR):
    if path not in sys.path:
        sys.path.insert(0, path)

# `mkdocs serve` runs this file again on every rebuild: drop the modules it imported last time, so that an
# edit to calc or to a hook shows up without restarting the server.
for _name in list(sys.modules):
    if _name == "calc" or _name.startswith("calc.") or _name in ("blocks", "facts", "vendor", "widget_html", "security"):
        del sys.modules[_name]

import blocks  # noqa: E402
import facts  # noqa: E402
import security  # noqa: E402
import vendor  # noqa: E402

COMMAND_VARIABLE = "CALC_MKDOCS_COMMAND"  # survives `mkdocs serve` re-running this file, unlike a global


def on_startup(command, dirty=False, **kwargs):
    os.environ[COMMAND_VARIABLE] = command


def on_config(config, **kwargs):
    config.markdown_extensions.append(blocks.CalcBlocksExtension())
    return config


def on_page_markdown(markdown, page, config, files, **kwargs):
    module = facts.page_module(page.file.src_uri, page.meta)
    return facts.fill(markdown, module, page.file.src_uri)


def on_post_build(config, **kwargs):
    vendor.vendor_runtime(PROJECT_DIR, config.site_dir, config.site_url or "")
    if os.environ.get(COMMAND_VARIABLE) != "serve":  # serve injects a live-reload script into every response
        security.protect_site(config.site_dir)
    vendor.write_precache_list(config.site_dir)
