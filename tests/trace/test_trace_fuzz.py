"""Mangled real traces: the readers return a valid table or raise ParityError, nothing else."""

from __future__ import annotations

import gzip
import tempfile
from pathlib import Path

import numpy as np
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from parity.model.errors import ParityError
from parity.trace.load import load_trace
from parity.trace.table import ActivityTable

KINETO = "kineto/hta/critical_path/cuda_event_sync/event_sync_trace.json.gz"
ASCEND_DIR = "ascend/msinsight/text/level1/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
ASCEND = f"{ASCEND_DIR}/trace_view.json"
NSYS = "nsys/extrap/con_kernel.sqlite"
ASCEND_DB = "ascend/msinsight/db/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db"
FUZZ = settings(max_examples=50, deadline=None, derandomize=True,
                suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
STRANGE = [None, "", "12x", "7.5", "B", "E", -1, -1e30, 1e300, 2**63 + 5, [], {}, [1, 2],
           {"a": 1}, True, 0.5]  # fmt: skip


@pytest.fixture(scope="module")
def kineto_text(traces_dir: Path) -> bytes:
    with gzip.open(traces_dir / KINETO, "rb") as handle:
        return handle.read()


@pytest.fixture(scope="module")
def ascend_events(traces_dir: Path) -> list:
    """Metadata plus some complete events of each process of a real Ascend trace (kept small)."""
    events = orjson.loads((traces_dir / ASCEND).read_bytes())
    meta = [e for e in events if e.get("ph") == "M"]
    per_process: dict = {}
    for e in events:
        if e.get("ph") == "X" and len(per_process.setdefault(e.get("pid"), [])) < 12:
            e = dict(e)
            if isinstance(e.get("args"), dict):
                e["args"] = {k: v for k, v in e["args"].items() if k != "Call stack"}
            per_process[e.get("pid")].append(e)
    return meta + [e for group in per_process.values() for e in group]


def check(path: Path) -> None:
    try:
        table = load_trace(path)
    except ParityError as exc:
        message = str(exc)
        assert message and "\n" not in message
        return
    assert isinstance(table, ActivityTable) and len(table) > 0
    assert (table.end_ns >= table.start_ns).all()
    assert len(table.names) > int(table.name_id.max())
    assert np.isin(table.kind, np.arange(8)).all()


@FUZZ
@given(cut=st.floats(0.0, 1.0), gz=st.booleans())
def test_truncated_anywhere(kineto_text: bytes, tmp_path: Path, cut: float, gz: bool) -> None:
    data = gzip.compress(kineto_text) if gz else kineto_text
    path = tmp_path / ("t.json.gz" if gz else "t.json")
    path.write_bytes(data[: int(len(data) * cut)])
    check(path)


@FUZZ
@given(flips=st.lists(st.tuples(st.floats(0.0, 1.0), st.integers(0, 255)), min_size=1, max_size=8))
def test_flipped_bytes(kineto_text: bytes, tmp_path: Path, flips) -> None:
    data = bytearray(kineto_text)
    for where, value in flips:
        data[min(int(where * len(data)), len(data) - 1)] = value
    path = tmp_path / "f.json"
    path.write_bytes(bytes(data))
    check(path)


def mutate(events: list, data) -> list:
    """Delete keys or give values strange types, in a few events (or their args)."""
    events = [dict(e) if isinstance(e, dict) else e for e in events]
    for _ in range(data.draw(st.integers(1, 6))):
        index = data.draw(st.integers(0, len(events) - 1))
        event = events[index]
        if not isinstance(event, dict) or not event:
            continue
        target = event
        if isinstance(event.get("args"), dict) and data.draw(st.booleans()):
            target = event["args"] = dict(event["args"])
        if not target:
            continue
        key = data.draw(st.sampled_from(sorted(target)))
        action = data.draw(st.sampled_from(["delete", "retype", "replace_event"]))
        if action == "delete":
            del target[key]
        elif action == "retype":
            target[key] = data.draw(st.sampled_from(STRANGE))
        else:
            events[index] = data.draw(st.sampled_from(STRANGE))
    return events


@FUZZ
@given(data=st.data())
def test_kineto_keys_deleted_or_retyped(kineto_text: bytes, tmp_path: Path, data) -> None:
    document = orjson.loads(kineto_text)
    document["traceEvents"] = mutate(document["traceEvents"], data)
    path = tmp_path / "m.json"
    path.write_bytes(orjson.dumps(document))
    check(path)


@FUZZ
@given(data=st.data())
def test_ascend_keys_deleted_or_retyped(ascend_events: list, tmp_path: Path, data) -> None:
    folder = tmp_path / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "trace_view.json").write_bytes(orjson.dumps(mutate(ascend_events, data)))
    check(folder.parent)


SIDECARS = ("kernel_details.csv", "step_trace_time.csv", "communication.json")
CELLS = ["", "N/A", "-1", "1e400", "-1e400", "nan", "inf", "abc", '"', "1.2.3", "\u00b2", "99999999999999999999999"]


