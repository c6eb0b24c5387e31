"""The cheap test of whether a block needs exact timestamps gives the regex's answer."""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from parity.trace.readers import exactts
from parity.trace.readers.exactts import (
    EXACT_PROBE_BYTES,
    FLOAT_EXACT_US,
    needs_exact_ts,
)

_REFERENCE = re.compile(rb'"ts"\s*:\s*(\d{13,})\.\d*[1-9]')


def reference(text: bytes) -> bool:
    """The definition: a ``"ts"`` whose value has a non-zero fraction and an integer part of
    at least 2**42, within the probe."""
    probe = text[:EXACT_PROBE_BYTES]
    return any(int(m.group(1)) >= FLOAT_EXACT_US for m in _REFERENCE.finditer(probe))


_NEAR = [FLOAT_EXACT_US + d for d in (-(10**6), -1, 0, 1, 10**6)]
whole = st.one_of(
    st.sampled_from(_NEAR),
    st.integers(0, 10**12),
    st.integers(10**12, 10**13),
    st.integers(10**13, 10**17),
)
digits = st.text("0123456789", max_size=5)
fraction = st.one_of(
    st.just(""),
    digits.map(lambda d: "." + d),
    st.sampled_from([".0", ".000", ".100", ".5"]),
)
padding = st.sampled_from(
    ["", "0", "00", "000"]
)  # leading zeros make long runs of small values
space = st.sampled_from(["", " ", "\n  ", "\t"])
key = st.sampled_from(['"ts"', '"ts"', '"dur"', '"ts_frac"', '"xts"', '"name": "ts"'])


@st.composite
def number(draw) -> str:
    return draw(padding) + str(draw(whole)) + draw(fraction)


@st.composite
def entry(draw) -> str:
    sep1, sep2 = draw(space), draw(space)
    return f"{draw(key)}{sep1}:{sep2}{draw(number())}"


@st.composite
def texts(draw) -> bytes:
    parts = draw(
        st.lists(
            st.one_of(entry(), number(), st.text('ts:. 0123456789"', max_size=20)),
            max_size=40,
        )
    )
    return ", ".join(parts).encode()


@settings(max_examples=300, deadline=None)
@given(texts())
def test_same_answer_as_the_regex(text: bytes) -> None:
    assert needs_exact_ts(text) is reference(text)
    assert needs_exact_ts(memoryview(text)) is reference(text)


@settings(max_examples=80, deadline=None)
@given(st.lists(entry(), min_size=40, max_size=120), st.integers(0, 200))
def test_same_answer_past_the_points_looked_at_one_by_one(
    entries: list[str], names: int
) -> None:
    """Many points before the first big timestamp: the regex search finishes the scan."""
    text = ", ".join(['"name": "a.b"'] * names + entries).encode()
    assert needs_exact_ts(text) is reference(text)


def test_hand_written_cases() -> None:
    big = FLOAT_EXACT_US
    cases = {
        f'"ts": {big}.5': True,
        f'"ts": {big - 1}.5': False,
        f'"ts":{big}.000': False,
        f'"ts" :\n {big}.0001': True,
        f'"ts": 0{big - 1}.5': False,  # 14 digits, but a small value
        f'"ts": {big}5': False,
        f'"dur": {big}.5': False,
        f'"name": "ts", "x": {big}.5': False,
        '"name": "a.b", "ts": 1694039968955744.125': True,
        f'{"1." * 100}"ts": {10**15}.25': True,
        '"ts": 1694039968955744, "dur": 12.5': False,
    }
    for text, expected in cases.items():
        assert needs_exact_ts(text.encode()) is expected, text
        assert reference(text.encode()) is expected, text


def test_only_the_probe_counts() -> None:
    text = b" " * EXACT_PROBE_BYTES + b'"ts": 1694039968955744.125'
    assert needs_exact_ts(text) is reference(text) is False


def test_many_points_use_the_search() -> None:
    """Points past the ones looked at one by one are found by the search."""
    filler = b'"a": 1.5, ' * (exactts._POINTS_BY_FIND + 5)
    assert needs_exact_ts(filler + b'"ts": 1694039968955744.125') is True
    assert needs_exact_ts(filler + b'"ts": 1694039968955744') is False
