"""``collective_rows`` on hand-built tables: ops, groups, sequence numbers and bytes."""

from __future__ import annotations

import numpy as np
import pytest

from parity.trace.categories import categorize, load_rules
from parity.trace.fleet.collectives import collective_rows, message_bytes, normalize_op, op_of_name
from parity.trace.table import NO_ID, ActivityTable, Kind

KERNEL, OTHER = int(Kind.KERNEL), int(Kind.OTHER)


def _table(rows: list[tuple], **extra) -> ActivityTable:
    """rows: (kind, name, start_ns, end_ns); extra: sparse columns as lists."""
    names = list(dict.fromkeys(r[1] for r in rows))
    n = len(rows)
    return ActivityTable(
        rank=np.full(n, 3, np.int32), device=np.zeros(n, np.int32), stream=np.full(n, 7, np.int64),
        kind=np.array([r[0] for r in rows], np.int8), name_id=np.array([names.index(r[1]) for r in rows], np.int32),
        start_ns=np.array([r[2] for r in rows], np.int64), end_ns=np.array([r[3] for r in rows], np.int64),
        correlation=np.full(n, NO_ID, np.int64), step=np.full(n, -1, np.int32), names=tuple(names),
        extra={k: np.array(v, dtype=np.int64 if k in ("in_msg_nelems", "out_msg_nelems", "hccl_count") else object)
               for k, v in extra.items()},
    )  # fmt: skip


def _rows(table: ActivityTable) -> dict:
    return collective_rows(table, categorize(table, load_rules(None)))


@pytest.mark.parametrize("recorded, op", [
    ("allreduce", "all_reduce"), ("_allgather_base", "all_gather"), ("allgather_into_tensor_coalesced", "all_gather"),
    ("_reduce_scatter_base", "reduce_scatter"), ("all_to_all", "all_to_all"), ("alltoallv", "all_to_all"),
    ("broadcast", "broadcast"), ("reduce", "reduce"), ("send", "send"), ("recv", "recv"), ("receive", "recv"),
    ("SendRecv", "sendrecv"), ("barrier", "barrier"),
])  # fmt: skip
def test_normalize_op(recorded: str, op: str) -> None:
    assert normalize_op(recorded) == op


def test_op_of_name() -> None:
    assert op_of_name("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "all_gather"
    assert op_of_name("ncclKernel_ReduceScatter_RING_LL_Sum_float(ncclDevComm*)") == "reduce_scatter"
    assert op_of_name("hcom_receive__123_4_1") == "recv"
    assert op_of_name("void gemm_kernel<float>") is None


def test_bytes_follow_nccl_tests() -> None:
    """S: the buffer of all_reduce, the whole output of all_gather, the whole input of
    reduce_scatter and all_to_all; a recv's buffer recorded as its output."""
    assert message_bytes("all_reduce", 100, 100, "Float") == 400
    assert message_bytes("all_gather", 100, 800, "Half") == 1600
    assert message_bytes("reduce_scatter", 800, 100, "BFloat16") == 1600
    assert message_bytes("all_to_all", 800, 800, "FP32") == 3200
    assert message_bytes("recv", -1, 50, "Long") == 400
    assert message_bytes("all_reduce", 100, 100, "") == -1 and message_bytes("all_reduce", -1, -1, "Float") == -1


def test_groups_number_their_ops_apart_and_p2p_apart() -> None:
    """Two groups interleaved and a send between: seq counts within (group, collective or p2p);
    the GPU-side nccl:all_reduce annotation is not an op."""
    nccl = "ncclDevKernel_AllReduce_Sum_f32_RING_LL"
    table = _table(
        [(KERNEL, nccl, 0, 10), (OTHER, "nccl:all_reduce", 0, 10), (KERNEL, nccl, 20, 30),
         (KERNEL, "ncclDevKernel_SendRecv", 40, 50), (KERNEL, nccl, 60, 70), (KERNEL, "gemm", 70, 80)],
        collective_name=["allreduce", None, "allreduce", "send", "allgather", None],
        process_group_name=["0", None, "1", "0", "0", None],
        in_msg_nelems=[10, -1, 20, 5, 10, -1], out_msg_nelems=[10, -1, 20, 5, 40, -1],
        dtype=["Float", None, "Float", "Float", "Half", None],
    )  # fmt: skip
    rows = _rows(table)
    assert rows["op"].tolist() == ["all_reduce", "all_reduce", "send", "all_gather"]
    assert rows["group"].tolist() == ["0", "1", "0", "0"]
    assert rows["seq"].tolist() == [0, 0, 0, 1]
    assert rows["bytes"].tolist() == [40, 80, 20, 80]
    assert rows["rank"].tolist() == [3, 3, 3, 3] and rows["start_ns"].tolist() == [0, 20, 40, 60]


def test_hccl_operations_group_from_name_and_count() -> None:
    """Ascend: the operations (task_type HCCL), not their tasks; group from the name."""
    table = _table(
        [(KERNEL, "hcom_allGather__77_0_1", 0, 10), (KERNEL, "Notify Wait", 1, 2),
         (KERNEL, "hcom_reduceScatter__77_1_1", 20, 30), (KERNEL, "hcom_allReduce__77_2_1", 40, 50)],
        task_type=["HCCL", "Notify Wait", "HCCL", "HCCL"], hccl_count=[8, -1, 8, 8], dtype=["FP16", None, "FP16", "FP16"],
    )  # fmt: skip
    rows = _rows(table)
    assert rows["op"].tolist() == ["all_gather", "reduce_scatter", "all_reduce"]
    assert set(rows["group"].tolist()) == {"77"} and rows["seq"].tolist() == [0, 1, 2]
    # all_gather's count is its input, reduce_scatter's its output: S unknown without the group size
    assert rows["in_nelems"].tolist() == [8, -1, 8] and rows["out_nelems"].tolist() == [-1, 8, 8]
    assert rows["bytes"].tolist() == [-1, -1, 16]


def test_a_rank_without_collectives_gives_empty_columns() -> None:
    rows = _rows(_table([(KERNEL, "gemm", 0, 10)]))
    assert all(len(v) == 0 for v in rows.values())
