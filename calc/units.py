"""Units and number formatting, kept in one place so decimal and binary never mix silently.

Decimal units (GB = 1e9 bytes) are what vendors print on the box and what the
lesson's prose uses; binary units (GiB = 2**30 bytes) are what `nvidia-smi`,
PyTorch and vLLM's logs report. Every name here says which it is.

>>> 80 * GB / GiB
74.50580596923828
>>> format_bytes(131_072, binary=True)
'128 KiB'
>>> format_bytes(35.3e9)
'35.3 GB'
"""

from __future__ import annotations

import math
from calc.errors import check_choice, check_range

KB = 1_000
MB = 1_000_000
GB = 1_000_000_000
TB = 1_000_000_000_000
KiB = 1 << 10
MiB = 1 << 20
GiB = 1 << 30
TiB = 1 << 40

NS_PER_S = 1_000_000_000
SECONDS_PER_HOUR = 3_600

_DECIMAL = ((TB, "TB"), (GB, "GB"), (MB, "MB"), (KB, "KB"))
_BINARY = ((TiB, "TiB"), (GiB, "GiB"), (MiB, "MiB"), (KiB, "KiB"))


def round_sig(value: float, digits: int = 6) -> float:
    """Round to ``digits`` significant digits, so JSON is the same on every CPython.

    >>> round_sig(0.1 + 0.2)
    0.3
    >>> round_sig(399169.4321, 4)
    399200.0
    """
    if value == 0 or not math.isfinite(value):
        return value
    return round(value, digits - 1 - math.floor(math.log10(abs(value))))


def format_number(value: float, digits: int = 3) -> str:
    """A number for prose: thousands separated, ``digits`` significant digits for fractions.

    >>> format_number(399169)
    '399,169'
    >>> format_number(0.012345)
    '0.0123'
    >>> format_number(9.6666)
    '9.67'
    """
    if isinstance(value, int) or (abs(value) >= 10 ** digits and float(value).is_integer()):
        return f"{int(value):,}"
    if abs(value) >= 10 ** digits:
        return f"{round(value):,}"
    text = f"{round_sig(float(value), digits):.{digits}g}"
    if "e" in text:
        text = f"{round_sig(float(value), digits):f}".rstrip("0").rstrip(".")
    return text


def format_bytes(n_bytes: float, *, binary: bool = False, digits: int = 3) -> str:
    """Bytes in the largest unit that keeps the number at 1 or more.

    >>> format_bytes(524_288_000)
    '524 MB'
    >>> format_bytes(14.99 * GiB, binary=True, digits=4)
    '14.99 GiB'
    >>> format_bytes(512)
    '512 B'
    """
    for size, name in _BINARY if binary else _DECIMAL:
        if abs(n_bytes) >= size:
            return f"{format_number(n_bytes / size, digits)} {name}"
    return f"{format_number(n_bytes, digits)} B"


#: Every unit the site writes, with its size in bytes: decimal (SI) first, then binary (IEC 80000-13).
UNITS: dict[str, int] = {
    "B": 1, "KB": KB, "MB": MB, "GB": GB, "TB": TB, "KiB": KiB, "MiB": MiB, "GiB": GiB, "TiB": TiB,
}


#: The converter takes up to one exabyte, far beyond any GPU or cluster the lesson meets.
MAX_BYTES = 10**18


def to_bytes(value: float, unit: str) -> float:
    """``value`` in ``unit`` (B, KB, MB, GB, TB, KiB, MiB, GiB, TiB) as bytes.

    Source: SI prefixes (powers of 10) and IEC 80000-13 binary prefixes (powers of 2).

    >>> to_bytes(81_559, "MiB")
    85520809984
    >>> to_bytes(1, "GB") < to_bytes(1, "GiB")
    True
    >>> to_bytes(2, "gb")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: unit must be one of B, KB, MB, GB, TB, KiB, MiB, GiB, TiB; got 'gb'
    """
    check_choice("unit", unit, tuple(UNITS))
    value = check_range("value", value, 0, MAX_BYTES / UNITS[unit])
    n_bytes = value * UNITS[unit]
    return int(n_bytes) if float(n_bytes).is_integer() else n_bytes


