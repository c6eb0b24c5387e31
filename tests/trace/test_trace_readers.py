"""Trace readers on the real shared traces: kinds, streams, ranks, steps, exact times."""

from __future__ import annotations

import collections
import gzip
import re
import sqlite3
from decimal import Decimal
from pathlib import Path

import numpy as np
import orjson
import pytest

from parity.model.errors import ParityError
from parity.trace.load import load_trace
from parity.trace.intervals import lane_overlaps, lane_running_max
from parity.trace.readers import jsonstream, kineto_events, parallel
from parity.trace.readers.detect import detect
from parity.trace.readers.jsonstream import EventStream
from parity.trace.readers.kineto import read_kineto
from parity.trace.readers.times import parse_us_text, us_to_ns
from parity.trace.table import Kind

HTA = "kineto/hta"
NQ = f"{HTA}/negative_queue_length_values_check/rank0.json.gz"
NS = f"{HTA}/ns_resolution_trace/rank-0.Apr_03_18_51_38.1102.pt.trace.json.gz"
TEXT = "ascend/msinsight/text"
DB = "ascend/msinsight/db/level0"


def kinds(table) -> dict[str, int]:
    return {Kind(k).name: int((table.kind == k).sum()) for k in np.unique(table.kind)}


def raw_events(path: Path) -> list[dict]:
    with gzip.open(path, "rb") as handle:
        data = orjson.loads(handle.read())
    return data["traceEvents"] if isinstance(data, dict) else data


# --- Kineto ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def nq_table(traces_dir: Path):
    return load_trace(traces_dir / NQ)


def test_kineto_rows_match_the_file_event_for_event(traces_dir: Path, nq_table) -> None:
    path = traces_dir / NQ
    table = nq_table
    events = [e for e in raw_events(path) if e.get("ph") == "X" and e.get("cat") != "Trace"]
    assert len(table) == len(events) == 67216
    assert kinds(table) == {
        "KERNEL": 6080, "MEMCPY": 1390, "MEMSET": 277, "RUNTIME": 33924, "CPU_OP": 25185,
        "STEP": 5, "OTHER": 355,
    }  # fmt: skip
    # rows keep file order: every duration is the file's dur, to the nanosecond
    durs = np.array([e["dur"] for e in events], dtype=np.float64)
    assert np.array_equal(table.duration_ns, np.rint(durs * 1000).astype(np.int64))
    starts = np.array([e["ts"] for e in events], dtype=np.int64)
    assert np.array_equal(table.start_ns, starts * 1000)
    assert [table.name_of(i) for i in (0, 1000, 60000)] == [events[i]["name"] for i in (0, 1000, 60000)]
    device = table.device_mask()
    assert collections.Counter(table.stream[device].tolist()) == {
        7: 7262, 27: 370, 84: 36, 25: 35, 285: 22, 363: 22,
    }  # fmt: skip
    assert set(table.device[device].tolist()) == {0}
    assert table.meta["format"] == "kineto" and table.meta["ranks"] == [0]
    assert table.meta["rank_source"] == "distributedInfo"


def test_kineto_steps_follow_the_launching_call(nq_table) -> None:
    table = nq_table
    steps = table.kind == Kind.STEP
    assert sorted(table.step[steps].tolist()) == [550, 551, 552, 553, 554]
    assert min(table.name_of(i) for i in np.flatnonzero(steps)) == "ProfilerStep#550"
    # a kernel's step is the step span containing its cudaLaunchKernel, not its own start
    runtime = {int(c): i for i in np.flatnonzero(table.kind == Kind.RUNTIME)
               for c in [table.correlation[i]]}  # fmt: skip
    spans = [(int(table.start_ns[i]), int(table.end_ns[i]), int(table.step[i]))
             for i in np.flatnonzero(steps)]  # fmt: skip
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    checked = 0
    for row in kernels[::97]:
        launcher = runtime.get(int(table.correlation[row]))
        launch = table.start_ns[row if launcher is None else launcher]
        expected = [s for a, b, s in spans if a <= launch < b] or [-1]
        assert table.step[row] == expected[0]
        checked += 1
    assert checked > 50
    assert collections.Counter(table.step[table.device_mask()].tolist())[551] == 1375


