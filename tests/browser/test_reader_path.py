"""Issue 32's reader's path: steps 1 to 22 by real clicks on the footer's Next link, and back, at 1280 and 390 px.

Material's instant navigation swaps the page's content and diffs the head, so what a page needs must survive
the swap, not only a full load (which is all the other browser tests open). The walk opens step 1 by a full
load and then only clicks: the footer's Next (page.mouse.click at the link's centre, after scrolling to the
page's end as a reader does), the footer's Previous and the browser's Back. On every step it asserts:

- the styles are in force: each KaTeX formula's MathML copy is visually hidden (a 1x1 box), each drawn Plotly
  chart's SVG layers are absolutely positioned inside the chart's box, and its mode bar sits inside that box,
  clear of the chart's title; no option of a widget's select is cut off when chosen;
- every visible button of the content (the "Apply to my replica" buttons among them) and the footer's links
  receive a click at their centre (document.elementFromPoint there is the control or inside it), with the
  replica panel closed and, on the steps with an Apply button, open;
- no console error, no failed request (an error status or a network failure) and no request off 127.0.0.1.

It waits for what it checks (formulas typeset, the build's figures drawn), not for Python: the Apply check
needs only layout. Screenshots of step 6 reached by Next go to build/screenshots/path-*.png, and every problem
found to build/screenshots/path-WIDTH-problems.txt.
"""

from __future__ import annotations

import os

import pytest

from tests.browser.helpers import ROOT, SITE

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]


def built_steps() -> list[str]:
    """The built site's lesson steps, in order (read when the test runs: no built site is no import error)."""
    return sorted(name for name in os.listdir(os.path.join(SITE, "lesson"))
                  if name[:2].isdigit() and os.path.exists(os.path.join(SITE, "lesson", name, "index.html")))


PANEL = "[data-replica]"
SHOTS = os.path.join(ROOT, "build", "screenshots")
SCREENSHOT_STEP = "06-twice-the-traffic"

#: In the page: every way its styles are missing or a layer is out of place, as sentences (none when it holds).
STYLE_PROBLEMS = """() => {
  const problems = [];
  const name = (node) => node.tagName.toLowerCase() + (node.id ? '#' + node.id : '') +
    (node.className && typeof node.className === 'string' ? '.' + node.className.trim().split(/\\s+/).join('.') : '');
  const inside = (inner, outer, slack) => inner.left >= outer.left - slack && inner.top >= outer.top - slack &&
    inner.right <= outer.right + slack && inner.bottom <= outer.bottom + slack;
  const overlap = (a, b) => Math.min(a.right, b.right) - Math.max(a.left, b.left) > 1 &&
    Math.min(a.bottom, b.bottom) - Math.max(a.top, b.top) > 1;
  document.querySelectorAll('article .katex-mathml').forEach((mathml, index) => {
    const box = mathml.getBoundingClientRect();
    if (mathml.checkVisibility() && (box.width > 1.5 || box.height > 1.5))
      problems.push(`formula ${index}: its MathML copy shows (${Math.round(box.width)}x${Math.round(box.height)} px): KaTeX's stylesheet is not in force`);
  });
  document.querySelectorAll('article .js-plotly-plot').forEach((chart) => {
    const label = chart.dataset.chart || chart.id || 'chart';
    if (!chart.checkVisibility()) return; // in a closed fold
    const box = chart.getBoundingClientRect();
    chart.querySelectorAll('.main-svg').forEach((layer, index) => {
      if (getComputedStyle(layer).position !== 'absolute')
        problems.push(`${label}: SVG layer ${index} is position ${getComputedStyle(layer).position}, not absolute: Plotly's global style is not in force`);
      if (!inside(layer.getBoundingClientRect(), box, 2))
        problems.push(`${label}: SVG layer ${index} spills out of the chart's box`);
    });
    const bar = chart.querySelector('.modebar-container');
    if (bar) {
      const barBox = bar.getBoundingClientRect();
      if (getComputedStyle(bar).position !== 'absolute') problems.push(`${label}: the mode bar is not positioned over the chart`);
      if (!inside(barBox, box, 2)) problems.push(`${label}: the mode bar lies outside the chart's box`);
      const bar_buttons = bar.querySelector('.modebar');
      const title = chart.querySelector('.gtitle');
      if (bar_buttons && title && title.textContent.trim() && overlap(bar_buttons.getBoundingClientRect(), title.getBoundingClientRect()))
        problems.push(`${label}: the mode bar lies over the title "${title.textContent.trim()}"`);
    }
  });
  const context = document.createElement('canvas').getContext('2d');
  document.querySelectorAll('article .calc-control select').forEach((select) => {
    if (!select.checkVisibility()) return;
    const style = getComputedStyle(select);
    context.font = `${style.fontWeight} ${style.fontSize} ${style.fontFamily}`;
    const room = select.clientWidth - parseFloat(style.paddingLeft) - parseFloat(style.paddingRight) - 20; // the arrow
    const cut = [...select.options].map((option) => option.text).filter((text) => context.measureText(text).width > room);
    if (cut.length) problems.push(`select ${select.name}: option "${cut[0]}" is cut off when chosen (${Math.round(room)} px of room)`);
  });
  return problems;
}"""

