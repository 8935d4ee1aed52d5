"""Bad input, everywhere: every allow-listed widget function and every CLI subcommand, fed random and hostile values.

Each call must give a valid view (finite numbers, no negative sizes) or raise
CalcError whose message names the field; never another exception. The lists of
functions and subcommands are read from the registry and the CLI, so pages and
subcommands added later are covered without new code. Bounded: a fixed number of
examples per function, derandomized in CI.
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import os

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from calc.cli import SUBCOMMANDS, build_parser, main
from calc.errors import CalcError
from calc.widgets import allowed_names, framework

EXAMPLES = int(os.environ.get("BAD_INPUT_EXAMPLES", "20"))
SETTINGS = settings(max_examples=EXAMPLES, deadline=None, derandomize=bool(os.environ.get("CI")),
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
SIZE_UNITS = {"B", "bytes", "GB", "GiB", "MB", "MiB", "KB", "KiB", "tokens", "s", "ms", "requests", "GPUs",
              "tokens/s", "USD", "FLOP/s", "blocks"}
MAX_STREAM_FRAMES = 3

HOSTILE = st.sampled_from([
    "", " ", "abc", "-1", "0", "1e309", "nan", "inf", "-inf", "1" * 400, "1,2,3", "{}", "[]", "null", "true",
    '{"num_hidden_layers": -4}', '{"hidden_size": "big"}', "{not json", "\u202e\u0000", "<script>alert(1)</script>",
    -1, 0, 10**18, -10**18, 1e308, float("nan"), float("inf"), True, None, [], {}, ["a"], {"x": 1},
])


def valid_value(control: dict):
    kind = control["kind"]
    if kind == "choice":
        return st.sampled_from([value for value, _ in control["options"]])
    if kind == "int":
        return st.integers(min_value=control["min"], max_value=control["max"]).map(str)
    if kind == "float":
        return st.floats(min_value=control["min"], max_value=control["max"], allow_nan=False).map(repr)
    if kind == "toggle":
        return st.booleans()
    return st.text(max_size=200)


def arguments(spec: dict):
    """Random control values: mostly valid, some hostile, and sometimes a key the widget does not have."""
    controls = spec["controls"]
    per_control = {c["name"]: st.one_of(valid_value(c), valid_value(c), HOSTILE) for c in controls}
    values = st.fixed_dictionaries({}, optional=per_control)
    return st.one_of(values, values.map(lambda v: {**v, "no_such_control": "1"}))


def walk_numbers(value, path="view"):
    if isinstance(value, bool):
        return
    if isinstance(value, (int, float)):
        yield path, value
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from walk_numbers(item, f"{path}.{key}")
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from walk_numbers(item, f"{path}[{index}]")


def check_view(name: str, view: dict) -> None:
    for path, number in walk_numbers(view):
        assert math.isfinite(number), f"{name}: {path} = {number}"
    for key, item in view.get("outputs", {}).items():
        value = item.get("value")
        if isinstance(value, (int, float)) and not isinstance(value, bool) and item.get("unit") in SIZE_UNITS:
            assert value >= 0, f"{name}: output {key} is a negative size ({value} {item['unit']})"
        assert "nan" not in item["text"].lower().split() and "inf" not in item["text"].lower().split(), (name, item)


def check_error(name: str, spec: dict, error: CalcError) -> None:
    message = str(error)
    assert message, f"{name}: empty error message"
    names = {c["name"] for c in spec["controls"]} | {"no_such_control", "widget", "args"}
    labels = {c["label"] for c in spec["controls"]}
    assert error.field, f"{name}: CalcError without a field: {message}"
    assert error.field in message or any(label in message for label in labels) or \
        any(n in message for n in names), f"{name}: message does not name the field: {message}"


def run(name: str, args: dict):
    entry = framework.REGISTRY[name]
    if entry.kind == "widget":
        return [framework.call(name, args)]
    bound_entry, bound = framework.bind(name, args)
    produced = bound_entry.function(**bound)
    if entry.kind == "drill":
        return [framework.check_view(produced)]
    views = []
    for view in produced:  # a live stream: the first few frames are enough to meet every input check
        views.append(framework.check_view(view))
        if len(views) >= MAX_STREAM_FRAMES:
            break
    return views


@pytest.mark.parametrize("name", allowed_names())
def test_every_widget_takes_any_input_without_crashing(name):
    spec = framework.describe(name)

    @SETTINGS
    @given(arguments(spec))
    def check(args):
        try:
            views = run(name, args)
        except CalcError as error:
            check_error(name, spec, error)
        else:
            for view in views:
                check_view(name, view)

    check()


# --- the CLI ------------------------------------------------------------------------------------

# Flags whose large values mean a long simulation, not bad input: kept to sizes a test can afford.
HEAVY_FLAGS = ("--requests", "--duration", "--rate")


def flag_values(action):
    if action.choices:
        return st.one_of(st.sampled_from(list(action.choices)), st.sampled_from(["", "nope", "-1"]))
    heavy = any(action.option_strings and flag.startswith(HEAVY_FLAGS) for flag in action.option_strings)
    numbers = st.sampled_from(["1", "2", "16", "0.5"]) if heavy else \
        st.sampled_from(["0", "-1", "1", "3", "7", "0.9", "1e9", "1e309", "nan", "4096", "128000"])
    return st.one_of(numbers, st.sampled_from(["", "abc", "llama-3.1-8b", "h100-sxm-80gb", "/no/such/config.json"]))


def cli_arguments(subcommand: str):
    sub = build_parser()._subparsers._group_actions[0].choices[subcommand]
    options = [a for a in sub._actions if a.option_strings and a.dest not in ("help", "json")
               and a.nargs != 0 and not a.dest.startswith("_")]
    toggles = [a for a in sub._actions if a.option_strings and a.nargs == 0 and a.dest not in ("help", "json")]
    pairs = st.lists(st.sampled_from(options).flatmap(lambda a: flag_values(a).map(lambda v: [a.option_strings[-1], v])),
                     max_size=4) if options else st.just([])
    switches = st.lists(st.sampled_from([a.option_strings[-1] for a in toggles]), max_size=2, unique=True) \
        if toggles else st.just([])
    return st.tuples(pairs, switches).map(lambda t: [subcommand, "--json"] + [x for p in t[0] for x in p] + t[1])


def available_subcommands():
    parser = build_parser()
    return sorted(parser._subparsers._group_actions[0].choices)


def test_every_listed_subcommand_exists():
    assert set(available_subcommands()) == set(SUBCOMMANDS)


@pytest.mark.parametrize("subcommand", available_subcommands())
def test_every_cli_subcommand_takes_any_input_without_crashing(subcommand):
    @SETTINGS
    @given(cli_arguments(subcommand))
    def check(argv):
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = main(argv)
        assert code in (0, 2), (argv, code, err.getvalue()[-500:])
        if code == 0:
            for path, number in walk_numbers(json.loads(out.getvalue())):
                assert math.isfinite(number), (argv, path)
        else:
            assert err.getvalue().strip(), f"{argv}: exit 2 with no message"
            assert "Traceback" not in err.getvalue()

    check()
