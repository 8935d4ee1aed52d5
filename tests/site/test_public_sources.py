"""No built page cites a file its reader cannot open (the project's working notes, ``../shared``).

Sources shown on pages (a GPU's datasheet, a price listing, a measurement's paper) come from calc's strings,
checked at their origin by ``tests/test_public_sources.py``; this reads every page and file of the built site,
so that prose, notebooks and widget views are covered too.
"""

from __future__ import annotations

import os

import pytest

from tests.test_public_sources import private_pointer

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
TEXT_FILES = (".html", ".json", ".ipynb", ".txt", ".xml")

pytestmark = pytest.mark.site


def test_no_built_page_cites_a_private_note():
    if not os.path.exists(os.path.join(SITE, "index.html")):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    found, read = [], 0
    for folder, _, files in os.walk(SITE):
        for name in files:
            if not name.endswith(TEXT_FILES):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read()
            read += 1
            needle = private_pointer(text)
            if needle:
                at = text.index(needle)
                found.append(f"{os.path.relpath(path, SITE)}: ...{text[max(0, at - 80):at + 20]}...")
    assert read > 40, f"only {read} text files in {SITE}: is the build complete?"
    assert not found, "pages cite files readers cannot open:\n" + "\n".join(found[:20])
