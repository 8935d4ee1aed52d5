"""A few SVG primitives for the lesson's pictures (strings, standard library only).

Shapes carry CSS classes rather than colours (``d-line``, ``d-box``, ``d-k``, ``d-v``, ``d-ok``, ``d-bad``,
``d-muted``, ``d-accent``): the page's stylesheet maps them to Material's theme variables, so one SVG reads in
light and dark mode. Text is escaped here; every number in a label comes from the caller.

>>> d = Diagram("t", "A title", "A description.", 100, 40, [rect(0, 0, 10, 10, "d-box")], "Caption.")
>>> html = d.to_html()
>>> html.startswith('<figure class="calc-figure" id="figure-t">'), 'role="img"' in html, "<figcaption>" in html
(True, True, True)
"""

from __future__ import annotations

from dataclasses import dataclass, field
from html import escape

from calc.errors import check_range

__all__ = ["Diagram", "for_every_screen", "layout_for", "rect", "text", "text_lines", "line", "arrow", "group",
           "text_width", "wrap", "WIDE_WIDTH", "NARROW_WIDTH", "MIN_FONT_SIZE", "DISPLAY_SCALE"]


def _num(value: float) -> str:
    """A coordinate without trailing zeros: ``_num(2.50) == '2.5'``."""
    return f"{value:.2f}".rstrip("0").rstrip(".")


def rect(x: float, y: float, w: float, h: float, cls: str = "d-box", *, rx: float = 3, title: str = "") -> str:
    """A rectangle with a CSS class; ``title`` becomes its hover tooltip.

    >>> rect(1, 2, 3, 4, "d-k")
    '<rect x="1" y="2" width="3" height="4" rx="3" class="d-k"/>'
    """
    shape = f'<rect x="{_num(x)}" y="{_num(y)}" width="{_num(w)}" height="{_num(h)}" rx="{_num(rx)}" class="{cls}"'
    return f"{shape}><title>{escape(title)}</title></rect>" if title else shape + "/>"


def text(x: float, y: float, content: str, *, anchor: str = "middle", cls: str = "", size: float = 13,
         weight: str = "") -> str:
    """A label centred (``anchor="middle"``), left (``start``) or right (``end``) on ``(x, y)``.

    >>> text(5, 6, "K & V")
    '<text x="5" y="6" text-anchor="middle" font-size="13">K &amp; V</text>'
    """
    attributes = f'x="{_num(x)}" y="{_num(y)}" text-anchor="{anchor}" font-size="{_num(size)}"'
    if cls:
        attributes += f' class="{cls}"'
    if weight:
        attributes += f' font-weight="{weight}"'
    return f"<text {attributes}>{escape(content)}</text>"


def line(x1: float, y1: float, x2: float, y2: float, cls: str = "d-line") -> str:
    """A straight line.

    >>> line(0, 0, 1, 1)
    '<line x1="0" y1="0" x2="1" y2="1" class="d-line"/>'
    """
    return f'<line x1="{_num(x1)}" y1="{_num(y1)}" x2="{_num(x2)}" y2="{_num(y2)}" class="{cls}"/>'


def arrow(x1: float, y1: float, x2: float, y2: float, cls: str = "d-line", head: float = 7) -> str:
    """A line from ``(x1, y1)`` to ``(x2, y2)`` with a filled head at the end (no marker ids to collide).

    >>> arrow(0, 0, 10, 0).count("<")
    2
    """
    import math

    angle = math.atan2(y2 - y1, x2 - x1)
    left = (x2 - head * math.cos(angle - 0.45), y2 - head * math.sin(angle - 0.45))
    right = (x2 - head * math.cos(angle + 0.45), y2 - head * math.sin(angle + 0.45))
    points = " ".join(f"{_num(px)},{_num(py)}" for px, py in ((x2, y2), left, right))
    return line(x1, y1, x2, y2, cls) + f'<polygon points="{points}" class="d-head"/>'


def group(items: list[str], *, transform: str = "") -> str:
    """Shapes in one ``<g>``, optionally moved: ``group([...], transform="translate(10 0)")``.

    >>> group(["<a/>"], transform="translate(1 2)")
    '<g transform="translate(1 2)"><a/></g>'
    """
    opening = f'<g transform="{transform}">' if transform else "<g>"
    return opening + "".join(items) + "</g>"


