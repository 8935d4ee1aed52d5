"""Pictures of the KV cache: what one token stores (step 2) and the block table of paged attention (step 5)."""

from __future__ import annotations

from calc.catalog import get_model
from calc.diagrams.svg import Diagram, for_every_screen, layout_for, rect, text, wrap
from calc.memory import KV_DTYPE_BYTES, kv_bytes_per_token
from calc.sim.kv_blocks import BlockPool, blocks_for_tokens

__all__ = ["kv_per_layer_head", "block_table"]


def _shown(count: int, first: int) -> list[int]:
    """The indices a teacher draws out of ``count`` (from 1): the first ``first``, then the last.

    >>> _shown(32, 3), _shown(8, 2), _shown(3, 3)
    ([1, 2, 3, 32], [1, 2, 8], [1, 2, 3])
    """
    return [*range(1, first + 1), count] if count > first + 1 else list(range(1, count + 1))


def kv_per_layer_head(model: str = "llama-3.1-8b", kv_dtype: str = "bf16", *, width: float | None = None) -> Diagram:
    """One token's KV cache as a grid: a K and a V vector for every layer (rows) and KV head (columns).

    The caption's product is :func:`calc.memory.kv_bytes_per_token`, so the picture and the formula agree.
    Drawn ``width`` wide (viewBox units): three heads and the last on a wide screen, two and the last on a
    phone; without ``width``, both layouts (:func:`calc.diagrams.svg.for_every_screen`).

    >>> d = kv_per_layer_head()
    >>> d.caption.split(":")[1].strip()
    '2 × 32 layers × 8 KV heads × 128 values × 2 bytes = 131,072 bytes per token.'
    >>> d.svg().count('class="d-k"') == d.svg().count('class="d-v"') == 4 * 4  # 4 layers by 4 heads drawn
    True
    >>> d.narrow.svg().count('class="d-k"')  # 4 layers by 3 heads on a phone
    12
    """
    if width is None:
        return for_every_screen(lambda w: kv_per_layer_head(model, kv_dtype, width=w))
    layout = layout_for(width)
    shape = get_model(model)
    value_bytes = KV_DTYPE_BYTES[kv_dtype]
    per_token = kv_bytes_per_token(shape, kv_dtype)
    heads = shape.kv_heads
    # Three rows and columns (two columns on a phone), a gap, the last: what a teacher would draw.
    shown_layers = _shown(shape.layers, 3)
    shown_heads = _shown(heads, 3 if layout == "wide" else 2)
    left, top, cell_w, cell_h, gap, head_gap, elided_gap = 64, 44, 34, 22, 4, 10, 24
    head_w = 2 * cell_w + gap

    def column_x(column: int) -> float:
        skipped = elided_gap if shown_heads[-1] != len(shown_heads) and column == len(shown_heads) - 1 else 0
        return left + column * (head_w + head_gap) + skipped

    drawn_w = column_x(len(shown_heads) - 1) + head_w + 4
    shapes = [text(drawn_w / 2, 16, f"one token of {shape.name}", size=14, weight="600")]
    for column, head in enumerate(shown_heads):
        shapes.append(text(column_x(column) + head_w / 2, 36, f"KV head {head}", size=12))
    y = top
    for row, layer in enumerate(shown_layers):
        if row and layer != shown_layers[row - 1] + 1:
            shapes.append(text(drawn_w / 2, y + 10, f"⋮ layers {shown_layers[row - 1] + 1} to {layer - 1} ⋮", size=12))
            y += 20
        shapes.append(text(4, y + 16, f"layer {layer}", anchor="start", size=12))
        for column, head in enumerate(shown_heads):
            x = column_x(column)
            if column and head != shown_heads[column - 1] + 1:
                shapes.append(text(x - (elided_gap + head_gap) / 2, y + 16, "…", size=14))
            shapes.append(rect(x, y, cell_w, cell_h, "d-k", title=f"K, layer {layer}, head {head}"))
            shapes.append(text(x + cell_w / 2, y + 16, "K", size=12, cls="d-on-fill"))
            shapes.append(rect(x + cell_w + gap, y, cell_w, cell_h, "d-v", title=f"V, layer {layer}, head {head}"))
            shapes.append(text(x + cell_w + gap + cell_w / 2, y + 16, "V", size=12, cls="d-on-fill"))
        y += cell_h + 8
    note = f"each box: {shape.head_dim} values × {value_bytes} bytes = {shape.head_dim * value_bytes} bytes"
    for line_text in wrap(note, 12, drawn_w - 8):
        shapes.append(text(drawn_w / 2, y + 14, line_text, size=12))
        y += 16
    formula = (f"2 × {shape.layers} layers × {heads} KV heads × {shape.head_dim} values × {value_bytes} bytes"
               f" = {per_token:,} bytes per token.")
    return Diagram(
        "kv-per-layer-head",
        f"What one token keeps in the KV cache of {shape.name}",
        f"A grid with one row per layer ({shape.layers} layers) and one column per KV head ({heads} heads); the "
        f"first few of each are drawn, then the last. Every cell holds a K vector and a V vector of "
        f"{shape.head_dim} values. {formula}",
        drawn_w, y + 8, shapes,
        f"Every token keeps a K and a V vector in every layer and every KV head of {shape.name}: {formula}",
        layout=layout,
    )


