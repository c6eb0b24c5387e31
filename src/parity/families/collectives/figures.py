"""The collectives sweep's quotable figures: the mean bus bandwidth of each collective."""

from __future__ import annotations

from parity.families.collectives.summary import CollectivesSummary
from parity.model.figure import Figure

METHOD = ("nccl-tests busbw = S/t · f(op, n), t the max over ranks per iteration (median); "
          "mean over the sizes measured")


def collectives_figures(summary: CollectivesSummary) -> list[Figure]:
    """One figure per collective: ``collectives.<op>.busbw.avg`` in B/s over every rank, and
    ``collectives.<dimension>.<op>.busbw.avg`` per other dimension (scope ``dimension``)."""
    world = [Figure(name=f"collectives.{op}.busbw.avg", value=mean, unit="B/s", method=METHOD,
                    scope={"op": op, "world_size": summary.world_size, "backend": summary.backend})
             for op, mean in summary.avg_busbw_bps.items()]
    sizes = {(r.dimension, r.op): r.world_size for r in summary.rows}
    return world + [Figure(name=f"collectives.{dimension}.{op}.busbw.avg", value=mean, unit="B/s", method=METHOD,
                           scope={"op": op, "world_size": sizes.get((dimension, op)), "backend": summary.backend,
                                  "dimension": dimension})
                    for dimension, ops in summary.avg_busbw_by_dimension.items() for op, mean in ops.items()]
