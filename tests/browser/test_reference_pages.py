"""The reference pages: primer and GB/GiB widgets live in Chromium, glossary and references checked in the built site.

The browser tests drive the built site (``make build``) in headless Chromium with every
request off 127.0.0.1 aborted; the static tests read site/ and compare it with calc.
"""

from __future__ import annotations

import os
import re
import urllib.parse

import pytest
from bs4 import BeautifulSoup

from calc.catalog import get_gpu
from tests.browser.helpers import (ROOT, SITE, assert_outputs, chart_traces, figure_traces, fill_in, open_live,
                                   output_text, recompute, wait_for_any_error)

PAGES = ("primer", "gb-vs-gib", "glossary", "references", "credits")


def built(page: str) -> BeautifulSoup:
    path = os.path.join(SITE, page, "index.html")
    if not os.path.exists(path):
        pytest.fail("the site is not built: run `make build` (make test does it)")
    with open(path, encoding="utf-8") as handle:
        return BeautifulSoup(handle.read(), "html.parser")


# --- in the browser ------------------------------------------------------------------------------

PRIMER = '[data-widget="primer.request_timeline"]'


@pytest.fixture(scope="module")
def primer(module_visit):
    """The primer with its widget live, booted once for the two tests below (the one that leaves the built
    inputs as it found them first)."""
    open_live(module_visit, "primer/", PRIMER)
    return module_visit


@pytest.mark.browser
@pytest.mark.site
@pytest.mark.xdist_group("browser")
def test_primer_says_when_the_model_does_not_fit(primer):
    visit, page = primer, primer.page
    fill_in(page, PRIMER, "tp", "1")
    message = wait_for_any_error(page, PRIMER)
    assert message.startswith("Llama 3.1 70B does not fit on 1 x H100 SXM 80GB in bf16")
    assert page.get_attribute(PRIMER, "data-state") == "error"
    recompute(page, PRIMER, "itl_first_s", tp="8")
    assert page.locator(f"{PRIMER} [data-error]").inner_text() == ""
    recompute(page, PRIMER, "itl_first_s", tp="4")  # the built default again, for the test after on this page
    assert visit.console_errors == []


@pytest.mark.browser
@pytest.mark.site
@pytest.mark.xdist_group("browser")
def test_primer_goes_live_and_recomputes_like_cpython(primer):
    visit, page = primer, primer.page
    expected = recompute(page, PRIMER, "ttft_s", weights="fp8", prompt_tokens="8192")
    assert_outputs(page, PRIMER, expected, ("itl_first_s", "e2e_s", "decode_share", "kv_held_bytes"))
    assert chart_traces(page, PRIMER, "timeline", "x", "y")[0] == figure_traces(expected, "timeline", "x", "y")[0]
    cells = page.locator(f'{PRIMER} table[data-table="steps"] tbody td').all_inner_texts()
    assert cells == [cell for row in expected["tables"]["steps"]["rows"] for cell in row]
    assert visit.console_errors == []


CONVERT = '[data-widget="gb_vs_gib.convert"]'
GPU_MEMORY = '[data-widget="gb_vs_gib.gpu_memory"]'


@pytest.mark.browser
@pytest.mark.site
@pytest.mark.xdist_group("browser")
def test_converter_and_gpu_readings_go_live(visit):
    page = open_live(visit, "gb-vs-gib/", CONVERT)
    expected = recompute(page, CONVERT, "GB", unit="MiB", value="81559")
    assert_outputs(page, CONVERT, expected)

    expected = recompute(page, GPU_MEMORY, "runtime_mib", gpu="mi300x")
    assert output_text(page, GPU_MEMORY, "difference") == expected["outputs"]["difference"]["text"]

    fill_in(page, CONVERT, "value", "-3")
    assert "Amount (value)" in wait_for_any_error(page, CONVERT)
    assert visit.console_errors == []


