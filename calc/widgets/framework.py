"""The widget contract: a Python function whose annotated parameters are its controls.

A widget is an ordinary function registered with :func:`widget`. Each parameter is
annotated with ``Annotated[type, Control]`` and has a default; the build renders a
control for each one and calls the function with the defaults, the browser calls
it again (in Pyodide) whenever a control changes. The return value is a *view*:
labelled outputs with units, Plotly figure dicts and tables, made with :func:`view`.

>>> from typing import Annotated
>>> @widget
... def doubled(n: Annotated[int, IntRange(1, 10, label="Number")] = 3):
...     "Twice a number."
...     return view(outputs=[output("twice", "Twice", 2 * n, "")])
>>> call("framework.doubled", {"n": "4"})["outputs"]["twice"]["text"]
'8'
>>> call("framework.doubled", {"n": "40"})
Traceback (most recent call last):
...
calc.errors.CalcError: Number (n) must be a whole number between 1 and 10; got '40'
>>> [c["name"] for c in describe("framework.doubled")["controls"]]
['n']
>>> del REGISTRY["framework.doubled"]
"""

from __future__ import annotations

import inspect
import json
import math
import typing
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field

from calc.errors import CalcError
from calc.units import format_number, round_sig

__all__ = [
    "Choice", "IntRange", "FloatRange", "Text", "Toggle",
    "widget", "stream", "drill", "view", "collect_stream", "output", "table", "call", "describe", "REGISTRY", "Widget",
    "MAX_TEXT_CHARS", "fact", "fact_from", "fact_group", "fact_names", "fact_values", "facts_of", "FACTS",
]

MAX_TEXT_CHARS = 200_000  # a pasted config.json is a few KB; anything far larger is a mistake


# --- controls -------------------------------------------------------------------------------

@dataclass(frozen=True)
class Choice:
    """A ``<select>``: ``options`` are (value, label) pairs, or plain values used as both."""

    options: Sequence = ()
    label: str = ""
    help: str = ""

    def pairs(self) -> list[tuple[str, str]]:
        return [(o, o) if isinstance(o, str) else (str(o[0]), str(o[1])) for o in self.options]

    def coerce(self, name: str, raw):
        allowed = [value for value, _ in self.pairs()]
        if raw not in allowed:
            raise CalcError(f"{_title(self, name)} must be one of {', '.join(allowed)}; got {raw!r}", name)
        return raw

    def spec(self) -> dict:
        return {"kind": "choice", "options": [list(p) for p in self.pairs()]}


@dataclass(frozen=True)
class IntRange:
    """An ``<input type=number>`` holding a whole number from ``low`` to ``high``."""

    low: int
    high: int
    step: int = 1
    unit: str = ""
    label: str = ""
    help: str = ""

    def coerce(self, name: str, raw):
        value = _parse_number(self, name, raw)
        if value != int(value) or not self.low <= value <= self.high:
            raise CalcError(
                f"{_title(self, name)} must be a whole number between {self.low:,} and {self.high:,}; got {_show(raw)}",
                name,
            )
        return int(value)

    def spec(self) -> dict:
        return {"kind": "int", "min": self.low, "max": self.high, "step": self.step, "unit": self.unit}


@dataclass(frozen=True)
class FloatRange:
    """An ``<input type=number>`` holding a number from ``low`` to ``high``."""

    low: float
    high: float
    step: float = 0.01
    unit: str = ""
    label: str = ""
    help: str = ""

    def coerce(self, name: str, raw):
        value = float(_parse_number(self, name, raw))
        if not self.low <= value <= self.high:
            raise CalcError(
                f"{_title(self, name)} must be between {self.low:g} and {self.high:g}; got {_show(raw)}", name
            )
        return value

    def spec(self) -> dict:
        return {"kind": "float", "min": self.low, "max": self.high, "step": self.step, "unit": self.unit}


@dataclass(frozen=True)
class Text:
    """A ``<textarea>`` for pasted text such as a model's ``config.json``; empty means "not given"."""

    label: str = ""
    help: str = ""
    rows: int = 6
    max_chars: int = MAX_TEXT_CHARS

    def coerce(self, name: str, raw):
        if not isinstance(raw, str):
            raise CalcError(f"{_title(self, name)} must be text; got {type(raw).__name__}", name)
        if len(raw) > self.max_chars:
            raise CalcError(
                f"{_title(self, name)} must be at most {self.max_chars:,} characters; got {len(raw):,}", name
            )
        return raw

    def spec(self) -> dict:
        return {"kind": "text", "rows": self.rows, "maxlength": self.max_chars}


