"""Collective metadata in the readers: Kineto's NCCL arguments and Ascend's HCCL operations,
kept as sparse extra columns (``ActivityTable``'s docstring), the same whichever path reads them."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import orjson
import pytest

from parity.trace.readers import jsonstream, parallel
from parity.trace.readers.ascend_db import read_ascend_db
from parity.trace.readers.ascend_text import read_ascend_text
from parity.trace.readers.detect import ascend_db_in
from parity.trace.readers.kineto import read_kineto
from parity.trace.readers.kineto_events import COLLECTIVE

NCCL = "kineto/hta/nccl_parser_config/nccl_data.json.gz"
ARGS = {"Collective name": "allreduce", "In msg nelems": 1024, "Out msg nelems": 1024, "dtype": "BFloat16",
        "Process Group Name": "3", "Process Group Ranks": "[0, 2]", "Group size": 2,
        "In split size": "[]", "Out split size": "[]"}  # fmt: skip


def _trace(tmp_path: Path, *, n: int = 3000, loose: bool = False, ranks_as_list: bool = False) -> Path:
    """A trace of compute kernels with an NCCL kernel every 100th row; ``loose``: one event
    whose pid is a float, so its block decodes the loose way; ``ranks_as_list``: the group's
    ranks written as a JSON list."""
    events = []
    for i in range(n):
        args = {"stream": 7, "device": 0, "correlation": i}
        name = f"gemm_{i % 5}"
        if i % 100 == 0:
            args.update(ARGS, **({"Process Group Ranks": [0, 2]} if ranks_as_list else {}))
            name = "ncclDevKernel_AllReduce_Sum_bf16_RING_LL"
        events.append({"ph": "X", "cat": "kernel", "name": name, "pid": 0, "tid": 7, "ts": i * 10.0,
                       "dur": 5.0, "args": args})
    if loose:
        events[1]["pid"] = 0.5
    path = tmp_path / "rank-0.json"
    path.write_bytes(orjson.dumps({"traceEvents": events}))
    return path


def _check(table, n: int = 3000) -> None:
    rows = np.flatnonzero(table.extra["collective_name"] != None)  # noqa: E711
    assert rows.tolist() == list(range(0, n, 100))
    assert set(table.extra["collective_name"][rows]) == {"allreduce"}
    assert set(table.extra["in_msg_nelems"][rows]) == {1024} and set(table.extra["group_size"][rows]) == {2}
    assert set(table.extra["process_group_ranks"][rows]) == {"[0, 2]"}
    assert set(table.extra["dtype"][rows]) == {"BFloat16"} and set(table.extra["process_group_name"][rows]) == {"3"}
    others = np.setdiff1d(np.arange(n), rows)
    assert (table.extra["in_msg_nelems"][others] == -1).all() and set(table.extra["dtype"][others]) == {None}


@pytest.mark.parametrize("loose, ranks_as_list", [(False, False), (True, False), (False, True)])
def test_nccl_arguments_read_strict_or_loose(tmp_path: Path, monkeypatch, loose: bool, ranks_as_list: bool) -> None:
    path = _trace(tmp_path, loose=loose, ranks_as_list=ranks_as_list)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 16 << 10)  # many blocks: parts placed at offsets
    _check(read_kineto(path, workers=1))


def test_nccl_arguments_read_in_shares_equal_one_process(tmp_path: Path, monkeypatch) -> None:
    path = _trace(tmp_path)
    monkeypatch.setattr(jsonstream, "BLOCK_BYTES", 16 << 10)
    calls = []
    original = parallel.read_shares
    monkeypatch.setattr(parallel, "read_shares", lambda *a, **k: calls.append(1) or original(*a, **k))
    one, shares = read_kineto(path, workers=1), read_kineto(path, workers=3)
    assert calls
    for key in COLLECTIVE:
        assert one.extra[key].tolist() == shares.extra[key].tolist(), key
    _check(shares)


def test_a_trace_without_nccl_arguments_has_no_collective_columns(tmp_path: Path) -> None:
    path = tmp_path / "plain.json"
    path.write_bytes(orjson.dumps({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "k", "pid": 0, "tid": 7, "ts": 1.0, "dur": 1.0, "args": {"stream": 7}}]}))
    assert not set(COLLECTIVE) & set(read_kineto(path).extra)


def test_real_nccl_arguments(traces_dir: Path) -> None:
    """nccl_data.json.gz: 21 kernels and 27 record_param_comms ops (the host-side calls, waits
    among them) carry the arguments."""
    table = read_kineto(traces_dir / NCCL, workers=1)
    rows = np.flatnonzero(table.extra["collective_name"] != None)  # noqa: E711
    assert len(rows) == 48
    assert set(table.extra["collective_name"][rows]) == {"allreduce", "broadcast", "wait"}
    kernels = rows[table.kind[rows] == 0]
    assert len(kernels) == 21 and set(table.extra["process_group_ranks"][kernels]) == {"[0, 1]"}
    assert table.extra["in_msg_nelems"].dtype == np.int64 and (table.extra["in_msg_nelems"][kernels] > 0).all()


@pytest.mark.parametrize("level, group", [("level0", None), ("level1", "17522688603477080586")])
def test_ascend_text_hccl_operations(traces_dir: Path, level: str, group: str | None) -> None:
    table = read_ascend_text(traces_dir / f"ascend/msinsight/text/{level}/rank0_ascend_pt")
    ops = np.flatnonzero(table.extra["task_type"] == "HCCL")
    assert len(ops) == 4
    assert table.extra["hccl_count"][ops].tolist() == [4097000, 16781312, 37752832, 2469696]
    assert set(table.extra["dtype"][ops]) == {"FP32"}
    if group is None:
        assert "process_group_name" not in table.extra  # no communication.json at level 0
    else:
        assert set(table.extra["process_group_name"][ops]) == {group}


def test_ascend_db_hccl_operations(traces_dir: Path) -> None:
    folder = traces_dir / "ascend/msinsight/db/level0/rank0_ascend_pt/ASCEND_PROFILER_OUTPUT"
    table = read_ascend_db(ascend_db_in(folder))
    ops = np.flatnonzero(table.extra["task_type"] == "HCCL")
    named = [table.names[i] for i in table.name_id[ops]]
    assert all(n.startswith("hcom_allReduce_") for n in named) and len(ops) == 4
    assert table.extra["hccl_count"][ops].tolist() == [4097000, 16781312, 37752832, 2469696]
    assert set(table.extra["dtype"][ops]) == {"FP32"}
    assert set(table.extra["process_group_name"][ops]) == {"90.91.105.46%enp189s0f0_60000_0_1736407029972691"}


def test_a_block_with_collectives_decodes_as_structs() -> None:
    """The ``Collective name`` hook keeps the block on the struct decoder (the loose one, event
    by event in Python, is for malformed blocks only), and the NCCL arguments come with it."""
    from parity.trace.readers.kineto_events import Complete, decode_events

    events = [{"ph": "X", "cat": "kernel", "name": "gemm", "pid": 0, "tid": 7, "ts": 1.0, "dur": 2.0,
               "args": {"stream": 7, "device": 0, "correlation": 1}},
              {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL", "pid": 0, "tid": 7,
               "ts": 4.0, "dur": 2.0, "args": {"stream": 7, "device": 0, "correlation": 2, **ARGS}}]  # fmt: skip
    block = decode_events(orjson.dumps(events))
    assert [type(e) for e in block] == [Complete, Complete]
    assert block.collective[0] is None and block.collective[1].collective_name == "allreduce"
