"""A test module's shared, expensive value computed on its first use instead of at import.

Under ``pytest -n 2`` every xdist worker imports every test module to collect it, so a value a module computes at
import is computed once per worker before the first test starts, even on the worker that never runs that module's
tests: ``latency_fit.fit()`` (about 49 CPU s) ran twice in every ``make test`` collection. ``computed_once`` defers
it to the first test that reads it, and tests/conftest.py keeps such a module's tests on one worker, so it is
computed once per run.

>>> calls = []
>>> table = computed_once(lambda: calls.append(1) or {"a": 1, "b": 2})
>>> calls                       # nothing computed yet
[]
>>> table["a"], list(table), table == {"a": 1, "b": 2}, calls
(1, ['a', 'b'], True, [1])
>>> dict(table.items()), len(table), calls   # computed once
({'a': 1, 'b': 2}, 2, [1])
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

import pytest


class computed_once(Mapping):  # noqa: N801 (reads as the function it wraps)
    """A read-only mapping whose contents ``compute()`` returns the first time they are read."""

    def __init__(self, compute: Callable[[], Mapping]):
        self._compute = compute
        self._value: Mapping | None = None

    def value(self) -> Mapping:
        if self._value is None:
            self._value = self._compute()
        return self._value

    def __getitem__(self, key: Any) -> Any:
        return self.value()[key]

    def __iter__(self) -> Iterator:
        return iter(self.value())

    def __len__(self) -> int:
        return len(self.value())

    def __repr__(self) -> str:  # an assertion's message shows the contents, as for the dict it stands for
        return repr(self.value()) if self._value is not None else f"computed_once({self._compute!r}) (not computed yet)"


def defines_a_shared_value(module) -> bool:
    """Whether ``module`` (a test module) holds a :class:`computed_once` at its top level."""
    return module is not None and any(isinstance(value, computed_once) for value in vars(module).values())


@pytest.hookimpl(tryfirst=True)  # before xdist's own hook turns the groups into node id suffixes
def pytest_collection_modifyitems(config, items):
    """A module with a shared value runs on one worker (its own xdist group), which computes it once: spread over
    two workers, each would compute it."""
    for item in items:
        module = getattr(item, "module", None)
        if defines_a_shared_value(module) and not any(True for _ in item.iter_markers("xdist_group")):
            item.add_marker(pytest.mark.xdist_group(f"once-{module.__name__}"))
