"""Copy the browser runtime into the built site and pack ``calc`` for the worker.

Nothing is ever loaded from a CDN: Pyodide, Plotly.js and KaTeX come from
``node_modules`` (pinned by ``package-lock.json``) and are served from the site's
own origin under ``assets/vendor/``. ``calc`` travels as a zip with a content hash
in its name, recorded in ``assets/runtime/manifest.json`` for the worker.
"""

from __future__ import annotations

import gzip
import hashlib
import html
import io
import json
import logging
import os
import posixpath
import re
import shutil
import subprocess
import zipfile

# What the runtime needs of each npm package: (package, files or folders, destination under assets/vendor/)
RUNTIME_FILES = (
    ("pyodide", ("pyodide.mjs", "pyodide.asm.mjs", "pyodide.asm.wasm", "python_stdlib.zip", "pyodide-lock.json"),
     "pyodide"),
    ("plotly.js-basic-dist-min", ("plotly-basic.min.js",), "plotly"),
    ("katex", ("dist/katex.min.js", "dist/katex.min.css", "dist/contrib/auto-render.min.js", "dist/fonts"), "katex"),
)
ZIP_DATE = (2020, 1, 1, 0, 0, 0)  # fixed, so the same sources always give the same zip and hash
LIB_DIR = "/home/pyodide/lib"  # where the worker unpacks calc (worker.mjs says the same)
SNAPSHOT_SCRIPT = os.path.join(os.path.dirname(os.path.abspath(__file__)), "pyodide_snapshot.mjs")
SNAPSHOT_TIMEOUT_S = 180
log = logging.getLogger("mkdocs.hooks.vendor")


class MissingRuntime(RuntimeError):
    """node_modules lacks a runtime file: run ``npm ci`` (``make`` does it for you)."""


def _copy(source: str, destination: str) -> None:
    if os.path.isdir(source):
        for name in sorted(os.listdir(source)):
            _copy(os.path.join(source, name), os.path.join(destination, name))
        return
    if os.path.exists(destination) and os.path.getsize(destination) == os.path.getsize(source) \
            and os.path.getmtime(destination) >= os.path.getmtime(source):
        return  # unchanged since the last build: keep `mkdocs serve` rebuilds quick
    os.makedirs(os.path.dirname(destination), exist_ok=True)
    shutil.copy2(source, destination)


def calc_zip_bytes(project_dir: str) -> bytes:
    """The ``calc`` package as a deterministic zip: .py and .json files, sorted, fixed dates."""
    buffer = io.BytesIO()
    package_dir = os.path.join(project_dir, "calc")
    entries = []
    for folder, dirs, files in os.walk(package_dir):
        dirs[:] = sorted(d for d in dirs if d != "__pycache__")
        for name in files:
            if name.endswith((".py", ".json")):
                path = os.path.join(folder, name)
                entries.append((os.path.relpath(path, project_dir).replace(os.sep, "/"), path))
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive:
        for arcname, path in sorted(entries):
            info = zipfile.ZipInfo(arcname, ZIP_DATE)
            info.compress_type = zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            with open(path, "rb") as handle:
                archive.writestr(info, handle.read())
    return buffer.getvalue()


def vendor_runtime(project_dir: str, site_dir: str, site_url: str = "") -> dict:
    """Copy the runtime files and write the calc zip and the manifest; return the manifest."""
    modules = os.path.join(project_dir, "node_modules")
    vendor_dir = os.path.join(site_dir, "assets", "vendor")
    for package, items, destination in RUNTIME_FILES:
        for item in items:
            source = os.path.join(modules, package, item)
            if not os.path.exists(source):
                raise MissingRuntime(f"{source} is missing: run `npm ci` (or `make build`, which runs it)")
            _copy(source, os.path.join(vendor_dir, destination, os.path.basename(item)))

    runtime_dir = os.path.join(site_dir, "assets", "runtime")
    os.makedirs(runtime_dir, exist_ok=True)
    payload = calc_zip_bytes(project_dir)
    digest = hashlib.sha256(payload).hexdigest()[:16]
    zip_name = f"calc-{digest}.zip"
    for old in os.listdir(runtime_dir):
        if old.startswith("calc-") and old.endswith(".zip") and old != zip_name:
            os.remove(os.path.join(runtime_dir, old))
    with open(os.path.join(runtime_dir, zip_name), "wb") as handle:
        handle.write(payload)

    with open(os.path.join(modules, "pyodide", "package.json"), encoding="utf-8") as handle:
        pyodide_version = json.load(handle)["version"]
    snapshot_name = pyodide_snapshot(project_dir, runtime_dir, zip_name, pyodide_version)
    manifest = {
        "calc_zip": zip_name, "calc_sha256_16": digest, "pyodide_version": pyodide_version, "site_url": site_url,
        "pyodide_snapshot": snapshot_name,
        # The worker checks the unpacked size before restoring (gzip's own CRC catches a damaged download).
        "pyodide_snapshot_bytes": snapshot_raw_bytes(os.path.join(runtime_dir, snapshot_name)) if snapshot_name else None,
    }
    with open(os.path.join(runtime_dir, "manifest.json"), "w", encoding="utf-8") as handle:
        json.dump(manifest, handle, indent=2, sort_keys=True)
    name_boot_files(site_dir, manifest)
    return manifest