@dataclass(frozen=True)
class Toggle:
    """A checkbox."""

    label: str = ""
    help: str = ""

    def coerce(self, name: str, raw):
        if isinstance(raw, bool):
            return raw
        if raw in ("true", "on", "1", 1):
            return True
        if raw in ("false", "off", "0", "", 0):
            return False
        raise CalcError(f"{_title(self, name)} must be on or off; got {_show(raw)}", name)

    def spec(self) -> dict:
        return {"kind": "toggle"}


Control = Choice | IntRange | FloatRange | Text | Toggle


def _title(control, name: str) -> str:
    return f"{control.label} ({name})" if control.label else name


def _show(raw) -> str:
    text = repr(raw)
    return text if len(text) <= 40 else text[:37] + "..."


def _parse_number(control, name: str, raw):
    if isinstance(raw, bool):
        raise CalcError(f"{_title(control, name)} must be a number; got {raw!r}", name)
    if isinstance(raw, str):
        text = raw.strip().replace(",", "").replace("_", "")
        try:
            raw_number = float(text)
        except ValueError:
            raise CalcError(f"{_title(control, name)} must be a number; got {_show(raw)}", name) from None
    elif isinstance(raw, (int, float)):
        raw_number = raw
    else:
        raise CalcError(f"{_title(control, name)} must be a number; got {type(raw).__name__}", name)
    if not math.isfinite(raw_number):
        raise CalcError(f"{_title(control, name)} must be a finite number; got {_show(raw)}", name)
    return raw_number


# --- registry -------------------------------------------------------------------------------

@dataclass
class Widget:
    """A registered widget, drill or stream: the function and its controls."""

    name: str
    function: Callable
    kind: str  # "widget" | "stream" | "drill"
    controls: dict[str, Control]
    defaults: dict[str, object]
    budget_s: float
    doc: str = ""
    meta: dict = field(default_factory=dict)


class _Registry(dict):
    """Registered functions by name; looking up a name imports its page module first (``REGISTRY["mod.fn"]``)."""

    def __missing__(self, name):
        if isinstance(name, str):
            _load_module_of(name)
            if dict.__contains__(self, name):
                return dict.__getitem__(self, name)
        raise KeyError(name)


REGISTRY: dict[str, Widget] = _Registry()


def _public_name(function: Callable) -> str:
    module = function.__module__
    prefix = "calc.widgets."
    tail = module[len(prefix):] if module.startswith(prefix) else module.rsplit(".", 1)[-1]
    return f"{tail}.{function.__name__}"


def _register(function: Callable, kind: str, budget_s: float, meta: dict | None = None) -> Callable:
    hints = typing.get_type_hints(function, include_extras=True)
    controls: dict[str, Control] = {}
    defaults: dict[str, object] = {}
    for name, parameter in inspect.signature(function).parameters.items():
        hint = hints.get(name)
        metadata = getattr(hint, "__metadata__", ())
        control = next((m for m in metadata if isinstance(m, (Choice, IntRange, FloatRange, Text, Toggle))), None)
        if control is None:
            raise TypeError(f"widget {function.__name__}: parameter {name} needs Annotated[type, Control]")
        if parameter.default is inspect.Parameter.empty:
            raise TypeError(f"widget {function.__name__}: parameter {name} needs a default")
        controls[name] = control
        defaults[name] = parameter.default
    name = _public_name(function)
    REGISTRY[name] = Widget(name, function, kind, controls, defaults, budget_s, inspect.getdoc(function) or "",
                            dict(meta or {}))
    return function


def widget(function: Callable | None = None, *, budget_s: float = 5.0, warm: bool = True):
    """Register a function as a widget (used bare or with a time budget in seconds).

    ``warm=False``: the page never reruns it on the inputs the build rendered (the runtime's warm-up run after
    a page load), only on a changed input; for a widget whose run would hold the worker for seconds.
    """
    meta = {} if warm else {"warm": False}
    if function is None:
        return lambda f: _register(f, "widget", budget_s, meta)
    return _register(function, "widget", budget_s, meta)


def stream(function: Callable | None = None, *, budget_s: float = 2.0):
    """Register a generator function whose yielded views are frames of a live run.

    ``budget_s`` bounds one slice of work (one ``next``), not the whole run.
    """
    if function is None:
        return lambda f: _register(f, "stream", budget_s)
    return _register(function, "stream", budget_s)


