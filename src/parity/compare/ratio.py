"""The speed ratio of one figure per run, one named function with its formula. A comparison of
sides (one run or several each) takes its CIs, and its ratios over several runs, from
``parity.compare.bootstrap``.

Per case, the ratio is the *speed of run B relative to run A* on identical work: for a rate
(FLOP/s, B/s, higher is better) ``rate_B / rate_A``; for a time (s, lower is better)
``time_A / time_B``. Both read "B is r times as fast as A", and for declared work they are the
same number, since ``rate = work / median time``.
"""

from __future__ import annotations


def speed_ratio(value_a: float, value_b: float, *, higher_is_better: bool) -> float:
    """Speed of B relative to A from one figure per run: ``value_b / value_a`` for a rate,
    ``value_a / value_b`` for a time. Raises ValueError on a non-positive value."""
    if value_a <= 0 or value_b <= 0:
        raise ValueError(f"a speed ratio needs positive values, got {value_a!r} and {value_b!r}")
    return value_b / value_a if higher_is_better else value_a / value_b
