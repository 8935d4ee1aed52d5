"""How the page spends its main thread: the worker starts from the head, numbers show before charts,
charts are drawn one per task, chart tables are filled when opened, and the block map stays legible
on a phone. These assert behaviour by value; the time it takes is `make bench`'s to measure."""

import html
import json
import os
import re

import pytest

from calc.widgets import framework
from tests.browser.folds import open_folds  # the playground's lesson scenarios are folded
from tests.browser.helpers import SITE, wait_for_output

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/02-kv-cache-arithmetic/"
WIDGET = '[data-widget="kv_cache_arithmetic.kv_per_token"]'
CHART = f'{WIDGET} [data-chart="kv_vs_context"]'
SIM_PAGE = "lesson/22-playground/"
SIM = '[data-widget="simulation.replica"]'


def test_the_worker_is_started_from_the_head_and_adopted_once(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]")
    timing = page.evaluate("""() => {
        const script = performance.getEntriesByType('resource').find(e => e.name.endsWith('calc-runtime.js'));
        return {bootStarted: calcRuntime.bootStarted, runtimeScriptLoaded: script.responseEnd,
                early: window.calcEarlyWorker, boots: calcRuntime.boots, phases: calcRuntime.bootPhases};
    }""")
    # The head's worker started before the body's runtime script had even arrived, and it is the
    # one in use: one boot, nothing left waiting to be adopted.
    assert timing["bootStarted"] < timing["runtimeScriptLoaded"]
    assert timing["early"] is None and timing["boots"] == 1
    # The snapshot phase is there when the build made a Pyodide memory snapshot (the manifest names it).
    with open(os.path.join(SITE, "assets", "runtime", "manifest.json"), encoding="utf-8") as handle:
        snapshot = {"snapshot_fetched"} if json.load(handle).get("pyodide_snapshot") else set()
    assert set(timing["phases"]) == {"pyodide", "calc_unpacked", "runtime_imported"} | snapshot
    assert 0 < timing["phases"]["pyodide"] <= timing["phases"]["calc_unpacked"] <= timing["phases"]["runtime_imported"]
    # A page without widgets starts no Python at all.
    page.goto(visit.url("glossary/"))
    assert page.evaluate("() => document.querySelector('script[data-calc-worker]')") is None
    assert visit.console_errors == []


def test_numbers_then_charts_and_the_chart_ends_on_cpythons_figure(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')
    page.wait_for_function("() => !document.querySelector('[data-chart][data-pending]')")
    page.evaluate(f"""() => {{
        const w = document.querySelector('{WIDGET}');
        window.__seen = [];
        new MutationObserver(() => window.__seen.push([w.dataset.state, w.dataset.charts || '']))
            .observe(w, {{attributes: true, attributeFilter: ['data-state', 'data-charts']}});
    }}""")
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "llama-3.1-70b"})
    page.select_option(f'{WIDGET} select[name="model"]', "llama-3.1-70b")
    page.wait_for_selector(f'{WIDGET}[data-charts="drawn"]')
    seen = page.evaluate("() => window.__seen")
    # computing -> live with the charts still drawing -> drawn: the numbers never wait for Plotly.
    assert ["live", "drawing"] in seen and seen[-1] == ["live", "drawn"]
    assert seen.index(["live", "drawing"]) < seen.index(["live", "drawn"])
    text = page.text_content(f'{WIDGET} [data-output="kv_bytes_per_token"]')
    assert text == expected["outputs"]["kv_bytes_per_token"]["text"]
    chart_y = page.evaluate(f"() => document.querySelector('{CHART}').data.map(t => t.y)")
    assert chart_y == [trace["y"] for trace in expected["figures"]["kv_vs_context"]["data"]]
    assert page.evaluate(f"() => document.querySelector('{CHART}').dataset.pending") is None


def test_a_chart_table_is_filled_when_opened_with_the_new_numbers(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')
    page.wait_for_function("() => !document.querySelector('[data-chart][data-pending]')")
    table = f'{WIDGET} [data-chart-table="kv_vs_context"]'
    built_rows = page.evaluate(f"() => document.querySelectorAll('{table} tbody tr').length")
    expected = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "llama-3.1-70b"})
    page.select_option(f'{WIDGET} select[name="model"]', "llama-3.1-70b")
    wait_for_output(page, WIDGET, "kv_bytes_per_token", expected["outputs"]["kv_bytes_per_token"]["text"])
    page.wait_for_selector(f'{WIDGET}[data-charts="drawn"]')
    trace = expected["figures"]["kv_vs_context"]["data"][0]
    cell = page.evaluate("([x, y]) => [calcRuntime.formatCell(x), calcRuntime.formatCell(y)]", [trace["x"][0], trace["y"][0]])
    want = [trace.get("name", ""), *cell]
    first_row = f"() => [...document.querySelector('{table} tbody tr').children].map(td => td.textContent)"
    assert page.evaluate(first_row) != want  # closed, it still holds the build's rows ...
    page.click(f"{WIDGET} details.calc-chart-data summary")
    # ... and opening it fills it (on the details' toggle event) with the recomputed figure.
    page.wait_for_function(f"(want) => JSON.stringify(({first_row})()) === JSON.stringify(want)", arg=want)
    assert page.evaluate(f"() => document.querySelectorAll('{table} tbody tr').length") == built_rows


def test_number_cells_format_like_the_build(visit):
    from hooks.widget_html import _cell  # how the build writes a chart table's cells

    values = [123456.7, 1024, 0.123456, -2.5, "GQA", 12345.0, 0.5, 3.14159, 9999.5, 1e-5, 0]
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide]")
    assert page.evaluate("(values) => values.map(calcRuntime.formatCell)", values) == [_cell(v) for v in values]


