"""A page module's facts as the build filled them in: read from the build cache while calc is unchanged.

`make test` builds the site first, and the build keeps each page module's facts in ``build/calc-cache``, keyed
on calc's sources (hooks/build_cache.py; tests/site/test_build_cache.py checks that an edit
invalidates them). A site test that compares the built pages with their facts reads them there instead of
running ``facts()`` again: step 19's take about 5 CPU s. Without a valid entry (no build cache, or calc changed
since the build) they are computed as the build computes them.

>>> built_facts("no_such_page_module")
{}
>>> built_facts("kv_cache_arithmetic")["conversation_8b"]
'524 MB'
"""

from __future__ import annotations

import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if os.path.join(ROOT, "hooks") not in sys.path:
    sys.path.insert(0, os.path.join(ROOT, "hooks"))

import functools  # noqa: E402

import build_cache  # noqa: E402 (hooks/, on the path above)
import entries  # noqa: E402
import facts as facts_hook  # noqa: E402


@functools.lru_cache(maxsize=1)
def _digests() -> build_cache.Digests:
    return build_cache.project_digests()  # calc as it is now: an entry of another calc is another key


def built_facts(module_name: str) -> dict[str, str]:
    """The facts of page module ``module_name`` as text, as the build put them in the pages."""
    cached = build_cache.load("facts", entries.key("facts", module_name, _digests()))
    return cached if cached is not None else facts_hook.compute_facts(module_name)
