"""The ``/// replica-change | N`` block: a step's change to the reader's replica, declared in the page.

In a step page, right after its Try this or takeaway::

    /// replica-change | 4
    label: Reserve max_model_len (8,192 tokens) for every request
    delta: {"allocation": "contiguous"}
    ///

renders an "Apply to my replica" button ``[data-apply-step="4"]`` carrying the
scenario delta (``data-replica-delta``, JSON) and its label; the replica panel
(``docs/assets/runtime/calc-replica.js``) sends it to the worker, which redeploys
the replica with it (:mod:`calc.replica`). The body is checked at build
(:func:`calc.replica.parse_change`): a delta that does not make a valid scenario
of the running example fails the build. Registered with the calc blocks (:mod:`scan`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as etree

from pymdownx.blocks.block import Block


def render_change(step: int, label: str, delta: dict) -> etree.Element:
    """The block's HTML: the button and its label."""
    holder = etree.Element("div", {"class": "calc-replica-change"})
    button = etree.SubElement(holder, "button", {
        "type": "button", "class": "md-button md-button--primary calc-replica-apply", "data-apply-step": str(step),
        "data-replica-delta": json.dumps(delta, sort_keys=True), "data-replica-label": label,
        "aria-describedby": f"calc-replica-change-{step}",
    })
    button.text = "Apply to my replica"
    note = etree.SubElement(holder, "span", {"class": "calc-replica-change-label", "id": f"calc-replica-change-{step}"})
    note.text = f"Step {step}: {label}"
    return holder


class ReplicaChangeBlock(Block):
    NAME = "replica-change"
    ARGUMENT = True

    def on_markdown(self) -> str:
        return "raw"

    def on_create(self, parent: etree.Element) -> etree.Element:
        return etree.SubElement(parent, "div", {"class": "calc-replica-change-block"})

    def on_end(self, block: etree.Element) -> None:
        from calc.replica import parse_change

        text = block.text or ""
        block.text = None
        try:
            step = int(self.argument.strip())
        except ValueError:
            raise ValueError(f"replica-change {self.argument!r}: write the step's number, e.g. /// replica-change | 4")
        change = parse_change(step, str(text))
        block.append(render_change(change["step"], change["label"], change["delta"]))

