"""Page modules do not import each other: what two pages share lives in the science (calc/*.py) or in the
widget layer's shared modules (calc/widgets/framework.py, charts.py, simulation.py, views.py)."""

from __future__ import annotations

import ast
import glob
import os
import re

import pytest

from hooks.facts import page_module

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DOCS = os.path.join(ROOT, "docs")
WIDGETS = os.path.join(ROOT, "calc", "widgets")
CALC_MODULE = re.compile(r"^calc_module:\s*([a-z0-9_]+)\s*$", re.M)


def page_modules() -> set[str]:
    """The widget modules that belong to a page of docs/ (front matter ``calc_module``, else the file name)."""
    found = set()
    for path in glob.glob(os.path.join(DOCS, "**", "*.md"), recursive=True):
        with open(path, encoding="utf-8") as handle:
            front = handle.read().split("\n---", 1)[0]
        match = CALC_MODULE.search(front)
        module = page_module(os.path.relpath(path, DOCS), {"calc_module": match.group(1)} if match else {})
        if os.path.exists(os.path.join(WIDGETS, f"{module}.py")):
            found.add(module)
    return found


def widget_modules_imported(source: str) -> set[str]:
    """The calc.widgets submodules a module's source imports, in any spelling of the import."""
    names = set()
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("calc.widgets."):
                    names.add(alias.name.split(".")[2])
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            if node.module.startswith("calc.widgets."):
                names.add(node.module.split(".")[2])
            elif node.module == "calc.widgets":
                names.update(alias.name for alias in node.names)
    return names


def test_the_detector_sees_every_spelling_of_a_page_import():
    source = ("import calc.widgets.a_70b_assistant\nfrom calc.widgets.fp8_weights import capacity\n"
              "from calc.widgets import system_prompt as step\nfrom calc.widgets.framework import widget\n"
              "def f():\n    from calc.widgets.the_fix import facts\n")
    assert widget_modules_imported(source) == {"a_70b_assistant", "fp8_weights", "system_prompt", "framework",
                                               "the_fix"}


def test_every_lesson_step_and_deep_dive_is_a_page_module():
    pages = page_modules()
    assert {"a_70b_assistant", "cheat_sheet", "playground", "deep_roofline", "primer", "gb_vs_gib"} <= pages
    assert not pages & {"framework", "charts", "simulation", "views", "runtime", "diagnostics"}
    assert len(pages) >= 30


@pytest.mark.parametrize("module", sorted(page_modules()))
def test_a_page_module_imports_no_other_page_module(module):
    with open(os.path.join(WIDGETS, f"{module}.py"), encoding="utf-8") as handle:
        imported = widget_modules_imported(handle.read())
    others = sorted(imported & (page_modules() - {module}))
    assert not others, (f"calc/widgets/{module}.py imports page module(s) {', '.join(others)}: move what they share "
                        f"to the science (calc/*.py) or to calc/widgets/views.py")
