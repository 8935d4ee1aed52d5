"""Widget, drill and live-simulation blocks rendered to the HTML of the widget contract.

Every number and chart is computed here, at build, by calling the widget function
in CPython with its defaults (plus the page's overrides); the browser later calls
the same function in Pyodide. Elements are built with ElementTree, so every string
from ``calc`` lands as text, never as markup.

Search indexes the lesson, not the machinery: the parts of a widget that are not
prose carry ``data-search-exclude`` (see ``NOT_SEARCHED``), which Material's search
plugin honours by skipping the element's subtree and then strips from the page.
"""

from __future__ import annotations

import json
import xml.etree.ElementTree as etree

from markdown.util import AtomicString

from calc.units import format_number
from calc.widgets import framework
from calc.widgets.contract import check_built_attributes

UID_PLACEHOLDER = "w__calc_uid__"  # a render's id in the build cache: the page gives it its next w<n> (blocks.py)

# Material's search parser skips the subtree of an element with this attribute, then removes
# every ``data-search-*="..."`` (non-empty value) from the page, so the served HTML never carries it.
# Its parser tracks skipped elements by tag name: a marked element must not contain an element of
# its own tag, or the inner one's end tag would end the skip early (tests/site/test_search_index.py).
NOT_SEARCHED = {"data_search_exclude": "true"}
"""Not indexed: the controls (option lists, buttons), chart data tables, status notes, empty error
and verdict lines, the block map's legend. Indexed: a block's intro, output labels and values,
chart captions, widget tables (the lesson's comparisons) and a drill's question and explanation."""

STATIC_NOTE = (
    "Computed when the site was built. Serve the site (make serve) and the controls recompute live in your browser."
)


def _root(attributes: dict) -> etree.Element:
    """A widget's root ``<div>``, its data-* attributes checked against the contract (calc/widgets/contract.json)."""
    check_built_attributes(attributes)
    return etree.Element("div", attributes)


def _sub(parent: etree.Element, tag: str, text: str | None = None, **attrs) -> etree.Element:
    attributes = {k.rstrip("_").replace("_", "-"): str(v) for k, v in attrs.items()}
    check_built_attributes(attributes)  # only what the contract says the build writes
    element = etree.SubElement(parent, tag, attributes)
    if text is not None:
        element.text = AtomicString(text)
    return element


def _figure_json(figure: dict) -> str:
    # Carried in a data attribute, not a <script type="application/json">: Material's instant navigation
    # re-inserts a restored page's script elements without their type, and would run the JSON as code.
    return json.dumps(figure, separators=(",", ":"), sort_keys=True)


def _control(form: etree.Element, uid: str, spec: dict, value, hidden: bool) -> None:
    name = spec["name"]
    control_id = f"{uid}-{name}"
    if hidden:  # the value the browser sends back must read as the control reads it ("true", not "True")
        _sub(form, "input", type="hidden", name=name, value=str(value).lower() if isinstance(value, bool) else value)
        return
    row = _sub(form, "div", class_=f"calc-control calc-control--{spec['kind']}")
    label = _sub(row, "label", spec["label"], for_=control_id)
    if spec.get("unit"):
        _sub(label, "span", f" ({spec['unit']})", class_="calc-unit")
    describedby = {}
    if spec.get("help"):
        _sub(row, "small", spec["help"], id=f"{control_id}-help", class_="calc-help")
        describedby = {"aria-describedby": f"{control_id}-help"}
    kind = spec["kind"]
    if kind == "choice":
        select = _sub(row, "select", id=control_id, name=name, **describedby)
        for option_value, option_label in spec["options"]:
            option = _sub(select, "option", option_label, value=option_value)
            if option_value == value:
                option.set("selected", "selected")
    elif kind in ("int", "float"):
        _sub(row, "input", id=control_id, name=name, type="number", inputmode="decimal" if kind == "float" else "numeric",
             min=spec["min"], max=spec["max"], step=spec["step"], value=value, **describedby)
    elif kind == "text":
        _sub(row, "textarea", value or "", id=control_id, name=name, rows=spec["rows"], maxlength=spec["maxlength"],
             spellcheck="false", **describedby)
    elif kind == "toggle":
        box = _sub(row, "input", id=control_id, name=name, type="checkbox", value="true", **describedby)
        if value:
            box.set("checked", "checked")
        row.remove(label)
        row.append(label)
    else:  # pragma: no cover - the framework has no other kinds
        raise ValueError(f"unknown control kind {kind}")


MAX_CHART_ROWS = 200


