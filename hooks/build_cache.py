"""The build cache: block renders, figures, ``facts()``, notebook executions and page scans kept between builds.

An entry lives in ``build/calc-cache/<kind>/<key>.json`` (its value in ``<key>.value.json``). Its key is the
whole story, computed before the entry is looked up, never from what computing it touched:

* the request (the block's function and options, the facts' page module, the notebook's path and text digest);
* the digest of the hook code that makes it (this file and the files its kind names, :mod:`kinds`);
* the digest of its page module's file (``calc/widgets/<module>.py``, or ``none`` for an entry of no page);
* one digest of the rest of ``calc`` (every other file under ``calc/``: the science, the data, the shared
  widget modules).

So a prose edit recomputes nothing, an edit to a page module recomputes that page's entries (page modules
do not import one another: ``tests/widgets/test_page_imports.py``), and any other edit to ``calc``
recomputes every entry. A page module is the module of a page of ``docs/`` (:func:`facts.page_modules`).

``make serve``, ``make build`` and the tests' builds share the cache. ``CALC_BUILD_CACHE=0`` turns it off
(every entry computed, nothing written); ``CALC_BUILD_CACHE_DIR`` moves it.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys

import facts

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)
FORMAT_VERSION = 3  # bump when the layout of an entry or the recipe of its key changes
ABSENT = "absent"  # the digest of a file that does not exist (a page with no module of its own)
NO_PAGE = "none"  # the page-module digest of an entry that belongs to no page module


def enabled() -> bool:
    return os.environ.get("CALC_BUILD_CACHE", "1") != "0"


def cache_dir() -> str:
    return os.environ.get("CALC_BUILD_CACHE_DIR") or os.path.join(PROJECT_DIR, "build", "calc-cache")


def file_sha256(path: str) -> str:
    """The SHA-256 of a file, or ``ABSENT``.

    >>> file_sha256("/nonexistent/calc.py")
    'absent'
    """
    try:
        with open(path, "rb") as handle:
            return hashlib.sha256(handle.read()).hexdigest()
    except OSError:
        return ABSENT


def request_text(request) -> str:
    """A request as canonical JSON text (YAML options may hold values JSON lacks: those go by their repr).

    >>> request_text({"set": {"b": 1, "a": True}, "hide": []})
    '{"hide": [], "set": {"a": true, "b": 1}}'
    """
    return json.dumps(request, sort_keys=True, default=repr)


class Digests:
    """What every key of one build is made of besides its request, read once: each page module's file apart and
    the rest of ``calc`` as one digest, and the hook code by file.

    >>> digests = Digests({"kv_cache_arithmetic", "glossary"})
    >>> digests.page("glossary"), digests.page("framework")  # a page without a module; not a page's module
    ('absent', 'none')
    >>> digests.key("facts", "kv_cache_arithmetic", ("facts.py",), "kv_cache_arithmetic") == \\
    ...     digests.key("facts", "accuracy", ("facts.py",), "accuracy")
    False
    """

    def __init__(self, page_modules, project_dir: str = PROJECT_DIR):
        calc_dir = os.path.join(project_dir, "calc")
        self.hooks_dir = os.path.join(project_dir, "hooks")
        page_files = {os.path.join(calc_dir, "widgets", f"{name}.py"): name for name in page_modules}
        self.pages = {name: ABSENT for name in page_files.values()}
        rest = hashlib.sha256()
        for folder, dirs, names in os.walk(calc_dir):
            dirs[:] = sorted(d for d in dirs if d != "__pycache__")
            for name in sorted(n for n in names if not n.endswith(".pyc")):
                path = os.path.join(folder, name)
                if path in page_files:
                    self.pages[page_files[path]] = file_sha256(path)
                else:
                    relative = os.path.relpath(path, calc_dir).replace(os.sep, "/")
                    rest.update(f"{relative}\0{file_sha256(path)}\n".encode())
        self.calc = rest.hexdigest()
        self._code: dict[str, str] = {}

    def page(self, module: str | None) -> str:
        """The digest of page module ``module``'s file; ``none`` when it is no page's module (its code, if any,
        is in the rest of calc)."""
        return self.pages.get(module, NO_PAGE) if module else NO_PAGE

    def code(self, sources) -> dict[str, str]:
        for name in ("build_cache.py", *sources):
            if name not in self._code:
                self._code[name] = file_sha256(os.path.join(self.hooks_dir, name))
        return {name: self._code[name] for name in ("build_cache.py", *sources)}

    def key(self, kind: str, request, sources, module: str | None) -> str:
        """The key of an entry: its kind and request, Python's version, its hook code, its page module's file and
        the rest of calc."""
        text = json.dumps({"format": FORMAT_VERSION, "kind": kind, "request": request_text(request),
                           "python": sys.version, "hooks": self.code(sources), "page_module": self.page(module),
                           "calc": self.calc}, sort_keys=True)
        return hashlib.sha256(text.encode("utf-8")).hexdigest()


def project_digests(project_dir: str = PROJECT_DIR) -> Digests:
    """The digests of the project as it is now (its pages' modules read from ``docs/``)."""
    return Digests(facts.page_modules(os.path.join(project_dir, "docs")), project_dir)


# --------------------------------------------------------------------------- the entries on disk

def _entry_path(kind: str, key: str, part: str = "") -> str:
    return os.path.join(cache_dir(), kind, f"{key}{part}.json")


def read_json(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def write_json(path: str, data, sort_keys: bool = True) -> None:
    partial = f"{path}.{os.getpid()}.part"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=sort_keys)
    os.replace(partial, path)  # atomic: a build beside this one never reads half a file


def has(kind: str, key: str) -> bool:
    """Whether the cache holds the entry (its small half: the value is a file apart, read when needed)."""
    return enabled() and os.path.isfile(_entry_path(kind, key))


def load(kind: str, key: str):
    """The cached value of the entry with ``key``, or None."""
    if not enabled():
        return None
    value = read_json(_entry_path(kind, key, ".value"))
    return None if value is None else value["value"]


def _seconds_path(kind: str, request) -> str:
    name = hashlib.sha256(request_text(request).encode("utf-8")).hexdigest()[:32]
    return os.path.join(cache_dir(), "seconds", f"{kind}-{name}.json")


def store(kind: str, key: str, request, value, seconds: float) -> None:
    """Write an entry: its value, then its request and the time it took (so a listed entry always has its value),
    and the time apart, by request, for the next build's scheduling whatever the key is then."""
    if not enabled():
        return
    for folder in (kind, "seconds"):
        os.makedirs(os.path.join(cache_dir(), folder), exist_ok=True)
    # A value keeps its keys' order: the search index is written in the order its entries' keys were made.
    write_json(_entry_path(kind, key, ".value"), {"value": value}, sort_keys=False)
    write_json(_entry_path(kind, key), {"kind": kind, "request": request_text(request), "seconds": round(seconds, 3)})
    write_json(_seconds_path(kind, request), {"seconds": round(seconds, 3)})


def seconds_of(kind: str, request) -> float | None:
    """How long the last entry of this kind and request took to compute, whatever its key was."""
    record = read_json(_seconds_path(kind, request)) if enabled() else None
    return None if record is None else record["seconds"]


# --------------------------------------------------------------------------- what a build into a site folder used

def build_record_path(site_dir: str) -> str:
    """Where a build into ``site_dir`` records how it used the cache (tests/site/test_build_cache.py reads it),
    and what its pages were made from besides their own sources (a dirty rebuild under `make serve` compares)."""
    name = hashlib.sha256(os.path.realpath(site_dir).encode("utf-8")).hexdigest()[:16]
    return os.path.join(PROJECT_DIR, "build", "site-builds", f"{name}.json")


def cache_is_empty() -> bool:
    """Whether the cache holds no entry of any kind (a cold build: nothing reused, the page scans included)."""
    for _, _, names in os.walk(cache_dir()):
        if any(name.endswith(".json") for name in names):
            return False
    return True


def update_build_record(folder: str, **fields) -> dict:
    """Add ``fields`` to the record of the build into site folder ``folder``; return the record as it was (a
    read-only checkout builds all the same)."""
    path = build_record_path(folder)
    previous = read_json(path) or {}
    record = {**previous, **fields}
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        write_json(path, record)
    except OSError:
        pass
    return previous
