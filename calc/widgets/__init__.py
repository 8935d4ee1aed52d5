"""The functions that the site's pages call: one module per page that has widgets.

A module here is named after its page (``docs/lesson/02-kv-cache-arithmetic.md``
uses ``calc/widgets/kv_cache_arithmetic.py``) and registers its widgets, drills and
live streams with the decorators of :mod:`calc.widgets.framework`. The registry of
those decorators is the runtime's allow-list: the browser can call nothing else.

>>> "kv_cache_arithmetic.kv_per_token" in allowed_names()
True
"""

from __future__ import annotations

import importlib
import pkgutil

_INFRASTRUCTURE = {"framework", "runtime", "charts", "views", "controls"}
_loaded = False


def page_modules() -> list[str]:
    """The names of the page modules of this package (the ones that may register widgets).

    >>> "kv_cache_arithmetic" in page_modules(), "runtime" in page_modules()
    (True, False)
    """
    return sorted(info.name for info in pkgutil.iter_modules(__path__)
                  if info.name not in _INFRASTRUCTURE and not info.name.startswith("_"))


def load_module(name: str) -> bool:
    """Import page module ``name`` if it is one; False for anything else (never imports outside this package)."""
    if name not in page_modules():
        return False
    importlib.import_module(f"{__name__}.{name}")
    return True


def load_all() -> None:
    """Import every page module of this package (once), filling the registry."""
    global _loaded
    if _loaded:
        return
    for name in page_modules():
        importlib.import_module(f"{__name__}.{name}")
    _loaded = True


def allowed_names() -> list[str]:
    """Every callable name, sorted: widgets, drills and streams."""
    from calc.widgets.framework import REGISTRY

    load_all()
    return sorted(REGISTRY)