def test_ns_resolution_timestamps_are_exact(traces_dir: Path) -> None:
    """1712195495519689.047 us does not fit a float64 to the ns; the reader keeps every digit."""
    path = traces_dir / NS
    with gzip.open(path, "rb") as handle:
        text = handle.read()
    table = load_trace(path)
    assert table.meta["exact_timestamps"] is True
    assert table.meta["display_time_unit"] == "ns"
    # an independent decimal parse of every kernel event, in file order
    kernel_ts = re.findall(rb'"cat": "kernel",[^\n]*\n\s*"ts": ([0-9.]+), "dur": ([0-9.]+)', text)
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    assert len(kernel_ts) == len(kernels) == 4350
    expected_start = [int(Decimal(ts.decode()) * 1000) for ts, _ in kernel_ts]
    expected_dur = [int(Decimal(d.decode()) * 1000) for _, d in kernel_ts]
    assert table.start_ns[kernels].tolist() == expected_start
    assert table.duration_ns[kernels].tolist() == expected_dur
    floats_would_be = us_to_ns(np.array([float(ts) for ts, _ in kernel_ts]))
    assert (floats_would_be != np.array(expected_start)).any()  # the naive path loses digits


def test_cuda_sync_events_become_sync_rows(traces_dir: Path) -> None:
    table = load_trace(traces_dir / f"{HTA}/critical_path/cuda_event_sync_multi_stream/event_sync_trace.json.gz")
    rows = np.flatnonzero(table.kind == Kind.SYNC)
    got = [(table.extra["sync_type"][i], int(table.stream[i]), int(table.extra["wait_on_stream"][i]),
            int(table.extra["wait_on_event_corr"][i]), int(table.correlation[i])) for i in rows]  # fmt: skip
    assert got == [
        ("Event Sync", -1, -1, -1, 24), ("Event Sync", -1, 20, 32, 54),
        ("Stream Wait Event", 24, 20, 1385, 1389), ("Event Sync", -1, 28, 62, 1410),
        ("Context Sync", -1, -1, -1, 1424),
    ]  # fmt: skip
    assert set(table.device[rows].tolist()) == {0}


@pytest.mark.parametrize(
    ("relative", "expected", "rank", "lanes"),
    [
        (f"{HTA}/trace_file_list/inference_rank_1.json.gz", {"KERNEL": 4, "RUNTIME": 8}, 1, None),
        (f"{HTA}/amd_trace/mi250_minitoy_train_ROCm6_2_kineto.json.gz",
         {"KERNEL": 14, "MEMCPY": 2, "RUNTIME": 21, "CPU_OP": 70, "STEP": 2, "OTHER": 3}, 0, {(2, 0)}),
        (f"{HTA}/cpu_only/rank-34.Jul_15_10_52_41.1074.pt.trace.json.gz",
         {"CPU_OP": 4, "STEP": 1, "OTHER": 10}, 34, set()),
        (f"{HTA}/trace_compare/base/base.json.gz", None, 1, None),
    ],
)  # fmt: skip
def test_kineto_variants(traces_dir: Path, relative, expected, rank, lanes) -> None:
    table = load_trace(traces_dir / relative)
    if expected is not None:
        assert kinds(table) == expected
    assert table.meta["ranks"] == [rank] and set(table.rank.tolist()) == {rank}
    if lanes is not None:
        device = table.device_mask()
        assert set(zip(table.device[device].tolist(), table.stream[device].tolist())) == lanes


@pytest.mark.slow
def test_mtia_device_events(traces_dir: Path) -> None:
    table = load_trace(traces_dir / f"{HTA}/mtia_trace_single_rank/mtia_rank_0.json.gz")
    kernels = table.kind == Kind.KERNEL
    assert kernels.sum() == 25814 and set(table.device[kernels].tolist()) == {9}
    assert (table.kind == Kind.RUNTIME).sum() == 3453


