"""How each kind of build-cache entry is computed: a block's render, a figure's SVG, a page's facts, a notebook's
execution.

The values these functions return are what :mod:`build_cache` stores, so this file's hash is part of every
entry's key (:data:`build_cache.HOOK_SOURCES`); the scheduling around them (:mod:`prefetch`) is not, and
can change without recomputing anything.
"""

from __future__ import annotations

import itertools
import os
import xml.etree.ElementTree as etree

import build_cache

UID_TOKEN = "__calc_uid__"  # stands for the widget's number in a cached render


def compute_block(kind: str, name: str, options: dict) -> str:
    """A block's render as XML text, its id left as ``UID_TOKEN``."""
    import widget_html

    saved = widget_html._ids
    widget_html._ids = itertools.repeat(UID_TOKEN)
    try:
        if kind == "widget":
            element = widget_html.render_widget(name, options["set"], options["hide"])
        elif kind == "simulation":
            element = widget_html.render_simulation(name, options["set"], options["hide"])
        else:
            element = widget_html.render_drill(name, options["seed"])
    finally:
        widget_html._ids = saved
    return etree.tostring(element, encoding="unicode")


def compute_facts(module_name: str) -> dict[str, str]:
    import facts

    return facts.compute_facts(module_name)


def notebook_options(plugin_config, abs_src_path: str) -> dict:
    """What mkdocs-jupyter passes to its converter for this notebook (its ``on_pre_page``, restated)."""
    import pathlib

    execute = plugin_config["execute"]
    for pattern in plugin_config["execute_ignore"] or []:
        if pathlib.PurePath(abs_src_path).match(pattern):
            execute = False
    keys = ("kernel_name", "theme", "allow_errors", "show_input", "no_input", "no_prompt", "remove_tag_config",
            "highlight_extra_classes", "include_requirejs", "custom_mathjax_url", "toc_depth")
    return {"execute": execute, **{key: plugin_config[key] for key in keys}}


def notebook_request(src_uri: str, options: dict) -> dict:
    """The notebook's path, the converter's options and the versions of what executes and converts it
    (the notebook's own text is a dependency, like calc's sources)."""
    from importlib.metadata import version

    tools = {name: version(name) for name in ("mkdocs-jupyter", "nbconvert", "nbclient", "jupytext", "ipykernel")}
    return {"src_uri": src_uri, "options": options, "tools": tools}


def compute_notebook(abs_src_path: str, options: dict) -> dict:
    """Execute and convert a notebook as mkdocs-jupyter does: its HTML, TOC tokens and title."""
    from mkdocs_jupyter import convert
    from mkdocs_jupyter.plugin import _get_nb_toc_tokens

    settings = {k: v for k, v in options.items() if k != "toc_depth"}
    body = convert.nb2html(abs_src_path, **settings)
    toc_tokens, title = _get_nb_toc_tokens(abs_src_path, options["toc_depth"])
    return {"content": body, "toc_tokens": toc_tokens, "title": title}


def notebook_roots(abs_src_path: str) -> tuple[set[str], bool]:
    """The calc modules a notebook imports (read with ast); False when its source is not plain Python."""
    import ast

    try:
        with open(abs_src_path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
    except (OSError, SyntaxError):
        return set(), False
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            roots.add(node.module)
            roots.update(f"{node.module}.{alias.name}" for alias in node.names)
    return {r for r in roots if r == "calc" or r.startswith("calc.")}, True


def compute_entry(kind: str, request, job) -> tuple[object, set[str]]:
    """Compute one entry; return its value and the files it depends on."""
    if kind in build_cache.BLOCK_KINDS:
        name, options = request["name"], request["options"]
        roots = {f"calc.widgets.{name.rsplit('.', 1)[0]}", "calc.widgets.framework", "calc.units"}
        return build_cache.tracked(lambda: compute_block(kind, name, options), roots)
    if kind == "figure":
        import figures

        name = request["name"]
        module_name = name.rpartition(".")[0]
        roots = {f"calc.diagrams.{module_name}"} if module_name.isidentifier() else {"calc.diagrams"}
        module_file = os.path.join(build_cache.CALC_DIR, "diagrams", f"{module_name}.py")
        value, files = build_cache.tracked(lambda: figures.render_figure(name), roots)
        return value, files | {module_file}  # a picture of a module that does not exist yet: its creation counts
    if kind == "facts":
        module_file = os.path.join(build_cache.CALC_DIR, "widgets", f"{request}.py")
        value, files = build_cache.tracked(lambda: compute_facts(request), {f"calc.widgets.{request}"})
        return value, files | {module_file}  # a page without a module of its own gets one: its facts change
    if kind == "notebook":
        abs_src_path = job["abs_src_path"]
        roots, parsed = notebook_roots(abs_src_path)
        value = compute_notebook(abs_src_path, request["options"])
        if parsed:
            files = build_cache.import_closure(roots)
        else:  # cannot read its imports: it depends on all of calc
            files = {os.path.join(folder, f) for folder, _, names in os.walk(build_cache.CALC_DIR)
                     for f in names if f.endswith((".py", ".json"))}
        return value, files | {abs_src_path}
    raise ValueError(f"unknown cache entry kind {kind!r}")




def _toc_items(items) -> list:
    return [[item.title, item.id, item.url, item.level, _toc_items(item.children)] for item in items]


def search_request(page, indexer: str) -> dict:
    """What Material's search plugin reads of a page to index it: its HTML, TOC, URL, title and front matter
    (``indexer`` names the plugin's version). Its entries are cached by this: a page MkDocs rebuilt with the
    same HTML is not parsed again."""
    import hashlib

    meta = {key: page.meta.get(key) for key in ("search", "tags", "title")}
    return {"content_sha256": hashlib.sha256((page.content or "").encode("utf-8")).hexdigest(),
            "url": page.url, "title": str(page.title), "toc": _toc_items(page.toc or []), "meta": meta,
            "indexer": indexer}


def cached_search_entries(index, original, page) -> None:
    """``SearchIndex.add_entry_from_context`` through the build cache: the entries a page adds to the index."""
    import time

    from material import __version__ as material_version

    request = search_request(page, f"material {material_version}")
    entries = build_cache.load("search", request)
    if entries is not None:
        index.entries.extend(entries)
        return
    started, before = time.perf_counter(), len(index.entries)
    original(page)
    build_cache.store("search", request, index.entries[before:], (), time.perf_counter() - started)
