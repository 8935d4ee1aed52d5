"""What readers of the best explainers expect (issue 32, deliver 6), driven as a reader does.

- progress: a step is read once its Takeaway scrolls into view; the navigation marks it, on the next page too (an
  instant navigation by the footer's Next); the home page and step 1 offer "Resume at step N", which goes there;
  "Forget my progress" forgets; nothing but localStorage holds it (no request leaves 127.0.0.1: the fixture counts);
- "edit this page": the link comes from EDIT_URI (the Pages workflow sets it); unset, as in this build, no page has one;
- prefers-reduced-motion: Material's transitions are off, and a simulation is not played out frame by frame;
- the glossary on a touch screen: a tap on a term shows its definition, a second tap or a tap elsewhere closes it;
  keyboard focus shows it too;
- the print view: under print media, 22 step articles with their charts and pictures, and no navigation.
"""

from __future__ import annotations

import json
import os
import re
import time
import urllib.parse

import pytest

from tests.browser.helpers import ROOT, SITE, wait_until_done, wait_until_ready

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

STEP_1 = "lesson/01-a-70b-assistant/"
STEP_4 = "lesson/04-reserving-the-maximum/"
STEP_5 = "lesson/05-paged-attention/"
PRINT = "print/"
SIM_4 = '[data-widget="simulation.replica"]'


def _steps() -> list[tuple[int, str]]:
    names = sorted(n for n in os.listdir(os.path.join(SITE, "lesson")) if re.match(r"\d\d-", n))
    return [(int(n[:2]), n) for n in names]


def _stored(page) -> dict | None:
    return page.evaluate("() => JSON.parse(localStorage.getItem('calc-progress') || 'null')")


def _nav_read(page) -> list[str]:
    """The slugs the primary navigation marks read (the check mark and the hidden ", read")."""
    return page.evaluate("""() => Array.from(document.querySelectorAll('.md-nav--primary a[data-step-read]'))
        .filter(a => a.textContent.includes(', read') && getComputedStyle(a.querySelector('.md-ellipsis') || a,
                     '::after').content.includes('\u2713'))
        .map(a => new URL(a.href).pathname.split('/').filter(Boolean).pop())
        .filter((slug, i, all) => all.indexOf(slug) === i)""")  # a step's link can be there twice (its own toc)


# ---- progress ------------------------------------------------------------------------------------

def _scroll_to_takeaway(page) -> None:
    """Scroll with the mouse wheel, as a reader does, until the Takeaway is on screen; then it counts as read."""
    # Instant navigation changes the address before it swaps the page in: wait for the step's own Takeaway.
    page.wait_for_function("() => document.querySelector('#takeaway') !== null")
    page.mouse.move(640, 450)
    for _ in range(60):
        if page.evaluate("() => { const b = document.querySelector('#takeaway').getBoundingClientRect();"
                         " return b.top >= 0 && b.bottom <= innerHeight; }"):
            break
        page.mouse.wheel(0, 300)
        page.wait_for_timeout(50)
    page.wait_for_selector("article[data-step-read]")


def test_progress_marks_steps_read_and_resumes_where_the_reader_left(visit):
    page = visit.page
    page.goto(visit.url(STEP_1))
    assert _stored(page) == {"done": {}, "last": "01-a-70b-assistant"}
    assert page.locator("[data-progress-resume]").is_hidden()  # nothing to resume yet

    page.goto(visit.url(STEP_5))
    assert _nav_read(page) == []
    _scroll_to_takeaway(page)
    assert _stored(page)["done"] == {"05-paged-attention": True}
    assert _nav_read(page) == ["05-paged-attention"]

    # The footer's Next (instant navigation): the new page's navigation shows step 5 read, and 6 is the last.
    page.locator("a.md-footer__link--next").click()
    page.wait_for_url("**/06-twice-the-traffic/")
    page.wait_for_function("() => JSON.parse(localStorage.getItem('calc-progress')).last === '06-twice-the-traffic'")
    page.wait_for_timeout(1500)  # past the dwell: step 6 opened, not read (its Takeaway was never on screen)
    assert _nav_read(page) == ["05-paged-attention"]
    assert _stored(page)["done"] == {"05-paged-attention": True}

    # Home: resume at the last step opened (6, not read yet).
    page.locator(".md-header__button.md-logo").click()
    page.wait_for_url(visit.url(""))
    resume = page.locator("[data-progress-resume]")
    resume.wait_for(state="visible")
    assert "You have read 1 of 22 steps" in resume.inner_text()
    link = resume.locator("a[data-resume-step]")
    assert link.inner_text() == "Resume at step 6: Twice the traffic"
    link.click()
    page.wait_for_url("**/06-twice-the-traffic/")

    # Step 6 read: step 1 now offers step 7, the one after it.
    _scroll_to_takeaway(page)
    page.goto(visit.url(STEP_1))
    resume = page.locator("[data-progress-resume]")
    resume.wait_for(state="visible")
    assert resume.locator("a[data-resume-step]").get_attribute("data-resume-step") == "7"
    assert "You have read 2 of 22 steps" in resume.inner_text()
    assert sorted(_nav_read(page)) == ["05-paged-attention", "06-twice-the-traffic"]

    resume.locator("button", has_text="Forget my progress").click()
    assert resume.is_hidden()
    assert _stored(page) is None
    assert _nav_read(page) == []
    assert visit.console_errors == []