def test_generic_chrome_trace_device_lanes(tmp_path: Path) -> None:
    """No Kineto categories: lanes named like devices and streams still give kernels."""
    events = [
        {"ph": "M", "name": "process_name", "pid": 7, "tid": 0, "args": {"name": "/device:GPU:3"}},
        {"ph": "M", "name": "thread_name", "pid": 7, "tid": 11, "args": {"name": "Stream #5"}},
        {"ph": "M", "name": "process_name", "pid": 1, "tid": 0, "args": {"name": "python host"}},
        {"ph": "X", "name": "fusion.1", "pid": 7, "tid": 11, "ts": 10.5, "dur": 2.25},
        {"ph": "X", "name": "fusion.2", "pid": 7, "tid": 11, "ts": 13, "dur": 1},
        {"ph": "X", "name": "step", "pid": 1, "tid": 1, "ts": 9, "dur": 9},
        {"ph": "B", "name": "outer", "pid": 7, "tid": 11, "ts": 20},
        {"ph": "B", "name": "inner", "pid": 7, "tid": 11, "ts": 20.5},
        {"ph": "B", "name": "host", "pid": 1, "tid": 1, "ts": 21},
        {"ph": "E", "pid": 7, "tid": 11, "ts": 21.25},
        {"ph": "E", "pid": 7, "tid": 11, "ts": 23},
        {"ph": "E", "pid": 1, "tid": 1, "ts": 22},
        {"ph": "B", "name": "never closed", "pid": 1, "tid": 1, "ts": 30},
    ]
    path = tmp_path / "xla.trace.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    assert detect(path) == "kineto"
    table = load_trace(path)
    assert table.meta["format"] == "chrome"
    assert kinds(table) == {"KERNEL": 4, "OTHER": 2}
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    assert [table.name_of(i) for i in kernels] == ["fusion.1", "fusion.2", "inner", "outer"]
    assert table.stream[kernels].tolist() == [5] * 4 and table.device[kernels].tolist() == [3] * 4
    assert table.start_ns[kernels].tolist() == [10500, 13000, 20500, 20000]
    assert table.end_ns[kernels].tolist() == [12750, 14000, 21250, 23000]
    host = np.flatnonzero(table.kind == Kind.OTHER)
    assert [(table.name_of(i), int(table.duration_ns[i])) for i in host] == [("step", 9000), ("host", 1000)]
    assert table.meta["warnings"] == [
        "1 'B'/'E' duration events have no partner; skipped",
        "1 device activities start before the previous one on the same stream ends "
        "(largest overlap 2500 ns); kept as recorded",  # inner nests in outer on stream 5
    ]


def test_null_ids_and_named_lanes_read_as_absent(tmp_path: Path) -> None:
    """``null`` device/stream/correlation/External id and string pid/tid are no ids: the
    table is the one without those keys, whichever decoding path reads the block."""

    def kernel(i: int, args: dict, pid=0, tid=7) -> dict:
        return {"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": pid, "tid": tid, "ts": 10.0 * i, "dur": 1.0,
                "args": args}  # fmt: skip

    with_nulls = [kernel(0, {"device": None, "stream": None, "correlation": None, "External id": None}),
                  kernel(1, {"device": 0, "stream": 7}, pid="GPU 0", tid="stream 7")]  # fmt: skip
    without = [kernel(0, {}), kernel(1, {"device": 0, "stream": 7}, pid="GPU 0", tid="stream 7")]
    tables = load_each(tmp_path, {"nulls.json": with_nulls, "absent.json": without})
    same_table(*tables)
    table = tables[0]
    assert table.correlation.tolist() == [-1, -1] and table.extra["external_id"].tolist() == [-1, -1]
    assert table.extra["pid"].tolist() == [0, -1] and table.extra["tid"].tolist() == [7, -1]
    assert table.device.tolist() == [0, 0] and table.stream.tolist() == [7, 7]


def test_text_ids_of_rocm_runtime_calls_read_as_absent(tmp_path: Path) -> None:
    """ROCm traces give each runtime call's ``args.stream`` as text (``"0x0"``): the block still
    decodes into structs (not the slower dicts), and text ids are no ids, as in a dict."""
    from parity.trace.readers.kineto_events import DECODER

    def event(cat: str, i: int, args: dict) -> dict:
        return {"ph": "X", "cat": cat, "name": f"{cat}{i}", "pid": 0, "tid": 7, "ts": 10.0 * i, "dur": 1.0,
                "args": args}  # fmt: skip

    with_text = [event("cuda_runtime", 0, {"stream": "0x0", "correlation": 5}),
                 event("kernel", 1, {"device": "0", "stream": 7, "correlation": "5"})]  # fmt: skip
    without = [event("cuda_runtime", 0, {"correlation": 5}), event("kernel", 1, {"stream": 7})]
    assert type(DECODER.decode(orjson.dumps(with_text))[0]).__name__ == "Complete"
    tables = load_each(tmp_path, {"text.json": with_text, "absent.json": without})
    same_table(*tables)
    assert tables[0].correlation.tolist() == [5, -1] and tables[0].stream.tolist() == [7, 7]


