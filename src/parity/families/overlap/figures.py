"""The overlap suite's quotable figures: each case's slowdowns and the overlap achieved, each
with its 95% CI and an ``invalid`` finding when it cannot be true (``parity.metrics.validity``):
an overlap outside [0, 1] beyond its CI, or a work faster beside the other than alone beyond
the CIs of its two times."""

from __future__ import annotations

from parity.families.overlap.summary import OverlapRow, OverlapSummary
from parity.metrics.validity import faster_together, overlap_outside_unit
from parity.model.figure import Figure
from parity.model.findings import Finding

NAMES = ("exchange_slowdown", "kernel_slowdown", "overlap_fraction")
METHOD = ("medians of the max over ranks per iteration; "
          "slowdown = together/alone, overlap = (a + b - both)/min(a, b); CIs by bootstrap over iterations")


def overlap_figures(summary: OverlapSummary) -> list[Figure]:
    """``overlap.<name>`` per case, for each value it has: the slowdowns are ratios of two times
    (unit ``count``), the overlap achieved a fraction of the shorter work (unit ``1``, shown in %)."""
    figures = []
    for row in summary.rows:
        scope = {"case": row.key, "world_size": summary.world_size, "backend": summary.backend}
        for name in NAMES:
            value = getattr(row, name)
            if value is not None:
                unit = "1" if name == "overlap_fraction" else "count"
                figures.append(Figure(name=f"overlap.{name}", value=value, unit=unit, method=METHOD, scope=scope,
                                      ci95=row.interval(name), findings=figure_findings(row, name)))
    return figures


def figure_findings(row: OverlapRow, name: str) -> tuple[Finding, ...]:
    """The ``invalid`` findings of the row's figure ``name``: the overlap outside [0, 1], or a
    slowdown that says its work ran faster together than alone (CIs of the times apart)."""
    if name == "overlap_fraction":
        found = overlap_outside_unit(row.overlap_fraction, row.interval(name),
                                     what=f"overlap achieved ({row.key})")
    else:
        work = name.removesuffix("_slowdown")
        label = "the exchange" if work == "exchange" else f"the {row.kernel or 'kernel'}"
        found = faster_together(row.interval(f"{work}_together_s"), row.interval(f"{work}_alone_s"),
                                what=f"{label} ({row.key})")
    return (found,) if found is not None else ()
