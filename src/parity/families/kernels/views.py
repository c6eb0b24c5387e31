"""How the kernels family is drawn: for ``parity kernels`` one row per operation case with its
roofline figures and check, the ceilings it is rated against, and why each library kernel did
not run; for the HTML report each case's achieved rate, library kernels beside their torch
reference. Never measures, never prints; values arrive in SI units and are formatted here.
"""

from __future__ import annotations

from typing import Any, Literal

from rich import box
from rich.console import Group, RenderableType
from rich.table import Table as RichTable
from rich.text import Text

from parity.families.kernels.summary import KernelRow, KernelsSummary, LibraryStatus
from parity.model.figure import format_value
from parity.report.html.chart import RATIO, Chart, Column, Table, log_axis, series_color, vega_lite
from parity.report.units import format_fraction, format_seconds
from parity.report.views import RunData

# ------------------------------------------------------------------------------------- terminal


def _rate(value: float | None, scale: float) -> str:
    return "-" if value is None else f"{value / scale:.3g}"


def _check(row: KernelRow) -> Text:
    check = row.check
    if check.value is None:
        return Text("not checked", style="red") if not row.ok else Text("-")
    mark = Text("ok", style="green") if check.passed else Text("WRONG", style="red")
    return mark + Text(f" {check.value:.1e}")


def operations_table(rows: tuple[KernelRow, ...]) -> RichTable:
    """One row per operation case; cells are text as written (a shape or an error's ``[...]`` is
    not console markup) and a long one wraps, never cut to "..."."""
    table = RichTable(title="operations (FLOP and bytes as declared: valid rows only, causal mask counted)",
                      title_justify="left", box=box.SIMPLE_HEAD)
    columns: tuple[tuple[str, Literal["left", "right"]], ...] = (
        ("op (impl) / shape", "left"), ("median", "right"), ("GFLOP/s", "right"),
        ("GB/s", "right"), ("AI FLOP/B", "right"), ("P", "left"), ("eff.", "right"), ("class", "left"),
        ("vs torch", "right"), ("check (error)", "left"))
    for name, justify in columns:
        table.add_column(name, justify=justify, overflow="fold")
    for row in rows:
        speed = row.speedup_vs_torch
        table.add_row(  # the shape under its op: narrow enough that neither is cut at 120 columns
            Text(f"{row.op} ({row.impl})") + Text(f"\n{row.shape}", style="dim"),
            *map(Text, (format_seconds(row.median_s),
                        _rate(row.flop_per_s, 1e9), _rate(row.bytes_per_s, 1e9),
                        "-" if row.arithmetic_intensity is None else f"{row.arithmetic_intensity:.3g}",
                        row.ceiling_dtype or "-", format_fraction(row.efficiency),
                        (row.roofline_class or "-").removesuffix("-bound"),
                        f"{speed.ratio:.2f}x [{speed.ci95[0]:.2f}, {speed.ci95[1]:.2f}]" if speed else "-")),
            _check(row) if row.error is None else Text(row.error, style="red"))
    return table


def libraries_table(entries: tuple[LibraryStatus, ...]) -> RichTable:
    table = RichTable(title="library kernels on the same inputs", title_justify="left", box=box.SIMPLE_HEAD)
    for name in ("op", "library", "status", "why not"):
        table.add_column(name, overflow="fold")
    for entry in entries:
        status = Text("measured", style="green") if entry.status == "measured" else Text("not run", style="yellow")
        table.add_row(Text(entry.op), Text(entry.library), status, Text(entry.reason))
    return table


def render_kernels(summary: dict[str, Any]) -> RenderableType:
    """The ceilings line, the operations table and the libraries table."""
    s = KernelsSummary.from_dict(summary)
    peaks = ", ".join(f"P({dtype}) {format_value(value, 'FLOP/s')}" for dtype, value in s.ceilings_flops.items())
    head = (f"ceilings: {peaks or 'none measured'}; B {format_value(s.bandwidth_bps, 'B/s')}" if s.bandwidth_bps
            else f"ceilings: {peaks or 'none measured'}; no bandwidth ceiling")
    errors = "; ".join(f"{k}: {v}" for k, v in s.ceiling_errors.items())
    return Group(Text(head + (f" ({errors})" if errors else "")), operations_table(s.rows), libraries_table(s.libraries))