#: In the page: the controls a reader clicks on this page (visible content buttons, the footer's links), each
#: scrolled into view as the browser does for a focus or a link to it; those whose centre another element takes.
COVERED_CONTROLS = """async () => {
  const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
  const name = (node) => !node ? 'nothing' : node.tagName.toLowerCase() +
    (node.className && typeof node.className === 'string' ? '.' + node.className.trim().split(/\\s+/).join('.') : '') +
    (node.textContent ? ' "' + node.textContent.trim().slice(0, 40) + '"' : '');
  const controls = [...document.querySelectorAll('article button, .md-footer__link')]
    .filter((node) => node.checkVisibility({ visibilityProperty: true }));
  const covered = [];
  for (const control of controls) {
    const before = scrollY;
    control.scrollIntoView({ block: 'nearest', inline: 'nearest' });
    if (scrollY !== before) { await frame(); await frame(); } // what follows a scroll (Material's sidebars, the panel) has moved
    const box = control.getBoundingClientRect();
    const x = box.left + box.width / 2, y = box.top + box.height / 2;
    const hit = document.elementFromPoint(x, y);
    if (!hit || !(control === hit || control.contains(hit)))
      covered.push(`${name(control)} at (${Math.round(x)}, ${Math.round(y)}) is covered by ${name(hit)}`);
  }
  return covered;
}"""

#: The build's figures drawn and every formula typeset (what the style checks look at).
PAGE_DRAWN = """() => {
  const formulas = document.querySelectorAll('article .arithmatex');
  if ([...formulas].some((node) => !node.querySelector('.katex'))) return false;
  return document.querySelectorAll('article [data-chart][data-figure]:not([data-drawn]), article [data-chart][data-pending]').length === 0;
}"""


