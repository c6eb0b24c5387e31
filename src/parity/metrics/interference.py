"""Interference of two kinds of work on one device: how much each slows down when they run
together, and how much of the shorter one was hidden under the other."""

from __future__ import annotations


def slowdown(together_s: float, alone_s: float) -> float | None:
    """``together / alone``: 1 means no interference, 2 twice as slow. Example: 3 ms alone,
    4.5 ms together is 1.5. None when either time is not positive."""
    if not together_s or not alone_s or together_s <= 0 or alone_s <= 0:
        return None
    return together_s / alone_s


def overlap_achieved(a_alone_s: float, b_alone_s: float, both_s: float) -> float | None:
    """The share of the shorter work hidden under the other, ``(a + b - both) / min(a, b)``,
    from the times alone and the wall time of both started together: 1 when ``both = max(a, b)``
    (fully hidden), 0 when ``both = a + b`` (serialised), below 0 when running together costs
    more than running one after the other (the figure is kept, not clipped).
    Example: a = 4 ms, b = 2 ms, both = 5 ms gives (6 - 5)/2 = 0.5."""
    shorter = min(a_alone_s, b_alone_s)
    if shorter <= 0:
        return None
    return (a_alone_s + b_alone_s - both_s) / shorter
