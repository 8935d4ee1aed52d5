"""Plain-text tables for the CLI's default output.

>>> print(format_table([("KV bytes per token", "327,680", "B")], headers=("quantity", "value", "unit")))
quantity            value    unit
------------------  -------  ----
KV bytes per token  327,680  B
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence


def format_table(rows: Iterable[Sequence[object]], headers: Sequence[str] | None = None) -> str:
    """Left-aligned columns separated by two spaces, with an underlined header when given."""
    rows = [[str(cell) for cell in row] for row in rows]
    if headers:
        rows.insert(0, list(headers))
    if not rows:
        return ""
    widths = [max(len(row[i]) for row in rows if i < len(row)) for i in range(max(map(len, rows)))]
    lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row)).rstrip() for row in rows]
    if headers:
        lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)
