"""The build cache (hooks/build_cache.py, hooks/prefetch.py): what an edit invalidates, and cold = warm.

The rule is coarse and one-directional: an entry's key is its request, its hook code, its page module's file
and one digest of the rest of calc. So a page-module edit recomputes that page's entries, any other calc edit
recomputes every entry, and a prose edit recomputes nothing. The invalidation tests work on a copy of
``calc/``, ``hooks/`` and ``docs/`` in a temporary folder, edit files there and ask, in a fresh Python process
(so the copy's ``calc`` is the one imported), which entries the cache still serves. The cold = warm test
compares a build with an empty cache and one with the cache the first filled, every file byte for byte (the
cold one may be the build `.ci/run`'s `make test` made: see the test).
"""

from __future__ import annotations

import ast
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
NOTEBOOK_OPTIONS = {"execute": True, "kernel_name": "python3", "theme": "light", "allow_errors": False,
                    "show_input": True, "no_input": False, "no_prompt": False, "remove_tag_config": {},
                    "highlight_extra_classes": "", "include_requirejs": False, "custom_mathjax_url": "",
                    "toc_depth": 6}

# A sample of cheap entries of each kind, on pages that import different parts of calc.
ENTRIES = {
    "kv_facts": ("facts", {"module": "kv_cache_arithmetic", "names": ["conversation_8b"]}),
    "accuracy_facts": ("facts", {"module": "accuracy", "names": ["n_measurements"]}),
    "no_module_facts": ("facts", {"module": "glossary", "names": []}),  # a page with no module of its own
    "kv_widget": ("widget", {"name": "kv_cache_arithmetic.kv_per_token",
                             "options": {"set": {"model": "llama-3.1-70b"}, "hide": []}}),
    "kv_widget_other_args": ("widget", {"name": "kv_cache_arithmetic.kv_per_token",
                                        "options": {"set": {"model": "llama-3.1-8b"}, "hide": []}}),
    "kv_drill": ("drill", {"name": "kv_cache_arithmetic.kv_bytes_drill", "options": {"seed": 0}}),
    "kv_figure": ("figure", {"name": "kv.block_table", "options": {}}),  # /// figure | kv.block_table (step 5)
}
ALL = [*ENTRIES, "notebook"]
KV_PAGE = {"kv_facts", "kv_widget", "kv_widget_other_args", "kv_drill"}

PROBE = r"""
import json, sys
project, mode, entries_json = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
sys.path[:0] = [project + "/hooks", project]
import build_cache, entries, prefetch
assert build_cache.PROJECT_DIR == project, build_cache.PROJECT_DIR
digests = build_cache.project_digests(project)
out = {}
for label, (kind, request) in entries_json.items():
    job = {}
    if kind == "notebook":
        job = {"abs_src_path": project + "/" + request["path"]}
        request = entries.notebook_request(request["path"].removeprefix("docs/"), job["abs_src_path"], request["options"])
    key = entries.key(kind, request, digests)
    hit = build_cache.has(kind, key) and build_cache.load(kind, key) is not None
    if not hit and mode == "compute":
        value, error = prefetch.run_job(kind, request, key, job)
        if error is not None:
            raise error
    out[label] = "hit" if hit else "miss"
print(json.dumps(out))
"""


@pytest.fixture(scope="module")
def project(tmp_path_factory):
    """A copy of the parts of the project the cache reads, with its own cache folder."""
    folder = tmp_path_factory.mktemp("project")
    for part in ("calc", "hooks", "docs"):
        shutil.copytree(os.path.join(ROOT, part), folder / part, ignore=shutil.ignore_patterns("__pycache__"))
    return folder


def probe(project, mode: str, labels=ALL) -> dict[str, str]:
    entries = {label: ENTRIES[label] for label in labels if label != "notebook"}
    if "notebook" in labels:
        entries["notebook"] = ("notebook", {"path": NOTEBOOK, "options": NOTEBOOK_OPTIONS})
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


def hits_except(missed) -> dict[str, str]:
    return {label: "miss" if label in missed else "hit" for label in ALL}


def test_a_second_run_reuses_every_entry(project):
    assert set(probe(project, "compute").values()) == {"miss"}
    assert probe(project, "load") == hits_except(())


def test_an_edit_to_one_page_module_recomputes_that_page_only(project):
    path = project / "calc/widgets/kv_cache_arithmetic.py"
    before = edit(path)
    try:
        assert probe(project, "load") == hits_except(KV_PAGE)
    finally:
        restore(path, before)
    assert probe(project, "load") == hits_except(())  # restored: the same keys again


@pytest.mark.parametrize("path", ["calc/memory.py", "calc/latency_fit.py", "calc/data/measurements.json",
                                  "calc/diagrams/kv.py", "calc/widgets/framework.py", "calc/sim/presets"])
def test_any_other_edit_to_calc_recomputes_every_entry(project, path):
    """The science, its data, the pictures, the widget layer's shared modules, a preset: one digest."""
    target = project / path
    if target.is_dir():  # a new file in a data folder
        added = target / "an-added-preset.json"
        added.write_text("{}\n", encoding="utf-8")
        try:
            assert probe(project, "load") == hits_except(ALL)
        finally:
            added.unlink()
        return
    before = edit(target, " " if path.endswith(".json") else "\n# an edit\n")
    try:
        assert probe(project, "load") == hits_except(ALL)
    finally:
        restore(target, before)


def test_a_prose_edit_recomputes_nothing(project):
    page = project / "docs/lesson/02-kv-cache-arithmetic.md"
    before = edit(page, "\nOne more sentence of prose.\n")
    try:
        assert probe(project, "load") == hits_except(())
    finally:
        restore(page, before)


