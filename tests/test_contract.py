"""Both languages follow the one contract (calc/widgets/contract.json): no name used that it does not declare,
no name it declares that no side uses.

The JavaScript side is read from its sources (docs/assets/runtime/*.js, worker.mjs), the Python side from
calc/widgets/runtime.py (its handlers, by their syntax tree), hooks/widget_html.py and overrides/main.html.
The scanners are small and literal: a name built at run time (``"data-" + x``) would escape them, so the
runtime does not build names; the last tests check that each scanner finds what it looks for.
"""

from __future__ import annotations

import ast
import os
import re

import pytest

from calc.widgets import runtime
from calc.widgets.contract import ATTRIBUTES, CONTRACT, ERROR_KINDS, EVENTS, REQUESTS

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
JS_DIR = os.path.join(ROOT, "docs", "assets", "runtime")
PY_SOURCES = ("calc/widgets/runtime.py", "hooks/widget_html.py", "hooks/replica.py", "overrides/main.html")


def _read(path: str) -> str:
    with open(os.path.join(ROOT, path), encoding="utf-8") as handle:
        return handle.read()


def strip_js_comments(source: str) -> str:
    """The source without ``// ...`` comments (one that follows a space or starts a line: not ``http://``)."""
    return re.sub(r"(^|\s)//[^\n]*", r"\1", source)


def _js_sources() -> dict[str, str]:
    names = sorted(n for n in os.listdir(JS_DIR) if n.endswith((".js", ".mjs")))
    return {name: strip_js_comments(_read(os.path.join("docs", "assets", "runtime", name))) for name in names}


JS = _js_sources()
JS_ALL = "\n".join(JS.values())
PY = {path: _read(path) for path in PY_SOURCES}
PY_ALL = "\n".join(PY.values())


# --- scanners ---------------------------------------------------------------------------------------

# A whole data-* name: not the stem of a pattern such as ``data-search-*``.
ATTRIBUTE_NAME = r"\bdata-[a-z0-9]+(?:-[a-z0-9]+)*(?![\w*-])"


def kebab(camel: str) -> str:
    """The attribute a ``dataset`` property stands for: ``simState`` -> ``data-sim-state``."""
    return "data-" + re.sub(r"[A-Z]", lambda m: "-" + m.group(0).lower(), camel)


def js_attributes(source: str) -> set[str]:
    """data-* names in JavaScript: in strings and selectors (``data-chart``) and as ``dataset.camelCase``."""
    names = set(re.findall(ATTRIBUTE_NAME, source))
    return names | {kebab(m) for m in re.findall(r"\bdataset\.([a-zA-Z]+)", source)}


def python_attributes(source: str) -> set[str]:
    """data-* names the build writes: ``"data-x"`` strings, ``data_x=`` keywords and ``"data_x"`` keys."""
    names = set(re.findall(ATTRIBUTE_NAME, source))
    return names | {"data-" + m.replace("_", "-") for m in re.findall(r"\bdata_([a-z0-9_]+)\b[\"']?\s*[=:]", source)}


def object_keys(source: str, start: int) -> list[str]:
    """The keys at the top level of the object literal that opens at ``source[start] == "{"`` (shorthand too).

    Brackets are counted to find the object's end; strings holding brackets would confuse it, and the
    runtime's request and message objects hold none."""
    depth, parts, part = 0, [], ""
    for char in source[start:]:
        if char in "{[(":
            depth += 1
        elif char in "}])":
            depth -= 1
        if depth == 0:
            break
        if depth == 1 and char == ",":
            parts.append(part)
            part = ""
        elif depth > 1 or char != "{":
            part += char
    parts.append(part)
    keys = []
    for text in parts:
        match = re.match(r"\s*([A-Za-z_$][\w$]*)\s*(?::|$)", text)
        if match:
            keys.append(match.group(1))
    return keys


def js_requests(source: str) -> dict[str, set[str]]:
    """op -> the fields the page sends with it: ``request("op", {fields})``."""
    sent: dict[str, set[str]] = {}
    for match in re.finditer(r"\brequest\(\s*\"(\w+)\"\s*,\s*\{", source):
        sent.setdefault(match.group(1), set()).update(object_keys(source, match.end() - 1))
    return sent


