"""CONTRIBUTING.md's "Add a page with a widget" and "Add a block kind" work verbatim: follow each in a copy of the
repository, build, look.

The recipe's steps are read from CONTRIBUTING.md itself, so that the test breaks when the recipe and the code
drift: a fenced block after ``<!-- recipe-file: PATH -->`` is written to PATH, the YAML after
``<!-- recipe-nav -->`` is appended to ``nav:`` in ``mkdocs.yml``, the line after ``<!-- recipe-row: PATH -->`` is
added as the last row of the table in PATH (``hooks/kinds.py``'s ``BLOCK_KINDS``), and every line of the console block after
``<!-- recipe-run -->`` is run (``.venv/bin/python`` is the interpreter running this test). The copy holds
the files git tracks (no ``.venv``; ``node_modules`` is linked, Pyodide is vendored from it).

Then ``mkdocs build --strict`` builds the new page with the repository's own configuration, hooks and
theme. To stay within seconds, not a minute, the build's nav is the recipe's entries only and the other
pages are excluded (``exclude_docs``, through a config that ``INHERIT``s ``mkdocs.yml``), and the Pyodide
memory snapshot is skipped; the patched ``mkdocs.yml`` is checked to list the page.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import zipfile

import pytest
import yaml
from bs4 import BeautifulSoup

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MARKER = re.compile(r"^<!-- recipe-(file|nav|run|row)(?::\s*(\S+))?\s*-->\s*\n```[a-z]*\n(.*?)^```", re.MULTILINE | re.DOTALL)

pytestmark = pytest.mark.site


def recipe_steps(text: str) -> list[tuple[str, str | None, str]]:
    """The recipe's steps in order: ``(kind, path, body)`` for each marked code block of CONTRIBUTING.md.

    >>> recipe_steps("<!-- recipe-file: a.py -->\\n```python\\nx = 1\\n```\\n<!-- recipe-run -->\\n```console\\nls\\n```\\n")
    [('file', 'a.py', 'x = 1\\n'), ('run', None, 'ls\\n')]
    """
    return [(kind, path or None, body) for kind, path, body in MARKER.findall(text)]


def recipe_section(title: str = "### Add a page with a widget") -> str:
    with open(os.path.join(ROOT, "CONTRIBUTING.md"), encoding="utf-8") as handle:
        text = handle.read()
    start = text.index(title)
    end = text.index("\n### ", start + 1)
    return text[start:end]


def copy_repository(target: str) -> None:
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, check=True, capture_output=True).stdout
    for name in files.decode().split("\0"):
        if not name or not os.path.isfile(os.path.join(ROOT, name)):
            continue  # deleted in the working tree but not yet in git
        os.makedirs(os.path.join(target, os.path.dirname(name)), exist_ok=True)
        with open(os.path.join(ROOT, name), "rb") as src, open(os.path.join(target, name), "wb") as dst:
            dst.write(src.read())
    os.symlink(os.path.join(ROOT, "node_modules"), os.path.join(target, "node_modules"))


def recipe_checkout(tmp_path) -> tuple[str, dict]:
    """A copy of the repository to follow a recipe in, and the environment its builds run with."""
    if not os.path.isdir(os.path.join(ROOT, "node_modules", "pyodide")):
        pytest.fail("node_modules is missing: run `make setup`")
    copy = str(tmp_path / "repo")
    copy_repository(copy)
    env = {**os.environ, "PYTHONPATH": copy, "CALC_PYODIDE_SNAPSHOT": "0", "NO_MKDOCS_2_WARNING": "1",
           "SITE_URL": "http://127.0.0.1:8000/"}
    return copy, env


def run(command: list[str], cwd: str, env: dict, timeout_s: float = 120) -> subprocess.CompletedProcess:
    done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout_s)
    assert done.returncode == 0, f"{shlex.join(command)} failed:\n{done.stdout[-3000:]}\n{done.stderr[-3000:]}"
    return done


def test_the_recipe_has_its_steps():
    kinds = [kind for kind, _, _ in recipe_steps(recipe_section())]
    assert kinds.count("file") >= 2 and kinds.count("nav") == 1 and kinds.count("run") == 1, kinds


def add_row(path: str, row: str) -> None:
    """Add ``row`` as the last entry of the table in ``path`` (the dict literal assigned to BLOCK_KINDS).

    >>> import tempfile
    >>> path = os.path.join(tempfile.mkdtemp(), "kinds.py")
    >>> _ = open(path, "w").write('BLOCK_KINDS = {\\n    "a": 1,\\n}\\n\\n\\nx = {\\n}\\n')
    >>> add_row(path, '    "b": 2,\\n')
    >>> open(path).read()
    'BLOCK_KINDS = {\\n    "a": 1,\\n    "b": 2,\\n}\\n\\n\\nx = {\\n}\\n'
    """
    with open(path, encoding="utf-8") as handle:
        text = handle.read()
    end = text.index("\n}\n", text.index("BLOCK_KINDS = {"))
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(text[:end + 1] + row.rstrip("\n") + "\n" + text[end + 1:])


def test_the_block_kind_recipe_is_one_row_and_one_renderer():
    steps = recipe_steps(recipe_section("### Add a block kind"))
    kinds = [kind for kind, _, _ in steps]
    assert kinds.count("row") == 1 and kinds.count("nav") == 1, kinds
    (row,) = [body for kind, _, body in steps if kind == "row"]
    assert len(row.strip().splitlines()) == 1, row
    hook_files = [path for kind, path, _ in steps if kind == "file" and path.startswith("hooks/")]
    assert len(hook_files) == 1, hook_files  # the renderer


def test_the_block_kind_recipe_builds_a_page_with_the_new_block(tmp_path):
    copy, env = recipe_checkout(tmp_path)
    pages, nav_entries = [], []
    for kind, path, body in recipe_steps(recipe_section("### Add a block kind")):
        if kind == "file":
            assert not os.path.exists(os.path.join(copy, path)), f"the recipe overwrites {path}"
            os.makedirs(os.path.join(copy, os.path.dirname(path)), exist_ok=True)
            with open(os.path.join(copy, path), "w", encoding="utf-8") as handle:
                handle.write(body)
            pages += [path.removeprefix("docs/")] if path.startswith("docs/") else []
        elif kind == "row":
            add_row(os.path.join(copy, path), body)
        elif kind == "nav":
            with open(os.path.join(copy, "mkdocs.yml"), "a", encoding="utf-8") as handle:
                handle.write(body)
            nav_entries += yaml.safe_load(body)
    (page_src,) = pages
    with open(os.path.join(copy, "mkdocs-recipe.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"INHERIT": "mkdocs.yml", "nav": nav_entries,
                        "exclude_docs": f"includes/\n/*\n!/assets/\n!/sw.js\n!/{page_src}\n"}, handle)
    run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs-recipe.yml", "--site-dir", "site"],
        copy, env, timeout_s=300)

    name = "kv_cache_arithmetic.kv_per_token"
    expected = run([sys.executable, "-c", "import json; from calc.widgets import framework, load_all; load_all(); "
                    f"print(json.dumps(framework.call({name!r}, {{'model': 'llama-3.1-70b'}})))"], copy, env).stdout
    outputs = json.loads(expected)["outputs"]
    with open(os.path.join(copy, "site", page_src.removesuffix(".md"), "index.html"), encoding="utf-8") as handle:
        soup = BeautifulSoup(handle.read(), "html.parser")
    listing = soup.select_one("dl.calc-outputs--static")
    assert listing is not None, "the new block is not on the page"
    assert [dd.get_text() for dd in listing.select("dd")] == [item["text"] for item in outputs.values()]
    assert [dt.get_text() for dt in listing.select("dt")] == [item["label"] for item in outputs.values()]


def test_the_widget_recipe_builds_a_page_with_a_live_widget(tmp_path):
    copy, env = recipe_checkout(tmp_path)
    written, nav_entries, commands = [], [], []
    for kind, path, body in recipe_steps(recipe_section()):
        if kind == "file":
            os.makedirs(os.path.join(copy, os.path.dirname(path)), exist_ok=True)
            assert not os.path.exists(os.path.join(copy, path)), f"the recipe overwrites {path}"
            with open(os.path.join(copy, path), "w", encoding="utf-8") as handle:
                handle.write(body)
            written.append(path)
        elif kind == "nav":
            with open(os.path.join(copy, "mkdocs.yml"), "a", encoding="utf-8") as handle:
                handle.write(body)  # nav: is the last key of mkdocs.yml, so its end is the nav's end
            nav_entries += yaml.safe_load(body)
        else:
            commands += [line for line in body.splitlines() if line.strip()]
    page = next(p for p in written if p.startswith("docs/"))
    module = next(p for p in written if p.startswith("calc/widgets/"))
    page_src = page.removeprefix("docs/")

    for line in commands:
        argv = shlex.split(line)
        if argv[0] == ".venv/bin/python":
            argv[0] = sys.executable
        run(argv, copy, env)

    # The patched mkdocs.yml lists the page (read as MkDocs reads it).
    listed = run([sys.executable, "-c", "from mkdocs.config import load_config; import json; "
                  "print(json.dumps(load_config('mkdocs.yml').nav))"], copy, env).stdout
    assert page_src in listed

    with open(os.path.join(copy, "mkdocs-recipe.yml"), "w", encoding="utf-8") as handle:
        yaml.safe_dump({"INHERIT": "mkdocs.yml", "nav": nav_entries,
                        "exclude_docs": f"includes/\n/*\n!/assets/\n!/sw.js\n!/{page_src}\n"}, handle)
    run([sys.executable, "-m", "mkdocs", "build", "--strict", "-f", "mkdocs-recipe.yml", "--site-dir", "site"],
        copy, env, timeout_s=300)

    # The widget is pre-rendered with the block's defaults, computed by calc in the copy.
    name = f"{os.path.basename(module)[:-3]}.kv_for_context"
    expected = run([sys.executable, "-c", "import json; from calc.widgets import framework, load_all; load_all(); "
                    f"print(json.dumps(framework.call({name!r}, {{'model': 'llama-3.1-70b'}})))"], copy, env).stdout
    kv_text = json.loads(expected)["outputs"]["kv_bytes"]["text"]
    html_path = os.path.join(copy, "site", page_src.removesuffix(".md"), "index.html")
    with open(html_path, encoding="utf-8") as handle:
        soup = BeautifulSoup(handle.read(), "html.parser")
    root = soup.select_one(f'[data-widget="{name}"]')
    assert root is not None, f"no [data-widget={name}] in {html_path}"
    assert root["data-kind"] == "widget" and root["data-state"] == "static"
    assert root.select_one('[data-output="kv_bytes"]').get_text(" ", strip=True).count(kv_text) == 1
    assert root.select_one('select[name="model"]').select_one("option[selected]")["value"] == "llama-3.1-70b"
    assert "131,072 bytes" in soup.get_text()  # the fact in the prose
    # ... and the module ships to the worker, whose allow-list is the registry of the modules it imports.
    runtime = os.path.join(copy, "site", "assets", "runtime")
    (calc_zip,) = [f for f in os.listdir(runtime) if f.startswith("calc-") and f.endswith(".zip")]
    with zipfile.ZipFile(os.path.join(runtime, calc_zip)) as archive:
        assert module in archive.namelist()
