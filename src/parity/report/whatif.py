"""Terminal tables for a what-if prediction: every method side by side, assumptions, sensitivity.

Takes a :class:`parity.trace.whatif.Prediction` (or its sensitivity) and returns rich
renderables; it computes no figure and never prints.
"""

from __future__ import annotations

import math

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.metrics.validity import REPLAY_WAITS_ELSEWHERE
from parity.model.figure import told_apart
from parity.model.findings import Finding, Severity
from parity.trace.whatif.prediction import Prediction
from parity.trace.whatif.sensitivity import Sensitivity


def format_ms(ns: float) -> str:
    """Nanoseconds as milliseconds for humans: ``12.345 ms``."""
    return f"{ns / 1e6:,.3f} ms"


def format_k(k: float) -> str:
    return "inf" if math.isinf(k) else f"{k:g}"


def summary_line(prediction: Prediction) -> Text:
    """``matrix=2: first order 1.320x, bounds [1.050x, 1.410x], replay 1.210x``, with more
    decimals where 3 would print different speedups alike (``told_apart``)."""
    fo, bd, rp = prediction.first_order, prediction.bounds, prediction.replay
    present = [v for v in (fo and fo.speedup, bd and bd.low, bd and bd.high, rp and rp.speedup) if v]
    text = dict(zip(present, told_apart(*present)))
    parts = []
    if fo:
        parts.append(f"first order {text[fo.speedup]}x")
    if bd:
        parts.append(f"bounds [{text[bd.low]}x, {text[bd.high]}x]")
    if rp:
        mark = (" (invalid: outside its bounds)" if _replay_invalid(prediction)
                else " (between 1 and its bounds: ops wait for work elsewhere)" if _replay_waits(prediction) else "")
        parts.append(f"replay {text[rp.speedup]}x{mark}")
    elif prediction.replay_error:
        parts.append("replay not available")
    scales = ", ".join(s.label for s in prediction.scales)
    return Text(f"{scales}: " + ", ".join(parts), style="bold")


def _replay_invalid(prediction: Prediction) -> bool:
    return any(f.severity is Severity.INVALID and "replay" in f.message for f in prediction.findings)


def _replay_waits(prediction: Prediction) -> bool:
    return any(f.code == REPLAY_WAITS_ELSEWHERE for f in prediction.findings)


def finding_line(finding: Finding, *, hint: bool = True) -> Text:
    """``invalid: message (hint)`` in the finding's colour (the hint of an ``invalid`` one only,
    and only with ``hint``); plain text, never markup."""
    style = {Severity.INVALID: "bold magenta", Severity.ERROR: "red", Severity.WARNING: "yellow"}.get(
        finding.severity, "dim")
    hint_text = f" ({finding.hint})" if hint and finding.hint and finding.severity is Severity.INVALID else ""
    return Text(f"{finding.severity.value}: {finding.message}{hint_text}", style=style)


def methods_table(prediction: Prediction) -> Table:
    """Measured step and each method's predicted step and speedup."""
    table = Table(title="what-if: predicted step", title_justify="left")
    table.add_column("method")
    table.add_column("step", justify="right")
    table.add_column("speedup", justify="right")
    table.add_column("how")
    step = prediction.window.length_ns / prediction.window.n_steps
    fo, bd, rp = prediction.first_order, prediction.bounds, prediction.replay
    present = [1.0] + [v for v in (fo and fo.speedup, bd and bd.low, bd and bd.high, rp and rp.speedup) if v]
    text = dict(zip(present, told_apart(*present)))  # 1.00025x is not printed as the measured 1.000x
    table.add_row("measured", format_ms(step), f"{text[1.0]}x", prediction.window.source)
    if fo:
        table.add_row("first order", format_ms(fo.new_step_ns), f"{text[fo.speedup]}x",
                      f"T_c on {fo.critical_lane}")
    if bd:
        table.add_row("bound (low)", format_ms(step / bd.low), f"{text[bd.low]}x",
                      "only exposed scaled time saves")
        table.add_row("bound (high)", format_ms(step / bd.high), f"{text[bd.high]}x",
                      "all scaled time saves")
    if rp:
        how = f"dependency graph; k=1 off by {rp.reproduction_error:.2%}"
        if _replay_invalid(prediction):
            how += "; INVALID: outside the bounds"
        elif _replay_waits(prediction):
            how += "; between 1 and the bounds: ops wait for work elsewhere"
        table.add_row("replay", format_ms(rp.new_step_ns), f"{text[rp.speedup]}x", how,
                      style="magenta" if _replay_invalid(prediction) else None)
    elif prediction.replay_error:
        table.add_row("replay", "-", "-", prediction.replay_error)
    return table


MARKS = {"invalid": "!", "waits_elsewhere": "~", "first_order_outside": "*"}  # a point's flag in the table


def sensitivity_table(sens: Sensitivity) -> Table:
    """Speedup against k: one row per (category, method), one column per k; a replayed speedup
    outside its bounds ends in ``!`` (``~`` where ops waiting for work elsewhere explain it), a
    first order outside them in ``*`` (their findings are printed below the table)."""
    table = Table(title="sensitivity: speedup when one category runs k times faster",
                  title_justify="left")
    table.add_column("category")
    table.add_column("method")
    for k in sens.factors:
        table.add_column(f"k={format_k(k)}", justify="right")
    methods = (("first_order", "first order"), ("low", "bound low"), ("high", "bound high"),
               ("replay", "replay"))
    for c in sens.categories:
        for key, label in methods:
            values = sens.series(c, key)
            if all(v is None for v in values):
                continue
            flags = {"replay": ("invalid", "waits_elsewhere"), "first_order": ("first_order_outside",)}.get(key, ())
            marks = [next((MARKS[f] for f in flags if r.get(f)), "") for r in sens.rows if r["category"] == c]
            shown = dict(zip([1.0, *(v for v in values if v is not None)],
                             told_apart(1.0, *(v for v in values if v is not None))))  # a value not 1 never reads 1.000
            cells = ["-" if v is None else f"{shown[v]}x{mark}" for v, mark in zip(values, marks)]
            table.add_row(c if key == "first_order" else "", label, *cells,
                          end_section=key == "replay")
    return table


def render_prediction(prediction: Prediction) -> RenderableType:
    """Everything a user needs to judge the prediction, in reading order."""
    parts: list[RenderableType] = [summary_line(prediction), methods_table(prediction)]
    parts.append(Text("assumptions:", style="bold"))
    parts.extend(Text(f"  - {line}") for line in prediction.assumptions)  # Text: no markup
    parts.extend(finding_line(f) for f in prediction.findings)
    if prediction.sensitivity and prediction.sensitivity.categories:
        parts.append(sensitivity_table(prediction.sensitivity))
        parts.extend(finding_line(f, hint=False) for f in prediction.sensitivity.findings)
    return Group(*parts)