@FUZZ
@given(which=st.sampled_from(SIDECARS), data=st.data())
def test_ascend_sidecar_files_mangled(traces_dir: Path, ascend_events: list, tmp_path: Path, which: str, data) -> None:
    """The real CSVs and communication.json beside a (small) timeline, one of them cut short,
    its bytes flipped or one cell replaced; then analysed, as their step figures are used there."""
    from parity.trace.analysis import analyze

    source = traces_dir / ASCEND_DIR
    folder = Path(tempfile.mkdtemp(dir=tmp_path)) / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    folder.mkdir(parents=True)
    (folder / "trace_view.json").write_bytes(orjson.dumps(ascend_events))
    for name in SIDECARS:
        (folder / name).write_bytes((source / name).read_bytes())
    raw = (folder / which).read_bytes()
    mode = data.draw(st.sampled_from(["cut", "flip", "cell"]))
    if mode == "cut":
        raw = raw[: int(len(raw) * data.draw(st.floats(0.0, 1.0)))]
    elif mode == "flip":
        flipped = bytearray(raw)
        for where in data.draw(st.lists(st.floats(0.0, 1.0), min_size=1, max_size=8)):
            flipped[min(int(where * len(flipped)), len(flipped) - 1)] = data.draw(st.integers(0, 255))
        raw = bytes(flipped)
    else:
        lines = raw.decode().splitlines()
        row = data.draw(st.integers(0, len(lines) - 1))
        cells = lines[row].split(",")
        cells[data.draw(st.integers(0, len(cells) - 1))] = data.draw(st.sampled_from(CELLS))
        lines[row] = ",".join(cells)
        raw = "\n".join(lines).encode() + b"\n"
    (folder / which).write_bytes(raw)
    check(folder.parent)
    try:
        analyze(load_trace(folder.parent))
    except ParityError as exc:
        assert str(exc) and "\n" not in str(exc)


@settings(max_examples=30, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(source=st.sampled_from([NSYS, ASCEND_DB]), cut=st.floats(0.05, 1.0),
       flips=st.lists(st.floats(0.0, 1.0), min_size=1, max_size=20))  # fmt: skip
def test_mangled_sqlite(traces_dir: Path, tmp_path: Path, source: str, cut: float, flips) -> None:
    data = bytearray((traces_dir / source).read_bytes())
    data = data[: max(100, int(len(data) * cut))]
    for flip in flips:
        where = min(int(flip * len(data)), len(data) - 1)
        data[where] = (data[where] + 97) % 256
    path = tmp_path / "ascend_pytorch_profiler_0.db"
    path.write_bytes(bytes(data))
    check(path)


DB_TABLES = {  # the tables the readers query, and their time, id and name columns
    ASCEND_DB: {"TASK": ("startNs", "endNs", "streamId", "taskType", "globalTaskId"),
                "COMMUNICATION_OP": ("startNs", "endNs", "opName", "groupName", "count", "dataType"),
                "STRING_IDS": ("id", "value"), "PYTORCH_API": ("startNs", "endNs", "name", "globalTid"),
                "CANN_API": ("startNs", "endNs", "name", "connectionId"), "STEP_TIME": ("id", "startNs", "endNs"),
                "RANK_DEVICE_MAP": ("rankId",), "COMPUTE_TASK_INFO": ("name", "taskType")},
    NSYS: {"CUPTI_ACTIVITY_KIND_KERNEL": ("start", "end", "streamId", "shortName", "correlationId"),
           "CUPTI_ACTIVITY_KIND_MEMCPY": ("start", "end", "bytes"), "CUPTI_ACTIVITY_KIND_RUNTIME": ("start", "end"),
           "StringIds": ("id", "value")},
}  # fmt: skip
DB_VALUES = [None, "", "abc", "12:30", "N/A", -1, -(2**63), 2**63 - 1, 1.5, 1e308, b"\x00\xff", 0]


@settings(max_examples=60, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])  # fmt: skip
@given(source=st.sampled_from(sorted(DB_TABLES)), data=st.data())
def test_sqlite_cells_of_strange_types(traces_dir: Path, tmp_path: Path, source: str, data) -> None:
    """SQLite keeps any value in any column: NULLs, text, reals, blobs and int64 extremes in the
    columns the readers query, in one row or a whole column; then analysed."""
    import sqlite3

    from parity.trace.analysis import analyze

    path = Path(tempfile.mkdtemp(dir=tmp_path)) / Path(source).name
    path.write_bytes((traces_dir / source).read_bytes())
    with sqlite3.connect(path) as db:
        present = {name for (name,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        table = data.draw(st.sampled_from(sorted(set(DB_TABLES[source]) & present)))
        column = data.draw(st.sampled_from(DB_TABLES[source][table]))
        value = data.draw(st.sampled_from(DB_VALUES))
        where = "" if data.draw(st.booleans()) else f" WHERE rowid = (SELECT min(rowid) FROM {table})"
        try:
            db.execute(f"UPDATE {table} SET {column} = ?{where}", (value,))
        except sqlite3.DatabaseError:
            return  # a constraint of the file's own schema
    check(path)
    try:
        analyze(load_trace(path))
    except ParityError as exc:
        assert str(exc) and "\n" not in str(exc)

