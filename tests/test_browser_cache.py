"""The browser tier's result cache (tests/browser_cache.py) reuses a pass only while what the test read is
unchanged: a run in a subprocess on a throwaway site, then the same run after changing a fetched file's bytes."""

import os
import re
import subprocess
import sys

from tests.browser_cache import ROOT

TEST_FILE = '''
import pytest
from tests import browser_cache

@pytest.mark.browser
def test_reads_a_page():
    browser_cache.RECORDER.note_url("http://127.0.0.1:8741/page/")  # as a context's request event reports it
    assert True

@pytest.mark.browser
def test_fails():
    browser_cache.RECORDER.note_url("http://127.0.0.1:8741/page/")
    assert False

@pytest.mark.browser
def test_goes_off_the_machine():
    browser_cache.RECORDER.note_url("https://example.com/x.js")

def test_not_a_browser_test_is_never_cached():
    pass
'''
CONFTEST = 'pytest_plugins = ["tests.browser_cache"]\n'


def run(folder, *files, **env) -> tuple[int, str]:
    environ = {**os.environ, "CALC_SITE_DIR": str(folder / "site"), "CALC_TEST_CACHE_DIR": str(folder / "cache"),
               "PYTHONPATH": ROOT, **env}
    environ.pop("CI", None) if "CI" not in env else None
    environ.pop("FRESH", None) if "FRESH" not in env else None
    environ.pop("PYTEST_XDIST_WORKER", None)  # the run is no xdist worker: its records go to main.json
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-p", "no:xdist",
                             "-o", "markers=browser", *(files or ("test_it.py",))], cwd=folder, env=environ,
                            capture_output=True, text=True, timeout=120)
    found = re.search(r"browser result cache: (\d+) cached pass", result.stdout)
    return (int(found.group(1)) if found else 0), result.stdout


def test_a_pass_is_reused_until_a_fetched_file_changes(tmp_path):
    (tmp_path / "site" / "page").mkdir(parents=True)
    page = tmp_path / "site" / "page" / "index.html"
    page.write_text("<p>1</p>")
    (tmp_path / "test_it.py").write_text(TEST_FILE)
    (tmp_path / "conftest.py").write_text(CONFTEST)

    cached, out = run(tmp_path)
    assert cached == 0 and "2 failed" not in out and "1 failed" in out, out
    cached, out = run(tmp_path)
    assert cached == 1 and "1 failed, 3 passed" in out, out  # only the pass that stayed on the machine
    page.write_text("<p>2</p>")  # the fetched page's bytes changed: the test runs again
    cached, out = run(tmp_path)
    assert cached == 0 and "1 failed, 3 passed" in out, out
    cached, _ = run(tmp_path)
    assert cached == 1
    assert run(tmp_path, FRESH="1")[0] == 0
    assert run(tmp_path, CI="true")[0] == 0
    (tmp_path / "test_it.py").write_text(TEST_FILE + "\n# edited\n")  # the test file itself is part of the key
    assert run(tmp_path)[0] == 0


def test_another_test_file_is_not_part_of_the_key_but_a_helper_is(tmp_path):
    (tmp_path / "site" / "page").mkdir(parents=True)
    (tmp_path / "site" / "page" / "index.html").write_text("<p>1</p>")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "helper.py").write_text("def url():\n    return 'http://127.0.0.1:8741/page/'\n")
    (tmp_path / "test_it.py").write_text(
        "import pytest\nfrom tests import browser_cache\nfrom helper import url\n\n"
        "@pytest.mark.browser\ndef test_reads_a_page():\n    browser_cache.RECORDER.note_url(url())\n")
    (tmp_path / "test_other.py").write_text("def test_other():\n    pass\n")
    files = ("test_it.py", "test_other.py")
    assert run(tmp_path, *files)[0] == 0
    assert run(tmp_path, *files)[0] == 1
    (tmp_path / "test_other.py").write_text("def test_other():\n    assert 1\n")  # collected beside it, not read
    assert run(tmp_path, *files)[0] == 1
    (tmp_path / "helper.py").write_text("def url():\n    return 'http://127.0.0.1:8741/page/'  # edited\n")
    assert run(tmp_path, *files)[0] == 0  # what the test imports is part of its key


def test_a_record_of_a_test_that_is_gone_does_not_keep_its_module_from_being_reused(tmp_path):
    import json

    (tmp_path / "site" / "page").mkdir(parents=True)
    (tmp_path / "site" / "page" / "index.html").write_text("<p>1</p>")
    (tmp_path / "conftest.py").write_text(CONFTEST)
    (tmp_path / "test_it.py").write_text(TEST_FILE)
    run(tmp_path)
    assert run(tmp_path)[0] == 1
    # A record left by a test of the same module that no longer exists, whose file has changed since.
    record_file = tmp_path / "cache" / "main.json"
    records = json.loads(record_file.read_text())
    stale = dict(next(iter(records.values())), files={str(tmp_path / "site" / "page" / "index.html"): "0" * 64})
    records["test_it.py::test_removed_long_ago"] = stale
    record_file.write_text(json.dumps(records))
    assert run(tmp_path)[0] == 1
    assert "test_it.py::test_removed_long_ago" not in json.loads(record_file.read_text())
