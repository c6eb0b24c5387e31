"""Terminal tables for offline decode: the batch sweep, its Pareto front, throughput at targets.

Takes the ``decode`` suite's summary (``parity.families.decode.summary``), returns rich
renderables; it never measures and never prints. Every table says it is offline, the TPOT
statistic, the card count, the layer scaling and what the numbers exclude.
"""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.report.units import format_bytes


def _layers(summary: dict[str, Any]) -> str:
    run, total = summary.get("layers_run") or {}, summary.get("layers_total") or {}
    return ", ".join(f"{kind} {run[kind]} of {total.get(kind)}" for kind in run)


def _number(value: float | None, digits: str = ".3g") -> str:
    return "-" if value is None else format(value, digits)


def _throughput(value: float | None) -> str:
    return "-" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.3g}")


def render_decode(summary: dict[str, Any]) -> RenderableType:
    """The header with the method, one row per batch, the front, and one row per TPOT target."""
    on_front = {p["batch"] for p in summary.get("pareto", [])}
    head = Text(
        f"offline engine step, {summary.get('config')} ({summary.get('dtype')}), context {summary.get('context')}, "
        f"{summary.get('cards')} card(s), accepted tokens per step {summary.get('accepted_tokens_per_step')}\n"
        f"TPOT = {summary.get('tpot_statistic')} / accepted tokens; excludes {summary.get('excludes')}; "
        f"never compared with online numbers\n"
        f"layers run: {_layers(summary)}; {summary.get('scaling')}")
    table = Table(title="batch sweep", title_justify="left")
    for column in ("batch", "step (ms)", "TPOT (ms)", "tok/s per card", "tok/s per user", "memory", "FLOP/B",
                   "front", "check"):
        table.add_column(column, justify="right")
    for p in summary.get("points", []):
        ai = (p["flop_per_step"] / p["bytes_per_step"]) if p.get("bytes_per_step") else None
        table.add_row(str(p["batch"]), _number(p["step_ms"]), _number(p["tpot_ms"]),
                      _throughput(p["tokens_per_s_per_card"]), _throughput(1e3 / p["tpot_ms"]),
                      format_bytes(p["memory_bytes"]), _number(ai), "*" if p["batch"] in on_front else "",
                      "ok" if p["ok"] else "FAILED")
    targets = Table(title="throughput at TPOT targets (tok/s per card)", title_justify="left")
    for column in ("TPOT target (ms)", "tok/s per card", "status", "reason"):
        targets.add_column(column, justify="right" if column != "reason" else "left")
    for entry in summary.get("at_target", []):
        value = entry["value"]
        targets.add_row(f"{entry['tpot_ms']:g}", _throughput(value) if isinstance(value, float) else str(value),
                        entry["status"], entry.get("reason", ""))
    parts: list[RenderableType] = [head, table, targets]
    for finding in summary.get("findings") or []:
        parts.append(Text(f"{finding['severity']}: {finding['message']}; {finding['hint']}"))
    failed = summary.get("failed") or []
    parts.append(Text(f"FAILED: {', '.join(failed)} (not on the front)" if failed else "OK: every case checked"))
    parts.append(Text("tok/s per user = 1000 / TPOT_ms (InferenceX's interactivity); * = on the Pareto front"))
    return Group(*parts)
