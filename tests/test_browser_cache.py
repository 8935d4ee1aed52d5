"""The browser tier's cached passes (tests/browser_cache.py) follow the build cache's rule: a pass is reused while
its key, the test's code and the site's sources, is unchanged. Runs in a subprocess on a throwaway project."""

import os
import re
import subprocess
import sys

from tests.browser_cache import ROOT

TEST_FILE = '''
import pytest
from helper import answer

@pytest.mark.browser
def test_passes():
    assert answer() == 42

@pytest.mark.browser
def test_fails():
    assert False

def test_not_a_browser_test_is_never_cached():
    pass
'''
CONFTEST = 'pytest_plugins = ["tests.browser_cache"]\n'


def run(folder, *files, **env) -> tuple[int, str]:
    environ = {**os.environ, "CALC_SITE_DIR": str(folder / "site"), "CALC_TEST_CACHE_DIR": str(folder / "cache"),
               "CALC_TEST_SITE_ROOT": str(folder / "project"), "PYTHONPATH": f"{ROOT}{os.pathsep}{folder}", **env}
    for name in ("CI", "FRESH"):
        if name not in env:
            environ.pop(name, None)
    environ.pop("PYTEST_XDIST_WORKER", None)  # the run is no xdist worker: its records go to browser-main.json
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "-o", "markers=browser", *(files or ("test_it.py",))], cwd=folder, env=environ,
                            capture_output=True, text=True, timeout=120)
    found = re.search(r"browser result cache: (\d+) cached pass", result.stdout)
    return (int(found.group(1)) if found else 0), result.stdout


def edit(path, text="\n# edited\n"):
    with open(path, "a", encoding="utf-8") as handle:
        handle.write(text)


def test_a_pass_is_reused_until_its_code_or_the_sites_sources_change(tmp_path):
    project = tmp_path / "project"
    for folder in ("calc", "docs", "hooks", "overrides"):
        (project / folder).mkdir(parents=True)
    (project / "calc" / "units.py").write_text("GIB = 2**30\n")
    (project / "docs" / "page.md").write_text("# A page\n")
    (project / "mkdocs.yml").write_text("site_name: x\n")
    (tmp_path / "site").mkdir()
    (tmp_path / "test_it.py").write_text(TEST_FILE)
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    (tmp_path / "helper.py").write_text("def answer():\n    return 42\n")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    files = ("test_it.py", "test_other.py")

    cached, out = run(tmp_path, *files)
    assert cached == 0 and "1 failed, 3 passed" in out, out
    cached, out = run(tmp_path, *files)
    assert cached == 1 and "1 failed, 3 passed" in out, out  # the pass only: a failure reruns
    assert run(tmp_path, *files, FRESH="1")[0] == 0
    assert run(tmp_path, *files, CI="true")[0] == 0
    edit(tmp_path / "test_other.py")  # another test file, collected beside it: not its code
    assert run(tmp_path, *files)[0] == 1
    for changed in (project / "docs" / "page.md", project / "calc" / "units.py", project / "mkdocs.yml",
                    tmp_path / "helper.py", tmp_path / "test_it.py"):
        edit(changed)  # the site's prose, calc, the configuration, a helper, the test itself
        assert run(tmp_path, *files)[0] == 0, changed
        assert run(tmp_path, *files)[0] == 1, changed  # and reused again from then on
