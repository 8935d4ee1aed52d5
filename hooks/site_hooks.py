"""MkDocs hooks: the build half of the lesson's runtime.

* ``on_config``: puts the project on ``sys.path`` and registers the widget, drill
  and simulation blocks (:mod:`blocks`).
* ``on_files``: scans the pages for the facts, blocks and notebooks they need and starts
  computing, in worker processes, those the build cache lacks (:mod:`prefetch`, :mod:`build_cache`).
* ``on_page_markdown``: fills ``{{ fact }}`` numbers in the prose from ``calc`` (:mod:`facts`).
* ``on_page_content``: marks pages that hold a widget (``page.meta["calc_live"]``), so that
  ``overrides/main.html`` starts the Python worker from the page's head, before the body is parsed.
* ``on_post_page``: gives each landmark of the page a name of its own (:mod:`landmarks`).
* ``on_post_build``: vendors the browser runtime (Pyodide, Plotly.js, KaTeX) from
  ``node_modules`` into the built site, packs ``calc`` into a zip for the worker,
  adds the Content-Security-Policy and writes the offline cache's list (:mod:`vendor`,
  :mod:`security`).
"""

from __future__ import annotations

import importlib
import logging
import os
import sys

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)

COMMAND_VARIABLE = "CALC_MKDOCS_COMMAND"  # survives `mkdocs serve` re-running this file, unlike a global
DIRTY_VARIABLE = "CALC_MKDOCS_DIRTY"
INPUTS_VARIABLE = "CALC_SERVE_INPUTS"  # what the last dirty rebuild was made from (see _page_independent_inputs)
DIRTY_WARNING = "A 'dirty' build is being performed"
HOOK_MODULES = ("blocks", "facts", "vendor", "widget_html", "security", "prefetch", "build_cache", "entries",
                "landmarks")
_modules: dict = {}
log = logging.getLogger("mkdocs.hooks.site_hooks")


def _fresh_imports() -> None:
    """Import calc and the hook modules anew: `mkdocs serve` rebuilds in one process, and an edit to
    calc or to a hook must show up without restarting it."""
    for path in (PROJECT_DIR, HOOKS_DIR):  # MkDocs restores sys.path after loading this file, so add them here
        if path not in sys.path:
            sys.path.insert(0, path)
    if "prefetch" in sys.modules:  # a rebuild: its worker processes belong to the last build
        sys.modules["prefetch"].finish()
    for name in list(sys.modules):
        if name == "calc" or name.startswith("calc.") or name in HOOK_MODULES:
            del sys.modules[name]
    for name in ("blocks", "facts", "vendor", "security", "prefetch", "build_cache", "entries", "landmarks"):
        _modules[name] = importlib.import_module(name)


def _reproducible_build_date() -> None:
    """Date the build by the last commit, not the clock: MkDocs stamps every page's sitemap `lastmod` with
    the build date (it honours SOURCE_DATE_EPOCH), so two builds of one commit, even either side of
    midnight, give the same files. Left alone when it is set already or there is no git checkout."""
    if os.environ.get("SOURCE_DATE_EPOCH"):
        return
    import subprocess

    try:
        seconds = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=PROJECT_DIR, capture_output=True,
                                 text=True, timeout=10, check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        return
    if seconds.isdigit():
        os.environ["SOURCE_DATE_EPOCH"] = seconds


def on_startup(command, dirty=False, **kwargs):
    os.environ[COMMAND_VARIABLE] = command
    _reproducible_build_date()
    os.environ[DIRTY_VARIABLE] = "1" if dirty else ""
    if dirty:
        logging.getLogger("mkdocs.commands.build").addFilter(_DirtyNotice())


class _DirtyNotice(logging.Filter):
    """`make serve` rebuilds dirty (only the pages whose inputs changed, see on_files); MkDocs warns about
    that on every rebuild, which --strict would turn into a failed rebuild. Said once, as information."""

    def filter(self, record: logging.LogRecord) -> bool:
        if record.levelno == logging.WARNING and str(record.msg).startswith(DIRTY_WARNING):
            record.levelno, record.levelname = logging.INFO, "INFO"
            record.msg = "Dirty rebuild: pages whose sources, facts, widgets or notebooks changed"
        return True


