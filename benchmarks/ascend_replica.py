"""An Ascend profiler job replicated to many ranks with known arrival shifts, for the fleet
analysis and for ``msprof-analyze cluster -m slow_rank`` to read the same folders.

One rank folder of torch_npu's database export (``rankN_ascend_pt/profiler_info_N.json`` and
``ASCEND_PROFILER_OUTPUT/ascend_pytorch_profiler_N.db``, ``analysis.db``) is the template of
every rank. Rank ``r``'s copy is ``rank{r}_ascend_pt`` with the rank in both file names, in
``profiler_info_r.json``'s ``rank_id`` and in ``RANK_DEVICE_MAP`` (rankId r, deviceId
``r % 8``): msprof-analyze takes the rank from the json's file name and the table, parity from
the table (then the db's file name).

The shifts: only ``COMMUNICATION_OP.startNs`` (the HCCL operation's start, which both tools
take as the rank's arrival) changes; ``endNs`` stays the template's, as in a real collective,
where every member finishes together once the last one has arrived. For collective ``c``
(the template's ``c``-th operation by start) on rank ``r``::

    start[r, c] = template_start[c] + jitter[r, c] + (slow_ns if r == slow_rank)
                                               + (late_ns if r == late_rank and c == late_op)

with ``jitter`` a seeded integer in ``[0, jitter_ns)`` ns, so every member's duration differs
(msprof-analyze's outlier test needs more than three distinct durations). ``slow_ns`` and
``late_ns`` must stay below the template's shortest operation, so that no operation ends
before it starts. The expected last rank of each collective is the rank with the largest
shift, which this module returns with the folders.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
from dataclasses import dataclass
from pathlib import Path

import numpy as np

OUTPUT = "ASCEND_PROFILER_OUTPUT"
DEVICES_PER_NODE = 8


@dataclass(frozen=True)
class ReplicaTruth:
    """The replica's folders and what an arrival analysis must find in them."""

    folders: tuple[Path, ...]  # rank r's folder at index r
    op_names: tuple[str, ...]  # the template's HCCL operations by start
    group: str  # their communication group (one group in the template)
    last_rank: tuple[int, ...]  # per operation, the rank that arrives last
    skew_ns: tuple[int, ...]  # per operation, last minus first arrival
    slow_rank: int  # the rank last most often


def template_ops(db_path: Path) -> list[tuple[int, str, str, int, int]]:
    """``(rowid, opName, groupName, startNs, endNs)`` of the template's HCCL operations by start."""
    db = sqlite3.connect(f"file:{db_path}?mode=ro", uri=True)
    try:
        return db.execute(
            "SELECT o.rowid, n.value, g.value, o.startNs, o.endNs FROM COMMUNICATION_OP o "
            "JOIN STRING_IDS n ON n.id = o.opName JOIN STRING_IDS g ON g.id = o.groupName ORDER BY o.startNs"
        ).fetchall()
    finally:
        db.close()


def arrival_shifts_ns(*, ranks: int, ops: int, slow_rank: int, slow_ns: int, late_rank: int, late_op: int,
                      late_ns: int, jitter_ns: int, seed: int) -> np.ndarray:
    """``shift[r, c]`` in ns (module docstring)."""
    shift = np.random.default_rng(seed).integers(0, jitter_ns, size=(ranks, ops), dtype=np.int64)
    shift[slow_rank, :] += slow_ns
    if 0 <= late_rank < ranks and 0 <= late_op < ops:
        shift[late_rank, late_op] += late_ns
    return shift


def _write_rank(template: Path, out: Path, rank: int, rows: list[int], starts: list[int]) -> Path:
    """Copy the template folder as rank ``rank`` with its operations starting at ``starts``."""
    folder = out / f"rank{rank}_ascend_pt"
    shutil.copytree(template, folder)
    for info in folder.glob("profiler_info_*.json"):
        data = json.loads(info.read_text())
        data["rank_id"] = rank
        info.unlink()
        (folder / f"profiler_info_{rank}.json").write_text(json.dumps(data, indent=4))
    (db_file,) = (folder / OUTPUT).glob("ascend_pytorch_profiler_*.db")
    db_path = db_file.rename(db_file.with_name(f"ascend_pytorch_profiler_{rank}.db"))
    db = sqlite3.connect(db_path)
    try:
        db.execute("UPDATE RANK_DEVICE_MAP SET rankId = ?, deviceId = ?", (rank, rank % DEVICES_PER_NODE))
        db.executemany("UPDATE COMMUNICATION_OP SET startNs = ? WHERE rowid = ?", zip(starts, rows))
        db.commit()
    finally:
        db.close()
    return folder


def replicate(template: Path, out: Path, *, ranks: int = 64, slow_rank: int = 37, slow_ns: int = 500_000,
              late_rank: int = 5, late_op: int = 2, late_ns: int = 1_000_000, jitter_ns: int = 50_000,
              seed: int = 0) -> ReplicaTruth:
    """Write ``ranks`` rank folders of ``template`` (a ``rankN_ascend_pt`` folder of the database
    export) into ``out`` with the shifts of the module docstring; the truth."""
    template = Path(template)
    (db_file,) = (template / OUTPUT).glob("ascend_pytorch_profiler_*.db")
    ops = template_ops(db_file)
    if not ops:
        raise SystemExit(f"{db_file}: no COMMUNICATION_OP rows; take a template with collectives")
    groups = {g for _, _, g, _, _ in ops}
    if len(groups) != 1:
        raise SystemExit(f"{db_file}: operations in {len(groups)} groups; this replica assumes one")
    shortest = min(end - start for _, _, _, start, end in ops)
    if max(slow_ns, late_ns) + jitter_ns >= shortest:
        raise SystemExit(f"shifts up to {max(slow_ns, late_ns) + jitter_ns} ns reach the shortest operation "
                         f"({shortest} ns); take smaller shifts")  # fmt: skip
    shift = arrival_shifts_ns(ranks=ranks, ops=len(ops), slow_rank=slow_rank, slow_ns=slow_ns,
                              late_rank=late_rank, late_op=late_op, late_ns=late_ns, jitter_ns=jitter_ns, seed=seed)
    rows = [row for row, *_ in ops]
    base = np.array([start for _, _, _, start, _ in ops], dtype=np.int64)
    out.mkdir(parents=True, exist_ok=True)
    folders = tuple(_write_rank(template, out, r, rows, (base + shift[r]).tolist()) for r in range(ranks))
    last = shift.argmax(axis=0)
    votes = np.bincount(last, minlength=ranks)
    return ReplicaTruth(folders=folders, op_names=tuple(name for _, name, _, _, _ in ops), group=groups.pop(),
                        last_rank=tuple(int(r) for r in last),
                        skew_ns=tuple(int(s) for s in shift.max(axis=0) - shift.min(axis=0)),
                        slow_rank=int(votes.argmax()))  # fmt: skip


def op_index(name: str) -> int:
    """The operation's ordinal in an HCCL name (``hcom_allReduce__576_2_1`` -> 2)."""
    match = re.search(r"__\d+_(\d+)_\d+$", name)
    return int(match.group(1)) if match else -1
