"""The built site: every pre-rendered number is calc's, the runtime is vendored, nothing loads from elsewhere.

These tests read site/ (``make build``; ``make test`` builds first). They find every
widget in every page, so pages added later are covered without new code.
"""

from __future__ import annotations

import gzip
import json
import os
import re
import sys
import zipfile

import pytest

from calc.widgets import framework
from tests.site.parsed import parsed

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
sys.path.insert(0, os.path.join(ROOT, "hooks"))
from vendor import RUNTIME_FILES, SNAPSHOT_MAGIC, calc_zip_bytes, snapshot_layout, snapshot_name  # noqa: E402

pytestmark = pytest.mark.site


def snapshot_memory(stored: bytes) -> bytes:
    """The memory an unpacked sparse snapshot (hooks/pyodide_snapshot.mjs) stands for: its stored pages at their
    places, zeros elsewhere (a decoder for the test below; the browser's is docs/assets/runtime/boot-inflate.mjs).

    >>> page = 4096
    >>> stored = (SNAPSHOT_MAGIC + (2 * page + 10).to_bytes(4, "little") + page.to_bytes(4, "little")
    ...           + bytes([0b101]) + b"a" * page + b"c" * 10)  # pages 0 and 2 stored, page 1 zeros
    >>> memory = snapshot_memory(stored)
    >>> len(memory), memory[0:1], memory[page:page + 1], memory[-1:]
    (8202, b'a', b'\\x00', b'c')
    """
    memory_bytes, page_bytes = snapshot_layout(stored[:16])
    pages = -(-memory_bytes // page_bytes)
    bitmap = stored[16:16 + -(-pages // 8)]
    memory = bytearray(memory_bytes)
    at = 16 + len(bitmap)
    for page in range(pages):
        if bitmap[page >> 3] >> (page & 7) & 1:
            size = min(page_bytes, memory_bytes - page * page_bytes)
            memory[page * page_bytes:page * page_bytes + size] = stored[at:at + size]
            at += size
    if at != len(stored):
        raise ValueError(f"sparse Pyodide snapshot: {len(stored)} bytes, its bitmap says {at}")
    return bytes(memory)


def pages():
    if not os.path.exists(os.path.join(SITE, "index.html")):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    for folder, _, files in os.walk(SITE):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                yield os.path.relpath(path, SITE), path


def soup(path):
    return parsed(path)  # one parse per page per test process (tests/site/parsed.py)


def form_values(widget) -> dict:
    values = {}
    for element in widget.select("form [name]"):
        name = element["name"]
        if element.name == "select":
            chosen = element.find("option", selected=True) or element.find("option")
            values[name] = chosen["value"]
        elif element.name == "textarea":
            values[name] = element.text
        elif element.get("type") == "checkbox":
            values[name] = element.has_attr("checked")
        else:
            values[name] = element.get("value", "")
    return values


def all_widgets():
    found = []
    for relative, path in pages():
        for element in soup(path).select("[data-widget]"):
            found.append((relative, element))
    return found


def test_the_site_has_widgets():
    kinds = {element["data-kind"] for _, element in all_widgets()}
    assert {"widget", "drill"} <= kinds


def test_every_prerendered_widget_shows_what_calc_computes():
    checked = 0
    for relative, element in all_widgets():
        if element["data-kind"] != "widget":
            continue
        expected = framework.call(element["data-widget"], form_values(element))
        for key, item in expected["outputs"].items():
            shown = element.select_one(f'[data-output="{key}"]')
            assert shown is not None, f"{relative}: output {key} missing"
            assert shown.get_text() == item["text"], f"{relative}: {element['data-widget']} output {key}"
        for key, figure in expected["figures"].items():
            holder = element.select_one(f'[data-chart="{key}"]')
            assert json.loads(holder["data-figure"]) == figure, f"{relative}: figure {key}"
        checked += 1
    assert checked >= 1


def test_every_drill_shows_its_seed_question():
    for relative, element in all_widgets():
        if element["data-kind"] == "drill":
            entry = framework.get(element["data-widget"])
            question = framework.check_view(entry.function(seed=int(element["data-seed"])))
            assert element.select_one('[data-output="question"]').get_text() == question["question"]


def test_widgets_follow_the_contract():
    for relative, element in all_widgets():
        assert element["data-state"] == "static", relative
        assert element.select_one("[data-error]") is not None, relative
        for control in element.select("form input, form select, form textarea"):
            if control.get("type") == "hidden":
                continue
            label = element.select_one(f'label[for="{control.get("id")}"]')
            assert label is not None and label.get_text().strip(), f"{relative}: control {control.get('name')} unlabelled"


def test_no_unfilled_facts_remain():
    for relative, path in pages():
        text = soup(path).get_text()
        assert not re.search(r"\{\{\s*[a-z0-9_:]+\s*\}\}", text), f"{relative} has an unfilled fact"


def test_runtime_is_vendored_with_the_calc_zip_of_these_sources():
    for package, items, destination in RUNTIME_FILES:
        for item in items:
            assert os.path.exists(os.path.join(SITE, "assets", "vendor", destination, os.path.basename(item))), item
    with open(os.path.join(SITE, "assets", "runtime", "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    with open(os.path.join(SITE, "assets", "runtime", manifest["calc_zip"]), "rb") as handle:
        shipped = handle.read()
    assert shipped == calc_zip_bytes(ROOT), "the site's calc zip is stale: rebuild"
    names = zipfile.ZipFile(os.path.join(SITE, "assets", "runtime", manifest["calc_zip"])).namelist()
    assert "calc/widgets/runtime.py" in names and not any("__pycache__" in n for n in names)


def test_the_pyodide_snapshot_fits_this_pyodide_and_this_calc_zip():
    runtime_dir = os.path.join(SITE, "assets", "runtime")
    with open(os.path.join(runtime_dir, "manifest.json"), encoding="utf-8") as handle:
        manifest = json.load(handle)
    assert manifest["pyodide_snapshot"] == snapshot_name(
        os.path.join(ROOT, "node_modules", "pyodide"), os.path.join(runtime_dir, manifest["calc_zip"]),
        manifest["pyodide_version"]), "the site's Pyodide snapshot was made from other files: rebuild"
    snapshots = [name for name in os.listdir(runtime_dir) if name.endswith(".snapshot")]
    assert snapshots == [manifest["pyodide_snapshot"]], "only this build's snapshot is shipped"
    with open(os.path.join(runtime_dir, manifest["pyodide_snapshot"]), "rb") as handle:
        memory = snapshot_memory(gzip.decompress(handle.read()))  # sparse: its zero pages left out
    assert len(memory) == manifest["pyodide_snapshot_bytes"] > 16 * 2**20  # CPython's heap is more than 16 MiB
    assert memory.count(0) < len(memory) * 0.9, "a snapshot of (nearly) nothing but zeros"


REMOTE = re.compile(r"^(https?:)?//", re.IGNORECASE)


def test_no_page_loads_a_remote_resource():
    offenders = []
    for relative, path in pages():
        page = soup(path)
        for tag, attribute in (("script", "src"), ("img", "src"), ("iframe", "src"), ("link", "href"),
                               ("source", "src"), ("video", "src"), ("audio", "src")):
            for element in page.find_all(tag):
                value = element.get(attribute, "")
                if tag == "link" and not set(element.get("rel", [])) & {"stylesheet", "preload", "modulepreload",
                                                                         "icon", "manifest", "prefetch"}:
                    continue  # canonical and alternate links are never fetched
                if REMOTE.match(value) and not value.startswith(("http://127.0.0.1", "//127.0.0.1")):
                    offenders.append(f"{relative}: <{tag} {attribute}={value}>")
    assert offenders == []


def test_no_block_was_left_as_text():
    """A block whose options pymdownx could not read is left as plain text: the page would ship without its widget."""
    for relative, path in pages():
        text = soup(path).get_text()
        for marker in ("/// widget", "/// drill", "/// simulation"):
            assert marker not in text, f"{relative}: a '{marker}' block did not render"


def test_the_sitemap_is_dated_by_the_last_commit_not_the_clock():
    """Every page's `lastmod` is the day of the last commit (hooks/site_hooks.py sets SOURCE_DATE_EPOCH from
    git), so two builds of one commit give the same sitemap even either side of midnight."""
    import datetime
    import subprocess

    try:
        seconds = subprocess.run(["git", "log", "-1", "--format=%ct"], cwd=ROOT, capture_output=True, text=True,
                                 check=True).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        pytest.skip("not a git checkout")
    commit_day = datetime.datetime.fromtimestamp(int(seconds), datetime.timezone.utc).strftime("%Y-%m-%d")
    with open(os.path.join(SITE, "sitemap.xml"), encoding="utf-8") as handle:
        days = set(re.findall(r"<lastmod>([^<]+)</lastmod>", handle.read()))
    assert days == {commit_day}, f"sitemap dated {sorted(days)}, the last commit {commit_day}: run `make build`"
