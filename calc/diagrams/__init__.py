"""Explanatory pictures of the lesson's mechanisms, drawn as inline SVG at build time.

Each public function returns a :class:`calc.diagrams.svg.Diagram` (its SVG, a title and description for
screen readers, and a caption). Where a picture shows state (a block table, a batch, a hash chain) it is
drawn from ``calc``'s own state for a small example, so it stays true when the model changes. Pages embed
one with ``/// figure | module.function`` (``hooks/figures.py``). Colours are CSS classes styled by
``docs/assets/stylesheets/calc.css`` with Material's variables, so the pictures follow the light and dark
themes.

Every picture is drawn twice by its own function, which takes ``width`` (viewBox units): for a wide screen
(:data:`~calc.diagrams.svg.WIDE_WIDTH`, 600) and for a phone (:data:`~calc.diagrams.svg.NARROW_WIDTH`, 328:
rows become columns or stacks); called without ``width`` it returns the wide one carrying the narrow one
(:func:`~calc.diagrams.svg.for_every_screen`, which refuses a layout over its width or a second text
alternative). The stylesheet shows one of the two (the narrow one below a 40em screen) and hides the other
with ``display: none``; labels are at least :data:`~calc.diagrams.svg.MIN_FONT_SIZE` (11) units, which is
at least 11 CSS px where their layout shows. ``tests/diagrams`` checks every layout's labels against its
boxes and edges; ``tests/browser/test_pictures.py`` measures them in Chromium.

Modules: :mod:`~calc.diagrams.kv` (K and V per layer and head; the block table),
:mod:`~calc.diagrams.batching` (a prefill chunk riding in a decode step),
:mod:`~calc.diagrams.speculation` (draft, verify, accept or reject),
:mod:`~calc.diagrams.prefix` (the parent-hash chain),
:mod:`~calc.diagrams.pools` (the KV hand-off, the pipeline bubble, routing into pools).
"""

from calc.diagrams.svg import Diagram

__all__ = ["Diagram"]
