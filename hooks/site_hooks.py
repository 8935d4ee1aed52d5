"""MkDocs hooks: the build half of the lesson's runtime.

* ``on_config``: puts the project on ``sys.path``, imports calc and the hook modules anew, starts this build's
  :class:`Build` and registers the calc blocks (:mod:`scan`, :mod:`kinds`).
* ``on_files``: scans the pages for the facts, blocks and notebooks they need and starts
  computing, in worker processes, those the build cache lacks (:mod:`scan`, :mod:`prefetch`, :mod:`build_cache`);
  under ``make serve`` (dirty) has MkDocs redo the pages whose entries changed.
* ``on_pre_page``: a notebook's execution through the build cache.
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

import itertools
import logging
import os
import sys
import time

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)

DIRTY_WARNING = "A 'dirty' build is being performed"
HOOK_MODULES = ("blocks", "build_cache", "entries", "facts", "figures", "head_script", "kinds", "landmarks", "prefetch",
                "replica", "scan", "security", "vendor", "widget_html")
log = logging.getLogger("mkdocs.hooks.site_hooks")
# What on_startup says of this process: MkDocs calls it once per command and keeps this module for every rebuild
# of `mkdocs serve` (a hook, like a plugin with on_startup, is loaded once). Nothing else here outlives a build.
_process = {"command": "build", "dirty": False}
_build: Build | None = None  # the build under way (on_config makes it)


class Build:
    """One build's own: the digests its cache keys are made of, its entries, its widget numbering."""

    def __init__(self, config):
        import build_cache
        import facts
        import prefetch

        self.digests = build_cache.Digests(facts.page_modules(config.docs_dir), PROJECT_DIR)
        self.prefetch = prefetch.Prefetch(self.digests)
        self.uids = itertools.count(1)
        self.inputs = None  # under `make serve`: what every page is made from (_page_independent_inputs)

    def value(self, kind: str, request, job: dict | None = None):
        return self.prefetch.value(kind, request, job)

    def next_uid(self) -> str:
        """The next widget's id: ``w1``, ``w2``, ... in the order MkDocs renders the pages."""
        return f"w{next(self.uids)}"