def drill(function: Callable | None = None, *, budget_s: float = 5.0):
    """Register a drill: a function of a ``seed`` control that returns a question view.

    The view must hold ``question`` (text), ``answer`` (number), ``unit`` (``bytes``
    or a plain unit), ``tolerance`` (relative) and ``explanation``; see :mod:`calc.answers`.
    """
    if function is None:
        return lambda f: _register(f, "drill", budget_s)
    return _register(function, "drill", budget_s)


def get(name: str) -> Widget:
    """The registered widget called ``name``, or a CalcError naming the allowed ones.

    Only the page module that ``name`` names is imported (not every module of the
    package): the worker boots faster, and the allow-list is the same, since a
    function is callable only once a ``calc.widgets`` page module has registered it.
    """
    if isinstance(name, str) and name not in REGISTRY:
        _load_module_of(name)
    if not isinstance(name, str) or name not in REGISTRY:
        raise CalcError(f"widget must be one of the registered widgets; got {_show(name)}", "widget")
    return REGISTRY[name]


def _load_module_of(name: str) -> None:
    from calc.widgets import load_module

    load_module(name.rsplit(".", 1)[0])


def bind(name: str, args: dict | None) -> tuple[Widget, dict]:
    """Coerce raw control values (strings from a form, or typed values) into arguments."""
    entry = get(name)
    args = {} if args is None else args
    if not isinstance(args, dict):
        raise CalcError(f"arguments must be an object of control values; got {type(args).__name__}", "args")
    unknown = sorted(set(args) - set(entry.controls))
    if unknown:
        raise CalcError(
            f"{unknown[0]} is not a control of {name}; allowed: {', '.join(entry.controls)}", str(unknown[0])
        )
    bound = dict(entry.defaults)
    for key, raw in args.items():
        bound[key] = entry.controls[key].coerce(key, raw)
    return entry, bound


def call(name: str, args: dict | None = None) -> dict:
    """Run widget ``name`` with raw control values and return its checked view."""
    entry, bound = bind(name, args)
    if entry.kind == "stream":
        raise CalcError(f"{name} is a live stream; start it with stream_start", "widget")
    return check_view(entry.function(**bound))


def describe(name: str) -> dict:
    """The controls of widget ``name`` as JSON-able data (what the build renders)."""
    entry = get(name)
    controls = []
    for key, control in entry.controls.items():
        spec = control.spec()
        spec.update(name=key, label=control.label or key, help=control.help, default=entry.defaults[key])
        controls.append(spec)
    return {"name": name, "kind": entry.kind, "controls": controls, "doc": entry.doc, "budget_s": entry.budget_s,
            "warm": entry.meta.get("warm", True)}


# --- facts ----------------------------------------------------------------------------------
#
# A fact is a number a page's prose quotes (``{{ name }}``, or ``{{ page:name }}`` from another page): a function of
# no arguments registered with :func:`fact`, named after itself. The build asks for the facts a page names and
# computes only those (:func:`fact_values`); what several facts need that is costly (a simulation, a capacity) is a
# cached private function of the module (``functools.cache``), so it runs once per process whichever fact asks.

FACTS: dict[str, dict[str, Callable[[], object]]] = {}  # page module (``kv_cache_arithmetic``) -> name -> function


def _module_tail(module: str) -> str:
    prefix = "calc.widgets."
    return module[len(prefix):] if module.startswith(prefix) else module.rsplit(".", 1)[-1]


def fact(name_or_function: str | Callable | None = None):
    """Register a function of no arguments as a fact of its page module, under its own name or the one given.

    Used bare (``@fact``) or with a name (``@fact("tp")``, for a fact whose name is taken in the module). The
    function is returned unchanged, so a test or a doctest calls it alone.

    >>> @fact
    ... def answer_tokens():
    ...     "The answer of the running example, in tokens."
    ...     return f"{256:,}"
    >>> @fact("tp")
    ... def _tensor_parallel():
    ...     return 4
    >>> fact_names("framework"), fact_values("framework", ["tp"])
    (['answer_tokens', 'tp'], {'tp': '4'})
    >>> del FACTS["framework"]
    """
    def register(function: Callable, name: str) -> Callable:
        if inspect.signature(function).parameters:
            raise TypeError(f"fact {name}: a fact takes no arguments")
        facts = FACTS.setdefault(_module_tail(function.__module__), {})
        if name in facts:
            raise TypeError(f"fact {name} is registered twice in {function.__module__}")
        facts[name] = function
        return function

    if callable(name_or_function):
        return register(name_or_function, name_or_function.__name__)
    return lambda function: register(function, name_or_function or function.__name__)


