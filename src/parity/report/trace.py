"""Terminal tables for a trace analysis: window, streams, device, categories, overlap, steps.

Takes a :class:`parity.trace.TraceAnalysis` and returns rich renderables; it never computes a
figure (every number comes from the result) and never prints.
"""

from __future__ import annotations

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.model.findings import Severity
from parity.trace.results import RankAnalysis, TraceAnalysis
from parity.trace.window import window_text

MAX_STREAMS = 24
MAX_KERNEL_NAME = 60
SHOWN_WARNINGS = 5  # reader warnings printed one a line; the rest are counted (all are in --json)


def format_us(us: float) -> str:
    """Microseconds for humans: ``812 us``, ``12.4 ms``, ``3.21 s``."""
    if abs(us) >= 1e6:
        return f"{us / 1e6:.3g} s" if abs(us) < 1e8 else f"{us / 1e6:,.0f} s"
    if abs(us) >= 1e3:
        return f"{us / 1e3:.4g} ms"
    return f"{us:.4g} us"


def _pct(x: float) -> str:
    return f"{100 * x:.1f}%"


def window_line(rank: RankAnalysis) -> Text:
    w = rank.window
    offset = (w.start_ns - rank.trace_start_ns) / 1e3
    return Text.assemble(
        ("window ", "bold"),
        f"{window_text(w.start_ns, w.end_ns)} us ({format_us(w.length_ns / 1e3)}, "
        f"from {format_us(offset)} after the trace start), ",
        (w.source, "cyan"),
        f": {w.detail}",
    )


def streams_table(rank: RankAnalysis) -> Table:
    table = Table(title=f"rank {rank.rank}: streams in the window", title_justify="left")
    for col in ("device", "stream", "kernels", "busy", "busy %", "share of summed", "top categories"):
        table.add_column(col, justify="left" if col == "top categories" else "right")
    streams = sorted(rank.streams, key=lambda s: -s.busy_ns)
    for s in streams[:MAX_STREAMS]:
        top = sorted(s.categories.items(), key=lambda kv: -kv[1])[:3]
        cats = ", ".join(f"{k} {_pct(v / s.busy_ns) if s.busy_ns else '-'}" for k, v in top)
        table.add_row(str(s.device), str(s.stream), f"{s.kernels:,}", format_us(s.busy_ns / 1e3),
                      _pct(s.busy_fraction), _pct(s.share_of_summed), cats)
    if len(streams) > MAX_STREAMS:
        table.caption = f"{len(streams) - MAX_STREAMS} quieter streams not shown (see --json/--csv)"
    return table


def device_table(rank: RankAnalysis) -> Table:
    d, c = rank.device, rank.comm
    table = Table(title=f"rank {rank.rank}: device", title_justify="left", show_header=False)
    table.add_column("figure")
    table.add_column("value", justify="right")
    table.add_row("busy (union of all streams)", f"{format_us(d.busy_ns / 1e3)}  {_pct(d.busy_ns / d.window_ns) if d.window_ns else ''}")
    table.add_row("idle", format_us(d.idle_ns / 1e3))
    table.add_row("mean concurrency (Σ busy / window)", f"{d.mean_concurrency:.3f}")
    hist = ", ".join(f"{k}: {_pct(v / d.window_ns)}" for k, v in enumerate(d.streams_at_once_ns) if v and d.window_ns)
    table.add_row("streams at once", hist or "-")
    table.add_row("compute / communication", f"{format_us(c.compute_ns / 1e3)} / {format_us(c.communication_ns / 1e3)}")
    table.add_row("overlap, exposed communication", f"{format_us(c.overlap_ns / 1e3)}, {format_us(c.exposed_communication_ns / 1e3)}")
    if c.peer_wait_ns:
        of = f"  {_pct(c.peer_wait_ns / c.communication_ns)} of it" if c.communication_ns else ""
        table.add_row("communication waiting for a peer (Notify Wait)", f"{format_us(c.peer_wait_ns / 1e3)}{of}")
    return table


def categories_table(rank: RankAnalysis) -> Table:
    table = Table(title=f"rank {rank.rank}: categories", title_justify="left")
    for col in ("category", "time (union)", "of busy", "summed", "kernels"):
        table.add_column(col, justify="left" if col == "category" else "right")
    for c in rank.categories:
        style = "yellow" if c.category == "unmatched" and c.time_ns else None
        table.add_row(c.category, format_us(c.time_ns / 1e3), _pct(c.share_of_busy),
                      format_us(c.summed_ns / 1e3), f"{c.kernels:,}", style=style)
    return table


def kernels_table(rank: RankAnalysis, limit: int = 10) -> Table:
    shown = min(limit, len(rank.kernels))
    cut = any(len(k.name) > MAX_KERNEL_NAME for k in rank.top_kernels[:limit])
    table = Table(title=f"rank {rank.rank}: top {shown} of {len(rank.kernels):,} kernels"
                        + (f" (names cut at {MAX_KERNEL_NAME} characters: whole in --csv and --json)" if cut else ""),
                  title_justify="left")
    for col in ("kernel", "category", "count", "total", "mean", "share"):
        table.add_column(col, justify="left" if col in ("kernel", "category") else "right")
    for k in rank.top_kernels[:limit]:
        name = k.name if len(k.name) <= MAX_KERNEL_NAME else k.name[: MAX_KERNEL_NAME - 1] + "…"
        table.add_row(Text(name), Text(k.category), f"{k.count:,}", format_us(k.total_ns / 1e3),  # names: no markup
                      format_us(k.total_ns / 1e3 / k.count), _pct(k.share_of_summed))
    return table


