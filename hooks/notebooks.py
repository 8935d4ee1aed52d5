"""MkDocs hook for the deep dives' notebooks (rendered and executed by mkdocs-jupyter).

mkdocs-jupyter turns each jupytext ``.py`` under ``docs/deep-dives/notebooks/``
into a page and executes it at build (``allow_errors: false``: a failing cell
fails the build). nbconvert's template still carries three things that would
load from a CDN or break the site's Content-Security-Policy, and half a
megabyte of inline CSS per page. This hook:

* ``on_page_content``: strips the MathJax loader (an empty ``<script src>``)
  and its config, and the Mermaid module that imports from cdnjs; moves the
  inline ``<style>`` blocks into one shared stylesheet under
  ``assets/notebooks/`` (every notebook page uses the same CSS); adds a bar
  with the downloads and the deep-dive page the notebook belongs to; and fails
  the build if anything in the notebook still points off the site;
* ``on_post_build``: writes that stylesheet and, next to each notebook's page,
  the notebook as ``.ipynb`` (jupytext conversion of the ``.py`` source, no
  outputs: run it yourself after ``pip install -e .``);
* a notebook's execution goes through the build cache (``on_pre_page`` in
  :mod:`site_hooks`; :mod:`build_cache`): it is executed again only when its text,
  ``calc``, the converter's options or the versions of mkdocs-jupyter, nbconvert and
  the kernel changed. (mkdocs-jupyter's own cache stays off: its key is the
  notebook's text and options, blind to a change in ``calc``.)

Listed before ``site_hooks.py`` in ``mkdocs.yml``, so the files written here
are in place when the site hooks add the CSP and the offline cache's list.
"""

from __future__ import annotations

import hashlib
import itertools
import os
import posixpath
import re

NOTEBOOK_DIR = "deep-dives/notebooks/"
CSS_DIR = "assets/notebooks"
PROJECT_DIR = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

_EMPTY_SCRIPT = re.compile(r"<script\s+src=\"\"\s*>\s*</script>", re.IGNORECASE)
_SCRIPT = re.compile(r"<script(?P<attrs>[^>]*)>(?P<body>.*?)</script>", re.DOTALL | re.IGNORECASE)
_STYLE = re.compile(r"<style[^>]*>(?P<body>.*?)</style>", re.DOTALL | re.IGNORECASE)
_COMMENTS = re.compile(r"<!-- (?:Load mathjax|MathJax configuration|End of mathjax configuration|"
                       r"End of mermaid configuration) -->")
_REMOTE = re.compile(r"<(?:script|img|iframe|link|source|video|audio)\b[^>]*\b(?:src|href)=[\"'](?:https?:)?//",
                     re.IGNORECASE)

#: nbconvert's light JupyterLab theme re-pointed at Material's palette (light and dark), and the code colours at
#: Material's own highlight variables, whose contrast is checked in both schemes (the pygments defaults fail axe).
#: Appended to each notebook's extracted styles; a source file, left out of the site (mkdocs.yml exclude_docs).
PALETTE_CSS = os.path.join(PROJECT_DIR, "docs", "assets", "notebooks", "palette.css")


def is_notebook(src_uri: str) -> bool:
    """True for a notebook page of the deep dives (a jupytext ``.py`` under ``deep-dives/notebooks/``).

    >>> is_notebook("deep-dives/notebooks/memory-equation.py"), is_notebook("deep-dives/memory-equation.md")
    (True, False)
    """
    return src_uri.replace("\\", "/").startswith(NOTEBOOK_DIR) and src_uri.endswith(".py")


def deep_dive_page(src_uri: str) -> str:
    """The deep-dive page a notebook belongs to: the same name, one folder up.

    >>> deep_dive_page("deep-dives/notebooks/roofline.py")
    'deep-dives/roofline.md'
    """
    name = posixpath.basename(src_uri.replace("\\", "/")).removesuffix(".py")
    return posixpath.join(posixpath.dirname(NOTEBOOK_DIR.rstrip("/")), f"{name}.md")


