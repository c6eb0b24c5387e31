"""The latency summary as typed figures (``parity.model.figure.Figure``): each plateau of the
preferred page size, and the first knee of concurrent blocks.

Compare and the report read these and nothing else, so every figure names its method and its
scope here, once.
"""

from __future__ import annotations

from parity.families.latency.summary import LatencySummary
from parity.model.figure import Figure


def latency_figures(summary: LatencySummary) -> list[Figure]:
    """Latency: each plateau of the preferred page size, and the first knee of concurrent blocks."""
    device = summary.device
    method = f"{summary.method}; {summary.estimator}"
    figures = []
    for plateau in summary.plateaus:
        figures.append(Figure(
            name=f"latency.{plateau['level']}", value=plateau["latency_s"], unit="s", method=method,
            scope={"device": device, "page": plateau.get("page"), "level": plateau["level"],
                   "from_bytes": plateau.get("start_bytes"), "to_bytes": plateau.get("size_bytes"),
                   "memory": plateau.get("memory")}))
    knees = summary.blocks_curve.get("knees", [])
    if knees:
        figures.append(Figure(
            name="latency.first_knee", value=float(knees[0]["blocks"]), unit="count",
            method="first knee of latency against concurrent blocks (16 KiB region each)",
            scope={"device": device, "page": summary.blocks_curve.get("page")}))
    return figures