def relative_change(new: float, old: float) -> float:
    """How much larger ``new`` is than ``old``, as a fraction: ``new / old - 1`` (negative when smaller).

    >>> round(relative_change(GiB, GB), 6), relative_change(90, 100)
    (0.073742, -0.09999999999999998)
    """
    return new / old - 1


def from_bytes(n_bytes: float, unit: str) -> float:
    """``n_bytes`` in ``unit`` (the inverse of :func:`to_bytes`; decimal KB..TB, binary KiB..TiB).

    >>> from_bytes(80e9, "GiB"), from_bytes(GiB, "GB")
    (74.50580596923828, 1.073741824)
    """
    check_choice("unit", unit, tuple(UNITS))
    return n_bytes / UNITS[unit]


def bytes_beyond(n_bytes: float, other_bytes: float) -> float:
    """How many bytes ``n_bytes`` holds beyond ``other_bytes`` (negative when fewer).

    >>> bytes_beyond(85_520_809_984, 80_000_000_000)
    5520809984
    """
    return n_bytes - other_bytes


def ratio(value: float, other: float) -> float:
    """How many times ``other`` fits in ``value`` (e.g. prompt tokens per answer token).

    >>> ratio(1024, 256)
    4.0
    """
    return value / other


def ms_to_s(milliseconds: float) -> float:
    """Milliseconds as seconds.

    >>> ms_to_s(50)
    0.05
    """
    return milliseconds / 1000


def s_to_ms(seconds: float) -> float:
    """Seconds as milliseconds.

    >>> s_to_ms(0.05)
    50.0
    """
    return seconds * 1000


def s_to_us(seconds: float) -> float:
    """Seconds as microseconds.

    >>> s_to_us(25e-6)
    25.0
    """
    return seconds * 1e6


#: Words for large counts, as prose scales them ("$36B", "3.3 trillion searches").
SCALES = {"thousand": 1e3, "million": 1e6, "billion": 1e9, "trillion": 1e12}


def in_scale(value: float, scale: str) -> float:
    """``value`` counted in thousands, millions, billions or trillions (:data:`SCALES`).

    >>> in_scale(36e9, "billion"), in_scale(3.3e12, "trillion")
    (36.0, 3.3)
    """
    check_choice("scale", scale, tuple(SCALES))
    return value / SCALES[scale]


def usd_to_cents(usd: float) -> float:
    """Dollars as cents.

    >>> usd_to_cents(0.25)
    25.0
    """
    return usd * 100


def cents_to_usd(cents: float) -> float:
    """Cents as dollars.

    >>> cents_to_usd(50)
    0.5
    """
    return cents / 100


def per_second(interval_s: float) -> float:
    """Events per second at one every ``interval_s`` seconds (e.g. one user's tokens/s at an inter-token latency).

    >>> per_second(0.05)
    20.0
    """
    return 1 / interval_s


def per_minute(rate_per_s: float) -> float:
    """A rate per second as a rate per minute.

    >>> per_minute(0.125)
    7.5
    """
    return rate_per_s * 60


def bisect_increasing(f, target: float, low: float, high: float, steps: int) -> float:
    """The ``x`` in ``[low, high]`` where an increasing ``f(x)`` reaches ``target``, by ``steps`` halvings.

    Each halving keeps the half where ``f`` crosses ``target`` (``f(mid) < target``: the
    crossing is above ``mid``); the answer is the midpoint of the last interval, so
    ``steps`` halvings pin it to ``(high - low) / 2 ** (steps + 1)``.

    >>> round(bisect_increasing(lambda x: x * x, 2.0, 0.0, 2.0, 40), 9)
    1.414213562
    >>> bisect_increasing(lambda x: x, 0.3, 0.0, 1.0, 1)   # one halving: [0, 0.5], midpoint 0.25
    0.25
    """
    for _ in range(steps):
        mid = (low + high) / 2
        if f(mid) < target:
            low = mid
        else:
            high = mid
    return (low + high) / 2
