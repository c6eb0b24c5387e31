"""A run's summary for the terminal: one row per suite, the cases that failed, the figures that
cannot be true, and the verdict: OK, DOUBTFUL (figures that cannot be trusted) or FAILED.

Takes plain records (``RunRecord`` and ``CaseResult``) and returns rich renderables; it never
measures and never prints, the caller chooses the console.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass
from typing import Any

from rich.console import Group, RenderableType
from rich.table import Table
from rich.text import Text

from parity.model.findings import INVALID, Severity
from parity.model.result import CaseResult, RunRecord

MAX_FAILED_SHOWN = 10
MAX_HEADLINE_FIGURES = 4

# Key suffix -> (unit, scale ladder) for humans; values inside parity are SI.
_SI_PREFIXES = ((1e12, "T"), (1e9, "G"), (1e6, "M"), (1e3, "k"), (1.0, ""))
_TIME_UNITS = ((1.0, "s"), (1e-3, "ms"), (1e-6, "us"), (1e-9, "ns"))


@dataclass(frozen=True, kw_only=True)
class SuiteRow:
    """One suite's line in the summary table."""

    suite: str
    cases: int
    passed: int
    failed: int
    errors: int
    warnings: int
    headline: str
    ok: bool


# Keys whose unit is already scaled (the unit is in the name): suffix -> unit shown.
_NAMED_UNITS = (
    ("gbps", "GB/s"),
    ("tflops", "TFLOP/s"),
    ("gflops", "GFLOP/s"),
    ("_ns", "ns"),
    ("_us", "us"),
    ("_ms", "ms"),
    ("_pct", "%"),
)
_SI_UNITS = (
    ("_flop_per_s", "FLOP/s"),
    ("_flops", "FLOP/s"),
    ("_bytes_per_s", "B/s"),
    ("_bps", "B/s"),
    ("_bytes", "B"),
    ("_flop", "FLOP"),
)


def format_value(key: str, value: Any) -> str:
    """A figure for humans, scaled by the unit its key names: SI keys (``_s``, ``_bytes``,
    ``_flops``, ``_bps``) get a prefix, pre-scaled keys (``gbps``, ``tflops``, ``_ns``) their
    unit, ``_fraction`` a percentage; other numbers get 4 significant digits."""
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return str(value)
    if value != value:
        return "nan"
    if key.endswith("_fraction"):
        return f"{value:.1%}"
    if key.endswith("_s") and not key.endswith("_per_s"):
        return _scaled(value, _TIME_UNITS)
    for suffix, unit in _SI_UNITS:
        if key.endswith(suffix):
            return _si(value, unit)
    for suffix, unit in _NAMED_UNITS:
        if key.endswith(suffix):
            return f"{value:.4g} {unit}"
    return f"{value:.4g}"


def _scaled(value: float, ladder: tuple[tuple[float, str], ...]) -> str:
    for scale, unit in ladder:
        if abs(value) >= scale:
            return f"{value / scale:.4g} {unit}"
    scale, unit = ladder[-1]
    return f"{value / scale:.4g} {unit}"


def _si(value: float, unit: str) -> str:
    for scale, prefix in _SI_PREFIXES:
        if abs(value) >= scale:
            return f"{value / scale:.4g} {prefix}{unit}"
    return f"{value:.4g} {unit}"


def headline(summary: dict[str, Any], *, limit: int = MAX_HEADLINE_FIGURES) -> str:
    """A suite's key figures as ``name value`` pairs.

    A suite chooses them by putting a ``headline`` dict in its summary (``{"best_tflops": ...}``);
    otherwise the first numeric figures found at most two levels deep are shown, named by their
    path (``ceiling.gbps``). Lists (curves, tables) are never flattened into the headline.
    """
    chosen = summary.get("headline")
    figures = list(chosen.items()) if isinstance(chosen, dict) else _numeric_leaves(summary)
    return "; ".join(f"{key} {format_value(key, value)}" for key, value in figures[:limit])


def _numeric_leaves(
    data: dict[str, Any], prefix: str = "", depth: int = 0
) -> list[tuple[str, Any]]:
    found: list[tuple[str, Any]] = []
    for key, value in data.items():
        name = f"{prefix}{key}"
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            found.append((name, value))
        elif isinstance(value, dict) and depth < 1:
            found.extend(_numeric_leaves(value, f"{name}.", depth + 1))
    return found


