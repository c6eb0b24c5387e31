"""The overlap suite's quotable figures: each case's slowdowns and the overlap achieved."""

from __future__ import annotations

from parity.families.overlap.summary import OverlapSummary
from parity.model.figure import Figure

NAMES = ("exchange_slowdown", "kernel_slowdown", "overlap_fraction")
METHOD = ("medians of the max over ranks per iteration; "
          "slowdown = together/alone, overlap = (a + b - both)/min(a, b)")


def overlap_figures(summary: OverlapSummary) -> list[Figure]:
    """``overlap.<name>`` (a ratio, unit ``count``) per case, for each value it has."""
    figures = []
    for row in summary.rows:
        scope = {"case": row.key, "world_size": summary.world_size, "backend": summary.backend}
        for name in NAMES:
            value = getattr(row, name)
            if value is not None:
                figures.append(Figure(name=f"overlap.{name}", value=value, unit="count", method=METHOD, scope=scope))
    return figures