def python_request_fields() -> dict[str, set[str]]:
    """op -> the request fields its handler in calc/widgets/runtime.py reads (``request.get("x")``, ``request["x"]``),
    with those of the handlers it calls."""
    tree = ast.parse(PY["calc/widgets/runtime.py"])
    reads: dict[str, set[str]] = {}
    calls: dict[str, set[str]] = {}
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name.startswith("_op_"):
            op = node.name[len("_op_"):]
            reads[op], calls[op] = set(), set()
            for inner in ast.walk(node):
                if (isinstance(inner, ast.Call) and isinstance(inner.func, ast.Attribute) and inner.func.attr == "get"
                        and isinstance(inner.func.value, ast.Name) and inner.func.value.id == "request"
                        and isinstance(inner.args[0], ast.Constant)):
                    reads[op].add(inner.args[0].value)
                if (isinstance(inner, ast.Subscript) and isinstance(inner.value, ast.Name) and inner.value.id == "request"
                        and isinstance(inner.slice, ast.Constant)):
                    reads[op].add(inner.slice.value)
                if isinstance(inner, ast.Call) and isinstance(inner.func, ast.Name) and inner.func.id.startswith("_op_"):
                    calls[op].add(inner.func.id[len("_op_"):])

    def closure(op: str) -> set[str]:
        fields = set(reads[op])
        for called in calls[op]:
            fields |= closure(called)
        return fields

    return {op: closure(op) for op in reads}


def js_message_objects(source: str) -> list[list[str]]:
    """The keys of each object the worker posts: ``JSON.stringify({...})``."""
    return [object_keys(source, m.end() - 1) for m in re.finditer(r"JSON\.stringify\(\s*\{", source)]


def error_kinds(source: str) -> set[str]:
    """Error kinds written as literals: ``kind: "x"`` (JavaScript) or ``"kind": "x"`` / ``"kind": NAME`` (Python)."""
    return set(re.findall(r"[\"']?\bkind[\"']?\s*:\s*\"(\w+)\"", source))


def js_events(source: str) -> tuple[set[str], set[str]]:
    """(custom events the runtime fires, custom events it listens to)."""
    fired = set(re.findall(r"new CustomEvent\(\s*\"(calc:[\w-]+)\"", source))
    heard = set(re.findall(r"(?:addEventListener|listen)\((?:[^,()]+,\s*)?\"(calc:[\w-]+)\"", source))
    return fired, heard


# What writes a value of each attribute that has declared values, as literals in the JavaScript.
JS_VALUE_PATTERNS = {
    "data-state": [r"\bdataset\.state\s*={1,3}\s*\"(\w+)\"", r"\bsetWidgetState\([^,]+,\s*\"(\w+)\"",
                   r"\bsettle\([^,]+,\s*\"(\w+)\"", r"\bBADGE_LABELS\s*=\s*\{([^}]*)\}"],
    "data-kind": [r"\bdataset\.kind\s*={1,3}\s*\"(\w+)\"", r"data-kind=\"(\w+)\""],
    "data-charts": [r"\bdataset\.charts\s*={1,3}\s*\"(\w+)\""],
    "data-sim-state": [r"\bsetButtons\(\s*\"(\w+)\"", r"\bsimState\s*={1,3}\s*\"(\w+)\""],
    "data-correct": [],  # String(answer.result.correct): a boolean's text, "true" or "false"
    "data-pyodide": [r"\bsetState\(\s*\"(\w+)\"", r"message\.state\s*===\s*\"(\w+)\""],
}


def js_values(attribute: str, source: str) -> set[str]:
    found = set()
    for pattern in JS_VALUE_PATTERNS[attribute]:
        for match in re.findall(pattern, source):
            found |= set(re.findall(r"(?:^|[{,])\s*(\w+)\s*:", match)) if ":" in match else {match}
    return found


# --- the contract against the sources ---------------------------------------------------------------

def test_every_attribute_the_runtime_uses_is_declared():
    used = {name: js_attributes(text) for name, text in JS.items()}
    undeclared = {name: sorted(names - set(ATTRIBUTES)) for name, names in used.items() if names - set(ATTRIBUTES)}
    assert undeclared == {}


def test_every_attribute_the_build_writes_is_declared_as_written_by_the_build():
    used = python_attributes(PY_ALL)
    built = {name for name, spec in ATTRIBUTES.items() if "build" in spec["written_by"]}
    assert sorted(used - built) == []
    assert sorted(built - used) == [], "declared as written by the build, but the build never writes it"


def test_every_attribute_declared_for_the_runtime_is_used_by_it():
    in_js = js_attributes(JS_ALL)
    runtime_side = {name for name, spec in ATTRIBUTES.items()
                    if "runtime" in spec["written_by"] or "runtime" in spec["read_by"]}
    assert sorted(runtime_side - in_js) == []
    # And what only Material or the page's head reads is at least written by some side.
    assert all(name in in_js or name in python_attributes(PY_ALL) for name in ATTRIBUTES)