def figure_headline(figures: list[dict[str, Any]], *, suite: str, limit: int = MAX_HEADLINE_FIGURES) -> str:
    """A suite's first figures that have a value, ``name value unit`` in humans' units; the
    suite's own prefix (``gemm.``) is dropped from each name, and a name the suite gives to
    several figures (one per case, shape or dtype) carries what tells them apart
    (:func:`scope_tags`): ``exchange_slowdown [dispatch+gemm] 1.07``."""
    from parity.model.figure import Figure, format_value as format_figure

    valued = [f for f in (Figure.from_dict(data) for data in figures) if f.value is not None]
    tags = scope_tags(valued)
    shown = []
    for figure, tag in zip(valued, tags, strict=True):
        name = figure.name.removeprefix(f"{suite}.") + (f" [{tag}]" if tag else "")
        mark = " (invalid)" if any(f.code == INVALID for f in figure.findings) else ""
        shown.append(f"{name} {format_figure(figure.value, figure.unit)}{mark}")
    return "; ".join(shown[:limit])


def scope_tags(figures: list[Any]) -> list[str]:
    """Per figure, what tells it apart from the figures sharing its name: its case where the
    cases differ (``dispatch+gemm``, ``low-latency/fp8/dispatch``), else the values of its scope
    that differ among them (``128x256x512``), joined by ``, ``; "" for a name given once."""
    by_name: dict[str, list[dict[str, Any]]] = {}
    for figure in figures:
        by_name.setdefault(figure.name, []).append(figure.scope or {})
    tags = []
    for figure in figures:
        scopes, scope = by_name[figure.name], figure.scope or {}
        if len(scopes) == 1:
            tags.append("")
            continue
        cases = [repr(s.get("case")) for s in scopes]
        if "case" in scope and len(set(cases)) == len(cases):
            tags.append(str(scope["case"]))
            continue
        differing = [k for k in sorted({k for s in scopes for k in s}) if len({repr(s.get(k)) for s in scopes}) > 1]
        tags.append(", ".join(str(scope.get(k)) for k in differing))
    return tags


def _suite_headline(name: str, entry: dict[str, Any]) -> str:
    """The headline of one stored suite entry: its figures, or (runs stored before figures
    existed) its summary's own headline."""
    if entry.get("summary_error"):
        return f"summary failed: {entry['summary_error']}"
    if entry.get("figures"):
        return figure_headline(entry["figures"], suite=name)
    return headline(entry.get("summary", {}))


def suite_rows(run: RunRecord, cases: list[CaseResult]) -> list[SuiteRow]:
    """Per-suite counts from the cases, with the headline of the run's stored summary."""
    stored = run.summary.get("suites", {}) if isinstance(run.summary, dict) else {}
    order = list(run.config.get("suites", [])) or []
    order += [c.suite for c in cases if c.suite not in order]
    rows = []
    for name in dict.fromkeys(order):
        mine = [c for c in cases if c.suite == name]
        entry = stored.get(name, {})
        summary_error = entry.get("summary_error")
        failed = sum(not c.ok for c in mine)
        rows.append(
            SuiteRow(
                suite=name,
                cases=len(mine),
                passed=len(mine) - failed,
                failed=failed,
                errors=sum(c.error is not None for c in mine),
                warnings=sum(f.severity is Severity.WARNING for c in mine for f in c.findings),
                headline=_suite_headline(name, entry),
                ok=failed == 0 and not summary_error,
            )
        )
    return rows


def run_ok(run: RunRecord, cases: list[CaseResult]) -> bool:
    """The run's verdict: its stored one when finished, else whether every case is ok."""
    if run.status in ("complete", "failed") and "ok" in run.summary:
        return bool(run.summary["ok"])
    return run.status != "failed" and all(c.ok for c in cases)


def failure_reason(case: CaseResult) -> str:
    """Why a case is not ok: its error, its failed check, or its error findings."""
    if case.error:
        return case.error
    if case.check and not case.check.get("passed", False):
        detail = {k: v for k, v in case.check.items() if k != "passed"}
        return "check failed" + (f": {detail}" if detail else "")
    codes = [f"{f.code}: {f.message}" for f in case.findings if f.severity is Severity.ERROR]
    return "; ".join(codes) or "not ok"


def left_out_suites(run: RunRecord) -> dict[str, str]:
    """The suites ``parity run`` left out of ``run`` (too few ranks), name -> why; {} when none."""
    left_out = run.config.get("left_out")
    return {str(k): str(v) for k, v in left_out.items()} if isinstance(left_out, dict) else {}


