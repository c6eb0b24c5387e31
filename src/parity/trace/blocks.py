"""Repeated-block (layer) detection on the busiest stream of a window.

A transformer step runs the same layer N times; its kernels form a block that repeats back to
back. Inside the window (usually several steps) the whole step repeats too, so blocks are looked
for inside one step: the first step in the window when rows carry step numbers, else the first
repetition of the window's own repeating sequence, else the whole window.
"""

from __future__ import annotations

import numpy as np

from parity.trace.repeats import find_block_run, find_repeats
from parity.trace.results import BlockStats
from parity.trace.table import ActivityTable

MIN_LAYERS = 2
STEP_COVERAGE = 0.8  # a repeat explaining less of the window is a layer, not a step


def _block_times(starts: np.ndarray, ends: np.ndarray, first: np.ndarray, length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per repetition: time from its first kernel's start to the next kernel's start (for the
    stream's very last kernel: to its end), and its summed kernel time."""
    n = len(starts)
    bounds = np.append(first, min(first[-1] + length, n))
    block_ns = []
    busy_ns = []
    for i in range(len(first)):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        stop = int(starts[hi]) if hi < n else int(ends[lo:hi].max())
        block_ns.append(stop - int(starts[lo]))
        busy_ns.append(int(np.sum(ends[lo:hi] - starts[lo:hi])))
    return tuple(block_ns), tuple(busy_ns)


def find_blocks(table: ActivityTable, rows: np.ndarray, stream: int, row_steps: np.ndarray | None = None) -> BlockStats | None:
    """Layers on ``stream`` among ``rows`` (one rank's kernels in the window), or ``None``.

    ``row_steps`` (the step of every table row, -1 for none) picks one step to search.
    """
    mine = rows[table.stream[rows] == stream]
    mine = mine[np.argsort(table.start_ns[mine], kind="stable")]
    if row_steps is not None and np.any(row_steps[mine] >= 0):
        first_step = int(row_steps[mine][row_steps[mine] >= 0].min())
        mine = mine[row_steps[mine] == first_step]
    else:
        outer = find_repeats(table.name_id[mine].astype(np.int64), min_repeats=2)
        if outer is not None and outer.coverage >= STEP_COVERAGE * len(mine):
            mine = mine[int(outer.starts[0]) : int(outer.starts[0]) + outer.length]
    inner = find_block_run(table.name_id[mine].astype(np.int64), min_repeats=MIN_LAYERS)
    if inner is None:
        return None
    block_ns, busy_ns = _block_times(table.start_ns[mine], table.end_ns[mine], inner.starts, inner.length)
    return BlockStats(
        stream=int(stream),
        kernels_per_block=inner.length,
        repeats=inner.count,
        first_kernel=table.names[inner.anchor],
        block_ns=block_ns,
        busy_ns=busy_ns,
    )
