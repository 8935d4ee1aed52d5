"""Plan a deployment: the cheapest configuration that meets latency targets, and why (issue 34).

:func:`calc.plan.search.plan` is the whole planner; its modules, one idea each: :mod:`~calc.plan.inputs`
(the request), :mod:`~calc.plan.prices` (a GPU-hour's price), :mod:`~calc.plan.space` (the search
dimensions), :mod:`~calc.plan.screen` (the analytic screen), :mod:`~calc.plan.confirm` (the simulator on the
finalists), :mod:`~calc.plan.bands` (error bands from the accuracy page's held-out residuals),
:mod:`~calc.plan.commands` (the commands that verify a plan on real GPUs), :mod:`~calc.plan.explain` (the
answer in numbers and words), :mod:`~calc.plan.presets` (the lesson's running example and three services) and
:mod:`~calc.plan.decisions` (grading the planner's picks on measured configurations).
"""

__all__ = ["plan", "request_from_dict"]


def __getattr__(name):
    """``calc.plan.plan`` and ``calc.plan.request_from_dict``, imported on first use (the package stays light).

    >>> import calc.plan
    >>> calc.plan.plan.__module__, calc.plan.request_from_dict({"peak_rate_per_s": 3}).peak_rate_per_s
    ('calc.plan.search', 3)
    """
    if name == "plan":
        from calc.plan.search import plan

        return plan
    if name == "request_from_dict":
        from calc.plan.inputs import request_from_dict

        return request_from_dict
    raise AttributeError(f"module 'calc.plan' has no attribute {name!r}")
