"""How the preflight is drawn: a table of links (and of rank pairs) for the terminal, the slow
links named under it. Plain text, from the stored summary; never measures."""

from __future__ import annotations

from typing import Any

from parity.families.preflight.summary import PreflightSummary
from parity.report.html.chart import Chart
from parity.report.views import RunData

SECTION = ("communication", "Communication")


def _us(seconds: float | None) -> str:
    return "n/a" if seconds is None else f"{seconds * 1e6:.1f}"


def _gbps(bps: float | None) -> str:
    return "n/a" if bps is None else f"{bps / 1e9:.3f}"


def _table(lines: list[list[str]]) -> list[str]:
    widths = [max(len(line[i]) for line in lines) for i in range(len(lines[0]))]
    return ["  ".join(cell.ljust(w) for cell, w in zip(line, widths)) for line in lines]


def render_preflight(summary: dict[str, Any]) -> str:
    """Links (median over their pairs), then pairs, then the verdict line naming slow links."""
    s = PreflightSummary.from_dict(summary)
    links = [["link", "scope", "pairs", "bandwidth (GB/s)", "latency (us)", ""]]
    links += [[k.link, k.scope, str(k.pairs), _gbps(k.bandwidth_bps), _us(k.latency_s), "SLOW" if k.slow else ""]
              for k in s.links]
    pairs = [["ranks", "scope", "bandwidth (GB/s)", "latency (us)", "ok"]]
    pairs += [[f"{p.ranks[0]}-{p.ranks[1]}", p.scope, _gbps(p.bandwidth_bps), _us(p.latency_s),
               "ok" if p.ok else (p.error or "WRONG")] for p in s.pairs]
    if s.slow:
        verdict = (f"slow: {', '.join(s.slow)} (below {s.slow_fraction:g} of the median link's bandwidth)")
    else:
        verdict = f"no slow link (none below {s.slow_fraction:g} of the median link's bandwidth)"
    pairs_line = f"; slow pairs within a link: {', '.join(s.slow_pairs)}" if s.slow_pairs else ""
    return "\n".join([*_table(links), "", *_table(pairs), "",
                      f"slowest: {s.slowest or 'n/a'}; {verdict}{pairs_line}"])


class PreflightView:
    """The preflight's view (``report.views.View``)."""

    section = SECTION

    def terminal(self, summary: dict[str, Any]) -> str:
        return render_preflight(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return []


VIEW = PreflightView()