def load_each(folder: Path, events_by_name: dict[str, list]) -> list:
    """Each event list written as a Kineto file of that name in ``folder``, and its table."""
    tables = []
    for name, events in events_by_name.items():
        path = folder / name
        path.write_bytes(orjson.dumps({"traceEvents": events}))
        tables.append(load_trace(path))
    return tables


def same_table(a, b) -> None:
    for column in ("kind", "start_ns", "end_ns", "rank", "device", "stream", "correlation", "step"):
        assert np.array_equal(getattr(a, column), getattr(b, column)), column
    assert [a.names[i] for i in a.name_id] == [b.names[i] for i in b.name_id]
    for key in ("pid", "tid", "external_id", "wait_on_stream", "wait_on_event_corr"):
        assert np.array_equal(a.extra[key], b.extra[key]), key


@pytest.mark.parametrize("compress", [False, True])
@pytest.mark.parametrize("block", [64, 4096, 1 << 20])
def test_stream_buffer_holds_any_event_and_keeps_the_keys_around(tmp_path: Path, compress: bool, block: int) -> None:
    """Events far larger than a block, space before the JSON, keys after the array: every event
    comes out once, in order, and the header whole."""
    events = [{"ph": "X", "name": "k" * size, "ts": i, "dur": 1} for i, size in enumerate([10, 5000, 20, 100_000, 3])]
    text = b" " * 50_000 + orjson.dumps({"a": 1, "traceEvents": events, "z": [1, 2]}) + b"  \n"
    path = tmp_path / ("t.json.gz" if compress else "t.json")
    path.write_bytes(gzip.compress(text) if compress else text)
    stream = EventStream(path, block_bytes=block)
    assert [e["name"] for _, b in stream for e in b] == [e["name"] for e in events]
    assert stream.header == {"a": 1, "traceEvents": None, "z": [1, 2]}


@pytest.mark.parametrize(("relative", "block"), [(f"{HTA}/trace_filter/sampled_rank-1.json.gz", 64 << 10), (NS, 2 << 20)])
def test_streamed_blocks_equal_one_parse(traces_dir: Path, monkeypatch, relative: str, block: int) -> None:
    """Small blocks (many cuts), and blocks parsed by worker processes, give the same table."""
    path = traces_dir / relative
    whole = read_kineto(path)
    stream = EventStream(path, block_bytes=block)
    blocks = [len(events) for _, events in stream]
    assert len(blocks) >= 8 and sum(blocks) == len(raw_events(path))
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", block)
    same_table(whole, read_kineto(path))
    calls = []
    original = parallel.read_shares
    monkeypatch.setattr(parallel, "read_shares", lambda *a, **k: calls.append(1) or original(*a, **k))
    same_table(whole, read_kineto(path, workers=3))
    assert calls and whole.meta["exact_timestamps"] == (relative == NS)


def test_parallel_read_falls_back_and_names_the_bad_event(tmp_path: Path, monkeypatch) -> None:
    events = [{"ph": "X", "cat": "kernel", "name": f"k{i}", "pid": 0, "tid": 7, "ts": i * 10.0,
               "dur": 1.0, "args": {"stream": 7, "device": 0}} for i in range(3000)]  # fmt: skip
    events[2500]["dur"] = -1.0
    path = tmp_path / "bad.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}, option=orjson.OPT_INDENT_2))
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 16 << 10)
    for workers in (2, 3):
        with pytest.raises(ParityError, match="event 2500 has a negative dur"):
            read_kineto(path, workers=workers)


# --- Ascend ----------------------------------------------------------------------------------