def test_block_map_wraps_on_a_phone_instead_of_shrinking_cells(browser, site_server):
    from tests.browser.conftest import Visit

    phone = Visit(browser, site_server, viewport={"width": 390, "height": 844})
    try:
        page = phone.page
        page.goto(phone.url(SIM_PAGE))
        open_folds(page, SIM)
        canvas = f"{SIM} canvas[data-blockmap]"
        page.wait_for_selector(f"{canvas}[data-cell-px]")
        built = json.loads(page.get_attribute(canvas, "data-blockmap"))
        drawn = page.evaluate(f"() => {{ const c = document.querySelector('{canvas}');"
                              " return {cell: Number(c.dataset.cellPx), width: c.width, height: c.height}; }")
        assert drawn["cell"] >= 4
        columns = drawn["width"] // drawn["cell"]
        assert columns < built["cols"]  # wrapped: fewer columns than the map has ...
        rows = drawn["height"] // drawn["cell"]
        assert columns * rows >= len(built["cells"]) > columns * (rows - 1)  # ... and every block still drawn
        assert phone.console_errors == []
    finally:
        phone.close()
    assert phone.external_requests == []


def test_a_readers_request_goes_before_background_warming(with_test_widgets, visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]")
    page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length")
    order = page.evaluate("""async () => {
        const done = [];
        const rt = window.calcRuntime;
        const busy = (label, background) => rt.request('call', {fn: 'diagnostics.busy', args: {seconds: '0.2'}}, 5000,
            {background}).then(answer => done.push([label, answer.ok]));
        const all = [busy('warm-1', true), busy('warm-2', true), busy('warm-3', true), busy('reader', false)];
        await Promise.all(all);
        return done;
    }""")
    # warm-1 was already running when the reader asked; the reader's request overtakes warm-2 and warm-3.
    assert order == [["warm-1", True], ["reader", True], ["warm-2", True], ["warm-3", True]]


def test_widgets_are_warmed_once_on_the_inputs_they_show(visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]")
    page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length")
    kinds = page.evaluate("() => [...document.querySelectorAll('[data-widget]')].map(w => [w.dataset.kind, w.dataset.warmed || null])")
    assert kinds and all((warmed == "1") == (kind == "widget") for kind, warmed in kinds)
    # Warming changed nothing on the page: the widget still shows what the build computed.
    with open(os.path.join(SITE, PAGE, "index.html"), encoding="utf-8") as handle:
        built = re.search(r'data-output="kv_bytes_per_token"[^>]*>([^<]*)<', handle.read()).group(1)
    assert page.text_content(f'{WIDGET} [data-output="kv_bytes_per_token"]') == html.unescape(built)
    assert page.get_attribute(WIDGET, "data-state") == "live"


def test_computing_shows_only_when_the_answer_is_late_and_calc_answered_closes_each_call(with_test_widgets, visit):
    page = visit.page
    page.goto(visit.url(PAGE))
    page.wait_for_selector(f'{WIDGET}[data-state="live"]')
    page.wait_for_function("() => !calcRuntime.inFlight && !calcRuntime.queue.length")
    page.evaluate(f"""() => {{
        const w = document.querySelector('{WIDGET}');
        window.__seen = []; window.__answers = [];
        new MutationObserver(() => window.__seen.push([w.dataset.state, w.getAttribute('aria-busy')]))
            .observe(w, {{attributes: true, attributeFilter: ['data-state', 'aria-busy']}});
        w.addEventListener('calc:answered', (e) => window.__answers.push(
            Object.assign({{busy: w.getAttribute('aria-busy'), state: w.dataset.state}}, e.detail)));
    }}""")
    # The call is marked busy for assistive technology at once; the dimmed "computing" look waits.
    first = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "llama-3.1-70b"})
    marked = page.evaluate(f"""() => new Promise((resolve) => {{
        const w = document.querySelector('{WIDGET}'), select = w.querySelector('select[name="model"]');
        select.value = 'llama-3.1-70b';
        select.dispatchEvent(new Event('change', {{bubbles: true}}));
        setTimeout(() => resolve([w.getAttribute('aria-busy'), w.dataset.state]), 0);  // after the recompute timer
    }})""")
    assert marked == ["true", "live"]
    page.wait_for_function("() => window.__answers.length === 1")
    wait_for_output(page, WIDGET, "kv_bytes_per_token", first["outputs"]["kv_bytes_per_token"]["text"])
    answer = page.evaluate("() => window.__answers[0]")
    assert answer["ok"] is True and isinstance(answer["id"], int) and answer["ms"] > 0
    assert (answer["busy"], answer["state"]) == (None, "live")  # the event comes once the numbers are written
    # A late answer (the worker is busy for 0.4 s first) shows "computing" until it arrives.
    page.evaluate("() => { window.__seen = []; calcRuntime.request('call', {fn: 'diagnostics.busy', args: {seconds: '0.4'}}, 5000); }")
    second = framework.call("kv_cache_arithmetic.kv_per_token", {"model": "llama-3.1-8b"})
    page.select_option(f'{WIDGET} select[name="model"]', "llama-3.1-8b")
    page.wait_for_function("() => window.__answers.length === 2")
    wait_for_output(page, WIDGET, "kv_bytes_per_token", second["outputs"]["kv_bytes_per_token"]["text"])
    seen = page.evaluate("() => window.__seen")
    assert ["computing", "true"] in seen and seen[-1] == ["live", None]
    answer = page.evaluate("() => window.__answers[1]")
    assert answer["ok"] is True and answer["ms"] >= 100 and answer["state"] == "live"
    assert page.get_attribute(WIDGET, "aria-busy") is None
    assert visit.console_errors == []
