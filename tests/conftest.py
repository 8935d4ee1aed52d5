"""Shared pytest set-up: the package on sys.path (pyproject.toml), and the longest test groups first.

Under ``pytest -n 2 --dist loadgroup`` (``make test``) the workers take groups in collection order; a long
group taken last leaves one worker running it alone at the end. So the groups that take minutes (the
Pyodide parity runs, the cold = warm build, the crawl of every page) are collected first.
"""

from __future__ import annotations

import pytest

# Before the plugin below imports the browser helpers, so their asserts explain themselves like a test's.
pytest.register_assert_rewrite("tests.browser.helpers")
# tests.browser_cache: passes of browser tests reused while their code and the site's sources are unchanged; tests.once: a module's
# expensive shared value computed on first use, on one worker.
pytest_plugins = ["tests.browser_cache", "tests.once"]

#: xdist groups that take minutes, started first (the crawl's group is per file: tests/browser/conftest.py).
LONG_GROUPS = ("pyodide_doctests", "pyodide_widgets", "pyodide", "build_cache_cold_warm")
LONG_FILES = ("test_crawl.py",)


def _is_long(item) -> bool:
    groups = {(mark.args or [mark.kwargs.get("name")])[0] for mark in item.iter_markers("xdist_group")}
    return bool(groups & set(LONG_GROUPS)) or (bool(groups) and item.path.name in LONG_FILES) or \
        any(group.startswith("once-") for group in groups)  # a module's shared value (tests/once.py): latency_fit's ~49 s


@pytest.hookimpl(trylast=True)  # after the groups are set (tests/browser/conftest.py), before xdist's own hook
def pytest_collection_modifyitems(config, items):
    items.sort(key=lambda item: 0 if _is_long(item) else 1)  # stable: the order within each part is kept
