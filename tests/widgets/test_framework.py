"""The widget contract: controls from annotations, coercion of form strings, checked views."""

import math
from typing import Annotated

import pytest

from calc.errors import CalcError
from calc.widgets import allowed_names, framework
from calc.widgets.framework import Choice, FloatRange, IntRange, Text, Toggle, output, view, widget


@pytest.fixture
def sample():
    @widget
    def sample_widget(
        model: Annotated[str, Choice(("a", ("b", "Bee")), label="Model")] = "a",
        count: Annotated[int, IntRange(1, 100, unit="tokens", label="Count")] = 10,
        share: Annotated[float, FloatRange(0.0, 1.0, label="Share")] = 0.5,
        note: Annotated[str, Text(label="Note", max_chars=20)] = "",
        flag: Annotated[bool, Toggle(label="Flag")] = False,
    ):
        return view(outputs=[output("echo", "Echo", f"{model}/{count}/{share}/{note}/{flag}")],
                    figures={"f": {"data": [{"y": [share / 3]}], "layout": {}}})

    name = "test_framework.sample_widget"
    assert name in framework.REGISTRY
    yield name
    del framework.REGISTRY[name]


def test_form_strings_are_coerced_to_the_declared_types(sample):
    result = framework.call(sample, {"model": "b", "count": "1,024".replace("1,024", "64"), "share": "0.25",
                                     "note": "hi", "flag": "true"})
    assert result["outputs"]["echo"]["text"] == "b/64/0.25/hi/True"


def test_floats_in_views_are_rounded_to_nine_significant_digits(sample):
    result = framework.call(sample, {"share": "1"})
    assert result["figures"]["f"]["data"][0]["y"] == [0.333333333]


@pytest.mark.parametrize("args, message", [
    ({"model": "c"}, "Model (model) must be one of a, b; got 'c'"),
    ({"count": "0"}, "Count (count) must be a whole number between 1 and 100; got '0'"),
    ({"count": "2.5"}, "Count (count) must be a whole number between 1 and 100; got '2.5'"),
    ({"count": "ten"}, "Count (count) must be a number; got 'ten'"),
    ({"count": "nan"}, "Count (count) must be a finite number; got 'nan'"),
    ({"count": True}, "Count (count) must be a number; got True"),
    ({"share": "1.5"}, "Share (share) must be between 0 and 1; got '1.5'"),
    ({"note": "x" * 21}, "Note (note) must be at most 20 characters; got 21"),
    ({"flag": "maybe"}, "Flag (flag) must be on or off; got 'maybe'"),
    ({"colour": "red"}, "colour is not a control of test_framework.sample_widget; allowed: model, count, share, note, flag"),
])
def test_bad_values_raise_calc_error_naming_the_field(sample, args, message):
    with pytest.raises(CalcError) as caught:
        framework.call(sample, args)
    assert str(caught.value) == message
    assert caught.value.field == next(iter(args))


def test_unknown_widget_is_refused():
    with pytest.raises(CalcError, match="widget must be one of the registered widgets"):
        framework.call("os.system", {})


def test_describe_lists_controls_with_defaults_and_units(sample):
    controls = {c["name"]: c for c in framework.describe(sample)["controls"]}
    assert controls["count"] == {"kind": "int", "min": 1, "max": 100, "step": 1, "unit": "tokens", "name": "count",
                                 "label": "Count", "help": "", "default": 10}
    assert controls["model"]["options"] == [["a", "a"], ["b", "Bee"]]


def test_non_finite_numbers_in_a_view_are_a_bug_not_output():
    with pytest.raises(ValueError, match="non-finite"):
        framework.check_view(view(outputs=[output("x", "X", math.inf)]))


def test_every_registered_function_has_defaults_that_run():
    for name in allowed_names():
        entry = framework.REGISTRY[name]
        if entry.kind == "widget":
            assert framework.call(name, {})["outputs"], name


def test_widget_without_annotation_is_rejected_at_definition():
    with pytest.raises(TypeError, match="needs Annotated"):
        @widget
        def broken(x=1):
            return view()
