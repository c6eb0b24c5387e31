"""The table of a serving sweep: one row per level, figures in milliseconds and tokens/s as
vLLM prints them, the client's own load, and the level's finding codes (never measures)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich import box
from rich.table import Table

COLUMNS = (
    ("level", None), ("done", "completed"), ("TTFT p50", "median_ttft_ms"), ("TPOT p50", "median_tpot_ms"),
    ("TPOT p99", "p99_tpot_ms"), ("ITL p50", "median_itl_ms"), ("E2E p50", "median_e2el_ms"),
    ("tok/s", "output_throughput"), ("/card", "output_throughput_per_card"), ("req/s", "request_throughput"),
    ("goodput", "request_goodput"), ("client", None), ("findings", None),
)


def _number(value: Any) -> str:
    if value is None:
        return "-"
    if isinstance(value, float):
        return f"{value:.4g}" if abs(value) < 1e4 else f"{value:,.0f}"
    return str(value)


def _level_name(row: dict[str, Any]) -> str:
    limit = row.get("max_concurrency")
    rate = row.get("request_rate")
    parts = [f"c={limit}" if limit is not None else "c=unbounded"]
    if rate not in (None, "inf"):
        parts.append(f"{rate:g} req/s")
    return " ".join(parts)


def serving_table(rows: Sequence[dict[str, Any]], *, title: str) -> Table:
    """One row per level (its vLLM-named fields, ``client`` and ``findings`` codes)."""
    table = Table(title=title, title_justify="left", box=box.SIMPLE_HEAD,
                  caption="times in ms; tok/s: output tokens per second (/card: per card); goodput in req/s; "
                          "client: busiest client process's busy share x processes", caption_justify="left")
    for header, _ in COLUMNS:
        table.add_column(header, justify="left" if header in ("level", "findings") else "right")
    for row in rows:
        client = row.get("client") or {}
        cells = []
        for header, key in COLUMNS:
            if header == "level":
                cells.append(_level_name(row))
            elif header == "client":
                cells.append(f"{client.get('busy_fraction_max', 0):.0%} x{client.get('procs', 1)}")
            elif header == "findings":
                cells.append(",".join(row.get("findings", [])) or "-")
            else:
                cells.append(_number(row.get(key)))
        table.add_row(*cells, style="red" if row.get("failed") else None)
    return table
