"""A chart of the HTML report: a Vega-Lite spec and the tables that show its data as text.

Every chart keeps its data in named ``datasets`` of its spec, and every table beside it names
one of those datasets and the columns to show, so the numbers a reader sees in a table are the
numbers the chart draws and the numbers in the report's JSON block: one copy of each.
Values are SI (s, B, B/s, FLOP/s, fractions); a column's ``unit`` says which, and the page picks
the human scale (ns, MiB, GB/s, %) at the edge.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field
from typing import Any

# Units a column may carry: SI units of parity.model.figure.UNITS, plus text and plain numbers.
TEXT = ""
NUMBER = "number"
INTENSITY = "FLOP/B"
RATIO = "x"


@dataclass(frozen=True, kw_only=True)
class Column:
    """One column of a table: the dataset ``field``, its heading, its unit (see module doc).

    ``unit_field`` names a field of the row that holds the unit instead (a comparison's cases
    have one unit per row)."""

    field: str
    title: str
    unit: str = TEXT
    unit_field: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"field": self.field, "title": self.title, "unit": self.unit, "unit_field": self.unit_field}


@dataclass(frozen=True, kw_only=True)
class Table:
    """Rows of one dataset of a chart's spec, shown as an HTML table beside the chart."""

    dataset: str
    columns: tuple[Column, ...]
    title: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"dataset": self.dataset, "title": self.title, "columns": [c.to_dict() for c in self.columns]}


@dataclass(frozen=True, kw_only=True)
class Chart:
    """One chart: ``id`` (unique in the report, a DOM id), the ``section`` it belongs to, a
    ``title``, the Vega-Lite ``spec`` (with its data in ``spec["datasets"]``), its tables and a
    ``note`` saying what is drawn and how to read it. ``draw`` is False for a panel of tables
    only (its spec then holds just the datasets). ``findings`` are what the analysis said
    about the figures this chart draws (``Finding.to_dict()`` dicts), shown beside it."""

    id: str
    section: str
    title: str
    spec: dict[str, Any]
    tables: tuple[Table, ...]
    note: str = ""
    draw: bool = True
    findings: tuple[dict[str, Any], ...] = ()

    def dataset(self, name: str) -> list[dict[str, Any]]:
        return self.spec["datasets"][name]

    def to_dict(self) -> dict[str, Any]:
        return {"id": self.id, "section": self.section, "title": self.title, "note": self.note,
                "spec": self.spec, "tables": [t.to_dict() for t in self.tables], "draw": self.draw,
                "findings": [dict(f) for f in self.findings]}


@dataclass(frozen=True, kw_only=True)
class Section:
    """A section of the page: its anchor id, heading, charts and free tables (text only)."""

    id: str
    title: str
    charts: list[Chart] = field(default_factory=list)
    lines: list[str] = field(default_factory=list)


def vega_lite(datasets: dict[str, list[dict[str, Any]]], body: dict[str, Any], *, width: int = 520,
              height: int = 300) -> dict[str, Any]:
    """A Vega-Lite spec with inline ``datasets`` and the report's look (size, font, no actions).

    Non-finite numbers become null: JSON has no infinity, and Vega drops null points."""
    spec = {
        "$schema": "https://vega.github.io/schema/vega-lite/v6.json",
        "datasets": {name: [_finite(row) for row in rows] for name, rows in datasets.items()},
        "config": {"font": "system-ui, sans-serif", "view": {"stroke": "#ddd"},
                   "axis": {"labelFontSize": 11, "titleFontSize": 12, "gridColor": "#eee"},
                   "axisX": {"labelOverlap": "greedy", "labelSeparation": 6},
                   "legend": {"labelFontSize": 11, "titleFontSize": 12, "labelLimit": 260}},
        **body,
    }
    if "facet" not in body and "hconcat" not in body and "vconcat" not in body:
        spec.setdefault("width", width)
        spec.setdefault("height", height)
    return spec


