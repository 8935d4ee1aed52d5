"""Compute the build's missing entries before MkDocs needs them, in parallel, through the build cache.

One :class:`Prefetch` per build (made at ``on_files``, finished at ``on_post_build``): :meth:`Prefetch.start`
takes the entries the page scan found (:mod:`scan`), keys each (:mod:`entries`), and hands what the cache lacks
to a pool of worker processes while MkDocs reads the pages. :meth:`Prefetch.value` then gives MkDocs each value:
from the cache, from its worker (waiting if it has started; a group still queued is taken back and computed
here, since the build needs it now), or computed on the spot (an entry the scan missed).
"""

from __future__ import annotations

import concurrent.futures
import logging
import multiprocessing
import os
import pickle
import sys
import time

import build_cache
import entries

log = logging.getLogger("mkdocs.hooks.prefetch")
POOL_THRESHOLD_S = 1.5  # below this much missing work, starting worker processes costs more than it saves


def jobs_count() -> int:
    """``CALC_BUILD_JOBS`` processes compute missing entries (default: the number of CPUs, at most 4)."""
    value = os.environ.get("CALC_BUILD_JOBS")
    if value:
        try:
            return max(1, int(value))
        except ValueError:
            raise ValueError(f"CALC_BUILD_JOBS must be a whole number of processes, 1 or more; got {value!r}")
    return max(1, min(os.cpu_count() or 1, 4))


def run_job(kind: str, request, key: str, job: dict):
    """Compute and store one entry (in a worker process or in the build's own); return (value, error)."""
    started = time.perf_counter()
    try:
        value = entries.compute(kind, request, job)
    except Exception as error:  # the build raises it where the page uses the entry, with the page's context
        return None, error
    build_cache.store(kind, key, request, value, time.perf_counter() - started)
    return value, None


class _Unpicklable(Exception):
    """Stands for an error a worker could not send back."""


def run_group(jobs) -> list:
    """Compute a group's entries one after another in this process; each as (value, error)."""
    results = []
    for kind, request, key, job in jobs:
        value, error = run_job(kind, request, key, job)
        if error is not None:
            try:
                pickle.loads(pickle.dumps(error))
            except Exception:  # an error that cannot travel: the build recomputes the entry to raise it itself
                error = _Unpicklable(repr(error))
        results.append((value, error))
    return results


def _worker_init(paths: list[str]) -> None:
    for path in reversed(paths):
        if path not in sys.path:
            sys.path.insert(0, path)


def group_name(kind: str, request) -> str:
    """Entries of one page module run in one process and share its lru_caches (page modules do not import one
    another: tests/widgets/test_page_imports.py); a notebook and a figure's diagrams module are groups apart.

    >>> group_name("facts", {"module": "accuracy", "names": ["mape"]})
    'accuracy'
    >>> group_name("figure", {"name": "kv.block_table", "options": {}})
    'figure:kv'
    """
    if kind == "notebook":
        return f"notebook:{request['src_uri']}"
    if kind == "figure":
        return "figure:" + request["name"].rsplit(".", 1)[0]
    return request["module"] if kind == "facts" else request["name"].rsplit(".", 1)[0]


class Prefetch:
    """The entries of one build: their keys, their values once read, and the workers computing the missing."""

    def __init__(self, digests: build_cache.Digests):
        self.digests = digests
        self.values: dict = {}
        self.futures: dict = {}  # (kind, request text) -> (future, index in its group)
        self.groups: dict = {}  # future -> its jobs
        self.taken: dict = {}  # future -> results computed here instead
        self.pool = None

    def key(self, kind: str, request) -> str:
        return entries.key(kind, request, self.digests)

    def start(self, jobs) -> dict:
        """Start computing the entries of ``jobs`` the cache lacks. Returns counts for the log, the missing
        entries' markers in ``missing`` and every entry's key by marker in ``keys``."""
        missing, keys = [], {}
        for kind, request, job in jobs:
            key = self.key(kind, request)
            keys[(kind, build_cache.request_text(request))] = key
            if not build_cache.has(kind, key):
                seconds = build_cache.seconds_of(kind, request) or entries.default_seconds(kind)
                missing.append((seconds, kind, request, key, job))
        groups: dict[str, list] = {}
        for item in missing:
            groups.setdefault(group_name(item[1], item[2]), []).append(item)
        ordered = sorted(groups.values(), key=lambda group: -sum(item[0] for item in group))  # longest first
        workers = min(jobs_count(), len(ordered))
        if workers > 1 and sum(item[0] for item in missing) > POOL_THRESHOLD_S:
            context = multiprocessing.get_context("spawn")  # not fork: `mkdocs serve` runs threads
            self.pool = concurrent.futures.ProcessPoolExecutor(
                workers, mp_context=context, initializer=_worker_init,
                initargs=([build_cache.HOOKS_DIR, build_cache.PROJECT_DIR],))
            for group in ordered:
                group_jobs = [(kind, request, key, job) for _, kind, request, key, job in group]
                future = self.pool.submit(run_group, group_jobs)
                self.groups[future] = group_jobs
                for index, (kind, request, _, _) in enumerate(group_jobs):
                    self.futures[(kind, build_cache.request_text(request))] = (future, index)
        counts = {"entries": len(jobs), "cached": len(jobs) - len(missing), "computing": len(missing),
                  "workers": workers if self.pool else 1,
                  "missing": {(kind, build_cache.request_text(request)) for _, kind, request, _, _ in missing},
                  "keys": keys}
        log.info("build cache: %(cached)d of %(entries)d entries reused, %(computing)d to compute "
                 "(%(workers)d processes)", counts)
        return counts

    def finish(self) -> None:
        if self.pool is not None:
            self.pool.shutdown(wait=True, cancel_futures=True)
        self.pool = None
        self.futures, self.groups, self.taken = {}, {}, {}

    def value(self, kind: str, request, job: dict | None = None):
        """The entry's value: read already, from its worker, from the cache on disk, or computed now."""
        marker = (kind, build_cache.request_text(request))
        if marker in self.values:
            return self.values[marker]
        key = self.key(kind, request)
        pending = self.futures.pop(marker, None)
        result, error = None, None
        if pending is not None:
            future, index = pending
            try:
                result, error = self._group_results(future)[index]
            except Exception as failure:  # the worker died or its answer did not arrive: compute it here
                log.debug("worker failed on %s: %s", marker, failure)
                result, error = None, _Unpicklable(repr(failure))
        else:
            result = build_cache.load(kind, key)
            if result is None:
                result, error = run_job(kind, request, key, job or {})
        if isinstance(error, _Unpicklable):
            result, error = run_job(kind, request, key, job or {})
        if error is not None:
            raise error
        self.values[marker] = result
        return result

    def _group_results(self, future) -> list:
        """A submitted group's results. A group no worker has started yet is taken back and computed here: the
        build needs it now and would otherwise wait idle until a worker reached it. MkDocs reads the pages in
        order, so this process works through the entries it needs in page order while the workers take the
        longest groups first."""
        if future in self.taken:
            return self.taken[future]
        if future.cancel():  # still queued: no worker will start it now
            self.taken[future] = run_group(self.groups[future])
            return self.taken[future]
        return future.result()
