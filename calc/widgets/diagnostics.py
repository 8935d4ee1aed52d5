"""A widget that works for as long as it is asked to: how the site's tests and benchmark check the runtime's budget.

A call that runs past its widget's budget is stopped by the page: the worker is
terminated and restarted, and the widget says so. This widget makes such a call
on purpose; it is on no lesson page.

>>> busy(seconds=0.01)["outputs"]["worked_s"]["text"]
'0.01 s'

"""

from __future__ import annotations

import time
from typing import Annotated

from calc.widgets.framework import FloatRange, output, view, widget


@widget(budget_s=1.0)
def busy(seconds: Annotated[float, FloatRange(0, 30, 0.1, "s", label="Work for")] = 0.1):
    """Keep the worker busy for ``seconds`` of wall time (a loop, not a sleep: the worker cannot answer meanwhile)."""
    started = time.perf_counter()
    while time.perf_counter() - started < seconds:
        pass
    return view(outputs=[output("worked_s", "Worked", seconds, "s")])  # the request, not the clock: deterministic
