"""Kineto blocks: rows, times and ids of a block and the errors naming a bad event; name ids."""

from __future__ import annotations

from pathlib import Path

import msgspec
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from parity.model.errors import ParityError
from parity.trace.readers import times
from parity.trace.readers.columns import Columns
from parity.trace.readers.kineto_events import ABSENT, DECODER, Args, Complete, ScanState, scan_block
from parity.trace.readers.times import MAX_US, times_to_ns
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


def _block(ts: list[bytes], durs: list, *, pids=None, tids=None, devs=None, streams=None, corrs=None,
           exts=None) -> list[Complete]:  # fmt: skip
    """Complete kernel events with these values (absent ids as the decoder gives them)."""
    n = len(ts)

    def column(values, default):
        return values if values is not None else [default] * n

    pids, tids, devs, streams = column(pids, NO_ID), column(tids, NO_ID), column(devs, NO_ID), column(streams, NO_ID)
    corrs, exts = column(corrs, NO_ID), column(exts, ABSENT)
    return [Complete(cat="kernel", name="k", pid=pids[i], tid=tids[i], ts=msgspec.Raw(ts[i]), dur=durs[i],
                     args=Args(device=devs[i], stream=streams[i], correlation=corrs[i], external_id=exts[i]))
            for i in range(n)]  # fmt: skip


def _scan(events: list, first: int, cols: Columns | None = None) -> Columns:
    cols = cols if cols is not None else Columns()
    scan_block(events, first, cols, ScanState(path=PATH))
    return cols


def test_block_rows_and_errors() -> None:
    cols = _scan(_block([b"1.5", b"2.0"], [1.0, 0.25], corrs=[7, 8]), 0)
    assert cols.blocks["start_ns"][0].tolist() == [1500, 2000]
    assert cols.blocks["end_ns"][0].tolist() == [2500, 2250]
    assert cols.blocks["correlation"][0].tolist() == [7, 8]
    with pytest.raises(ParityError, match=r"event 11 has a negative dur \(-500 ns\)"):
        _scan(_block([b"1.0", b"2.0"], [1.0, -0.5]), 10)
    with pytest.raises(ParityError, match=r"event 10 has ts '1x'"):
        _scan(_block([b'"1x"', b"2.0"], [1.0, -0.5]), 10)
    with pytest.raises(ParityError, match=r"event 13 has args.correlation 18446744073709551616 beyond 64 bits"):
        _scan(_block([b"1.0", b"2.0"], [1.0, 1.0], corrs=[1, 2**64]), 12)


def test_errors_name_the_event_among_other_phases() -> None:
    """Rows are the complete events only; an error names the event's index in the array."""
    instant, flow = DECODER.decode(b'[{"ph": "i"}, {"ph": "s"}]')
    events = [instant, *_block([b"1.0"], [1.0]), flow, *_block([b"2.0"], [-1.0])]
    with pytest.raises(ParityError, match=r"event 8 has a negative dur"):
        _scan(events, 5)


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
            times._one_time(
                values[bad_at], path=PATH, index=first + bad_at, what=what
            )
            raise AssertionError(
                "unreachable: _one_time refuses what the range test refuses"
            )
        whole = np.floor(array)
        return whole.astype(np.int64) * 1000 + np.rint((array - whole) * 1000.0).astype(
            np.int64
        )
    return np.array([times._one_time(v, path=PATH, index=first + i, what=what)
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
    cols = _scan(_block([b"1", b"2", b"3"], [1.0, 1.0, 1.0], pids=[7, 7, 7], tids=[7, 8, 7],
                        corrs=[2**63 - 1] * 3), 0)  # fmt: skip
    assert cols.blocks["pid"][0].tolist() == [7, 7, 7]
    assert cols.blocks["tid"][0].tolist() == [7, 8, 7]
    assert cols.blocks["external_id"][0].tolist() == [NO_ID] * 3
    assert cols.blocks["correlation"][0].tolist() == [2**63 - 1] * 3
    with pytest.raises(ParityError, match=r"event 4 has args.device 9223372036854775808 beyond 64 bits"):
        _scan(_block([b"1.0"], [1.0], devs=[2**63]), 4)


def test_name_ids_in_order_of_appearance() -> None:
    cols = Columns()
    first = ["a", "b", None, "a", "c", "b"]
    assert cols.name_ids(first).tolist() == [0, 1, 2, 0, 3, 1]
    later = ["a"] * 40 + ["d", None, "e", "d"] + ["c"] * 40
    assert cols.name_ids(later).tolist() == [0] * 40 + [4, 2, 5, 4] + [3] * 40
    assert list(cols.names) == ["a", "b", "", "c", "d", "e"]
    cols = Columns()  # a first block without None names: one pass adds them all
    assert cols.name_ids(["x", "y", "x", "z"]).tolist() == [0, 1, 0, 2]
    assert cols.name_ids(["z", "w", None, "x"]).tolist() == [2, 3, 4, 0]
    assert list(cols.names) == ["x", "y", "z", "w", ""]
