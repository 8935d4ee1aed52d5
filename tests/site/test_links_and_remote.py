"""Every internal link and anchor of the built site resolves, and no file loads anything from elsewhere.

Reads site/ only (no browser). Pages, scripts and stylesheets added later are
covered without new code.
"""

from __future__ import annotations

import os
import re
import urllib.parse

import pytest

from tests.site.parsed import parsed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build

pytestmark = pytest.mark.site

# Constructs that fetch what they name. A URL in a string that nothing loads (a link, a licence) is not one.
REMOTE_IN_JS = re.compile(
    r"""(?:importScripts|import|fetch|new\s+(?:Shared)?Worker|serviceWorker\.register|loadScript)\s*\(\s*['"`](?:https?:)?//""")
REMOTE_STATIC_IMPORT = re.compile(r"""^\s*import\s[^;]*?from\s*['"](?:https?:)?//""", re.MULTILINE)
REMOTE_IN_CSS = re.compile(r"""(?:url\(\s*['"]?|@import\s+['"])(?:https?:)?//""", re.IGNORECASE)


def site_files(*suffixes):
    if not os.path.exists(os.path.join(SITE, "index.html")):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    for folder, _, files in os.walk(SITE):
        for name in files:
            if name.endswith(suffixes):
                yield os.path.join(folder, name)


_ids: dict[str, set[str]] = {}


def ids_of(path: str) -> set[str]:
    if path not in _ids:
        page = parsed(path)
        _ids[path] = {tag["id"] for tag in page.find_all(id=True)} | {tag["name"] for tag in page.find_all("a", attrs={"name": True})}
    return _ids[path]


def target_file(page_path: str, href: str) -> str | None:
    url = urllib.parse.urlparse(href)
    base = SITE if url.path.startswith("/") else os.path.dirname(page_path)  # 404.html links from the site's root
    path = os.path.normpath(os.path.join(base, urllib.parse.unquote(url.path).lstrip("/"))) if url.path else page_path
    if os.path.isdir(path):
        path = os.path.join(path, "index.html")
    return path if os.path.isfile(path) else None


def test_every_internal_link_and_anchor_resolves():
    broken = []
    for page_path in site_files(".html"):
        page = parsed(page_path)
        for link in page.find_all("a", href=True):
            href = link["href"]
            scheme = urllib.parse.urlparse(href).scheme
            if scheme or href.startswith(("//", "mailto:", "javascript:")):
                continue
            target = target_file(page_path, href)
            relative = os.path.relpath(page_path, SITE)
            if target is None:
                broken.append(f"{relative}: {href} (no such file)")
                continue
            fragment = urllib.parse.urlparse(href).fragment
            if fragment and target.endswith(".html") and urllib.parse.unquote(fragment) not in ids_of(target):
                broken.append(f"{relative}: {href} (no anchor #{fragment})")
    assert broken == []


def test_no_script_or_stylesheet_loads_a_remote_resource():
    offenders = []
    for path in site_files(".js", ".mjs"):
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        for pattern in (REMOTE_IN_JS, REMOTE_STATIC_IMPORT):
            offenders += [f"{os.path.relpath(path, SITE)}: {m.group(0)[:80]}" for m in pattern.finditer(text)]
    for path in site_files(".css"):
        with open(path, encoding="utf-8", errors="replace") as handle:
            text = handle.read()
        offenders += [f"{os.path.relpath(path, SITE)}: {m.group(0)[:80]}" for m in REMOTE_IN_CSS.finditer(text)]
    assert offenders == []


def test_the_scan_would_catch_what_it_looks_for():
    assert REMOTE_IN_JS.search('importScripts("https://cdn.example/x.js")')
    assert REMOTE_IN_JS.search("fetch(`//cdn.example/y`)")
    assert REMOTE_STATIC_IMPORT.search('import { a } from "https://cdn.example/m.mjs";')
    assert REMOTE_IN_CSS.search("@font-face { src: url(https://fonts.example/f.woff2) }")
    assert not REMOTE_IN_JS.search('const licence = "https://opensource.org/licenses/MIT";')
