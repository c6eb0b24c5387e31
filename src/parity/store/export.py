"""Exports of a stored run so a fleet's results can be queried together (DuckDB, Spark, pandas).

- ``json``: one document, ``{"schema_version", "kind": "run-export", "run": {...}, "cases": [...],
  "figures": [...]}`` with every case in full (raw samples included), the same shape as the
  Python records, and every stored figure (``parity.store.figures.StoredFigure.to_dict``).
- ``csv`` and ``parquet``, one row per case (``table="cases"``). Fixed columns first (``run_id``,
  ``suite``, ``key``, ``ok``, ``error``, ``check_passed``, ``finding_codes``), then the run's
  provenance as columns a fleet groups by (``device_name``, ``device_type``, ``driver``,
  ``torch_version``, ``host``, ``cpu_model``, ``parity_version``, ``parity_revision``), then
  the case's stored figures (``figure.<name>``, from the figures table: for GEMM TFLOP/s,
  fraction of ``P``, attainable, efficiency, intensity) and the properties in their scope
  (``figure.<name>`` as well: class, dtype, device), then one column per parameter
  (``param.<name>``) and per metric (``metric.<name>``), then the raw samples, the check, the
  findings and the telemetry as JSON text. A column whose values mix types across suites is
  written as text. In Parquet each field with a unit carries it in its metadata (``unit``):
  the stored unit for figures, the name's suffix for metrics (``_s`` s, ``_bytes`` B,
  ``_flops`` FLOP/s, ``_bps`` B/s, ``_gbps`` GB/s, ``_w`` W, ``_mhz`` MHz).
- ``csv`` and ``parquet`` with ``table="figures"``: one row per stored figure: ``run_id``,
  ``suite``, ``case`` (empty for a figure over the suite's cases), ``name``, ``value``,
  ``unit``, ``method``, ``ci95_low``, ``ci95_high``, ``best``, ``note``, ``finding_codes``, the
  provenance columns, and the scope as ``scope.<name>`` columns.
"""

from __future__ import annotations

import csv
import io
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import orjson

from parity.model.errors import ParityError
from parity.model.result import CaseResult, RunRecord
from parity.model.schema import envelope
from parity.store.figures import StoredFigure

FORMATS = ("json", "csv", "parquet")
TABLES = ("cases", "figures")


SUFFIX_UNITS = (("_gbps", "GB/s"), ("_bps", "B/s"), ("_flops", "FLOP/s"), ("_bytes", "B"), ("_flop", "FLOP"),
                ("_s", "s"), ("_w", "W"), ("_mhz", "MHz"), ("_ns", "ns"))


def provenance_columns(run: RunRecord) -> dict[str, Any]:
    """The provenance a fleet groups by, as flat columns (None where the run did not record it)."""
    p = run.provenance
    device = p.get("device") or {}
    props = device.get("properties") or {}
    drivers = p.get("drivers") or {}
    driver = ", ".join(f"{k} {v}" for k, v in sorted(drivers.items())) if isinstance(drivers, dict) else drivers
    return {
        "device_name": props.get("name") or p.get("device_identity"),
        "device_type": device.get("type"),
        "driver": driver or None,
        "torch_version": (p.get("torch") or {}).get("version"),
        "host": (p.get("host") or {}).get("hostname"),
        "cpu_model": (p.get("host") or {}).get("cpu_model"),
        "parity_version": (p.get("parity") or {}).get("version"),
        "parity_revision": (p.get("parity") or {}).get("git_revision"),
    }


def _per_case(figures: Sequence[StoredFigure]) -> dict[tuple[str, str], list[StoredFigure]]:
    by_case: dict[tuple[str, str], list[StoredFigure]] = {}
    for figure in figures:
        if figure.case is not None:
            by_case.setdefault((figure.suite, figure.case), []).append(figure)
    return by_case


def case_figure_columns(figures: Sequence[StoredFigure]) -> dict[str, Any]:
    """One case's figures as ``figure.<name>`` columns: each value, then the scope's properties."""
    columns: dict[str, Any] = {f"figure.{f.name}": f.value for f in figures}
    for figure in figures:
        for name, value in figure.scope.items():
            if name != "case":
                columns.setdefault(f"figure.{name}", _scalar(value))
    return columns


def column_units(figures: Sequence[StoredFigure], names: list[str]) -> dict[str, str]:
    """The unit of each column that has one: stored for figures, by suffix for metrics."""
    declared = {f"figure.{f.name}": f.unit for f in figures if f.case is not None and f.unit}
    units = {}
    for name in names:
        if name in declared:
            units[name] = declared[name]
        elif name.startswith(("metric.", "param.")):
            unit = next((u for suffix, u in SUFFIX_UNITS if name.endswith(suffix)), None)
            if unit:
                units[name] = unit
    return units


def case_rows(run: RunRecord, cases: list[CaseResult], figures: Sequence[StoredFigure] = ()) -> list[dict[str, Any]]:
    """Flatten cases into one dict per case, with the columns described in the module doc."""
    rows: list[dict[str, Any]] = []
    provenance = provenance_columns(run)
    by_case = _per_case(figures)
    for case in cases:
        row: dict[str, Any] = {
            "run_id": run.run_id,
            "suite": case.suite,
            "key": case.key,
            "ok": case.ok,
            "error": case.error,
            "check_passed": case.check.get("passed") if case.check else None,
            "finding_codes": ",".join(f.code for f in case.findings),
            **provenance,
        }
        row.update(case_figure_columns(by_case.get((case.suite, case.key), [])))
        row.update({f"param.{k}": _scalar(v) for k, v in case.params.items()})
        row.update({f"metric.{k}": _scalar(v) for k, v in case.metrics.items()})
        row["samples_json"] = _json({n: s.to_dict() for n, s in case.samples.items()})
        row["check_json"] = _json(case.check)
        row["findings_json"] = _json([f.to_dict() for f in case.findings])
        row["telemetry_json"] = _json(case.telemetry)
        rows.append(row)
    return rows


