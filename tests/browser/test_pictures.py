"""The lesson's pictures (calc/diagrams) as a reader sees them: on a phone (390 px, 360 px) every figure fits the screen
without sideways scrolling and its smallest label is at least 11 CSS px; on a desktop (1280 px) too; in light
and dark themes the labels keep their contrast. One picture of each kind shows, the other is display:none.

    .venv/bin/python -m tests.browser.test_pictures [out_dir]

prints the same measurements for every figure and writes a screenshot of each (1280 and 390 px, light and
dark) to build/screenshots-pictures/ (or out_dir).
"""

from __future__ import annotations

import os
import sys

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.site, pytest.mark.xdist_group("browser")]

#: The step pages that hold a picture, and the pictures' ids on each.
PAGES = {
    "lesson/02-kv-cache-arithmetic/": ["kv-per-layer-head"],
    "lesson/05-paged-attention/": ["block-table"],
    "lesson/06-twice-the-traffic/": ["chunked-prefill"],
    "lesson/09-speculative-decoding/": ["draft-verify-accept"],
    "lesson/12-prefix-caching/": ["hash-chain"],
    "lesson/18-disaggregation/": ["kv-handoff", "pipeline-bubble"],
    "lesson/20-the-fix/": ["routing-into-pools"],
}
PHONE = {"width": 390, "height": 844}
DESKTOP = {"width": 1280, "height": 900}
SMALL_PHONE = {"width": 360, "height": 780}  # the narrow layouts are drawn for its 328 px column
#: Either side of the stylesheet's switch (40em = 640 px): the narrow layout at its widest, the wide at its narrowest.
EDGES = [{"width": 639, "height": 900}, {"width": 640, "height": 900}]
MIN_TEXT_PX = 11
MIN_CONTRAST = 4.5  # WCAG AA for text under 18 px