def chart_rows(figure: dict) -> list[tuple[str, str, str]]:
    """The numbers of a chart as (series, x, y) rows, the same rows the browser rebuilds after a recompute.

    >>> chart_rows({"data": [{"name": "GQA", "x": [1024, 2048], "y": [0.134, 0.268]}]})
    [('GQA', '1,024', '0.134'), ('GQA', '2,048', '0.268')]
    """
    rows = []
    for trace in figure.get("data", []):
        xs, ys = trace.get("x") or [], trace.get("y") or []
        if trace.get("orientation") == "h":
            xs, ys = ys, xs
        for x, y in zip(xs, ys):
            rows.append((str(trace.get("name", "")), _cell(x), _cell(y)))
    return rows[:MAX_CHART_ROWS]


def _cell(value) -> str:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    return format_number(value, 4)


def _chart_table(parent: etree.Element, key: str, figure: dict) -> None:
    layout = figure.get("layout", {})

    def axis_title(axis: str, default: str) -> str:
        title = layout.get(axis, {}).get("title", default)
        return title.get("text", default) if isinstance(title, dict) else str(title)

    table = _sub(parent, "table", data_chart_table=key)
    head = _sub(_sub(table, "thead"), "tr")
    for column in ("series", axis_title("xaxis", "x"), axis_title("yaxis", "y")):
        _sub(head, "th", column, scope="col")
    body = _sub(table, "tbody")
    for row in chart_rows(figure):
        tr = _sub(body, "tr")
        for cell in row:
            _sub(tr, "td", cell)


def _tiles(parent: etree.Element, items, class_: str = "calc-outputs") -> None:
    dl = _sub(parent, "dl", class_=class_)
    for key, item in items:
        pair = _sub(dl, "div", class_="calc-output")
        _sub(pair, "dt", item["label"])
        long_text = len(item["text"]) > 200  # shown in a scrolling box: keyboard users must reach it
        _sub(pair, "dd", item["text"], data_output=key, **({"tabindex": "0"} if long_text else {}))


def _key_outputs(name: str, result: dict, key) -> list:
    unknown = [k for k in key if k not in result["outputs"]]
    if unknown:
        raise ValueError(f"{name}: key names no output {unknown}; its outputs are {sorted(result['outputs'])}")
    return list(key)


def _all_numbers(root: etree.Element, result: dict, key) -> None:
    """The outputs not in ``key``, folded: the picture and its key numbers come first (picture-first layout)."""
    rest = [(k, item) for k, item in result["outputs"].items() if k not in key]
    if rest:
        fold = _sub(root, "details", class_="calc-all-numbers")
        _sub(fold, "summary", f"All numbers ({len(result['outputs'])})")
        _tiles(fold, rest)


def _outputs(root: etree.Element, result: dict) -> None:
    if result["outputs"]:
        _tiles(root, result["outputs"].items())
    _charts(root, result)
    _tables(root, result)


def _charts(root: etree.Element, result: dict) -> None:
    for key, figure in result["figures"].items():
        holder = _sub(root, "figure", class_="calc-chart")
        title = figure.get("layout", {}).get("title", {})
        title_text = title.get("text", "") if isinstance(title, dict) else str(title)
        # No role on the chart itself: Plotly puts focusable buttons in it. The figure's caption and the
        # table of its numbers are its text alternative.
        _sub(holder, "div", data_chart=key, data_figure=_figure_json(figure))
        caption = _sub(holder, "figcaption")
        _sub(caption, "span", figure.get("summary") or title_text, data_chart_summary=key)
        details = _sub(caption, "details", class_="calc-chart-data", **NOT_SEARCHED)
        _sub(details, "summary", "The numbers")
        _chart_table(details, key, figure)


def _tables(root: etree.Element, result: dict) -> None:
    for key, item in result["tables"].items():
        wrapper = _sub(root, "div", class_="calc-table")  # Material wraps the table itself in a scroller
        table = _sub(wrapper, "table", data_table=key)
        if item.get("caption"):
            _sub(table, "caption", item["caption"])
        head = _sub(_sub(table, "thead"), "tr")
        for column in item["columns"]:
            _sub(head, "th", column, scope="col")
        body = _sub(table, "tbody")
        for row in item["rows"]:
            tr = _sub(body, "tr")
            for cell in row:
                _sub(tr, "td", cell)


def form_title(spec: dict, max_chars: int = 90) -> str:
    """What a widget's form is about, for its landmark name: the first line of its docstring, without the
    full stop, cut at a word within ``max_chars`` (the function's name if it has no docstring).

    >>> form_title({"name": "kv.fit", "doc": "Requests that fit.\\n\\nMore."})
    'Requests that fit'
    >>> form_title({"name": "kv.fit", "doc": ""})
    'kv.fit'
    >>> form_title({"name": "x", "doc": "one two three four"}, max_chars=10)
    'one two…'
    """
    line = (spec.get("doc") or "").strip().split("\n", 1)[0].strip().rstrip(".")
    if not line:
        return spec["name"]
    if len(line) > max_chars:
        line = line[:max_chars].rsplit(" ", 1)[0].rstrip(",;:") + "…"
    return line


