"""The build cache: widget renders, figures, ``facts()`` and notebook executions kept on disk between builds.

Every entry lives in ``build/calc-cache/<kind>/<key>.json``. Its *key* hashes what the
entry was asked for (the block's widget name and options, the facts' module, the
notebook's text and the plugin options), the Python version and the code that makes it
(this file and the hook that renders it). Its *dependencies* are the ``calc`` files it
reads, each with its SHA-256, recorded when it was computed: an entry is reused only
while every one of them is unchanged. So a prose edit reruns nothing, an edit to
``calc/widgets/the_fix.py`` reruns the entries of the pages that import it and nothing
else, and an edit to ``calc/units.py`` (imported nearly everywhere) reruns nearly all.

The dependencies of an entry are the import closure of the modules it starts from (read
with :mod:`ast`, function-level imports included), grown by every ``calc`` module the
computation imported and every file under ``calc/`` it opened, plus the data folders a
module names in a string (``calc/data``, ``calc/sim/presets``).

``make serve``, ``make build`` and the tests' builds share the cache. ``CALC_BUILD_CACHE=0``
turns it off (every entry computed, nothing written); ``CALC_BUILD_CACHE_DIR`` moves it;
``CALC_BUILD_JOBS`` sets how many processes compute missing entries before MkDocs needs
them (default: the number of CPUs, at most 4).
"""

from __future__ import annotations

import ast
import hashlib
import json
import os
import re
import sys
import time

HOOKS_DIR = os.path.dirname(os.path.abspath(__file__))
PROJECT_DIR = os.path.dirname(HOOKS_DIR)
CALC_DIR = os.path.join(PROJECT_DIR, "calc")
FORMAT_VERSION = 2  # bump when the layout of an entry changes
ABSENT = "absent"  # the recorded hash of a file that did not exist (a page with no module of its own)

# The code that makes each kind of entry, beside this file: a change to it changes the entry's key.
HOOK_SOURCES = {
    "widget": ("entries.py", "blocks.py", "widget_html.py"),
    "drill": ("entries.py", "blocks.py", "widget_html.py"),
    "simulation": ("entries.py", "blocks.py", "widget_html.py"),
    "figure": ("entries.py", "figures.py"),
    "facts": ("entries.py", "facts.py"),
    "notebook": ("entries.py",),
    "scan": ("prefetch.py", "blocks.py", "figures.py"),  # the blocks a page's text holds (parsed as the build does)
    "search": ("entries.py",),  # a page's entries in the search index (Material's parser, its version keyed)
}
# Entries whose value is a rendered block (an ElementTree element carried as XML text).
BLOCK_KINDS = ("widget", "drill", "simulation")


def enabled() -> bool:
    return os.environ.get("CALC_BUILD_CACHE", "1") != "0"


def cache_dir() -> str:
    return os.environ.get("CALC_BUILD_CACHE_DIR") or os.path.join(PROJECT_DIR, "build", "calc-cache")


# --------------------------------------------------------------------------- hashing

_file_hashes: dict[str, tuple[tuple[int, int], str]] = {}


def file_sha256(path: str) -> str:
    """The SHA-256 of a file, or ``ABSENT``; remembered while its size and mtime stay the same.

    >>> file_sha256("/nonexistent/calc.py")
    'absent'
    """
    try:
        stat = os.stat(path)
    except OSError:
        return ABSENT
    stamp = (stat.st_size, stat.st_mtime_ns)
    known = _file_hashes.get(path)
    if known and known[0] == stamp:
        return known[1]
    with open(path, "rb") as handle:
        digest = hashlib.sha256(handle.read()).hexdigest()
    _file_hashes[path] = (stamp, digest)
    return digest


def relative(path: str) -> str:
    return os.path.relpath(path, PROJECT_DIR).replace(os.sep, "/")


def request_text(request) -> str:
    """A request as canonical JSON text (YAML options may hold values JSON lacks: those go by their repr).

    >>> request_text({"set": {"b": 1, "a": True}, "hide": []})
    '{"hide": [], "set": {"a": true, "b": 1}}'
    """
    return json.dumps(request, sort_keys=True, default=repr)


