"""Reading a reader's typed answer: a number with an optional unit, checked with a tolerance.

Drills accept an answer in any unit of the right kind, so "128 KiB", "131072"
and "0.125 MiB" all mean the same number of bytes.

>>> parse_quantity("128 KiB", "bytes")
131072.0
>>> parse_quantity("0.125 MiB", "bytes")
131072.0
>>> parse_quantity("1,024", "tokens")
1024.0
>>> check_answer("131072", 131072, "bytes", 0.01)["correct"]
True
>>> check_answer("500 MB", 524288000, "bytes", 0.05)["correct"]
True
"""

from __future__ import annotations

import math
import re

from calc.errors import CalcError
from calc.units import GB, GiB, KB, KiB, MB, MiB, TB, TiB, format_number

BYTE_UNITS = {
    "b": 1, "byte": 1, "bytes": 1,
    "kb": KB, "kib": KiB, "mb": MB, "mib": MiB, "gb": GB, "gib": GiB, "tb": TB, "tib": TiB,
}
# Plain multipliers any unit accepts, as people write them ("3.2k tokens", "1.5 million").
SCALE_WORDS = {"k": 1e3, "thousand": 1e3, "m": 1e6, "million": 1e6, "b": 1e9, "billion": 1e9}

_NUMBER = re.compile(r"^\s*([-+]?(?:\d[\d,_]*\.?\d*|\.\d+)(?:e[-+]?\d+)?)\s*(.*?)\s*$", re.IGNORECASE)


def parse_quantity(text: str, unit: str) -> float:
    """The number a reader typed, converted to ``unit`` (``bytes`` understands B, KB, KiB ... TiB).

    Any other unit accepts the bare number, the unit itself written after it, its
    common plural, and scale words (k, million).

    >>> parse_quantity("3.3 usd", "usd"), parse_quantity("$1.85", "usd")
    (3.3, 1.85)
    >>> parse_quantity("2.5k", "tokens")
    2500.0
    >>> parse_quantity("lots", "bytes")
    Traceback (most recent call last):
    ...
    calc.errors.CalcError: answer must be a number, optionally with a unit such as KiB or GB; got 'lots'
    """
    if not isinstance(text, str) or not text.strip():
        raise CalcError("answer must be a number; got nothing", "answer")
    hint = "optionally with a unit such as KiB or GB" if unit == "bytes" else f"optionally followed by {unit}"
    if unit.lower() == "usd":  # readers type prices the way they read them
        text = re.sub(r"^\s*(?:US)?\$\s*", "", text, flags=re.IGNORECASE)
    match = _NUMBER.match(text.replace("\u2009", "").replace("\u00a0", " "))
    if not match:
        raise CalcError(f"answer must be a number, {hint}; got {text.strip()[:40]!r}", "answer")
    number = float(match.group(1).replace(",", "").replace("_", ""))
    suffix = match.group(2).lower().rstrip(".")
    if not math.isfinite(number):
        raise CalcError(f"answer must be a finite number; got {text.strip()[:40]!r}", "answer")
    if not suffix:
        return number
    if unit == "bytes":
        if suffix in BYTE_UNITS:
            return number * BYTE_UNITS[suffix]
        raise CalcError(f"answer unit must be one of B, KB, KiB, MB, MiB, GB, GiB, TB, TiB; got {suffix!r}", "answer")
    words = suffix.split()
    scale = 1.0
    if words and words[0] in SCALE_WORDS:
        scale = SCALE_WORDS[words.pop(0)]
    rest = " ".join(words)
    if rest in ("", unit.lower(), unit.lower() + "s", unit.lower().rstrip("s")):
        return number * scale
    raise CalcError(f"answer must be a number, {hint}; got {text.strip()[:40]!r}", "answer")


def check_answer(text: str, expected: float, unit: str, tolerance: float) -> dict:
    """Compare a typed answer with ``expected`` within a relative ``tolerance``.

    >>> result = check_answer("100 KiB", 131072, "bytes", 0.02)
    >>> result["correct"], round(result["relative_error"], 3)
    (False, -0.219)
    """
    value = parse_quantity(text, unit)
    error = (value - expected) / expected if expected else value
    correct = abs(error) <= tolerance
    shown = f"{format_number(value)} {'B' if unit == 'bytes' else unit}"
    verdict = "Right" if correct else ("Too high" if error > 0 else "Too low")
    return {
        "correct": correct,
        "value": value,
        "relative_error": error,
        "message": f"{verdict}: you gave {shown}, {abs(error) * 100:.1f}% from the answer.",
    }
