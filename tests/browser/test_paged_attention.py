"""Step 5 live in headless Chromium: allocation shares recompute like CPython; both allocations play side by side."""

import pytest

from calc.widgets import framework

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

PAGE = "lesson/05-paged-attention/"
SHARES = '[data-widget="paged_attention.allocation_shares"]'
SIM = '[data-widget="paged_attention.side_by_side"]'
READY_TIMEOUT_MS = 90_000
STEP_TIMEOUT_MS = 60_000


def wait_text(page, selector, want):
    page.wait_for_function("([sel, want]) => document.querySelector(sel).textContent === want", arg=[selector, want])


def final_view(name, args):
    entry, bound = framework.bind(name, args)
    return framework.collect_stream(framework.check_view(v) for v in entry.function(**bound))


def test_shares_and_side_by_side_simulation_go_live_like_cpython(visit):
    page = visit.page
    page.set_default_timeout(STEP_TIMEOUT_MS)
    page.goto(visit.url(PAGE))
    page.wait_for_selector("html[data-pyodide=ready]", timeout=READY_TIMEOUT_MS)
    page.wait_for_selector(f'{SHARES}[data-state="live"]')

    expected = framework.call("paged_attention.allocation_shares", {"block_size": "256"})
    page.fill(f'{SHARES} input[name="block_size"]', "256")
    wait_text(page, f'{SHARES} [data-output="paged_share"]', expected["outputs"]["paged_share"]["text"])
    for key, item in expected["outputs"].items():
        assert page.locator(f'{SHARES} [data-output="{key}"]').inner_text() == item["text"], key
    cells = page.evaluate(f"""() => [...document.querySelectorAll('{SHARES} [data-table="policies"] tbody tr')]
                                     .map(r => [...r.children].map(c => c.textContent))""")
    assert cells == expected["tables"]["policies"]["rows"]

    # Both allocations, one run: the panel ends on CPython's numbers, the charts hold its series.
    page.wait_for_selector(f'{SIM}[data-state="live"]')
    colours = page.evaluate(f"""() => {{
        const c = document.querySelector('{SIM} canvas[data-blockmap]');
        const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
        const seen = new Set();
        for (let i = 0; i < d.length; i += 4 * 31) seen.add(d[i] + ',' + d[i+1] + ',' + d[i+2]);
        return seen.size;
    }}""")
    assert colours > 3, "the build's two block maps are drawn before any run"
    page.select_option(f'{SIM} select[name="__speed"]', "8")
    page.click(f'{SIM} [data-action="play"]')
    page.wait_for_function(f"() => document.querySelector('{SIM}').dataset.simState === 'done'", timeout=120_000)
    expected = final_view("paged_attention.side_by_side", {})
    for key in ("c_running_max", "p_running_max", "c_ttft_p99_s", "p_ttft_p99_s", "c_kv_token_share",
                "p_kv_token_share"):
        assert page.locator(f'{SIM} [data-output="{key}"]').inner_text() == expected["outputs"][key]["text"], key
    queue = page.evaluate(f"() => document.querySelector('{SIM} [data-chart=queue]').data.map(t => t.y)")
    assert queue == [trace["y"] for trace in expected["figures"]["queue"]["data"]]
    assert visit.console_errors == []