#: The widths every picture is drawn for, in ``viewBox`` units (a CSS px at scale 1). Below a 40em (640 px)
#: screen the article column is under 608 px and the narrow layout shows; it fits the 328 px column of a
#: 360 px phone (358 px at 390 px) at a scale of 1 or more. ``docs/assets/stylesheets/calc.css`` switches them.
WIDE_WIDTH = 600
NARROW_WIDTH = 328
#: A picture shows at most this many CSS px per viewBox unit (its ``width`` attribute; the stylesheet's
#: ``max-width: 100%`` shrinks it to a narrower column), so the pictures' labels are one size on every page.
DISPLAY_SCALE = 1.25
#: The smallest label drawn, in viewBox units: at least 11 CSS px on the screens above.
MIN_FONT_SIZE = 11

# Advance widths of Helvetica / Arial (the system fonts Material's stack falls back to), in 1/1000 em: the
# layouts estimate a label's width from them to wrap it and size its box (the browser test measures the real one).
_WIDTHS = {" ": 278, "!": 278, '"': 355, "#": 556, "$": 556, "%": 889, "&": 667, "'": 191, "(": 333, ")": 333,
           "*": 389, "+": 584, ",": 278, "-": 333, ".": 278, "/": 278, ":": 278, ";": 278, "<": 584, "=": 584,
           ">": 584, "?": 556, "@": 1015, "[": 278, "]": 278, "^": 469, "_": 556, "|": 260,
           **dict.fromkeys("0123456789", 556), **dict.fromkeys("abdeghnopqu", 556), **dict.fromkeys("ckszvxy", 500),
           "f": 278, "i": 222, "j": 222, "l": 222, "m": 833, "r": 333, "t": 278, "w": 722,
           **dict.fromkeys("ABEKPSVXY", 667), **dict.fromkeys("CDHNRU", 722), **dict.fromkeys("GOQ", 778),
           "F": 611, "T": 611, "Z": 611, "I": 278, "J": 500, "L": 556, "M": 833, "W": 944,
           "×": 584, "−": 584, "“": 333, "”": 333, "’": 222, "·": 278}
_WIDE_GLYPH = 1000  # arrows, ticks, ellipses and anything else: as wide as an em
_SAFETY = 1.08  # other system fonts (San Francisco, Roboto, DejaVu) run a little wider than Helvetica


def text_width(content: str, size: float, *, bold: bool = False) -> float:
    """An upper estimate of the width of ``content`` at font size ``size`` (viewBox units).

    >>> round(text_width("key 6d52d5", 11), 1)
    61.4
    >>> text_width("Wm", 11, bold=True) > text_width("Wm", 11)
    True
    """
    em = sum(_WIDTHS.get(ch, _WIDE_GLYPH) for ch in content) / 1000
    return em * size * _SAFETY * (1.07 if bold else 1)


def wrap(content: str | list[str], size: float, max_width: float, *, bold: bool = False) -> list[str]:
    """``content`` broken at spaces into lines no wider than ``max_width`` (a single long word keeps its line);
    given a list, its pieces are the words (a formula kept on one line).

    >>> wrap("this step: 3 tokens for one pass of the target", 11, 125)
    ['this step: 3 tokens for', 'one pass of the target']
    >>> wrap(["on average", "(1 − a^(k+1)) / (1 − a)", "= 2.77"], 11, 120)
    ['on average', '(1 − a^(k+1)) / (1 − a)', '= 2.77']
    """
    lines: list[str] = []
    for word in content.split() if isinstance(content, str) else content:
        if lines and text_width(lines[-1] + " " + word, size, bold=bold) <= max_width:
            lines[-1] += " " + word
        else:
            lines.append(word)
    return lines


def text_lines(x: float, y: float, lines: list[str], *, line_height: float, **options) -> list[str]:
    """One :func:`text` per line, the first on baseline ``y``, the next ``line_height`` below each other.

    >>> len(text_lines(0, 10, ["a", "b"], line_height=14, size=11))
    2
    """
    return [text(x, y + row * line_height, content, **options) for row, content in enumerate(lines)]


