"""One rank's collective operations, one row each: what the fleet's reduce matches across ranks.

A collective operation is a device row (kernel) that is one of:

- a Kineto kernel carrying NCCL arguments (``collective_name`` column; PyTorch writes them on
  the kernel): op, process group, element counts and dtype from them;
- an Ascend HCCL operation (``task_type`` "HCCL", ``hcom_allReduce__586_0_1``; not its tasks):
  op from the name, group from ``process_group_name`` (communication.json / the db) else the
  number after ``__`` in the name, counts from ``hccl_count``;
- a kernel named like an NCCL/RCCL kernel (``ncclDevKernel_AllReduce_...``, Nsight exports,
  Kineto traces without arguments) in the communication category: op from the name, group
  ``"default"`` (every rank), bytes unknown (-1).

The GPU-side ``gpu_user_annotation`` spans (``nccl:all_reduce``) that Kineto draws around the
kernels are ``Kind.OTHER`` rows, never device rows, so each operation counts once (its kernel).

``op`` is a :mod:`parity.metrics.collectives` name (all_reduce, all_gather, reduce_scatter,
all_to_all, broadcast, reduce, sendrecv), or ``send``/``recv`` for point-to-point ops; another
recorded name is kept in lower case, letters only (``barrier``, ``gather``). ``seq`` is the
op's ordinal among the rank's collectives of its group by start time; ``send``/``recv`` are
numbered apart, among the rank's point-to-point ops of the group, so that a rank's extra p2p
traffic never shifts the numbering its collectives are matched by.

``bytes`` is nccl-tests' ``S`` (:mod:`parity.metrics.collectives`): ``nelems x dtype size``
with the buffer (input) of all_reduce, broadcast, reduce, send, recv and sendrecv, the whole
output of all_gather, the whole input of reduce_scatter and all_to_all; -1 when the trace does
not record the count or the dtype.
"""

from __future__ import annotations

import re

import numpy as np

from parity.trace.categories import COMMUNICATION, Categorization
from parity.trace.table import NO_ID, ActivityTable, KindCode

DEFAULT_GROUP = "default"  # every rank: the group of an op whose trace names none
P2P_OPS = frozenset({"send", "recv"})
# bytes per element of the dtype names PyTorch (c10::ScalarType, as Kineto writes them) and
# HCCL (HcclDataType, as the Ascend profiler writes them) record
DTYPE_BYTES = {
    "Byte": 1, "Char": 1, "Bool": 1, "Short": 2, "Int": 4, "Long": 8, "Half": 2, "Float": 4,
    "Double": 8, "BFloat16": 2, "ComplexHalf": 4, "ComplexFloat": 8, "ComplexDouble": 16,
    "QInt8": 1, "QUInt8": 1, "QInt32": 4, "UInt16": 2, "UInt32": 4, "UInt64": 8,
    "Float8_e5m2": 1, "Float8_e4m3fn": 1, "Float8_e5m2fnuz": 1, "Float8_e4m3fnuz": 1,
    "INT8": 1, "UINT8": 1, "INT16": 2, "UINT16": 2, "INT32": 4, "UINT32": 4, "INT64": 8, "UINT64": 8,
    "FP16": 2, "BFP16": 2, "FP32": 4, "FP64": 8, "INT128": 16,
}  # fmt: skip
# normalised op of a recorded name (lower case, letters only), by prefix, in this order
_OP_PREFIXES = (
    ("allreduce", "all_reduce"), ("allgather", "all_gather"), ("reducescatter", "reduce_scatter"),
    ("alltoall", "all_to_all"), ("broadcast", "broadcast"), ("sendrecv", "sendrecv"), ("send", "send"),
    ("recv", "recv"), ("receive", "recv"), ("reduce", "reduce"),
)  # fmt: skip
_NCCL_KERNEL = re.compile(r"^(?:nccl|rccl)(?:Dev)?Kernel_([A-Za-z]+)")
_HCCL_OP = re.compile(r"^hcom_([A-Za-z]+)_")
_HCCL_GROUP = re.compile(r"^hcom_[A-Za-z]+__(\d+)_")
COLUMNS = ("rank", "group", "group_ranks", "op", "seq", "name", "device", "stream", "start_ns", "end_ns",
           "bytes", "dtype", "in_nelems", "out_nelems", "in_split", "out_split", "step")  # fmt: skip


def normalize_op(recorded: str) -> str:
    """The :mod:`parity.metrics.collectives` name of a recorded op ("allreduce",
    "_allgather_base", "AllReduce", "allReduce", "alltoallv", "receive"), else the recorded
    name in lower case, letters only."""
    key = re.sub(r"[^a-z]", "", recorded.lower())
    return next((op for prefix, op in _OP_PREFIXES if key.startswith(prefix)), key)


def op_of_name(name: str) -> str | None:
    """The op of an NCCL/RCCL kernel or HCCL operation name, None for any other name."""
    match = _NCCL_KERNEL.match(name) or _HCCL_OP.match(name)
    return normalize_op(match.group(1)) if match else None


def message_bytes(op: str, in_nelems: int, out_nelems: int, dtype: str) -> int:
    """nccl-tests' ``S`` in B (module docstring): ``nelems x size(dtype)``, -1 when unknown."""
    size = DTYPE_BYTES.get(dtype, 0)
    nelems = out_nelems if op == "all_gather" else in_nelems
    if op not in ("all_gather", "reduce_scatter", "all_to_all") and nelems < 0:
        nelems = out_nelems  # a recv records its buffer as the output
    return nelems * size if size and nelems >= 0 else -1


