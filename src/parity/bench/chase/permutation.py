"""Sattolo's algorithm: a uniformly random permutation with exactly one cycle.

A pointer chase must visit every slot before repeating, or a "working set" of ``n`` slots would
really be a smaller cycle. Sattolo (1986) draws uniformly among the ``(n-1)!`` cyclic
permutations: for ``i = n-1 .. 1`` swap ``p[i]`` with ``p[j]``, ``j`` uniform in ``[0, i)``
(Fisher-Yates draws ``j`` in ``[0, i]`` and may leave fixed points; excluding ``i`` is what
forces one cycle). The draws come from numpy; the swaps run in the native module when it is
built and in Python otherwise, giving identical results for one seed.
"""

from __future__ import annotations

import importlib

import numpy as np

from parity.model.errors import ParityError


def sattolo_draws(n: int, *, seed: int) -> np.ndarray:
    """The ``n-1`` swap partners: element ``k`` is uniform in ``[0, n-1-k)`` (for ``i = n-1-k``)."""
    if n < 1:
        raise ParityError(f"a permutation needs at least one slot, got {n}")
    rng = np.random.default_rng(seed)
    return rng.integers(0, np.arange(n - 1, 0, -1, dtype=np.int64)).astype(np.int64) if n > 1 else np.empty(0, np.int64)


def sattolo_cycle(n: int, *, seed: int = 0) -> np.ndarray:
    """``next`` with one cycle through all ``n`` slots: slot ``i`` links to ``next[i]``."""
    draws = sattolo_draws(n, seed=seed)
    perm = np.arange(n, dtype=np.int64)
    try:
        native = importlib.import_module("parity.bench.chase._chase")
    except ImportError:
        _apply_swaps(draws, perm)
    else:
        native.sattolo(draws, perm)
    return perm


def _apply_swaps(draws: np.ndarray, perm: np.ndarray) -> None:
    """Sattolo's swap loop in Python (the fallback when the native module is not built)."""
    p = perm.tolist()
    n = len(p)
    for k, j in enumerate(draws.tolist()):
        i = n - 1 - k
        p[i], p[j] = p[j], p[i]
    perm[:] = p


def cycle_order(nxt: np.ndarray, *, start: int = 0) -> np.ndarray:
    """The slots in the order a chase from ``start`` visits them (one full turn).

    Raises ParityError if ``nxt`` is not a single cycle through every slot.
    """
    n = int(nxt.size)
    order = np.empty(n, dtype=np.int64)
    seen = np.zeros(n, dtype=bool)
    slot = start
    for k in range(n):
        if seen[slot]:
            raise ParityError(f"the permutation returns to slot {slot} after {k} of {n} steps")
        seen[slot] = True
        order[k] = slot
        slot = int(nxt[slot])
    if slot != start:
        raise ParityError(f"the permutation does not return to slot {start} after {n} steps")
    return order
