"""Exact nanoseconds from the JSON text of microsecond timestamps, many at a time.

Kineto writes ``"ts": 1712195495519689.047``, which a float64 holds only to a quarter of a
microsecond, so the reader keeps each timestamp's text (``msgspec.Raw``) and converts the
digits here. The texts of one width are joined into a byte matrix, one row per timestamp, and
converted with a few numpy passes: ``ns = whole * 1000 + fraction * 10**(3 - fraction digits)``.
Anything else (negative, exponent, more than three decimals, a string, ``null``, absent, beyond
:data:`~parity.trace.readers.columns.MAX_US`) goes one value at a time (:func:`ts_value`)
through :func:`~parity.trace.readers.columns.times_to_ns`, which names a bad event.
"""

from __future__ import annotations

import re
from pathlib import Path

import msgspec
import numpy as np

from parity.trace.readers.columns import MAX_US, times_to_ns

_DIGIT0, _DOT, _COMMA = ord("0"), ord("."), ord(",")
_POINT_NUMBER = re.compile(rb"(\d+)\.(\d+)")
_MAX_WHOLE_DIGITS = 16  # 10**16 us * 1000 still fits int64 once checked against MAX_US


def raw_times_to_ns(raws: list, *, path: Path, first: int, index=None) -> np.ndarray:
    """Int64 ns of ``raws`` (``msgspec.Raw`` or bytes, the JSON text of microsecond values).

    ``first`` and ``index`` (a sequence, or None when value ``i`` is event ``i``) name events in
    errors as :func:`times_to_ns` does.
    """
    n = len(raws)
    if n == 0:
        return np.empty(0, dtype=np.int64)
    chars = _one_width(raws)
    if chars is not None:
        ns = _fixed_width(chars)
        return ns if ns is not None else _one_by_one(raws, path=path, first=first, index=index)
    out = np.empty(n, dtype=np.int64)
    lengths = np.fromiter(map(len, raws), dtype=np.int64, count=n)
    for width in np.unique(lengths).tolist():
        rows = np.flatnonzero(lengths == width)
        texts = [raws[i] for i in rows.tolist()]
        ns = _fixed_width(_matrix(b"".join(texts), len(texts), width))
        out[rows] = ns if ns is not None else _one_by_one(texts, path=path, first=first, index=rows if index is None else np.asarray(index)[rows])
    return out


def _one_width(raws: list) -> np.ndarray | None:
    """The texts of ``raws`` as rows of a byte matrix when all are as long as the first, else
    None.

    The texts are joined with a comma after each, which no number holds: when the text is
    ``n * (width + 1)`` bytes long, holds ``n`` commas and has one at the end of every row of
    that width, those are all its commas, so every text has that width. This costs two C-level
    passes where measuring each text costs a Python call."""
    n, width = len(raws), len(raws[0])
    joined = b",".join(raws) + b","
    if len(joined) != n * (width + 1) or joined.count(b",") != n:
        return None
    chars = _matrix(joined, n, width + 1)
    if not (chars[:, width] == _COMMA).all():
        return None
    return chars[:, :width]


def _matrix(joined: bytes, n: int, width: int) -> np.ndarray:
    return np.frombuffer(joined, dtype=np.uint8).reshape(n, width)


def _fixed_width(chars: np.ndarray) -> np.ndarray | None:
    """Ns of the texts in the rows of ``chars`` (one byte a column), all ``D+`` or
    ``D+.D{1,3}`` with the point in the same column; None when they are not all of that form."""
    width = chars.shape[1]
    if width == 0 or width > _MAX_WHOLE_DIGITS + 4:
        return None
    points = np.flatnonzero(chars[0] == _DOT)
    whole_digits = int(points[0]) if len(points) == 1 else width
    frac_digits = width - whole_digits - 1 if len(points) == 1 else 0
    if len(points) > 1 or whole_digits == 0 or whole_digits > _MAX_WHOLE_DIGITS or not 0 <= frac_digits <= 3:
        return None
    if len(points) == 1 and (frac_digits == 0 or not (chars[:, whole_digits] == _DOT).all()):
        return None
    whole = _digits(chars[:, :whole_digits])
    if whole is None or (whole_digits == _MAX_WHOLE_DIGITS and (whole >= MAX_US).any()):
        return None
    ns = whole * 1000
    if frac_digits:
        frac = _digits(chars[:, whole_digits + 1 :])
        if frac is None:
            return None
        ns += frac * 10 ** (3 - frac_digits)
    return ns


_POWERS = 10 ** np.arange(_MAX_WHOLE_DIGITS - 1, -1, -1, dtype=np.int64)


def _digits(block: np.ndarray) -> np.ndarray | None:
    """The decimal number each row of ``block`` (ASCII codes) spells; None if a character is
    no digit. One matrix product by the powers of ten (at most 16 digits: below 2**63)."""
    digits = block - np.uint8(_DIGIT0)  # uint8 wraps below "0", so one test covers both sides
    if (digits > 9).any():
        return None
    return digits.astype(np.int64) @ _POWERS[_MAX_WHOLE_DIGITS - block.shape[1] :]


def _one_by_one(raws: list, *, path: Path, first: int, index) -> np.ndarray:
    """The general case: every text as :func:`ts_value` gives it, converted (and checked) by
    :func:`~parity.trace.readers.columns.times_to_ns`."""
    return times_to_ns(list(map(ts_value, raws)), path=path, first=first, what="ts", index=index)


def ts_value(raw) -> object:
    """A ``ts`` from its JSON text: an ``I.F`` number as its decimal string (which
    :func:`~parity.trace.readers.columns.times_to_ns` converts exactly, digits past the
    nanosecond rounded half up), anything else as the JSON value."""
    text = bytes(raw)
    if _POINT_NUMBER.fullmatch(text):
        return text.decode("ascii")
    return _json_value(text)


def _json_value(text: bytes) -> object:
    """The JSON value ``text`` holds; None for no text (an absent key) or text that is not JSON."""
    try:
        return msgspec.json.decode(text) if text else None
    except msgspec.DecodeError:
        return None
