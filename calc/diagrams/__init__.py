"""Explanatory pictures of the lesson's mechanisms, drawn as inline SVG at build time.

Each public function returns a :class:`calc.diagrams.svg.Diagram` (its SVG, a title and description for
screen readers, and a caption). Where a picture shows state (a block table, a batch, a hash chain) it is
drawn from ``calc``'s own state for a small example, so it stays true when the model changes. Pages embed
one with ``/// figure | module.function`` (``hooks/figures.py``). Colours are CSS classes styled by
``docs/assets/stylesheets/calc.css`` with Material's variables, so the pictures follow the light and dark
themes; ``viewBox`` and ``width="100%"`` let them shrink to a phone's width.

Modules: :mod:`~calc.diagrams.kv` (K and V per layer and head; the block table),
:mod:`~calc.diagrams.batching` (a prefill chunk riding in a decode step),
:mod:`~calc.diagrams.speculation` (draft, verify, accept or reject),
:mod:`~calc.diagrams.prefix` (the parent-hash chain),
:mod:`~calc.diagrams.pools` (the KV hand-off, the pipeline bubble, routing into pools).
"""

from calc.diagrams.svg import Diagram

__all__ = ["Diagram"]