def test_ascend_text_level1(traces_dir: Path) -> None:
    table = load_trace(traces_dir / f"{TEXT}/level1/rank0_ascend_pt")
    assert table.meta["format"] == "ascend-text" and table.meta["ranks"] == [0]
    device = table.device_mask()
    # SYNC rows (EVENT_RECORD/EVENT_WAIT) are not device rows; stream 4 holds the 4 HCCL ops
    assert collections.Counter(table.stream[device].tolist()) == {2: 207, 3: 4, 4: 300, 0: 2}
    # kernel_details.csv's Accelerator Core wins over trace_view's Task Type (AI_CORE)
    cores = collections.Counter(c for c in table.extra["accelerator_core"][device] if c)
    assert cores == {"AI_VECTOR_CORE": 149, "AI_CORE": 23, "MIX_AIV": 13, "HCCL": 4, "DSA_SQE": 2}
    hccl = np.flatnonzero(table.extra["task_type"] == "HCCL")
    assert [table.name_of(i) for i in hccl] == [f"hcom_allReduce__586_{i}_1" for i in range(4)]
    assert set(table.stream[hccl].tolist()) == {4}
    assert (table.kind == Kind.RUNTIME).sum() == 707  # CANN API calls (level 1 only)
    # string timestamps, exact: the first hardware task is "1736408883674584.732"
    first = np.flatnonzero(table.kind == Kind.KERNEL)[0]
    assert table.name_of(first) == "PROFILING_ENABLE"
    assert table.start_ns[first] == 1736408883674584732
    memcpy = np.flatnonzero((table.kind == Kind.MEMCPY) & (table.stream == 2))[0]
    assert table.duration_ns[memcpy] == 840077  # "dur": 840.07675 us
    assert set(table.step[device & (table.step >= 0)].tolist()) == {50}
    step_trace = table.meta["step_trace"]
    assert step_trace[0]["Step"] == 50
    assert step_trace[0]["Computing"] == pytest.approx(8873.756)
    assert step_trace[0]["Communication(Not Overlapped)"] == pytest.approx(101963.203)
    assert step_trace[0]["Free"] == pytest.approx(25744.05)
    assert table.meta["warnings"] == []


def test_ascend_text_level0_has_no_cann_rows_and_falls_back_to_task_type(traces_dir: Path) -> None:
    table = load_trace(traces_dir / f"{TEXT}/level0/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT")
    assert table.meta["ranks"] == [1]
    assert (table.kind == Kind.RUNTIME).sum() == 0
    device = table.device_mask()
    cores = collections.Counter(c for c in table.extra["accelerator_core"][device] if c)
    # csv says N/A: Task Type AI_CORE does not tell Cube from Vector, the others name their unit
    assert cores == {"N/A": 172, "MIX_AIV": 13, "HCCL": 4, "DSA_SQE": 2}
    hccl = table.extra["task_type"] == "HCCL"
    assert set(table.stream[hccl].tolist()) == {4}


def test_ascend_db_agrees_with_text_on_the_same_rank(traces_dir: Path) -> None:
    """The export of the same training job (another profiling session) has the same work."""
    db = load_trace(traces_dir / f"{DB}/rank0_ascend_pt")
    text = load_trace(traces_dir / f"{TEXT}/level0/rank0_ascend_pt")
    assert db.meta["format"] == "ascend-db" and db.meta["ranks"] == text.meta["ranks"] == [0]
    for table in (db, text):
        device = table.device_mask()
        assert set(table.stream[device].tolist()) == {2, 3, 4}
        assert (table.kind == Kind.MEMCPY).sum() == 24 and (table.kind == Kind.SYNC).sum() == 26
        hccl = np.flatnonzero(table.extra["task_type"] == "HCCL")
        assert len(hccl) == 4 and set(table.stream[hccl].tolist()) == {4}
        assert set(table.step[device].tolist()) == {50}
        assert (table.kind == Kind.STEP).sum() == 1
    names = [collections.Counter(t.names[i] for i in t.name_id[t.kind == Kind.KERNEL]) for t in (db, text)]
    shared = sum((names[0] & names[1]).values())
    assert shared >= 0.95 * sum(names[1].values())
    db_cores = collections.Counter(c for c in db.extra["accelerator_core"] if c)
    assert db_cores["AI_VECTOR_CORE"] == 149  # the export knows vector kernels level 0 text lacks
    assert db.meta["step_trace"][0]["Step"] == 50  # analysis.db's StepTraceTime
    assert db.meta["step_trace"][0]["Communication(Not Overlapped)"] == pytest.approx(85881.122)


