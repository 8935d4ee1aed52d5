"""Page modules keep only what turns science into a view: no public helper that computes a number and formats nothing.

Issue 16: a helper in ``calc/widgets`` that only computes (a number, a dict of numbers, a scenario) belongs
in the science module named after what it computes, where the CLI, the notebooks and the tests reach it.
This reads every module of ``calc/widgets`` with ``ast`` and lists its public top-level functions that are
not a widget, a stream, a drill or the page's ``facts``, and whose body formats nothing: no f-string, no
string returned, no call to a view builder (``output``, ``table``, ``view``, a chart) or a formatter
(``format_*``, ``*_text``). A new one fails the test; move it (or, if it truly is part of a view, make that
visible in its code). :data:`ALLOWED` lists the exceptions, each with its reason.

Issue 31: the facts a page's prose quotes are read too. A fact (a function registered with ``@fact``) formats
a number that calc computes: arithmetic in its body (``+ - * / // % **``, also inside an f-string) is science
that belongs in a calc module, with its doctest. So are the functions handed to ``fact(function)`` and
``fact_group(function, names)``. No page module computes its facts in one ``facts()`` dict any more.
"""

from __future__ import annotations

import ast
import pathlib

WIDGETS = pathlib.Path(__file__).resolve().parents[2] / "calc" / "widgets"
#: The widget framework itself (registry, contract, worker entry point, chart builders): plumbing, not pages.
FRAMEWORK_MODULES = {"__init__", "framework", "contract", "runtime", "charts", "controls"}
#: Decorators that make a function a view (registered with the framework).
VIEW_DECORATORS = {"widget", "stream", "drill", "figure", "fact"}
#: Calls that build or format what a reader sees.
VIEW_CALLS = {"output", "table", "view", "str", "repr", "format"}
VIEW_CALL_SUFFIXES = ("_chart", "_text", "_figure", "_figures", "_views", "_view", "_outputs", "_label")

#: Public helpers that compute and may stay, ``module.function``: reason. None today.
ALLOWED: dict[str, str] = {}
#: Helpers another branch moves to the science while this test lands: none (issue 16's moves are merged; add one
#: here, with its branch, only while that branch is open).
MOVING_IN_PARALLEL: set[str] = set()
#: Found by this scan in pages another engineer owns: none left (each moved to the module its reason names).
TO_MOVE: dict[str, str] = {}


ARITHMETIC = (ast.Add, ast.Sub, ast.Mult, ast.Div, ast.FloorDiv, ast.Mod, ast.Pow)


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


def computing_helpers(widgets: pathlib.Path = WIDGETS) -> dict[str, int]:
    """``module.function`` -> line, for every public helper of a page module that formats nothing."""
    found = {}
    for path in sorted(widgets.glob("*.py")):
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


def _is_text(node: ast.AST) -> bool:
    return isinstance(node, ast.JoinedStr) or (isinstance(node, ast.Constant) and isinstance(node.value, str))


def arithmetic_in(function: ast.FunctionDef | ast.Lambda) -> list[int]:
    """The lines of the arithmetic operations in a function's body (string ``+`` and ``%`` are text, not sums).

    >>> arithmetic_in(ast.parse("def f():\\n    return f'{a * 100:.0f}%' + ' ok'").body[0])
    [2]
    >>> arithmetic_in(ast.parse("def f():\\n    return format_number(share(a, b))").body[0])
    []
    """
    lines = []
    for node in ast.walk(function):
        if isinstance(node, ast.BinOp) and isinstance(node.op, ARITHMETIC) and not (_is_text(node.left)
                                                                                  or _is_text(node.right)):
            lines.append(node.lineno)
        elif isinstance(node, ast.AugAssign) and isinstance(node.op, ARITHMETIC):
            lines.append(node.lineno)
    return lines


def fact_bodies(widgets: pathlib.Path = WIDGETS) -> dict[str, dict[str, list[int]]]:
    """module -> fact -> lines of arithmetic, for every ``@fact`` function, every lambda handed to ``fact_from``
    (or a ``*_fact`` helper) in a loop (as ``helper:line``), every lambda of a ``*FACTS*`` table, and every function
    given to ``fact`` or ``fact_group``; a module's one ``facts()`` appears as the fact ``facts()``."""
    found: dict[str, dict[str, list[int]]] = {}
    for path in sorted(widgets.glob("*.py")):
        if path.stem in FRAMEWORK_MODULES:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        functions = {node.name: node for node in tree.body if isinstance(node, ast.FunctionDef)}
        for node in functions.values():
            if "fact" in {_name(d) for d in node.decorator_list}:
                found.setdefault(path.stem, {})[node.name] = arithmetic_in(node)
            elif node.name == "facts":
                found.setdefault(path.stem, {})["facts()"] = arithmetic_in(node)
        for node in tree.body:  # a table of facts, name -> lambda, registered in a loop (_FACTS = {...})
            if (isinstance(node, ast.Assign) and isinstance(node.value, ast.Dict)
                    and any(isinstance(t, ast.Name) and "FACTS" in t.id for t in node.targets)):
                for key, value in zip(node.value.keys, node.value.values):
                    if isinstance(value, ast.Lambda):
                        name = key.value if isinstance(key, ast.Constant) else f"line {value.lineno}"
                        found.setdefault(path.stem, {})[name] = arithmetic_in(value)
        for node in ast.walk(tree):
            if not isinstance(node, ast.Call):
                continue
            if _name(node) == "fact_from" or _name(node).endswith("_fact"):  # facts registered in a loop
                for argument in (a for a in node.args if isinstance(a, ast.Lambda)):
                    found.setdefault(path.stem, {})[f"{_name(node)}:{argument.lineno}"] = arithmetic_in(argument)
            elif _name(node) in ("fact", "fact_group") and node.args and isinstance(node.args[0], ast.Name):
                # fact(function) and fact_group(function, names): the function's body is a fact's body
                target = functions.get(node.args[0].id)
                if target is not None:
                    found.setdefault(path.stem, {})[target.name] = arithmetic_in(target)
    return found