def render_run_summary(run: RunRecord, cases: list[CaseResult]) -> RenderableType:
    """The summary table, the failed cases (up to 10) and the verdict line."""
    device = run.config.get("device", "?")
    title = f"run {run.run_id} on {device} ({run.status})"
    table = Table(title=title, title_justify="left", show_lines=False)
    for column, justify in (
        ("suite", "left"),
        ("cases", "right"),
        ("ok", "right"),
        ("failed", "right"),
        ("errors", "right"),
        ("warnings", "right"),
        ("headline", "left"),
    ):
        table.add_column(column, justify=justify)  # type: ignore[arg-type]
    for row in suite_rows(run, cases):
        style = None if row.ok else "red"
        table.add_row(
            Text(row.suite),
            str(row.cases),
            str(row.passed),
            str(row.failed),
            str(row.errors),
            str(row.warnings),
            Text(row.headline),  # plain text: a tag such as "[dispatch+gemm]" is not markup
            style=style,
        )
    parts: list[RenderableType] = [table]
    if left_out := left_out_suites(run):
        parts.append(Text("\n".join(f"left out: {name}: {why}" for name, why in left_out.items()), style="yellow"))
    failed = [c for c in cases if not c.ok]
    if failed:
        lines = Text()
        for case in failed[:MAX_FAILED_SHOWN]:
            lines.append(f"  {case.suite}/{case.key}: {failure_reason(case)}\n", style="red")
        if len(failed) > MAX_FAILED_SHOWN:
            lines.append(
                f"  ... and {len(failed) - MAX_FAILED_SHOWN} more "
                f"(parity runs show {run.run_id} --json -)\n"
            )
        lines.rstrip()
        parts.append(lines)
    codes = Counter(f.code for c in cases for f in c.findings if f.severity is Severity.WARNING)
    if codes:
        parts.append(
            Text(
                "warnings: " + ", ".join(f"{code} x{n}" for code, n in codes.most_common()),
                style="yellow",
            )
        )
    invalid = invalid_lines(run)
    if invalid:
        parts.append(Text("\n".join(invalid[:MAX_FAILED_SHOWN]), style="magenta"))
    parts.append(verdict_text(run, cases))
    return Group(*parts)


def invalid_lines(run: RunRecord) -> list[str]:
    """One line per ``invalid`` finding of a stored figure: ``invalid: suite figure [case]: why``."""
    stored = run.summary.get("suites", {}) if isinstance(run.summary, dict) else {}
    lines = []
    for suite, entry in stored.items():
        for data in entry.get("figures") or []:
            case = (data.get("scope") or {}).get("case")
            where = f"{data.get('name')}" + (f" [{case}]" if case is not None else "")
            for finding in data.get("findings") or []:
                if finding.get("code") == INVALID:
                    lines.append(f"invalid: {suite} {where}: {finding.get('message')}")
    return lines


def doubtful_counts(run: RunRecord) -> tuple[int, dict[str, int]]:
    """The run's figures that cannot be trusted and their reasons, as the runner stored them
    (``summary["doubtful"]``; summed over the suites for a run stored without the total)."""
    summary = run.summary if isinstance(run.summary, dict) else {}
    entries = [summary["doubtful"]] if isinstance(summary.get("doubtful"), dict) else \
        [e.get("doubtful") for e in (summary.get("suites") or {}).values() if isinstance(e.get("doubtful"), dict)]
    total, by_reason = 0, Counter[str]()
    for entry in entries:
        total += int(entry.get("figures") or 0)
        by_reason.update({str(k): int(v) for k, v in (entry.get("by_reason") or {}).items()})
    return total, dict(by_reason)


def doubtful_line(total: int, by_reason: dict[str, int]) -> str:
    """``DOUBTFUL: 3 figures cannot be trusted: contended 2, invalid 1``."""
    reasons = ", ".join(f"{code} {n}" for code, n in sorted(by_reason.items(), key=lambda kv: (-kv[1], kv[0])))
    noun = "figure" if total == 1 else "figures"
    return f"DOUBTFUL: {total} {noun} cannot be trusted: {reasons}"


def verdict_text(run: RunRecord, cases: list[CaseResult]) -> Text:
    """``OK``, ``DOUBTFUL: ...`` (no case failed, but some figures are ``invalid`` or
    ``contended``), ``FAILED`` or ``INCOMPLETE`` (a run still marked running) with counts."""
    bad = sum(not c.ok for c in cases)
    counts = f"{len(cases)} cases, {bad} not ok"
    stored = run.summary.get("suites", {}) if isinstance(run.summary, dict) else {}
    broken = [name for name, entry in stored.items() if entry.get("summary_error")]
    if broken:
        counts += f", summary failed: {', '.join(broken)}"
    if run.status == "running":
        return Text(
            f"INCOMPLETE ({counts}); continue with parity run --resume {run.run_id}",
            style="bold yellow",
        )
    total, by_reason = doubtful_counts(run)
    if not run_ok(run, cases):
        if total:
            counts += f"; {doubtful_line(total, by_reason).removeprefix('DOUBTFUL: ')}"
        return Text(f"FAILED ({counts})", style="bold red")
    if total:
        return Text(f"{doubtful_line(total, by_reason)} ({counts})", style="bold magenta")
    return Text(f"OK ({counts})", style="bold green")