def test_ascend_db_times_are_the_task_table(traces_dir: Path) -> None:
    path = traces_dir / f"{DB}/rank1_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_1.db"
    table = load_trace(path)
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute("SELECT startNs, endNs FROM TASK ORDER BY startNs").fetchall()
    tasks = np.isin(table.kind, (Kind.KERNEL, Kind.MEMCPY, Kind.SYNC)) & (table.extra["task_type"] != "HCCL")
    assert sorted(zip(table.start_ns[tasks].tolist(), table.end_ns[tasks].tolist())) == sorted(rows)
    assert table.meta["ranks"] == [1]


# --- Nsight Systems --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "expected"),
    [
        ("con_kernel.sqlite", {"KERNEL": 9, "MEMCPY": 11, "MEMSET": 1, "RUNTIME": 71, "SYNC": 6}),
        ("profile4.sqlite",
         {"KERNEL": 12, "MEMCPY": 30, "MEMSET": 17, "RUNTIME": 184, "SYNC": 16, "OTHER": 76}),
    ],
)  # fmt: skip
def test_nsys(traces_dir: Path, name: str, expected: dict) -> None:
    path = traces_dir / "nsys/extrap" / name
    table = load_trace(path)
    assert table.meta["format"] == "nsys" and kinds(table) == expected
    with sqlite3.connect(f"file:{path}?mode=ro", uri=True) as db:
        rows = db.execute(
            "SELECT start, end, streamId, correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL ORDER BY start"
        ).fetchall()
    kernels = np.flatnonzero(table.kind == Kind.KERNEL)
    got = list(zip(table.start_ns[kernels].tolist(), table.end_ns[kernels].tolist(),
                   table.stream[kernels].tolist(), table.correlation[kernels].tolist()))  # fmt: skip
    assert got == [tuple(r) for r in rows]
    assert table.meta["base_time_ns"] is not None and table.meta["devices"]


# --- detection and multi-rank loads ----------------------------------------------------------


@pytest.mark.parametrize(
    ("relative", "fmt"),
    [
        (NQ, "kineto"),
        (f"{HTA}/call_stack/backward_thread.json", "kineto"),
        (f"{TEXT}/level0/rank0_ascend_pt", "ascend-text"),
        (f"{TEXT}/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT", "ascend-text"),
        (f"{TEXT}/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/trace_view.json", "ascend-text"),
        (f"{DB}/rank0_ascend_pt", "ascend-db"),
        (f"{DB}/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_0.db", "ascend-db"),
        ("nsys/extrap/profile4.sqlite", "nsys"),
    ],
)  # fmt: skip
def test_detect(traces_dir: Path, relative: str, fmt: str) -> None:
    assert detect(traces_dir / relative) == fmt


@pytest.mark.parametrize(
    "relative",
    [
        "README.md",
        f"{DB}/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/analysis.db",
        f"{TEXT}/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT/kernel_details.csv",
        "ascend/msprof-analyze",
    ],
)
def test_detect_refuses_what_is_not_a_trace(traces_dir: Path, relative: str) -> None:
    with pytest.raises(ParityError, match=re.escape(str(traces_dir / relative))):
        load_trace(traces_dir / relative)


@pytest.mark.parametrize(
    "relative",
    [f"{HTA}/execution_trace/benchmark_simple_add_et.json.gz", f"{HTA}/memory_analysis/memory_timeline.raw.gz"],
)
def test_json_without_trace_events_is_refused(traces_dir: Path, relative: str) -> None:
    with pytest.raises(ParityError, match="benchmark_simple_add_et|memory_timeline"):
        load_trace(traces_dir / relative)


def test_folder_of_ranks_and_list_of_files(traces_dir: Path) -> None:
    folder = load_trace(traces_dir / f"{HTA}/trace_filter")
    assert folder.meta["ranks"] == [0, 1] and set(folder.rank.tolist()) == {0, 1}
    listed = load_trace([traces_dir / f"{HTA}/trace_filter/sampled_rank-0.json.gz",
                         str(traces_dir / f"{HTA}/trace_filter/sampled_rank-1.json.gz")])  # fmt: skip
    assert len(listed) == len(folder) == 4810 + 4675
    assert len(folder.meta["parts"]) == 2
    ascend = load_trace(traces_dir / f"{TEXT}/level1")
    assert ascend.meta["ranks"] == [0, 1] and ascend.meta["format"] == "ascend-text"
    assert sorted(row["rank"] for row in ascend.meta["step_trace"]) == [0, 1]


