"""Bad trace input: one-line ParityErrors naming the file (and event), or counted warnings."""

from __future__ import annotations

import gzip
import json
import shutil
import sqlite3
from pathlib import Path

import numpy as np
import orjson
import pytest

from parity.model.errors import ParityError
from parity.trace.load import load_trace
from parity.trace.table import Kind

SMALL = "kineto/hta/trace_filter/sampled_rank-0.json.gz"
TEXT0 = "ascend/msinsight/text/level0/rank0_ascend_pt"


@pytest.fixture(scope="module")
def small_text(traces_dir: Path) -> bytes:
    with gzip.open(traces_dir / SMALL, "rb") as handle:
        return handle.read()


def one_line_error(paths, *, match: str) -> str:
    with pytest.raises(ParityError) as info:
        load_trace(paths)
    message = str(info.value)
    assert "\n" not in message and message == message.strip()
    assert match in message, message
    return message


def write(tmp_path: Path, name: str, data: bytes) -> Path:
    path = tmp_path / name
    path.write_bytes(data)
    return path


def trace(events: list, **top) -> bytes:
    return orjson.dumps({"traceEvents": events, **top})


def kernel(ts, dur, *, stream=7, name="k", **extra) -> dict:
    event = {"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": stream, "ts": ts,
             "dur": dur, "args": {"device": 0, "stream": stream}}  # fmt: skip
    event.update(extra)
    return event


