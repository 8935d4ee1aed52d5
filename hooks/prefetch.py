"""Compute the build's expensive entries before MkDocs needs them, in parallel, through the build cache.

At ``on_files`` the site hooks call :func:`start`: it reads every page's Markdown for
``{{ fact }}`` names and ``/// widget``-style blocks (``/// figure`` pictures too) (with the site's own Markdown
extensions, so a block's options are parsed exactly as the build parses them), lists the
notebooks, and looks each entry up in :mod:`build_cache`. What is missing is computed by
a pool of worker processes while MkDocs reads the pages; :func:`block`, :func:`facts` and
:func:`notebook` then hand MkDocs each value, waiting for the worker if it has started,
taking the entry's group back from the pool if no worker has (:func:`_group_results`), or
computing it on the spot if no worker was asked (a block the scan missed).

A rendered block travels as XML text with a placeholder id: the build gives it the next
``w<n>`` id when it lands in the page, so ids follow page order exactly as before.
"""

from __future__ import annotations

import concurrent.futures
import json
import logging
import multiprocessing
import os
import re
import sys
import time
import xml.etree.ElementTree as etree

import build_cache
import entries

log = logging.getLogger("mkdocs.hooks.prefetch")
BLOCK_START = re.compile(r"^\s*/{3,}\s*(widget|drill|simulation|figure)\s*\|", re.MULTILINE)
# Without a recorded time, the first build starts what is usually slowest first (a page's facts may run
# whole simulations; a notebook starts a kernel).
DEFAULT_SECONDS = {"facts": 5.0, "notebook": 4.0, "simulation": 2.0, "drill": 0.2, "widget": 0.3, "figure": 0.2}
POOL_THRESHOLD_S = 1.5  # below this much missing work, starting worker processes costs more than it saves

_state: dict = {"values": {}, "valid": {}, "futures": {}, "groups": {}, "taken": {}, "pool": None, "users": {}}


def run_job(kind: str, request, job=None):
    """Compute and store one entry (in a worker process or in the build's own); return (value, error)."""
    started = time.perf_counter()
    try:
        value, files = entries.compute_entry(kind, request, job or {})
    except Exception as error:  # the build raises it where the page uses the entry, with the page's context
        return None, error
    build_cache.store(kind, request, value, files, time.perf_counter() - started)
    return value, None


def _worker_init(paths: list[str]) -> None:
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)


# --------------------------------------------------------------------------- the scan of the pages

def _block_requests(markdown_text: str, config) -> list[tuple[str, dict]]:
    """The blocks of a page as (kind, request), parsed by the site's Markdown with a collecting extension."""
    import markdown as markdown_module

    import blocks
    import figures

    found: list[tuple[str, dict]] = []

    def collecting(extension):
        if isinstance(extension, blocks.CalcBlocksExtension):
            return blocks.CalcBlocksExtension(collect=found)
        if isinstance(extension, figures.FigureBlocksExtension):
            return figures.FigureBlocksExtension(collect=found)
        return extension

    extensions = [collecting(e) for e in config.markdown_extensions]
    try:
        markdown_module.Markdown(extensions=extensions, extension_configs=config.mdx_configs).convert(markdown_text)
    except Exception as error:  # the real build reports it, on its page
        log.debug("scan of a page's blocks failed: %s", error)
    return found


def scan(files, config) -> list[tuple[str, object, dict]]:
    """Every entry the pages will ask for: (kind, request, job details). Also notes in ``_state["users"]``
    which pages use each entry (a dirty rebuild under `make serve` rebuilds those whose entries changed)."""
    import facts
    from mkdocs.utils.meta import get_data

    jobs: list[tuple[str, object, dict]] = []
    seen: set[tuple[str, str]] = set()
    users: dict[tuple[str, str], set] = {}
    _state["users"] = users
    current = {"file": None}

    def add(kind, request, job=None):
        marker = (kind, build_cache.request_text(request))
        users.setdefault(marker, set()).add(current["file"])
        if marker not in seen:
            seen.add(marker)
            jobs.append((kind, request, job or {}))

    plugin = config.plugins.get("mkdocs-jupyter")
    for file in files.documentation_pages():
        current["file"] = file
        if plugin is not None and plugin.should_include(file):
            options = entries.notebook_options(plugin.config, file.abs_src_path)
            add("notebook", entries.notebook_request(file.src_uri, options), {"abs_src_path": file.abs_src_path})
            continue
        if not file.src_uri.endswith(".md"):
            continue
        with open(file.abs_src_path, encoding="utf-8-sig") as handle:
            text = handle.read()
        body, meta = get_data(text)
        own_module = facts.page_module(file.src_uri, meta)
        for match in facts.FACT.finditer(body):
            add("facts", match.group(1) or own_module)
        if BLOCK_START.search(body):
            for kind, request in scanned_blocks(body, config):
                add(kind, request)
    return jobs