def render_widget(name: str, overrides: dict | None = None, hide: list[str] | tuple = (), uid: str = "w1",
                  key: list[str] | tuple = ()) -> etree.Element:
    """The contract's HTML for widget ``name`` with its outputs computed for the defaults and ``overrides``
    (``key``: picture first, those outputs beside it, the others folded under "All numbers")."""
    spec = framework.describe(name)
    if spec["kind"] != "widget":
        raise ValueError(f"{name} is a {spec['kind']}, not a widget")
    args = {**{c["name"]: c["default"] for c in spec["controls"]}, **(overrides or {})}
    result = framework.call(name, args)
    root = _root({
        "class": "calc-widget", "id": uid, "data-widget": name, "data-kind": "widget", "data-state": "static",
        "data-budget-ms": str(int(spec["budget_s"] * 1000)), **({} if spec["warm"] else {"data-warm": "off"}),
    })
    if key:  # picture first: the charts with the key outputs beside them, then the controls, then the rest
        key = _key_outputs(name, result, key)
        root.set("class", "calc-widget calc-picture-first")
        picture = _sub(root, "div", class_="calc-picture")
        _charts(_sub(picture, "div", class_="calc-picture__main"), result)
        _tiles(picture, [(k, result["outputs"][k]) for k in key], "calc-outputs calc-outputs--key")
    form = _sub(root, "form", class_="calc-controls", novalidate="novalidate",
                aria_label=f"Controls: {form_title(spec)}",
                **NOT_SEARCHED)
    for control in spec["controls"]:
        _control(form, uid, control, args[control["name"]], control["name"] in hide)
    _sub(root, "p", "", class_="calc-error", data_error="", role="alert", **NOT_SEARCHED)
    if key:
        _all_numbers(root, result, key)
        _tables(root, result)
    else:
        _outputs(root, result)
    _sub(root, "p", STATIC_NOTE, class_="calc-status", data_status="", **NOT_SEARCHED)
    return root


def render_drill(name: str, seed: int = 0, uid: str = "w1") -> etree.Element:
    """A drill: the question for ``seed`` (seed 0 is the page's worked case), an answer box, and the explanation."""
    spec = framework.describe(name)
    if spec["kind"] != "drill":
        raise ValueError(f"{name} is a {spec['kind']}, not a drill")
    entry, bound = framework.bind(name, {"seed": seed})
    question = framework.check_view(entry.function(**bound))
    root = _root({
        "class": "calc-widget calc-drill", "id": uid, "data-widget": name, "data-kind": "drill",
        "data-state": "static", "data-seed": str(seed), "data-budget-ms": str(int(spec["budget_s"] * 1000)),
    })
    _sub(root, "p", question["question"], class_="calc-drill__question", data_output="question")
    form = _sub(root, "form", class_="calc-controls calc-drill__form", novalidate="novalidate", **NOT_SEARCHED)
    row = _sub(form, "div", class_="calc-control calc-control--answer")
    _sub(row, "label", "Your answer", for_=f"{uid}-answer")
    _sub(row, "input", id=f"{uid}-answer", name="answer", type="text", autocomplete="off",
         placeholder=question.get("placeholder", "a number, with a unit if you like"))
    buttons = _sub(form, "div", class_="calc-drill__buttons")
    _sub(buttons, "button", "Check", type="submit", class_="md-button md-button--primary", data_action="check")
    _sub(buttons, "button", "New numbers", type="button", class_="md-button", data_action="new")
    _sub(root, "p", "", class_="calc-error", data_error="", role="alert", **NOT_SEARCHED)
    _sub(root, "p", "", class_="calc-drill__verdict", data_output="verdict", aria_live="polite", **NOT_SEARCHED)
    details = _sub(root, "details", class_="calc-drill__explanation", data_explanation="", hidden="hidden")
    _sub(details, "summary", "How to work it out")
    _sub(details, "p", question["explanation"], data_output="explanation")
    _sub(root, "p", STATIC_NOTE.replace("the controls recompute", "answers are checked"), class_="calc-status",
         data_status="", **NOT_SEARCHED)
    return root


SPEED_CHOICES = (("1", "1x"), ("2", "2x"), ("4", "4x"), ("8", "8x"))