BOOT_ATTRIBUTE = re.compile(r'data-calc-boot="[^"]*"')
BOOT_FACTS = ("calc_zip", "pyodide_snapshot", "pyodide_snapshot_bytes")


def boot_attribute(manifest: dict) -> str:
    """The head script's ``data-calc-boot`` (overrides/main.html): the manifest's runtime files, which the script
    passes to the worker as its name, so that the worker fetches them from its first block (it still reads the
    manifest, and restores only a snapshot both name).

    >>> boot_attribute({"calc_zip": "calc-ab.zip", "pyodide_snapshot": None, "pyodide_snapshot_bytes": None, "x": 1})
    'data-calc-boot="{&quot;calc_zip&quot;:&quot;calc-ab.zip&quot;,&quot;pyodide_snapshot&quot;:null,&quot;pyodide_snapshot_bytes&quot;:null}"'
    """
    facts = json.dumps({key: manifest.get(key) for key in BOOT_FACTS}, separators=(",", ":"), sort_keys=True)
    return f'data-calc-boot="{html.escape(facts, quote=True)}"'


def name_boot_files(site_dir: str, manifest: dict) -> int:
    """Write the manifest's runtime files into every built page that starts the worker; return how many pages.

    After the manifest, since the snapshot is made at the end of the build. Idempotent (a page of an earlier
    build that ``mkdocs serve`` did not rewrite gets this build's names).
    """
    attribute = boot_attribute(manifest)
    pages = 0
    for folder, _, files in os.walk(site_dir):
        for name in files:
            if not name.endswith(".html"):
                continue
            path = os.path.join(folder, name)
            with open(path, encoding="utf-8") as handle:
                text = handle.read()
            if "data-calc-worker=" not in text:
                continue
            named = BOOT_ATTRIBUTE.sub(attribute, text, count=1)
            pages += 1
            if named != text:
                with open(path, "w", encoding="utf-8") as handle:
                    handle.write(named)
    return pages


def _file_sha256(path: str) -> str:
    with open(path, "rb") as handle:
        return hashlib.sha256(handle.read()).hexdigest()


def snapshot_name(pyodide_dir: str, calc_zip_path: str, pyodide_version: str) -> str:
    """``pyodide-<key>.snapshot``: the key hashes what a snapshot fits, the Pyodide build and the calc zip
    (and the script that makes it), so a snapshot is never restored against other files."""
    key_source = "\n".join([pyodide_version, _file_sha256(os.path.join(pyodide_dir, "pyodide.asm.wasm")),
                            _file_sha256(calc_zip_path), _file_sha256(SNAPSHOT_SCRIPT), LIB_DIR])
    return f"pyodide-{hashlib.sha256(key_source.encode()).hexdigest()[:16]}.snapshot"


SNAPSHOT_MAGIC = b"PYSNAP01"  # hooks/pyodide_snapshot.mjs writes it, boot-inflate.mjs checks it


def snapshot_layout(head: bytes) -> tuple[int, int]:
    """The memory's size and the page size from the first 16 bytes of an unpacked sparse snapshot (the format:
    hooks/pyodide_snapshot.mjs). A ``ValueError`` for anything else.

    >>> snapshot_layout(SNAPSHOT_MAGIC + (5000).to_bytes(4, "little") + (4096).to_bytes(4, "little"))
    (5000, 4096)
    >>> snapshot_layout(bytes(16))
    Traceback (most recent call last):
    ...
    ValueError: not a sparse Pyodide snapshot (magic b'\\x00\\x00\\x00\\x00\\x00\\x00\\x00\\x00')
    """
    if len(head) < 16 or head[:8] != SNAPSHOT_MAGIC:
        raise ValueError(f"not a sparse Pyodide snapshot (magic {head[:8]!r})")
    return int.from_bytes(head[8:12], "little"), int.from_bytes(head[12:16], "little")