@dataclass
class Diagram:
    """One picture: an id (unique on its page), a title and a description (the text alternative), the
    ``viewBox`` size, its shapes, and the caption shown under it (plain text; numbers from ``calc``).

    ``layout`` says which screens it is drawn for (``"wide"`` or ``"narrow"``); a wide picture may carry
    ``narrow``, the same picture drawn for a phone by the same function (see :func:`for_every_screen`).
    """

    name: str
    title: str
    description: str
    width: float
    height: float
    shapes: list[str] = field(default_factory=list)
    caption: str = ""
    layout: str = "wide"
    narrow: "Diagram | None" = None

    def svg(self) -> str:
        """The inline ``<svg>``: ``role="img"`` labelled by its ``<title>`` and ``<desc>``.

        The narrow layout's ids and class say ``narrow``, and it is left out of the search index
        (``data-search-exclude``, Material's search plugin), which holds the wide one's text already.
        """
        key = self.name if self.layout == "wide" else f"{self.name}-{self.layout}"
        title_id, desc_id = f"figure-{key}-title", f"figure-{key}-desc"
        extra = "" if self.layout == "wide" else ' data-search-exclude=""'
        # A layout class only on a picture drawn in two: the stylesheet hides one of them on every screen.
        paired = f" calc-diagram--{self.layout}" if self.narrow is not None or self.layout != "wide" else ""
        return (f'<svg viewBox="0 0 {_num(self.width)} {_num(self.height)}" '
                f'width="{_num(round(self.width * DISPLAY_SCALE))}" role="img" '
                f'aria-labelledby="{title_id} {desc_id}" class="calc-diagram{paired}" '
                f'data-layout="{self.layout}"{extra}>'
                f'<title id="{title_id}">{escape(self.title)}</title>'
                f'<desc id="{desc_id}">{escape(self.description)}</desc>'
                + "".join(self.shapes) + "</svg>")

    def to_html(self) -> str:
        """``<figure>`` holding the SVG (and its narrow layout, if any: the stylesheet shows one of the two
        and hides the other with ``display: none``, which hides it from screen readers too) and its
        ``<figcaption>``."""
        drawings = self.svg() + (self.narrow.svg() if self.narrow else "")
        return (f'<figure class="calc-figure" id="figure-{self.name}">{drawings}'
                f"<figcaption>{escape(self.caption)}</figcaption></figure>")


def for_every_screen(draw) -> Diagram:
    """The picture ``draw(width)`` makes for :data:`WIDE_WIDTH`, carrying the one it makes for
    :data:`NARROW_WIDTH`. Both must fit their width and say the same thing: one name, title, description
    and caption (the text alternative and the caption do not depend on the screen).

    >>> def draw(width):
    ...     return Diagram("t", "T", "D.", width - 10, 20, [rect(0, 0, 5, 5)], "C.",
    ...                    layout="narrow" if width < WIDE_WIDTH else "wide")
    >>> d = for_every_screen(draw)
    >>> (d.layout, d.width, d.narrow.layout, d.narrow.width), d.to_html().count("<svg")
    (('wide', 590, 'narrow', 318), 2)
    """
    wide, narrow = draw(WIDE_WIDTH), draw(NARROW_WIDTH)
    for diagram, width, layout in ((wide, WIDE_WIDTH, "wide"), (narrow, NARROW_WIDTH, "narrow")):
        if diagram.layout != layout or diagram.width > width:
            raise ValueError(f"picture {diagram.name}: its {diagram.layout} layout is {diagram.width:g} wide, "
                             f"over the {width} drawn for {layout} screens")
    if (wide.name, wide.title, wide.description, wide.caption) != \
            (narrow.name, narrow.title, narrow.description, narrow.caption):
        raise ValueError(f"picture {wide.name}: its two layouts must carry one text alternative and caption")
    wide.narrow = narrow
    return wide


def layout_for(width: float) -> str:
    """``"narrow"`` for a width under :data:`WIDE_WIDTH` (a phone's column), else ``"wide"``.

    >>> layout_for(NARROW_WIDTH), layout_for(WIDE_WIDTH)
    ('narrow', 'wide')
    """
    check_range("width", width, 200, 2000)
    return "narrow" if width < WIDE_WIDTH else "wide"
