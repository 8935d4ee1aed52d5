"""Pictures of split serving: the KV hand-off and the pipeline bubble (step 18), routing into pools (step 20)."""

from __future__ import annotations

from calc.catalog import get_model
from calc.diagrams.svg import Diagram, arrow, for_every_screen, layout_for, line, rect, text, text_width, wrap
from calc.memory import kv_bytes_per_request
from calc.parallel import pipeline_bubble_fraction
from calc.sim.presets import load_data
from calc.sim.scheduler import SchedulerConfig
from calc.units import format_bytes

__all__ = ["kv_handoff", "pipeline_bubble", "routing_into_pools"]


def kv_handoff(model: str = "llama-3.1-70b", prompt_tokens: int = 1024, *, width: float | None = None) -> Diagram:
    """Disaggregated serving: the prefill pool computes a prompt's KV and hands it to the decode pool.

    The bytes on the arrow are :func:`calc.memory.kv_bytes_per_request` for the prompt. The pools stand side
    by side on a wide screen and one above the other on a phone.

    >>> d = kv_handoff()
    >>> d.caption.split(": ")[1].split(",")[0]
    '336 MB of KV cache for a 1'
    >>> "KV cache: 336 MB" in d.svg() and "KV cache: 336 MB" in d.narrow.svg()
    True
    """
    if width is None:
        return for_every_screen(lambda w: kv_handoff(model, prompt_tokens, width=w))
    layout = layout_for(width)
    shape = get_model(model)
    kv = kv_bytes_per_request(shape, prompt_tokens)
    size = format_bytes(kv)
    pools = [("prefill pool", "d-accent", [f"reads the {prompt_tokens:,}-token prompt", "compute-bound: big batches of tokens"]),
             ("decode pool", "d-k", ["writes the answer token by token", "memory-bound: many sequences"])]
    hand_off = [f"KV cache: {size}", "over NVLink / RDMA, once"]
    widest = max(text_width(line_text, 11) for _, _, lines in pools for line_text in lines) + 12
    if layout == "wide":
        link_w = max(text_width(hand_off[0], 12, bold=True), text_width(hand_off[1], 11)) + 24
        box_w = min(widest, (width - 20 - link_w) / 2)
    else:
        box_w = width - 20
    # Each pool's lines, wrapped to its box (the box grows a line where one breaks).
    pools = [(name, cls, [part for line_text in lines for part in wrap(line_text, 11, box_w - 10)])
             for name, cls, lines in pools]
    box_h = 48 + 18 * max(len(lines) for _, _, lines in pools)
    if layout == "wide":
        boxes = [(10, 54), (10 + box_w + link_w, 54)]
        drawn_w, bottom = 10 + 2 * box_w + link_w + 10, 54 + box_h + 52
    else:
        boxes = [(10, 54), (10, 54 + box_h + 64)]
        drawn_w, bottom = width, 54 + 2 * box_h + 64 + 52
    first_mid = boxes[0][0] + box_w / 2
    last_x, last_y = boxes[1]
    shapes = [text(first_mid, 18, "request", size=12, weight="600"), arrow(first_mid, 26, first_mid, 52)]
    for (name, cls, lines), (x, y) in zip(pools, boxes):
        shapes.append(rect(x, y, box_w, box_h, cls))
        shapes.append(text(x + box_w / 2, y + 28, name, size=14, cls="d-on-fill", weight="600"))
        for row, line_text in enumerate(lines):
            shapes.append(text(x + box_w / 2, y + 48 + 18 * row, line_text, size=11, cls="d-on-fill"))
    if layout == "wide":
        y = 54 + box_h / 2
        shapes.append(arrow(10 + box_w + 4, y, last_x - 4, y))
        shapes.append(text((10 + box_w + last_x) / 2, y - 14, hand_off[0], size=12, weight="600"))
        shapes.append(text((10 + box_w + last_x) / 2, y + 20, hand_off[1], size=11))
    else:  # the hand-off runs down between the pools, its label beside the arrow
        top, end = 54 + box_h + 4, last_y - 4
        shapes.append(arrow(first_mid - 70, top, first_mid - 70, end))
        shapes.append(text(first_mid - 58, (top + end) / 2 - 4, hand_off[0], anchor="start", size=12, weight="600"))
        shapes.append(text(first_mid - 58, (top + end) / 2 + 14, hand_off[1], anchor="start", size=11))
    last_mid = last_x + box_w / 2
    shapes.append(arrow(last_mid, last_y + box_h + 2, last_mid, last_y + box_h + 28))
    shapes.append(text(last_mid, last_y + box_h + 42, "tokens stream to the user", size=12))
    return Diagram(
        "kv-handoff",
        "The KV hand-off between a prefill pool and a decode pool",
        f"A request enters the prefill pool, which computes its prompt's KV cache. The KV cache, {size} for a "
        f"{prompt_tokens:,}-token prompt of {shape.name} in bf16, is copied once to the decode pool, which "
        f"generates the answer token by token.",
        drawn_w, bottom, shapes,
        f"Each pool does one kind of work. The hand-off: {size} of KV cache for a {prompt_tokens:,}-token prompt "
        f"of {shape.name} (bf16), copied once from the prefill GPUs to the decode GPUs; a long prompt then never "
        f"stalls the decode steps of other users.",
        layout=layout,
    )


