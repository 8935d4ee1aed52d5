"""Page modules keep only what turns science into a view: no public helper that computes a number and formats nothing.

Issue 16: a helper in ``calc/widgets`` that only computes (a number, a dict of numbers, a scenario) belongs
in the science module named after what it computes, where the CLI, the notebooks and the tests reach it.
This reads every module of ``calc/widgets`` with ``ast`` and lists its public top-level functions that are
not a widget, a stream, a drill or the page's ``facts``, and whose body formats nothing: no f-string, no
string returned, no call to a view builder (``output``, ``table``, ``view``, a chart) or a formatter
(``format_*``, ``*_text``). A new one fails the test; move it (or, if it truly is part of a view, make that
visible in its code). :data:`ALLOWED` lists the exceptions, each with its reason.
"""

from __future__ import annotations

import ast
import pathlib

import pytest

WIDGETS = pathlib.Path(__file__).resolve().parents[2] / "calc" / "widgets"
#: The widget framework itself (registry, contract, worker entry point, chart builders): plumbing, not pages.
FRAMEWORK_MODULES = {"__init__", "framework", "contract", "runtime", "charts"}
#: Decorators that make a function a view (registered with the framework).
VIEW_DECORATORS = {"widget", "stream", "drill", "figure"}
#: Calls that build or format what a reader sees.
VIEW_CALLS = {"output", "table", "view", "str", "repr", "format"}
VIEW_CALL_SUFFIXES = ("_chart", "_text", "_figure", "_figures", "_views", "_view", "_outputs", "_label")

#: Public helpers that compute and may stay, ``module.function``: reason. None today.
ALLOWED: dict[str, str] = {}
#: Helpers other branches of this session move to the science (issue 16, item 2): tolerated while present, so
#: this test passes before and after their merge; delete an entry once its branch is merged.
MOVING_IN_PARALLEL = {
    "playground.scenario_data", "scale_on_the_queue.lesson_delay_s", "scale_on_the_queue.variant_summary",
    "speculation_at_saturation.coefficients", "speculation_at_saturation.break_even",
}
#: Found by this scan in pages another engineer owns this session: reported to the lead, to move next.
TO_MOVE = {
    "cheat_sheet.replica_numbers": "the replica's sizing, speed and cost: calc.lesson or calc.cost",
    "disaggregation.split_layouts": "TP across servers against TP + PP: calc.parallel",
    "simulation.kv_cache_shares": "KV holding / reserved-empty / free shares of a run: calc.sim_views",
}


def _name(node: ast.AST) -> str:
    if isinstance(node, ast.Call):
        node = node.func
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.id if isinstance(node, ast.Name) else ""


def _is_error_message(node: ast.AST) -> bool:
    """A ``raise``, or an assignment to an error field (``out["tp_error"] = f"..."``): a message, not a view."""
    if isinstance(node, ast.Raise):
        return True
    return isinstance(node, ast.Assign) and any("error" in ast.unparse(target) for target in node.targets)


def _walk_outside_raise(node: ast.AST):
    """Every node under ``node`` except inside error messages (:func:`_is_error_message`)."""
    for child in ast.iter_child_nodes(node):
        if not _is_error_message(child):
            yield child
            yield from _walk_outside_raise(child)


def formats_something(function: ast.FunctionDef) -> bool:
    """True if the function's body makes text or a view (see the module docstring).

    >>> formats_something(ast.parse("def f(x):\\n    return x * 2").body[0])
    False
    >>> formats_something(ast.parse("def f(x):\\n    return f'{x:,} tokens'").body[0])
    True
    >>> formats_something(ast.parse("def f(x):\\n    return output('a', 'A', x, '')").body[0])
    True
    >>> formats_something(ast.parse("def f(x):\\n    if x < 0:\\n        raise ValueError(f'{x}')\\n    return x").body[0])
    False
    """
    if function.returns is not None and ast.unparse(function.returns) == "str":
        return True
    for node in _walk_outside_raise(function):
        if isinstance(node, ast.JoinedStr):
            return True
        if isinstance(node, ast.Call):
            name = _name(node)
            if name in VIEW_CALLS or name.startswith("format_") or name.endswith(VIEW_CALL_SUFFIXES):
                return True
        if isinstance(node, (ast.Yield, ast.YieldFrom)):  # a generator of frames is a stream of views
            return True
    return False


def computing_helpers() -> dict[str, int]:
    """``module.function`` -> line, for every public helper of a page module that formats nothing."""
    found = {}
    for path in sorted(WIDGETS.glob("*.py")):
        if path.stem in FRAMEWORK_MODULES:
            continue
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if not isinstance(node, ast.FunctionDef) or node.name.startswith("_") or node.name == "facts":
                continue
            if {_name(d) for d in node.decorator_list} & VIEW_DECORATORS:
                continue
            if not formats_something(node):
                found[f"{path.stem}.{node.name}"] = node.lineno
    return found


def test_the_scan_sees_the_helpers_it_must():
    found = computing_helpers()
    assert "disaggregation.split_layouts" in found  # a listed one: the scan reaches page modules
    assert "kv_cache_arithmetic.attention_variants" not in found  # its result is labels of a table: a view
    assert not any(name.endswith(".facts") for name in found)


def test_no_new_number_only_helper_in_a_page_module():
    known = set(ALLOWED) | MOVING_IN_PARALLEL | set(TO_MOVE)
    new = {name: line for name, line in computing_helpers().items() if name not in known}
    assert not new, ("public helpers in calc/widgets compute and format nothing; move each to the science module "
                     f"it belongs to (with its doctest): {new}")


@pytest.mark.parametrize("name", sorted(set(ALLOWED) | set(TO_MOVE)))
def test_each_listed_exception_still_exists(name):
    assert name in computing_helpers(), f"{name} moved or formats now: delete it from this test's lists"


def test_the_helpers_moved_this_session_stay_in_the_science():
    from calc import prefix, quantization
    from calc.widgets import deep_quantization, prefix_caching

    assert quantization.sample_groups(1024) == 13 and "sample_groups" not in defined(deep_quantization)
    assert prefix.prefix_caching_scenario()["prefix_caching"] is True and "scenario" not in defined(prefix_caching)


def defined(module) -> set[str]:
    """Names of the functions a module defines itself (not those it imports)."""
    return {name for name, value in vars(module).items()
            if callable(value) and getattr(value, "__module__", None) == module.__name__}