def test_declared_values_are_the_values_written():
    for attribute, patterns in JS_VALUE_PATTERNS.items():
        declared = set(ATTRIBUTES[attribute]["values"])
        found = js_values(attribute, JS_ALL)
        assert found <= declared, (attribute, sorted(found - declared))
        # Each declared value is written somewhere: a literal in the runtime or in the build's HTML.
        missing = {value for value in declared - found if f'"{value}"' not in JS_ALL and f'"{value}"' not in PY_ALL}
        assert missing == set(), (attribute, sorted(missing))
    assert set(ATTRIBUTES["data-pyodide"]["values"]) == set(CONTRACT["worker_messages"]["status"]["states"])


def test_the_worker_answers_exactly_the_declared_requests_with_their_fields():
    assert list(runtime.OPERATIONS) == list(REQUESTS)
    read = python_request_fields()
    assert {op: sorted(fields) for op, fields in read.items()} == {
        op: sorted(spec["fields"]) for op, spec in REQUESTS.items()}


def test_the_page_sends_only_declared_requests_and_fields():
    sent = js_requests(JS_ALL)
    assert sorted(set(sent) - set(REQUESTS)) == []
    for op, fields in sent.items():
        assert sorted(fields - set(REQUESTS[op]["fields"])) == [], op
    sent_by_page = {op for op, spec in REQUESTS.items() if spec["sent_by"] == "page"}
    assert sorted(sent_by_page - set(sent)) == [], "declared as sent by the page, but the page never sends it"


def test_the_worker_posts_only_declared_messages_and_fields():
    status = CONTRACT["worker_messages"]["status"]["fields"]
    answer = CONTRACT["answer_fields"]
    posted = js_message_objects(JS["worker.mjs"])
    assert posted, "the scanner found no message in worker.mjs"
    status_keys = set()
    for keys in posted:
        declared = status if "type" in keys else answer
        assert sorted(set(keys) - set(declared)) == [], keys
        if "type" in keys:
            status_keys |= set(keys)
    assert sorted(set(status) - status_keys) == []
    assert re.findall(r"\btype:\s*\"(\w+)\"", JS["worker.mjs"]) and set(
        re.findall(r"\btype:\s*\"(\w+)\"", JS["worker.mjs"])) <= set(CONTRACT["worker_messages"])
    # What the page reads of a worker message is declared.
    read = set(re.findall(r"\bmessage\.(\w+)", JS["calc-runtime.js"]))
    assert sorted(read - set(status) - set(answer)) == []


def test_error_kinds_are_declared_and_each_is_made_by_some_side():
    made = error_kinds(JS_ALL) | {runtime.INPUT, runtime.INTERNAL}
    assert made == set(ERROR_KINDS)
    fields = set(re.findall(r"error:\s*\{([^}]*)\}", JS_ALL))
    assert fields, "the scanner found no error object in the runtime"
    for text in fields:
        assert set(re.findall(r"(\w+)\s*:", text)) == set(CONTRACT["error_fields"]), text


def test_custom_events_are_declared_and_fired():
    fired, heard = js_events(JS_ALL)
    assert fired == set(EVENTS)
    assert heard <= set(EVENTS)
    detail = re.search(r"new CustomEvent\(\"calc:answered\",\s*\{\s*detail:\s*\{", JS_ALL)
    assert sorted(object_keys(JS_ALL, detail.end() - 1)) == sorted(EVENTS["calc:answered"]["detail"])


# --- the scanners find what they look for -------------------------------------------------------------

def test_the_scanners_catch_an_undeclared_name():
    assert js_attributes('el.dataset.simState = "x"; q("[data-chart-table=k]")') == {"data-sim-state", "data-chart-table"}
    assert python_attributes('_sub(p, "p", data_error="", **{"data_search_exclude": "true"}); "data-kind"') == {
        "data-error", "data-search-exclude", "data-kind"}
    assert js_requests('runtime.request("call", { fn: f, args: { seed: s } }, 5)') == {"call": {"fn", "args"}}
    assert js_message_objects('postMessage(JSON.stringify({ type: "status", state, detail }))') == [
        ["type", "state", "detail"]]
    assert error_kinds('{ kind: "budget", field: null }') == {"budget"}
    assert js_events('new CustomEvent("calc:drawn"); lifetime.listen(w, "calc:view", f)') == ({"calc:drawn"}, {"calc:view"})
    assert js_values("data-sim-state", 'setButtons("playing"); if (w.dataset.simState === "paused")') == {
        "playing", "paused"}
    undeclared = js_attributes('el.dataset.spinnerState = "on"') - set(ATTRIBUTES)
    assert undeclared == {"data-spinner-state"}


@pytest.mark.parametrize("op", sorted(REQUESTS))
def test_each_declared_request_is_answered_in_cpython(op):
    # Through the one entry point the worker uses: an unknown op would be refused with field "op".
    import json

    answer = json.loads(runtime.handle(json.dumps({"id": 1, "op": op})))
    assert answer["id"] == 1
    assert answer["ok"] or answer["error"]["field"] != "op", answer