def _page_independent_inputs(files, config) -> str:
    """A hash of what every page is made from besides its own source and its cache entries: the hooks, the
    configuration, the theme overrides, the snippets appended to every page, and the list of pages (nav)."""
    import hashlib

    digest = hashlib.sha256()
    folders = [HOOKS_DIR, os.path.join(PROJECT_DIR, "overrides"), os.path.join(config.docs_dir, "includes")]
    paths = [config.config_file_path or ""]
    for folder in folders:
        for base, dirs, names in os.walk(folder):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            paths += [os.path.join(base, n) for n in sorted(names) if not n.endswith(".pyc")]
    for path in paths:
        digest.update(path.encode())
        if os.path.isfile(path):
            with open(path, "rb") as handle:
                digest.update(handle.read())
    digest.update("\n".join(sorted(f.src_uri for f in files)).encode())
    return digest.hexdigest()


def _mark_stale(pages) -> None:
    # MkDocs' dirty build rebuilds a page whose output is older than its source.
    for file in pages:
        if file is not None and os.path.isfile(file.abs_dest_path):
            os.utime(file.abs_dest_path, (0, 0))


def on_config(config, **kwargs):
    _fresh_imports()
    config.markdown_extensions.append(_modules["blocks"].CalcBlocksExtension())
    sys.modules.pop("figures", None)  # explanatory pictures, /// figure | module.function (hooks/figures.py)
    config.markdown_extensions.append(importlib.import_module("figures").FigureBlocksExtension())
    search = config.plugins.get("material/search")
    index = getattr(search, "search_index", None)  # made by the search plugin's on_config, which ran first
    if index is not None and _modules["build_cache"].enabled():
        import functools

        index.add_entry_from_context = functools.partial(
            _modules["entries"].cached_search_entries, index, index.add_entry_from_context)
    sys.modules.pop("replica", None)  # the steps' changes to the reader's replica, /// replica-change | N
    config.markdown_extensions.append(importlib.import_module("replica").ReplicaBlocksExtension())
    return config


def on_env(env, config, files, **kwargs):
    # Compiled templates kept on disk (Jinja checks each template's source): not recompiled at every build.
    import jinja2

    folder = os.path.join(PROJECT_DIR, "build", "jinja-cache")
    os.makedirs(folder, exist_ok=True)
    env.bytecode_cache = jinja2.FileSystemBytecodeCache(folder)
    return env


def on_files(files, config, **kwargs):
    if os.environ.get(COMMAND_VARIABLE) != "serve":  # serve makes no new snapshot (on_post_build)
        _modules["vendor"].start_pyodide_snapshot(PROJECT_DIR)
    counts = _modules["prefetch"].start(files, config)
    if os.environ.get(DIRTY_VARIABLE):
        inputs = _page_independent_inputs(files, config)
        if os.environ.get(INPUTS_VARIABLE) != inputs:  # hooks, theme, nav or snippets changed: every page
            _mark_stale(files.documentation_pages())
            os.environ[INPUTS_VARIABLE] = inputs
        else:  # a calc edit: the pages whose facts, widgets or notebooks it changed
            _mark_stale(counts["stale_pages"])
    return files


def on_page_markdown(markdown, page, config, files, **kwargs):
    facts = _modules["facts"]
    return facts.fill(markdown, facts.page_module(page.file.src_uri, page.meta), page.file.src_uri)


def on_page_content(html, page, config, files, **kwargs):
    page.meta["calc_live"] = "data-widget=" in html
    return html


def on_post_page(output, page, config, **kwargs):
    return _modules["landmarks"].unique_landmarks(output)


def on_build_error(error, **kwargs):
    _modules["prefetch"].finish()
    _modules["vendor"].stop_early_snapshots()


def on_post_build(config, **kwargs):
    _modules["prefetch"].finish()
    vendor, security = _modules["vendor"], _modules["security"]
    serving = os.environ.get(COMMAND_VARIABLE) == "serve"
    skip_snapshot = serving and not vendor.snapshot_is_cached(PROJECT_DIR)
    saved = os.environ.get("CALC_PYODIDE_SNAPSHOT")
    if skip_snapshot:  # making one takes Node ~15 s: not on every calc edit under `make serve`
        log.info("Pyodide snapshot skipped while serving (calc changed; `make build` makes it): "
                 "the worker starts Python itself")
        os.environ["CALC_PYODIDE_SNAPSHOT"] = "0"
    try:
        vendor.vendor_runtime(PROJECT_DIR, config.site_dir, config.site_url or "")
    finally:
        if skip_snapshot:
            if saved is None:
                del os.environ["CALC_PYODIDE_SNAPSHOT"]
            else:
                os.environ["CALC_PYODIDE_SNAPSHOT"] = saved
    if os.environ.get(COMMAND_VARIABLE) != "serve":  # serve injects a live-reload script into every response
        security.protect_site(config.site_dir)
    vendor.write_precache_list(config.site_dir)
