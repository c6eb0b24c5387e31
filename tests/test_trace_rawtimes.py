"""Exact nanoseconds from the JSON text of microsecond timestamps (readers/rawtimes.py)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace.readers.rawtimes import raw_mark_time, raw_times_to_ns

PATH = Path("trace.json")


def _ns(texts: list[bytes]) -> list[int]:
    return raw_times_to_ns(texts, path=PATH, first=0, index=np.arange(len(texts))).tolist()


def test_large_microsecond_values_keep_the_nanosecond():
    # a float64 holds 1712195495519689.047 only to 0.25 us; the text keeps every digit
    assert _ns([b"1712195495519689.047", b"1712195495519690.001"]) == [1712195495519689047, 1712195495519690001]


def test_mixed_widths_and_short_fractions():
    assert _ns([b"12.5", b"1712195495519689.047", b"7", b"0.000", b"3.25"]) == [
        12500, 1712195495519689047, 7000, 0, 3250,
    ]


def test_other_forms_fall_back_to_one_by_one():
    # more than three decimals: whole us plus the rounded fraction (234.4 ns -> 234)
    assert _ns([b"1.2344", b"-3.25", b"1e3", b'"5.5"']) == [1234, -3250, 1_000_000, 5500]


def test_missing_or_null_ts_names_the_event():
    with pytest.raises(ParityError, match="event 1 has no ts"):
        _ns([b"1.5", b"null"])
    with pytest.raises(ParityError, match="event 0 has no ts"):
        _ns([b""])


def test_out_of_range_is_an_error():
    with pytest.raises(ParityError, match="event 0"):
        _ns([b"9999999999999999.000"])


def test_mark_time_keeps_the_decimal_text():
    assert raw_mark_time(b"1712195495519689.047") == "1712195495519689.047"
    assert raw_mark_time(b"12") == 12
    assert raw_mark_time(b"") is None
