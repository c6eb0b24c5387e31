"""Terminal tables for the memory suites: bandwidth curves with their fits, latency curves with
their plateaus and knees.

Takes the suites' summary dicts (``parity.families.membw.summary`` / ``latency_summary``), returns
rich renderables; it never measures and never prints. Units are formatted here and only here.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def format_bytes(n: float | None) -> str:
    """``1 KiB``, ``1.5 MiB``, ``4 GiB`` (binary prefixes, as cache and buffer sizes are)."""
    if n is None:
        return "-"
    value = float(n)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if abs(value) < 1024 or unit == "TiB":
            return f"{value:.0f} {unit}" if value == int(value) else f"{value:.3g} {unit}"
        value /= 1024
    return f"{value:.3g} TiB"


def format_seconds(s: float | None) -> str:
    """Seconds at a readable scale: ``3.2 us``, ``15.1 ms``."""
    if s is None:
        return "-"
    for scale, unit in ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns")):
        if abs(s) >= scale or unit == "ns":
            return f"{s / scale:.3g} {unit}"
    return f"{s:.3g} s"


def format_fraction(f: float | None) -> str:
    return "-" if f is None else f"{f:.1%}"


def _bandwidth_table(curve: dict[str, Any]) -> Table:
    regime = f", {curve['label']}" if curve.get("label") else ""
    table = Table(title=f"{curve['op']}{regime}  (GB/s: {curve['convention']})", title_justify="left")
    for name in ("size", "median time", "IQR", "GB/s", "n/t GB/s", "of ceiling", "of datasheet"):
        table.add_column(name, justify="right")
    for p in curve["points"]:
        over = (p["utilization_ceiling"] or 0) > 1.0
        table.add_row(
            format_bytes(p["operand_bytes"]), format_seconds(p["median_s"]), format_seconds(p["iqr_s"]),
            f"{p['gbps']:.3g}", f"{p['operand_gbps']:.3g}",
            format_fraction(p["utilization_ceiling"]) + (" (over)" if over else ""),
            format_fraction(p["utilization_datasheet"]),
        )
    return table


def _fit_table(curves: list[dict[str, Any]]) -> Table:
    table = Table(title="fit t = a + V/b (V: bytes moved, STREAM convention); the quoted fixed cost "
                  "and n½ are the warm ones (repeated, no flush), cold ones after a cache flush",
                  title_justify="left")
    for name in ("op", "regime", "fixed cost a", "asymptotic b (GB/s)", "n½ = a·b", "RMS residual", "sizes"):
        table.add_column(name, justify="right")
    for c in curves:
        regime = c.get("regime", "cold")
        if c.get("asymptotic_gbps") is None:
            table.add_row(c["op"], regime, "-", "-", "-", "-", c.get("note", ""))
            continue
        table.add_row(
            c["op"], regime, format_seconds(c["fixed_cost_s"]), f"{c['asymptotic_gbps']:.3g}",
            format_bytes(c["n_half_bytes"]), format_fraction(c["relative_rms_residual"]),
            f"{format_bytes(c['min_bytes'])}..{format_bytes(c['max_bytes'])}",
        )
    return table


def render_membw(summary: dict[str, Any]) -> RenderableType:
    """Per-operation tables, the fit table, and the ceiling and datasheet lines."""
    parts: list[RenderableType] = [_bandwidth_table(c) for c in summary.get("curves", [])]
    parts.append(_fit_table(summary.get("curves", [])))
    ceiling = summary.get("ceiling")
    if ceiling:
        parts.append(Text(f"measured ceiling: {ceiling['gbps']:.3g} GB/s ({ceiling['method']}, "
                          f"{format_bytes(ceiling['operand_bytes'])} per operand)"))
    sheet = summary.get("datasheet") or {}
    parts.append(Text(f"datasheet peak: {sheet['gbps']:.3g} GB/s ({sheet.get('source', '')})"
                      if sheet.get("gbps") else f"datasheet peak: {sheet.get('note', 'no datasheet entry')}"))
    if summary.get("threads"):
        parts.append(Text(f"torch intra-op threads: {summary['threads']} (CPU operations are multithreaded)"))
    if summary.get("pages"):
        parts.append(Text(f"pages: {summary['pages']}"))
    if summary.get("flush") is not None:
        parts.append(Text("cache flushed before every cold call; warm points are repeated without a flush"
                          if summary["flush"] else "cache not flushed: small sizes are served from cache"))
    for c in summary.get("curves", []):
        if c.get("note"):
            parts.append(Text(f"{c['op']}: {c['note']}", style="yellow"))
    for f in summary.get("findings", []):
        parts.append(Text(f"{f['severity']} {f['code']}: {f['message']}; {f['hint']}", style="yellow"))
    return Group(*parts)


def _size_table(curve: dict[str, Any]) -> Table:
    table = Table(title=f"latency vs working set, {curve['page']} pages, {curve['stride_bytes']} B stride",
                  title_justify="left")
    table.add_column("working set", justify="right")
    table.add_column("ns/load", justify="right")
    table.add_column("huge-page share", justify="right")
    for p in curve["points"]:
        table.add_row(format_bytes(p["working_set_bytes"]), f"{p['latency_ns']:.3g}",
                      format_fraction(p.get("huge_page_share")))
    return table


def _plateau_table(curve: dict[str, Any]) -> Table:
    table = Table(title=f"plateaus, {curve['page']} pages", title_justify="left")
    for name in ("level", "ns/load", "from", "to", "capacity", "reported", "measured/reported"):
        table.add_column(name, justify="right")
    for p in curve["plateaus"]:
        ratio = p.get("size_ratio")
        table.add_row(p["level"], f"{p['latency_ns']:.3g}", format_bytes(p["start_bytes"]),
                      format_bytes(p["size_bytes"]), format_bytes(p.get("capacity_bytes")),
                      format_bytes(p.get("reported_bytes")),
                      "-" if ratio is None else f"{ratio:.2g}x")
    return table


def _blocks_table(curve: dict[str, Any]) -> Table:
    table = Table(title=f"latency vs concurrent {curve['block_kind']}s, {curve['page']} pages",
                  caption=(f"each chases its own {format_bytes(curve['region_bytes'])}; "
                           f"{curve.get('compute_units')} {curve.get('compute_unit_kind') or 'compute units'}"),
                  title_justify="left", caption_justify="left")
    table.add_column("blocks", justify="right")
    table.add_column("ns/load", justify="right")
    table.add_column("", justify="left")
    knees = {k["blocks"] for k in curve["knees"]}
    for p in curve["points"]:
        table.add_row(str(p["blocks"]), f"{p['latency_ns']:.3g}", "knee" if p["blocks"] in knees else "")
    return table


def render_latency(summary: dict[str, Any]) -> RenderableType:
    """Size curves with plateaus, blocks curves with knees, and the estimator used."""
    parts: list[RenderableType] = []
    for curve in summary.get("size_curves", []):
        parts.extend([_size_table(curve), _plateau_table(curve)])
        for p in curve["plateaus"]:
            if p.get("memory") and not p.get("page_walk"):
                parts.append(Text(f"{curve['page']} pages: {p['level']} is the median of the {p['points']} working "
                                  "sets where the sweep has left the last cache (2x its reported size and beyond)"))
        if curve.get("page_walk_from_bytes"):
            parts.append(Text(f"{curve['page']} pages: page walks lift the curve above the huge-page one "
                              f"from {format_bytes(curve['page_walk_from_bytes'])} (levels marked +page-walks)"))
    if summary.get("plateaus_page"):
        parts.append(Text(f"cache sizes read from the {summary['plateaus_page']} curve"))
    for f in summary.get("findings", []):
        parts.append(Text(f"{f['severity']} {f['code']}: {f['message']}; {f['hint']}"))
    for curve in summary.get("blocks_curves", []):
        parts.append(_blocks_table(curve))
        for k in curve["knees"]:
            parts.append(Text(f"knee after {k['blocks']} blocks: slope {k['slope_before_ns_per_block']:.3g} -> "
                              f"{k['slope_after_ns_per_block']:.3g} ns per added block"))
        if not curve["knees"]:
            parts.append(Text("no knee: latency stays on one trend across the block counts"))
    parts.append(Text(f"method: {summary.get('method', '')}; {summary.get('estimator', '')}"))
    return Group(*parts)
