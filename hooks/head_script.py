"""The boot's head script, minified for the page: ``docs/assets/runtime/head.js`` through esbuild (pinned in
package.json), handed to the templates as the Jinja global ``calc_head_script`` (``site_hooks.on_env``), which
``overrides/main.html`` inlines in the head of pages with a widget. The CSP hash follows from the built page
(:mod:`security`), so an edit to head.js needs nothing else.

The minified text is kept in ``build/head-script/`` under a key of the source, esbuild's version and its
options: a warm build does not start Node.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess

SOURCE = os.path.join("docs", "assets", "runtime", "head.js")
ESBUILD = os.path.join("node_modules", ".bin", "esbuild")
# es2020: what every browser that runs the site's module workers and WebAssembly has.
ESBUILD_OPTIONS = ("--minify", "--legal-comments=none", "--target=es2020", "--charset=utf8")
CACHE_DIR = os.path.join("build", "head-script")
TIMEOUT_S = 60


class HeadScriptError(RuntimeError):
    """The head script could not be minified (no esbuild: run ``npm ci``; or a syntax error, esbuild's words)."""


def _esbuild_version(project_dir: str) -> str:
    with open(os.path.join(project_dir, "node_modules", "esbuild", "package.json"), encoding="utf-8") as handle:
        return json.load(handle)["version"]


def minify(source: str, project_dir: str) -> str:
    """``source`` minified by the project's esbuild, without the trailing newline.

    An inline script ends at the first ``</script``: esbuild escapes it in strings, and a text that still holds
    one is refused rather than inlined.
    """
    command = [os.path.join(project_dir, ESBUILD), *ESBUILD_OPTIONS]
    try:
        done = subprocess.run(command, input=source, capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
    except OSError as error:
        raise HeadScriptError(f"{command[0]}: {error} (run `npm ci`, or `make setup`)") from error
    if done.returncode != 0:
        raise HeadScriptError(f"esbuild could not minify {SOURCE}:\n{done.stderr.strip()}")
    text = done.stdout.strip()
    if "</script" in text.lower():
        raise HeadScriptError(f"{SOURCE} minified holds '</script', which would end the inline script early")
    return text


def cache_key(source: str, project_dir: str) -> str:
    """What the minified text follows from: the source, esbuild's version and its options."""
    key = "\n".join([source, _esbuild_version(project_dir), *ESBUILD_OPTIONS])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:16]


def head_script(project_dir: str) -> str:
    """The minified head script, from ``build/head-script/`` when its key is there, else made and kept."""
    with open(os.path.join(project_dir, SOURCE), encoding="utf-8") as handle:
        source = handle.read()
    try:
        key = cache_key(source, project_dir)
    except OSError as error:
        raise HeadScriptError(f"esbuild is not installed ({error}): run `npm ci`, or `make setup`") from error
    cached = os.path.join(project_dir, CACHE_DIR, f"head-{key}.js")
    if os.path.isfile(cached):
        with open(cached, encoding="utf-8") as handle:
            return handle.read()
    text = minify(source, project_dir)
    os.makedirs(os.path.dirname(cached), exist_ok=True)
    for old in os.listdir(os.path.dirname(cached)):  # keep the cache to the current script
        if old.endswith(".js"):
            os.remove(os.path.join(os.path.dirname(cached), old))
    partial = cached + ".part"
    with open(partial, "w", encoding="utf-8") as handle:
        handle.write(text)
    os.replace(partial, cached)
    return text