def snapshot_raw_bytes(path: str) -> int:
    """The size of the memory a sparse gzip snapshot restores (read from its header, not its whole length)."""
    with gzip.open(path, "rb") as handle:
        return snapshot_layout(handle.read(16))[0]


_early: dict = {}  # snapshots started at the build's start: name -> (Node process, its partial file, the zip's folder)


def _snapshot_of_sources(project_dir: str) -> tuple[str, str] | None:
    """(a new folder holding ``calc.zip`` of calc's sources as they are now, the name of their snapshot), or None
    without Pyodide in node_modules (vendor_runtime reports it). The caller removes the folder."""
    import tempfile

    pyodide_dir = os.path.join(project_dir, "node_modules", "pyodide")
    try:
        with open(os.path.join(pyodide_dir, "package.json"), encoding="utf-8") as handle:
            pyodide_version = json.load(handle)["version"]
    except (OSError, ValueError, KeyError):
        return None
    zip_dir = tempfile.mkdtemp(prefix="calc-snapshot-")
    zip_path = os.path.join(zip_dir, "calc.zip")
    with open(zip_path, "wb") as handle:
        handle.write(calc_zip_bytes(project_dir))
    return zip_dir, snapshot_name(pyodide_dir, zip_path, pyodide_version)


def snapshot_is_cached(project_dir: str) -> bool:
    """Whether build/pyodide-snapshot/ holds the snapshot of calc's sources as they are now (True without
    Pyodide: there is nothing to make)."""
    found = _snapshot_of_sources(project_dir)
    if found is None:
        return True
    zip_dir, name = found
    shutil.rmtree(zip_dir, ignore_errors=True)
    return os.path.isfile(os.path.join(project_dir, "build", "pyodide-snapshot", name))


def start_pyodide_snapshot(project_dir: str) -> str | None:
    """Start Node making the snapshot of ``calc`` as it is now, when ``build/pyodide-snapshot/`` lacks it, and
    return its name (None when nothing was started). Started as the build starts, Node (~7 s of CPU) works
    beside the pages instead of after them; :func:`pyodide_snapshot` takes the result at the end of the build,
    when the calc zip it writes into the site has the same bytes (the same name), and makes it itself otherwise."""
    if os.environ.get("CALC_PYODIDE_SNAPSHOT", "1") == "0":
        return None
    found = _snapshot_of_sources(project_dir)
    if found is None:
        return None
    zip_dir, name = found
    cache_dir = os.path.join(project_dir, "build", "pyodide-snapshot")
    if name in _early or os.path.isfile(os.path.join(cache_dir, name)):
        shutil.rmtree(zip_dir, ignore_errors=True)
        return None
    os.makedirs(cache_dir, exist_ok=True)
    partial = os.path.join(cache_dir, name) + ".part"
    pyodide_dir = os.path.join(project_dir, "node_modules", "pyodide")
    command = ["node", SNAPSHOT_SCRIPT, pyodide_dir, os.path.join(zip_dir, "calc.zip"), LIB_DIR, partial]
    try:
        process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    except OSError:  # no Node: pyodide_snapshot says so at the end
        shutil.rmtree(zip_dir, ignore_errors=True)
        return None
    _early[name] = (process, partial, zip_dir)
    return name


def stop_early_snapshots() -> None:
    """Stop the snapshots :func:`start_pyodide_snapshot` started that no one took (a failed build)."""
    while _early:
        _, (process, partial, zip_dir) = _early.popitem()
        if process.poll() is None:
            process.kill()
        process.communicate()
        shutil.rmtree(zip_dir, ignore_errors=True)
        if os.path.exists(partial):
            os.remove(partial)


def _make_snapshot(name: str, command: list[str]) -> subprocess.CompletedProcess:
    """Node's run that writes snapshot ``name``: the one started early for it, else one started now."""
    early = _early.pop(name, None)
    if early is None:
        return subprocess.run(command, capture_output=True, text=True, timeout=SNAPSHOT_TIMEOUT_S, check=False)
    process, _, zip_dir = early
    try:
        stdout, stderr = process.communicate(timeout=SNAPSHOT_TIMEOUT_S)
    except subprocess.TimeoutExpired:
        process.kill()
        process.communicate()
        raise
    finally:
        shutil.rmtree(zip_dir, ignore_errors=True)
    return subprocess.CompletedProcess(process.args, process.returncode, stdout, stderr)


