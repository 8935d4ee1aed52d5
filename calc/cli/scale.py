"""``python -m calc scale``: scale-up delay (pod start + weights / load bandwidth) and the warm headroom it calls for.

>>> from calc.cli import main
>>> main(["scale", "--json"])  # doctest: +ELLIPSIS
{
...
  "scale_up_delay_s": 130.554,
...
0
"""

from __future__ import annotations

import argparse

from calc.autoscale import scale_up_delay_s, warm_headroom
from calc.catalog import get_model
from calc.cli.model import add_model_argument
from calc.cli.step import json_ready
from calc.cli.table import format_table
from calc.errors import check_positive
from calc.memory import WEIGHT_FORMATS, weight_bytes
from calc.units import GB, format_bytes, format_number

HELP = "autoscaling: scale-up delay = pod start + weights / load bandwidth, and warm headroom for a traffic growth rate"


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Options of ``scale``. The defaults are an example to change, not measurements.

    >>> p = argparse.ArgumentParser(); add_arguments(p); a = p.parse_args([])
    >>> a.pod_start_s, a.load_gb_per_s, a.load_rps, a.growth_per_min, a.replica_capacity_rps
    (60.0, 2.0, 10.0, 0.05, 2.0)
    """
    add_model_argument(parser)
    parser.add_argument("--weights", default="bf16", choices=WEIGHT_FORMATS, help="weight format (default bf16)")
    parser.add_argument("--weights-gb", type=float, default=None,
                        help="bytes the new replica loads, in GB (1e9); default: the model's weights in --weights")
    parser.add_argument("--pod-start-s", type=float, default=60.0,
                        help="seconds to schedule the pod, pull the image and start the engine (example: 60)")
    parser.add_argument("--load-gb-per-s", type=float, default=2.0,
                        help="rate the replica reads its weights, GB/s (example: 2)")
    parser.add_argument("--load-rps", type=float, default=10.0, help="requests per second now (example: 10)")
    parser.add_argument("--growth-per-min", type=float, default=0.05,
                        help="traffic growth per minute, compounding: 0.05 = 5%% a minute (example: 0.05)")
    parser.add_argument("--replica-capacity-rps", type=float, default=2.0,
                        help="requests per second one replica sustains at the latency target (example: 2)")
    parser.add_argument("--target-utilization", type=float, default=1.0,
                        help="share of that capacity to plan for (default 1.0)")


def run(args) -> dict:
    """Delay and headroom as JSON-ready data.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> r = run(p.parse_args(["--weights-gb", "141", "--pod-start-s", "60", "--load-gb-per-s", "2"]))
    >>> r["scale_up_delay_s"], r["headroom"]["headroom_replicas"]
    (130.5, 1)
    """
    model = get_model(args.model)
    if args.weights_gb is None:
        weights_bytes = weight_bytes(model, args.weights).total_bytes
    else:
        weights_bytes = check_positive("weights_gb", args.weights_gb) * GB
    bandwidth = check_positive("load_gb_per_s", args.load_gb_per_s) * GB
    delay = scale_up_delay_s(pod_start_s=args.pod_start_s, weights_bytes=weights_bytes, load_bytes_per_s=bandwidth)
    headroom = warm_headroom(load_rps=args.load_rps, growth_per_min=args.growth_per_min, delay_s=delay,
                             replica_capacity_rps=args.replica_capacity_rps,
                             target_utilization=args.target_utilization)
    return json_ready({
        "model": model.key,
        "weights": args.weights,
        "weights_bytes": weights_bytes,
        "pod_start_s": args.pod_start_s,
        "load_bytes_per_s": bandwidth,
        "weights_load_s": weights_bytes / bandwidth,
        "scale_up_delay_s": delay,
        "headroom": headroom,
        "source": "the lesson's step 15: delay = pod start + weights / bandwidth; compound growth over the delay",
    })


def render(result: dict) -> str:
    """Delay and headroom as a table.

    >>> p = argparse.ArgumentParser(); add_arguments(p)
    >>> print(render(run(p.parse_args([]))))  # doctest: +ELLIPSIS
    quantity ...
    scale-up delay ...
    """
    h = result["headroom"]
    rows = [
        ("weights to load", format_bytes(result["weights_bytes"]), result["model"]),
        ("load bandwidth", f"{format_bytes(result['load_bytes_per_s'])}/s", ""),
        ("pod start", f"{format_number(result['pod_start_s'])} s", ""),
        ("weights load", f"{format_number(result['weights_load_s'])} s", "weights / bandwidth"),
        ("scale-up delay", f"{format_number(result['scale_up_delay_s'])} s", "pod start + weights load"),
        ("load now", f"{format_number(h['load_rps'])} req/s", f"{h['replicas_now']} replica(s)"),
        ("load at end of delay", f"{format_number(h['load_at_end_rps'])} req/s", f"{h['replicas_at_end']} replica(s)"),
        ("warm headroom", f"{h['headroom_replicas']} replica(s)", f"{h['headroom_fraction']:.1%} more load"),
    ]
    return f"{format_table(rows, headers=('quantity', 'value', 'note'))}\n({result['source']})"
