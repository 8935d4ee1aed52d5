"""The build cache (hooks/build_cache.py, hooks/prefetch.py): what an edit invalidates, and cold = warm.

The invalidation tests work on a copy of ``calc/`` and ``hooks/`` in a temporary folder,
edit files there and ask, in a fresh Python process (so the copy's ``calc`` is the one
imported), which entries the cache still serves. The last test compares a build with an empty
cache and one with the cache the first filled, every file byte for byte (the cold one may be the
build `.ci/run`'s `make test` made: see the test).
"""

from __future__ import annotations

import filecmp
import json
import os
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

# The invalidation tests share one project copy whose cache the first test fills: one xdist group keeps them on
# one worker, in file order (spread over two workers, the second worker's copy starts empty and every probe
# misses). The cold = warm test has its own group (below, the closest mark wins).
pytestmark = pytest.mark.xdist_group("build_cache_invalidation")
NOTEBOOK = "docs/deep-dives/notebooks/memory-equation.py"

# A sample of cheap entries of each kind, on pages that import different parts of calc.
ENTRIES = {
    "kv_facts": ("facts", "kv_cache_arithmetic"),
    "accuracy_facts": ("facts", "accuracy"),
    "no_module_facts": ("facts", "glossary"),  # a page with no module of its own
    "kv_widget": ("widget", {"name": "kv_cache_arithmetic.kv_per_token",
                             "options": {"set": {"model": "llama-3.1-70b"}, "hide": []}}),
    "kv_widget_other_args": ("widget", {"name": "kv_cache_arithmetic.kv_per_token",
                                        "options": {"set": {"model": "llama-3.1-8b"}, "hide": []}}),
    "kv_drill": ("drill", {"name": "kv_cache_arithmetic.kv_bytes_drill", "options": {"seed": 0}}),
    "kv_figure": ("figure", {"name": "kv.block_table"}),  # /// figure | kv.block_table (step 5)
}

PROBE = r"""
import json, sys
project, mode, entries = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [project + "/hooks", project]
import build_cache, prefetch
assert build_cache.PROJECT_DIR == project, build_cache.PROJECT_DIR
out = {}
for label, (kind, request, job) in entries.items():
    hit = build_cache.load(kind, request) is not None
    if not hit and mode == "compute":
        value, error = prefetch.run_job(kind, request, job)
        if error is not None:
            raise error
    out[label] = "hit" if hit else "miss"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the parts of the project the cache reads, with its own cache folder."""
    folder = tmp_path_factory.mktemp("project")
    for part in ("calc", "hooks"):
        shutil.copytree(os.path.join(ROOT, part), folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    (folder / "docs/deep-dives/notebooks").mkdir(parents=True)
    shutil.copy(os.path.join(ROOT, NOTEBOOK), folder / NOTEBOOK)
    return folder


def probe(project, mode: str, labels, with_notebook: bool = False) -> dict[str, str]:
    entries = {label: (*ENTRIES[label], {}) for label in labels}
    if with_notebook:
        sys.path.insert(0, os.path.join(ROOT, "hooks"))
        try:
            import entries as entry_code
            options = {"execute": True, "kernel_name": "python3", "theme": "light", "allow_errors": False,
                       "show_input": True, "no_input": False, "no_prompt": False, "remove_tag_config": {},
                       "highlight_extra_classes": "", "include_requirejs": False, "custom_mathjax_url": "",
                       "toc_depth": 6}
            request = entry_code.notebook_request("deep-dives/notebooks/memory-equation.py", options)
        finally:
            sys.path.remove(os.path.join(ROOT, "hooks"))
        entries["notebook"] = ("notebook", request, {"abs_src_path": str(project / NOTEBOOK)})
    env = {**os.environ, "CALC_BUILD_CACHE_DIR": str(project / "cache"), "CALC_BUILD_CACHE": "1"}
    done = subprocess.run([sys.executable, "-c", PROBE, str(project), mode, json.dumps(entries)],
                          capture_output=True, text=True, env=env, timeout=300, cwd=str(project))
    assert done.returncode == 0, done.stderr[-3000:]
    return json.loads(done.stdout.strip().splitlines()[-1])


def edit(path, text: str = "\n# an edit\n") -> str:
    with open(path, encoding="utf-8") as handle:
        before = handle.read()
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)
    return before