def pyodide_snapshot(project_dir: str, runtime_dir: str, zip_name: str, pyodide_version: str) -> str | None:
    """Write ``pyodide-<key>.snapshot`` (gzip) into ``runtime_dir`` and return its name, or None.

    The snapshot is Pyodide's memory after CPython has started and imported
    ``calc.widgets.runtime``; the worker restores it instead of starting CPython (~0.15 s
    instead of ~1.5 s of CPU on a 2-core laptop). It fits only the Pyodide build and the calc
    zip it was made from, so its key hashes both (and this script), and it is kept in
    ``build/pyodide-snapshot/`` so rebuilds of unchanged sources reuse it. Without Node.js
    or when the step fails the site still works: the worker boots the ordinary way (a warning
    says why, which ``mkdocs build --strict`` turns into an error).
    """
    for old in os.listdir(runtime_dir):
        if old.startswith("pyodide-") and old.endswith(".snapshot"):
            os.remove(os.path.join(runtime_dir, old))
    if os.environ.get("CALC_PYODIDE_SNAPSHOT", "1") == "0":
        return None
    pyodide_dir = os.path.join(project_dir, "node_modules", "pyodide")
    name = snapshot_name(pyodide_dir, os.path.join(runtime_dir, zip_name), pyodide_version)
    cache_dir = os.path.join(project_dir, "build", "pyodide-snapshot")
    cached = os.path.join(cache_dir, name)
    if not os.path.isfile(cached):
        os.makedirs(cache_dir, exist_ok=True)
        partial = cached + ".part"
        command = ["node", SNAPSHOT_SCRIPT, pyodide_dir, os.path.join(runtime_dir, zip_name), LIB_DIR, partial]
        try:
            done = _make_snapshot(name, command)
        except (OSError, subprocess.TimeoutExpired) as error:
            log.warning("Pyodide snapshot not made (the worker will start Python itself): %s", error)
            return None
        finally:
            stop_early_snapshots()  # one started for other sources (calc changed during the build) is not used
        if done.returncode != 0 or not os.path.isfile(partial):
            log.warning("Pyodide snapshot not made (the worker will start Python itself): %s",
                        (done.stderr or done.stdout).strip()[-2000:])
            return None
        os.replace(partial, cached)
        log.info("Pyodide snapshot %s: %s", name, done.stdout.strip())
        for old in os.listdir(cache_dir):  # keep the cache to the current snapshot
            if old != name:
                os.remove(os.path.join(cache_dir, old))
    shutil.copyfile(cached, os.path.join(runtime_dir, name))
    return name


# Files no page fetches: source maps and pre-compressed copies, the service worker and its own list. (The
# sitemap stays: Material's instant navigation reads it to know which links it may load itself.)
PRECACHE_SKIP_SUFFIXES = (".map", ".gz")
PRECACHE_SKIP_PATHS = ("sw.js", "assets/runtime/precache.json")
LUNR_DIR = "assets/javascripts/lunr/"
FONT_FACE = re.compile(r"@font-face\s*{([^}]*)}")
FONT_SOURCE = re.compile(r"""url\(\s*['"]?([^'")\s]+)['"]?\s*\)""")


def lunr_files_loaded(languages: list[str]) -> set[str]:
    """The files under ``assets/javascripts/lunr/`` that Material's search worker loads for ``languages``.

    The rule is the worker's own (search.*.min.js, Material 9): nothing for English alone; else the stemmer
    support, one file per language other than English, the multi-language file for more than one
    language, and a word segmenter for Japanese, Hindi and Thai.

    >>> lunr_files_loaded(["en"])
    set()
    >>> sorted(lunr_files_loaded(["en", "ja"]))  # doctest: +NORMALIZE_WHITESPACE
    ['assets/javascripts/lunr/min/lunr.ja.min.js', 'assets/javascripts/lunr/min/lunr.multi.min.js',
     'assets/javascripts/lunr/min/lunr.stemmer.support.min.js', 'assets/javascripts/lunr/tinyseg.js']
    """
    scripts = set()
    for language in languages:
        if language == "ja":
            scripts.add("tinyseg.js")
        elif language in ("hi", "th"):
            scripts.add("wordcut.js")
        if language != "en":
            scripts.add(f"min/lunr.{language}.min.js")
    if len(languages) > 1:
        scripts.add("min/lunr.multi.min.js")
    if scripts:
        scripts.add("min/lunr.stemmer.support.min.js")
    return {LUNR_DIR + script for script in scripts}


