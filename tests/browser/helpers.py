"""What the browser tests share: open a page until its widgets are live, drive their controls, wait for
their outputs, play a simulation to its end, check a drill, and ask ``calc`` in CPython what the page
must show for the same inputs.

A widget is named by a CSS selector of its root, such as ``'[data-widget="fp8_weights.step_before_after"]'``
(see ``widget_selector``). Actions on a selector act on the first match, as Playwright's page methods do;
reading an output is strict (one element). Where a page holds the same widget twice, pass a Playwright
``Locator`` instead (``page.locator(sel).nth(1)``): the control, output and simulation helpers take
either, and a Locator is strict throughout. Waiting for a text needs a selector (it runs in the page).

Timeouts: a call that names none uses the page's default, which the ``visit`` fixture sets to 60 s.
"""

from __future__ import annotations

import os

import pytest

from calc.errors import CalcError
from calc.widgets import framework

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SITE = os.environ.get("CALC_SITE_DIR", os.path.join(ROOT, "site"))  # the built site; another folder for a private build
READY_TIMEOUT_MS = 90_000  # a cold Pyodide boot on a loaded 2-core machine
RUN_TIMEOUT_MS = 120_000  # a simulation played at 8x to its end


def widget_selector(name: str) -> str:
    """The CSS selector of the root of widget ``name`` (its dotted calc name).

    >>> widget_selector("kv_cache_arithmetic.kv_per_token")
    '[data-widget="kv_cache_arithmetic.kv_per_token"]'
    """
    return f'[data-widget="{name}"]'


# --- what CPython computes ------------------------------------------------------------------------

def calc_view(widget: str, /, **args) -> dict:
    """The view widget ``widget`` (dotted name) returns in CPython for raw control values ``args``.

    >>> calc_view("kv_cache_arithmetic.kv_per_token", model="llama-3.1-70b")["outputs"]["kv_bytes_per_token"]["text"]
    '327,680 B (320 KiB)'
    """
    return framework.call(widget, args)


