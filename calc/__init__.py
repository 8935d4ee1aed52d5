"""calc: the arithmetic of serving a large language model, in pure Python.

One package runs three ways: at site build time in CPython (every number on a
page is pre-rendered from it), in the reader's browser in Pyodide (every widget
recomputes live) and in a terminal or notebook (``python -m calc --help``).

It imports nothing beyond the standard library.
"""

from calc.errors import CalcError

__all__ = ["CalcError"]
__version__ = "0.1.0"
