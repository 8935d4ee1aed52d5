"""The deep dives' notebooks take the running example from calc.lesson, as pages and presets do.

A notebook that spells out the lesson's replica (``"llama-3.1-70b"``, ``"h100-sxm-80gb"``, TP 4, the 1,024/256
lengths) would drift from the pages when the lesson changes; its numbers are compared with the pages' facts
only at build (``tests/site/test_notebooks.py``). This reads their code with ``ast``, no build needed.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

from calc import lesson

NOTEBOOKS = sorted((pathlib.Path(__file__).resolve().parent.parent / "docs" / "deep-dives" / "notebooks").glob("*.py"))
#: The running example's values as a notebook would spell them.
RUNNING_EXAMPLE_LITERALS = {lesson.MODEL, lesson.GPU}


def test_there_are_notebooks():
    assert len(NOTEBOOKS) >= 7


@pytest.mark.parametrize("path", NOTEBOOKS, ids=lambda p: p.stem)
def test_notebook_imports_the_running_example_from_calc_lesson(path):
    tree = ast.parse(path.read_text(encoding="utf-8"))
    imported = {alias.name for node in ast.walk(tree) if isinstance(node, ast.ImportFrom) and node.module == "calc.lesson"
                for alias in node.names}
    assert imported, f"{path.name} does not take the running example from calc.lesson"
    spelled = sorted({node.value for node in ast.walk(tree)
                      if isinstance(node, ast.Constant) and node.value in RUNNING_EXAMPLE_LITERALS})
    assert not spelled, f"{path.name} spells the running example out instead of importing it: {spelled}"
