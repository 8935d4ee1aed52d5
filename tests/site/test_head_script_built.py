"""The built pages carry the boot's head script as the build minified it (hooks/head_script.py, inlined by
overrides/main.html), with its hash in the site's CSP and the build's runtime files in its data-calc-boot; pages
without a widget carry none."""

from __future__ import annotations

import base64
import hashlib
import html
import json
import os
import re
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))
sys.path.insert(0, os.path.join(ROOT, "hooks"))
import head_script  # noqa: E402

pytestmark = pytest.mark.site

HEAD_SCRIPT = re.compile(r'<script data-calc-worker="[^"]*" data-calc-helper="[^"]*" data-calc-boot="([^"]*)">(.*?)</script>',
                         re.DOTALL)
POLICY = re.compile(r'<meta http-equiv="Content-Security-Policy" content="([^"]*)">')


def _page(relative: str) -> str:
    path = os.path.join(SITE, relative, "index.html")
    if not os.path.exists(path):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def test_a_widget_page_inlines_the_minified_head_script_that_the_policy_admits():
    page = _page("lesson/02-kv-cache-arithmetic")
    (boot, text), = HEAD_SCRIPT.findall(page)
    assert text == head_script.head_script(ROOT)
    digest = base64.b64encode(hashlib.sha256(text.encode("utf-8")).digest()).decode()
    assert f"'sha256-{digest}'" in POLICY.search(page).group(1).split()
    # In the head, before the theme's stylesheets (an inline script after one waits for it).
    head = page[:page.index("</head>")]
    assert head.index("data-calc-worker=") < head.index('rel="stylesheet"')
    with open(os.path.join(SITE, "assets", "runtime", "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    assert json.loads(html.unescape(boot)) == {key: manifest[key] for key in
                                               ("calc_zip", "pyodide_snapshot", "pyodide_snapshot_bytes")}


def test_the_head_script_is_on_the_pages_with_a_widget_and_only_there():
    with_script = without = 0
    for folder, _, names in os.walk(SITE):
        for name in names:
            if name.endswith(".html"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    page = handle.read()
                assert ("data-calc-worker=" in page) == ("data-widget=" in page), os.path.join(folder, name)
                with_script += "data-calc-worker=" in page
                without += "data-calc-worker=" not in page
    assert with_script > 20 and without > 0  # the lesson's steps; the home page, the glossary, ...


def test_materials_search_worker_and_box_are_where_the_stand_in_looks():
    """The head script holds back Material's search worker by its address and releases it on a focus of the
    search box: both must match what this Material builds (docs/assets/runtime/head.js: SEARCH_WORKER,
    SEARCH_INPUT)."""
    with open(os.path.join(ROOT, head_script.SOURCE), encoding="utf-8") as handle:
        source = handle.read()
    pattern = re.search(r"const SEARCH_WORKER = /(.+)/;", source).group(1).replace("\\/", "/")
    selector = re.search(r'const SEARCH_INPUT = "input\.([\w-]+)";', source).group(1)
    workers = os.listdir(os.path.join(SITE, "assets", "javascripts", "workers"))
    assert [name for name in workers if re.search(pattern, "/workers/" + name)], workers
    page = _page("lesson/02-kv-cache-arithmetic")
    assert re.search(rf'<input[^>]*class="{selector}"', page)
    # Material's bundle names the search worker's address in the page's config, as the stand-in expects.
    config = re.search(r'<script id="__config" type="application/json">(.*?)</script>', page, re.DOTALL)
    assert re.search(pattern, "/" + json.loads(config.group(1))["search"]), config.group(1)[:200]
