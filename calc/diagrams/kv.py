"""Pictures of the KV cache: what one token stores (step 2) and the block table of paged attention (step 5)."""

from __future__ import annotations

from calc.catalog import get_model
from calc.diagrams.svg import Diagram, arrow, rect, text
from calc.memory import KV_DTYPE_BYTES, kv_bytes_per_token
from calc.sim.kv_blocks import BlockPool, blocks_for_tokens

__all__ = ["kv_per_layer_head", "block_table"]


def kv_per_layer_head(model: str = "llama-3.1-8b", kv_dtype: str = "bf16") -> Diagram:
    """One token's KV cache as a grid: a K and a V vector for every layer (rows) and KV head (columns).

    The caption's product is :func:`calc.memory.kv_bytes_per_token`, so the picture and the formula agree.

    >>> d = kv_per_layer_head()
    >>> d.caption.split(":")[1].strip()
    '2 × 32 layers × 8 KV heads × 128 values × 2 bytes = 131,072 bytes per token.'
    >>> d.svg().count('class="d-k"') == d.svg().count('class="d-v"') == 4 * 4  # 4 layers by 4 heads drawn
    True
    """
    shape = get_model(model)
    value_bytes = KV_DTYPE_BYTES[kv_dtype]
    per_token = kv_bytes_per_token(shape, kv_dtype)
    heads = shape.kv_heads
    # Three rows and columns, a gap, the last: what a teacher would draw, and narrow enough for a phone.
    shown_layers = [1, 2, 3, shape.layers] if shape.layers > 4 else list(range(1, shape.layers + 1))
    shown_heads = [1, 2, 3, heads] if heads > 4 else list(range(1, heads + 1))
    left, top, cell_w, cell_h, gap, head_gap = 70, 44, 34, 22, 4, 10
    head_w = 2 * cell_w + gap

    def column_x(column: int) -> float:
        skipped = 24 if shown_heads[-1] != len(shown_heads) and column == len(shown_heads) - 1 else 0
        return left + column * (head_w + head_gap) + skipped

    width = column_x(len(shown_heads) - 1) + head_w + 8
    shapes = [text(width / 2, 16, f"one token of {shape.name}", size=14, weight="600")]
    for column, head in enumerate(shown_heads):
        shapes.append(text(column_x(column) + head_w / 2, 36, f"KV head {head}", size=12))
    y = top
    for row, layer in enumerate(shown_layers):
        if row and layer != shown_layers[row - 1] + 1:
            shapes.append(text(width / 2, y + 10, f"⋮ layers {shown_layers[row - 1] + 1} to {layer - 1} ⋮", size=12))
            y += 20
        shapes.append(text(4, y + 16, f"layer {layer}", anchor="start", size=12))
        for column, head in enumerate(shown_heads):
            x = column_x(column)
            if column and head != shown_heads[column - 1] + 1:
                shapes.append(text(x - 17, y + 16, "…", size=14))
            shapes.append(rect(x, y, cell_w, cell_h, "d-k", title=f"K, layer {layer}, head {head}"))
            shapes.append(text(x + cell_w / 2, y + 16, "K", size=12, cls="d-on-fill"))
            shapes.append(rect(x + cell_w + gap, y, cell_w, cell_h, "d-v", title=f"V, layer {layer}, head {head}"))
            shapes.append(text(x + cell_w + gap + cell_w / 2, y + 16, "V", size=12, cls="d-on-fill"))
        y += cell_h + 8
    shapes.append(text(width / 2, y + 14,
                       f"each box: {shape.head_dim} values × {value_bytes} bytes = {shape.head_dim * value_bytes} bytes",
                       size=12))
    formula = (f"2 × {shape.layers} layers × {heads} KV heads × {shape.head_dim} values × {value_bytes} bytes"
               f" = {per_token:,} bytes per token.")
    return Diagram(
        "kv-per-layer-head",
        f"What one token keeps in the KV cache of {shape.name}",
        f"A grid with one row per layer ({shape.layers} layers: three drawn, then the last) and one column per KV "
        f"head ({heads}: three drawn, then the last); every cell holds a K vector and a V vector of {shape.head_dim} values. {formula}",
        width, y + 24, shapes,
        f"Every token keeps a K and a V vector in every layer and every KV head of {shape.name}: {formula}",
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


def block_table(request_tokens: tuple[int, ...] = (7, 10, 3), block_size: int = 4, total_blocks: int = 10) -> Diagram:
    """Paged attention's block table for a small example: each request's logical blocks point to physical
    blocks handed out by :class:`calc.sim.kv_blocks.BlockPool` as the requests grow side by side.

    >>> d = block_table()
    >>> d.caption.split(". ")[1]
    '6 of 10 physical blocks are in use and 4 are free; 4 token slots are empty, at most 2 per request: the waste is under one block per sequence.'
    >>> d.svg().count("→"), 'class="d-free"' in d.svg()
    (6, True)
    """
    pool, tables = _grow_block_tables(list(request_tokens), block_size, total_blocks)
    owner = {}
    filled = {}
    for index, table in enumerate(tables):
        for logical, physical in enumerate(table):
            owner[physical] = index
            filled[physical] = min(block_size, request_tokens[index] - logical * block_size)
    names = [chr(ord("A") + i) for i in range(len(request_tokens))]
    classes = ["d-k", "d-v", "d-accent", "d-muted"]
    slot, row_h = 14, 34
    shapes = [text(10, 18, "logical blocks (per request)", anchor="start", size=12, weight="600")]
    phys_x = 360
    shapes.append(text(phys_x, 18, "physical blocks (GPU memory)", anchor="start", size=12, weight="600"))
    for index, table in enumerate(tables):
        y = 32 + index * row_h
        shapes.append(text(10, y + 15, f"request {names[index]} ({request_tokens[index]} tokens)", anchor="start",
                           size=11))
        for logical, physical in enumerate(table):
            x = 130 + logical * (block_size * slot + 8)
            for s in range(block_size):
                used = s < filled[physical]
                shapes.append(rect(x + s * slot, y + 2, slot - 2, 18, classes[index % 4] if used else "d-free",
                                   rx=2, title=f"{names[index]}: logical block {logical}, slot {s}"
                                   + ("" if used else " (empty)")))
            shapes.append(text(x + block_size * slot / 2, y + 31, f"→ {physical}", size=10))
    cols = 5
    for physical in range(total_blocks):
        x = phys_x + (physical % cols) * (block_size * 9 + 6)
        y = 32 + (physical // cols) * 44
        if physical in owner:
            index = owner[physical]
            shapes.append(rect(x, y, block_size * 9, 22, classes[index % 4],
                               title=f"physical block {physical}: request {names[index]}"))
            shapes.append(text(x + block_size * 4.5, y + 15, names[index], size=11, cls="d-on-fill"))
        else:
            shapes.append(rect(x, y, block_size * 9, 22, "d-free", title=f"physical block {physical}: free"))
        shapes.append(text(x + block_size * 4.5, y + 35, str(physical), size=10))
    empty_slots = sum(len(t) * block_size - n for t, n in zip(tables, request_tokens))
    worst = max(len(t) * block_size - n for t, n in zip(tables, request_tokens))
    height = max(32 + len(tables) * row_h + 10, 32 + -(-total_blocks // cols) * 44 + 4)
    return Diagram(
        "block-table",
        "Paged attention's block table",
        f"Requests {', '.join(names)} hold {', '.join(str(n) for n in request_tokens)} tokens in blocks of "
        f"{block_size} slots. Each request's logical blocks map to physical blocks taken from the pool in the "
        f"order the requests grew, so one request's blocks are scattered: "
        + "; ".join(f"{names[i]} uses blocks {', '.join(map(str, t))}" for i, t in enumerate(tables)) + ".",
        phys_x + cols * (block_size * 9 + 6), height, shapes,
        f"Blocks of {block_size} token slots (vLLM uses 16), taken one at a time as the requests grow. "
        f"{pool.used} of {total_blocks} physical blocks are in use and {pool.free} are free; "
        f"{empty_slots} token slots are empty, at most {worst} per request: "
        f"the waste is under one block per sequence.",
    )