def _fresh_imports() -> None:
    """Import calc and the hook modules anew: `mkdocs serve` rebuilds in one process, and an edit to
    calc or to a hook must show up without restarting it."""
    for path in (PROJECT_DIR, HOOKS_DIR):  # MkDocs restores sys.path after loading this file, so add them here
        if path not in sys.path:
            sys.path.insert(0, path)
    for name in list(sys.modules):
        if name == "calc" or name.startswith("calc.") or name in HOOK_MODULES:
            del sys.modules[name]


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
    _process.update(command=command, dirty=dirty)
    _reproducible_build_date()
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
    configuration, the theme overrides, the head script, the notebooks' palette, the snippets appended to every
    page, and the list of pages (nav)."""
    import hashlib

    import head_script

    digest = hashlib.sha256()
    folders = [HOOKS_DIR, os.path.join(PROJECT_DIR, "overrides"), os.path.join(config.docs_dir, "includes"),
               os.path.join(config.docs_dir, "assets", "notebooks")]
    paths = [config.config_file_path or "", os.path.join(PROJECT_DIR, head_script.SOURCE)]
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


def changed_entries(keys: dict, missing: set, used_before) -> set:
    """The entries (markers) whose value may differ from the last build's: computed now, or taken from the cache
    under a key the last build did not use. An edit undone is the second kind: its entries are the cache's from
    before the edit, and the pages still show the edit until they are redone.

    >>> keys = {"step 2 facts": "k-before", "step 3 facts": "k3"}
    >>> sorted(changed_entries(keys, set(), used_before=["k-edited", "k3"]))  # step 2's edit undone
    ['step 2 facts']
    >>> changed_entries(keys, set(), used_before=["k-before", "k3"])  # nothing changed
    set()
    >>> sorted(changed_entries(keys, {"step 3 facts"}, []))  # a first build: every entry
    ['step 2 facts', 'step 3 facts']
    """
    used = set(used_before)
    return {marker for marker, key in keys.items() if key not in used} | set(missing)


def _redo(pages) -> None:
    """Have MkDocs' dirty build redo ``pages`` though their sources did not change (their facts, widgets or
    notebook did, or what every page is made from): it redoes the pages whose ``File.is_modified()``, and the
    files are this build's own (on_files may change them; tests/test_upstream_reliances.py holds MkDocs to that
    rule)."""
    for file in pages:
        file.is_modified = lambda: True


def on_config(config, **kwargs):
    global _build
    _fresh_imports()
    import entries
    import scan

    _build = Build(config)
    config.markdown_extensions.append(scan.CalcBlocksExtension(values=_build.value, next_uid=_build.next_uid))
    search = config.plugins.get("material/search")
    index = getattr(search, "search_index", None)  # made by the search plugin's on_config, which ran first
    if index is not None and sys.modules["build_cache"].enabled():
        import functools

        index.add_entry_from_context = functools.partial(
            entries.cached_search_entries, index, index.add_entry_from_context, _build.digests)
    return config


def on_env(env, config, files, **kwargs):
    import head_script
    import jinja2

    # The boot's head script, minified, for overrides/main.html (hooks/head_script.py).
    env.globals["calc_head_script"] = head_script.head_script(PROJECT_DIR)
    # Compiled templates kept on disk (Jinja checks each template's source): not recompiled at every build.
    folder = os.path.join(PROJECT_DIR, "build", "jinja-cache")
    os.makedirs(folder, exist_ok=True)
    env.bytecode_cache = jinja2.FileSystemBytecodeCache(folder)
    return env


def on_files(files, config, **kwargs):
    import build_cache
    import scan
    import vendor

    if _process["command"] != "serve":  # serve makes no new snapshot (on_post_build)
        vendor.start_pyodide_snapshot(PROJECT_DIR)
    cache_was_empty = build_cache.cache_is_empty()
    jobs, users = scan.scan(files, config, _build.digests)
    counts = _build.prefetch.start(jobs)
    previous = build_cache.update_build_record(
        config.site_dir, site_dir=os.path.realpath(config.site_dir), site_url=config.site_url,
        cache_dir=os.path.realpath(build_cache.cache_dir()), cache_enabled=build_cache.enabled(),
        cache_was_empty=cache_was_empty, entries=counts["entries"], reused=counts["cached"],
        computed=counts["computing"], at=time.time(), entry_keys=sorted(set(counts["keys"].values())))
    if _process["dirty"]:
        _build.inputs = _page_independent_inputs(files, config)
        if previous.get("page_independent_inputs") != _build.inputs:  # hooks, theme, nav or snippets: every page
            _redo(files.documentation_pages())
        else:  # a calc edit: the pages whose facts, widgets or notebooks it changed since the last build
            changed = changed_entries(counts["keys"], counts["missing"], previous.get("entry_keys", ()))
            _redo({file for marker in changed for file in users[marker]})
    return files


def on_pre_page(page, config, files, **kwargs):
    """A notebook's execution through the build cache. Runs after mkdocs-jupyter's on_pre_page (plugins before
    hooks), whose ``page.render`` executes the notebook: this one takes the executed notebook from the cache, or
    has it executed and stored (CONTRIBUTING.md, "Where the build reaches into other projects")."""
    plugin = config.plugins.get("mkdocs-jupyter")
    if plugin is None or not plugin.should_include(page.file) or plugin.config["cache"]:
        return page
    import entries
    from mkdocs.structure.pages import Page
    from mkdocs.structure.toc import get_toc

    ignore_h1_titles = plugin.config["ignore_h1_titles"]
    build = _build

    def cached_render(self, config, files):
        options = entries.notebook_options(plugin.config, self.file.abs_src_path)
        request = entries.notebook_request(self.file.src_uri, self.file.abs_src_path, options)
        executed = build.value("notebook", request, {"abs_src_path": self.file.abs_src_path})
        self.content = executed["content"]
        self.toc = get_toc(executed["toc_tokens"])
        if executed.get("title") is not None and not ignore_h1_titles:
            self.title = executed["title"]

    page.render = cached_render.__get__(page, Page)
    return page


def on_page_markdown(markdown, page, config, files, **kwargs):
    import facts

    return facts.fill(markdown, facts.page_module(page.file.src_uri, page.meta), page.file.src_uri,
                      lambda request: _build.value("facts", request))


def on_page_content(html, page, config, files, **kwargs):
    page.meta["calc_live"] = "data-widget=" in html
    return html


def on_post_page(output, page, config, **kwargs):
    import landmarks

    return landmarks.unique_landmarks(output)


def on_build_error(error, **kwargs):
    import vendor

    if _build is not None:
        _build.prefetch.finish()
    vendor.stop_early_snapshots()


def on_post_build(config, **kwargs):
    import build_cache
    import security
    import vendor

    _build.prefetch.finish()
    serving = _process["command"] == "serve"
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
    if not serving:  # serve injects a live-reload script into every response
        security.protect_site(config.site_dir)
    vendor.write_precache_list(config.site_dir)
    if _process["dirty"]:  # what this site's pages were made from: the next dirty rebuild compares
        build_cache.update_build_record(config.site_dir, page_independent_inputs=_build.inputs)
