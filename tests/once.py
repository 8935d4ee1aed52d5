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

import hashlib
import json
import os
import sys
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


def reused_across_runs(name: str, compute: Callable[[], Any], *, decode: Callable[[Any], Any] = lambda v: v,
                       sources: tuple[str, ...] = ("calc",)) -> Callable[[], Any]:
    """``compute`` wrapped so that its JSON result is kept in ``build/test-cache/`` and reused by a later run
    while every file under ``sources`` (paths from the repository's root) is byte for byte the same, and the
    Python version too: for a pure function of those files, such as ``latency_fit.fit`` (about 140 CPU s), whose
    answer a warm ``make test`` would otherwise compute again. Never reused in CI or with ``FRESH=1``
    (:func:`tests.browser_cache.reuse_allowed`); ``decode`` turns the JSON back into what ``compute`` returns.

    >>> import tempfile; os.environ["CALC_TEST_CACHE_DIR"] = tempfile.mkdtemp()
    >>> calls = []
    >>> doubled = reused_across_runs("doctest", lambda: calls.append(1) or [2, 4], sources=("tests/once.py",))
    >>> environ_ci = os.environ.pop("CI", None); environ_fresh = os.environ.pop("FRESH", None)
    >>> doubled(), doubled(), calls     # the second call reads the first's record
    ([2, 4], [2, 4], [1])
    >>> os.environ["CI"] = "true"; doubled(), calls   # CI computes it again
    ([2, 4], [1, 1])
    >>> _ = [os.environ.pop(k) for k in ("CI", "CALC_TEST_CACHE_DIR")]
    >>> _ = [os.environ.__setitem__(k, v) for k, v in (("CI", environ_ci), ("FRESH", environ_fresh)) if v is not None]
    """
    def run() -> Any:
        from tests.browser_cache import reuse_allowed

        root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
        digest = hashlib.sha256(f"{name}\n{sys.version}\n".encode())
        for source in sources:
            paths = [os.path.join(root, source)] if os.path.isfile(os.path.join(root, source)) else sorted(
                os.path.join(base, n) for base, dirs, names in os.walk(os.path.join(root, source))
                for n in names if not n.endswith(".pyc") and "__pycache__" not in base)
            for path in paths:
                digest.update(os.path.relpath(path, root).encode() + b"\0")
                with open(path, "rb") as handle:
                    digest.update(hashlib.sha256(handle.read()).digest())
        folder = os.environ.get("CALC_TEST_CACHE_DIR", os.path.join(root, "build", "test-cache"))
        record = os.path.join(folder, f"once-{name}-{digest.hexdigest()[:24]}.json")
        if reuse_allowed() and os.path.exists(record):
            with open(record, encoding="utf-8") as handle:
                return decode(json.load(handle))
        value = compute()
        os.makedirs(folder, exist_ok=True)
        for stale in os.listdir(folder):  # one record per name: the last inputs'
            if stale.startswith(f"once-{name}-"):
                os.remove(os.path.join(folder, stale))
        with open(record + ".tmp", "w", encoding="utf-8") as handle:
            json.dump(value, handle)
        os.replace(record + ".tmp", record)
        return decode(json.loads(json.dumps(value)))  # the same shape whether computed or read

    return run


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