def strip_cdn(html: str) -> str:
    """Remove nbconvert's MathJax loader and config and its Mermaid module (both fetch from a CDN).

    >>> page = ('<script src=""> </script><script type="text/x-mathjax-config">init()</script>'
    ...         '<script type="module">import("https://cdnjs.cloudflare.com/x/mermaid.mjs")</script>'
    ...         '<script>copy()</script>')
    >>> strip_cdn(page)
    '<script>copy()</script>'
    """
    html = _EMPTY_SCRIPT.sub("", html)

    def drop(match: re.Match) -> str:
        attrs, body = match.group("attrs").lower(), match.group("body")
        if "text/x-mathjax-config" in attrs or ("module" in attrs and "mermaid" in body):
            return ""
        return match.group(0)

    html = _SCRIPT.sub(drop, html)
    return _COMMENTS.sub("", html)


def focusable_code(html: str) -> str:
    """Let the keyboard reach code cells that scroll sideways (axe: scrollable-region-focusable), each a
    region named by its place on the page (axe: landmark-unique; a screen reader lists them by name).

    >>> focusable_code('<div class="highlight-ipynb hl-python"><pre>x</pre></div>')
    '<div class="highlight-ipynb hl-python" tabindex="0" role="region" aria-label="Code cell 1"><pre>x</pre></div>'
    >>> re.findall(r'aria-label="[^"]*"', focusable_code('<div class="highlight-ipynb"><pre>x</pre></div>' * 2))
    ['aria-label="Code cell 1"', 'aria-label="Code cell 2"']
    """
    cells = itertools.count(1)
    return re.sub(r'<div class="(highlight-ipynb[^"]*)">',
                  lambda match: f'<div class="{match.group(1)}" tabindex="0" role="region" '
                                f'aria-label="Code cell {next(cells)}">', html)


def unsearched_copies(html: str) -> str:
    """Keep the clipboard's hidden copy of each code cell and its "Copied!" notice out of the search index
    (Material skips elements marked ``data-search-exclude``, then strips the mark): else every cell is
    indexed twice. Neither element holds another of its own tag, which Material's parser needs.

    >>> unsearched_copies('<span class="notice" hidden="">Copied!</span><div class="clipboard-copy-txt" id="cell-1">x</div>')
    '<span class="notice" hidden="" data-search-exclude="true">Copied!</span><div class="clipboard-copy-txt" id="cell-1" data-search-exclude="true">x</div>'
    """
    html = re.sub(r'<div class="clipboard-copy-txt"([^>]*)>', r'<div class="clipboard-copy-txt"\1 data-search-exclude="true">', html)
    return re.sub(r'<span class="notice"([^>]*)>', r'<span class="notice"\1 data-search-exclude="true">', html)


def extract_styles(html: str) -> tuple[str, str]:
    """Take the inline ``<style>`` blocks out of ``html``: (html without them, their CSS joined).

    >>> extract_styles('<style type="text/css">a{b:c}</style><p>x</p><style>d{e:f}</style>')
    ('<p>x</p>', 'a{b:c}\\nd{e:f}')
    """
    blocks = [m.group("body").strip() for m in _STYLE.finditer(html)]
    return _STYLE.sub("", html), "\n".join(blocks)


def remote_references(html: str) -> list[str]:
    """Elements that would fetch from another origin (the build refuses a notebook page with any).

    >>> remote_references('<img src="https://example.org/a.png"><a href="https://example.org">ok</a>')
    ['<img src="https://']
    """
    return [m.group(0) for m in _REMOTE.finditer(html)]


def css_name(css: str) -> str:
    """The shared stylesheet's file name: its content hash, so a changed template gives a new file.

    >>> css_name("a{b:c}")
    'notebook-d1c45455844a.css'
    """
    return f"notebook-{hashlib.sha256(css.encode('utf-8')).hexdigest()[:12]}.css"