def tables_only(datasets: dict[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """The spec of a panel that is tables only: its datasets, nothing drawn."""
    return {"datasets": {name: [_finite(row) for row in rows] for name, rows in datasets.items()}}


def flatten(data: Any, prefix: str = "") -> list[dict[str, Any]]:
    """Nested records as ``key.sub.leaf -> value`` rows (provenance, fleet.json); lists stay one
    JSON value, a float reads to 6 significant digits (``8.76405``, not ``8.764053269347762``)."""
    if isinstance(data, dict) and data:
        return [row for key, value in data.items() for row in flatten(value, f"{prefix}.{key}" if prefix else str(key))]
    text = data if isinstance(data, str) else _plain(data) if isinstance(data, float) else json.dumps(data, default=str)
    return [{"key": prefix, "value": text}]


def key_values(data: Any) -> str:
    """A scope or parameter dict as a reader writes it: ``dtype: bf16, cases: 15, runs: A, B``
    (a list's items joined, a nested dict in braces), not raw JSON."""
    if not isinstance(data, dict):
        return "" if data is None else str(data)
    return ", ".join(f"{key}: {_plain(value)}" for key, value in data.items())


def _plain(value: Any) -> str:
    if value is None:
        return "none"  # as an empty list reads, not Python's None
    if isinstance(value, dict):
        return "{" + key_values(value) + "}"
    if isinstance(value, (list, tuple)):
        return ", ".join(_plain(v) for v in value) if value else "none"
    if isinstance(value, float):
        return f"{value:.6g}"
    return str(value)


def _finite(row: dict[str, Any]) -> dict[str, Any]:
    return {k: (None if isinstance(v, float) and not math.isfinite(v) else v) for k, v in row.items()}


def log_axis(field_name: str, title: str, *, fmt: str = "~s", kind: str = "quantitative") -> dict[str, Any]:
    """A log-scale encoding channel with SI-prefixed labels (1k, 1M, 1G)."""
    return {"field": field_name, "type": kind, "title": title, "scale": {"type": "log"},
            "axis": {"format": fmt}}


def series_color(field_name: str = "series", title: str = "") -> dict[str, Any]:
    return {"field": field_name, "type": "nominal", "title": title or None,
            "legend": {"orient": "bottom", "columns": 2}}


def run_label(run: Any) -> str:
    """How a run is named in legends and headings: the user's ``--label`` (``run.config["label"]``),
    else its short id (``run 9381`` for ``20261201-222257-9381``). Never the device name: two runs
    on one machine would share it."""
    label = (run.config or {}).get("label")
    if isinstance(label, str) and label.strip():
        return " ".join(label.split())
    return f"run {short_run_id(run.run_id)}"


def short_run_id(run_id: str) -> str:
    """The last part of a run id (``9381`` of ``20261201-222257-9381``): what tells runs apart."""
    tail = str(run_id).rsplit("-", 1)[-1]
    return tail if tail and len(tail) < len(str(run_id)) else str(run_id)


def run_labels(runs: list[Any]) -> list[str]:
    """:func:`run_label` of each run, made unique: a name two runs share gets each run's full id
    (``baseline (20261201-222257-9381)``), and a name still shared its position."""
    labels = [run_label(run) for run in runs]
    for i, run in enumerate(runs):
        if labels.count(labels[i]) > 1 and str(run.run_id) not in labels[i]:
            labels = [f"{lab} ({r.run_id})" if lab == labels[i] else lab for lab, r in zip(labels, runs)]
    return unique_names(labels)


def unique_names(names: list[str]) -> list[str]:
    """``names`` with each repeat suffixed by its position (``A``, ``A #2``), so no two are equal."""
    out: list[str] = []
    for i, name in enumerate(names):
        out.append(name if name not in out and names.count(name) == 1 else f"{name} #{i + 1}")
    return out
