"""A Content-Security-Policy for every built page, with the hashes of its own inline scripts.

Scripts may come only from the site's own origin, WebAssembly may compile (Pyodide),
and an inline script runs only if its SHA-256 is listed: the build computes them
from each page after it is written. The JSON data blocks (pre-rendered figures) are
listed too: Material's instant navigation re-inserts every script element of a page
it restores, and Chromium checks the policy before it looks at the type. Inline styles stay allowed (Plotly and Material
set style attributes). Skipped under `mkdocs serve`, whose live-reload script is
injected per response.
"""

from __future__ import annotations

import base64
import hashlib
import os
import re

INLINE_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL | re.IGNORECASE)
HEAD = re.compile(r"<head[^>]*>", re.IGNORECASE)

POLICY = (
    "default-src 'self'; "
    "script-src 'self' 'wasm-unsafe-eval' {hashes}; "
    "worker-src 'self'; "
    "connect-src 'self'; "
    "img-src 'self' data: blob:; "
    "font-src 'self' data:; "
    "style-src 'self' 'unsafe-inline'; "
    "object-src 'none'; "
    "base-uri 'self'; "
    "form-action 'none'"
)


def inline_script_hashes(html: str) -> list[str]:
    """CSP source expressions for the inline script elements of a page (code and data blocks).

    >>> page = '<script>var a=1</script><script type="application/json">{}</script><script src="x.js"></script>'
    >>> len(inline_script_hashes(page)), inline_script_hashes(page)[0].startswith("'sha256-")
    (2, True)
    """
    hashes = []
    for match in INLINE_SCRIPT.finditer(html):
        attrs = match.group("attrs").lower()
        if "src=" in attrs:
            continue
        digest = hashlib.sha256(match.group("body").encode("utf-8")).digest()
        hashes.append(f"'sha256-{base64.b64encode(digest).decode()}'")
    return sorted(set(hashes))


def policy_meta(hashes) -> str:
    """The meta element that carries the policy.

    >>> policy_meta(["'sha256-abc='"])[:60]
    '<meta http-equiv="Content-Security-Policy" content="default-'
    """
    return f'<meta http-equiv="Content-Security-Policy" content="{POLICY.format(hashes=" ".join(sorted(hashes)))}">'


def protect_site(site_dir: str) -> int:
    """Give every HTML page of the built site the same policy; return how many pages.

    One policy for the whole site, listing the inline scripts of every page: instant
    navigation swaps pages inside one document, and a policy once met stays in force,
    so each page's policy must also admit the scripts of every page it may lead to.
    """
    pages = {}
    for folder, _, files in os.walk(site_dir):
        for name in files:
            if name.endswith(".html"):
                path = os.path.join(folder, name)
                with open(path, encoding="utf-8") as handle:
                    pages[path] = handle.read()
    hashes = set()
    for html in pages.values():
        hashes.update(inline_script_hashes(html))
    meta = policy_meta(hashes)
    for path, html in pages.items():
        if "Content-Security-Policy" in html:
            continue
        with open(path, "w", encoding="utf-8") as handle:
            handle.write(HEAD.sub(lambda m: m.group(0) + meta, html, count=1))
    return len(pages)
