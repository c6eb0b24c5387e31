"""Microsecond values from a trace to int64 nanoseconds, exactly: the one time path of every reader.

Values come as JSON number text (Kineto's ``ts``, as ``msgspec.Raw``), decimal strings
(Ascend) or numbers. Text is read digit by digit (``1712195495519689.047`` keeps its ns, where a
float64 holds a quarter of a µs), digits past the ns rounded half up; a number is split into
integer part and fraction. Texts of one width are one byte matrix converted in a few numpy
passes, numbers one float64 array, the rest one by one; a bad value is a ParityError naming it.
"""

from __future__ import annotations

import math
import re
from array import array
from pathlib import Path

import msgspec
import numpy as np

from parity.model.errors import ParityError

MAX_US = 9.0e15  # |t| above this (in us) overflows int64 nanoseconds
_ZERO, _DOT, _COMMA = ord("0"), ord("."), ord(",")
_POINT_NUMBER = re.compile(rb"\d+\.\d+")  # read as decimal text; other JSON as its value
_WHOLE_DIGITS = 16  # 10**16 us * 1000 still fits int64 once checked against MAX_US
_POWERS = 10 ** np.arange(_WHOLE_DIGITS - 1, -1, -1, dtype=np.int64)


def times_to_ns(values: list, *, path: Path, first: int, what: str, index=None) -> np.ndarray:
    """Int64 ns of microsecond ``values`` (JSON texts as ``msgspec.Raw`` or bytes, strings, numbers);
    errors name event ``first + index[i]`` (else ``first + i``) and ``what`` (``ts``, ``dur``)."""
    if not values:
        return np.empty(0, dtype=np.int64)
    if isinstance(values[0], (bytes, msgspec.Raw)):
        return _texts_to_ns(values, path=path, first=first, what=what, index=index)
    if isinstance(values[0], str):
        texts = _ascii(values)
        if texts is not None:  # decimal strings (Ascend's ts) read as texts; the rest as themselves
            return _texts_to_ns(texts, values, path=path, first=first, what=what, index=index)
    us = _plain_us(values)
    if us is not None:
        return us_to_ns(us)
    return _one_by_one(values, path=path, first=first, what=what, index=index)


def us_to_ns(values: np.ndarray) -> np.ndarray:
    """Float microseconds to int64 ns: ``floor(us) * 1000 + rint((us - floor(us)) * 1000)``."""
    whole = np.floor(values)
    ns = whole.astype(np.int64) * 1000
    frac = values - whole
    if frac.any():  # whole microseconds need no rounding pass
        ns += np.rint(frac * 1000.0).astype(np.int64)
    return ns


def parse_us_text(text: str) -> int:
    """A decimal microsecond string (``"1736408883688177.930"``, maybe padded) to int ns, digits
    past the nanosecond rounded half up; ``ValueError`` on anything else."""
    text = text.strip()
    whole, dot, frac = text.lstrip("+-").partition(".")
    if not whole.isdigit() or (frac and not frac.isdigit()) or (dot and not (whole or frac)):
        if "e" in text.lower():
            value = float(text) * 1000.0
            if not math.isfinite(value):  # 1e400: beyond a float
                raise ValueError(f"not a finite number: {text!r}")
            return int(round(value))
        raise ValueError(f"not a number: {text!r}")
    ns = int(whole) * 1000 + int((frac + "000")[:3])
    if len(frac) > 3 and frac[3] >= "5":
        ns += 1
    return -ns if text.startswith("-") else ns


def _ascii(values: list) -> list[bytes] | None:
    """The ASCII bytes of ``values`` when every one is a string of ASCII characters, else None."""
    try:
        return [v.encode("ascii") for v in values]
    except (AttributeError, UnicodeEncodeError):  # not a string, or not a number's text
        return None


def _texts_to_ns(texts: list, values: list | None = None, **where) -> np.ndarray:
    """Texts joined with a comma after each (no number holds one), cut at the commas into one
    byte matrix per width (:func:`_digits_ns`); a width that is not plain digits goes one by one,
    from ``values`` (what the texts were made from; the texts themselves by default)."""
    values = texts if values is None else values
    n = len(texts)
    chars = np.frombuffer(b",".join(texts) + b",", dtype=np.uint8)
    ends = np.flatnonzero(chars == _COMMA)
    if len(ends) != n:  # a comma inside a text: no number
        return _one_by_one(values, **where)
    starts = np.concatenate(([0], ends[:-1] + 1))
    widths = ends - starts
    if (widths == widths[0]).all():  # the usual block: the matrix is a view of the text
        ns = _digits_ns(chars.reshape(n, -1)[:, :-1])
        return ns if ns is not None else _one_by_one(values, **where)
    out = np.empty(n, dtype=np.int64)
    for width in np.unique(widths).tolist():
        rows = np.flatnonzero(widths == width)
        ns = _digits_ns(chars[starts[rows, None] + np.arange(width)])
        if ns is None:
            index = rows if where["index"] is None else np.asarray(where["index"])[rows]
            ns = _one_by_one([values[i] for i in rows.tolist()], **{**where, "index": index})
        out[rows] = ns
    return out