class PathVisit:
    """One reader at one width: the context, and every failed request and error status it met."""

    def __init__(self, browser, site_server, width: int, height: int):
        from tests.browser.conftest import Visit

        self.visit = Visit(browser, site_server, viewport={"width": width, "height": height})
        self.page = self.visit.page
        self.width = width
        self.problems: list[str] = []
        self.failed: list[str] = []
        self.page.on("requestfailed", lambda request: self.failed.append(f"{request.url}: {request.failure}"))
        self.page.on("response", lambda response: response.status >= 400 and
                     self.failed.append(f"{response.url}: HTTP {response.status}"))

    def at(self, slug: str) -> None:
        # The page's own head, not only its address (a Back changes the address before the page comes).
        self.page.wait_for_function("(slug) => location.pathname.endsWith('/' + slug + '/') && "
                                    "document.querySelector('link[rel=canonical]').href.endsWith('/' + slug + '/')", arg=slug)
        self.page.wait_for_function(PAGE_DRAWN)
        assert self.page.evaluate("() => window.readerPathMarker") == 1, f"{slug} was a full load, not instant navigation"

    def holds(self, slug: str, how: str) -> None:
        """Every check of the module's docstring on the step in view, reached by ``how``; what fails is noted in
        :attr:`problems` (the walk goes on, so that one run reports every step)."""
        where = f"{self.width} px, step {slug[:2]} by {how}"
        found = [f"{where}: {problem}" for problem in self.page.evaluate(STYLE_PROBLEMS)]
        found += [f"{where}, panel closed: {problem}" for problem in self.page.evaluate(COVERED_CONTROLS)]
        if self.page.locator("[data-apply-step]").count():
            self.toggle_panel()
            found += [f"{where}, panel open: {problem}" for problem in self.page.evaluate(COVERED_CONTROLS)]
            self.toggle_panel()
        for kind, seen in (("console error", self.visit.console_errors), ("failed request", self.failed),
                           ("request off 127.0.0.1", self.visit.external_requests)):
            found += [f"{where}: {kind} {item}" for item in seen]
            seen.clear()
        self.problems += [" ".join(problem.split()) for problem in found]

    def toggle_panel(self) -> None:
        toggle = self.page.locator(PANEL).get_by_role("button", name="My replica", exact=True)
        toggle.click()  # a real click: Playwright checks that nothing covers it

    def click_footer(self, which: str) -> None:
        """Scroll to the page's end, as a reader does, and click the footer's ``which`` link at its centre."""
        link = self.page.locator(f".md-footer__link--{which}")
        # At the end once the page has stopped growing (its charts draw in turn): the link's centre, and what is there.
        x, y, hit = self.page.evaluate("""async (which) => {
            const frame = () => new Promise((done) => requestAnimationFrame(() => done()));
            const link = document.querySelector('.md-footer__link--' + which);
            for (let tries = 0; ; tries++) {
                window.scrollTo(0, document.documentElement.scrollHeight);
                await frame(); await frame();
                const box = link.getBoundingClientRect(), x = box.left + box.width / 2, y = box.top + box.height / 2;
                const header = document.querySelector('.md-header').getBoundingClientRect().bottom;
                if ((y > header && y < innerHeight) || tries > 30) {
                    const hit = document.elementFromPoint(x, y);
                    return [x, y, link.contains(hit) ? '' : (hit ? hit.tagName + '.' + hit.className : 'nothing')];
                }
            }
        }""", which)
        if hit:
            self.problems.append(f"{self.width} px: the footer's {which} link, at the page's end, is covered at its "
                                 f"centre by {hit}")
            link.evaluate("(link) => link.click()")  # noted; walk on to see the next steps
            return
        self.page.mouse.click(x, y)

    def close(self) -> None:
        self.visit.close()


@pytest.mark.parametrize("width,height", [(1280, 900), (390, 844)], ids=["1280px", "390px"])
def test_a_reader_clicks_next_from_step_1_to_22_and_back_and_every_step_holds(browser, site_server, width, height):
    steps = built_steps()
    assert len(steps) == 22, steps
    reader = PathVisit(browser, site_server, width, height)
    page = reader.page
    try:
        page.goto(reader.visit.url(f"lesson/{steps[0]}/"))
        page.evaluate("() => { window.readerPathMarker = 1; }")  # gone if any click makes a full load
        reader.at(steps[0])
        reader.holds(steps[0], "a full load")
        for slug in steps[1:]:
            reader.click_footer("next")
            reader.at(slug)
            if slug == SCREENSHOT_STEP:
                os.makedirs(SHOTS, exist_ok=True)
                page.evaluate("() => window.scrollTo(0, 0)")
                page.screenshot(path=os.path.join(SHOTS, f"path-{width}-step06-by-next.png"), full_page=True)
            reader.holds(slug, "Next")
        for slug in (steps[-2], steps[-3]):
            reader.click_footer("prev")
            reader.at(slug)
            reader.holds(slug, "Previous")
        for slug in (steps[-2], steps[-1]):  # the browser's Back: 20 -> 21 -> 22
            page.go_back()
            reader.at(slug)
            reader.holds(slug, "Back")
    finally:
        reader.close()
        os.makedirs(SHOTS, exist_ok=True)
        with open(os.path.join(SHOTS, f"path-{width}-problems.txt"), "w", encoding="utf-8") as handle:
            handle.write("".join(problem + "\n" for problem in reader.problems))
    assert reader.problems == [], (f"{len(reader.problems)} problems on the walk at {width} px; first 40:\n" +
                                   "\n".join(reader.problems[:40]))


