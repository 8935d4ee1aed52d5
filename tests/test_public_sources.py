"""Every source calc cites is one a reader can open: no string in calc points to the project's private notes.

The figures behind the catalog, the prices and the measurements were first collected in a working note
(``reference/published.md``) that is not part of the repository; the strings shown on pages (a GPU's
``source``, a price's ``price_source``, :data:`calc.cost.H100_LISTINGS_SOURCE`, a measurement's ``read``) name
the public document instead. The built pages are checked the same way in ``tests/site/test_public_sources.py``.
"""

from __future__ import annotations

import ast
import json
import pathlib

import pytest

from calc.catalog import GPUS, MODELS
from calc.cost import H100_LISTINGS_SOURCE

CALC = pathlib.Path(__file__).resolve().parent.parent / "calc"
#: Pointers to files a reader of the site or of the repository cannot open.
PRIVATE = ("published.md", "../shared", "/work/shared", "reference/published")


def private_pointer(text: str) -> str | None:
    """The first private pointer in ``text``, or None.

    >>> private_pointer("NVIDIA H100 datasheet (reference/published.md)"), private_pointer("arxiv.org/abs/2309.06180")
    ('published.md', None)
    """
    return next((needle for needle in PRIVATE if needle in text), None)


def strings_in_python(path: pathlib.Path):
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Constant) and isinstance(node.value, str):
            yield node.lineno, node.value


def strings_in_json(value):
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for item in value.values():
            yield from strings_in_json(item)
    elif isinstance(value, list):
        for item in value:
            yield from strings_in_json(item)


def test_the_detector_finds_a_private_pointer():
    assert private_pointer("nvidia-smi: 81,559 MiB (reference/published.md)") == "published.md"
    assert private_pointer("see ../shared/DESIGN.md") == "../shared"
    assert private_pointer("lambda.ai/service/gpu-cloud") is None


@pytest.mark.parametrize("path", sorted(CALC.rglob("*.py")), ids=lambda p: str(p.relative_to(CALC.parent)))
def test_no_python_string_in_calc_points_to_a_private_note(path):
    found = [(line, text[:120]) for line, text in strings_in_python(path) if private_pointer(text)]
    assert not found, f"{path.relative_to(CALC.parent)} cites a file readers cannot open: {found}"


@pytest.mark.parametrize("path", sorted(CALC.rglob("*.json")), ids=lambda p: str(p.relative_to(CALC.parent)))
def test_no_data_string_in_calc_points_to_a_private_note(path):
    found = [text[:120] for text in strings_in_json(json.loads(path.read_text(encoding="utf-8")))
             if private_pointer(text)]
    assert not found, f"{path.relative_to(CALC.parent)} cites a file readers cannot open: {found}"


def test_catalog_sources_name_a_public_document():
    for gpu in GPUS.values():
        for text in (gpu.source, gpu.memory_runtime_source, gpu.price_source or ""):
            assert private_pointer(text) is None, (gpu.key, text)
        assert any(host in gpu.source for host in ("nvidia.com", "amd.com", "hpctech", "spec tables")), gpu.key
    for model in MODELS.values():
        assert private_pointer(model.source) is None, (model.key, model.source)
        assert "huggingface.co/" in model.source, model.key
    h100 = GPUS["h100-sxm-80gb"]
    assert "lambda.ai/service/gpu-cloud" in h100.price_source and h100.price_source.startswith("Lambda on-demand")
    assert "replicate.com/pricing" in H100_LISTINGS_SOURCE and "2026-05-07" in H100_LISTINGS_SOURCE
