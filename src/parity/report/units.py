"""Human units for terminal tables: binary byte sizes, seconds at a readable scale, percentages.

Every family's terminal view formats its SI values with these, so one size or duration reads
the same in every table.
"""

from __future__ import annotations

from parity.model.figure import format_bytes, format_seconds  # noqa: F401 - one format each for report and compare


def format_fraction(f: float | None) -> str:
    return "-" if f is None else f"{f:.1%}"


def time_scale(span_s: float | None) -> tuple[str, float]:
    """``(unit, seconds per unit)`` for an axis spanning ``span_s`` seconds: ``("ms", 1e-3)`` for
    a 50 ms window, so its ticks read ``10 20 30`` in the unit its title names."""
    span = abs(span_s or 0.0)
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us")):
        if span >= scale:
            return unit, scale
    return "ns", 1e-9
