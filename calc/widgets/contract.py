"""The page/worker/DOM contract, declared once in ``contract.json`` next to this file.

Python reads it here: the worker's side (:mod:`calc.widgets.runtime`) answers exactly the requests it
declares, with the error kinds it declares; the build (``hooks/widget_html.py``) writes only the data-*
attributes and values it declares. The JavaScript side (``docs/assets/runtime/``) is checked against the
same file by ``tests/test_contract.py``, which also fails on a declared name that no side uses.

>>> sorted(REQUESTS)[:3]
['call', 'check', 'drill']
>>> declared("error_kinds", "budget")
'budget'
"""

from __future__ import annotations

import json
import os

from calc.errors import CalcError

_PATH = os.path.join(os.path.dirname(os.path.abspath(__file__)), "contract.json")

with open(_PATH, encoding="utf-8") as _handle:
    CONTRACT: dict = json.load(_handle)

REQUESTS: dict = CONTRACT["requests"]
ERROR_KINDS: dict = CONTRACT["error_kinds"]
ATTRIBUTES: dict = CONTRACT["attributes"]
EVENTS: dict = CONTRACT["events"]


def declared(section: str, name: str) -> str:
    """``name`` if the contract's ``section`` declares it; a ValueError otherwise (a typo fails at import).

    >>> declared("requests", "stream_next")
    'stream_next'
    >>> declared("requests", "stream_skip")
    Traceback (most recent call last):
    ...
    ValueError: stream_skip is not declared in contract.json's requests
    """
    if name not in CONTRACT[section]:
        raise ValueError(f"{name} is not declared in contract.json's {section}")
    return name


def check_built_attributes(attributes: dict) -> None:
    """Raise CalcError (field ``attribute``) for a data-* attribute the build may not write, or a value not declared.

    Only attributes that the contract says the build writes are allowed; a declared list of values is enforced.

    >>> check_built_attributes({"class": "calc-widget", "data-kind": "drill", "data-state": "static"})
    >>> check_built_attributes({"data-kind": "slider"})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: data-kind must be one of widget, drill, simulation; got 'slider'
    >>> check_built_attributes({"data-sim-state": "idle"})
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: data-sim-state is not an attribute the build writes (contract.json); the build writes data-widget, ...
    """
    for name, value in attributes.items():
        if not name.startswith("data-"):
            continue
        spec = ATTRIBUTES.get(name)
        if spec is None or "build" not in spec["written_by"]:
            built = ", ".join(n for n, s in ATTRIBUTES.items() if "build" in s["written_by"])
            raise CalcError(f"{name} is not an attribute the build writes (contract.json); the build writes {built}",
                            "attribute")
        if "values" in spec and value not in spec["values"]:
            raise CalcError(f"{name} must be one of {', '.join(spec['values'])}; got {value!r}", "attribute")
