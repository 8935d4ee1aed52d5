"""The page scan, and the Markdown extension of the calc blocks (the one module that registers them).

Before MkDocs renders a page, :func:`scan` reads every page for ``{{ fact }}`` names and for blocks
(``/// <kind> |`` for every kind of :data:`kinds.BLOCK_KINDS`), and lists the notebooks: the entries the build
will ask for, so :mod:`prefetch` can compute the missing ones in parallel. A page's blocks are read by the
site's own Markdown, this extension in collecting mode, so a block's options are parsed exactly as the build
parses them; the result is a build-cache entry of kind ``scan`` keyed on the page's text (a prose edit rescans
the edited page only).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import logging
import re
import time

from pymdownx.blocks import BlocksExtension

import build_cache
import entries
import facts
from kinds import BLOCK_KINDS

log = logging.getLogger("mkdocs.hooks.scan")
BLOCK_START = re.compile(rf"^\s*/{{3,}}\s*({'|'.join(map(re.escape, BLOCK_KINDS))})\s*\|", re.MULTILINE)


class CalcBlocksExtension(BlocksExtension):
    """Every kind's block (named after its kind, the replica's change among them). In the build each block asks
    ``values(kind, request)`` and numbers widgets with ``next_uid()``; with ``collect`` it records its request.
    Given neither (a test's Markdown), each block is computed on the spot, widgets numbered from ``w1``."""

    def __init__(self, *args, values=None, next_uid=None, collect: list | None = None, **kwargs):
        if values is None and collect is None:
            values = lambda kind, request: entries.compute(kind, request, {})  # noqa: E731
        if next_uid is None:
            numbers = itertools.count(1)
            next_uid = lambda: f"w{next(numbers)}"  # noqa: E731
        self.block_config = {"values": values, "next_uid": next_uid, "collect": collect}
        super().__init__(*args, **kwargs)

    def extendMarkdownBlocks(self, md, block_mgr) -> None:
        for kind, row in BLOCK_KINDS.items():
            block_mgr.register(type(f"{kind.title()}Block", (row.block,), {"NAME": kind}), self.block_config)


def page_blocks(markdown_text: str, config) -> list[tuple[str, dict]]:
    """The blocks of a page as (kind, request), parsed by the site's Markdown with a collecting extension."""
    import markdown as markdown_module

    found: list[tuple[str, dict]] = []
    extensions = [CalcBlocksExtension(collect=found) if isinstance(e, CalcBlocksExtension) else e
                  for e in config.markdown_extensions]
    try:
        markdown_module.Markdown(extensions=extensions, extension_configs=config.mdx_configs).convert(markdown_text)
    except Exception as error:  # the real build reports it, on its page
        log.debug("scan of a page's blocks failed: %s", error)
    return found


def scanned_blocks(body: str, config, digests: build_cache.Digests) -> list:
    """The blocks of a page's text, from the cache while the text, the hooks and calc are unchanged."""
    request = {"text_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}
    key = entries.key("scan", request, digests)
    found = build_cache.load("scan", key)
    if found is None:
        started = time.perf_counter()
        found = page_blocks(body, config)
        build_cache.store("scan", key, request, found, time.perf_counter() - started)
        found = json.loads(json.dumps(found, default=repr))  # as a later build reads it back
    return found


def scan(files, config, digests: build_cache.Digests) -> tuple[list, dict]:
    """Every entry the pages will ask for, as (kind, request, job details), and the pages that use each
    (``(kind, request text) -> set of files``: a dirty rebuild under ``make serve`` redoes those whose entries
    changed)."""
    from mkdocs.utils.meta import get_data

    jobs: list[tuple[str, object, dict]] = []
    users: dict[tuple[str, str], set] = {}

    def add(file, kind, request, job=None):
        marker = (kind, build_cache.request_text(request))
        if marker not in users:
            users[marker] = set()
            jobs.append((kind, request, job or {}))
        users[marker].add(file)

    plugin = config.plugins.get("mkdocs-jupyter")
    for file in files.documentation_pages():
        if plugin is not None and plugin.should_include(file):
            options = entries.notebook_options(plugin.config, file.abs_src_path)
            add(file, "notebook", entries.notebook_request(file.src_uri, file.abs_src_path, options),
                {"abs_src_path": file.abs_src_path})
            continue
        if not file.src_uri.endswith(".md"):
            continue
        with open(file.abs_src_path, encoding="utf-8-sig") as handle:
            body, meta = get_data(handle.read())
        own_module = facts.page_module(file.src_uri, meta)
        for request in facts.requests(body, own_module):
            add(file, "facts", request)
        if BLOCK_START.search(body):
            for kind, request in scanned_blocks(body, config, digests):
                add(file, kind, request)
    return jobs, users