def figure_rows(run: RunRecord, figures: Sequence[StoredFigure]) -> list[dict[str, Any]]:
    """One dict per stored figure (``table="figures"`` in the module doc)."""
    provenance = provenance_columns(run)
    rows = []
    for f in figures:
        low, high = f.ci95 if f.ci95 is not None else (None, None)
        rows.append({"run_id": run.run_id, "suite": f.suite, "case": f.case, "name": f.name, "value": f.value,
                     "unit": f.unit, "method": f.method, "ci95_low": low, "ci95_high": high, "best": f.best,
                     "note": f.note, "finding_codes": ",".join(x.code for x in f.findings), **provenance,
                     **{f"scope.{k}": _scalar(v) for k, v in f.scope.items()}})
    return rows


def table_rows(run: RunRecord, cases: list[CaseResult], figures: Sequence[StoredFigure], table: str
               ) -> list[dict[str, Any]]:
    """The rows of the CSV or Parquet export of ``table`` (``cases`` or ``figures``)."""
    if table not in TABLES:
        raise ParityError(f"unknown export table {table!r}; use one of {', '.join(TABLES)}")
    return case_rows(run, cases, figures) if table == "cases" else figure_rows(run, figures)


def _json(value: Any) -> str:
    return orjson.dumps(value, option=orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS).decode()


def _scalar(value: Any) -> Any:
    """Numbers, strings, booleans and None stay; anything else becomes JSON text."""
    if value is None or isinstance(value, (bool, int, float, str)):
        return value
    if hasattr(value, "item") and not hasattr(value, "__len__"):
        return value.item()
    return _json(value)


def columns(rows: list[dict[str, Any]]) -> list[str]:
    """Column names in first-seen order across all rows."""
    seen: dict[str, None] = {}
    for row in rows:
        seen.update(dict.fromkeys(row))
    return list(seen)


def export_json(run: RunRecord, cases: list[CaseResult], figures: Sequence[StoredFigure] = ()) -> bytes:
    document = envelope("run-export", {"run": run.to_dict(), "cases": [c.to_dict() for c in cases],
                                       "figures": [f.to_dict() for f in figures]})
    return (
        orjson.dumps(
            document,
            option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
        )
        + b"\n"
    )


def export_csv(run: RunRecord, cases: list[CaseResult], figures: Sequence[StoredFigure] = (), *,
               table: str = "cases") -> bytes:
    rows = table_rows(run, cases, figures, table)
    buffer = io.StringIO()
    writer = csv.DictWriter(buffer, fieldnames=columns(rows) or ["run_id"], lineterminator="\n")
    writer.writeheader()
    writer.writerows(rows)
    return buffer.getvalue().encode()


def _column_values(rows: list[dict[str, Any]], name: str) -> list[Any]:
    """One column with a single Arrow-friendly type: mixed types fall back to text."""
    values = [row.get(name) for row in rows]
    kinds = {type(v) for v in values if v is not None}
    if kinds <= {bool} or kinds <= {str} or kinds <= {int}:
        return values
    if kinds <= {int, float}:
        return [None if v is None else float(v) for v in values]
    return [None if v is None else (v if isinstance(v, str) else _json(v)) for v in values]


def export_parquet(run: RunRecord, rows: list[dict[str, Any]], units: dict[str, str], path: Path) -> None:
    try:
        import pyarrow as pa  # type: ignore[import-untyped]  # pyarrow ships no type hints
        import pyarrow.parquet as pq  # type: ignore[import-untyped]
    except ImportError:
        raise ParityError(
            "parquet export needs pyarrow: pip install 'parity[parquet]', or use --format csv"
        ) from None
    names = columns(rows)
    table = pa.table({name: _column_values(rows, name) for name in names})
    schema = pa.schema([field.with_metadata({b"unit": units[field.name].encode()}) if field.name in units else field
                        for field in table.schema])
    metadata = {b"parity.run": orjson.dumps(run.to_dict(), option=orjson.OPT_NON_STR_KEYS)}
    pq.write_table(table.cast(schema).replace_schema_metadata(metadata), str(path))


def export_bytes(run: RunRecord, cases: list[CaseResult], *, fmt: str, figures: Sequence[StoredFigure] = (),
                 table: str = "cases") -> bytes:
    """The export as bytes, for the text formats (json, csv) that can go to standard output."""
    if fmt == "json":
        return export_json(run, cases, figures)
    if fmt == "csv":
        return export_csv(run, cases, figures, table=table)
    if fmt == "parquet":
        raise ParityError("parquet is binary; give --output a file path")
    raise ParityError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def write_export(run: RunRecord, cases: list[CaseResult], *, fmt: str, path: str | Path,
                 figures: Sequence[StoredFigure] = (), table: str = "cases") -> Path:
    """Write the export to ``path`` atomically (a temporary file renamed into place); ``figures``
    are the run's stored figures (``Store.figures``), ``table`` which rows csv and parquet hold."""
    if fmt not in FORMATS:
        raise ParityError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            rows = table_rows(run, cases, figures, table)
            units = column_units(figures, columns(rows)) if table == "cases" else {}
            export_parquet(run, rows, units, tmp)
        else:
            tmp.write_bytes(export_bytes(run, cases, fmt=fmt, figures=figures, table=table))
        tmp.replace(target)
    except OSError as exc:
        raise ParityError(
            f"cannot write {target}: {exc.strerror}; choose a writable path"
        ) from None
    return target
