"""The one exception `calc` raises for bad input, and the checks that raise it.

Every message names the field, the value given and what is allowed, so that the
CLI and the page can show it to a reader as it is.

>>> check_range("tp", 3, 1, 8)
3
>>> check_range("tp", 0, 1, 8)
Traceback (most recent call last):
...
calc.errors.CalcError: tp must be between 1 and 8; got 0
"""

from __future__ import annotations

import math
from collections.abc import Iterable

__all__ = ["CalcError", "check_range", "check_choice", "check_positive", "check_finite"]


class CalcError(ValueError):
    """Bad input to a `calc` function: ``field`` names the input, the text says what is allowed.

    >>> err = CalcError("bad tp", field="tp")
    >>> err.field, str(err)
    ('tp', 'bad tp')
    """

    def __init__(self, message: str, field: str | None = None):
        super().__init__(message)
        self.field = field


def _number(field: str, value) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise CalcError(f"{field} must be a number; got {value!r}", field)
    if isinstance(value, float) and not math.isfinite(value):
        raise CalcError(f"{field} must be a finite number; got {value!r}", field)
    return value


def check_finite(field: str, value):
    """Return ``value`` if it is a finite int or float, else raise :class:`CalcError`.

    >>> check_finite("rate", 2.5)
    2.5
    >>> check_finite("rate", float("nan"))
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: rate must be a finite number; got nan
    """
    return _number(field, value)


def check_range(field: str, value, low, high, *, integer: bool = False):
    """Return ``value`` if ``low <= value <= high`` (and whole, when ``integer``).

    >>> check_range("gpu_memory_utilization", 0.9, 0.05, 1.0)
    0.9
    >>> check_range("layers", 2.5, 1, 1000, integer=True)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: layers must be a whole number between 1 and 1000; got 2.5
    """
    _number(field, value)
    if integer and value != int(value):
        raise CalcError(f"{field} must be a whole number between {low:g} and {high:g}; got {value!r}", field)
    if not low <= value <= high:
        what = "a whole number " if integer else ""
        raise CalcError(f"{field} must be {what}between {low:g} and {high:g}; got {value!r}", field)
    return int(value) if integer else value


def check_positive(field: str, value, *, allow_zero: bool = False):
    """Return ``value`` if it is finite and above zero (or zero, when allowed).

    >>> check_positive("weights_gib", 14.99)
    14.99
    >>> check_positive("weights_gib", -1)
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: weights_gib must be greater than 0; got -1
    """
    _number(field, value)
    if value < 0 or (value == 0 and not allow_zero):
        bound = "0 or more" if allow_zero else "greater than 0"
        raise CalcError(f"{field} must be {bound}; got {value!r}", field)
    return value


def check_choice(field: str, value, allowed: Iterable[str]):
    """Return ``value`` if it is one of ``allowed``.

    >>> check_choice("kv_dtype", "fp8", ["bf16", "fp8"])
    'fp8'
    >>> check_choice("kv_dtype", "fp4", ["bf16", "fp8"])
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: kv_dtype must be one of bf16, fp8; got 'fp4'
    """
    allowed = list(allowed)
    if value not in allowed:
        raise CalcError(f"{field} must be one of {', '.join(map(str, allowed))}; got {value!r}", field)
    return value
