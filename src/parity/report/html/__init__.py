"""The self-contained HTML report: charts per family, every figure as a table, the provenance,
trace timelines and what-if sensitivity, and a comparison with its fairness audit.

    from parity.report.html import render, write_report
    html_text = render(runs=[(run, cases)], traces=[load_trace_input("rank0.json.gz")],
                       comparison=compare_dict)
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import Any

from parity.model.errors import ParityError
from parity.model.ids import file_in
from parity.model.result import CaseResult, RunRecord
from parity.report.html.bundle import chart_library_js, chart_svg
from parity.report.html.document import report_data
from parity.report.html.page import SCREEN_ROWS, render_page
from parity.report.html.trace_charts import TraceInput, load_trace_input

__all__ = ["TraceInput", "export_svgs", "load_trace_input", "render", "render_data", "report_data", "write_report"]


def render_data(data: dict[str, Any], *, screen_rows: int = SCREEN_ROWS) -> str:
    """The HTML document of a report dict, with the chart library inlined once; a table longer
    than ``screen_rows`` rows scrolls in its own box on screen (0: none does; print: never)."""
    return render_page(data, library_js=chart_library_js(), screen_rows=screen_rows)


def render(*, runs: Sequence[tuple[RunRecord, list[CaseResult]]] = (), traces: Sequence[TraceInput] = (),
           comparison: dict[str, Any] | None = None, fleets: Sequence[Any] = (), title: str = "parity report") -> str:
    """The HTML report of stored runs, analysed traces, fleet folders and a comparison dict."""
    return render_data(report_data(runs=list(runs), traces=list(traces), comparison=comparison, fleets=list(fleets),
                                   title=title))


def write_report(path: str | Path, html_text: str) -> Path:
    """Write the document atomically (a reader never sees half a report)."""
    target = Path(path)
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        tmp = target.with_name(target.name + ".tmp")
        tmp.write_text(html_text, encoding="utf-8")
        tmp.replace(target)
    except OSError as exc:
        raise ParityError(f"cannot write the report to {target}: {exc.strerror}; choose another -o PATH") from exc
    return target


def export_svgs(data: dict[str, Any], directory: str | Path) -> list[Path]:
    """Each drawn chart as ``DIRECTORY/<chart id>.svg`` (static, no browser)."""
    out = Path(directory)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise ParityError(f"--svg-dir {out}: {exc.strerror}; choose a writable folder") from exc
    written = []
    for chart in data["charts"]:
        if chart["draw"]:
            try:
                path = file_in(out, str(chart["id"]), ".svg")
            except ValueError as exc:
                raise ParityError(f"--svg-dir {out}: chart {exc}") from None
            path.write_text(chart_svg(chart["spec"]), encoding="utf-8")
            written.append(path)
    return written