#: Per figure: its width, the viewport's, whether it scrolls, and for the SVG that shows: its scale, its smallest
#: label in CSS px after scaling, labels drawn outside the picture, and the worst text contrast on its fill.
MEASURE_JS = r"""
(ids) => {
  const luminance = (rgb) => {
    const [r, g, b] = rgb.match(/[\d.]+/g).slice(0, 3).map(Number).map(v => v / 255)
      .map(c => c <= 0.03928 ? c / 12.92 : Math.pow((c + 0.055) / 1.055, 2.4));
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
  };
  const contrast = (a, b) => { const [x, y] = [luminance(a), luminance(b)].sort((p, q) => q - p);
                               return (x + 0.05) / (y + 0.05); };
  const opaque = (c) => c && c !== "none" && !/rgba\(.*, 0\)$/.test(c) && c !== "transparent";
  const pageBackground = () => {
    for (let el = document.querySelector("article"); el; el = el.parentElement) {
      const c = getComputedStyle(el).backgroundColor; if (opaque(c)) return c;
    }
    return "rgb(255, 255, 255)";
  };
  const background = pageBackground();
  // A translucent fill (Material's --md-default-fg-color--lightest) as it shows over the page.
  const blend = (over, under) => {
    const o = over.match(/[\d.]+/g).map(Number), u = under.match(/[\d.]+/g).map(Number);
    const a = o.length > 3 ? o[3] : 1;
    return `rgb(${[0, 1, 2].map(i => o[i] * a + u[i] * (1 - a)).join(", ")})`;
  };
  const viewport = document.documentElement.clientWidth;
  return ids.map((id) => {
    const figure = document.getElementById("figure-" + id);
    if (!figure) return {id, missing: true};
    const shown = [...figure.querySelectorAll("svg")].filter(s => getComputedStyle(s).display !== "none"
                                                               && s.getBoundingClientRect().width > 0);
    const box = figure.getBoundingClientRect();
    const result = {id, viewport, figure_left: box.left, figure_right: box.right, figure_width: box.width,
                    scrolls: figure.scrollWidth > figure.clientWidth + 1,
                    page_scrolls: document.documentElement.scrollWidth > viewport + 1,
                    svgs: figure.querySelectorAll("svg").length, shown: shown.length,
                    shown_exposed: shown.map(s => s.getAttribute("aria-hidden") !== "true").length};
    if (shown.length !== 1) return result;
    const svg = shown[0];
    const view = svg.viewBox.baseVal;
    const rect = svg.getBoundingClientRect();
    result.layout = svg.dataset.layout || "";
    result.svg_right = rect.right;
    result.scale = rect.width / view.width;
    let smallest = Infinity, outside = [], worst = Infinity, worstLabel = "";
    // The shapes a label may sit on, with their fills, to find each label's background.
    const fills = [...svg.querySelectorAll("rect, polygon")].map(s => ({box: s.getBBox(),
                                                                         fill: getComputedStyle(s).fill}));
    for (const t of svg.querySelectorAll("text")) {
      const size = parseFloat(getComputedStyle(t).fontSize) * svg.getScreenCTM().a;
      smallest = Math.min(smallest, size);
      const b = t.getBBox();
      if (b.x < -0.5 || b.y < -0.5 || b.x + b.width > view.width + 0.5 || b.y + b.height > view.height + 0.5)
        outside.push(t.textContent);
      const cx = b.x + b.width / 2, cy = b.y + b.height / 2;
      let under = background;
      for (const f of fills) if (opaque(f.fill) && cx >= f.box.x && cx <= f.box.x + f.box.width &&
                                 cy >= f.box.y && cy <= f.box.y + f.box.height) under = f.fill;
      const ratio = contrast(getComputedStyle(t).fill, blend(under, background));
      if (ratio < worst) { worst = ratio; worstLabel = t.textContent; }
    }
    // Labels overlapping each other (two labels drawn on one spot are not legible).
    const boxes = [...svg.querySelectorAll("text")].map(t => [t.getBBox(), t.textContent]);
    const overlaps = [];
    for (let i = 0; i < boxes.length; i++) for (let j = i + 1; j < boxes.length; j++) {
      const [a, an] = boxes[i], [c, cn] = boxes[j];
      const dx = Math.min(a.x + a.width, c.x + c.width) - Math.max(a.x, c.x);
      const dy = Math.min(a.y + a.height, c.y + c.height) - Math.max(a.y, c.y);
      if (dx > 1 && dy > 2) overlaps.push(an + " / " + cn);
    }
    // Lines (arrow shafts) through a label, and labels running out of the box they sit in.
    const crosses = (x1, y1, x2, y2, b) => {
      const [bx0, by0, bx1, by1] = [b.x + 0.5, b.y + 0.5, b.x + b.width - 0.5, b.y + b.height - 0.5];
      let low = 0, high = 1;
      for (const [p, q] of [[-(x2 - x1), x1 - bx0], [x2 - x1, bx1 - x1], [-(y2 - y1), y1 - by0], [y2 - y1, by1 - y1]]) {
        if (p === 0) { if (q < 0) return false; }
        else if (p < 0) low = Math.max(low, q / p); else high = Math.min(high, q / p);
      }
      return low < high;
    };
    const lines = [...svg.querySelectorAll("line")].map(l => ["x1", "y1", "x2", "y2"].map(k => l[k].baseVal.value));
    const rects = [...svg.querySelectorAll("rect")].map(r => r.getBBox());
    for (const [b, name] of boxes) {
      if (lines.some(([x1, y1, x2, y2]) => crosses(x1, y1, x2, y2, b))) overlaps.push("a line through " + name);
      const cx = b.x + b.width / 2, cy = b.y + b.height / 2;
      const holders = rects.filter(r => cx >= r.x && cx <= r.x + r.width && cy >= r.y && cy <= r.y + r.height)
                           .sort((p, q) => p.width * p.height - q.width * q.height);
      if (holders.length) {
        const r = holders[0];
        if (b.x < r.x - 0.5 || b.x + b.width > r.x + r.width + 0.5 || b.y < r.y - 0.5 || b.y + b.height > r.y + r.height + 0.5)
          overlaps.push(name + " out of its box");
      }
    }
    Object.assign(result, {smallest_text_px: smallest, outside, overlaps, worst_contrast: worst,
                           worst_contrast_label: worstLabel});
    return result;
  });
}
"""


def measure(page, ids: list[str]) -> list[dict]:
    return page.evaluate(MEASURE_JS, ids)


def open_page(visit, path: str):
    """Open ``path`` with its stylesheets and fonts, without the Python runtime (the pictures are drawn at build:
    booting Pyodide on every page would only slow the measuring)."""
    page = visit.page
    if not getattr(visit, "runtime_blocked", False):
        page.route("**/assets/runtime/**", lambda route: route.abort())
        visit.runtime_blocked = True
    page.goto(visit.url(path))
    page.wait_for_selector("figure.calc-figure")
    page.evaluate("document.fonts.ready")
    return page


