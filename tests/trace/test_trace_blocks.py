"""Per-layer times of a repeated block (hand-computed cases)."""

from __future__ import annotations

import numpy as np

from parity.trace.blocks import _block_times

STARTS = np.array([0, 10, 20, 30, 40, 50], dtype=np.int64)
ENDS = np.array([5, 15, 25, 35, 45, 58], dtype=np.int64)


def test_block_times_end_at_the_next_repetition_or_at_the_last_kernel() -> None:
    # repetitions [0,2) [2,4) [4,6); the last one ends with the stream: 58 - 40 = 18 ns
    block_ns, busy_ns = _block_times(STARTS, ENDS, np.array([0, 2, 4]), 2)
    assert block_ns == (20, 20, 18) and busy_ns == (10, 10, 13)
    assert all(type(v) is int for v in block_ns + busy_ns)


def test_block_times_stop_at_the_kernel_after_the_last_repetition() -> None:
    # repetitions [0,2) [2,4); the last one ends where kernel 4 starts: 40 - 20 = 20 ns
    block_ns, busy_ns = _block_times(STARTS, ENDS, np.array([0, 2]), 2)
    assert block_ns == (20, 20) and busy_ns == (10, 10)
