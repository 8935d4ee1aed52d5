"""Each built page parsed once per test process, whichever site test asks first.

Parsing the site's 45 pages with BeautifulSoup takes about 5 CPU s; test_built_site alone read them five times.
The parse is kept while the file is unchanged (its path, size and modification time); the tests only read the
tree (select, find_all, get_text), never change it.

>>> import tempfile
>>> path = os.path.join(tempfile.mkdtemp(), "page.html")
>>> _ = open(path, "w").write("<p id=a>one</p>")
>>> parsed(path) is parsed(path), parsed(path).get_text()
(True, 'one')
"""

from __future__ import annotations

import functools
import os

from bs4 import BeautifulSoup


def parsed(path: str) -> BeautifulSoup:
    """The page at ``path`` parsed (html.parser), from the last parse while the file is unchanged."""
    stat = os.stat(path)
    return _parse(os.path.realpath(path), stat.st_size, stat.st_mtime_ns)


@functools.lru_cache(maxsize=None)
def _parse(path: str, size: int, mtime_ns: int) -> BeautifulSoup:
    with open(path, encoding="utf-8") as handle:
        return BeautifulSoup(handle.read(), "html.parser")
