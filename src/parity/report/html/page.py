"""The report page: one self-contained HTML file (styles, the chart library, the data block and
the drawing script inline; no request of any kind), with every table rendered on the server so
the report reads without scripts.

Text from runs and traces is data: table cells are HTML-escaped, and the JSON block escapes
``<``, ``>`` and ``&`` so that no value (``</script>`` in a kernel name) can end it.
"""

from __future__ import annotations

import html
import re
from importlib import resources
from typing import Any

import orjson

from parity.model.figure import UNITS, told_apart
from parity.model.schema import json_default
from parity.report.html.chart import INTENSITY, NUMBER, RATIO, TEXT

# Human scales per SI unit for a whole column: (threshold, suffix, scale), the largest first.
COLUMN_SCALES: dict[str, tuple[tuple[float, str, float], ...]] = {
    "s": ((1.0, "s", 1.0), (1e-3, "ms", 1e-3), (1e-6, "us", 1e-6), (0.0, "ns", 1e-9)),
    "B": ((2**30, "GiB", 2**30), (2**20, "MiB", 2**20), (2**10, "KiB", 2**10), (0.0, "B", 1.0)),
    "FLOP/s": ((1e12, "TFLOP/s", 1e12), (0.0, "GFLOP/s", 1e9)),
    "B/s": ((0.0, "GB/s", 1e9),),
    "1": ((0.0, "%", 0.01),),
}
SCREEN_ROWS = 400  # a longer table scrolls in its own box on screen (never in print); 0: never
# A text longer than this (a C++ kernel's template arguments: up to 5,000 characters) shows its
# first 4 lines on screen; shorter text (a method, a scope: under 300) is shown whole
CLAMP_CHARS = 400
WIDE_TABLE_COLUMNS = 7  # a chart with a wider table shows it below the chart, not beside it
PLAIN_UNITS = {NUMBER: "", INTENSITY: "FLOP/B", RATIO: "x", "count": "", "tok/s": "tok/s"}
# Where a long name may wrap in a narrow column: after a dot (not a decimal point), underscore or
# slash between word characters (gemm.bandwidth_ceiling, copy/1024/warm); the page breaks
# elsewhere (report.css: overflow-wrap anywhere) only as a last resort.
_NAME_BREAK = re.compile(r"(?<=\w)([_/]|\.(?=[^\W\d]))(?=\w)")  # a number's decimal point stays whole


def significant(value: float) -> str:
    """A number with 4 significant digits, thousands grouped past 10,000 (``12,345``)."""
    if abs(value) >= 1e4:
        return f"{value:,.0f}"
    return f"{value:.4g}"


def ratio_text(value: float) -> str:
    """A ratio (a speedup) with 4 significant digits, or as many decimals as tell it from 1 when
    those would print it as 1: a replay of 1.00005x reads ``1.00005``, never ``1``."""
    shown = significant(value)
    if value != 1.0 and float(shown.replace(",", "")) == 1.0:
        return told_apart(1.0, value)[1]
    return shown