def _digits_ns(chars: np.ndarray) -> np.ndarray | None:
    """Ns of the texts in the rows of ``chars`` (ASCII codes), all ``D+`` or ``D+.D{1,3}`` with
    the point in one column; None when they are not all of that form or exceed :data:`MAX_US`."""
    width = chars.shape[1]
    points = np.flatnonzero(chars[0] == _DOT)
    whole_digits = int(points[0]) if len(points) else width
    frac_digits = width - whole_digits - 1 if len(points) else 0
    if len(points) > 1 or not 0 < whole_digits <= _WHOLE_DIGITS or not 0 <= frac_digits <= 3:
        return None
    if len(points) and (frac_digits == 0 or not (chars[:, whole_digits] == _DOT).all()):
        return None
    whole = _digits(chars[:, :whole_digits])
    frac = _digits(chars[:, whole_digits + 1 :]) if frac_digits else 0
    if whole is None or frac is None or (whole_digits == _WHOLE_DIGITS and (whole >= MAX_US).any()):
        return None
    return whole * 1000 + frac * 10 ** (3 - frac_digits)


def _digits(block: np.ndarray) -> np.ndarray | None:
    """The number each row of ASCII digits spells (one product by the powers of ten); None if a
    character is no digit (uint8 wraps below "0", so one test covers both sides)."""
    digits = block - np.uint8(_ZERO)
    if (digits > 9).any():
        return None
    return digits.astype(np.int64) @ _POWERS[_WHOLE_DIGITS - block.shape[1] :]


def _plain_us(values: list) -> np.ndarray | None:
    """``values`` as float64 when every one is a number (not a bool) within ``±MAX_US``, else
    None. ``array("d")`` takes numbers only but reads a bool as 0 or 1, so types are checked at
    those values alone; one ``min`` and one ``max`` test finiteness and range (NaN fails both)."""
    try:
        us = np.frombuffer(array("d", values), dtype=np.float64)
    except (TypeError, OverflowError):
        return None
    if not (us.min() >= -MAX_US and us.max() <= MAX_US):
        return None
    zero_one = np.flatnonzero((us == 0) | (us == 1)).tolist()
    if bool in set(map(type, map(values.__getitem__, zero_one))):  # C-level passes: many durations are 0
        return None
    return us


def _one_by_one(values: list, *, path: Path, first: int, what: str, index) -> np.ndarray:
    index = range(len(values)) if index is None else index
    return np.array([_one_time(v, path=path, index=first + int(i), what=what) for v, i in zip(values, index)],
                    dtype=np.int64)  # fmt: skip


def _one_time(value, *, path: Path, index: int, what: str) -> int:
    """One value to ns, or a ParityError naming event ``index``. JSON text is read as its
    decimal digits when it is a plain ``I.F`` number, else as the JSON value it holds (None for
    no text or an absent key; the text itself when it is no JSON value)."""
    if isinstance(value, (bytes, msgspec.Raw)):
        text = bytes(value)
        try:
            value = (text.decode("ascii") if _POINT_NUMBER.fullmatch(text)
                     else msgspec.json.decode(text) if text else None)  # fmt: skip
        except msgspec.DecodeError:  # text no JSON value holds (1e400): named as it stands below
            value = text.decode("utf-8", "replace")
    if value is None:
        raise ParityError(f"{path}: event {index} has no {what}; the trace is corrupt")
    try:
        if isinstance(value, str):
            ns = parse_us_text(value)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            if not np.isfinite(value) or abs(value) > MAX_US:
                raise ValueError("out of range")
            ns = value * 1000 if isinstance(value, int) else int(us_to_ns(np.array([value]))[0])
        else:
            raise ValueError("wrong type")
    except (ValueError, OverflowError, TypeError):  # TypeError: an int beyond what numpy converts
        raise ParityError(f"{path}: event {index} has {what} {value!r}, not a time in microseconds; "
                          "the trace is corrupt") from None  # fmt: skip
    if abs(ns) > MAX_US * 1000:
        raise ParityError(f"{path}: event {index} has {what} {value!r} out of range")
    return ns