# ---- edit this page --------------------------------------------------------------------------------

def test_edit_this_page_follows_edit_uri(monkeypatch):
    """Material renders page.edit_url as the edit action; MkDocs makes it from EDIT_URI (mkdocs.yml)."""
    from mkdocs.config import load_config
    from mkdocs.structure.files import File
    from mkdocs.structure.pages import Page

    def edit_url(environment: str | None) -> str | None:
        if environment is None:
            monkeypatch.delenv("EDIT_URI", raising=False)
        else:
            monkeypatch.setenv("EDIT_URI", environment)
        config = load_config(os.path.join(ROOT, "mkdocs.yml"))
        assert "content.action.edit" in config.theme["features"]
        source = File("lesson/01-a-70b-assistant.md", config.docs_dir, config.site_dir, config.use_directory_urls)
        return Page(None, source, config).edit_url

    assert edit_url("https://github.com/owner/repo/edit/main/docs/") == \
        "https://github.com/owner/repo/edit/main/docs/lesson/01-a-70b-assistant.md"
    assert edit_url(None) is None
    with open(os.path.join(SITE, STEP_1, "index.html"), encoding="utf-8") as handle:
        built = handle.read()
    assert 'rel="edit"' not in built  # this build had no EDIT_URI: no link to a source nobody configured
    with open(os.path.join(ROOT, ".github", "workflows", "pages.yml"), encoding="utf-8") as handle:
        assert "EDIT_URI: ${{ github.server_url }}/${{ github.repository }}/edit/" in handle.read()


# ---- reduced motion --------------------------------------------------------------------------------

# Counts the simulation's clock updates ("t = ... s simulated") and each chart's redraws during a run.
COUNT_UPDATES = """(sim) => {
  const widget = document.querySelector(sim);
  window.__simUpdates = {clock: 0, charts: {}};
  const shown = new Set();  // the distinct times the clock showed (it is rewritten every tick, moved or not)
  new MutationObserver(() => {
    shown.add(widget.querySelector('[data-sim-progress]').textContent);
    window.__simUpdates.clock = shown.size;
  })
    .observe(widget.querySelector('[data-sim-progress]'), {childList: true, characterData: true, subtree: true});
  for (const name of ['extendTraces', 'restyle', 'react', 'newPlot']) {
    const original = Plotly[name];
    Plotly[name] = function (holder, ...rest) {
      const key = holder.dataset ? holder.dataset.chart : String(holder);
      window.__simUpdates.charts[key] = (window.__simUpdates.charts[key] || 0) + 1;
      return original.call(this, holder, ...rest);
    };
  }
}"""

TRANSITION = """() => getComputedStyle(document.querySelector('.md-nav--primary .md-nav__link')).transitionDuration"""


def test_reduced_motion_turns_transitions_off_and_shortens_the_simulation(visit):
    page = visit.page
    page.goto(visit.url(STEP_4))
    moving = page.evaluate(TRANSITION)
    assert all(float(d.rstrip("s")) >= 0.1 for d in moving.split(", ")), moving  # Material's own: 125-250 ms

    page.emulate_media(reduced_motion="reduce")
    assert all(float(d.rstrip("s")) <= 1e-4 for d in page.evaluate(TRANSITION).split(", "))
    wait_until_ready(page)
    page.wait_for_selector(f'{SIM_4}[data-state="live"]')
    assert page.input_value(f'{SIM_4} [name="__speed"]') == "1"
    page.wait_for_function("() => window.Plotly && document.querySelector('[data-chart][data-drawn]')")
    page.evaluate(COUNT_UPDATES, SIM_4)
    started = time.monotonic()
    page.click(f'{SIM_4} [data-action="play"]')
    wait_until_done(page, SIM_4)
    elapsed_s = time.monotonic() - started
    frames = page.evaluate(f"() => document.querySelector('{SIM_4}').simulation.frames()")
    updates = page.evaluate("() => window.__simUpdates")
    # Played out at speed 1, each frame is a tick of its own (the clock moves once per frame) and the charts move
    # every CHART_MS (480 ms); with reduced motion the clock jumps to the last frame that came, and the charts
    # move every 2 s and at the end.
    assert frames >= 20
    assert updates["clock"] <= frames / 2, (updates, frames)
    assert 1 <= max(updates["charts"].values()) <= 2 + elapsed_s / 2, (updates, elapsed_s)
    assert visit.console_errors == []


