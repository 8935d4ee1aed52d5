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

__all__ = ["Diagram", "rect", "text", "line", "arrow", "group"]


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


@dataclass
class Diagram:
    """One picture: an id (unique on its page), a title and a description (the text alternative), the
    ``viewBox`` size, its shapes, and the caption shown under it (plain text; numbers from ``calc``)."""

    name: str
    title: str
    description: str
    width: float
    height: float
    shapes: list[str] = field(default_factory=list)
    caption: str = ""

    def svg(self) -> str:
        """The inline ``<svg>``: ``role="img"`` labelled by its ``<title>`` and ``<desc>``."""
        title_id, desc_id = f"figure-{self.name}-title", f"figure-{self.name}-desc"
        return (f'<svg viewBox="0 0 {_num(self.width)} {_num(self.height)}" width="100%" role="img" '
                f'aria-labelledby="{title_id} {desc_id}" class="calc-diagram">'
                f'<title id="{title_id}">{escape(self.title)}</title>'
                f'<desc id="{desc_id}">{escape(self.description)}</desc>'
                + "".join(self.shapes) + "</svg>")

    def to_html(self) -> str:
        """``<figure>`` holding the SVG and its ``<figcaption>``."""
        return (f'<figure class="calc-figure" id="figure-{self.name}">{self.svg()}'
                f"<figcaption>{escape(self.caption)}</figcaption></figure>")