def entry_key(kind: str, request) -> str:
    """The key of an entry: its kind and request, the Python version and the hook code that makes it.

    >>> entry_key("facts", "kv_cache_arithmetic") == entry_key("facts", "kv_cache_arithmetic")
    True
    >>> entry_key("facts", "kv_cache_arithmetic") == entry_key("facts", "paged_attention")
    False
    """
    code = {name: file_sha256(os.path.join(HOOKS_DIR, name)) for name in ("build_cache.py", *HOOK_SOURCES[kind])}
    text = json.dumps({"format": FORMAT_VERSION, "kind": kind, "request": request_text(request),
                       "python": sys.version, "hooks": code}, sort_keys=True)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


# --------------------------------------------------------------------------- what an entry depends on

def module_path(name: str, calc_dir: str = CALC_DIR) -> str | None:
    """The source file of module ``calc.…`` (a package's ``__init__.py``), or None if there is none.

    >>> relative(module_path("calc.widgets.framework"))
    'calc/widgets/framework.py'
    >>> relative(module_path("calc.widgets")), module_path("calc.no_such_module")
    ('calc/widgets/__init__.py', None)
    """
    parts = name.split(".")
    if parts[0] != "calc":
        return None
    base = os.path.join(os.path.dirname(calc_dir), *parts)
    for candidate in (base + ".py", os.path.join(base, "__init__.py")):
        if os.path.isfile(candidate):
            return candidate
    return None


def _module_name(path: str, calc_dir: str = CALC_DIR) -> str:
    rel = os.path.relpath(path, os.path.dirname(calc_dir)).replace(os.sep, "/").removesuffix(".py")
    return rel.removesuffix("/__init__").replace("/", ".")


_parsed: dict[str, tuple[str, set[str], set[str]]] = {}
_PLAIN_NAME = re.compile(r"[A-Za-z0-9_][A-Za-z0-9_.-]{0,80}")  # one path component: never "/", "..", "~"


def _imports_and_data(path: str, calc_dir: str = CALC_DIR) -> tuple[set[str], set[str]]:
    """The calc modules a source file imports anywhere in it, and the data files under calc/ it names."""
    digest = file_sha256(path)
    known = _parsed.get(path)
    if known and known[0] == digest:
        return known[1], known[2]
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read(), path)
    name = _module_name(path, calc_dir)
    package = name if path.endswith("__init__.py") else name.rpartition(".")[0]
    modules: set[str] = set()
    data: set[str] = set()
    here = os.path.dirname(path)
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            modules.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:  # relative: from . import x, from ..units import y
                base_parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join(base_parts + ([node.module] if node.module else []))
            else:
                base = node.module or ""
            modules.add(base)
            modules.update(f"{base}.{alias.name}" for alias in node.names)  # kept if it is a module
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _PLAIN_NAME.fullmatch(node.value):
            # A data file or folder beside the module, named in a string (os.path.join(here, "data", ...)).
            candidate = os.path.join(here, node.value)
            if os.path.isdir(candidate) and not os.path.isfile(os.path.join(candidate, "__init__.py")):
                for folder, dirs, files in os.walk(candidate):
                    dirs[:] = [d for d in dirs if d != "__pycache__"]
                    data.update(os.path.join(folder, f) for f in files if not f.endswith((".pyc", ".py")))
            elif os.path.isfile(candidate) and not candidate.endswith(".py"):
                data.add(candidate)
    modules = {m for m in modules if m == "calc" or m.startswith("calc.")}
    _parsed[path] = (digest, modules, data)
    return modules, data


def import_closure(roots, calc_dir: str = CALC_DIR) -> set[str]:
    """Every calc source and data file that modules ``roots`` import, transitively (with their packages).

    >>> files = import_closure(["calc.widgets.framework"])
    >>> sorted(relative(f) for f in files)
    ['calc/__init__.py', 'calc/errors.py', 'calc/units.py', 'calc/widgets/__init__.py', 'calc/widgets/framework.py']
    """
    seen_modules: set[str] = set()
    files: set[str] = set()
    todo = list(roots)
    while todo:
        name = todo.pop()
        if name in seen_modules:
            continue
        seen_modules.add(name)
        parts = name.split(".")
        todo.extend(".".join(parts[:i]) for i in range(1, len(parts)))  # importing a.b.c runs a and a.b
        path = module_path(name, calc_dir)
        if path is None:
            continue
        files.add(path)
        modules, data = _imports_and_data(path, calc_dir)
        files.update(data)
        todo.extend(modules - seen_modules)
    return files


