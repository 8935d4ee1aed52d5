"""The runtime's scripts never turn a string into code or markup: text only, no eval."""

import os
import re

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RUNTIME = os.path.join(ROOT, "docs", "assets", "runtime")
FORBIDDEN = re.compile(r"\.innerHTML\b|\.outerHTML\b|insertAdjacentHTML|document\.write|\beval\s*\(|new\s+Function\b|"
                       r"setTimeout\s*\(\s*['\"`]|setInterval\s*\(\s*['\"`]")


def test_runtime_scripts_insert_text_only_and_evaluate_nothing():
    offenders = []
    for name in sorted(os.listdir(RUNTIME)):
        if name.endswith((".js", ".mjs")):
            with open(os.path.join(RUNTIME, name), encoding="utf-8") as handle:
                for number, line in enumerate(handle, 1):
                    if FORBIDDEN.search(line):
                        offenders.append(f"{name}:{number}: {line.strip()}")
    assert offenders == []


def test_the_check_would_catch_what_it_looks_for():
    assert FORBIDDEN.search("el.innerHTML = text")
    assert FORBIDDEN.search("const f = new Function('return 1')")
    assert FORBIDDEN.search("eval(code)")
    assert not FORBIDDEN.search("el.textContent = text")
