"""calc's import graph: no circle anywhere in calc, and the simulator imports nothing from the CLI or the widgets.

Every import statement of every module counts, also those inside functions (a
circle closed by a lazy import is still a circle: the one between
calc.sim.presets and calc.cli.simulate was). The graph is read from the
sources with :mod:`ast`, so it does not depend on what a run imports. A module's
import of its own package (``from calc.widgets import x`` in ``calc.widgets.framework``)
is no edge: the package is imported before its modules in any case.
"""

import ast
import os

CALC = os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "calc")


def _modules() -> dict:
    """Module name -> path, for every .py file under calc/."""
    out = {}
    for folder, dirs, files in os.walk(CALC):
        dirs[:] = [d for d in dirs if d != "__pycache__"]
        for name in files:
            if name.endswith(".py"):
                path = os.path.join(folder, name)
                rel = os.path.relpath(path, os.path.dirname(CALC))[:-3].replace(os.sep, ".")
                out[rel[:-9] if rel.endswith(".__init__") else rel] = path
    return out


def import_graph(modules: dict | None = None) -> dict:
    """Module -> set of calc modules it imports (``from calc.x import name`` names module calc.x.name if it is one)."""
    modules = _modules() if modules is None else modules
    graph = {}
    for mod, path in modules.items():
        with open(path, encoding="utf-8") as handle:
            tree = ast.parse(handle.read(), path)
        package = mod if path.endswith("__init__.py") else mod.rpartition(".")[0]
        edges = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                targets = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = node.module or ""
                if node.level:
                    parts = package.split(".")
                    base = ".".join(parts[:len(parts) - node.level + 1] + ([base] if base else []))
                targets = [f"{base}.{alias.name}" if f"{base}.{alias.name}" in modules else base
                           for alias in node.names]
            else:
                continue
            for target in targets:
                while target and target not in modules:  # "import calc.sim.fleet" names that module
                    target = target.rpartition(".")[0]
                # A module's own packages are not edges: Python imports them before it anyway, and a package
                # that imports its modules would otherwise close a "circle" with every one of them.
                if target and target != mod and not mod.startswith(target + "."):
                    edges.add(target)
        graph[mod] = edges
    return graph


def find_circle(graph: dict):
    """One import circle as a list of modules (first = last), or None."""
    state = {}
    stack = []

    def visit(node):
        state[node] = "open"
        stack.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == "open":
                return stack[stack.index(nxt):] + [nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        stack.pop()
        state[node] = "done"
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_circle_finder_finds_circles():
    assert find_circle({"a": {"b"}, "b": {"c"}, "c": {"a"}}) == ["a", "b", "c", "a"]
    assert find_circle({"a": {"b", "c"}, "b": {"c"}, "c": set()}) is None


def test_the_graph_reads_lazy_and_from_imports():
    graph = import_graph()
    assert "calc.sim.presets" in graph["calc.cli.simulate"]  # from calc.sim import presets: the module
    assert "calc.sim.fleet" in graph["calc.sim.run"]
    assert "calc.errors" in graph["calc.sim.fleet"]


def test_no_import_circle_in_calc():
    circle = find_circle(import_graph())
    assert circle is None, "import circle: " + " -> ".join(circle)


def test_the_simulator_imports_nothing_from_the_cli_or_the_widgets():
    graph = import_graph()
    wrong = sorted((mod, target) for mod, targets in graph.items() if mod == "calc.sim" or mod.startswith("calc.sim.")
                   for target in targets if target.startswith(("calc.cli", "calc.widgets")))
    assert wrong == []