def _grow_block_tables(request_tokens: list[int], block_size: int, total_blocks: int):
    """Grow the requests one token at a time, in turn, taking a block from ``BlockPool`` whenever a request
    fills its last one; physical blocks are numbered in the order the pool hands them out."""
    pool = BlockPool(total_blocks, block_size)
    tables: list[list[int]] = [[] for _ in request_tokens]
    next_physical = 0
    for step in range(max(request_tokens)):
        for index, tokens in enumerate(request_tokens):
            if step < tokens and blocks_for_tokens(step + 1, block_size) > len(tables[index]):
                if not pool.take(1):
                    raise ValueError("the example does not fit its pool")
                tables[index].append(next_physical)
                next_physical += 1
    return pool, tables


def block_table(request_tokens: tuple[int, ...] = (7, 10, 3), block_size: int = 4, total_blocks: int = 10, *,
                width: float | None = None) -> Diagram:
    """Paged attention's block table for a small example: each request's logical blocks point to physical
    blocks handed out by :class:`calc.sim.kv_blocks.BlockPool` as the requests grow side by side.

    On a wide screen the physical blocks stand right of the logical ones; on a phone, under them.

    >>> d = block_table()
    >>> d.caption.split(". ")[1]
    '6 of 10 physical blocks are in use and 4 are free; 4 token slots are empty, at most 2 per request: the waste is under one block per sequence.'
    >>> d.svg().count("→"), 'class="d-free"' in d.svg(), d.narrow.svg().count("→")
    (6, True, 6)
    """
    if width is None:
        return for_every_screen(lambda w: block_table(request_tokens, block_size, total_blocks, width=w))
    layout = layout_for(width)
    pool, tables = _grow_block_tables(list(request_tokens), block_size, total_blocks)
    owner = {}
    filled = {}
    for index, table in enumerate(tables):
        for logical, physical in enumerate(table):
            owner[physical] = index
            filled[physical] = min(block_size, request_tokens[index] - logical * block_size)
    names = [chr(ord("A") + i) for i in range(len(request_tokens))]
    classes = ["d-k", "d-v", "d-accent", "d-muted"]
    slot, block_gap = (14, 8) if layout == "wide" else (18, 10)
    logical_w = block_size * slot + block_gap
    # Wide: each request's label left of its row, physical blocks to the right. Narrow: the label above
    # its row, the physical blocks below the requests.
    label_w = 128 if layout == "wide" else 0
    row_h = 40 if layout == "wide" else 52
    shapes = [text(10, 18, "logical blocks (per request)", anchor="start", size=12, weight="600")]
    for index, table in enumerate(tables):
        y = 32 + index * row_h
        label = f"request {names[index]} ({request_tokens[index]} tokens)"
        if layout == "wide":
            shapes.append(text(10, y + 15, label, anchor="start", size=11))
        else:
            shapes.append(text(10, y + 10, label, anchor="start", size=11))
        row_y = y + 2 if layout == "wide" else y + 16
        for logical, physical in enumerate(table):
            x = 10 + label_w + logical * logical_w
            for s in range(block_size):
                used = s < filled[physical]
                shapes.append(rect(x + s * slot, row_y, slot - 2, 18, classes[index % 4] if used else "d-free",
                                   rx=2, title=f"{names[index]}: logical block {logical}, slot {s}"
                                   + ("" if used else " (empty)")))
            shapes.append(text(x + block_size * slot / 2, row_y + 31, f"→ {physical}", size=11))
    logical_bottom = 32 + len(tables) * row_h
    longest = max(len(t) for t in tables)
    cols = 5
    phys_w = block_size * (9 if layout == "wide" else 12)
    if layout == "wide":
        phys_x, phys_top = 10 + label_w + longest * logical_w + 24, 32
    else:
        phys_x, phys_top = 10, logical_bottom + 26
    heading_y = 18 if layout == "wide" else logical_bottom + 14
    shapes.append(text(phys_x, heading_y, "physical blocks (GPU memory)", anchor="start", size=12, weight="600"))
    for physical in range(total_blocks):
        x = phys_x + (physical % cols) * (phys_w + 6)
        y = phys_top + (physical // cols) * 44
        if physical in owner:
            index = owner[physical]
            shapes.append(rect(x, y, phys_w, 22, classes[index % 4],
                               title=f"physical block {physical}: request {names[index]}"))
            shapes.append(text(x + phys_w / 2, y + 15, names[index], size=12,
                               cls="d-on-fill" if classes[index % 4] != "d-muted" else ""))
        else:
            shapes.append(rect(x, y, phys_w, 22, "d-free", title=f"physical block {physical}: free"))
        shapes.append(text(x + phys_w / 2, y + 37, str(physical), size=11))
    empty_slots = sum(len(t) * block_size - n for t, n in zip(tables, request_tokens))
    worst = max(len(t) * block_size - n for t, n in zip(tables, request_tokens))
    phys_bottom = phys_top + -(-total_blocks // cols) * 44 + 2
    drawn_w = max(phys_x + cols * (phys_w + 6), 10 + label_w + longest * logical_w) + 4
    return Diagram(
        "block-table",
        "Paged attention's block table",
        f"Requests {', '.join(names)} hold {', '.join(str(n) for n in request_tokens)} tokens in blocks of "
        f"{block_size} slots. Each request's logical blocks map to physical blocks taken from the pool in the "
        f"order the requests grew, so one request's blocks are scattered: "
        + "; ".join(f"{names[i]} uses blocks {', '.join(map(str, t))}" for i, t in enumerate(tables)) + ".",
        drawn_w, max(logical_bottom + 6, phys_bottom), shapes,
        f"Blocks of {block_size} token slots (vLLM uses 16), taken one at a time as the requests grow. "
        f"{pool.used} of {total_blocks} physical blocks are in use and {pool.free} are free; "
        f"{empty_slots} token slots are empty, at most {worst} per request: "
        f"the waste is under one block per sequence.",
        layout=layout,
    )
