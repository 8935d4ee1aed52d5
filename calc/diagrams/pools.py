"""Pictures of split serving: the KV hand-off and the pipeline bubble (step 18), routing into pools (step 20)."""

from __future__ import annotations

from calc.catalog import get_model
from calc.diagrams.svg import Diagram, arrow, rect, text
from calc.memory import kv_bytes_per_request
from calc.parallel import pipeline_bubble_fraction
from calc.sim.presets import load_data
from calc.sim.scheduler import SchedulerConfig
from calc.units import format_bytes

__all__ = ["kv_handoff", "pipeline_bubble", "routing_into_pools"]


def kv_handoff(model: str = "llama-3.1-70b", prompt_tokens: int = 1024) -> Diagram:
    """Disaggregated serving: the prefill pool computes a prompt's KV and hands it to the decode pool.

    The bytes on the arrow are :func:`calc.memory.kv_bytes_per_request` for the prompt.

    >>> d = kv_handoff()
    >>> d.caption.split(": ")[1].split(",")[0]
    '336 MB of KV cache for a 1'
    """
    shape = get_model(model)
    kv = kv_bytes_per_request(shape, prompt_tokens)
    size = format_bytes(kv)
    shapes = [text(20, 18, "request", anchor="start", size=12, weight="600"),
              arrow(40, 26, 40, 52),
              rect(10, 54, 200, 84, "d-accent"),
              text(110, 82, "prefill pool", size=14, cls="d-on-fill", weight="600"),
              text(110, 102, f"reads the {prompt_tokens:,}-token prompt", size=11, cls="d-on-fill"),
              text(110, 120, "compute-bound: big batches of tokens", size=11, cls="d-on-fill"),
              arrow(214, 96, 404, 96),
              text(309, 82, f"KV cache: {size}", size=12, weight="600"),
              text(309, 116, "over NVLink / RDMA, once", size=11),
              rect(408, 54, 200, 84, "d-k"),
              text(508, 82, "decode pool", size=14, cls="d-on-fill", weight="600"),
              text(508, 102, "writes the answer token by token", size=11, cls="d-on-fill"),
              text(508, 120, "memory-bound: many sequences", size=11, cls="d-on-fill"),
              arrow(508, 140, 508, 166),
              text(508, 180, "tokens stream to the user", size=12)]
    return Diagram(
        "kv-handoff",
        "The KV hand-off between a prefill pool and a decode pool",
        f"A request enters the prefill pool, which computes its prompt's KV cache. The KV cache, {size} for a "
        f"{prompt_tokens:,}-token prompt of {shape.name} in bf16, is copied once to the decode pool, which "
        f"generates the answer token by token.",
        620, 190, shapes,
        f"Each pool does one kind of work. The hand-off: {size} of KV cache for a {prompt_tokens:,}-token prompt "
        f"of {shape.name} (bf16), copied once from the prefill GPUs to the decode GPUs; a long prompt then never "
        f"stalls the decode steps of other users.",
    )


