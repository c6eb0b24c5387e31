"""Which step each row of a trace belongs to: one rule for every format, applied when a trace is loaded."""

from __future__ import annotations

import re

import numpy as np

from parity.trace.table import NO_ID, ActivityTable, KindCode

PROFILER_STEP = re.compile(r"ProfilerStep#(\d+)$")


def step_numbers_by_name(names: tuple[str, ...]) -> np.ndarray:
    """Per name id: N of a ``ProfilerStep#N`` name (clipped to int32), else -1; a prefix test
    first, as traces hold thousands of names and a handful of steps."""
    numbers = np.full(max(len(names), 1), -1, dtype=np.int64)
    for i in [i for i, n in enumerate(names) if n.startswith("ProfilerStep#")]:
        match = PROFILER_STEP.match(names[i])
        if match:
            numbers[i] = min(int(match.group(1)), 2**31 - 1)
    return numbers


def place_steps(table: ActivityTable) -> np.ndarray:
    """The step of every row.

    A ``Kind.STEP`` row named ``ProfilerStep#N`` is step N; a step the reader already set
    (``kernel_details.csv``'s ``Step Id``) is kept. Every other row gets the step span it
    belongs to, -1 outside all: a device or sync row the step in which the host call that
    launched it started (matched by ``correlation`` to a ``Kind.RUNTIME`` row), since a kernel
    launched at the end of step 5 but running into step 6 is step 5's work; a row without a
    launching call the step its own start falls in.
    """
    kind, start, correlation = table.kind, table.start_ns, table.correlation
    step = table.step.copy()
    is_step = kind == KindCode.STEP
    step[is_step] = step_numbers_by_name(table.names)[table.name_id[is_step]]
    placed = np.full(len(kind), -1, dtype=np.int32)
    if is_step.any():
        order = np.argsort(start[is_step], kind="stable")
        step_start, step_end = start[is_step][order], table.end_ns[is_step][order]
        when = start.copy()
        # device work (the three lowest kind codes) and syncs, launched by a runtime call
        launched = ((kind >= KindCode.KERNEL) & (kind <= KindCode.MEMSET)) | (kind == KindCode.SYNC)
        launched &= correlation != NO_ID
        runtime = (kind == KindCode.RUNTIME) & (correlation != NO_ID)
        if launched.any() and runtime.any():
            corr, first = np.unique(correlation[runtime], return_index=True)
            pos = np.minimum(np.searchsorted(corr, correlation[launched]), len(corr) - 1)
            found = corr[pos] == correlation[launched]
            when[np.flatnonzero(launched)[found]] = start[runtime][first][pos[found]]
        index = np.searchsorted(step_start, when, side="right") - 1
        inside = (index >= 0) & (when < step_end[np.maximum(index, 0)])
        placed[inside] = step[is_step][order][index[inside]]
        placed[is_step] = step[is_step]
    return np.where(step >= 0, step, placed).astype(np.int32)
