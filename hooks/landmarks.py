"""Every landmark of a built page gets a name of its own (axe: landmark-unique).

A screen reader lists a page's landmarks (navigation, forms, regions) by name, so two with
the same name, or one with none, cannot be told apart. Two places break that on this site:

* Material's navigation, with ``navigation.indexes``: a section whose title links to its index
  page is toggled by a ``<label>`` holding only an icon, and the section's ``<nav>`` is named
  by that label (``aria-labelledby``). The template names the label itself: the partial override
  ``overrides/partials/nav-item.html`` gives it the section's title as its ``aria-label``.
* Widget forms: a page may hold the same widget twice (a deep dive's two presets of one
  simulation), whose forms then carry the same name. Repeats are numbered on the page, here.

Run on each page's final HTML (``on_post_page`` in :mod:`site_hooks`).
"""

from __future__ import annotations

import re
from collections import Counter

__all__ = ["number_repeated_form_names", "unique_landmarks"]

# A widget's form, its attributes in any order (ElementTree writes them sorted): the name is group 2.
_FORM_NAME = re.compile(r'(<form (?=[^>]*\bclass="calc-controls[" ])[^>]*?\baria-label=")([^"]*)(")')


def number_repeated_form_names(html: str) -> str:
    """Number the widget forms whose name another form on the page has too: "... (1 of 2)", "... (2 of 2)".

    >>> names = ("Scenario: a", "Scenario: a", "B")
    >>> page = ''.join(f'<form aria-label="{name}" class="calc-controls">' for name in names)
    >>> page += '<form aria-label="B" class="md-search__form">'  # not a widget's
    >>> re.findall(r'aria-label="([^"]*)"', number_repeated_form_names(page))
    ['Scenario: a (1 of 2)', 'Scenario: a (2 of 2)', 'B', 'B']
    """
    totals = Counter(match.group(2) for match in _FORM_NAME.finditer(html))
    seen: Counter = Counter()

    def numbered(match: re.Match) -> str:
        name = match.group(2)
        if totals[name] < 2:
            return match.group(0)
        seen[name] += 1
        return f"{match.group(1)}{name} ({seen[name]} of {totals[name]}){match.group(3)}"

    return _FORM_NAME.sub(numbered, html)


def unique_landmarks(html: str) -> str:
    """The landmarks of one page's HTML, each with a name of its own (the forms numbered; the nav is the template's)."""
    return number_repeated_form_names(html)