def test_progress_reaches_the_total(traces_dir: Path) -> None:
    calls = []
    load_trace(traces_dir / f"{HTA}/trace_filter", progress=lambda d, t, label: calls.append((d, t)))
    assert calls and calls[-1][0] == calls[-1][1] > 0
    assert all(d <= t for d, t in calls) and [d for d, _ in calls] == sorted(d for d, _ in calls)


def test_parse_us_text() -> None:
    assert parse_us_text("1736408883704643.212\t") == 1736408883704643212
    assert parse_us_text("5") == 5000 and parse_us_text("0.0004") == 0
    assert parse_us_text("2.34003125") == 2340 and parse_us_text("2.3405") == 2341
    assert parse_us_text("-1.5") == -1500
    with pytest.raises(ValueError):
        parse_us_text("12:30")
    assert parse_us_text("1.5e3") == 1_500_000
    for beyond in ("1e400", "-1e400"):  # beyond a float: a ValueError as for any other text, not an overflow
        with pytest.raises(ValueError):
            parse_us_text(beyond)


@pytest.mark.parametrize("header_bytes", [10, 20_000, 200_000])  # within the first look, the second, the 1 MB head
@pytest.mark.parametrize("compressed", [False, True])
def test_detect_finds_the_event_array_after_a_large_header(tmp_path: Path, header_bytes: int, compressed: bool) -> None:
    trace = {"deviceProperties": [{"name": "x" * header_bytes}],
             "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1, "dur": 2,
                              "args": {"device": 0, "stream": 7}}]}  # fmt: skip
    text = orjson.dumps(trace)
    path = tmp_path / ("t.json.gz" if compressed else "t.json")
    path.write_bytes(gzip.compress(text) if compressed else text)
    assert detect(path) == "kineto"
    assert len(load_trace(path)) == 1


@pytest.mark.parametrize("far", [False, True])  # far: lanes laid end to end would overflow, so a loop
def test_lane_running_max_restarts_at_each_lane(far: bool) -> None:
    values = np.array([5, 3, 9, 2, 1, 4, 2**62 if far else 0, 7], dtype=np.int64)
    lanes = np.array([0, 0, 0, 1, 1, 1, 2, 2])
    top = 2**62 if far else 7
    assert lane_running_max(values, lanes).tolist() == [5, 5, 9, 2, 2, 4, values[6], top]


def test_lane_overlaps_hand_computed() -> None:
    # lane (0, 0, 7): [0,10) [5,8) [6,20) -> 5 starts 5 ns early, 6 starts 4 ns early (the
    # running end is 10); lane (0, 0, 9): [3,4) [4,6) touch, no overlap
    rows = ([0] * 5, [0] * 5, [7, 9, 7, 9, 7], [0, 3, 5, 4, 6], [10, 4, 8, 6, 20])
    columns = [np.array(c, dtype=np.int64) for c in rows]
    assert lane_overlaps(*columns) == (2, 5)


def _overlaps_by_scan(rank, device, stream, start, end) -> tuple[int, int]:
    """The reference: one sort of (lane, start, row) tuples and a scan of each lane's running end."""
    count = largest = 0
    lane, reach = None, 0
    rows = zip(rank.tolist(), device.tolist(), stream.tolist(), start.tolist(), range(len(start)), end.tolist())
    for r, d, s, begin, _, finish in sorted(rows):
        if (r, d, s) != lane:
            lane, reach = (r, d, s), finish
            continue
        if reach > begin:
            count, largest = count + 1, max(largest, reach - begin)
        reach = max(reach, finish)
    return count, largest


def test_lane_overlaps_match_a_scan() -> None:
    """Ties in start (zero-length rows among them) are taken in row order."""
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(2, 60))
        start = rng.integers(0, 30, n)
        columns = [rng.integers(0, 2, n), rng.integers(0, 2, n), rng.integers(0, 3, n), start,
                   start + rng.integers(0, 8, n)]  # fmt: skip
        assert _overlaps_by_scan(*columns) == lane_overlaps(*columns)


