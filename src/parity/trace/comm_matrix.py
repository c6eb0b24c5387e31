"""The communication matrix of an Ascend job: per step, collective and link, bytes, time and
bandwidth, rebuilt from the HCCL plane tasks of the timeline (msprof-analyze's
``cluster_communication_matrix.json`` from its inputs).

Each HCCL plane task (``link`` column: src rank, dst rank, size, link type) belongs to the
collective whose span holds it on its rank. Per collective and link ``src -> dst``:

- ``bytes = Σ size`` and ``time = Σ duration`` over the link's data tasks (every plane task but
  the notify tasks, ``Notify_Record``/``Notify_Wait``, which move no data and only wait);
- a task whose dst rank is invalid (``4294967295``, a local reduce) counts on the local link
  ``src -> src``;
- ``bandwidth = bytes / time`` in GB/s (decimal: 1 GB = 1e9 B);
- transport ``LOCAL`` for ``src == dst``, else the data tasks' link type (``HCCS``, ``PCIE``, ...).

Ranks in the tasks are the collective group's local ranks; they are mapped to the job's ranks
in order (local rank ``i`` is the ``i``-th of the loaded ranks), which assumes one group over
the loaded ranks, and links to local ranks beyond them (devices not profiled) are left out and
counted. Totals per link add every collective of the step (``op = "total"``) and every
collective of one operation type (``op = "<type>-total"``, the type being the word after
``hcom``: ``allreduce``).
"""

from __future__ import annotations

from collections import defaultdict

import msgspec
import numpy as np

from parity.trace.table import ActivityTable, KindCode, distinct_sorted
from parity.trace.tokens import name_tokens
from parity.trace.window import device_steps

INVALID_RANK = 4294967295
NOTIFY_TASKS = frozenset({"Notify_Record", "Notify_Wait", "Notify Record", "Notify Wait"})


class LinkFigure(msgspec.Struct, frozen=True, kw_only=True):
    """One link of one collective (or a total) in one step."""

    step: int
    op: str  # the collective's name, "total" or "<type>-total"
    src: int  # job rank
    dst: int
    transport: str
    bytes: int
    time_ns: int

    @property
    def bandwidth_gbps(self) -> float:
        """``bytes / time`` in GB/s (0 when no time)."""
        return self.bytes / self.time_ns if self.time_ns else 0.0

    def to_dict(self) -> dict:
        return {"step": self.step, "op": self.op, "src": self.src, "dst": self.dst,
                "transport": self.transport, "bytes": self.bytes, "time_us": self.time_ns / 1e3,
                "bandwidth_gbps": self.bandwidth_gbps}  # fmt: skip


def op_type(name: str) -> str:
    """``hcom_allReduce__586_2_1`` -> ``allreduce``: the word after ``hcom`` (its name's
    letters up to the first number), lowercased."""
    tokens = name_tokens(name)
    words = tokens[1:] if tokens and tokens[0] in ("hcom", "hccl") else tokens
    out = ""
    for token in words:
        if token.isdigit():
            break
        out += token
    return out or name


def communication_matrix(table: ActivityTable) -> tuple[list[LinkFigure], int]:
    """Every link figure of ``table`` (all ranks) and the number of plane tasks left out
    because their local rank is beyond the loaded ranks (module docstring)."""
    links = table.extra.get("link")
    if links is None:
        return [], 0
    ranks = sorted(int(r) for r in distinct_sorted(table.rank))
    steps = device_steps(table)
    sums: dict[tuple, list] = defaultdict(lambda: [0, 0, ""])
    dropped = 0
    types = table.extra.get("task_type")
    for rank in ranks:
        mine = table.rank == rank
        ops = np.flatnonzero(mine & (table.kind == KindCode.KERNEL) & (np.asarray(types, dtype=object) == "HCCL"))
        ops = ops[np.argsort(table.start_ns[ops], kind="stable")]
        tasks = np.flatnonzero(mine & np.array([x is not None for x in links], dtype=bool))
        at = np.searchsorted(table.start_ns[ops], table.start_ns[tasks], side="right") - 1
        for row, k in zip(tasks.tolist(), at.tolist()):
            if k < 0 or table.start_ns[row] > table.end_ns[ops[k]]:
                continue  # a plane task outside every collective
            src, dst, size, link = links[row]
            if str(types[row]) in NOTIFY_TASKS:
                continue
            dst = src if dst == INVALID_RANK else dst
            if src >= len(ranks) or dst >= len(ranks):
                dropped += 1
                continue
            op = ops[k]
            key = (int(steps[op]), table.names[table.name_id[op]], ranks[src], ranks[dst])
            entry = sums[key]
            entry[0] += int(size)
            entry[1] += int(table.end_ns[row] - table.start_ns[row])
            entry[2] = "LOCAL" if src == dst else (link or entry[2])
    figures = [LinkFigure(step=s, op=o, src=a, dst=b, transport=t, bytes=n, time_ns=d)
               for (s, o, a, b), (n, d, t) in sorted(sums.items())]
    return figures + _totals(figures), dropped


def _totals(figures: list[LinkFigure]) -> list[LinkFigure]:
    """Per step and link, the sum over every collective (``total``) and over each type."""
    sums: dict[tuple, list] = defaultdict(lambda: [0, 0, ""])
    for f in figures:
        for op in ("total", f"{op_type(f.op)}-total"):
            entry = sums[(f.step, op, f.src, f.dst)]
            entry[0] += f.bytes
            entry[1] += f.time_ns
            entry[2] = f.transport
    return [LinkFigure(step=s, op=o, src=a, dst=b, transport=t, bytes=n, time_ns=d)
            for (s, o, a, b), (n, d, t) in sorted(sums.items())]
