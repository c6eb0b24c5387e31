"""The MoE exchange's quotable figures: every measured row's rate in every convention."""

from __future__ import annotations

from parity.families.moe.summary import MoeSummary
from parity.model.figure import Figure


def moe_figures(summary: MoeSummary) -> list[Figure]:
    """``moe.<direction>.<convention>`` in B/s, one per measured row and convention."""
    figures = []
    for row in summary.rows:
        for conv in row.conventions:
            if conv.bps is None:
                continue
            figures.append(Figure(name=f"moe.{row.direction}.{conv.name}", value=conv.bps, unit="B/s",
                                  method=f"{conv.convention}; t = max over ranks per iteration, median",
                                  scope={"case": row.key, "world_size": row.world_size, "backend": row.backend,
                                         "dispatch_dtype": row.dispatch_dtype}))
    return figures