def scanned_blocks(body: str, config) -> list:
    """The blocks of a page's text, from the cache while the text and the Markdown settings are unchanged
    (a prose edit rescans the edited page only)."""
    import hashlib

    request = {"text_sha256": hashlib.sha256(body.encode("utf-8")).hexdigest()}
    found = build_cache.load("scan", request)
    if found is None:
        started = time.perf_counter()
        found = _block_requests(body, config)
        settings = os.path.join(build_cache.PROJECT_DIR, "mkdocs.yml")
        build_cache.store("scan", request, found, {settings}, time.perf_counter() - started)
        found = json.loads(json.dumps(found, default=repr))  # as a later build reads it back
    return found


# --------------------------------------------------------------------------- before MkDocs needs them

def _jobs_count() -> int:
    value = os.environ.get("CALC_BUILD_JOBS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"CALC_BUILD_JOBS must be a whole number of processes, 1 or more; got {value!r}")
    return max(1, min(os.cpu_count() or 1, 4))


def _page_module(kind: str, request) -> str:
    if kind == "figure":  # a picture's module is in calc/diagrams, not a page's
        return "figure:" + request["name"].rsplit(".", 1)[0]
    return request if kind == "facts" else request["name"].rsplit(".", 1)[0]


def run_group(jobs) -> list:
    """Compute a group's entries one after another in this process; each as (value, error)."""
    import pickle

    results = []
    for kind, request, job in jobs:
        value, error = run_job(kind, request, job)
        if error is not None:
            try:
                pickle.loads(pickle.dumps(error))
            except Exception:  # an error that cannot travel: the build recomputes the entry to raise it itself
                error = _Unpicklable(repr(error))
        results.append((value, error))
    return results


class _Unpicklable(Exception):
    """Stands for an error a worker could not send back."""


def start(files, config) -> dict:
    """Load what the cache holds, and start computing what it lacks. Returns counts for the log, and in
    ``stale_pages`` the pages (MkDocs files) that use an entry computed anew."""
    finish()
    _state["values"] = {}
    _state["futures"] = {}
    _state["groups"] = {}
    _state["taken"] = {}
    cache_was_empty = _cache_is_empty()
    jobs = scan(files, config)
    missing = []
    _state["valid"] = {}
    for kind, request, job in jobs:
        stamp = build_cache.check(kind, request)
        if stamp is not None:  # its value is read when a page needs it (a dirty rebuild needs few)
            _state["valid"][(kind, build_cache.request_text(request))] = stamp
        else:
            old = build_cache.read_entry(kind, request)  # a stale entry still says how long it took
            seconds = (old or {}).get("seconds", DEFAULT_SECONDS[kind])
            missing.append((seconds, kind, request, job))
    # One group per page module: its entries run in one process and share the module's lru_caches. Page
    # modules do not import one another (tests/widgets/test_page_imports.py), so no group spans two.
    groups: dict[str, list] = {}
    for seconds, kind, request, job in missing:
        name = f"notebook:{request['src_uri']}" if kind == "notebook" else _page_module(kind, request)
        groups.setdefault(name, []).append((seconds, kind, request, job))
    ordered = sorted(groups.values(), key=lambda group: -sum(item[0] for item in group))  # longest first
    workers = min(_jobs_count(), len(ordered))
    if workers > 1 and sum(item[0] for item in missing) > POOL_THRESHOLD_S:
        context = multiprocessing.get_context("spawn")  # not fork: `mkdocs serve` runs threads
        pool = concurrent.futures.ProcessPoolExecutor(
            workers, mp_context=context, initializer=_worker_init,
            initargs=([build_cache.HOOKS_DIR, build_cache.PROJECT_DIR],))
        _state["pool"] = pool
        for group in ordered:
            group_jobs = [(kind, request, job) for _, kind, request, job in group]
            future = pool.submit(run_group, group_jobs)
            _state["groups"][future] = group_jobs
            for index, (kind, request, _) in enumerate(group_jobs):
                _state["futures"][(kind, build_cache.request_text(request))] = (future, index)
    stale = set()
    for _, kind, request, _ in missing:
        stale |= _state["users"].get((kind, build_cache.request_text(request)), set())
    counts = {"entries": len(jobs), "cached": len(jobs) - len(missing), "computing": len(missing),
              "workers": workers if _state["pool"] else 1, "stale_pages": stale}
    log.info("build cache: %(cached)d of %(entries)d entries reused, %(computing)d to compute "
             "(%(workers)d processes)", counts)
    _write_build_record(config, counts, cache_was_empty)
    return counts


def _cache_is_empty() -> bool:
    """Whether the cache holds no entry of any kind (a cold build: nothing reused, the page scans included)."""
    for _, _, names in os.walk(build_cache.cache_dir()):
        if any(name.endswith(".json") for name in names):
            return False
    return True


def build_record_path(site_dir: str) -> str:
    """Where a build into ``site_dir`` records how it used the cache (tests/site/test_build_cache.py reads it)."""
    import hashlib

    name = hashlib.sha256(os.path.realpath(site_dir).encode("utf-8")).hexdigest()[:16]
    return os.path.join(build_cache.PROJECT_DIR, "build", "site-builds", f"{name}.json")


def _write_build_record(config, counts: dict, cache_was_empty: bool) -> None:
    """Note, beside the build, whether the build into this site folder was cold (an empty cache, every entry
    computed): the cold = warm test then rebuilds it warm once instead of building cold and warm itself."""
    record = {"site_dir": os.path.realpath(config.site_dir), "site_url": config.site_url,
              "cache_dir": os.path.realpath(build_cache.cache_dir()), "cache_enabled": build_cache.enabled(),
              "cache_was_empty": cache_was_empty, "entries": counts["entries"], "reused": counts["cached"],
              "computed": counts["computing"], "at": time.time()}
    path = build_record_path(config.site_dir)
    try:
        os.makedirs(os.path.dirname(path), exist_ok=True)
        build_cache._write_json(path, record)
    except OSError as error:  # a read-only checkout builds all the same
        log.debug("build record not written: %s", error)


def finish() -> None:
    pool = _state.get("pool")
    if pool is not None:
        pool.shutdown(wait=True, cancel_futures=True)
    _state["pool"] = None
    _state["futures"] = {}
    _state["groups"] = {}
    _state["taken"] = {}


def value(kind: str, request, job=None):
    """The entry's value: from this build's scan, its worker, the cache on disk, or computed now."""
    marker = (kind, build_cache.request_text(request))
    if marker in _state["values"]:
        return _state["values"][marker]
    pending = _state["futures"].pop(marker, None)
    result, error = None, None
    stamp = _state["valid"].get(marker)
    if stamp is not None:
        result = build_cache.load_value(kind, request, stamp)
    if result is not None:
        pass
    elif pending is not None:
        future, index = pending
        try:
            result, error = _group_results(future)[index]
        except Exception as failure:  # the worker died or its answer did not arrive: compute it here
            log.debug("worker failed on %s: %s", marker, failure)
            result, error = None, _Unpicklable(repr(failure))
    else:
        result = build_cache.load(kind, request)
        if result is None:
            result, error = run_job(kind, request, job)
    if isinstance(error, _Unpicklable):
        result, error = run_job(kind, request, job)
    if error is not None:
        raise error
    _state["values"][marker] = result
    return result


def _group_results(future) -> list:
    """A submitted group's results. A group no worker has started yet is taken back and computed here: the
    build needs it now and would otherwise wait idle until a worker reached it. MkDocs reads the pages in
    order, so this process works through the entries it needs in page order while the workers take the longest
    groups first."""
    if future in _state["taken"]:
        return _state["taken"][future]
    if future.cancel():  # still queued: no worker will start it now
        results = _state["taken"][future] = run_group(_state["groups"][future])
        return results
    return future.result()


def block(kind: str, name: str, options: dict, uid: str) -> etree.Element:
    """A rendered block with its id, as an element whose strings Markdown leaves alone."""
    from markdown.util import AtomicString

    xml = value(kind, {"name": name, "options": options})
    element = etree.fromstring(xml.replace(f"w{entries.UID_TOKEN}", uid))
    for node in element.iter():  # every string was an AtomicString when rendered: keep it out of Markdown's reach
        if node.text is not None:
            node.text = AtomicString(node.text)
        if node.tail is not None:
            node.tail = AtomicString(node.tail)
    return element


def facts(module_name: str) -> dict[str, str]:
    return value("facts", module_name)


def notebook(src_uri: str, abs_src_path: str, plugin_config) -> dict:
    options = entries.notebook_options(plugin_config, abs_src_path)
    return value("notebook", entries.notebook_request(src_uri, options), {"abs_src_path": abs_src_path})