# ---- the glossary on a touch screen ------------------------------------------------------------------

@pytest.fixture
def touch_page(browser, site_server):
    """A phone: touch events, no hover (Material's hover tooltips do not show), every request off 127.0.0.1 counted."""
    context = browser.new_context(has_touch=True, is_mobile=True, viewport={"width": 390, "height": 844},
                                  service_workers="block")
    external: list[str] = []

    def route(route):
        host = urllib.parse.urlparse(route.request.url).hostname
        if route.request.url.startswith(("data:", "blob:")) or host == "127.0.0.1":
            route.continue_()
        else:
            external.append(route.request.url)
            route.abort()

    context.route("**/*", route)
    page = context.new_page()
    page.set_default_timeout(60_000)
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(str(error)))
    yield page, lambda path: urllib.parse.urljoin(site_server.url, path), errors
    context.close()
    assert external == [], f"requests left 127.0.0.1: {external}"


def test_a_tap_on_a_term_shows_its_definition_and_a_second_tap_closes_it(touch_page):
    page, url, errors = touch_page
    page.goto(url(STEP_1))
    term = page.locator("article abbr", has_text=re.compile(r"^KV$")).first
    definition = term.get_attribute("title")
    assert definition and definition.startswith("Key and value")
    popover = page.locator(".calc-glossary-tip")
    term.scroll_into_view_if_needed()
    term.tap()
    popover.wait_for(state="visible")
    assert popover.inner_text() == "KV: " + definition
    assert term.get_attribute("data-glossary-open") == "true"
    assert page.locator(".md-tooltip2--active").count() == 0  # Material's hover tooltip is not shown as well
    box, anchor = popover.bounding_box(), term.bounding_box()
    assert box["x"] >= 0 and box["x"] + box["width"] <= 390  # inside the phone's width
    assert abs(box["y"] - (anchor["y"] + anchor["height"])) < 20 or box["y"] + box["height"] <= anchor["y"] + 1

    term.tap()  # the same term again: closed
    popover.wait_for(state="hidden")
    assert term.get_attribute("data-glossary-open") is None

    other = page.locator("article abbr", has_text=re.compile(r"^vLLM$")).first
    other.tap()
    popover.wait_for(state="visible")
    assert popover.inner_text().startswith("vLLM: ")
    page.locator("article h1").tap()  # anywhere else: closed
    popover.wait_for(state="hidden")
    assert errors == []


def test_keyboard_focus_on_a_term_shows_its_definition(visit):
    page = visit.page
    page.goto(visit.url(STEP_1))
    names = page.evaluate("() => Array.from(document.querySelectorAll('article abbr[tabindex=\"0\"]'), a => a.textContent)")
    uses = page.evaluate("() => document.querySelectorAll('article abbr').length")
    assert len(names) == len(set(names)) >= 5 and uses > 2 * len(names)  # one tab stop per term, not one per use
    second = page.locator("article abbr[tabindex='0']").nth(1)
    definition = second.get_attribute("title")
    page.locator("article abbr[tabindex='0']").nth(0).focus()
    page.keyboard.press("Tab")  # from one term to the next, by the keyboard
    assert page.evaluate("() => document.activeElement.textContent") == names[1]
    # Material's tooltip, as on a hover: the second term's. Polled, because the first term's may still be fading
    # out when focus moves on (under a loaded machine the two overlap for a frame).
    page.wait_for_function("d => Array.from(document.querySelectorAll('.md-tooltip2--active'),"
                           " t => t.innerText.trim()).includes(d)", arg=definition)
    assert page.locator(".calc-glossary-tip").is_hidden()  # not a second popover
    assert visit.console_errors == []


# ---- the whole lesson, printed -------------------------------------------------------------------------