def test_truncated_gzip(traces_dir: Path, tmp_path: Path) -> None:
    data = (traces_dir / SMALL).read_bytes()
    path = write(tmp_path, "cut.json.gz", data[: len(data) // 2])
    message = one_line_error(path, match=str(path))
    assert "truncated" in message or "cut short" in message


def test_truncated_json_names_the_event_reached(small_text: bytes, tmp_path: Path) -> None:
    path = write(tmp_path, "cut.json", small_text[: int(len(small_text) * 0.6)])
    message = one_line_error(path, match=str(path))
    assert "event" in message and ("truncated" in message or "cut short" in message)


def test_corrupt_bytes_in_the_middle(small_text: bytes, tmp_path: Path) -> None:
    middle = len(small_text) // 2
    data = small_text[:middle] + b"\x00{]]garbage" + small_text[middle + 11 :]
    path = write(tmp_path, "corrupt.json", data)
    one_line_error(path, match=str(path))


def test_event_without_ts_names_its_index(tmp_path: Path) -> None:
    events = [kernel(1.0, 1.0), kernel(3.0, 1.0), {"ph": "X", "cat": "kernel", "name": "x", "dur": 1}]
    path = write(tmp_path, "nots.json", trace(events))
    message = one_line_error(path, match=str(path))
    assert "event 2 has no ts" in message


def test_negative_dur_names_its_index(tmp_path: Path) -> None:
    events = [{"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}},
              kernel(1.0, 1.0), kernel(3.0, -0.5)]  # fmt: skip
    path = write(tmp_path, "negdur.json", trace(events))
    message = one_line_error(path, match=str(path))
    assert "event 2 has a negative dur" in message


def test_wrong_types_name_the_event(tmp_path: Path) -> None:
    events = [kernel(1.0, 1.0), kernel(2.0, 1.0, args="oops")]
    message = one_line_error(write(tmp_path, "types.json", trace(events)), match="event 1")
    assert "malformed" in message
    events = [kernel(1.0, 1.0), kernel("soon", 1.0)]
    one_line_error(write(tmp_path, "ts.json", trace(events)), match="event 1 has ts 'soon'")


def test_overlap_on_one_stream_is_a_counted_warning(tmp_path: Path) -> None:
    events = [kernel(0.0, 10.0), kernel(5.0, 10.0), kernel(30.0, 1.0), kernel(0.0, 50.0, stream=9)]
    table = load_trace(write(tmp_path, "overlap.json", trace(events, distributedInfo={"rank": 0})))
    assert len(table) == 4  # kept as recorded
    assert any(w.startswith("1 device activities") and "5000 ns" in w for w in table.meta["warnings"])


def test_entries_that_are_not_objects_are_skipped_and_counted(tmp_path: Path) -> None:
    table = load_trace(write(tmp_path, "junk.json", trace([kernel(1.0, 1.0), 5, None, "x"])))
    assert len(table) == 1
    assert table.meta["warnings"] == ["3 entries of the event array are not objects; skipped"]


@pytest.mark.parametrize(
    ("name", "data"),
    [
        ("empty.json", b""),
        ("blank.json", b"  \n "),
        ("empty_events.json", trace([], distributedInfo={"rank": 0})),
        ("only_metadata.json", trace([{"ph": "M", "name": "process_name", "pid": 1, "args": {}}])),
        ("empty.json.gz", gzip.compress(b"")),
        ("empty_array.json", b"[]"),
    ],
)
def test_empty_traces(tmp_path: Path, name: str, data: bytes) -> None:
    path = write(tmp_path, name, data)
    message = one_line_error(path, match=str(path))
    assert "empty" in message


def test_mixed_ranks_in_a_folder(traces_dir: Path, tmp_path: Path) -> None:
    shutil.copy(traces_dir / SMALL, tmp_path / "a.json.gz")
    shutil.copy(traces_dir / SMALL, tmp_path / "b.json.gz")
    message = one_line_error(tmp_path, match="both claim rank 0")
    assert "a.json.gz" in message and "b.json.gz" in message


def test_truncated_ascend_trace_view(traces_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rank0_ascend_pt"
    shutil.copytree(traces_dir / TEXT0, target)
    view = target / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    data = view.read_bytes()
    view.write_bytes(data[: len(data) // 3])
    one_line_error(target, match=str(view))


def test_ascend_negative_dur(traces_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rank0_ascend_pt"
    shutil.copytree(traces_dir / TEXT0, target)
    view = target / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = orjson.loads(view.read_bytes())
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X" and e.get("name") == "MEMCPY_ASYNC")
    events[index]["dur"] = -3.0
    view.write_bytes(orjson.dumps(events))
    one_line_error(target, match=f"event {index} has a negative dur")


def test_truncated_sqlite(traces_dir: Path, tmp_path: Path) -> None:
    data = (traces_dir / "nsys/extrap/profile4.sqlite").read_bytes()
    path = write(tmp_path, "cut.sqlite", data[: len(data) // 4])
    one_line_error(path, match=str(path))


def test_unknown_file(tmp_path: Path) -> None:
    path = write(tmp_path, "notes.json", b'{"hello": "world"}')
    one_line_error(path, match="not a trace")
    one_line_error(tmp_path / "missing.json", match="no such file")


def test_good_table_after_warnings_has_sane_columns(tmp_path: Path) -> None:
    events = [kernel(1.5, 2.0), {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel",
              "pid": 1, "tid": 1, "ts": 1.0, "dur": 0.25, "args": {"correlation": 9}}]  # fmt: skip
    table = load_trace(write(tmp_path, "ok.json", trace(events)))
    assert table.kind.tolist() == [Kind.KERNEL, Kind.RUNTIME]
    assert table.start_ns.tolist() == [1500, 1000] and table.end_ns.tolist() == [3500, 1250]
    assert np.array_equal(table.device, [0, -1]) and table.correlation.tolist() == [-1, 9]


def test_end_before_begin_names_the_event(tmp_path: Path) -> None:
    events = [kernel(1.0, 1.0), {"ph": "B", "name": "a", "pid": 1, "tid": 1, "ts": 5.0},
              {"ph": "E", "pid": 1, "tid": 1, "ts": 4.0}]  # fmt: skip
    one_line_error(write(tmp_path, "be.json", trace(events)), match="event 2 ends (ph E) before its begin event 1")


def test_traces_of_different_profilers_are_not_ranks_of_one_job(traces_dir: Path) -> None:
    kineto = traces_dir / "kineto/hta/trace_filter/sampled_rank-0.json.gz"
    nsys = traces_dir / "nsys/extrap/con_kernel.sqlite"
    message = one_line_error([kineto, nsys], match="different profilers")
    assert "PyTorch (Kineto)" in message and "Nsight Systems" in message


def test_an_integer_beyond_every_number_type_names_the_event(tmp_path: Path) -> None:
    events = [5, kernel(1.0, 1.0), kernel(2.0, 2**64 + 1)]  # 5: read as Loose, the integer kept whole
    one_line_error(write(tmp_path, "huge.json", json.dumps({"traceEvents": events}).encode()),
                   match="event 2 has dur 18446744073709551617")


def test_ascend_lane_id_of_the_wrong_type_names_the_event(traces_dir: Path, tmp_path: Path) -> None:
    target = tmp_path / "rank0_ascend_pt"
    shutil.copytree(traces_dir / TEXT0, target)
    view = target / "ASCEND_PROFILER_OUTPUT" / "trace_view.json"
    events = orjson.loads(view.read_bytes())
    index = next(i for i, e in enumerate(events) if e.get("ph") == "X")
    events[index]["pid"] = [events[index]["pid"]]
    view.write_bytes(orjson.dumps(events))
    one_line_error(target, match=f"event {index} is malformed")


def test_a_sqlite_schema_that_is_not_utf8_is_refused_by_name(tmp_path: Path) -> None:
    path = tmp_path / "bad.sqlite"
    with sqlite3.connect(path) as db:
        db.execute("CREATE TABLE CUPTI_ACTIVITY_KIND_KERNEL (start INT, end INT)")
        db.execute("PRAGMA writable_schema=ON")
        db.execute("UPDATE sqlite_master SET name = CAST(X'41D1' AS TEXT)")  # "A" and a byte no UTF-8 text has
    one_line_error(path, match="bad.sqlite")