def ascend_table(rank: RankAnalysis) -> Table:
    table = Table(title=f"rank {rank.rank}: Ascend steps (us; profiler's own in brackets)", title_justify="left")
    for col in ("step", "computing", "communication", "not overlapped", "overlapped", "free", "max |diff|"):
        table.add_column(col, justify="right")
    for s in rank.ascend_steps:
        ref = s.reference or {}

        def cell(key: str, value: float) -> str:
            return f"{value:,.3f}" + (f" [{ref[key]:,.3f}]" if key in ref else "")

        dev = s.max_deviation_us
        table.add_row(str(s.step), cell("computing_us", s.computing_us), cell("communication_us", s.communication_us),
                      cell("communication_not_overlapped_us", s.communication_not_overlapped_us),
                      cell("overlapped_us", s.overlapped_us), cell("free_us", s.free_us),
                      "-" if dev is None else f"{dev:.3f}")
    return table


def pipeline_table(rank: RankAnalysis) -> Table:
    """Stage, Bubble, not overlapped excluding receives and Preparing per step, beside the
    profiler's own figures."""
    table = Table(title=f"rank {rank.rank}: Ascend pipeline figures (us; profiler's own in brackets)",
                  title_justify="left")
    for col in ("step", "stage", "bubble", "not overlapped, excl. receive", "preparing"):
        table.add_column(col, justify="right")
    for s in rank.ascend_steps:
        ref = s.reference or {}

        def cell(key: str, value: float | None) -> str:
            text = "-" if value is None else f"{value:,.3f}"
            return text + (f" [{ref[key]:,.3f}]" if key in ref else "")

        table.add_row(str(s.step), cell("stage_us", s.stage_us), cell("bubble_us", s.bubble_us),
                      cell("communication_not_overlapped_exclude_receive_us",
                           s.communication_not_overlapped_exclude_receive_us),
                      cell("preparing_us", s.preparing_us))
    return table


def matrix_table(result: TraceAnalysis) -> Table:
    """Per step and link, every collective of the step together (the ``total`` figures)."""
    table = Table(title="communication matrix (all collectives of the step, per link)", title_justify="left")
    for col in ("step", "link", "transport", "bytes", "time", "bandwidth"):
        table.add_column(col, justify="right")
    for f in result.comm_matrix:
        if f.op == "total":
            table.add_row(str(f.step), f"{f.src} -> {f.dst}", f.transport, f"{f.bytes / 1e6:,.3f} MB",
                          format_us(f.time_ns / 1e3), f"{f.bandwidth_gbps:,.2f} GB/s")
    return table


def blocks_line(rank: RankAnalysis) -> Text | None:
    b = rank.blocks
    if b is None:
        return None
    times = sorted(b.block_ns)
    median = times[len(times) // 2] / 1e3 if times else 0.0
    return Text(f"repeated block on stream {b.stream}: {b.kernels_per_block} kernels x {b.repeats}, "
                f"median {format_us(median)} per block (first kernel {b.first_kernel[:50]})")


def render_analysis(result: TraceAnalysis, *, all_ranks: bool = False) -> RenderableType:
    """The whole report: each rank (only the first and the slowest unless ``all_ranks``)."""
    parts: list[RenderableType] = [Text(f"{result.source} ({result.format}), rules: {result.rules}", style="dim")]
    shown = list(result.ranks)
    if not all_ranks and len(shown) > 2 and result.spread:
        shown = [r for r in shown if r.rank in (shown[0].rank, result.spread.slowest_rank)]
    for rank in shown:
        parts += [window_line(rank), streams_table(rank), device_table(rank), categories_table(rank), kernels_table(rank)]
        if rank.ascend_steps:
            parts += [ascend_table(rank), pipeline_table(rank)]
        line = blocks_line(rank)
        if line is not None:
            parts.append(line)
    if result.comm_matrix:
        parts.append(matrix_table(result))
    if result.spread:
        s = result.spread
        parts.append(Text(f"ranks: {len(result.ranks)}; slowest rank {s.slowest_rank} has "
                          f"{_pct(s.excess_fraction)} more compute than the median"
                          + (" (straggler)" if s.straggler else "")))
    for f in result.findings:
        style = {Severity.ERROR: "red", Severity.WARNING: "yellow"}.get(f.severity, "dim")
        parts.append(Text(f"{f.severity.value}: {f.message}" + (f" ({f.hint})" if f.hint else ""), style=style))
    for w in result.warnings[:SHOWN_WARNINGS]:
        parts.append(Text(f"reader warning: {w}", style="yellow"))
    if len(result.warnings) > SHOWN_WARNINGS:
        parts.append(Text(f"and {len(result.warnings) - SHOWN_WARNINGS} more reader warnings (see --json)", style="yellow"))
    return Group(*parts)