PRINTED = """() => {
  const shown = (el) => el && getComputedStyle(el).display !== 'none' && el.getBoundingClientRect().height > 0;
  const steps = Array.from(document.querySelectorAll('article.calc-print-step'));
  const ids = {}; let duplicates = 0;
  document.querySelectorAll('[id]').forEach(el => { if (ids[el.id]) duplicates++; ids[el.id] = 1; });
  return {
    steps: steps.map(a => [Number(a.dataset.printStep), shown(a), a.querySelector('h1').textContent.trim()]),
    breaks: steps.slice(1).every(a => getComputedStyle(a).breakBefore === 'page'),
    nav: ['.md-header', '.md-sidebar--primary', '.md-sidebar--secondary', '.md-footer', '.calc-print-lesson__bar']
      .map(sel => shown(document.querySelector(sel))),
    charts: steps.map(a => Array.from(a.querySelectorAll('[data-chart]')).filter(c => !c.closest('details'))
      .map(c => shown(c.querySelector('.main-svg')))),
    pictures: steps.map(a => Array.from(a.querySelectorAll('figure.calc-figure')).filter(f => !f.closest('details'))
      .map(f => Array.from(f.querySelectorAll(':scope > svg')).some(shown))),  // a wide and a narrow drawing: one shows
    controls: document.querySelectorAll('.calc-print-step :is(form, input, select, button, [data-apply-step]):not(.modebar-btn)').length,
    modebars: Array.from(document.querySelectorAll('.calc-print-step .modebar-container')).filter(shown).length,
    live: document.querySelectorAll('.calc-print-step [data-widget]').length,
    math: document.querySelectorAll('.calc-print-step .arithmatex').length,
    rendered: document.querySelectorAll('.calc-print-step .arithmatex .katex').length,
    duplicates: duplicates,
  };
}"""


def test_the_print_view_holds_the_22_steps_with_their_figures_and_no_navigation(visit):
    page = visit.page
    page.add_init_script("window.__printed = 0; window.print = () => { window.__printed += 1; };")
    page.goto(visit.url(PRINT))
    button = page.locator("[data-print-button]")
    page.wait_for_selector("[data-print-lesson][data-print-state=idle]")
    assert page.locator("article.calc-print-step").count() == 0  # light until asked
    button.click()  # gathers the 22 steps, then opens the print dialog
    page.wait_for_selector("[data-print-lesson][data-print-state=ready]", timeout=240_000)
    page.wait_for_function("() => window.__printed === 1")
    assert button.is_enabled()
    page.emulate_media(media="print")
    printed = page.evaluate(PRINTED)
    expected = [number for number, _ in _steps()]
    assert [number for number, _, _ in printed["steps"]] == expected == list(range(1, 23))
    assert all(shown for _, shown, _ in printed["steps"])
    assert printed["steps"][0][2].startswith("1. A 70B assistant") and printed["steps"][21][2].startswith("22. ")
    assert printed["breaks"] and printed["nav"] == [False] * 5
    # Every unfolded chart drawn and shown, on the steps that have one (all but the drills and the cheat sheet).
    charted = [i + 1 for i, charts in enumerate(printed["charts"]) if charts]
    assert len(charted) >= 18 and all(all(charts) for charts in printed["charts"]), printed["charts"]
    assert sum(len(p) for p in printed["pictures"]) >= 7 and all(all(p) for p in printed["pictures"])
    assert printed["controls"] == 0 and printed["modebars"] == 0 and printed["live"] == 0 and printed["duplicates"] == 0
    assert printed["math"] > 50 and printed["rendered"] == printed["math"]
    assert page.evaluate("() => document.documentElement.dataset.pyodide") is None  # no Python on this page
    page.emulate_media(media="screen")
    button.click()  # a second print: at once, from the steps already on the page
    assert page.evaluate("() => window.__printed") == 2
    assert page.locator("article.calc-print-step").count() == 22
    assert visit.console_errors == []


def test_the_print_view_reads_offline_from_the_precache():
    """The service worker precaches every file in precache.json: the print page, its script, the 22 step pages it
    fetches, and Plotly and KaTeX, which draw their charts and formulas."""
    with open(os.path.join(SITE, "assets", "runtime", "precache.json"), encoding="utf-8") as handle:
        urls = set(json.load(handle)["urls"])
    wanted = {PRINT, "assets/runtime/calc-print-lesson.js", "assets/stylesheets/reader.css",
              "assets/vendor/plotly/plotly-basic.min.js", "assets/vendor/katex/katex.min.js"}
    wanted |= {f"lesson/{slug}/" for _, slug in _steps()}
    assert len(wanted) == 27 and wanted <= urls, sorted(wanted - urls)