# --------------------------------------------------------------------------- MkDocs events

_state: dict = {"css": {}, "notebooks": []}


def on_pre_build(config, **kwargs):
    _state["css"] = {}
    _state["notebooks"] = []


def on_page_content(html, page, config, files, **kwargs):
    src_uri = page.file.src_uri
    if not is_notebook(src_uri):
        return html
    from mkdocs.utils import get_relative_url

    html = strip_cdn(html)
    html = focusable_code(html)
    html = unsearched_copies(html)
    html, css = extract_styles(html)
    with open(PALETTE_CSS, encoding="utf-8") as handle:
        css = css + "\n" + handle.read()
    name = css_name(css)
    _state["css"][name] = css
    offenders = remote_references(html)
    if offenders:
        raise ValueError(f"{src_uri}: the rendered notebook still loads from another origin: {offenders[:3]}")
    stem = posixpath.basename(src_uri).removesuffix(".py")
    _state["notebooks"].append((page.file.abs_src_path, os.path.dirname(page.file.abs_dest_path), stem))
    here = page.file.url
    css_url = get_relative_url(f"{CSS_DIR}/{name}", here)
    target = files.get_file_from_path(deep_dive_page(src_uri))
    back = (f'<a href="{get_relative_url(target.url, here)}">Back to the page: {page_title(target)}</a>'
            if target is not None else "")
    bar = (f'<p class="calc-notebook-bar" data-notebook-downloads="">'
           f'<span>Executed when the site was built, against this version of <code>calc</code>.</span>'
           f'<a href="{stem}.ipynb" download="">Download the notebook (.ipynb)</a>'
           f'<a href="{stem}.py" download="">Download the jupytext source (.py)</a>{back}</p>')
    return f'<link rel="stylesheet" href="{css_url}">\n{bar}\n{html}'


def page_title(file) -> str:
    """The title a deep-dive page shows in the nav (the file's page, if MkDocs has made it), else its name.

    >>> class F:  # a stand-in for mkdocs.structure.files.File
    ...     page = None
    ...     src_uri = "deep-dives/roofline.md"
    >>> page_title(F())
    'roofline'
    """
    page = getattr(file, "page", None)
    if page is not None and getattr(page, "title", None):
        return str(page.title)
    return posixpath.basename(file.src_uri).removesuffix(".md").replace("-", " ")


def stable_cell_ids(notebook):
    """Give each cell an id made from its place and its text (jupytext draws random ones at every read), so the
    same source gives the same .ipynb, byte for byte, at every build.

    >>> class Cell(dict):
    ...     pass
    >>> cells = [Cell(source="x = 1"), Cell(source="x = 1")]
    >>> class Notebook:
    ...     pass
    >>> book = Notebook(); book.cells = cells
    >>> [c["id"] for c in stable_cell_ids(book).cells]
    ['cell-0-8ff436de', 'cell-1-8ff436de']
    """
    for index, cell in enumerate(notebook.cells):
        cell["id"] = f"cell-{index}-{hashlib.sha256(cell['source'].encode('utf-8')).hexdigest()[:8]}"
    return notebook


def on_post_build(config, **kwargs):
    import jupytext

    css_dir = os.path.join(config.site_dir, *CSS_DIR.split("/"))
    os.makedirs(css_dir, exist_ok=True)
    for name, css in _state["css"].items():
        with open(os.path.join(css_dir, name), "w", encoding="utf-8") as handle:
            handle.write(css)
    for source, dest_dir, stem in _state["notebooks"]:
        notebook = stable_cell_ids(jupytext.read(source))
        os.makedirs(dest_dir, exist_ok=True)
        jupytext.write(notebook, os.path.join(dest_dir, f"{stem}.ipynb"), fmt="ipynb")