def _column(table: ActivityTable, key: str, rows: np.ndarray, default):
    values = table.extra.get(key)
    if values is None:
        return [default] * len(rows)
    return [default if v is None or (type(v) is not str and v == NO_ID) else v for v in values[rows].tolist()]


def _candidates(table: ActivityTable, cats: Categorization) -> tuple[np.ndarray, list[str | None]]:
    """Device rows that are collective operations (module docstring) and the op of each."""
    kernels = table.kind == KindCode.KERNEL
    recorded = table.extra.get("collective_name")
    with_args = kernels & (recorded != None) if recorded is not None else np.zeros(len(table), bool)  # noqa: E711
    task_type = table.extra.get("task_type")
    named = kernels & ~with_args & cats.mask(COMMUNICATION)
    if task_type is not None:  # Ascend: the operations, not their tasks (Notify Wait, SDMA)
        named &= np.asarray(task_type, dtype=object) == "HCCL"
    op_by_id = [op_of_name(n) for n in table.names]
    rows = np.flatnonzero(with_args | named)
    ops = [normalize_op(recorded[r]) if with_args[r] else op_by_id[table.name_id[r]] for r in rows.tolist()]
    keep = np.array([op is not None for op in ops], dtype=bool)
    return rows[keep] if len(rows) else rows, [op for op in ops if op is not None]


def _groups(table: ActivityTable, rows: np.ndarray, names: list[str]) -> list[str]:
    """The process group of each row: the recorded one, else the HCCL group in the name
    (Ascend), else :data:`DEFAULT_GROUP`."""
    recorded = _column(table, "process_group_name", rows, None)
    out = []
    for group, name in zip(recorded, names):
        if group is None or group == "":
            match = _HCCL_GROUP.match(name)
            group = match.group(1) if match else DEFAULT_GROUP
        out.append(str(group))
    return out


def _counts(table: ActivityTable, rows: np.ndarray, ops: list[str]) -> tuple[list[int], list[int]]:
    """Input and output element counts: Kineto's ``In``/``Out msg nelems``, else from HCCL's
    ``count`` (the buffer of in-place ops, the input of all_gather, the output of
    reduce_scatter; nothing for all_to_all, whose count HCCL does not record as one number)."""
    ins = _column(table, "in_msg_nelems", rows, NO_ID)
    outs = _column(table, "out_msg_nelems", rows, NO_ID)
    counts = _column(table, "hccl_count", rows, NO_ID)
    for i, (op, count) in enumerate(zip(ops, counts)):
        if count == NO_ID or ins[i] != NO_ID or outs[i] != NO_ID:
            continue
        if op == "all_gather":
            ins[i] = count
        elif op == "reduce_scatter":
            outs[i] = count
        elif op != "all_to_all":
            ins[i] = outs[i] = count
    return [int(v) for v in ins], [int(v) for v in outs]


def sequence_numbers(groups: list[str], ops: list[str], start_ns: np.ndarray) -> np.ndarray:
    """Ordinal of each op among the rank's ops of its group by start (ties by row order);
    point-to-point ops (:data:`P2P_OPS`) are numbered apart from the collectives."""
    order = np.argsort(start_ns, kind="stable")
    seq = np.zeros(len(groups), dtype=np.int64)
    counters: dict[tuple[str, bool], int] = {}
    for i in order.tolist():
        key = (groups[i], ops[i] in P2P_OPS)
        seq[i] = counters.get(key, 0)
        counters[key] = seq[i] + 1
    return seq


def collective_rows(table: ActivityTable, cats: Categorization) -> dict[str, np.ndarray]:
    """One rank's collective operations as the columns of ``MAP_TABLES["collectives"]``
    (module docstring), sorted by start (ties by row order). ``table`` holds one rank."""
    rows, ops = _candidates(table, cats)
    order = np.argsort(table.start_ns[rows], kind="stable")
    rows, ops = rows[order], [ops[i] for i in order.tolist()]
    names = [table.names[i] for i in table.name_id[rows].tolist()]
    groups = _groups(table, rows, names)
    ins, outs = _counts(table, rows, ops)
    dtypes = [str(d) for d in _column(table, "dtype", rows, "")]
    start = table.start_ns[rows]
    return {
        "rank": table.rank[rows].astype(np.int32),
        "group": np.array(groups, dtype=object),
        "group_ranks": np.array([str(v) for v in _column(table, "process_group_ranks", rows, "")], dtype=object),
        "op": np.array(ops, dtype=object),
        "seq": sequence_numbers(groups, ops, start),
        "name": np.array(names, dtype=object),
        "device": table.device[rows].astype(np.int32),
        "stream": table.stream[rows].astype(np.int64),
        "start_ns": start.astype(np.int64),
        "end_ns": table.end_ns[rows].astype(np.int64),
        "bytes": np.array([message_bytes(*args) for args in zip(ops, ins, outs, dtypes)], dtype=np.int64),
        "dtype": np.array(dtypes, dtype=object),
        "in_nelems": np.array(ins, dtype=np.int64),
        "out_nelems": np.array(outs, dtype=np.int64),
        "in_split": np.array([str(v) for v in _column(table, "in_split_size", rows, "")], dtype=object),
        "out_split": np.array([str(v) for v in _column(table, "out_split_size", rows, "")], dtype=object),
        "step": table.step[rows].astype(np.int32),
    }