@pytest.mark.browser
@pytest.mark.site
@pytest.mark.xdist_group("browser")
def test_glossary_and_references_render_offline_with_hover_definitions(visit):
    page = visit.page
    for path in ("glossary/", "references/", "credits/"):
        page.goto(visit.url(path))
        page.wait_for_selector("article h1")
        titles = page.eval_on_selector_all("article abbr[title]", "els => els.map(e => e.textContent)")
        if path != "credits/":
            assert {"KV", "TTFT"} <= set(titles), path
    assert visit.console_errors == []


# --- in the built HTML ---------------------------------------------------------------------------

GLOSSARY_TERMS = (
    "prefill", "decode", "kv-cache", "paged-attention", "continuous-batching", "chunked-prefill", "preemption",
    "ttft", "itl", "tpot", "e2e-latency", "goodput", "gqa", "mla", "flashattention", "quantization", "int8-int4",
    "fp8", "bf16", "speculative-decoding", "acceptance-rate", "prefix-caching", "radixattention",
    "tensor-parallelism", "pipeline-parallelism", "disaggregation", "roofline", "arithmetic-intensity",
    "ridge-point", "hbm", "sram", "gpu-util", "gb-gib", "queue-depth", "kv-cache-use", "warm-headroom",
    "scale-up-delay", "cost-per-million-tokens",
)


@pytest.mark.site
def test_glossary_defines_every_term_of_the_lesson():
    terms = {dt.get("id") for dt in built("glossary").select("article dl dt")}
    missing = [t for t in GLOSSARY_TERMS if t not in terms]
    assert missing == []
    for dd in built("glossary").select("article dl dd"):
        assert dd.get_text(strip=True), "an empty definition"


@pytest.mark.site
def test_internal_links_of_the_reference_pages_resolve():
    broken = []
    for name in PAGES:
        base = f"http://site/{name}/"
        for anchor in built(name).select("article a[href]"):
            href = anchor["href"]
            if href.startswith(("http://", "https://", "mailto:")) and not href.startswith("http://site/"):
                continue
            target = urllib.parse.urlparse(urllib.parse.urljoin(base, href))
            path = target.path.lstrip("/")
            file = os.path.join(SITE, path, "index.html") if not path.endswith(".html") else os.path.join(SITE, path)
            if not os.path.exists(file):
                broken.append(f"{name}: {href}")
                continue
            if target.fragment:
                with open(file, encoding="utf-8") as handle:
                    if not BeautifulSoup(handle.read(), "html.parser").find(id=target.fragment):
                        broken.append(f"{name}: {href} (no #{target.fragment})")
    assert broken == []


@pytest.mark.site
def test_acronyms_carry_hover_definitions_on_every_page():
    for name in ("primer", "gb-vs-gib", "lesson/02-kv-cache-arithmetic"):
        titles = {a.get_text(): a["title"] for a in built(name).select("article abbr[title]")}
        assert titles.get("KV", "").startswith("Key and value"), name
    gib = {a.get_text(): a["title"] for a in built("gb-vs-gib").select("article abbr[title]")}
    assert "2^30" in gib["GiB"] and "10^9" in gib["GB"]


@pytest.mark.site
def test_references_quote_the_catalog_price_with_its_date():
    h100 = get_gpu("h100-sxm-80gb")
    text = " ".join(built("references").select_one("article").get_text(" ").split())
    assert f"listed {h100.price_date}" in text
    assert f"Lambda ${h100.price_usd_per_hour:.2f}" in text
    for other in re.findall(r"(Modal|Replicate) \$(\d+\.\d\d)", h100.price_source):
        assert f"{other[0]} ${other[1]}" in text


@pytest.mark.site
def test_references_list_every_arxiv_id_cited_in_calc():
    cited = set()
    for folder, _, files in os.walk(os.path.join(ROOT, "calc")):
        for name in files:
            if name.endswith(".py"):
                with open(os.path.join(folder, name), encoding="utf-8") as handle:
                    cited.update(re.findall(r"arXiv[ :]?(\d{4}\.\d{4,5})", handle.read()))
    listed = set(re.findall(r"arXiv (\d{4}\.\d{4,5})", built("references").select_one("article").get_text(" ")))
    assert cited - listed == set()
