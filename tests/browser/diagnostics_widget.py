"""A widget that works for as long as it is asked to: how the browser tests check the runtime's budget.

A call that runs past its widget's budget is stopped by the page: the worker is
terminated and restarted, and the widget says so. This widget makes such a call
on purpose; it is on no page and not in the built site. The browser tests that
need it take the ``with_test_widgets`` fixture (tests/browser/conftest.py): the test
server then adds this file to the calc zip it serves, as
``calc/widgets/diagnostics.py``, and the worker imports it on the first call of
``diagnostics.busy`` like any page module. The production allow-list never holds it.
(Not collected by pytest: importing it here would register it in the test process.)
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
