"""Kineto blocks: rows, times and ids of a block and the errors naming a bad event; name ids."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.model.errors import ParityError
from parity.trace.readers import columns
from parity.trace.readers.columns import MAX_US, Columns, times_to_ns
from parity.trace.readers.kineto_events import _name_ids
from parity.trace.readers.kineto_rows import Block, add_block
from parity.trace.readers.kineto_structs import ABSENT
from parity.trace.readers.lanes import ScanState
from parity.trace.table import NO_ID

PATH = Path("t.json")

in_range = st.one_of(
    st.floats(min_value=0, max_value=MAX_US),
    st.floats(min_value=0, max_value=1e4),
    st.integers(0, 9 * 10**15),
)
value = st.one_of(
    in_range,
    st.integers(-5, 5),
    st.floats(min_value=-1e-3, max_value=0),
    st.sampled_from(
        [1694039968955744.5, 0.0005, 0.0015, 2.9995, -0.0, MAX_US, MAX_US * 1.0000001]
    ),
    st.sampled_from([None, "12.5", True, float("nan"), float("inf"), 10**30]),
)


def _block(**values) -> Block:
    b = Block()
    n = len(values["ts"])
    b.where, b.kinds, b.name_ids = range(n), [0] * n, [0] * n
    for key in ("pids", "tids", "devs", "streams", "corrs", "exts"):
        setattr(b, key, [NO_ID] * n)
    for key, column in values.items():
        setattr(b, key, column)
    return b


def test_block_rows_and_errors() -> None:
    cols = Columns()
    add_block(
        cols,
        ScanState(path=PATH),
        0,
        _block(ts=[b"1.5", b"2.0"], durs=[1.0, 0.25], corrs=[7, 8]),
    )
    assert cols.blocks["start_ns"][0].tolist() == [1500, 2000]
    assert cols.blocks["end_ns"][0].tolist() == [2500, 2250]
    assert cols.blocks["correlation"][0].tolist() == [7, 8]
    with pytest.raises(ParityError, match=r"event 11 has a negative dur \(-500 ns\)"):
        add_block(
            cols,
            ScanState(path=PATH),
            10,
            _block(ts=[b"1.0", b"2.0"], durs=[1.0, -0.5]),
        )
    with pytest.raises(ParityError, match=r"event 10 has ts '1x'"):
        add_block(
            cols,
            ScanState(path=PATH),
            10,
            _block(ts=[b'"1x"', b"2.0"], durs=[1.0, -0.5]),
        )
    with pytest.raises(
        ParityError,
        match=r"event 13 has args.correlation 18446744073709551616 beyond 64 bits",
    ):
        add_block(
            cols,
            ScanState(path=PATH),
            12,
            _block(ts=[b"1.0", b"2.0"], durs=[1.0, 1.0], corrs=[1, 2**64]),
        )


def reference_times_to_ns(values: list, *, first: int, what: str) -> np.ndarray:
    """times_to_ns as first written: numpy reads the list, a type pass refuses strings and
    bools, an explicit finiteness and range test, then value by value where anything fails."""
    try:
        array = np.asarray(values, dtype=np.float64)
    except (TypeError, ValueError):
        array = None
    if array is not None and not {str, bool}.isdisjoint(set(map(type, values))):
        array = None
    if array is not None:
        bad = ~np.isfinite(array) | (np.abs(array) > MAX_US)
        if bad.any():
            bad_at = int(np.flatnonzero(bad)[0])
            columns._one_time(
                values[bad_at], path=PATH, index=first + bad_at, what=what
            )
            raise AssertionError(
                "unreachable: _one_time refuses what the range test refuses"
            )
        whole = np.floor(array)
        return whole.astype(np.int64) * 1000 + np.rint((array - whole) * 1000.0).astype(
            np.int64
        )
    return np.array([columns._one_time(v, path=PATH, index=first + i, what=what)
                     for i, v in enumerate(values)], dtype=np.int64)  # fmt: skip


def outcome(convert, values: list):
    try:
        return convert(values, first=3, what="dur").tolist()
    except (
        ParityError,
        TypeError,
        OverflowError,
    ) as exc:  # the last two: ints past a float64
        return f"{type(exc).__name__}: {exc}"


@settings(max_examples=400, deadline=None)
@given(
    st.lists(
        st.one_of(
            value,
            st.floats(min_value=-MAX_US, max_value=0),
            st.sampled_from(["-1.5", " 7 ", "x"]),
        ),
        max_size=12,
    )
)
def test_times_to_ns_gives_the_first_written_results_and_errors(values: list) -> None:
    new = outcome(lambda v, **kw: times_to_ns(v, path=PATH, **kw), values)
    assert new == outcome(reference_times_to_ns, values)


def test_id_columns_of_one_value_are_filled() -> None:
    cols = Columns()
    b = _block(ts=[b"1", b"2", b"3"], durs=[1.0, 1.0, 1.0], pids=[7, 7, 7], tids=[7, 8, 7],
               exts=[ABSENT, ABSENT, ABSENT], corrs=[2**63 - 1] * 3)  # fmt: skip
    add_block(cols, ScanState(path=PATH), 0, b)
    assert cols.blocks["pid"][0].tolist() == [7, 7, 7]
    assert cols.blocks["tid"][0].tolist() == [7, 8, 7]
    assert cols.blocks["external_id"][0].tolist() == [NO_ID] * 3
    assert cols.blocks["correlation"][0].tolist() == [2**63 - 1] * 3
    with pytest.raises(
        ParityError, match=r"event 4 has args.device 9223372036854775808 beyond 64 bits"
    ):
        add_block(
            cols,
            ScanState(path=PATH),
            4,
            _block(ts=[b"1.0"], durs=[1.0], devs=[2**63]),
        )


def test_name_ids_in_order_of_appearance() -> None:
    cols = Columns()
    first = ["a", "b", None, "a", "c", "b"]
    assert _name_ids(first, cols).tolist() == [0, 1, 2, 0, 3, 1]
    later = ["a"] * 40 + ["d", None, "e", "d"] + ["c"] * 40
    assert _name_ids(later, cols).tolist() == [0] * 40 + [4, 2, 5, 4] + [3] * 40
    assert list(cols.names) == ["a", "b", "", "c", "d", "e"]
    cols = Columns()  # a first block without None names: one pass adds them all
    assert _name_ids(["x", "y", "x", "z"], cols).tolist() == [0, 1, 0, 2]
    assert _name_ids(["z", "w", None, "x"], cols).tolist() == [2, 3, 4, 0]
    assert list(cols.names) == ["x", "y", "z", "w", ""]
