"""How ``parity decode offline --engine`` is drawn in the terminal: the engine's sweep labelled
"offline, engine", its targets, and the step model of the same config beside it, batch by batch.
Never measures, never prints; values arrive in SI units."""

from __future__ import annotations

from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text


def _ms(value: float | None) -> str:
    return "-" if value is None else f"{value * 1e3:.3g}"


def _rate(value: float | None) -> str:
    return "-" if value is None else (f"{value:,.0f}" if value >= 100 else f"{value:.3g}")


def render_engine(summary: dict[str, Any], *, step_model: dict[str, Any] | None = None) -> RenderableType:
    """The engine sweep (one row per batch), the targets, then the step model beside it."""
    s = summary
    on_front = {f["batch"] for f in s["pareto"]}
    head = Text(f"offline, engine: {s['engine']} {s['engine_version']}, model {s['model']}, {s['input_tokens']} "
                f"tokens in, {s['cards']} card(s)\nTPOT = {s['tpot_statistic']} ({s['short_tokens']} and "
                f"{s['output_tokens']} output tokens); excludes {s['excludes']}; never compared with online numbers")
    table = Table(title="batch sweep (engine)", title_justify="left")
    for column in ("batch", "step (ms)", "TPOT (ms)", "tok/s per card", "tok/s per user", "whole call out tok/s",
                   "front", "check"):
        table.add_column(column, justify="right")
    for p in s["points"]:
        table.add_row(str(p["batch"]), _ms(p["step_s"]), _ms(p["tpot_s"]), _rate(p["tokens_per_s_per_card"]),
                      _rate(1 / p["tpot_s"] if p["tpot_s"] else None), _rate(p["call_output_tok_s"]),
                      "*" if p["batch"] in on_front else "", "ok" if p["ok"] else "FAILED")
    targets = Table(title="throughput at TPOT targets (tok/s per card, engine)", title_justify="left")
    for column in ("TPOT target (ms)", "tok/s per card", "status", "reason"):
        targets.add_column(column, justify="left" if column == "reason" else "right")
    for t in s["at_target"]:
        targets.add_row(f"{t['tpot_target_s'] * 1e3:g}", "not reached" if t["value"] is None else _rate(t["value"]),
                        t["status"], t["reason"])
    parts: list[RenderableType] = [head, table, targets]
    if s.get("engine_args"):
        parts.append(_engine_args(s["engine_args"]))
    if step_model is not None:
        parts.append(_beside(s, step_model))
    parts.append(Text("whole call out tok/s = batch x output tokens / median time of one generate of fresh prompts "
                      "(prefill included): vllm bench throughput's output tokens/s; tok/s per card = batch / decode "
                      "step; * = on the Pareto front"))
    parts.append(Text(f"FAILED: batches {', '.join(map(str, s['failed']))}" if s["failed"]
                      else "OK: every batch returned the forced length"))
    return Group(*parts)


def _engine_args(args: dict[str, Any]) -> Text:
    """The engine's arguments: those asked (beyond the model) and what the engine resolved."""
    asked = {k: v for k, v in (args.get("asked") or {}).items() if k != "model"}
    line = ", ".join(f"{k}={v}" for k, v in asked.items())
    resolved = ", ".join(f"{k}={v}" for k, v in (args.get("resolved") or {}).items())
    return Text(f"engine arguments asked: {line or '-'}\nresolved by the engine: {resolved or '-'}")


def _beside(engine: dict[str, Any], step_model: dict[str, Any]) -> Table:
    """Engine TPOT and the step model's, per batch, with their ratio (engine / step model)."""
    model = {p["batch"]: p for p in step_model.get("points") or ()}
    table = Table(title=f"beside parity's step model of the same config (run {step_model.get('run_id', '?')}, "
                        f"context {step_model.get('context')}, {step_model.get('tpot_statistic')})",
                  title_justify="left")
    for column in ("batch", "engine TPOT (ms)", "step model TPOT (ms)", "engine / step model"):
        table.add_column(column, justify="right")
    for p in engine["points"]:
        other = model.get(p["batch"])
        ratio = p["tpot_s"] / other["tpot_s"] if other and p["tpot_s"] and other.get("tpot_s") else None
        table.add_row(str(p["batch"]), _ms(p["tpot_s"]), _ms(other["tpot_s"] if other else None),
                      "-" if ratio is None else f"{ratio:.2f}")
    return table
