"""The activities a what-if works on: lanes of non-overlapping work, each with a category.

A *lane* is a place where work runs one thing at a time: a device stream, or a host thread.
Two modes, chosen from the table:

- ``device``: the table has device rows (kernels, copies, sets). Compute lanes are device
  streams ``(rank, device, stream)``; host lanes hold the runtime calls of each thread
  ``(rank, -1, tid)`` (launches, synchronisations), which a replay needs but nobody scales.
- ``host``: no device rows, only framework ops on host threads (a PyTorch CPU profile). Each
  thread that runs ops is a compute lane. Ops nest (``aten::linear`` > ``aten::matmul`` >
  ``aten::mm``), so a thread's time is cut into *leaf segments*, each owned by the innermost op
  running then: a parent's self time is its own, a child's time is the child's. Summing leaf
  segments of a category counts every instant once.

Host ops are categorised with the table's rules plus :data:`HOST_OP_RULES`, tried first, which
name the ATen matrix ops the device rules (kernel names) do not cover.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from functools import cached_property

import numpy as np

from parity.model.errors import ParityError
from parity.trace.categories import Rule, Rules, categorize, load_rules
from parity.trace.peer_waits import peer_wait_mask
from parity.trace.table import ActivityTable, Kind, KindCode

DEVICE = "device"
HOST = "host"

# ATen / oneDNN op names that are matrix work on a CPU (leaf ops; parents like aten::linear and
# aten::matmul keep only their self time, which is matrix bookkeeping).
_HOST_MATRIX = (
    (r"^aten::(mm|addmm|bmm|baddbmm|addbmm|matmul|linear|_scaled_mm|mv|addmv|dot|vdot|einsum"
     r"|convolution|_convolution|conv\w*|mkldnn_\w*|_mkldnn\w*)$"),
    r"^(mkldnn|onednn|dnnl)::", r"gemm", r"^quantized::(linear|conv)",
)
HOST_OP_RULES = (
    Rule(category="matrix", patterns=_HOST_MATRIX, regex=re.compile("|".join(_HOST_MATRIX), re.IGNORECASE)),
)


@dataclass(frozen=True, kw_only=True)
class Timeline:
    """Nodes (activities) of a what-if, in one set of columns (length ``n``).

    ``start_ns``/``end_ns`` int64 observed times; ``lane`` indexes ``lane_keys`` (``(rank,
    device, stream_or_tid)``); ``compute`` marks work that can be scaled (device rows, host leaf
    segments in host mode); ``category`` is a label per node (``"host"`` for runtime calls);
    ``row`` is the table row a node came from; ``names`` the node's name; ``waiting`` marks
    device tasks that only wait for a peer rank (``parity.trace.peer_waits``: no scale shortens
    them).
    """

    mode: str
    start_ns: np.ndarray
    end_ns: np.ndarray
    lane: np.ndarray
    lane_keys: tuple[tuple[int, int, int], ...]
    compute: np.ndarray
    category: np.ndarray
    row: np.ndarray
    name: np.ndarray
    waiting: np.ndarray = None  # type: ignore[assignment]  # None given: no node waits

    def __post_init__(self) -> None:
        if self.waiting is None:
            object.__setattr__(self, "waiting", np.zeros(len(self.start_ns), dtype=bool))

    def __len__(self) -> int:
        return len(self.start_ns)

    @property
    def duration_ns(self) -> np.ndarray:
        return self.end_ns - self.start_ns

    @cached_property
    def holds(self) -> np.ndarray:
        """Containers: nodes that hold the node after them on their lane (:func:`containers`)."""
        return containers(self)

    def lane_label(self, lane: int) -> str:
        rank, device, stream = self.lane_keys[lane]
        where = f"thread {stream}" if device < 0 else f"device {device} stream {stream}"
        return f"rank {rank} {where}"


def host_rules(rules: Rules) -> Rules:
    """``rules`` with :data:`HOST_OP_RULES` tried after a user's own rules and before the
    defaults (whose ``add`` would otherwise call ``aten::addmm`` vector work)."""
    n_default = len(load_rules().rules)
    if rules.source == "default":
        user, rest = (), rules.rules
    elif rules.source.endswith("+ default"):
        user, rest = rules.rules[:-n_default], rules.rules[-n_default:]
    else:  # a user's rules that replace the defaults
        user, rest = rules.rules, ()
    return Rules(rules=user + HOST_OP_RULES + rest, accelerator_core=rules.accelerator_core,
                 source=rules.source)


def build_timeline(table: ActivityTable, rules: Rules | None = None) -> Timeline:
    """The what-if nodes of ``table`` in device mode when it has device rows, else host mode."""
    rules = rules or load_rules()
    if len(table) and table.device_mask().any():
        return _device_timeline(table, rules)
    if len(table) and (table.kind == KindCode.CPU_OP).any():
        return _host_timeline(table, rules)
    raise ParityError(
        f"trace {table.meta.get('source', '<table>')} has neither device activities nor host "
        "ops; a what-if needs kernels or CPU ops"
    )


def _lanes(rank: np.ndarray, device: np.ndarray, stream: np.ndarray) -> tuple[np.ndarray, tuple]:
    rank, device, stream = (np.asarray(a, dtype=np.int64) for a in (rank, device, stream))
    n = len(rank)
    if n == 0:
        return np.empty(0, np.int32), ()
    order = np.lexsort((stream, device, rank))
    r, d, s = rank[order], device[order], stream[order]
    new = np.r_[True, (r[1:] != r[:-1]) | (d[1:] != d[:-1]) | (s[1:] != s[:-1])]
    lane = np.empty(n, dtype=np.int32)
    lane[order] = np.cumsum(new) - 1
    first = order[new]
    keys = tuple(zip(rank[first].tolist(), device[first].tolist(), stream[first].tolist()))
    return lane, keys


def containers(timeline: Timeline) -> np.ndarray:
    """Nodes that hold the node after them on their lane (it starts in them, ends by their end
    and is shorter): an Ascend collective's row over its tasks on its stream."""
    order = np.lexsort((-timeline.end_ns, timeline.start_ns, timeline.lane))
    start, end = timeline.start_ns[order], timeline.end_ns[order]
    nxt = np.r_[order[1:], order[-1:]]
    same = np.r_[timeline.lane[order][1:] == timeline.lane[order][:-1], False]
    held = same & (start <= timeline.start_ns[nxt]) & (timeline.start_ns[nxt] < end) \
        & (timeline.end_ns[nxt] <= end) & ((timeline.end_ns[nxt] - timeline.start_ns[nxt]) < (end - start))
    out = np.zeros(len(order), dtype=bool)
    out[order[held]] = True
    return out


