"""The production allow-list holds the pages' widgets only: the test-only busy widget is not built into the site."""

import json
import os

from calc.widgets import allowed_names, load_module, page_modules
from calc.widgets.runtime import handle

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_busy_widget_is_off_the_production_allow_list():
    assert "diagnostics" not in page_modules() and not load_module("diagnostics")
    assert not [name for name in allowed_names() if name.startswith("diagnostics.")]
    answer = json.loads(handle('{"id": 1, "op": "call", "fn": "diagnostics.busy", "args": {"seconds": "0.1"}}'))
    assert (answer["ok"], answer["error"]["field"]) == (False, "widget")


def test_the_busy_widget_lives_with_the_browser_tests_that_serve_it():
    assert not os.path.exists(os.path.join(ROOT, "calc", "widgets", "diagnostics.py"))
    with open(os.path.join(ROOT, "tests", "browser", "diagnostics_widget.py"), encoding="utf-8") as handle_:
        assert "def busy(" in handle_.read()