def font_fallbacks(css: str, css_path: str) -> set[str]:
    """The font files a stylesheet names only as fallbacks: every source of an ``@font-face`` after a woff2 first.

    A browser takes the first source whose format it supports, and every browser that runs the site's
    Python (WebAssembly, module workers) supports woff2, so the sources after it are never fetched. A
    block whose first source is another format is left whole.

    >>> sorted(font_fallbacks('@font-face{font-family:K;src:url(fonts/K.woff2) format("woff2"),'
    ...                       'url(fonts/K.woff) format("woff"),url("fonts/K.ttf") format("truetype")}'
    ...                       '@font-face{font-family:L;src:url(L.woff) format("woff"),url(L.ttf)}',
    ...                       "assets/vendor/katex/katex.min.css"))
    ['assets/vendor/katex/fonts/K.ttf', 'assets/vendor/katex/fonts/K.woff']
    """
    folder = posixpath.dirname(css_path)
    fallbacks = set()
    for block in FONT_FACE.findall(css):
        sources = FONT_SOURCE.findall(block)
        if sources and sources[0].split("?")[0].endswith(".woff2"):
            fallbacks.update(posixpath.normpath(posixpath.join(folder, source)) for source in sources[1:])
    return fallbacks


def files_never_loaded(site_dir: str, relatives: list[str]) -> set[str]:
    """Of the site's files ``relatives`` (paths under ``site_dir``), those no page of this site ever fetches.

    Derived from the build, not typed in: the lunr files for languages other than the search index's
    (the languages the search plugin was configured with, from ``search/search_index.json``) and the
    fallback formats of every web font the stylesheets declare.

    >>> import tempfile
    >>> site = tempfile.mkdtemp()
    >>> files = {"index.html": "", "search/search_index.json": '{"config": {"lang": ["en"]}}',
    ...          "assets/javascripts/lunr/min/lunr.de.min.js": "", "assets/javascripts/bundle.js.map": "",
    ...          "k/k.css": '@font-face{src:url(f/K.woff2) format("woff2"),url(f/K.ttf)}', "k/f/K.woff2": "",
    ...          "k/f/K.ttf": ""}
    >>> for relative, text in files.items():
    ...     os.makedirs(os.path.dirname(os.path.join(site, relative)), exist_ok=True)
    ...     _ = open(os.path.join(site, relative), "w").write(text)
    >>> sorted(files_never_loaded(site, sorted(files)))
    ['assets/javascripts/bundle.js.map', 'assets/javascripts/lunr/min/lunr.de.min.js', 'k/f/K.ttf']
    >>> shutil.rmtree(site)
    """
    never = {relative for relative in relatives
             if relative.endswith(PRECACHE_SKIP_SUFFIXES) or relative in PRECACHE_SKIP_PATHS}
    index_path = os.path.join(site_dir, "search", "search_index.json")
    if os.path.isfile(index_path):
        with open(index_path, encoding="utf-8") as handle:
            languages = json.load(handle)["config"]["lang"]
        loaded = lunr_files_loaded(languages)
        never.update(r for r in relatives if r.startswith(LUNR_DIR) and r not in loaded)
    for relative in relatives:
        if relative.endswith(".css"):
            with open(os.path.join(site_dir, relative), encoding="utf-8") as handle:
                never.update(font_fallbacks(handle.read(), relative))
    return never


def write_precache_list(site_dir: str) -> dict:
    """What the service worker caches for offline reading: every file of the site a page can load, with a version.

    Left out: what no page ever loads (:func:`files_never_loaded`). The version is a hash of
    the listed files' paths and contents, so any rebuild that changes one of them gives a new
    cache and the old one is dropped. The service worker fills the cache only once the page's
    Python is ready and the page is idle (docs/assets/runtime/calc-offline.js), reusing what the
    page already downloaded.
    """
    relatives = []
    for folder, dirs, files in os.walk(site_dir):
        dirs.sort()
        for name in sorted(files):
            relatives.append(os.path.relpath(os.path.join(folder, name), site_dir).replace(os.sep, "/"))
    never = files_never_loaded(site_dir, relatives)
    entries = []
    for relative in relatives:
        if relative in never:
            continue
        with open(os.path.join(site_dir, relative), "rb") as handle:
            entries.append((relative, hashlib.sha256(handle.read()).hexdigest()))
    version = hashlib.sha256("\n".join(f"{p} {h}" for p, h in entries).encode()).hexdigest()[:16]
    urls = [relative.removesuffix("index.html") for relative, _ in entries]
    listing = {"version": version, "urls": urls}
    with open(os.path.join(site_dir, "assets", "runtime", "precache.json"), "w", encoding="utf-8") as handle:
        json.dump(listing, handle, indent=0)
    return listing