def fingerprint(paths) -> dict[str, str]:
    """Each file's project-relative path and its SHA-256 (``absent`` if it does not exist)."""
    return {relative(p): file_sha256(p) for p in sorted(set(paths))}


def still_valid(deps: dict[str, str]) -> bool:
    return all(file_sha256(os.path.join(PROJECT_DIR, *rel.split("/"))) == digest for rel, digest in deps.items())


# --------------------------------------------------------------------------- recording while computing

_recording: list[set[str]] = []


def _audit(event: str, args) -> None:
    # Looked up anew: `mkdocs serve` re-imports this module at every rebuild, and an audit hook is forever.
    if event == "open":
        recording = getattr(sys.modules.get("build_cache"), "_recording", None)
        if recording and isinstance(args[0], str):
            recording[-1].add(os.path.abspath(args[0]))


def _install_audit_hook() -> None:
    if not getattr(sys, "_calc_build_cache_audit", False):  # once per process, whatever the re-imports
        sys.addaudithook(_audit)
        sys._calc_build_cache_audit = True


def tracked(compute, roots):
    """Run ``compute()``; return (its value, the calc files it depends on).

    The files are the import closure of ``roots`` and of every calc module the call
    imported, and every file under calc/ it opened.
    """
    _install_audit_hook()
    before = {n for n in sys.modules if n == "calc" or n.startswith("calc.")}
    _recording.append(set())
    try:
        value = compute()
    finally:
        opened = _recording.pop()
    imported = {n for n in sys.modules if (n == "calc" or n.startswith("calc.")) and n not in before}
    files = import_closure(set(roots) | imported)
    calc_prefix = CALC_DIR + os.sep
    files.update(p for p in opened if p.startswith(calc_prefix) and os.path.isfile(p) and "__pycache__" not in p)
    return value, files


# --------------------------------------------------------------------------- the entries on disk

def _entry_path(kind: str, key: str, part: str = "") -> str:
    return os.path.join(cache_dir(), kind, f"{key}{part}.json")


def _read_json(path: str):
    try:
        with open(path, encoding="utf-8") as handle:
            return json.load(handle)
    except (OSError, ValueError):
        return None


def _write_json(path: str, data, sort_keys: bool = True) -> None:
    partial = f"{path}.{os.getpid()}.part"
    with open(partial, "w", encoding="utf-8") as handle:
        json.dump(data, handle, sort_keys=sort_keys)
    os.replace(partial, path)  # atomic: a build beside this one never reads half a file


def check(kind: str, request) -> str | None:
    """The stamp of the valid entry for ``request`` (the hash of its recorded dependencies), or None when there
    is none or a file it depends on changed. Reads the entry's small half only (its value is a file apart)."""
    if not enabled():
        return None
    entry = _read_json(_entry_path(kind, entry_key(kind, request)))
    if not entry or entry.get("request") != request_text(request) or not still_valid(entry.get("deps", {})):
        return None
    return entry.get("stamp")


def load_value(kind: str, request, stamp: str):
    """The value stored with ``stamp`` (see :func:`check`), or None if another build has replaced it since."""
    value = _read_json(_entry_path(kind, entry_key(kind, request), ".value"))
    if not value or value.get("stamp") != stamp:
        return None
    return value["value"]


def load(kind: str, request):
    """The cached value for ``request``, or None when there is none or a file it depends on changed."""
    stamp = check(kind, request)
    return None if stamp is None else load_value(kind, request, stamp)


def store(kind: str, request, value, files, seconds: float) -> None:
    """Write an entry: its value, then its request and dependencies (so a valid entry always has its value)."""
    if not enabled():
        return
    key = entry_key(kind, request)
    os.makedirs(os.path.dirname(_entry_path(kind, key)), exist_ok=True)
    deps = fingerprint(files)
    stamp = hashlib.sha256(json.dumps(deps, sort_keys=True).encode()).hexdigest()
    # A value keeps its keys' order: the search index is written in the order its entries' keys were made.
    _write_json(_entry_path(kind, key, ".value"), {"stamp": stamp, "value": value}, sort_keys=False)
    _write_json(_entry_path(kind, key), {"kind": kind, "request": request_text(request), "deps": deps,
                                         "stamp": stamp, "seconds": round(seconds, 3)})


def read_entry(kind: str, request) -> dict | None:
    """The entry on disk as it is, valid or not: its request, deps and the seconds it took (tests, scheduling)."""
    return _read_json(_entry_path(kind, entry_key(kind, request)))
