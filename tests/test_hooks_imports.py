"""hooks/ has no import circle, and one module registers the Markdown blocks: read from the sources' imports
(module level and inside functions alike), so a circle fails here before it fails a build."""

from __future__ import annotations

import ast
import os

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HOOKS = os.path.join(ROOT, "hooks")


def hook_imports(hooks_dir: str = HOOKS) -> dict[str, set[str]]:
    """Each hook module's name -> the hook modules it imports anywhere in its source."""
    names = {f[:-3] for f in os.listdir(hooks_dir) if f.endswith(".py")}
    graph = {}
    for name in sorted(names):
        with open(os.path.join(hooks_dir, f"{name}.py"), encoding="utf-8") as handle:
            tree = ast.parse(handle.read())
        found = set()
        for node in ast.walk(tree):
            if isinstance(node, ast.Import):
                found.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module:
                found.add(node.module.split(".")[0])
        graph[name] = (found & names) - {name}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Every import circle of ``graph``, each once, as the modules along it.

    >>> cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}})
    [['a', 'b', 'c', 'a']]
    >>> cycles({"a": {"b"}, "b": set()})
    []
    """
    found, seen = [], set()

    def walk(node, path):
        for target in sorted(graph.get(node, ())):
            if target in path:
                circle = path[path.index(target):] + [target]
                key = frozenset(circle)
                if key not in seen:
                    seen.add(key)
                    found.append(circle)
            else:
                walk(target, path + [target])

    for start in sorted(graph):
        walk(start, [start])
    return found


def test_hooks_have_no_import_circle():
    graph = hook_imports()
    assert {"scan", "blocks", "kinds", "prefetch", "build_cache", "entries"} <= set(graph)
    assert cycles(graph) == []


def test_the_detector_sees_a_circle_through_a_function_level_import(tmp_path):
    (tmp_path / "a.py").write_text("import b\n")
    (tmp_path / "b.py").write_text("def f():\n    from a import x\n")
    assert cycles(hook_imports(str(tmp_path))) == [["a", "b", "a"]]


def test_only_the_page_scan_makes_the_block_extension():
    """scan.py alone imports pymdownx's block extension (and registers the calc blocks with it); the block classes
    (blocks.py) only ask for their values."""
    users = []
    for name in sorted(os.listdir(HOOKS)):
        if name.endswith(".py"):
            with open(os.path.join(HOOKS, name), encoding="utf-8") as handle:
                tree = ast.parse(handle.read())
            if any(isinstance(node, ast.ImportFrom) and node.module == "pymdownx.blocks" for node in ast.walk(tree)):
                users.append(name)
    assert users == ["scan.py"]