def restore(path, before: str) -> None:
    with open(path, "w", encoding="utf-8") as handle:
        handle.write(before)


ALL = list(ENTRIES)


def test_a_second_run_reuses_every_entry(project):
    assert set(probe(project, "compute", ALL, with_notebook=True).values()) == {"miss"}
    assert probe(project, "load", ALL, with_notebook=True) == {label: "hit" for label in [*ALL, "notebook"]}


def test_an_edit_to_one_page_module_invalidates_that_page_only(project):
    path = project / "calc/widgets/kv_cache_arithmetic.py"
    before = edit(path)
    try:
        assert probe(project, "load", ALL, with_notebook=True) == {
            "kv_facts": "miss", "kv_widget": "miss", "kv_widget_other_args": "miss", "kv_drill": "miss",
            "accuracy_facts": "hit", "no_module_facts": "hit", "notebook": "hit", "kv_figure": "hit"}
    finally:
        restore(path, before)
    assert set(probe(project, "load", ALL, with_notebook=True).values()) == {"hit"}  # restored: valid again


def test_a_data_file_invalidates_the_pages_that_read_it(project):
    path = project / "calc/data/measurements.json"
    before = edit(path, " ")
    try:
        result = probe(project, "load", ALL, with_notebook=True)
        # The accuracy page reads it, and so does step 5's block-table figure: it draws calc.sim's BlockPool, and
        # calc.sim prices speculation with acceptances fitted on this file's calibration rows (calc.speculative).
        assert result["accuracy_facts"] == result["kv_figure"] == "miss"
        assert {k: v for k, v in result.items() if k not in ("accuracy_facts", "kv_figure")} == {
            "kv_facts": "hit", "kv_widget": "hit", "kv_widget_other_args": "hit", "kv_drill": "hit",
            "no_module_facts": "hit", "notebook": "hit"}
    finally:
        restore(path, before)


def test_a_science_module_invalidates_its_importers_and_the_notebooks_that_import_it(project):
    memory = project / "calc/memory.py"  # imported by the KV page and the memory-equation notebook
    before = edit(memory)
    try:
        result = probe(project, "load", ALL, with_notebook=True)
        assert result["kv_facts"] == result["kv_widget"] == result["notebook"] == result["kv_figure"] == "miss"
        assert result["no_module_facts"] == "hit"
    finally:
        restore(memory, before)
    unused = project / "calc/__main__.py"  # imported by none of the sampled entries (the accuracy page imports
    before = edit(unused)                   # calc.sim, calc.latency_accuracy and calc.latency_fit, so those would not do)
    try:
        assert set(probe(project, "load", ALL, with_notebook=True).values()) == {"hit"}
    finally:
        restore(unused, before)


def test_an_edit_to_a_diagrams_module_invalidates_its_figures_only(project):
    kv = project / "calc/diagrams/kv.py"  # draws kv.block_table
    before = edit(kv)
    try:
        assert probe(project, "load", ALL, with_notebook=True) == {
            **{label: "hit" for label in [*ALL, "notebook"]}, "kv_figure": "miss"}
    finally:
        restore(kv, before)
    other = project / "calc/diagrams/prefix.py"  # another module's pictures: kv.py does not import it
    before = edit(other)
    try:
        assert probe(project, "load", ["kv_figure", "kv_facts"]) == {"kv_figure": "hit", "kv_facts": "hit"}
    finally:
        restore(other, before)
    svg = project / "calc/diagrams/svg.py"  # the drawing primitives every picture uses
    before = edit(svg)
    try:
        assert probe(project, "load", ["kv_figure", "kv_facts"]) == {"kv_figure": "miss", "kv_facts": "hit"}
    finally:
        restore(svg, before)