def test_the_fact_scan_reads_fact_bodies(tmp_path):
    (tmp_path / "some_step.py").write_text(
        "@fact\ndef tokens():\n    return f'{a + b:,}'\n\n"
        "@fact('tp')\ndef _tp():\n    return str(lesson.TP)\n\n"
        "def facts():\n    return {'x': a / b}\n\n"
        "for key in KEYS:\n    _row_fact(key, 'hours', lambda row: format_number(row['h'] * 2))\n\n"
        "_FACTS = {'gb': lambda: format_number(x / GB), 'name': lambda: MODEL}\n"
        "fact_from('mb', lambda: format_number(y * 3))\n", encoding="utf-8")
    assert fact_bodies(tmp_path) == {"some_step": {"tokens": [3], "_tp": [], "facts()": [10],
                                                   "_row_fact:13": [13], "gb": [15], "name": [],
                                                   "fact_from:16": [16]}}
    assert computing_helpers(tmp_path) == {}  # a fact is text for the prose: no number-only helper


def test_a_fact_holds_no_arithmetic():
    """Every page module's facts format what calc computes, each fact a function of its own."""
    found = fact_bodies()
    migrated = {module: bodies for module, bodies in found.items() if "facts()" not in bodies}
    assert {"incident_p99_ttft", "accuracy", "playground"} <= set(migrated)
    with_sums = {f"{module}.{name}": lines for module, bodies in migrated.items() for name, lines in bodies.items()
                 if lines}
    assert not with_sums, f"arithmetic in facts: move it to calc (a function with a doctest), lines: {with_sums}"
    unmigrated = sorted(module for module, bodies in found.items() if "facts()" in bodies)
    assert not unmigrated, f"{unmigrated} still compute every fact in one facts(): make each a @fact (issue 31)"


def test_the_scan_sees_the_helpers_it_must(tmp_path):
    # A page module with one number-only helper among a view, a private helper and facts: only the helper is found.
    (tmp_path / "some_step.py").write_text(
        "def shares(use):\n    return [1 - u for u in use]\n\n"
        "def _private(x):\n    return x\n\n"
        "def facts():\n    return {'a': 1}\n\n"
        "@widget\ndef page(x=1):\n    return view(outputs=[])\n", encoding="utf-8")
    (tmp_path / "framework.py").write_text("def plumbing(x):\n    return x\n", encoding="utf-8")
    assert computing_helpers(tmp_path) == {"some_step.shares": 1}
    found = computing_helpers()
    assert "kv_cache_arithmetic.attention_variants" not in found  # its result is labels of a table: a view
    assert not any(name.endswith(".facts") for name in found)


def test_no_new_number_only_helper_in_a_page_module():
    known = set(ALLOWED) | MOVING_IN_PARALLEL | set(TO_MOVE)
    new = {name: line for name, line in computing_helpers().items() if name not in known}
    assert not new, ("public helpers in calc/widgets compute and format nothing; move each to the science module "
                     f"it belongs to (with its doctest): {new}")


def test_each_listed_exception_still_exists():
    found = computing_helpers()
    stale = sorted(name for name in set(ALLOWED) | set(TO_MOVE) if name not in found)
    assert not stale, f"{stale} moved or format now: delete them from this test's lists"


def test_the_helpers_moved_this_session_stay_in_the_science():
    from calc import cost, prefix, quantization, server_layouts, sim_views
    from calc.widgets import cheat_sheet, deep_quantization, disaggregation, prefix_caching, simulation

    assert quantization.sample_groups(1024) == 13 and "sample_groups" not in defined(deep_quantization)
    assert prefix.prefix_caching_scenario()["prefix_caching"] is True and "scenario" not in defined(prefix_caching)
    assert cost.replica_numbers()["requests_fit"] == 311 and "replica_numbers" not in defined(cheat_sheet)
    assert server_layouts.split_layouts()["pp"]["pp"] == 2 and "split_layouts" not in defined(disaggregation)
    assert sim_views.kv_cache_shares([0.8], [0.75])["kv_free_fraction"] == [0.2]
    assert "kv_cache_shares" not in defined(simulation)
    # the pages still reach them by their old names (tests and notebooks use them)
    assert cheat_sheet.replica_numbers is cost.replica_numbers and disaggregation.split_layouts is server_layouts.split_layouts
    assert simulation.kv_cache_shares is sim_views.kv_cache_shares


def defined(module) -> set[str]:
    """Names of the functions a module defines itself (not those it imports)."""
    return {name for name, value in vars(module).items()
            if callable(value) and getattr(value, "__module__", None) == module.__name__}
