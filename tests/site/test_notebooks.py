"""The deep dives' notebooks in the built site: executed at build, their numbers equal the pages', nothing from a CDN.

Each notebook (``docs/deep-dives/notebooks/<name>.py``, jupytext) ends by printing
one line ``PAGE_NUMBERS {json}``: figures it computed from ``calc`` on its own,
keyed by the names of the page module's facts. The line can only be in the built
page if the notebook ran; each value must equal the fact the page's prose shows.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from bs4 import BeautifulSoup

from tests.site.built_facts import built_facts

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
DOCS = os.path.join(ROOT, "docs", "deep-dives")
NOTEBOOKS = sorted(name[:-3] for name in os.listdir(os.path.join(DOCS, "notebooks")) if name.endswith(".py"))
MARKER = "PAGE_NUMBERS "
REMOTE = re.compile(r"<(?:script|img|iframe|link(?![^>]*rel=\"(?:canonical|alternate|prev|next)\")|source)\b[^>]*"
                    r"\b(?:src|href)=[\"'](?:https?:)?//(?!127\.0\.0\.1)", re.IGNORECASE)

pytestmark = pytest.mark.site


def built(*parts) -> str:
    path = os.path.join(SITE, *parts)
    if not os.path.exists(os.path.join(SITE, "index.html")):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    assert os.path.exists(path), f"{os.path.relpath(path, SITE)} is missing from the built site"
    with open(path, encoding="utf-8") as handle:
        return handle.read()


def page_module(name: str) -> str:
    with open(os.path.join(DOCS, f"{name}.md"), encoding="utf-8") as handle:
        source = handle.read()
    match = re.search(r"^calc_module:\s*(\S+)\s*$", source.split("---", 2)[1], re.MULTILINE)
    assert match, f"docs/deep-dives/{name}.md names no calc_module"
    return match.group(1)


def page_numbers(html: str) -> dict:
    soup = BeautifulSoup(html, "html.parser")
    lines = [line for output in soup.select(".jp-OutputArea-output")
             for line in output.get_text().splitlines() if line.startswith(MARKER)]
    assert len(lines) == 1, "the notebook did not run at build (no PAGE_NUMBERS line among its outputs)"
    return json.loads(lines[0][len(MARKER):])


def test_every_deep_dive_has_a_notebook():
    pages = sorted(name[:-3] for name in os.listdir(DOCS) if name.endswith(".md") and name != "index.md")
    assert NOTEBOOKS == pages


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_ran_and_its_numbers_are_the_pages(name):
    html = built("deep-dives", "notebooks", name, "index.html")
    numbers = page_numbers(html)
    assert len(numbers) >= 10, "the notebook checks too few of the page's numbers"
    facts = built_facts(page_module(name))  # as the build filled them in (the build cache's)
    with open(os.path.join(DOCS, f"{name}.md"), encoding="utf-8") as handle:
        source = handle.read()
    page_text = BeautifulSoup(built("deep-dives", name, "index.html"), "html.parser").get_text()
    for key, value in numbers.items():
        assert key in facts, f"{name}: the notebook prints {key}, which the page module does not have"
        assert value == facts[key], f"{name}: {key} is {value!r} in the notebook, {facts[key]!r} on the page"
        if re.search(r"\{\{\s*" + key + r"\s*\}\}", source):
            assert value in page_text, f"{name}: {key} = {value!r} is not on the built page"
    # Every cell ran, in order, and none failed.
    soup = BeautifulSoup(html, "html.parser")
    prompts = [p.get_text().strip() for p in soup.select(".jp-CodeCell .jp-InputPrompt")]
    counts = [re.fullmatch(r"In\s*\[(\d+)\]:", p) for p in prompts]
    assert counts and all(counts), f"{name}: a code cell did not run: {prompts}"
    assert [int(c.group(1)) for c in counts] == list(range(1, len(counts) + 1))
    assert not soup.select(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']")
    assert "Traceback" not in soup.get_text()


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_downloads_and_page_links(name):
    html = built("deep-dives", "notebooks", name, "index.html")
    notebook = json.loads(built("deep-dives", "notebooks", name, f"{name}.ipynb"))
    assert notebook["nbformat"] == 4 and notebook["metadata"]["kernelspec"]["name"] == "python3"
    code = "".join("".join(cell["source"]) for cell in notebook["cells"] if cell["cell_type"] == "code")
    assert "import calc" in code or "from calc" in code
    assert built("deep-dives", "notebooks", name, f"{name}.py").startswith("# ---")
    soup = BeautifulSoup(html, "html.parser")
    bar = soup.select_one("[data-notebook-downloads]")
    hrefs = [a["href"] for a in bar.select("a")]
    assert f"{name}.ipynb" in hrefs and f"{name}.py" in hrefs and "../../" + name + "/" in hrefs
    # The deep-dive page links to its notebook.
    page = BeautifulSoup(built("deep-dives", name, "index.html"), "html.parser")
    assert page.select_one(f'a[href="../notebooks/{name}/"]') is not None


@pytest.mark.parametrize("name", NOTEBOOKS)
def test_notebook_pages_load_nothing_from_a_cdn(name):
    html = built("deep-dives", "notebooks", name, "index.html")
    assert REMOTE.findall(html) == []
    for needle in ("cdnjs", "cdn.jsdelivr", "mathjax", "require.js", "mermaid", 'src=""'):
        assert needle not in html.lower(), f"{name}: {needle} in the notebook page"
    sheet = BeautifulSoup(html, "html.parser").select_one('link[rel="stylesheet"][href*="assets/notebooks/"]')
    assert sheet is not None
    css = os.path.normpath(os.path.join(SITE, "deep-dives", "notebooks", name, sheet["href"]))
    assert os.path.exists(css) and os.path.getsize(css) > 100_000  # nbconvert's JupyterLab styles, shared
    assert "<style" not in html.split('class="md-content"', 1)[1], "inline notebook CSS left in the page"


def test_deep_dive_pages_render_every_block():
    for name in NOTEBOOKS + ["index"]:
        page = BeautifulSoup(built("deep-dives", *([name] if name != "index" else []), "index.html"), "html.parser")
        text = page.select_one("article").get_text()
        assert "///" not in text, f"deep-dives/{name}: a widget block was left as text"
        assert name == "index" or page.select("[data-widget]"), f"deep-dives/{name}: no live widget"