def problems(figure: dict) -> list[str]:
    """What keeps a measured figure from being legible, in words (empty when nothing does)."""
    if figure.get("missing"):
        return ["figure missing"]
    found = []
    if figure["shown"] != 1:
        found.append(f"{figure['shown']} pictures shown of {figure['svgs']} (one layout must show)")
        return found
    if figure["scrolls"] or figure["page_scrolls"]:
        found.append("scrolls sideways")
    if figure["figure_right"] > figure["viewport"] + 0.5 or figure["svg_right"] > figure["viewport"] + 0.5:
        found.append(f"wider than the screen ({figure['svg_right']:.0f} > {figure['viewport']} px)")
    if figure["smallest_text_px"] < MIN_TEXT_PX - 0.05:
        found.append(f"smallest label {figure['smallest_text_px']:.1f} px < {MIN_TEXT_PX}")
    if figure["outside"]:
        found.append(f"labels cut at the edge: {figure['outside']}")
    if figure["overlaps"]:
        found.append(f"labels overlap: {figure['overlaps']}")
    if figure["worst_contrast"] < MIN_CONTRAST:
        found.append(f"label {figure['worst_contrast_label']!r} at contrast {figure['worst_contrast']:.2f}")
    return found


#: The brief's screens in both themes, and in the light one a small phone and either side of the switch.
#: After a resize, measured once no CSS transition runs (Material's sidebars move for about 0.1 s, the page 54 px
#: wider than the window meanwhile at 1280 px after 390 px).
TWO_FRAMES = "() => new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)))"
NO_TRANSITION = """() => document.getAnimations().every(
    (animation) => !(animation instanceof CSSTransition) || animation.playState !== "running")"""
#: The widths each theme is measured at: every width in light, the phone and the desktop in dark.
WIDTHS = {"light": [PHONE, DESKTOP, SMALL_PHONE, *EDGES], "dark": [PHONE, DESKTOP]}


@pytest.mark.parametrize("scheme", WIDTHS)
def test_every_picture_fits_the_screen_with_legible_labels(browser, site_server, scheme):
    """Each page is opened once per theme and measured at every width of :data:`WIDTHS`, the window resized
    in between, as when a reader turns a phone or narrows a window: a picture's layout is chosen by the
    stylesheet alone (no script measures it), so the resized page shows what a page opened at that width
    shows, and one load serves five widths (35 fewer page loads than a context per width)."""
    from tests.browser.conftest import Visit

    visit = Visit(browser, site_server, color_scheme=scheme, viewport=WIDTHS[scheme][0])
    try:
        failures = {}
        for path, ids in PAGES.items():
            page = open_page(visit, path)
            for viewport in WIDTHS[scheme]:
                page.set_viewport_size(viewport)
                page.wait_for_function("(width) => window.innerWidth === width", arg=viewport["width"])
                page.evaluate(TWO_FRAMES)  # the resize's styles computed: its transitions exist
                page.wait_for_function(NO_TRANSITION)
                for figure in measure(page, ids):
                    if problems(figure):
                        failures[f"{figure['id']} at {viewport['width']} px"] = problems(figure)
        assert failures == {}, f"{scheme}: {failures}"
        assert visit.external_requests == []
    finally:
        visit.close()


def main(out_dir: str) -> int:
    from playwright.sync_api import sync_playwright

    from tests.browser.conftest import CHROMIUM_FLAGS, SiteServer, Visit, built_site_url, chromium_path

    os.makedirs(out_dir, exist_ok=True)
    server = SiteServer(built_site_url())
    server.start()
    bad = 0
    try:
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=chromium_path(), args=CHROMIUM_FLAGS)
            for viewport in (PHONE, DESKTOP):
                for scheme in ("light", "dark"):
                    visit = Visit(browser, server, color_scheme=scheme, viewport=viewport)
                    for path, ids in PAGES.items():
                        page = open_page(visit, path)
                        for figure in measure(page, ids):
                            found = problems(figure)
                            bad += bool(found)
                            print(f"{viewport['width']:>4} {scheme:<5} {figure['id']:<20} "
                                  f"layout={figure.get('layout', '?'):<6} width={figure.get('figure_width', 0):.0f} "
                                  f"scale={figure.get('scale', 0):.2f} "
                                  f"min_text={figure.get('smallest_text_px', 0):.1f}px "
                                  f"contrast={figure.get('worst_contrast', 0):.2f} "
                                  + ("OK" if not found else "; ".join(found)))
                            target = os.path.join(out_dir, f"{figure['id']}-{viewport['width']}-{scheme}.png")
                            element = page.locator(f"#figure-{figure['id']}")
                            element.scroll_into_view_if_needed()
                            element.screenshot(path=target)
                    visit.close()
            browser.close()
    finally:
        server.stop()
    print(f"{bad} figure views with a problem; screenshots in {out_dir}")
    return 1 if bad else 0


if __name__ == "__main__":
    ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    sys.exit(main(sys.argv[1] if len(sys.argv) > 1 else os.path.join(ROOT, "build", "screenshots-pictures")))
