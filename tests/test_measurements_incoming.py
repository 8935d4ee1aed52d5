"""calc/data/measurements_incoming.json: rows waiting to be merged into measurements.json (issue 33, "More evidence").

Each incoming row must look exactly like the merged rows of its kind (the same keys, the same value types), carry a
unique id across both files, a public URL, a model and a GPU that calc's catalog knows, and the role ``validation``
(never fitted). Every ``online_latency`` row must be priced by :func:`calc.latency_accuracy.predict_row`.
"""

from __future__ import annotations

import json
import math
import os
from collections import defaultdict

import pytest

from calc import latency_accuracy
from calc.catalog import GPUS, MODELS

DATA = os.path.join(os.path.dirname(os.path.dirname(__file__)), "calc", "data")
MERGED = json.load(open(os.path.join(DATA, "measurements.json"), encoding="utf-8"))["measurements"]
INCOMING_FILE = json.load(open(os.path.join(DATA, "measurements_incoming.json"), encoding="utf-8"))
INCOMING = INCOMING_FILE["measurements"]
# Parts of a row whose keys are compared with the merged rows of the same kind.
SECTIONS = ("figure", "inputs", "source")


def _type_name(value) -> str:
    """JSON type of a value (int and float are both numbers: 2 and 2.5 are the same kind of figure)."""
    if isinstance(value, bool):
        return "bool"
    if isinstance(value, (int, float)):
        return "number"
    return type(value).__name__


def _shape(rows):
    """Per kind and section: the keys every merged row has, the keys any has, and the types each key takes."""
    required, allowed, types = {}, defaultdict(set), defaultdict(set)
    for row in rows:
        for section in ("",) + SECTIONS:
            part = row if section == "" else row[section]
            key = (row["kind"], section)
            required[key] = set(part) if key not in required else required[key] & set(part)
            allowed[key] |= set(part)
            for name, value in part.items():
                types[key + (name,)].add(_type_name(value))
    return required, allowed, types


REQUIRED, ALLOWED, TYPES = _shape(MERGED)


def test_file_has_an_about_and_rows():
    assert isinstance(INCOMING_FILE["about"], str) and len(INCOMING_FILE["about"]) > 40
    assert len(INCOMING) > 0


@pytest.mark.parametrize("row", INCOMING, ids=[r["id"] for r in INCOMING])
def test_row_has_the_merged_schema_of_its_kind(row):
    assert row["kind"] in {m["kind"] for m in MERGED}, row["kind"]
    for section in ("",) + SECTIONS:
        part = row if section == "" else row[section]
        key = (row["kind"], section)
        missing = REQUIRED[key] - set(part)
        unknown = set(part) - ALLOWED[key]
        assert not missing, f"{section or 'row'} lacks {sorted(missing)}"
        assert not unknown, f"{section or 'row'} has keys no merged {row['kind']} row has: {sorted(unknown)}"
        for name, value in part.items():
            seen = TYPES[key + (name,)]
            # A key that merged rows leave null somewhere may be null here too; otherwise the type must match.
            assert _type_name(value) in seen or (value is None and "NoneType" in seen), \
                f"{section}.{name} is {_type_name(value)}, merged rows have {sorted(seen)}"


@pytest.mark.parametrize("row", INCOMING, ids=[r["id"] for r in INCOMING])
def test_row_is_validation_with_a_public_url_and_catalog_keys(row):
    assert row["role"] == "validation"
    assert row["source"]["url"].startswith("https://")
    assert row["source"]["read"].strip() and row["source"]["where"].strip()
    assert row["inputs"]["model"] in MODELS, row["inputs"]["model"]
    assert row["inputs"]["gpu"] in GPUS, row["inputs"]["gpu"]
    value = row["figure"]["value"]
    assert isinstance(value, (int, float)) and math.isfinite(value) and value > 0


def test_ids_are_unique_across_both_files():
    ids = [r["id"] for r in MERGED] + [r["id"] for r in INCOMING]
    duplicates = sorted({i for i in ids if ids.count(i) > 1})
    assert not duplicates, duplicates


def test_client_and_lengths_are_ones_calc_replays():
    for row in (r for r in INCOMING if r["kind"] == latency_accuracy.LATENCY_KIND):
        client, lengths = row["inputs"]["client"], row["inputs"]["lengths"]
        assert client["kind"] in latency_accuracy.CLIENTS
        assert lengths["kind"] in ("fixed", "sharegpt")
        if client["kind"] == "poisson":
            assert client["rate_per_s"] > 0 and row["inputs"]["num_prompts"] >= 1


LATENCY_ROWS = [r for r in INCOMING if r["kind"] == latency_accuracy.LATENCY_KIND]


@pytest.mark.parametrize("row", LATENCY_ROWS, ids=[r["id"] for r in LATENCY_ROWS])
def test_calc_prices_every_online_latency_row(row):
    result = latency_accuracy.predict_row(row)
    assert result.role == "validation" and result.measured == row["figure"]["value"]
    assert math.isfinite(result.predicted) and result.predicted > 0
    assert result.metric == latency_accuracy.metric_of(row)
