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
    stream's very last kernel: to its end), and its summed kernel time.

    Repetition ``i`` holds kernels ``first[i]`` up to the next repetition's first (the last one
    ``length`` kernels, or to the end); summed kernel time is a difference of the running sum of
    ``ends - starts``. Only the last repetition can end at the stream's last kernel.
    """
    n = len(starts)
    bounds = np.append(first, min(first[-1] + length, n))
    lo, hi = bounds[:-1], bounds[1:]
    running = np.concatenate(([0], np.cumsum(ends - starts)))
    busy_ns = running[hi] - running[lo]
    block_ns = starts[np.minimum(hi, n - 1)] - starts[lo]
    if hi[-1] == n:
        block_ns[-1] = ends[lo[-1] : n].max() - starts[lo[-1]]
    return tuple(block_ns.tolist()), tuple(busy_ns.tolist())


def find_blocks(table: ActivityTable, rows: np.ndarray, stream: int, row_steps: np.ndarray | None = None) -> BlockStats | None:
    """Layers on ``stream`` among ``rows`` (one rank's kernels in the window), or ``None``.

    ``row_steps`` (the step of every table row, -1 for none) picks one step to search.
    """
    mine = rows[table.stream[rows] == stream]
    mine = mine[np.argsort(table.start_ns[mine], kind="stable")]
    steps = row_steps[mine] if row_steps is not None else None
    if steps is not None and np.any(steps >= 0):
        mine = mine[steps == int(steps[steps >= 0].min())]
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