SCAN = r"""
import json, os, sys
from mkdocs.config import load_config
from mkdocs.structure.files import get_files
sys.path.insert(0, os.path.join(os.getcwd(), "hooks"))
import site_hooks
config = site_hooks.on_config(load_config("mkdocs.yml"))
prefetch = sys.modules["prefetch"]  # on_config imports the hook modules anew
jobs = prefetch.scan(get_files(config), config)
figures = {request["name"]: sorted(f.src_uri for f in prefetch._state["users"][(kind, prefetch.build_cache.request_text(request))])
           for kind, request, _ in jobs if kind == "figure"}
print(json.dumps(figures))
"""


def test_the_scan_finds_every_figure_and_the_pages_that_show_it():
    """The scan lists each figure block with the pages that show it: what `make serve` marks dirty when a
    picture's entry is computed anew (hooks/site_hooks.py, on_files). Run apart: on_config re-imports calc."""
    written = {}
    for folder, _, names in os.walk(os.path.join(ROOT, "docs")):
        for name in (n for n in names if n.endswith(".md")):
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                for line in handle:
                    if line.strip().startswith("/// figure |"):
                        page = os.path.relpath(path, os.path.join(ROOT, "docs")).replace(os.sep, "/")
                        written.setdefault(line.split("|", 1)[1].strip(), set()).add(page)
    assert len(written) >= 5, written  # steps 2, 5, 6, 9, 12, 18 and 20 draw pictures
    done = subprocess.run([sys.executable, "-c", SCAN], capture_output=True, text=True, cwd=ROOT, timeout=300,
                          env={**os.environ, "CALC_BUILD_CACHE_DIR": os.path.join(ROOT, "build", "calc-cache")})
    assert done.returncode == 0, done.stderr[-3000:]
    scanned = json.loads(done.stdout.strip().splitlines()[-1])
    assert {name: set(pages) for name, pages in scanned.items()} == written


def test_a_new_module_for_a_page_without_one_invalidates_its_facts(project):
    path = project / "calc/widgets/glossary.py"
    path.write_text("def facts():\n    return {'new': 1}\n", encoding="utf-8")
    try:
        result = probe(project, "load", ["no_module_facts", "kv_facts"])
        assert result == {"no_module_facts": "miss", "kv_facts": "hit"}
    finally:
        path.unlink()


def test_the_notebook_text_and_the_hook_code_are_part_of_the_key(project):
    before = edit(project / NOTEBOOK, "\n# %%\nprint('another cell')\n")
    try:
        result = probe(project, "load", ["kv_facts"], with_notebook=True)
        assert result == {"kv_facts": "hit", "notebook": "miss"}
    finally:
        restore(project / NOTEBOOK, before)
    before = edit(project / "hooks/widget_html.py")
    try:
        result = probe(project, "load", ["kv_facts", "kv_widget", "kv_drill"], with_notebook=True)
        assert result == {"kv_facts": "hit", "kv_widget": "miss", "kv_drill": "miss", "notebook": "hit"}
    finally:
        restore(project / "hooks/widget_html.py", before)


def test_a_changed_argument_is_another_entry(project):
    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import build_cache
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    first, second = ENTRIES["kv_widget"][1], ENTRIES["kv_widget_other_args"][1]
    assert build_cache.entry_key("widget", first) != build_cache.entry_key("widget", second)
    same = json.loads(json.dumps(first))
    assert build_cache.entry_key("widget", same) == build_cache.entry_key("widget", first)
    changed = json.loads(json.dumps(first))
    changed["options"]["hide"] = ["model"]
    assert build_cache.entry_key("widget", changed) != build_cache.entry_key("widget", first)


