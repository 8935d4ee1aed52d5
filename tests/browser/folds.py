"""Folds on the lesson's pages: widgets, simulations and drills beyond a step's primary block sit inside
``<details>`` (closed by default). A test that drives one opens its fold first, as a reader would.

A step's test imports ``open_live`` from here instead of ``tests.browser.helpers``: it is the same, except that it
opens every fold that holds one of the given widgets before waiting for them.
"""

from __future__ import annotations

from tests.browser import helpers

_OPEN_FOLDS_JS = """selectors => {
  let opened = 0;
  for (const selector of selectors) {
    for (const element of document.querySelectorAll(selector)) {
      for (let fold = element.closest('details'); fold; fold = fold.parentElement.closest('details')) {
        if (!fold.open) { fold.open = true; opened += 1; }
      }
    }
  }
  return opened;
}"""


def open_folds(page, *selectors: str) -> int:
    """Open every ``<details>`` that holds an element matching one of ``selectors``; return how many opened."""
    return page.evaluate(_OPEN_FOLDS_JS, list(selectors))


def open_live(visit, path: str, *widgets: str):
    """:func:`tests.browser.helpers.open_live`, with the folds holding ``widgets`` opened first."""
    page = visit.page
    page.goto(visit.url(path))
    open_folds(page, *widgets)
    helpers.wait_until_ready(page)
    helpers.wait_until_live(page, *widgets)
    return page