def fact_from(name: str, text: Callable[[], object], *, module: str | None = None) -> Callable[[], object]:
    """Register fact ``name`` of ``text``'s page module (or ``module``), its value ``text()``: for facts made in a
    loop or read from a table (``text`` may bind the loop's value as a default argument; the fact takes none).

    >>> for _gpus in (1, 2):
    ...     _ = fact_from(f"gpus_{_gpus}", lambda n=_gpus: f"{n} GPU" + "s" * (n > 1))
    >>> fact_values("framework", ["gpus_2"])
    {'gpus_2': '2 GPUs'}
    >>> del FACTS["framework"]
    """
    def value() -> object:
        return text()

    value.__name__ = value.__qualname__ = name
    value.__module__ = module or text.__module__
    return fact(value)


def fact_group(compute: Callable[[], dict], names: Iterable[str]) -> Callable[[], dict]:
    """Register each of ``names`` as a fact of ``compute``'s page module, its value ``compute()[name]``.

    For facts that come out of one computation together (a table and the counts under it): ``compute`` runs
    once per process (it is cached) whichever of them a page names, and only when one is named. The names are
    given, not read from a run, so listing a page's facts computes nothing; the first run checks that
    ``compute`` returns exactly those keys, and names the difference if not. Returns the cached ``compute``.

    >>> def _two():
    ...     return {"a": 1, "b": 2}
    >>> _ = fact_group(_two, ["a", "b"])
    >>> fact_values("framework", ["b"])
    {'b': '2'}
    >>> _ = fact_group(lambda: {"c": 3, "d": 4}, ["c"])
    >>> fact_values("framework", ["c"])
    Traceback (most recent call last):
    ...
    TypeError: fact group <lambda> of framework returns keys it does not name: ['d']
    >>> del FACTS["framework"]
    """
    import functools

    expected = list(names)
    tail = _module_tail(compute.__module__)

    @functools.cache
    def computed() -> dict:
        values = compute()
        extra, missing = sorted(set(values) - set(expected)), sorted(set(expected) - set(values))
        if extra or missing:
            said = ([f"returns keys it does not name: {extra}"] if extra else []) + (
                [f"does not return the keys it names: {missing}"] if missing else [])
            raise TypeError(f"fact group {compute.__name__} of {tail} " + "; ".join(said))
        return values

    for name in expected:
        fact_from(name, lambda name=name: computed()[name], module=compute.__module__)
    return computed


def _facts_module(module: str):
    """Import page module ``module`` (its facts register as it loads); None when there is no such page module."""
    import importlib

    try:
        return importlib.import_module(f"calc.widgets.{module}")
    except ModuleNotFoundError as error:
        if error.name in (f"calc.widgets.{module}", "calc.widgets"):
            return None
        raise


def fact_names(module: str) -> list[str]:
    """The names of page module ``module``'s facts (importing it registers them; nothing is computed).

    >>> "kv_tokens" in fact_names("a_70b_assistant"), fact_names("no_such_page_module")
    (True, [])
    """
    _facts_module(module)
    return list(FACTS.get(module, {}))


def fact_values(module: str, names: Iterable[str] | None = None) -> dict[str, str]:
    """The facts ``names`` of page module ``module`` as text (every fact when ``names`` is None); a name the
    module lacks is left out, for the caller to report with :func:`fact_names`. Only the named facts are computed.

    >>> fact_values("a_70b_assistant", ["kv_tokens", "no_such_fact"])
    {'kv_tokens': '399,169'}
    >>> fact_values("no_such_page_module", ["x"])
    {}
    """
    _facts_module(module)
    registered = FACTS.get(module, {})
    wanted = list(registered) if names is None else [n for n in names if n in registered]
    return {name: str(registered[name]()) for name in wanted}