def calc_final_view(widget: str, /, **args) -> dict:
    """The view a simulation (a stream widget) ends on in CPython: every frame folded, as the page shows it when done.

    >>> calc_final_view("simulation.replica", preset="step04-reserve-max")["outputs"]["running_max"]["text"]
    '48 requests'
    """
    entry, bound = framework.bind(widget, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def calc_error(widget: str, /, **args) -> str:
    """The message of the CalcError widget ``widget`` raises in CPython for ``args``; the test fails if it raises none.

    >>> calc_error("kv_cache_arithmetic.kv_per_token", model="custom", layers="-5")
    "Layers (layers) must be a whole number between 1 and 1,000; got '-5'"
    """
    with pytest.raises(CalcError) as caught:
        framework.call(widget, args)
    return str(caught.value)


def calc_drill(drill: str, seed: int) -> dict:
    """The question view drill ``drill`` (dotted name) makes in CPython for ``seed``.

    >>> calc_drill("kv_cache_arithmetic.kv_bytes_drill", 0)["answer_text"]
    '131,072 B (128 KiB)'
    """
    return framework.REGISTRY[drill].function(seed=seed)


# --- a page going live ----------------------------------------------------------------------------

def wait_until_ready(page, timeout_ms: int = READY_TIMEOUT_MS) -> None:
    """Wait until the runtime marks Pyodide ready (``html[data-pyodide=ready]``)."""
    page.wait_for_selector("html[data-pyodide=ready]", timeout=timeout_ms)


def wait_until_live(page, *widgets: str, timeout_ms: int | None = None) -> None:
    """Wait until each widget (selector) is in state ``live``."""
    for widget in widgets:
        page.wait_for_selector(f'{widget}[data-state="live"]', timeout=timeout_ms)


def open_live(visit, path: str, *widgets: str):
    """Open ``path`` of the site, wait for Pyodide and for each of ``widgets`` to go live; return the page."""
    page = visit.page
    page.goto(visit.url(path))
    wait_until_ready(page)
    wait_until_live(page, *widgets)
    return page


# --- controls -------------------------------------------------------------------------------------

def _act(page, widget, inner: str, method: str, *args):
    """Call Playwright ``method`` on ``inner`` inside ``widget``: a page method (first match) or a Locator's."""
    if isinstance(widget, str):
        return getattr(page, method)(f"{widget} {inner}", *args)
    return getattr(widget.locator(inner), method)(*args)


def _locate(page, widget, inner: str):
    """A strict Locator for ``inner`` inside ``widget`` (a selector or a Locator)."""
    return page.locator(f"{widget} {inner}") if isinstance(widget, str) else widget.locator(inner)


def choose(page, widget, name: str, value: str) -> None:
    """Pick option ``value`` of the widget's ``<select name=...>`` (the browser sends input and change)."""
    _act(page, widget, f'select[name="{name}"]', "select_option", value)


def fill_in(page, widget, name: str, value: str, *, change: bool = False) -> None:
    """Type ``value`` into the widget's ``<input name=...>``; with ``change``, commit it with a change event.

    Typing alone recomputes after the runtime's short debounce; a change event recomputes at once,
    and is what reruns a simulation.
    """
    _act(page, widget, f'input[name="{name}"]', "fill", value)
    if change:
        _act(page, widget, f'input[name="{name}"]', "dispatch_event", "change")


def set_value_silently(page, widget: str, name: str, value: str) -> None:
    """Set the value of the widget's first ``<input name=...>`` with no event: nothing reruns until the form
    is next read (a simulation's play button reads it)."""
    page.evaluate(f"() => {{ document.querySelector('{widget} input[name={name}]').value = '{value}'; }}")


def set_control(page, widget, name: str, value, *, change: bool = False) -> None:
    """Set control ``name`` whatever its kind: pick the option of a select, tick or clear a checkbox (``value``
    True or False), or type into an input (with ``change``, committed by a change event, as ``fill_in``)."""
    if isinstance(value, bool):
        _act(page, widget, f'input[name="{name}"]', "check" if value else "uncheck")
    elif _locate(page, widget, f'select[name="{name}"]').count():
        choose(page, widget, name, value)
    else:
        fill_in(page, widget, name, value, change=change)


def recompute(page, widget: str, key: str, /, *, change: bool = False, **controls) -> dict:
    """Set ``controls`` in the widget in their order and wait until its output ``key`` shows what calc computes
    in CPython for them; return CPython's view, to compare the other outputs with.

    The widget's calc name is the page's own (its ``data-widget``). Name as ``key`` an output that the last
    control set moves, so that the wait ends on the final inputs and not on an intermediate recompute.
    """
    expected = calc_view(page.get_attribute(widget, "data-widget"), **controls)
    for name, value in controls.items():
        set_control(page, widget, name, value, change=change)
    wait_for_output(page, widget, key, expected["outputs"][key]["text"])
    return expected


def reject(page, widget: str, /, *, change: bool = False, **controls) -> str:
    """Set ``controls`` that calc refuses, wait until the widget shows CPython's CalcError message for them, and
    return that message (the test fails if CPython accepts them)."""
    message = calc_error(page.get_attribute(widget, "data-widget"), **controls)
    for name, value in controls.items():
        set_control(page, widget, name, value, change=change)
    wait_for_error(page, widget, message)
    return message


# --- outputs --------------------------------------------------------------------------------------

def wait_for_text(page, selector: str, want: str, timeout_ms: int | None = None) -> None:
    """Wait until the first element matching ``selector`` has text content exactly ``want``."""
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want",
                           arg=[selector, want], timeout=timeout_ms)


def wait_for_output(page, widget: str, key: str, want: str, timeout_ms: int | None = None) -> None:
    """Wait until the widget's output ``key`` reads exactly ``want``."""
    wait_for_text(page, f'{widget} [data-output="{key}"]', want, timeout_ms)


def wait_for_error(page, widget: str, want: str) -> None:
    """Wait until the widget's error line reads exactly ``want`` (``""``: the error has cleared)."""
    wait_for_text(page, f"{widget} [data-error]", want)


def wait_for_any_error(page, widget: str) -> str:
    """Wait until the widget's error line holds a message, and return it."""
    page.wait_for_function(f"() => document.querySelector('{widget} [data-error]').textContent.length > 0")
    return page.locator(f"{widget} [data-error]").inner_text()


def output_text(page, widget, key: str) -> str:
    """The text the widget shows for output ``key`` (in its "All numbers" fold, opened first as a reader would)."""
    located = _locate(page, widget, f'[data-output="{key}"]')
    located.evaluate("(node) => { const fold = node.closest('details.calc-all-numbers'); if (fold) fold.open = true; }")
    return located.inner_text()


def output_texts(page, widget, keys) -> dict[str, str]:
    """The texts the widget shows for ``keys``, by key."""
    return {key: output_text(page, widget, key) for key in keys}


def assert_outputs(page, widget, view: dict, keys=None) -> None:
    """Assert that the widget shows the text of ``view`` for each of ``keys`` (default: every output of the view)."""
    for key in view["outputs"] if keys is None else keys:
        assert output_text(page, widget, key) == view["outputs"][key]["text"], key


