"""A uniformly random single-cycle permutation, built from a random visiting order.

A pointer chase must visit every slot before repeating, or a "working set" of ``n`` slots would
really be a smaller cycle. The ring is drawn uniformly among the ``(n-1)!`` single cycles, the
distribution Sattolo's algorithm (1986) draws from, but built the other way round: a visiting
order ``order`` with ``order[0] = 0`` and the other ``n-1`` slots shuffled (numpy's
Fisher-Yates), each slot linking to the next in that order and the last back to slot 0. Each
single cycle comes from exactly one such order, so the draw is uniform; and the order is known,
so a chase of ``s`` steps from slot ``order[i]`` must end at ``order[(i + s) mod n]``, which
checks a ring of any size without chasing a full turn (a turn of a 1 GiB ring is 16 M
dependent loads, seconds of latency-bound work). Everything is vectorised: no Python loop per
slot.
"""

from __future__ import annotations

import numpy as np

from parity.model.errors import ParityError


def random_order(n: int, *, seed: int) -> np.ndarray:
    """The visiting order of a random ring of ``n`` slots: slot 0 first, then ``1..n-1`` shuffled."""
    if n < 1:
        raise ParityError(f"a ring needs at least one slot, got {n}")
    order = np.empty(n, dtype=np.int64)
    order[0] = 0
    order[1:] = np.random.default_rng(seed).permutation(np.arange(1, n, dtype=np.int64))
    return order


def links_of(order: np.ndarray) -> np.ndarray:
    """``next`` of the ring that visits ``order``: ``next[order[k]] = order[(k + 1) mod n]``."""
    nxt = np.empty_like(order)
    nxt[order] = np.roll(order, -1)
    return nxt


def is_single_cycle(nxt: np.ndarray, order: np.ndarray) -> bool:
    """True when ``order`` lists every slot once and ``nxt`` links each to the one after it
    (the last to the first): then ``nxt`` is one cycle through all slots. Vectorised, O(n)."""
    n = order.size
    if nxt.size != n or n == 0 or order.min() < 0 or order.max() >= n:
        return False
    if not np.all(np.bincount(order, minlength=n) == 1):
        return False
    return bool(np.array_equal(nxt[order], np.roll(order, -1)))