def column_scale(unit: str, values: list[Any]) -> tuple[str, float]:
    """The human suffix and scale for a column of ``unit``: chosen from its median magnitude,
    so one column reads in one unit (``us`` throughout, not ``ms`` here and ``ns`` there)."""
    if unit in PLAIN_UNITS:
        return PLAIN_UNITS[unit], 1.0
    numbers = sorted(abs(float(v)) for v in values if isinstance(v, (int, float)) and not isinstance(v, bool))
    typical = numbers[len(numbers) // 2] if numbers else 0.0
    human, factor = UNITS.get(unit, (unit, 1.0))
    for threshold, suffix, scale in COLUMN_SCALES.get(unit, ((0.0, human, factor),)):
        if typical >= threshold:
            return suffix, scale
    return unit, 1.0


def _cell(value: Any, scale: float | None, suffix: str = "", *, ratio: bool = False) -> str:
    if value is None or value == "":
        return '<td class="text"></td>'
    if scale is not None and isinstance(value, (int, float)) and not isinstance(value, bool):
        shown = (ratio_text(value / scale) if ratio else significant(value / scale)) + (f" {suffix}" if suffix else "")
        return f'<td class="num" data-scale="{scale!r}">{html.escape(shown)}</td>'
    text = str(value)
    if len(text) > CLAMP_CHARS:
        return f'<td class="text"><span class="clamp">{breakable(text)}</span></td>'
    return f'<td class="text">{breakable(text)}</td>'


def breakable(text: str) -> str:
    """``text`` escaped for HTML with a line-break opportunity (``<wbr>``, copied as nothing)
    after each dot, underscore or slash inside a name, so a table of long names fits its page."""
    return _NAME_BREAK.sub(r"\1<wbr>", html.escape(text))


def render_table(table: dict[str, Any], rows: list[dict[str, Any]], *, screen_rows: int = SCREEN_ROWS) -> str:
    """One table of a chart's dataset: a heading per column with its unit, a cell per value. The
    table is flat (every row on the page, in screenshots and in print) unless it has more than
    ``screen_rows`` rows (0: no limit): then on screen only it scrolls in a box of its own."""
    columns, blank = _columns_with_values(table["columns"], rows)
    head: list[str] = []
    scales: list[tuple[str, float | None] | None] = []  # None: each row has its own unit
    for col in columns:
        if col["unit_field"]:
            head.append(html.escape(col["title"]))
            scales.append(None)
        elif col["unit"] == TEXT:
            head.append(html.escape(col["title"]))
            scales.append(("", None))
        else:
            suffix, scale = column_scale(col["unit"], [r.get(col["field"]) for r in rows])
            head.append(html.escape(col["title"] + (f" ({suffix})" if suffix else "")))
            scales.append((suffix, scale))
    body = []
    for row in rows:
        cells = []
        for col, sc in zip(columns, scales):
            value = row.get(col["field"])
            if sc is None:  # one unit per row: its scale from this value alone
                human, scale = column_scale(row.get(col["unit_field"]) or "count", [value])
                cells.append(_cell(value, scale, human))
            else:
                cells.append(_cell(value, sc[1], ratio=col["unit"] == RATIO))
        body.append("<tr>" + "".join(cells) + "</tr>")
    fields = " ".join(html.escape(c["field"]) for c in columns)
    title = table["title"] + (f" (no value in any row: {', '.join(blank)})" if blank else "")
    caption = f"<caption>{html.escape(title.strip())}</caption>" if title else ""
    empty = "" if rows else f'<tr><td class="empty" colspan="{len(head)}">none</td></tr>'
    long = " long" if screen_rows and len(rows) > screen_rows else ""
    return (f'<div class="scroll{long}"><table data-dataset="{html.escape(table["dataset"])}" data-fields="{fields}">'
            f"{caption}<thead><tr>" + "".join(f"<th>{h}</th>" for h in head) + "</tr></thead><tbody>"
            + "".join(body) + empty + "</tbody></table></div>")


def _columns_with_values(columns: list[dict[str, Any]], rows: list[dict[str, Any]]) -> tuple[list, list[str]]:
    """The columns that hold a value in some row, and the titles of those left out (none when
    there is no row: an empty table keeps its headings). A column blank in every row (a speedup
    over torch in a run where torch is the only implementation) would only widen the table."""
    if not rows:
        return list(columns), []
    kept = [c for c in columns if any(r.get(c["field"]) not in (None, "") for r in rows)]
    return kept, [c["title"] for c in columns if c not in kept]


def render_findings(findings: list[dict[str, Any]]) -> str:
    """What the analysis said about a chart's figures: severity, message and hint, escaped."""
    items = []
    for f in findings:
        severity = str(f.get("severity") or "info")
        hint = f" ({f['hint']})" if f.get("hint") else ""
        items.append(f'<li class="finding {html.escape(severity)}" data-code="{html.escape(str(f.get("code", "")))}">'
                     f"<strong>{html.escape(severity)}</strong>: {html.escape(str(f.get('message', '')) + hint)}</li>")
    return f'<ul class="findings">{"".join(items)}</ul>' if items else ""


def render_chart(chart: dict[str, Any], *, screen_rows: int = SCREEN_ROWS) -> str:
    datasets = chart["spec"].get("datasets", {})
    tables = "".join(render_table(t, datasets.get(t["dataset"], []), screen_rows=screen_rows) for t in chart["tables"])
    vis = (f'<div class="vis" id="vis-{html.escape(chart["id"])}" data-rendered="false"></div>'
           if chart["draw"] else "")
    findings = render_findings(chart.get("findings") or [])
    shown = (_columns_with_values(t["columns"], datasets.get(t["dataset"], []))[0] for t in chart["tables"])
    wide = max((len(columns) for columns in shown), default=0) > WIDE_TABLE_COLUMNS
    return (f'<figure class="chart" id="chart-{html.escape(chart["id"])}" data-draw="{str(chart["draw"]).lower()}">'
            f"<h3>{html.escape(chart['title'])}</h3><div class=\"pair{' stacked' if wide else ''}\">{vis}"
            f"<div class=\"tables\">{findings}{tables}"
            f"</div></div><figcaption>{html.escape(chart['note'])}</figcaption></figure>")


def json_block(data: dict[str, Any]) -> str:
    """``data`` as JSON safe inside ``<script type="application/json">``: no ``<``, ``>`` or
    ``&`` is left raw, so ``</script>`` or ``<!--`` in any value cannot end or alter the block."""
    text = orjson.dumps(data, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
                        default=json_default).decode()
    return text.replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026")


def _inline_script(code: str) -> str:
    """Library code as an inline script: ``</script`` may only occur in its strings, regexes or
    comments, where ``<\\/script`` means the same."""
    return code.replace("</script", "<\\/script").replace("</SCRIPT", "<\\/SCRIPT")


def _asset(name: str) -> str:
    return resources.files("parity.report.html").joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def _header(data: dict[str, Any]) -> str:
    """Title, what the report holds (runs, runs compared, traces, fleets; a kind it does not hold
    is left out) and the sections' links."""
    runs = ", ".join(f"{r['label']} ({r['run_id']}, {r['status']}, {r['cases']} cases)" for r in data["runs"])
    compared = ", ".join(f"{r['label']} ({r.get('runs') or r['id']}" + (f"; {r['device']}" if r.get("device") and
                         r["device"] not in r["label"] else "") + ")" for r in data.get("compared") or [])
    traces = ", ".join(f"{t['path']} ({t['format']})" for t in data["traces"])
    fleets = ", ".join(f"{f['path']} ({f['ranks']} ranks)" for f in data.get("fleets") or [])
    held = [("compared", "runs compared", compared), ("", "runs", runs), ("", "traces", traces), ("", "fleets", fleets)]
    lines = "".join(f'<p class="{cls}">{name}: {html.escape(text)}</p>' for cls, name, text in held if text)
    nav = "".join(f'<a href="#sec-{html.escape(s["id"])}">{html.escape(s["title"])}</a>' for s in data["sections"])
    return (f"<header><h1>{html.escape(data['title'])}</h1>"
            f"<p>generated {html.escape(data['generated_at'])}</p>" + (lines or "<p>nothing to report</p>")
            + f"<nav>{nav}</nav>"
            "<noscript><p>Charts need JavaScript; every number is in the tables.</p></noscript></header>")


def render_page(data: dict[str, Any], *, library_js: str, screen_rows: int = SCREEN_ROWS) -> str:
    """The whole HTML document for a report dict (``document.report_data``); ``screen_rows``: see
    :func:`render_table`."""
    by_id = {c["id"]: c for c in data["charts"]}
    sections = []
    for s in data["sections"]:
        lines = "".join(f'<li class="{"forced" if "forced" in line else ""}">{html.escape(line)}</li>'
                        for line in s["lines"])
        sections.append(f'<section id="sec-{html.escape(s["id"])}"><h2>{html.escape(s["title"])}</h2>'
                        + (f'<ul class="lines">{lines}</ul>' if lines else "")
                        + "".join(render_chart(by_id[cid], screen_rows=screen_rows) for cid in s["charts"]) + "</section>")
    return ("<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
            "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">"
            "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
            "script-src 'unsafe-inline' 'unsafe-eval'; style-src 'unsafe-inline'; img-src data:\">"
            f"<title>{html.escape(data['title'])}</title><style>{_asset('report.css')}</style></head><body>"
            + _header(data) + "<main>" + "".join(sections) + "</main>"
            + f'<script type="application/json" id="parity-data">{json_block(data)}</script>'
            + f"<script>{_inline_script(library_js)}</script><script>{_asset('report.js')}</script>"
            + "</body></html>\n")