def facts_of(module: str) -> Callable[[], dict[str, object]]:
    """A page module's ``facts()``: every registered fact by name, computed (``facts = facts_of(__name__)`` at
    the end of a page module keeps the one-call form for notebooks, tests and ``scripts/dump_invariants.py``)."""
    tail = _module_tail(module)

    def facts() -> dict[str, object]:
        return {name: function() for name, function in FACTS.get(tail, {}).items()}

    facts.__doc__ = f"Every fact of calc.widgets.{tail}, computed (each is a function of its own: FACTS[{tail!r}])."
    return facts


# --- views ----------------------------------------------------------------------------------

def output(key: str, label: str, value, unit: str = "", text: str | None = None, note: str = "") -> dict:
    """One labelled output. ``text`` is what the page shows; by default the value formatted with its unit.

    >>> output("kv", "KV per token", 131072, "B")["text"]
    '131,072 B'
    """
    if isinstance(value, float) and not math.isfinite(value):
        raise ValueError(f"view holds a non-finite number in output {key}")
    if text is None:
        shown = format_number(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else str(value)
        text = f"{shown} {unit}".strip()
    return {"key": key, "label": label, "value": value, "unit": unit, "text": text, "note": note}


def table(columns: Sequence[str], rows: Iterable[Sequence[object]], caption: str = "") -> dict:
    """A small table of text cells.

    >>> table(["a", "b"], [[1, "x"]])["rows"]
    [['1', 'x']]
    """
    return {"columns": list(columns), "rows": [[str(c) for c in row] for row in rows], "caption": caption}


def view(outputs: Iterable[dict] = (), figures: dict | None = None, tables: dict | None = None, **extra) -> dict:
    """Assemble a view: outputs keyed by their ``key``, figures and tables by name, plus extra fields."""
    result = {"outputs": {o["key"]: o for o in outputs}, "figures": figures or {}, "tables": tables or {}}
    result.update(extra)
    return result


def collect_stream(frames) -> dict:
    """Fold the frames of a live run into one view: what the page shows once the run has finished.

    Outputs are the last frame's; figures are the first frame's with every trace
    extended by the points its ``meta`` names (``series`` of each frame, x from
    the figure's ``x_series``, default ``t_s``); the block map is the fullest one.

    >>> frames = [view(outputs=[output("n", "N", 1)], figures={"q": {"data": [{"meta": "queue", "x": [], "y": []}], "layout": {}}},
    ...                series={"t_s": [1], "queue": [3]}),
    ...           view(outputs=[output("n", "N", 2)], series={"t_s": [2], "queue": [5]})]
    >>> merged = collect_stream(frames)
    >>> merged["outputs"]["n"]["value"], merged["figures"]["q"]["data"][0]["y"]
    (2, [3, 5])
    """
    merged: dict = {"outputs": {}, "figures": {}, "tables": {}}
    best_map, best_fill = None, -1
    for frame in frames:
        merged["outputs"].update(frame.get("outputs", {}))
        merged["tables"].update(frame.get("tables", {}))
        for key, figure in frame.get("figures", {}).items():
            merged["figures"][key] = json.loads(json.dumps(figure))
        series = frame.get("series", {})
        for figure in merged["figures"].values():
            xs = series.get(figure.get("x_series", "t_s"), [])
            for trace in figure["data"]:
                if trace.get("meta") in series:
                    trace["x"] = list(trace.get("x", [])) + list(xs)
                    trace["y"] = list(trace.get("y", [])) + list(series[trace["meta"]])
        blockmap = frame.get("blockmap")
        if blockmap:
            fill = blockmap.get("used_blocks", 0) + blockmap.get("reserved_unused_blocks", 0)
            if fill > best_fill:
                best_map, best_fill = blockmap, fill
        for key in ("t_s", "done"):
            if key in frame:
                merged[key] = frame[key]
    if best_map is not None:
        merged["blockmap"] = best_map
    return merged


def _clean(value, path: str):
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ValueError(f"view holds a non-finite number at {path}")
        return round_sig(value, 9)
    if isinstance(value, dict):
        return {str(k): _clean(v, f"{path}.{k}") for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_clean(v, f"{path}[{i}]") for i, v in enumerate(value)]
    if value is None or isinstance(value, (str, int, bool)):
        return value
    raise ValueError(f"view holds a {type(value).__name__} at {path}, which is not JSON")


def check_view(result: dict) -> dict:
    """Round floats and refuse NaN, inf or anything that is not JSON (a bug in the widget, not bad input)."""
    if not isinstance(result, dict):
        raise ValueError("a widget must return a view (dict)")
    cleaned = _clean(result, "view")
    json.dumps(cleaned)
    return cleaned