@pytest.mark.parametrize("structs", [True, False])  # False: every block decoded as Loose events
def test_whole_array_decoded_in_place_keeps_exact_times(tmp_path: Path, monkeypatch, structs: bool) -> None:
    """A file whose events fit one block is decoded where it lies, brackets and spaces included."""
    if not structs:
        monkeypatch.setattr(kineto_events, "DECODER", kineto_events.LOOSE_DECODER)
    text = (b'{"traceEvents": [ \n {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, '
            b'"ts": 1736408883704643.212, "dur": 1.5, "args": {"device": 0, "stream": 7}} ,\n'
            b' {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1736408883704650.001, '
            b'"dur": 2, "args": {"device": 0, "stream": 7}}\n ] , "displayTimeUnit": "ns"}')  # fmt: skip
    path = tmp_path / "t.json"
    path.write_bytes(text)
    table = load_trace(path)
    assert table.start_ns.tolist() == [1736408883704643212, 1736408883704650001]
    assert table.end_ns.tolist() == [1736408883704644712, 1736408883704652001]
    assert table.meta["display_time_unit"] == "ns"


@pytest.mark.parametrize("skipped", [[], [0], [3, 39], list(range(0, 40, 2))])  # none, few, many
@pytest.mark.parametrize("loose", [False, True])  # True: the block does not fit the structs
def test_skipped_trace_spans_keep_rows_aligned(tmp_path: Path, skipped: list, loose: bool) -> None:
    """The profiler's own ``Trace`` spans are dropped; every other row keeps its name and times,
    and an error still names the right event."""
    events = [{"ph": "X", "cat": "Trace" if i in skipped else "cpu_op", "name": f"e{i}", "pid": 0, "tid": 1,
               "ts": 10.0 * i, "dur": 1.0} for i in range(40)]  # fmt: skip
    if loose:
        events.append(5)  # an entry that is not an object: the block is read as Loose events
    table = load_each(tmp_path, {"t.json": events})[0]
    keep = [i for i in range(40) if i not in skipped]
    assert [table.name_of(i) for i in range(len(table))] == [f"e{i}" for i in keep]
    assert table.start_ns.tolist() == [10_000 * i for i in keep]
    events[38 if 39 in skipped else 39]["dur"] = -1.0
    with pytest.raises(ParityError, match=f"event {38 if 39 in skipped else 39} has a negative dur"):
        load_each(tmp_path, {"bad.json": events})


def test_loose_events_read_as_the_structs_read_them(tmp_path: Path) -> None:
    """A block with an entry that is not an object is read as Loose events, which give the rows
    the structs give; values of the wrong type read as absent, and a malformed event is named."""
    events = [{"ph": "X", "cat": "kernel", "name": None, "pid": 0, "tid": 7, "ts": 1.5, "dur": 1.0,
               "args": {"device": 0, "stream": 7, "correlation": 3, "External id": 9}},
              {"ph": "X", "cat": "cuda_sync", "name": "s", "pid": 0, "tid": 7, "ts": 3, "dur": 1,
               "args": {"stream": 7, "cuda_sync_kind": None, "sync_type": "Event Sync", "wait_on_stream": 2}},
              {"ph": "M", "name": "process_name", "pid": 0, "args": {"name": "GPU 0"}}]  # fmt: skip
    strict, loose = load_each(tmp_path, {"strict.json": events, "loose.json": [*events, "not an event"]})
    same_table(strict, loose)
    assert strict.names[strict.name_id[0]] == "" and strict.extra["sync_type"][1] == "Event Sync"
    assert loose.meta["warnings"] == ["1 entries of the event array are not objects; skipped"]
    events[0]["name"] = ["a", "list"]
    with pytest.raises(ParityError, match="event 0 is malformed"):
        load_each(tmp_path, {"bad.json": [*events, 5]})


def test_times_spanning_beyond_int64_differences_are_refused(tmp_path: Path) -> None:
    """Each time within ±9e15 µs reads, but two at the ends span more than int64 holds: every
    window and busy-time difference would overflow, so the trace is refused in one line."""
    events = [{"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": ts, "dur": 1,
               "args": {"device": 0, "stream": 7}} for ts in (-8.9e15, 8.9e15)]  # fmt: skip
    path = tmp_path / "far.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    with pytest.raises(ParityError, match=r"far\.json: its times run from .* a time is out of place"):
        load_trace(path)
    events[0]["ts"], events[1]["ts"] = 1.0, 4.0e15  # 4e18 ns apart: within the span a table holds (2**62)
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    assert len(load_trace(path)) == 2
