"""The worker protocol, in CPython: JSON in, JSON out, allow-list only, never an exception."""

import json

import pytest

from calc.widgets import framework
from calc.widgets.runtime import handle


def ask(**request):
    return json.loads(handle(json.dumps(request)))


def test_call_returns_the_widget_view():
    answer = ask(id=7, op="call", fn="kv_cache_arithmetic.kv_per_token", args={"model": "llama-3.1-8b"})
    assert answer["id"] == 7 and answer["ok"]
    assert answer["result"]["outputs"]["kv_bytes_per_token"]["value"] == 131072


@pytest.mark.parametrize("request_text, field", [
    ('{"id": 1, "op": "call", "fn": "builtins.eval", "args": {}}', "widget"),
    ('{"id": 1, "op": "call", "fn": "__import__", "args": {}}', "widget"),
    ('{"id": 1, "op": "exec", "fn": "kv_cache_arithmetic.kv_per_token"}', "op"),
    ('{"id": 1, "op": "call", "fn": "kv_cache_arithmetic.kv_per_token", "args": []}', "args"),
    ('[1, 2]', "request"),
    ('not json', "request"),
])
def test_anything_off_the_allow_list_is_refused_as_input_error(request_text, field):
    answer = json.loads(handle(request_text))
    assert answer["ok"] is False
    assert answer["error"]["kind"] == "input"
    assert answer["error"]["field"] == field


def test_drill_and_check():
    question = ask(id=1, op="drill", fn="kv_cache_arithmetic.kv_bytes_drill", args={"seed": 0})["result"]
    assert question["answer"] == 131072
    for typed, correct in (("128 KiB", True), ("131,072", True), ("0.125 MiB", True), ("64 KiB", False)):
        verdict = ask(id=2, op="check", fn="kv_cache_arithmetic.kv_bytes_drill", args={"seed": 0}, answer=typed)
        assert verdict["result"]["correct"] is correct, typed
    bad = ask(id=3, op="check", fn="kv_cache_arithmetic.kv_bytes_drill", args={"seed": 0}, answer="lots")
    assert bad["error"]["field"] == "answer"


def test_a_drill_is_not_callable_as_a_stream_and_vice_versa():
    answer = ask(id=1, op="stream_start", fn="kv_cache_arithmetic.kv_bytes_drill", args={})
    assert answer["ok"] is False and "not a live stream" in answer["error"]["message"]


def test_streams_start_give_frames_and_finish():
    from typing import Annotated

    @framework.stream
    def counting(n: Annotated[int, framework.IntRange(1, 10)] = 3):
        for i in range(n):
            yield framework.view(outputs=[framework.output("i", "i", i)])

    try:
        sid = ask(id=1, op="stream_start", fn="test_runtime.counting", args={"n": "3"})["result"]["stream"]
        first = ask(id=2, op="stream_next", stream=sid, frames=2)["result"]
        assert [f["outputs"]["i"]["value"] for f in first["frames"]] == [0, 1] and not first["done"]
        last = ask(id=3, op="stream_next", stream=sid, frames=5)["result"]
        assert [f["outputs"]["i"]["value"] for f in last["frames"]] == [2] and last["done"]
        gone = ask(id=4, op="stream_next", stream=sid)
        assert gone["ok"] is False and gone["error"]["field"] == "stream"
        sid2 = ask(id=5, op="stream_start", fn="test_runtime.counting", args={})["result"]["stream"]
        assert ask(id=6, op="stream_cancel", stream=sid2)["result"] == {"cancelled": True}
    finally:
        del framework.REGISTRY["test_runtime.counting"]


def test_an_internal_bug_is_reported_not_raised():
    from typing import Annotated

    @framework.widget
    def buggy(x: Annotated[int, framework.IntRange(0, 1)] = 0):
        return {"outputs": {}, "figures": {}, "tables": {}, "bad": 1 / x}

    try:
        answer = ask(id=9, op="call", fn="test_runtime.buggy", args={})
        assert answer == {"id": 9, "ok": False, "error": {
            "kind": "internal", "field": None, "message": "internal error in calc (ZeroDivisionError): division by zero"}}
    finally:
        del framework.REGISTRY["test_runtime.buggy"]
