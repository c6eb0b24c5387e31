"""Exact nanoseconds from the JSON text of microsecond timestamps (readers/times.py)."""

from __future__ import annotations

from decimal import Decimal
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.model.errors import ParityError
from parity.trace.readers.times import MAX_US, times_to_ns

PATH = Path("trace.json")


def _ns(texts: list[bytes]) -> list[int]:
    return times_to_ns(texts, path=PATH, first=0, what="ts", index=np.arange(len(texts))).tolist()


def test_large_microsecond_values_keep_the_nanosecond():
    # a float64 holds 1712195495519689.047 only to 0.25 us; the text keeps every digit
    assert _ns([b"1712195495519689.047", b"1712195495519690.001"]) == [1712195495519689047, 1712195495519690001]


def test_mixed_widths_and_short_fractions():
    assert _ns([b"12.5", b"1712195495519689.047", b"7", b"0.000", b"3.25"]) == [
        12500, 1712195495519689047, 7000, 0, 3250,
    ]


def test_other_forms_fall_back_to_one_by_one():
    # more than three decimals: the decimal value rounded half up to the ns (1234.4 ns -> 1234)
    assert _ns([b"1.2344", b"-3.25", b"1e3", b'"5.5"']) == [1234, -3250, 1_000_000, 5500]


def test_missing_or_null_ts_names_the_event():
    with pytest.raises(ParityError, match="event 1 has no ts"):
        _ns([b"1.5", b"null"])
    with pytest.raises(ParityError, match="event 0 has no ts"):
        _ns([b""])


def test_a_number_no_double_holds_is_named_as_written():
    # 1e400 is valid JSON text but no float64: the event has a ts, and the message says which
    with pytest.raises(ParityError, match=r"event 1 has ts '1e400', not a time in microseconds"):
        _ns([b"1.5", b"1e400"])


def test_out_of_range_is_an_error():
    with pytest.raises(ParityError, match="event 0"):
        _ns([b"9999999999999999.000"])


def test_a_text_read_value_by_value_keeps_its_digits():
    # four decimals leave the matrix path; the text is still read as decimal digits, not a float
    assert _ns([b"1712195495519689.0474", b"12"]) == [1712195495519689047, 12000]
    assert _ns([b"1712195495519689.0475"]) == [1712195495519689048]


def test_widths_that_add_up_to_one_width_are_told_apart():
    # 4 + 3 + 5 bytes: as long in all as three texts of 4, which one fixed-width matrix would misread
    assert _ns([b"12.5", b"1.5", b"123.5"]) == [12500, 1500, 123500]
    assert _ns([b"15", b"1234", b"7.5"]) == [15000, 1_234_000, 7500]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.tuples(st.integers(0, int(MAX_US) - 1), st.integers(0, 3), st.integers(0, 999)), min_size=1, max_size=40))
def test_any_mix_of_plain_numbers_is_exact(values):
    """Whole microseconds or 1-3 decimals, any widths mixed: the decimal value to the ns."""
    texts = [f"{whole}.{fraction:03d}"[: len(str(whole)) + 1 + decimals] if decimals else str(whole)
             for whole, decimals, fraction in values]  # fmt: skip
    assert _ns([t.encode() for t in texts]) == [int(Decimal(t) * 1000) for t in texts]


def test_a_time_just_past_the_int64_range_is_refused_by_name():
    with pytest.raises(ParityError, match="out of range"):
        _ns([b"1.5", b"9000000000000000.1"])


def _ns_text(values: list) -> list[int]:
    return times_to_ns(values, path=PATH, first=0, what="ts", index=np.arange(len(values))).tolist()


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(
    st.tuples(st.integers(0, int(MAX_US) - 1), st.integers(0, 6), st.integers(0, 999_999)).map(
        lambda v: f"{v[0]}.{v[2]:06d}"[: len(str(v[0])) + 1 + v[1]] if v[1] else str(v[0])),
    st.sampled_from([" 12.5", "-3.25", "1e3", "12.", "+7", "0.0005"]),
), min_size=1, max_size=40))
def test_decimal_strings_read_as_texts_equal_the_one_by_one_reading(texts):
    """Ascend writes ``ts`` as decimal strings: read a block at a time, every value is the one
    :func:`parse_us_text` gives (padded, signed, exponent and long forms go one by one)."""
    from parity.trace.readers.times import parse_us_text

    assert _ns_text(texts) == [parse_us_text(t) for t in texts]


def test_a_bad_string_among_decimal_strings_is_named_as_written():
    with pytest.raises(ParityError, match=r"event 1 has ts 'abc'"):
        _ns_text(["1736408883688177.930", "abc", "1736408883688333.350"])
    with pytest.raises(ParityError, match=r"event 1 has ts 'µs'"):  # not ASCII: one by one
        _ns_text(["1.5", "µs"])
    with pytest.raises(ParityError, match=r"event 1 has ts 2.5j"):  # not all strings: one by one
        _ns_text(["1.5", 2.5j])


def test_a_boolean_among_numbers_is_refused_by_name():
    # array("d") reads True as 1.0; the type check at the values 0 and 1 finds it
    with pytest.raises(ParityError, match=r"event 2 has dur True"):
        times_to_ns([0.0, 5.5, True, 1.0], path=PATH, first=0, what="dur", index=np.arange(4))
    assert times_to_ns([0.0, 1.0, 1, 0], path=PATH, first=0, what="dur", index=None).tolist() == [0, 1000, 1000, 0]