#: In the page: every call the page asks the worker for, by function name (kept across instant navigations: the
#: runtime lives as long as the document).
COUNT_WORKER_CALLS = """() => {
  window.workerCalls = [];
  const runtime = window.calcRuntime, request = runtime.request;
  runtime.request = function (type, payload, budget) {
    if (type === 'call') window.workerCalls.push(payload.fn);
    return request.apply(this, arguments);
  };
}"""

#: In the page, once Apply is clicked: milliseconds until the before -> after line shows, its text and its source.
EFFECT_SHOWN = """async (step) => {
  const button = document.querySelector(`[data-apply-step="${step}"]`);
  const line = button.parentNode.querySelector('.calc-replica-effect');
  const started = performance.now();
  button.click();
  while (line.hidden || !/Watch:/.test(line.textContent)) {
    if (performance.now() - started > 90000) break;
    await new Promise((done) => setTimeout(done, 5));
  }
  return { ms: performance.now() - started, text: line.textContent, source: line.dataset.replicaEffect || '' };
}"""


def test_a_reader_on_the_lessons_path_sees_each_changes_before_and_after_at_once(browser, site_server):
    """Steps 13 to 20 by Next with the replica the lesson carries (Reset to step 13, then each Apply on the way):
    each Apply's before -> after shows within a frame or two, is calc.replica.lesson_change_effect's line (the
    build's, computed here again in CPython), and no call goes to the worker for it (the panel's stream applies
    the change; only the before -> after of a replica off the path is measured live, 3.5-7.7 s on steps 14-20)."""
    from calc.replica import LESSON_CHANGES, lesson_change_effect

    steps = built_steps()
    reader = PathVisit(browser, site_server, 1280, 900)
    page = reader.page
    start = next(slug for slug in steps if slug.startswith("13-"))
    try:
        page.goto(reader.visit.url(f"lesson/{start}/"))
        page.evaluate("() => { window.readerPathMarker = 1; }")
        reader.at(start)
        reader.toggle_panel()
        page.locator(f"{PANEL} .calc-replica__reset").click()  # the lesson's replica at step 13: changes 4 to 12
        page.wait_for_function("() => document.querySelector('[data-replica]').dataset.applied === '4,5,6,7,9,10,11,12'",
                               timeout=90_000)
        reader.toggle_panel()
        page.evaluate(COUNT_WORKER_CALLS)
        shown = {}
        for slug in steps[steps.index(start) + 1:steps.index(start) + 8]:  # 14 to 20
            reader.click_footer("next")
            reader.at(slug)
            step = int(slug[:2])
            if step not in LESSON_CHANGES:
                continue
            shown[step] = page.evaluate(EFFECT_SHOWN, step)
            page.wait_for_function("(step) => document.querySelector('[data-replica]').dataset.applied"
                                   ".split(',').pop() === String(step)", arg=step, timeout=90_000)
        assert sorted(shown) == [14, 15, 19, 20]
        for step, seen in shown.items():
            assert seen["source"] == "built", (step, seen)
            assert seen["ms"] < 250, (step, seen)  # a frame or two, not a simulation
            assert seen["text"] == lesson_change_effect(step)["sentence"], step
        assert "replica.change_effect_view" not in page.evaluate("() => window.workerCalls")
    finally:
        reader.close()
    assert reader.visit.console_errors == []


def test_a_replica_off_the_lessons_path_measures_its_before_and_after_live(visit):
    """Step 5's Apply on a fresh replica (step 4's change never applied): the build's line is for another
    replica, so the panel asks the worker, and shows calc.replica.change_effect's figures for this one."""
    from calc.replica import LESSON_CHANGES, ReaderReplica, change_effect, effect_sentence

    page = visit.page
    page.goto(visit.url("lesson/05-paged-attention/"))
    page.wait_for_function("() => window.calcRuntime")
    page.evaluate(COUNT_WORKER_CALLS)
    seen = page.evaluate(EFFECT_SHOWN, 5)
    assert seen["source"] == "live"
    expected = effect_sentence(change_effect(ReaderReplica(), 5, LESSON_CHANGES[5]["delta"]))
    assert seen["text"] == expected != page.evaluate("() => document.querySelector('.calc-replica-effect')"
                                                      ".getAttribute('data-replica-path')")
    assert page.evaluate("() => window.workerCalls").count("replica.change_effect_view") == 1
    assert visit.console_errors == []
