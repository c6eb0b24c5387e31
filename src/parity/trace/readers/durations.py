"""Pair Chrome-trace duration events (``ph: B`` then ``ph: E``) into complete activities.

Kineto writes complete (``X``) events only, but other Chrome-trace producers write a ``B`` when
an activity begins and an ``E`` when it ends, nested per thread. Pairs are matched per
``(pid, tid)`` with a stack, in file order (the format requires an ``E`` to close the most
recent open ``B`` of its thread), and become rows like complete events. A ``B`` never closed
or an ``E`` with nothing open cannot be given a duration: each is skipped and counted in the
warning this module returns. ``ts`` is read exactly as for complete events; an ``E`` before its
``B`` is a :class:`ParityError` naming the event.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from parity.model.errors import ParityError
from parity.trace.readers.columns import Columns, int_or, times_to_ns
from parity.trace.readers.kineto_rows import CAT_CODE, DEVICE_CODES, SKIP, UNKNOWN
from parity.trace.readers.lanes import ScanState
from parity.trace.table import NO_ID


def pair_begin_end(marks: list[tuple], *, path: Path) -> tuple[list[tuple], str | None]:
    """``marks`` are ``(ph, name, cat, pid, tid, ts, index)`` in file order.

    Returns ``(pairs, warning)``: each pair is ``(name, cat, pid, tid, start_ns, end_ns,
    index_of_B)``; the warning counts unmatched marks (None when all matched).
    """
    if not marks:
        return [], None
    starts = times_to_ns([m[5] for m in marks], path=path, first=0, what="ts",
                         index=np.array([m[6] for m in marks]))  # fmt: skip
    open_by_lane: dict[tuple, list[int]] = {}
    pairs, unmatched = [], 0
    for j, (ph, name, cat, pid, tid, _ts, index) in enumerate(marks):
        lane = (pid if isinstance(pid, (int, str)) else None, tid if isinstance(tid, (int, str)) else None)
        stack = open_by_lane.setdefault(lane, [])
        if ph == "B":
            stack.append(j)
            continue
        if not stack:
            unmatched += 1
            continue
        b = stack.pop()
        if starts[j] < starts[b]:
            raise ParityError(
                f"{path}: event {index} ends (ph E) before its begin event {marks[b][6]}; "
                "the trace is corrupt"
            )
        _, b_name, b_cat, b_pid, b_tid, _, b_index = marks[b]
        pairs.append((b_name, b_cat, b_pid, b_tid, int(starts[b]), int(starts[j]), b_index))
    unmatched += sum(len(stack) for stack in open_by_lane.values())
    warning = None
    if unmatched:
        warning = f"{unmatched} 'B'/'E' duration events have no partner; skipped"
    return pairs, warning


def add_duration_pairs(cols: Columns, state: ScanState) -> str | None:
    """Rows for the paired ``B``/``E`` events (see :mod:`.durations`); the warning, if any."""
    pairs, warning = pair_begin_end(state.marks, path=state.path)
    rows = [p for p in pairs if CAT_CODE.get(p[1], UNKNOWN) != SKIP]
    if not rows:
        return warning
    kind = np.array([CAT_CODE.get(p[1], UNKNOWN) for p in rows], dtype=np.int16)
    pid = np.array([int_or(p[2]) for p in rows], dtype=np.int64)
    tid = np.array([int_or(p[3]) for p in rows], dtype=np.int64)
    on_device = np.isin(kind, DEVICE_CODES)
    cols.add(
        device=np.where(on_device, pid, NO_ID), stream=tid, kind=kind,
        name_id=np.array([cols.intern(p[0] or "") for p in rows], np.int32),
        start_ns=np.array([p[4] for p in rows], np.int64),
        end_ns=np.array([p[5] for p in rows], np.int64), pid=pid, tid=tid,
    )  # fmt: skip
    state.known_cat = state.known_cat or bool((kind != UNKNOWN).any())
    return warning
