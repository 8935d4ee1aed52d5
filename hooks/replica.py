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
of the running example fails the build. An empty body takes the lesson's own change for the step.

Beside the button the build pre-renders the change's before -> after on the replica the lesson has carried to
the step (:func:`calc.replica.lesson_change_effect`, a few seconds of simulation on steps 14-20), its text in
``data-replica-text`` until the reader applies it, with the path it was computed on (``data-replica-path``): the panel shows it at once when
the reader's replica is on that path, and asks the worker only otherwise. Like every block kind its render is a
build-cache entry computed in parallel (its row in :mod:`kinds`).
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as etree

from blocks import _RequestBlock

FUNCTION = "replica.change"  # the request's name: the entry belongs to no page module (calc/widgets/replica.py)


def render_change(step: int, label: str, delta: dict, effect: dict | None = None) -> etree.Element:
    """The block's HTML: the button, its label and (given ``effect``) the pre-rendered before -> after."""
    holder = etree.Element("div", {"class": "calc-replica-change"})
    button = etree.SubElement(holder, "button", {
        "type": "button", "class": "md-button md-button--primary calc-replica-apply", "data-apply-step": str(step),
        "data-replica-delta": json.dumps(delta, sort_keys=True), "data-replica-label": label,
        "aria-describedby": f"calc-replica-change-{step}",
    })
    button.text = "Apply to my replica"
    note = etree.SubElement(holder, "span", {"class": "calc-replica-change-label", "id": f"calc-replica-change-{step}"})
    note.text = f"Step {step}: {label}"
    if effect is not None:
        # The line's text waits in an attribute: no words on the page until the reader applies the change.
        etree.SubElement(holder, "p", {
            "class": "calc-replica-effect", "hidden": "hidden", "aria-live": "polite",
            "data-replica-path": json.dumps(effect["path"], sort_keys=True), "data-replica-text": effect["sentence"]})
    return holder


def change(name: str, options: dict) -> str:
    """The renderer of the replica-change kind (:mod:`kinds`): the block's HTML with its effect on the lesson's
    path computed."""
    from calc.replica import lesson_change_effect, parse_change

    parsed = parse_change(options["step"], options["body"])
    effect = lesson_change_effect(parsed["step"], parsed["delta"])
    return etree.tostring(render_change(parsed["step"], parsed["label"], parsed["delta"], effect), encoding="unicode")


class ReplicaChangeBlock(_RequestBlock):
    NAME = "replica-change"

    def on_markdown(self) -> str:
        return "raw"

    def on_create(self, parent: etree.Element) -> etree.Element:
        return etree.SubElement(parent, "div", {"class": "calc-replica-change-block"})

    def request(self) -> dict:
        try:
            step = int(self.argument.strip())
        except ValueError:
            raise ValueError(f"replica-change {self.argument!r}: write the step's number, e.g. /// replica-change | 4")
        return {"name": FUNCTION, "options": {"step": step, "body": self.body}}

    def on_end(self, block: etree.Element) -> None:
        self.body = str(block.text or "")
        block.text = None
        if self.collected():
            return
        block.append(etree.fromstring(self.config["values"](self.NAME, self.request())))