def table_rows(page, widget: str, key: str) -> list[list[str]]:
    """The text of every cell of the widget's table ``key``, row by row (the body only)."""
    return page.evaluate(f"""() => [...document.querySelectorAll('{widget} [data-table="{key}"] tbody tr')]
                                    .map(r => [...r.children].map(c => c.textContent))""")


def chart_traces(page, widget: str, key: str, *fields: str) -> list[dict]:
    """The traces Plotly holds in the widget's chart ``key``, each cut down to ``fields`` (for ``figure_traces``).

    Charts are drawn after the numbers, one per task: wait until this one has no draw pending."""
    page.wait_for_function("(sel) => { const h = document.querySelector(sel); return h && h.data && !h.dataset.pending; }",
                           arg=f'{widget} [data-chart="{key}"]')
    return page.evaluate("([sel, fields]) => document.querySelector(sel).data"
                         ".map(t => Object.fromEntries(fields.map(f => [f, t[f]])))",
                         [f'{widget} [data-chart="{key}"]', list(fields)])


def figure_traces(view: dict, key: str, *fields: str) -> list[dict]:
    """The traces of figure ``key`` of a calc view, each cut down to ``fields`` (to compare with ``chart_traces``).

    >>> figure_traces({"figures": {"q": {"data": [{"x": [1], "y": [3], "name": "queue"}]}}}, "q", "y")
    [{'y': [3]}]
    """
    return [{field: trace[field] for field in fields} for trace in view["figures"][key]["data"]]


# --- simulations ----------------------------------------------------------------------------------

def wait_until_done(page, sim, timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Wait until the simulation ``sim`` (a selector: its first match; or a Locator) has played to the end."""
    if isinstance(sim, str):
        page.wait_for_function(f"() => document.querySelector('{sim}').dataset.simState === 'done'", timeout=timeout_ms)
    else:
        page.wait_for_function("(el) => el.dataset.simState === 'done'", arg=sim.element_handle(), timeout=timeout_ms)


def blockmap_colours(page, sim: str, every_nth_pixel: int) -> int:
    """How many colours the simulation's block map canvas shows, sampling every ``every_nth_pixel``-th pixel."""
    return page.evaluate("""([sel, step]) => {
        const c = document.querySelector(sel + ' canvas[data-blockmap]');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4 * step) seen.add(d[i] + ',' + d[i+1] + ',' + d[i+2]);
        return seen.size;
    }""", [sim, every_nth_pixel])


def play_to_done(page, sim, control: str | None = None, value: str | None = None, *,
                 timeout_ms: int = RUN_TIMEOUT_MS) -> None:
    """Play the simulation at 8x to its end: started by setting ``control`` to ``value`` (a changed control
    reruns the scenario), or with the play button when no control is named."""
    choose(page, sim, "__speed", "8")
    if control is None:
        _act(page, sim, '[data-action="play"]', "click")
    else:
        set_control(page, sim, control, value, change=True)
    wait_until_done(page, sim, timeout_ms)


# --- drills ---------------------------------------------------------------------------------------

def check_answer(page, drill: str, answer: str) -> tuple[bool, str]:
    """Type ``answer`` into the drill, press Check, and return (whether the page judged it right, the verdict text)."""
    verdict = f"{drill} [data-output=verdict]"
    page.evaluate(f"() => delete document.querySelector('{verdict}').dataset.correct")
    page.fill(f'{drill} input[name="answer"]', answer)
    page.click(f'{drill} [data-action="check"]')
    page.wait_for_function(f"() => 'correct' in document.querySelector('{verdict}').dataset")
    correct = page.locator(verdict).get_attribute("data-correct")
    assert correct in ("true", "false"), f"{drill}: data-correct is {correct!r}"
    return correct == "true", page.locator(verdict).inner_text()


def new_seed(page, drill: str) -> int:
    """Press the drill's "new numbers", wait until it carries another seed, and return that seed."""
    old_seed = page.get_attribute(drill, "data-seed")
    page.click(f'{drill} [data-action="new"]')
    page.wait_for_function("([sel, old]) => document.querySelector(sel).dataset.seed !== old", arg=[drill, old_seed])
    return int(page.get_attribute(drill, "data-seed"))


def new_question(page, drill: str) -> int:
    """Press the drill's "new numbers", wait until it shows the new question, and return the new seed.

    Waited for by its seed, which the page sets in the task that replaces the question: the question's text may
    come out the same (a drill draws from a few models and sizes), and waiting for the text to change then hangs."""
    return new_seed(page, drill)