def pipeline_bubble(stages: int = 4, microbatches: int = 4, *, width: float | None = None) -> Diagram:
    """Pipeline parallelism across servers: each stage idles while the pipeline fills and drains.

    The idle share is :func:`calc.parallel.pipeline_bubble_fraction`: ``(p - 1) / (m + p - 1)``. The time
    slots narrow to fit a phone; a slot too narrow for "mb 3" says "3".

    >>> d = pipeline_bubble()
    >>> d.caption.split(". ")[0]
    '4 stages and 4 micro-batches: 7 time slots, of which each stage idles 3 (43%)'
    >>> d.svg().count(">mb 1<"), d.narrow.svg().count(">mb 1<")
    (4, 4)
    """
    if width is None:
        return for_every_screen(lambda w: pipeline_bubble(stages, microbatches, width=w))
    layout = layout_for(width)
    slots = microbatches + stages - 1
    bubble = pipeline_bubble_fraction(stages, microbatches)
    left = 8 + text_width(f"stage {stages}", 12) + 8
    cell_w, cell_h = min(54, (width - left - 8) / slots), 28
    label_room = cell_w - 4 - 4
    shapes = [text(left, 14, "time →", anchor="start", size=11)]
    for s in range(stages):
        y = 24 + s * (cell_h + 8)
        shapes.append(text(8, y + 19, f"stage {s + 1}", anchor="start", size=12))
        for t in range(slots):
            x = left + t * cell_w
            m = t - s
            if 0 <= m < microbatches:
                label = f"mb {m + 1}" if text_width(f"mb {microbatches}", 11) <= label_room else str(m + 1)
                shapes.append(rect(x, y, cell_w - 4, cell_h, "d-k", title=f"stage {s + 1} runs micro-batch {m + 1}"))
                shapes.append(text(x + (cell_w - 4) / 2, y + 19, label, size=11, cls="d-on-fill"))
            else:
                shapes.append(rect(x, y, cell_w - 4, cell_h, "d-free", title=f"stage {s + 1} idle"))
    idle_slots = slots - microbatches
    return Diagram(
        "pipeline-bubble",
        "The pipeline bubble",
        f"{stages} pipeline stages (one per server) over {slots} time slots. Micro-batch 1 enters stage 1 first "
        f"and reaches stage {stages} {stages - 1} slots later; each stage is busy {microbatches} slots and idle "
        f"{idle_slots}, a bubble of {bubble:.0%}.",
        left + slots * cell_w + 4, 24 + stages * (cell_h + 8), shapes,
        f"{stages} stages and {microbatches} micro-batches: {slots} time slots, of which each stage idles "
        f"{idle_slots} ({bubble:.0%}). The bubble is (p − 1) / (m + p − 1); more micro-batches in flight shrink "
        f"it, which is why pipeline parallelism goes across servers and tensor parallelism stays inside one.",
        layout=layout,
    )


