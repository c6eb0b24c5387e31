"""The collectives sweep's quotable figures: the mean bus bandwidth of each collective."""

from __future__ import annotations

from parity.families.collectives.summary import CollectivesSummary
from parity.model.figure import Figure

METHOD = ("nccl-tests busbw = S/t · f(op, n), t the max over ranks per iteration (median); "
          "mean over the sizes measured")


def collectives_figures(summary: CollectivesSummary) -> list[Figure]:
    """One figure per collective: ``collectives.<op>.busbw.avg`` in B/s."""
    return [Figure(name=f"collectives.{op}.busbw.avg", value=mean, unit="B/s", method=METHOD,
                   scope={"op": op, "world_size": summary.world_size, "backend": summary.backend})
            for op, mean in summary.avg_busbw_bps.items()]