# ----------------------------------------------------------------------------------------- charts

RATE_COLUMNS = (
    Column(field="op", title="operation"), Column(field="shape", title="shape"),
    Column(field="impl", title="implementation"),
    Column(field="median_s", title="median call", unit="s"),
    Column(field="flop_per_s", title="achieved", unit="FLOP/s"),
    Column(field="torch_flop_per_s", title="torch reference", unit="FLOP/s"),
    Column(field="speedup_vs_torch", title="vs torch", unit=RATIO),
    Column(field="speedup_ci_low", title="CI low", unit=RATIO),
    Column(field="speedup_ci_high", title="CI high", unit=RATIO),
    Column(field="efficiency", title="efficiency", unit="1"), Column(field="check", title="check"),
)


def rate_rows(label: str, summary: KernelsSummary, *, many: bool) -> list[dict[str, Any]]:
    """One row per measured operation case of a run: its achieved rate and, for a library
    kernel, the rate of the torch reference on the same inputs and the speedup over it (the
    ratio of medians with its 95% CI)."""
    torch_rate = {(r.op, r.shape): r.flop_per_s for r in summary.rows if r.impl == "torch"}
    rows = []
    for r in summary.rows:
        if r.flop_per_s is None:
            continue
        speed = r.speedup_vs_torch
        rows.append({
            "series": f"{label} · {r.impl}" if many else r.impl, "run": label, "op": r.op, "shape": r.shape,
            "case": f"{r.op} {r.shape}", "impl": r.impl, "median_s": r.median_s, "flop_per_s": r.flop_per_s,
            "torch_flop_per_s": torch_rate.get((r.op, r.shape)),
            "speedup_vs_torch": speed.ratio if speed else None,
            "speedup_ci_low": speed.ci95[0] if speed else None, "speedup_ci_high": speed.ci95[1] if speed else None,
            "efficiency": r.efficiency,
            "check": "ok" if r.check.passed else "WRONG" if r.check.passed is False else "-"})
    return rows


def kernels_charts(runs: list[RunData]) -> list[Chart]:
    """Achieved FLOP/s per operation case, each library kernel beside its torch reference on the
    same inputs (one colour per implementation, per run when several)."""
    many = len(runs) > 1
    rows = [row for run in runs if run.summary
            for row in rate_rows(run.label, KernelsSummary.from_dict(run.summary), many=many)]
    if not rows:
        return []
    spec = vega_lite({"rates": rows}, {
        "data": {"name": "rates"}, "mark": {"type": "point", "filled": True, "size": 70},
        "encoding": {"y": {"field": "case", "type": "nominal", "title": None, "sort": None},
                     "x": log_axis("flop_per_s", "achieved FLOP/s (declared FLOP / median call)"),
                     "color": series_color(), "shape": {"field": "impl", "type": "nominal", "title": None},
                     "tooltip": [{"field": "case"}, {"field": "impl"}, {"field": "flop_per_s", "format": ".4s"},
                                 {"field": "speedup_vs_torch", "format": ".2f"},
                                 {"field": "efficiency", "format": ".1%"}]}},
        height=max(120, 28 * len({r["case"] for r in rows})))
    return [Chart(
        id="kernels-rates", section="kernels", title="Kernel libraries: achieved rate against the torch reference",
        spec=spec, tables=(Table(dataset="rates", title="operation cases",
                                 columns=((Column(field="run", title="run"),) if many else ()) + RATE_COLUMNS),),
        note="Achieved rate = the operation's declared FLOP (valid rows only, causal mask counted) over the median "
             "call. A library kernel runs on the same inputs as its torch reference; vs torch is the ratio of "
             "medians torch/library with a 95% bootstrap CI (> 1: the library is faster). Efficiency: achieved / "
             "min(P, AI·B) against the measured ceilings. Library kernels that did not run are listed, with the "
             "reason, by parity kernels.")]


class KernelsView:
    """The kernels family's view (``parity.report.views.View``)."""

    section = ("kernels", "Kernel libraries")

    def terminal(self, summary: dict[str, Any]) -> RenderableType:
        return render_kernels(summary)

    def charts(self, runs: list[RunData]) -> list[Chart]:
        return kernels_charts(runs)


VIEW = KernelsView()
