"""The worker's side of the page <-> Python protocol: JSON in, JSON out, allow-list only.

The browser's Web Worker passes each message string to :func:`handle` and posts
back the string it returns. Requests carry an ``id`` that the answer repeats.

Operations (declared, with their fields, in ``contract.json``: see :mod:`calc.widgets.contract`):

``call``          run a widget: ``{"id": 1, "op": "call", "fn": NAME, "args": {...}}``
``drill``         a drill question for a seed: ``{"op": "drill", "fn": NAME, "args": {"seed": 7}}``
``check``         check a typed answer: ``{"op": "check", "fn": NAME, "args": {...}, "answer": "128 KiB"}``
``stream_start``  start a live run; answers ``{"stream": SID}``
``stream_next``   up to ``frames`` more frames: ``{"op": "stream_next", "stream": SID, "frames": 1}``
``stream_cancel`` forget a live run
``list``          the allow-list (imports every page module)
``warm``          import the modules of the widgets a page holds: ``{"op": "warm", "names": [...]}``

Every answer is ``{"id": ..., "ok": true, "result": ...}`` or
``{"id": ..., "ok": false, "error": {"kind": "input"|"internal", "field": ..., "message": ...}}``
(the page adds the kinds ``runtime`` and ``budget``; every kind is declared in the contract).

>>> import json
>>> answer = json.loads(handle('{"id": 3, "op": "call", "fn": "os.system", "args": {}}'))
>>> answer["ok"], answer["error"]["kind"], answer["error"]["field"]
(False, 'input', 'widget')
>>> answer = json.loads(handle('{"id": 4, "op": "call", "fn": "kv_cache_arithmetic.kv_per_token", "args": {"layers": "-1"}}'))
>>> print(answer["error"]["message"])
Layers (layers) must be a whole number between 1 and 1,000; got '-1'
"""

from __future__ import annotations

import itertools
import json
import time

from calc.answers import check_answer
from calc.errors import CalcError
from calc.widgets import framework, load_all, load_module
from calc.widgets.contract import REQUESTS, declared

MAX_FRAMES_PER_CALL = 50
MAX_OPEN_STREAMS = 8

_streams: dict[int, object] = {}
_stream_ids = itertools.count(1)


def _op_call(request: dict):
    return framework.call(request.get("fn"), request.get("args"))


def _op_drill(request: dict):
    entry, bound = framework.bind(request.get("fn"), request.get("args"))
    if entry.kind != "drill":
        raise CalcError(f"{entry.name} is not a drill", "fn")
    return framework.check_view(entry.function(**bound))


def _op_check(request: dict):
    question = _op_drill(request)
    verdict = check_answer(request.get("answer"), question["answer"], question["unit"], question["tolerance"])
    verdict["explanation"] = question["explanation"]
    verdict["expected_text"] = question["answer_text"]
    return framework.check_view(verdict)


def _op_stream_start(request: dict):
    entry, bound = framework.bind(request.get("fn"), request.get("args"))
    if entry.kind != "stream":
        raise CalcError(f"{entry.name} is not a live stream", "fn")
    while len(_streams) >= MAX_OPEN_STREAMS:  # drop the oldest: a page never needs more than a few
        _streams.pop(next(iter(_streams)))
    stream_id = next(_stream_ids)
    _streams[stream_id] = (entry, entry.function(**bound))
    return {"stream": stream_id}


def _op_stream_next(request: dict):
    stream_id = request.get("stream")
    if stream_id not in _streams:
        raise CalcError(f"stream {stream_id!r} is not running (it finished or was cancelled)", "stream")
    entry, generator = _streams[stream_id]
    wanted = request.get("frames", 1)
    if not isinstance(wanted, int) or isinstance(wanted, bool) or not 1 <= wanted <= MAX_FRAMES_PER_CALL:
        raise CalcError(f"frames must be a whole number between 1 and {MAX_FRAMES_PER_CALL}; got {wanted!r}", "frames")
    frames, done = [], False
    started = time.perf_counter()
    # Hand back what is ready once a slice of the budget is spent, so the page keeps animating.
    while len(frames) < wanted and time.perf_counter() - started < entry.budget_s / 2:
        try:
            frames.append(framework.check_view(next(generator)))
        except StopIteration:
            done = True
            break
    if done:
        _streams.pop(stream_id, None)
    return {"frames": frames, "done": done}


def _op_stream_cancel(request: dict):
    return {"cancelled": _streams.pop(request.get("stream"), None) is not None}


def _op_list(request: dict):
    load_all()
    return {name: framework.REGISTRY[name].kind for name in sorted(framework.REGISTRY)}


def _op_warm(request: dict):
    """Import the page modules of the given widget names now, so the page's first recompute is quick."""
    names = request.get("names", [])
    if not isinstance(names, list):
        raise CalcError("names must be a list of widget names", "names")
    return {"loaded": [str(n) for n in names if isinstance(n, str) and load_module(n.rsplit(".", 1)[0])]}


# One handler per request the contract declares, in its order (the order an unknown op's message lists).
OPERATIONS = {op: globals()[f"_op_{op}"] for op in REQUESTS}
INPUT, INTERNAL = declared("error_kinds", "input"), declared("error_kinds", "internal")


def handle(message: str) -> str:
    """Answer one JSON request with one JSON response; never raises."""
    request_id = None
    try:
        request = json.loads(message)
        if not isinstance(request, dict):
            raise CalcError("request must be a JSON object", "request")
        request_id = request.get("id")
        operation = OPERATIONS.get(request.get("op"))
        if operation is None:
            raise CalcError(f"op must be one of {', '.join(OPERATIONS)}; got {request.get('op')!r}", "op")
        return json.dumps({"id": request_id, "ok": True, "result": operation(request)})
    except CalcError as exc:
        error = {"kind": INPUT, "field": exc.field, "message": str(exc)}
    except json.JSONDecodeError as exc:
        error = {"kind": INPUT, "field": "request", "message": f"request is not JSON: {exc.msg}"}
    except Exception as exc:  # a bug in calc: report it, keep the page alive
        error = {"kind": INTERNAL, "field": None, "message": f"internal error in calc ({type(exc).__name__}): {exc}"}
    return json.dumps({"id": request_id, "ok": False, "error": error})
