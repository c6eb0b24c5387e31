"""Terminal tables for ``parity kernels``: one row per operation case with its roofline
figures and check, the ceilings it is rated against, and why each library kernel did not run.

Takes the suite's summary (``parity.families.kernels.summary``); never measures, never prints.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from parity.report.units import format_fraction, format_seconds


def _rate(value: float | None, scale: float) -> str:
    return "-" if value is None else f"{value / scale:.3g}"


def _check(row: dict[str, Any]) -> str:
    check = row["check"]
    if check.get("value") is None:
        return "[red]not checked[/red]" if not row["ok"] else "-"
    mark = "[green]ok[/green]" if check["passed"] else "[red]WRONG[/red]"
    return f"{mark} {check['value']:.1e}"


def operations_table(rows: list[dict[str, Any]]) -> Table:
    table = Table(title="operations (FLOP and bytes as declared: valid rows only, causal mask counted)",
                  title_justify="left")
    for name, justify in (("op", "left"), ("impl", "left"), ("shape", "left"), ("median", "right"),
                          ("GFLOP/s", "right"), ("GB/s", "right"), ("AI FLOP/B", "right"), ("P", "left"),
                          ("efficiency", "right"), ("class", "left"), ("vs torch", "right"), ("check (error)", "left")):
        table.add_column(name, justify=justify)
    for row in rows:
        speed = row.get("speedup_vs_torch")
        table.add_row(
            row["op"], row["impl"], row["shape"], format_seconds(row.get("median_s")),
            _rate(row.get("flop_per_s"), 1e9), _rate(row.get("bytes_per_s"), 1e9),
            "-" if row.get("arithmetic_intensity") is None else f"{row['arithmetic_intensity']:.3g}",
            row.get("ceiling_dtype") or "-", format_fraction(row.get("efficiency")), row.get("class", "-"),
            f"{speed['ratio']:.2f}x [{speed['ci95'][0]:.2f}, {speed['ci95'][1]:.2f}]" if speed else "-",
            _check(row) if row.get("error") is None else f"[red]{row['error']}[/red]")
    return table


def libraries_table(entries: list[dict[str, Any]]) -> Table:
    table = Table(title="library kernels on the same inputs", title_justify="left")
    for name in ("op", "library", "status", "why not"):
        table.add_column(name, overflow="fold")
    for entry in entries:
        status = "[green]measured[/green]" if entry["status"] == "measured" else "[yellow]not run[/yellow]"
        table.add_row(entry["op"], entry["library"], status, entry["reason"])
    return table


def render_kernels(summary: dict[str, Any]) -> RenderableType:
    """The ceilings line, the operations table and the libraries table."""
    peaks = ", ".join(f"P({dtype}) {value / 1e12:.3g} TFLOP/s" for dtype, value in summary["ceilings_flops"].items())
    bandwidth = summary.get("bandwidth_bps")
    head = (f"ceilings: {peaks or 'none measured'}; B {bandwidth / 1e9:.3g} GB/s" if bandwidth
            else f"ceilings: {peaks or 'none measured'}; no bandwidth ceiling")
    errors = "; ".join(f"{k}: {v}" for k, v in summary.get("ceiling_errors", {}).items())
    return Group(head + (f" ({errors})" if errors else ""), operations_table(summary["rows"]),
                 libraries_table(summary["libraries"]))