def render_simulation(name: str, overrides: dict | None = None, hide: list[str] | tuple = (),
                      uid: str = "w1", key: list[str] | tuple = (), picture_of: str = "") -> etree.Element:
    """A live simulation: controls, play/pause/reset/speed, metrics, charts and the KV block map.

    The build runs the whole scenario once (CPython) and shows where it ends: the
    final metrics, the full time series and the fullest block map. In the browser
    the same generator runs in the worker, frame by frame.
    """
    spec = framework.describe(name)
    if spec["kind"] != "stream":
        raise ValueError(f"{name} is a {spec['kind']}, not a live simulation (stream)")
    args = {**{c["name"]: c["default"] for c in spec["controls"]}, **(overrides or {})}
    entry, bound = framework.bind(name, args)
    result = framework.collect_stream(framework.check_view(frame) for frame in entry.function(**bound))
    root = _root({
        "class": "calc-widget calc-sim", "id": uid, "data-widget": name, "data-kind": "simulation",
        "data-state": "static", "data-budget-ms": str(int(spec["budget_s"] * 1000)),
    })
    form = _sub(root, "form", class_="calc-controls", novalidate="novalidate",
                aria_label=f"Scenario: {form_title(spec)}",
                **NOT_SEARCHED)
    for control in spec["controls"]:
        _control(form, uid, control, args[control["name"]], control["name"] in hide)
    bar = _sub(form, "div", class_="calc-sim__bar")
    _sub(bar, "button", "Play", type="button", class_="md-button md-button--primary", data_action="play")
    _sub(bar, "button", "Pause", type="button", class_="md-button", data_action="pause", disabled="disabled")
    _sub(bar, "button", "Reset", type="button", class_="md-button", data_action="reset")
    speed_row = _sub(bar, "span", class_="calc-sim__speed")
    _sub(speed_row, "label", "Speed", for_=f"{uid}-speed")
    select = _sub(speed_row, "select", id=f"{uid}-speed", name="__speed")
    for value, label in SPEED_CHOICES:
        _sub(select, "option", label, value=value)
    _sub(bar, "span", f"t = {result.get('t_s', 0):.1f} s simulated", class_="calc-sim__progress", data_sim_progress="")
    _sub(root, "p", "", class_="calc-error", data_error="", role="alert", **NOT_SEARCHED)
    if key:  # picture first, under Play: the block map (else the charts) with the key outputs beside it
        key = _key_outputs(name, result, key)
        root.set("class", "calc-widget calc-sim calc-picture-first")
        picture = _sub(root, "div", class_="calc-picture")
        main = _sub(picture, "div", class_="calc-picture__main")
        map_first = "blockmap" in result and picture_of != "charts"
        if map_first:
            _blockmap(main, result)
        else:
            _charts(main, result)
        _tiles(picture, [(k, result["outputs"][k]) for k in key], "calc-outputs calc-outputs--key")
        if map_first:
            _charts(root, result)
        elif "blockmap" in result:
            _blockmap(root, result)
        _all_numbers(root, result, key)
        _tables(root, result)
    else:
        _outputs(root, result)
        if "blockmap" in result:
            _blockmap(root, result)
    _sub(root, "p", "The run above was computed when the site was built. Serve the site (make serve) and press "
                    "Play to watch it unfold in your browser.", class_="calc-status", data_status="",
         **NOT_SEARCHED)
    return root


def _blockmap(root: etree.Element, result: dict) -> None:
    """The KV block map of the run's fullest moment, with its legend."""
    holder = _sub(root, "figure", class_="calc-blockmap")
    _sub(holder, "canvas", data_blockmap=_figure_json(result["blockmap"]), role="img",
         aria_label=result["blockmap"].get("summary", "KV block map"), width="768", height="384")
    caption = _sub(holder, "figcaption")
    _sub(caption, "span", result["blockmap"].get("summary", ""), data_blockmap_summary="")
    legend = _sub(caption, "span", class_="calc-blockmap__legend")
    for css_class, text in (("used", "holds tokens"), ("reserved", "reserved, empty"), ("free", "free"),
                            ("cached", "cached prefix")):
        # Each key is marked, not the legend: a marked <span> must hold no <span> (see NOT_SEARCHED).
        item = _sub(legend, "span", class_=f"calc-blockmap__key calc-blockmap__key--{css_class}", **NOT_SEARCHED)
        item.text = AtomicString(text)


# The renderers of the block kinds (kinds.py): a block's request in, its HTML as XML text out, id left as a placeholder.

def widget(name: str, options: dict) -> str:
    return etree.tostring(render_widget(name, options["set"], options["hide"], UID_PLACEHOLDER, options.get("key", ())),
                          encoding="unicode")


def drill(name: str, options: dict) -> str:
    return etree.tostring(render_drill(name, options["seed"], UID_PLACEHOLDER), encoding="unicode")


def simulation(name: str, options: dict) -> str:
    return etree.tostring(render_simulation(name, options["set"], options["hide"], UID_PLACEHOLDER,
                                            options.get("key", ()), options.get("picture", "")), encoding="unicode")
