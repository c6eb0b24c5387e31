"""The Ascend database export on a small file made here: a task that carries a collective, and the
communication matrix from the tasks' ranks and sizes."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import numpy as np
import pytest

from parity.model.errors import ParityError
from parity.trace import analyze, load_trace
from parity.trace.categories import categorize

US = 1000  # ns


def write_db(folder: Path, *, not_overlapped_us: float = 230.0) -> Path:
    """One rank, one step [0, 500 us]: a MatMul operator on stream 2 at [0, 100 us]; on stream 4
    an ``AI_CORE`` task with no operator at [150, 400 us] holding ``hcom_allReduce`` at
    [160, 390 us] (and its Notify Wait task). The profiler's step table beside it (analysis.db)
    says Computing 100, Communication 230, Not Overlapped ``not_overlapped_us``."""
    out = folder / "rank0_ascend_pt" / "ASCEND_PROFILER_OUTPUT"
    out.mkdir(parents=True)
    path = out / "ascend_pytorch_profiler_0.db"
    strings = {1: "AI_CORE", 2: "aclnnMatmul_MatMulV2", 3: "hcom_allReduce__1_0_1", 4: "Notify Wait"}
    with sqlite3.connect(path) as db:
        db.executescript("""
            CREATE TABLE STRING_IDS (id INTEGER, value TEXT);
            CREATE TABLE TASK (globalTaskId INTEGER, startNs INTEGER, endNs INTEGER, deviceId INTEGER,
                               connectionId INTEGER, streamId INTEGER, taskType INTEGER);
            CREATE TABLE COMPUTE_TASK_INFO (globalTaskId INTEGER, name INTEGER, taskType INTEGER);
            CREATE TABLE COMMUNICATION_OP (opName INTEGER, startNs INTEGER, endNs INTEGER,
                                           connectionId INTEGER, opId INTEGER);
            CREATE TABLE COMMUNICATION_TASK_INFO (globalTaskId INTEGER, opId INTEGER);
            CREATE TABLE STEP_TIME (id INTEGER, startNs INTEGER, endNs INTEGER);
        """)
        db.executemany("INSERT INTO STRING_IDS VALUES (?, ?)", strings.items())
        db.executemany("INSERT INTO TASK VALUES (?, ?, ?, 0, NULL, ?, ?)", [
            (1, 0, 100 * US, 2, 1), (2, 150 * US, 400 * US, 4, 1), (3, 160 * US, 390 * US, 4, 4)])
        db.execute("INSERT INTO COMPUTE_TASK_INFO VALUES (1, 2, 1)")
        db.execute("INSERT INTO COMMUNICATION_OP VALUES (3, ?, ?, NULL, 1)", (160 * US, 390 * US))
        db.execute("INSERT INTO COMMUNICATION_TASK_INFO VALUES (3, 1)")
        db.execute("INSERT INTO STEP_TIME VALUES (1, 0, ?)", (500 * US,))
    with sqlite3.connect(out / "analysis.db") as db:
        db.execute("CREATE TABLE StepTraceTime (step TEXT, computing REAL, communication_not_overlapped REAL, "
                   "overlapped REAL, communication REAL, free REAL)")
        db.execute("INSERT INTO StepTraceTime VALUES ('1', 100, ?, 0, 230, 60)", (not_overlapped_us,))
    return folder / "rank0_ascend_pt"


def test_a_task_carrying_a_collective_is_communication_not_matrix(tmp_path: Path) -> None:
    table = load_trace(write_db(tmp_path))
    cats = categorize(table)
    carrier = np.flatnonzero((table.stream == 4) & (table.start_ns == 150 * US))
    assert len(carrier) == 1 and cats.of_rows()[carrier[0]] == "communication"
    rank = analyze(table).ranks[0]
    stream4 = next(s for s in rank.streams if s.stream == 4)
    assert set(stream4.categories) == {"communication"}
    # exposed communication is the HCCL operator minus compute: 230 us, the step table's figure
    assert rank.comm.exposed_communication_ns == 230 * US
    assert rank.comm.compute_ns == 100 * US
    step = rank.ascend_steps[0]
    assert step.communication_not_overlapped_us == 230.0 and step.max_deviation_us == 0.0


def test_exposed_communication_unlike_the_step_table_is_a_finding(tmp_path: Path) -> None:
    result = analyze(load_trace(write_db(tmp_path, not_overlapped_us=200.0)))
    found = [f for f in result.findings if f.code == "exposed-communication-mismatch"]
    assert len(found) == 1 and "230.000 us" in found[0].message and "200.000 us" in found[0].message
    assert not any(f.code == "exposed-communication-mismatch" for f in analyze(load_trace(write_db(tmp_path / "b"))).findings)


def test_communication_matrix_from_the_task_table(tmp_path: Path) -> None:
    """COMMUNICATION_TASK_INFO with ranks and sizes (profiler level 1) gives the matrix as the text
    output's plane tasks do: in the all-reduce [160, 390 us], an SDMA copy 0->0 (4 MB in
    [200, 300 us]; local, as rank 1 is not loaded) and the Notify Wait [160, 390 us] to rank 1,
    which moves nothing."""
    folder = write_db(tmp_path)
    path = folder / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db"
    with sqlite3.connect(path) as db:
        db.executescript("""
            DROP TABLE COMMUNICATION_TASK_INFO;
            CREATE TABLE COMMUNICATION_TASK_INFO (globalTaskId INTEGER, opId INTEGER, srcRank INTEGER,
                                                  dstRank INTEGER, size INTEGER, linkType INTEGER);
            CREATE TABLE ENUM_HCCL_LINK_TYPE (id INTEGER, name TEXT);
            INSERT INTO ENUM_HCCL_LINK_TYPE VALUES (1, 'HCCS'), (65534, 'N/A');
            INSERT INTO STRING_IDS VALUES (5, 'SDMA');
        """)
        db.execute("INSERT INTO TASK VALUES (4, ?, ?, 0, NULL, 4, 5)", (200 * US, 300 * US))
        db.executemany("INSERT INTO COMMUNICATION_TASK_INFO VALUES (?, 1, ?, ?, ?, ?)",
                       [(3, 0, 1, 0, 65534), (4, 0, 0, 4_000_000, 1)])
    table = load_trace(folder)
    assert sum(link is not None for link in table.extra["link"]) == 2
    figures = {(f.op, f.src, f.dst): f for f in analyze(table).comm_matrix}
    assert table.extra["link"][table.start_ns == 200 * US][0] == (0, 0, 4_000_000, "HCCS")
    link = figures[("hcom_allReduce__1_0_1", 0, 0)]
    assert (link.transport, link.bytes, link.time_ns) == ("LOCAL", 4_000_000, 100 * US)
    assert link.bandwidth_gbps == 40.0  # 4e6 B / 100e3 ns


def test_no_link_column_without_ranks(tmp_path: Path) -> None:
    """Profiler level 0 records no ranks or sizes: no link column, and no matrix."""
    table = load_trace(write_db(tmp_path))
    assert "link" not in table.extra and not analyze(table).comm_matrix


@pytest.mark.parametrize(("update", "says"), [
    ("UPDATE TASK SET startNs = NULL WHERE globalTaskId = 2", "TASK.startNs holds None"),
    ("UPDATE TASK SET endNs = 'abc' WHERE globalTaskId = 1", "TASK.endNs holds 'abc'"),
    ("UPDATE COMMUNICATION_OP SET startNs = 1.5", "COMMUNICATION_OP.startNs holds 1.5"),
    ("UPDATE TASK SET startNs = '12:30' WHERE globalTaskId = 1", "TASK.startNs holds '12:30'"),
    ("UPDATE COMMUNICATION_OP SET endNs = 0", "COMMUNICATION_OP row 0 ends before it starts"),
    ("UPDATE STEP_TIME SET endNs = NULL", "STEP_TIME.endNs holds None"),
    ("UPDATE COMMUNICATION_OP SET startNs = -9223372036854775808", "a time is out of place"),
])  # fmt: skip
def test_a_time_that_is_no_integer_ns_or_out_of_place_is_refused_in_one_line(tmp_path: Path, update: str,
                                                                            says: str) -> None:
    """SQLite keeps any value in any column: a NULL, text or real time, an operation ending
    before it starts, a time near the int64 limit (whose differences overflow) are refused with
    the table and column named, never a numpy error."""
    rank = write_db(tmp_path)
    with sqlite3.connect(rank / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") as db:
        db.execute(update)
    with pytest.raises(ParityError) as caught:
        load_trace(rank)
    message = str(caught.value)
    assert says in message and "\n" not in message and "ascend_pytorch_profiler_0.db" in message


def test_times_written_as_decimal_text_or_integral_reals_read_as_integers(tmp_path: Path) -> None:
    """torch_npu writes PYTORCH_API times as text; a real holding an integer reads as that integer."""
    rank = write_db(tmp_path)
    expected = load_trace(rank)
    with sqlite3.connect(rank / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") as db:
        db.execute("UPDATE TASK SET startNs = CAST(startNs AS TEXT), endNs = CAST(endNs AS REAL)")
        db.execute("UPDATE STEP_TIME SET endNs = ' ' || CAST(endNs AS TEXT)")
    table = load_trace(rank)
    assert table.start_ns.tolist() == expected.start_ns.tolist() and table.end_ns.tolist() == expected.end_ns.tolist()


def test_a_rank_beyond_the_rank_column_is_refused_in_one_line(tmp_path: Path) -> None:
    rank = write_db(tmp_path)
    with sqlite3.connect(rank / "ASCEND_PROFILER_OUTPUT" / "ascend_pytorch_profiler_0.db") as db:
        db.execute("CREATE TABLE RANK_DEVICE_MAP (rankId INTEGER, deviceId INTEGER)")
        db.execute("INSERT INTO RANK_DEVICE_MAP VALUES (?, 0)", (2**40,))
    with pytest.raises(ParityError, match=r"rank 1099511627776 \(from RANK_DEVICE_MAP/file name\) is no rank number"):
        load_trace(rank)