def _build(site_dir, cache_dir, site_url):
    env = {**os.environ, "CALC_BUILD_CACHE_DIR": str(cache_dir), "CALC_BUILD_CACHE": "1", "SITE_URL": site_url}
    done = subprocess.run([os.path.join(os.path.dirname(sys.executable), "mkdocs"), "build", "--strict",
                           "--site-dir", str(site_dir)], cwd=ROOT, env=env, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    return done.stderr


def _differences(left, right) -> list[str]:
    out = []
    comparison = filecmp.dircmp(left, right)
    stack = [("", comparison)]
    while stack:
        prefix, cmp = stack.pop()
        out += [f"only in the cold build: {prefix}{n}" for n in cmp.left_only]
        out += [f"only in the warm build: {prefix}{n}" for n in cmp.right_only]
        _, mismatch, errors = filecmp.cmpfiles(cmp.left, cmp.right, cmp.common_files, shallow=False)
        out += [f"differs: {prefix}{n}" for n in mismatch + errors]
        stack += [(f"{prefix}{name}/", sub) for name, sub in cmp.subdirs.items()]
    return sorted(out)


def _last_build_of(site_dir) -> dict | None:
    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import prefetch
        path = prefetch.build_record_path(str(site_dir))
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    try:
        with open(path, encoding="utf-8") as handle:
            record = json.load(handle)
    except (OSError, ValueError):
        return None
    manifest = os.path.join(site_dir, "assets", "runtime", "manifest.json")
    if not os.path.exists(manifest) or os.path.getmtime(manifest) < record["at"]:
        return None  # the build that wrote the record did not finish
    return record


@pytest.mark.site
@pytest.mark.xdist_group("build_cache_cold_warm")
def test_a_cold_build_equals_a_warm_build_byte_for_byte(tmp_path):
    """A build with an empty cache and one from the cache it filled give the same files. When the site
    `make test` built (site/) was cold (`.ci/run`, a fresh clone: its record in build/site-builds/ says every
    entry was computed into an empty cache), it is the cold side, and one warm rebuild from the cache it filled
    is the other. Otherwise both are built here. (A warm site/ is not compared with a cold build of the test's:
    the notebooks' HTML carries cell ids jupytext draws at random, so two cold builds differ; a warm one copies
    its cold.)"""
    site = os.path.join(ROOT, "site")
    record = _last_build_of(site)
    if record and record["cache_enabled"] and record["cache_was_empty"] and record["computed"] == record["entries"]:
        cold, warm = site, tmp_path / "warm"
        warm_log = _build(warm, record["cache_dir"], record["site_url"])
    else:
        site_url = os.environ.get("SITE_URL", "http://127.0.0.1:8765/")
        cold, warm = tmp_path / "cold", tmp_path / "warm"
        cold_log = _build(cold, tmp_path / "cache", site_url)
        assert "0 of" in cold_log and "entries reused" in cold_log, cold_log[-2000:]
        warm_log = _build(warm, tmp_path / "cache", site_url)
    assert ", 0 to compute" in warm_log, warm_log[-2000:]
    assert _differences(cold, warm) == []


def _sleep_then_pid(seconds: float) -> int:
    import time

    time.sleep(seconds)
    return os.getpid()


def test_a_group_no_worker_started_is_computed_in_the_build_and_a_started_one_awaited(monkeypatch):
    """prefetch._group_results: the build waits for a group a worker has started, and takes back one still
    queued and computes it itself (here its one worker is busy on the first group, so the second never starts)."""
    import concurrent.futures

    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import prefetch
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    computed_here = []
    monkeypatch.setattr(prefetch, "run_group", lambda jobs: computed_here.append(jobs) or [(os.getpid(), None)])
    monkeypatch.setitem(prefetch._state, "groups", {})
    monkeypatch.setitem(prefetch._state, "taken", {})
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        started = pool.submit(_sleep_then_pid, 1.0)
        for _ in range(100):  # until the worker holds it (it leaves the queue: cancel() can no longer take it)
            if started.running():
                break
            import time
            time.sleep(0.05)
        queued = [pool.submit(_sleep_then_pid, 0.0) for _ in range(3)]  # the last one is past the call queue
        prefetch._state["groups"][queued[-1]] = [("facts", "a_page", {})]
        assert prefetch._group_results(queued[-1]) == [(os.getpid(), None)]
        assert queued[-1].cancelled() and computed_here == [[("facts", "a_page", {})]]
        assert prefetch._group_results(queued[-1]) == [(os.getpid(), None)] and len(computed_here) == 1  # once
        worker_pid = started.result()
        assert worker_pid != os.getpid()
        prefetch._state["groups"][started] = [("facts", "another_page", {})]
        assert prefetch._group_results(started) == worker_pid and len(computed_here) == 1  # awaited, not redone
