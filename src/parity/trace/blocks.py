"""Repeated-block (layer) detection on the busiest stream of a window.

A transformer step runs the same layer N times; its kernels form a block that repeats back to
back. Inside the window (usually several steps) the whole step repeats too, so blocks are looked
for inside one step-sized stretch: the stretch between the first two repetitions of the
window's own repeating sequence when there is one, else the whole window.
"""

from __future__ import annotations

import numpy as np

from parity.trace.repeats import find_repeats
from parity.trace.results import BlockStats
from parity.trace.table import ActivityTable

MIN_LAYERS = 2


def _block_times(starts: np.ndarray, ends: np.ndarray, first: np.ndarray, length: int) -> tuple[tuple[int, ...], tuple[int, ...]]:
    """Per repetition: start-to-next-start time (the last: to its last end) and summed kernel time."""
    n = len(starts)
    bounds = np.append(first, min(first[-1] + length, n))
    block_ns = []
    busy_ns = []
    for i in range(len(first)):
        lo, hi = int(bounds[i]), int(bounds[i + 1])
        stop = int(starts[hi]) if i + 1 < len(first) and hi < n else int(ends[lo:hi].max())
        block_ns.append(stop - int(starts[lo]))
        busy_ns.append(int(np.sum(ends[lo:hi] - starts[lo:hi])))
    return tuple(block_ns), tuple(busy_ns)


def find_blocks(table: ActivityTable, rows: np.ndarray, stream: int) -> BlockStats | None:
    """Layers on ``stream`` among ``rows`` (one rank's kernels in the window), or ``None``."""
    mine = rows[table.stream[rows] == stream]
    mine = mine[np.argsort(table.start_ns[mine], kind="stable")]
    names = table.name_id[mine].astype(np.int64)
    outer = find_repeats(names, min_repeats=2)
    stretch = slice(0, len(mine))
    if outer is not None and outer.count >= 2:
        stretch = slice(int(outer.starts[0]), int(outer.starts[0]) + outer.length)
    inner_names = names[stretch]
    inner = find_repeats(inner_names, min_repeats=MIN_LAYERS, max_length=max(len(inner_names) // 2, 1))
    if inner is None:
        return None
    sel = mine[stretch]
    block_ns, busy_ns = _block_times(table.start_ns[sel], table.end_ns[sel], inner.starts, inner.length)
    return BlockStats(
        stream=int(stream),
        kernels_per_block=inner.length,
        repeats=inner.count,
        first_kernel=table.names[inner.anchor],
        block_ns=block_ns,
        busy_ns=busy_ns,
    )