def _device_timeline(table: ActivityTable, rules: Rules) -> Timeline:
    device_rows = np.flatnonzero(table.device_mask())
    runtime_rows = np.flatnonzero(table.kind == KindCode.RUNTIME)
    rows = np.concatenate([device_rows, runtime_rows])
    labels = categorize(table, rules).of_rows()
    lane, keys = _lanes(table.rank[rows], np.where(np.isin(rows, device_rows), table.device[rows], -1),
                        table.stream[rows])
    names = np.array(table.names, dtype=object) if table.names else np.empty(0, dtype=object)
    waiting = np.concatenate([peer_wait_mask(table)[device_rows], np.zeros(len(runtime_rows), bool)])
    return Timeline(
        mode=DEVICE,
        start_ns=table.start_ns[rows].astype(np.int64),
        end_ns=table.end_ns[rows].astype(np.int64),
        lane=lane,
        lane_keys=keys,
        waiting=waiting,
        compute=np.concatenate([np.ones(len(device_rows), bool), np.zeros(len(runtime_rows), bool)]),
        category=labels[rows],
        row=rows.astype(np.int64),
        name=names[table.name_id[rows]] if len(rows) else np.empty(0, dtype=object),
    )


def _host_timeline(table: ActivityTable, rules: Rules) -> Timeline:
    ops = np.flatnonzero(table.kind == KindCode.CPU_OP)
    seg_start, seg_end, seg_row = leaf_segments(
        table.rank[ops], table.stream[ops], table.start_ns[ops], table.end_ns[ops]
    )
    rows = ops[seg_row]
    lane, keys = _lanes(table.rank[rows], np.full(len(rows), -1), table.stream[rows])
    hrules = host_rules(rules)
    categories = [hrules.category_of(name, Kind.KERNEL) for name in table.names]
    label_of_name = np.array(categories or ["unmatched"], dtype=object)
    names = np.array(table.names or ("",), dtype=object)
    return Timeline(
        mode=HOST,
        start_ns=seg_start,
        end_ns=seg_end,
        lane=lane,
        lane_keys=keys,
        compute=np.ones(len(rows), bool),
        category=label_of_name[table.name_id[rows]],
        row=rows.astype(np.int64),
        name=names[table.name_id[rows]],
    )


def leaf_segments(
    rank: np.ndarray, thread: np.ndarray, start_ns: np.ndarray, end_ns: np.ndarray
) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Cut nested spans into disjoint segments owned by the innermost span, per thread.

    Returns ``(start_ns, end_ns, index)`` with ``index`` into the inputs, sorted by thread then
    time. A child that outlives its parent (clock rounding) is cut at the parent's end.
    Method: sort each thread's spans by ``(start, -end)`` and walk them with a stack of open
    spans, emitting the top span's self time between events. O(n log n), one pass.
    """
    order = np.lexsort((-end_ns, start_ns, thread, rank))
    out_s: list[int] = []
    out_e: list[int] = []
    out_i: list[int] = []
    r_list, t_list = rank[order].tolist(), thread[order].tolist()
    s_list, e_list = start_ns[order].tolist(), end_ns[order].tolist()
    stack: list[tuple[int, int]] = []  # (index, end)
    cursor = 0
    current = None

    def emit(a: int, b: int, idx: int) -> None:
        if b > a:
            out_s.append(a)
            out_e.append(b)
            out_i.append(idx)

    for pos, idx in enumerate(order.tolist()):
        key = (r_list[pos], t_list[pos])
        s, e = s_list[pos], e_list[pos]
        if key != current:
            while stack:
                top, top_end = stack.pop()
                emit(cursor, top_end, top)
                cursor = top_end
            current = key
        while stack and stack[-1][1] <= s:
            top, top_end = stack.pop()
            emit(cursor, top_end, top)
            cursor = top_end
        if stack:
            emit(cursor, s, stack[-1][0])
            e = min(e, stack[-1][1])
        cursor = s
        stack.append((idx, e))
    while stack:
        top, top_end = stack.pop()
        emit(cursor, top_end, top)
        cursor = top_end
    return (np.array(out_s, dtype=np.int64), np.array(out_e, dtype=np.int64),
            np.array(out_i, dtype=np.int64))
