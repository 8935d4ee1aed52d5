"""The boot's head script (docs/assets/runtime/head.js) and the boot's workers, without a browser: the head
script's logic under node's test runner (tests/js/head.test.mjs, on the source and on the minified text the build
inlines), and TypeScript's checker over head.js (strict), worker.mjs and boot-inflate*.mjs (tsconfig.page.json,
tsconfig.workers.json). Both need Node and node_modules (`make setup`), as the build does."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "hooks"))
import head_script  # noqa: E402

TSC = os.path.join(ROOT, "node_modules", ".bin", "tsc")
TSCONFIGS = ("tsconfig.page.json", "tsconfig.workers.json")
NODE_SUMMARY = re.compile(r"^# (pass|fail) (\d+)$", re.MULTILINE)


def _tsc(*args: str, cwd: str = ROOT) -> subprocess.CompletedProcess:
    return subprocess.run([TSC, *args], cwd=cwd, capture_output=True, text=True, timeout=120, check=False)


@pytest.fixture(scope="module")
def minified() -> str:
    return head_script.head_script(ROOT)


def test_the_head_scripts_logic_holds_in_source_and_minified(minified, tmp_path):
    path = tmp_path / "head.min.js"
    path.write_text(minified, encoding="utf-8")
    done = subprocess.run(["node", "--test", "--test-reporter=tap", os.path.join(ROOT, "tests", "js", "head.test.mjs")],
                          cwd=ROOT, capture_output=True, text=True, timeout=120, check=False,
                          env={**os.environ, "HEAD_SCRIPT_MINIFIED": str(path)})
    counts = dict((kind, int(n)) for kind, n in NODE_SUMMARY.findall(done.stdout))
    assert done.returncode == 0 and counts.get("fail") == 0, done.stdout[-4000:] + done.stderr[-2000:]
    # Every case ran twice, once per variant (a case that did not run is not a pass).
    assert counts["pass"] == 2 * len(re.findall(r"^  test\(`\$\{label\}", _test_source(), re.MULTILINE)) > 0


def _test_source() -> str:
    with open(os.path.join(ROOT, "tests", "js", "head.test.mjs"), encoding="utf-8") as handle:
        return handle.read()


@pytest.mark.parametrize("tsconfig", TSCONFIGS)
def test_the_boot_scripts_type_check(tsconfig):
    done = _tsc("-p", tsconfig)
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_checker_fails_on_a_type_error(tmp_path):
    """The check can fail: head.js with one wrong type, checked with the page's settings, is an error."""
    with open(os.path.join(ROOT, head_script.SOURCE), encoding="utf-8") as handle:
        source = handle.read()
    broken = source.replace("const RELEASE_AFTER_MS = 15000;", 'const RELEASE_AFTER_MS = "15000";', 1)
    assert broken != source
    (tmp_path / "head.js").write_text(broken.replace("setTimeout(release, RELEASE_AFTER_MS)",
                                                     "setTimeout(release, RELEASE_AFTER_MS.toFixed(0))"), "utf-8")
    shutil.copy(os.path.join(ROOT, "tsconfig.page.json"), tmp_path / "tsconfig.json")
    config = (tmp_path / "tsconfig.json").read_text("utf-8").replace("docs/assets/runtime/head.js", "head.js")
    (tmp_path / "tsconfig.json").write_text(config, "utf-8")
    done = _tsc("-p", str(tmp_path / "tsconfig.json"))
    assert done.returncode != 0 and "head.js" in done.stdout and "toFixed" in done.stdout, done.stdout


def test_the_boot_scripts_ask_for_the_check():
    for name in ("head.js", "worker.mjs", "boot-inflate-worker.mjs", "boot-inflate.mjs"):
        with open(os.path.join(ROOT, "docs", "assets", "runtime", name), encoding="utf-8") as handle:
            assert handle.readline().strip() == "// @ts-check", name


def test_the_minified_script_is_smaller_one_statement_and_safe_to_inline(minified):
    with open(os.path.join(ROOT, head_script.SOURCE), encoding="utf-8") as handle:
        source = handle.read()
    assert len(minified) < len(source) / 3
    assert minified.startswith("(function(){") and minified.endswith("})();") and "\n" not in minified
    assert "</script" not in minified.lower() and "//" not in minified.replace("\\/", "")  # no comment left
    # The same text each time (the CSP hash follows from it), from the cache or from esbuild.
    assert head_script.minify(source, ROOT) == minified == head_script.head_script(ROOT)


def test_the_cache_key_follows_the_source():
    assert head_script.cache_key("a", ROOT) != head_script.cache_key("b", ROOT)
    assert head_script.cache_key("a", ROOT) == head_script.cache_key("a", ROOT)


def test_a_string_that_would_end_the_inline_script_is_escaped():
    assert head_script.minify('document.write("</script>");', ROOT) == 'document.write("<\\/script>");'


def test_a_syntax_error_says_where(tmp_path):
    with pytest.raises(head_script.HeadScriptError, match="esbuild could not minify"):
        head_script.minify("(function(){", ROOT)


BROWSER_TEST = re.compile(r"^//\s+B (test_\w+\.py)(?:::(test_\w+))?", re.MULTILINE)
UNIT_TEST = re.compile(r'^//\s+U "([^"]+)"', re.MULTILINE)


def test_every_test_the_boots_account_names_exists():
    """head.js's header maps each boot combination to its tests: each named test is there."""
    with open(os.path.join(ROOT, head_script.SOURCE), encoding="utf-8") as handle:
        header = handle.read().split("\n(function", 1)[0]
    browser = BROWSER_TEST.findall(header)
    units = UNIT_TEST.findall(header)
    assert len(browser) >= 14 and len(units) >= 9, (browser, units)
    for file_name, test_start in browser:
        path = os.path.join(ROOT, "tests", "browser", file_name)
        assert os.path.isfile(path), file_name
        with open(path, encoding="utf-8") as handle:
            source = handle.read()
        assert not test_start or re.search(rf"^def {test_start}\w*\(", source, re.MULTILINE), (file_name, test_start)
    unit_source = _test_source()
    for title in units:
        assert f"test(`${{label}}: {title}" in unit_source, title
    # ...and every unit test is named there.
    assert len(re.findall(r"^  test\(`\$\{label\}", unit_source, re.MULTILINE)) == len(units)
