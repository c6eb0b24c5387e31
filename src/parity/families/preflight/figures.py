"""The preflight's quotable figures: each link's one-way bandwidth and latency, and how many
links are slow."""

from __future__ import annotations

from parity.families.preflight.summary import PreflightSummary
from parity.model.figure import Figure

METHOD = ("ping-pong between every pair of ranks, t = round trip / 2 (max over ranks per iteration, "
          "median); a link is the median over its rank pairs")
SLOW_METHOD = "links with bandwidth < fraction · median link bandwidth (docs/definitions.md, Link preflight)"


def preflight_figures(summary: PreflightSummary) -> list[Figure]:
    """``preflight.link.bandwidth`` (B/s) and ``preflight.link.latency`` (s) per link, and
    ``preflight.slow_links`` (count) with the slow links named in its note."""
    figures: list[Figure] = []
    for link in summary.links:
        scope = {"link": link.link, "scope": link.scope, "world_size": summary.world_size}
        if link.bandwidth_bps is not None:
            figures.append(Figure(name="preflight.link.bandwidth", value=link.bandwidth_bps, unit="B/s",
                                  method=METHOD, scope=scope, note="slow" if link.slow else ""))
        if link.latency_s is not None:
            figures.append(Figure(name="preflight.link.latency", value=link.latency_s, unit="s", method=METHOD,
                                  scope=scope))
    figures.append(Figure(name="preflight.slow_links", value=float(len(summary.slow)), unit="count",
                          method=SLOW_METHOD, scope={"fraction": summary.slow_fraction,
                                                     "world_size": summary.world_size},
                          note=", ".join(summary.slow)))
    return figures
