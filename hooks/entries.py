"""How each kind of build-cache entry is computed and keyed: a block's render (the kinds of :mod:`kinds`), a page's
facts, a notebook's execution.

The values these functions return are what :mod:`build_cache` stores, so this file is part of every entry's
key (:func:`sources`); the scheduling around them (:mod:`prefetch`) is not, and can change without recomputing
anything.
"""

from __future__ import annotations

import functools
import hashlib

import build_cache
import facts
from kinds import BLOCK_KINDS, page_module_of

# The hook code that makes each kind of entry that is no block (a block's is in its row of kinds.BLOCK_KINDS).
OTHER_SOURCES = {
    "facts": ("entries.py", "facts.py"),
    "notebook": ("entries.py",),
    "scan": ("scan.py", "blocks.py", "kinds.py"),  # the blocks a page's text holds, parsed as the build does
    "search": ("entries.py",),  # a page's entries in the search index (Material's parser, its version keyed)
}
# Without a recorded time, the first build starts what is usually slowest first (a page's facts may run whole
# simulations; a notebook starts a kernel).
OTHER_SECONDS = {"facts": 5.0, "notebook": 4.0}


def sources(kind: str) -> tuple[str, ...]:
    """The hook files whose code makes an entry of ``kind``.

    >>> sources("widget")
    ('entries.py', 'kinds.py', 'blocks.py', 'widget_html.py')
    """
    if kind in BLOCK_KINDS:
        return ("entries.py", "kinds.py", *BLOCK_KINDS[kind].sources)
    return OTHER_SOURCES[kind]


def key(kind: str, request, digests: build_cache.Digests) -> str:
    """The entry's key: the request, its hook code, its page module's file, the rest of calc."""
    return digests.key(kind, request, sources(kind), page_module_of(kind, request))


def default_seconds(kind: str) -> float:
    return BLOCK_KINDS[kind].seconds if kind in BLOCK_KINDS else OTHER_SECONDS[kind]


def compute(kind: str, request, job: dict):
    """Compute one entry's value."""
    if kind in BLOCK_KINDS:
        return BLOCK_KINDS[kind].renderer()(request["name"], request["options"])
    if kind == "facts":
        return facts.compute_facts(request)
    if kind == "notebook":
        return compute_notebook(job["abs_src_path"], request["options"])
    raise ValueError(f"unknown cache entry kind {kind!r}")


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


@functools.lru_cache(maxsize=1)  # this module is imported anew at every build (site_hooks._fresh_imports)
def notebook_tools() -> dict[str, str]:
    """The versions of what executes and converts a notebook."""
    from importlib.metadata import version

    return {name: version(name) for name in ("mkdocs-jupyter", "nbconvert", "nbclient", "jupytext", "ipykernel")}


def notebook_request(src_uri: str, abs_src_path: str, options: dict) -> dict:
    """The notebook's path and text, the converter's options and the versions of what executes and converts it."""
    return {"src_uri": src_uri, "text_sha256": build_cache.file_sha256(abs_src_path), "options": options,
            "tools": notebook_tools()}


def compute_notebook(abs_src_path: str, options: dict) -> dict:
    """Execute and convert a notebook as mkdocs-jupyter does: its HTML, TOC tokens and title."""
    from mkdocs_jupyter import convert
    from mkdocs_jupyter.plugin import _get_nb_toc_tokens

    settings = {k: v for k, v in options.items() if k != "toc_depth"}
    body = convert.nb2html(abs_src_path, **settings)
    toc_tokens, title = _get_nb_toc_tokens(abs_src_path, options["toc_depth"])
    return {"content": body, "toc_tokens": toc_tokens, "title": title}


def _toc_items(items) -> list:
    return [[item.title, item.id, item.url, item.level, _toc_items(item.children)] for item in items]


def search_request(page, indexer: str) -> dict:
    """What Material's search plugin reads of a page to index it: its HTML, TOC, URL, title and front matter
    (``indexer`` names the plugin's version). Its entries are cached by this: a page MkDocs rebuilt with the
    same HTML is not parsed again."""
    meta = {key: page.meta.get(key) for key in ("search", "tags", "title")}
    return {"content_sha256": hashlib.sha256((page.content or "").encode("utf-8")).hexdigest(),
            "url": page.url, "title": str(page.title), "toc": _toc_items(page.toc or []), "meta": meta,
            "indexer": indexer}


def cached_search_entries(index, original, digests: build_cache.Digests, page) -> None:
    """``SearchIndex.add_entry_from_context`` through the build cache: the entries a page adds to the index."""
    import time

    from material import __version__ as material_version

    request = search_request(page, f"material {material_version}")
    entry_key = key("search", request, digests)
    entries = build_cache.load("search", entry_key)
    if entries is not None:
        index.entries.extend(entries)
        return
    started, before = time.perf_counter(), len(index.entries)
    original(page)
    build_cache.store("search", entry_key, request, index.entries[before:], time.perf_counter() - started)
