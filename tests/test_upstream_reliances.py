"""Where the build reaches into another project's internals (CONTRIBUTING.md, "Where the build reaches into other
projects"), each test here holds the upstream behaviour it relies on, so that an upgrade that changes it fails
here, by name, instead of quietly changing the site."""

from __future__ import annotations

import inspect
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "hooks"))

import build_cache  # noqa: E402 (hooks/, on the path above)
import entries  # noqa: E402
import site_hooks  # noqa: E402


class _Page:
    """What Material's search index reads of a page."""

    def __init__(self, content: str):
        from mkdocs.structure.toc import get_toc

        self.content, self.url, self.title, self.meta = content, "kv/", "KV", {}
        self.toc = get_toc([{"level": 2, "id": "why", "name": "Why", "children": []}])


def test_material_search_index_adds_a_pages_entries_from_its_context(tmp_path, monkeypatch):
    """The search cache replaces SearchIndex.add_entry_from_context(page): it must append the page's entries to
    ``.entries`` and read only what search_request keys (content, TOC, URL, title, front matter)."""
    from material.plugins.search.plugin import SearchIndex

    assert list(inspect.signature(SearchIndex.add_entry_from_context).parameters) == ["self", "page"]
    monkeypatch.setenv("CALC_BUILD_CACHE_DIR", str(tmp_path))
    page = _Page('<h2 id="why">Why</h2><p>Keys and values, per token.</p>')
    plain = SearchIndex(lang=["en"], separator=r"[\s\-]+", pipeline=["stemmer"])
    plain.add_entry_from_context(page)
    assert plain.entries and "per token" in plain.entries[-1]["text"]
    digests = build_cache.project_digests()
    for _ in range(2):  # computed and stored, then read back
        cached = SearchIndex(lang=["en"], separator=r"[\s\-]+", pipeline=["stemmer"])
        entries.cached_search_entries(cached, cached.add_entry_from_context, digests, page)
        assert cached.entries == plain.entries
    source = inspect.getsource(SearchIndex.add_entry_from_context) + inspect.getsource(
        SearchIndex.create_entry_for_section)
    read = set(re.findall(r"page\.(\w+)", source))
    assert read <= {"meta", "content", "toc", "url", "title"}, read


def test_mkdocs_jupyter_renders_a_notebook_through_page_render_and_its_toc_function():
    """on_pre_page rebinds a notebook page's ``render`` after mkdocs-jupyter's on_pre_page has set its own, and
    the cached execution calls its private ``_get_nb_toc_tokens``; notebook_options restates the options its
    on_pre_page reads."""
    from mkdocs_jupyter import plugin

    source = inspect.getsource(plugin.Plugin.on_pre_page)
    assert "page.render" in source
    assert list(inspect.signature(plugin._get_nb_toc_tokens).parameters) == ["fpath", "toc_depth"]
    read = set(re.findall(r'self\.config\["(\w+)"\]', source))
    ours = set(entries.notebook_options({**{k: None for k in read}, "execute": True, "execute_ignore": []},
                                        "x.py")) | {"execute_ignore", "cache", "cache_dir", "ignore_h1_titles",
                                                    "data_files"}  # read apart; data_files: the page's, not the render's
    assert read <= ours, read - ours


def test_the_nav_item_override_is_materials_partial_with_one_line_changed():
    """overrides/partials/nav-item.html is Material's own partial, but for its header comment and the one label that
    gets ``aria-label``: after an upgrade of Material this fails until the override is copied from it again."""
    import material

    upstream_path = os.path.join(os.path.dirname(material.__file__), "templates", "partials", "nav-item.html")
    with open(upstream_path, encoding="utf-8") as handle:
        upstream = handle.read()
    with open(os.path.join(ROOT, "overrides", "partials", "nav-item.html"), encoding="utf-8") as handle:
        override = handle.read()
    body = override[override.index("-#}\n") + 4:]
    label = 'id="{{ path }}_label" tabindex="{{ tabindex }}">'
    changed = [line for line in upstream.splitlines() if label in line and "{{ class }}" in line]
    assert len(changed) == 1, changed
    assert body == upstream.replace(changed[0], changed[0][:-1] + ' aria-label="{{ nav_item.title | e }}">')


def test_mkdocs_dirty_build_redoes_a_page_whose_file_says_it_is_modified():
    """site_hooks._redo has `make serve` redo a page by its File's is_modified(), which MkDocs' dirty build asks
    before reading and before writing a page; site_hooks._DirtyNotice softens the warning MkDocs logs."""
    from mkdocs.commands import build

    for function in (build._populate_page, build._build_page):
        assert "dirty and not page.file.is_modified()" in inspect.getsource(function)
    assert site_hooks.DIRTY_WARNING in inspect.getsource(build.build)


@pytest.mark.parametrize("name", ["on_startup"])
def test_mkdocs_keeps_a_hook_module_across_serve_rebuilds(name):
    """site_hooks keeps what on_startup says (the command, dirty) in the module: MkDocs loads a hook once per
    process (its loader is cached), and calls on_startup once per command."""
    from mkdocs.config import config_options

    assert hasattr(config_options.Hooks._load_hook, "cache_info")  # functools.lru_cache
    assert callable(getattr(site_hooks, name))