def test_a_new_module_for_a_page_without_one_recomputes_its_facts(project):
    path = project / "calc/widgets/glossary.py"
    path.write_text("from calc.widgets.framework import fact\n\n\n@fact\ndef new():\n    return 1\n", encoding="utf-8")
    try:
        assert probe(project, "load", ["no_module_facts", "kv_facts"]) == {"no_module_facts": "miss", "kv_facts": "hit"}
    finally:
        path.unlink()


def test_the_notebook_text_and_the_hook_code_are_part_of_the_key(project):
    before = edit(project / NOTEBOOK, "\n# %%\nprint('another cell')\n")
    try:
        assert probe(project, "load") == hits_except({"notebook"})
    finally:
        restore(project / NOTEBOOK, before)
    before = edit(project / "hooks/widget_html.py")
    try:  # the widgets' and drills' renderer: not the facts, the figure or the notebook
        assert probe(project, "load") == hits_except({"kv_widget", "kv_widget_other_args", "kv_drill"})
    finally:
        restore(project / "hooks/widget_html.py", before)
    before = edit(project / "hooks/build_cache.py")
    try:
        assert probe(project, "load") == hits_except(ALL)
    finally:
        restore(project / "hooks/build_cache.py", before)


def test_a_changed_argument_is_another_entry():
    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import build_cache
        import entries
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    digests = build_cache.project_digests()
    first, second = ENTRIES["kv_widget"][1], ENTRIES["kv_widget_other_args"][1]
    assert entries.key("widget", first, digests) != entries.key("widget", second, digests)
    same = json.loads(json.dumps(first))
    assert entries.key("widget", same, digests) == entries.key("widget", first, digests)
    changed = json.loads(json.dumps(first))
    changed["options"]["hide"] = ["model"]
    assert entries.key("widget", changed, digests) != entries.key("widget", first, digests)


def _calc_imports(path: str) -> set[str]:
    with open(path, encoding="utf-8") as handle:
        tree = ast.parse(handle.read())
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and not node.level:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def test_nothing_but_its_own_entries_reads_a_page_module():
    """The premise of the page-module digest: no other file of calc (nor a notebook) imports a page module,
    so an edit to one changes only the entries keyed on it. (calc/widgets/__init__.py and runtime.py load page
    modules by name, for the browser; the framework loads a widget's own module.)"""
    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import facts
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    modules = {m for m in facts.page_modules(os.path.join(ROOT, "docs"))
               if os.path.exists(os.path.join(ROOT, "calc", "widgets", f"{m}.py"))}
    assert {"kv_cache_arithmetic", "accuracy", "deep_roofline"} <= modules
    page_files = {os.path.join(ROOT, "calc", "widgets", f"{m}.py") for m in modules}
    readers = {}
    sources = [os.path.join(folder, name) for folder, _, names in os.walk(os.path.join(ROOT, "calc"))
               for name in names if name.endswith(".py")]
    sources += [os.path.join(ROOT, "docs", "deep-dives", "notebooks", n)
                for n in os.listdir(os.path.join(ROOT, "docs", "deep-dives", "notebooks")) if n.endswith(".py")]
    for path in sources:
        if path in page_files:
            continue
        imported = {m for m in modules if f"calc.widgets.{m}" in _calc_imports(path)}
        if imported:
            readers[os.path.relpath(path, ROOT)] = sorted(imported)
    assert readers == {}


SCAN = r"""
import json, os, sys
from mkdocs.config import load_config
from mkdocs.structure.files import get_files
sys.path.insert(0, os.path.join(os.getcwd(), "hooks"))
import site_hooks
config = site_hooks.on_config(load_config("mkdocs.yml"))
scan, build_cache = sys.modules["scan"], sys.modules["build_cache"]  # on_config imports the hook modules anew
jobs, users = scan.scan(get_files(config), config, site_hooks._build.digests)
figures = {request["name"]: sorted(f.src_uri for f in users[(kind, build_cache.request_text(request))])
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
        import build_cache
        path = build_cache.build_record_path(str(site_dir))
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
    """Prefetch._group_results: the build waits for a group a worker has started, and takes back one still
    queued and computes it itself (here its one worker is busy on the first group, so the second never starts)."""
    import concurrent.futures
    import time

    sys.path.insert(0, os.path.join(ROOT, "hooks"))
    try:
        import prefetch
    finally:
        sys.path.remove(os.path.join(ROOT, "hooks"))
    computed_here = []
    monkeypatch.setattr(prefetch, "run_group", lambda jobs: computed_here.append(jobs) or [(os.getpid(), None)])
    build = prefetch.Prefetch(digests=None)
    with concurrent.futures.ProcessPoolExecutor(1) as pool:
        started = pool.submit(_sleep_then_pid, 1.0)
        for _ in range(100):  # until the worker holds it (it leaves the queue: cancel() can no longer take it)
            if started.running():
                break
            time.sleep(0.05)
        queued = [pool.submit(_sleep_then_pid, 0.0) for _ in range(3)]  # the last one is past the call queue
        build.groups[queued[-1]] = [("facts", "a_page", "key", {})]
        assert build._group_results(queued[-1]) == [(os.getpid(), None)]
        assert queued[-1].cancelled() and computed_here == [[("facts", "a_page", "key", {})]]
        assert build._group_results(queued[-1]) == [(os.getpid(), None)] and len(computed_here) == 1  # once
        worker_pid = started.result()
        assert worker_pid != os.getpid()
        build.groups[started] = [("facts", "another_page", "key", {})]
        assert build._group_results(started) == worker_pid and len(computed_here) == 1  # awaited, not redone