def pipeline_bubble(stages: int = 4, microbatches: int = 4) -> Diagram:
    """Pipeline parallelism across servers: each stage idles while the pipeline fills and drains.

    The idle share is :func:`calc.parallel.pipeline_bubble_fraction`: ``(p - 1) / (m + p - 1)``.

    >>> d = pipeline_bubble()
    >>> d.caption.split(". ")[0]
    '4 stages and 4 micro-batches: 7 time slots, of which each stage idles 3 (43%)'
    """
    slots = microbatches + stages - 1
    bubble = pipeline_bubble_fraction(stages, microbatches)
    cell_w, cell_h, left = 54, 28, 86
    shapes = [text(left, 14, "time →", anchor="start", size=11)]
    for s in range(stages):
        y = 24 + s * (cell_h + 8)
        shapes.append(text(8, y + 19, f"stage {s + 1}", anchor="start", size=12))
        for t in range(slots):
            x = left + t * cell_w
            m = t - s
            if 0 <= m < microbatches:
                shapes.append(rect(x, y, cell_w - 4, cell_h, "d-k", title=f"stage {s + 1} runs micro-batch {m + 1}"))
                shapes.append(text(x + (cell_w - 4) / 2, y + 19, f"mb {m + 1}", size=11, cls="d-on-fill"))
            else:
                shapes.append(rect(x, y, cell_w - 4, cell_h, "d-free", title=f"stage {s + 1} idle"))
    idle_slots = slots - microbatches
    return Diagram(
        "pipeline-bubble",
        "The pipeline bubble",
        f"{stages} pipeline stages (one per server) over {slots} time slots. Micro-batch 1 enters stage 1 first "
        f"and reaches stage {stages} {stages - 1} slots later; each stage is busy {microbatches} slots and idle "
        f"{idle_slots}, a bubble of {bubble:.0%}.",
        left + slots * cell_w + 8, 24 + stages * (cell_h + 8), shapes,
        f"{stages} stages and {microbatches} micro-batches: {slots} time slots, of which each stage idles "
        f"{idle_slots} ({bubble:.0%}). The bubble is (p − 1) / (m + p − 1); more micro-batches in flight shrink "
        f"it, which is why pipeline parallelism goes across servers and tensor parallelism stays inside one.",
    )


def routing_into_pools(preset: str = "step20-pools") -> Diagram:
    """The fix of step 20: a router sends each class of request to its own pool, each with its limits.

    Pools, classes, replicas and limits are read from the simulation preset the step runs, so the picture
    shows the configuration that produced the step's numbers.

    >>> d = routing_into_pools()
    >>> [line.split(":")[0] for line in d.description.split("; ")][:3]
    ['Pool chat takes chat requests', 'pool documents takes document requests', 'pool batch takes batch requests']
    """
    pools = load_data(preset)["fleet"]["pools"]
    defaults = SchedulerConfig()
    box_w, gap, top = 190, 20, 120
    width = len(pools) * (box_w + gap) + gap
    shapes = [rect(width / 2 - 110, 10, 220, 44, "d-accent"),
              text(width / 2, 30, "router", size=14, cls="d-on-fill", weight="600"),
              text(width / 2, 46, "by kind of request", size=11, cls="d-on-fill")]
    described = []
    for index, pool in enumerate(pools):
        x = gap + index * (box_w + gap)
        classes = ", ".join(pool["classes"])
        shapes.append(arrow(width / 2, 56, x + box_w / 2, top - 4))
        shapes.append(text(x + box_w / 2 + (8 if index == 1 else 0), 92 if index != 1 else 88, classes, size=11,
                           anchor="start" if index == 1 else "middle"))
        limits = [f"{pool.get('replicas', 1)} replica" + ("s" if pool.get("replicas", 1) != 1 else "")]
        limits.append(f"max_num_seqs {pool.get('max_num_seqs', defaults.max_num_seqs):,}")
        limits.append(f"chunk {pool.get('max_num_batched_tokens', defaults.max_num_batched_tokens):,} tokens")
        scaler = pool.get("autoscaler")
        if scaler:
            limits.append(f"scales on {scaler['signal'].replace('_', ' ')}, "
                          f"{scaler['min_replicas']} to {scaler['max_replicas']}")
        height = 34 + 18 * len(limits)
        shapes.append(rect(x, top, box_w, height, "d-k"))
        shapes.append(text(x + box_w / 2, top + 22, f"{pool['name']} pool", size=13, cls="d-on-fill", weight="600"))
        for row, limit in enumerate(limits):
            shapes.append(text(x + box_w / 2, top + 42 + 18 * row, limit, size=11, cls="d-on-fill"))
        described.append(f"pool {pool['name']} takes {classes} requests: {', '.join(limits)}")
    described[0] = described[0][0].upper() + described[0][1:]
    return Diagram(
        "routing-into-pools",
        "Routing into pools",
        "; ".join(described) + ".",
        width, top + 34 + 18 * 4 + 10, shapes,
        "The router sends each kind of request to its own pool, and each pool has its own limits and its own "
        "scaling: a surge of long documents queues in the documents pool and no longer delays the chat answers. "
        f"The pools drawn are those of the simulation on this page ({preset}).",
    )
