"""Terminal tables for tuned GEMM backends against the baseline: per shape, then per size bucket.

Takes ``summary["speedups"]`` of the GEMM suite (``parity.families.gemm.speedup_summary``);
never measures, never prints.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table

from parity.report.units import format_seconds as duration


def _ratio(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}x"


def shape_speedup_table(candidate: str, entry: dict[str, Any]) -> Table:
    table = Table(title=f"{candidate} against {entry['baseline']} per shape ({entry['subset']})", title_justify="left",
                  caption=entry["method"])
    for name, justify in (("shape", "left"), ("MxNxK", "left"), ("bucket", "left"), ("speedup", "right"),
                          ("95% CI", "right"), ("tuning", "right"), ("winner", "left"), ("re-check", "left")):
        table.add_column(name, justify=justify)
    for row in entry["rows"]:
        dims = f"{row['m']}x{row['n']}x{row['k']}"
        if row.get("error"):
            table.add_row(row["name"], dims, row["bucket"], "-", "-", "-", "-", f"[red]{row['error']}[/red]")
            continue
        ci = row.get("speedup_ci95") or [None, None]
        recheck = row.get("winner_check") or {}
        table.add_row(row["name"], dims, row["bucket"], _ratio(row.get("speedup")),
                      f"{_ratio(ci[0])}-{_ratio(ci[1])}", duration(row.get("tuning_s")), str(row.get("winner")),
                      "[green]ok[/green]" if recheck.get("passed") else "[red]WRONG[/red]")
    return table


def bucket_table(candidate: str, entry: dict[str, Any]) -> Table:
    table = Table(title=f"{candidate} over {entry['baseline']}: speedup distribution by size bucket "
                        f"(tuning {duration(entry['tuning_s_total'])} in all)", title_justify="left")
    for name in ("bucket", "shapes", "median", "p25", "p75", "min", "max"):
        table.add_column(name, justify="left" if name == "bucket" else "right")
    for name, dist in [*entry["buckets"].items(), ("all", entry["overall"])]:
        if not dist["n"]:
            table.add_row(name, "0", "-", "-", "-", "-", "-")
            continue
        table.add_row(name, str(dist["n"]), *(_ratio(dist[k]) for k in ("median", "p25", "p75", "min", "max")))
    return table


def render_speedups(speedups: dict[str, Any]) -> RenderableType:
    """Per candidate backend: its per-shape table, then its bucket summary."""
    parts: list[RenderableType] = []
    for candidate, entry in speedups.items():
        parts += [shape_speedup_table(candidate, entry), bucket_table(candidate, entry)]
    return Group(*parts)