def routing_into_pools(preset: str = "step20-pools", *, width: float | None = None) -> Diagram:
    """The fix of step 20: a router sends each class of request to its own pool, each with its limits.

    Pools, classes, replicas and limits are read from the simulation preset the step runs, so the picture
    shows the configuration that produced the step's numbers. The pools stand side by side on a wide
    screen and one under the other on a phone.

    >>> d = routing_into_pools()
    >>> [line.split(":")[0] for line in d.description.split("; ")][:3]
    ['Pool chat takes chat requests', 'pool documents takes document requests', 'pool batch takes batch requests']
    >>> d.svg().count(" pool</text>"), d.narrow.svg().count(" pool</text>")  # a box for each pool
    (3, 3)
    """
    if width is None:
        return for_every_screen(lambda w: routing_into_pools(preset, width=w))
    layout = layout_for(width)
    pools = load_data(preset)["fleet"]["pools"]
    defaults = SchedulerConfig()
    described, cards = [], []
    for pool in pools:
        classes = ", ".join(pool["classes"])
        replicas = pool.get("replicas", 1)
        limits = [f"{replicas} replica" + ("s" if replicas != 1 else ""),
                  f"max_num_seqs {pool.get('max_num_seqs', defaults.max_num_seqs):,}",
                  f"chunk {pool.get('max_num_batched_tokens', defaults.max_num_batched_tokens):,} tokens"]
        scaler = pool.get("autoscaler")
        if scaler:
            limits.append(f"scales on {scaler['signal'].replace('_', ' ')}, "
                          f"{scaler['min_replicas']} to {scaler['max_replicas']}")
        cards.append((pool["name"], classes, limits))
        described.append(f"pool {pool['name']} takes {classes} requests: {', '.join(limits)}")
    described[0] = described[0][0].upper() + described[0][1:]
    most_limits = max(len(limits) for _, _, limits in cards)
    if layout == "wide":  # the router above a row of pools, each arrow labelled with the classes it carries
        gap, top = 12, 112
        box_w = (width - gap * (len(cards) + 1)) / len(cards)
        drawn_w = width
        router_x = drawn_w / 2 - 110
        shapes = [rect(router_x, 10, 220, 44, "d-accent")]
        box_h = 34 + 18 * most_limits
        for index, (name, classes, limits) in enumerate(cards):
            x = gap + index * (box_w + gap)
            middle = x + box_w / 2
            shapes.append(arrow(drawn_w / 2, 56, middle, top - 4))
            # The label beside the arrow's middle: right of a straight arrow; above a slanted one, on its
            # outer side, where the arrow runs below the label.
            label_x, label_y = (drawn_w / 2 + middle) / 2, (56 + top - 4) / 2
            if abs(middle - drawn_w / 2) < 1:
                shapes.append(text(label_x + 8, label_y + 4, classes, size=11, anchor="start"))
            elif middle < drawn_w / 2:
                shapes.append(text(label_x - 6, label_y - 6, classes, size=11, anchor="end"))
            else:
                shapes.append(text(label_x + 6, label_y - 6, classes, size=11, anchor="start"))
            shapes.append(rect(x, top, box_w, box_h, "d-k"))
            shapes.append(text(middle, top + 22, f"{name} pool", size=13, cls="d-on-fill", weight="600"))
            for row, limit in enumerate(limits):
                shapes.append(text(middle, top + 42 + 18 * row, limit, size=11, cls="d-on-fill"))
        bottom = top + box_h + 10
    else:  # the router on top, a trunk down the left edge, a branch into each pool
        drawn_w, trunk_x, box_x = width, 22, 44
        box_w = width - box_x - 6
        shapes = [rect(10, 10, width - 20, 44, "d-accent")]
        y = 76
        branch_ys = []
        for name, classes, limits in cards:
            # Two limits a line where they fit, to keep the column short.
            lines, current = [], ""
            for limit in limits:
                joined = f"{current} · {limit}" if current else limit
                if current and text_width(joined, 11) > box_w - 20:
                    lines.append(current)
                    current = limit
                else:
                    current = joined
            lines.append(current)
            box_h = 48 + 18 * len(lines)
            shapes.append(rect(box_x, y, box_w, box_h, "d-k"))
            shapes.append(text(box_x + box_w / 2, y + 20, f"{name} pool", size=13, cls="d-on-fill", weight="600"))
            shapes.append(text(box_x + box_w / 2, y + 38, f"takes {classes} requests", size=11, cls="d-on-fill"))
            for row, content in enumerate(lines):
                shapes.append(text(box_x + box_w / 2, y + 56 + 18 * row, content, size=11, cls="d-on-fill"))
            branch_ys.append(y + 20)
            shapes.append(arrow(trunk_x, y + 20, box_x - 2, y + 20))
            y += box_h + 14
        shapes.insert(1, line(trunk_x, 56, trunk_x, branch_ys[-1]))
        bottom = y - 4
    shapes += [text(drawn_w / 2, 30, "router", size=14, cls="d-on-fill", weight="600"),
               text(drawn_w / 2, 46, "by kind of request", size=11, cls="d-on-fill")]
    return Diagram(
        "routing-into-pools",
        "Routing into pools",
        "; ".join(described) + ".",
        drawn_w, bottom, shapes,
        "The router sends each kind of request to its own pool, and each pool has its own limits and its own "
        "scaling: a surge of long documents queues in the documents pool and no longer delays the chat answers. "
        "The pools drawn are those of the simulation on this page.",
        layout=layout,
    )
