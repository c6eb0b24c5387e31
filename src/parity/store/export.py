"""Exports of a stored run so a fleet's results can be queried together (DuckDB, Spark, pandas).

- ``json``: one document, ``{"schema_version", "kind": "run-export", "run": {...}, "cases": [...]}``
  with every case in full (raw samples included), the same shape as the Python records.
- ``csv`` and ``parquet``: one row per case. Fixed columns first (``run_id``, ``suite``, ``key``,
  ``ok``, ``error``, ``check_passed``, ``finding_codes``), then the run's provenance as columns a
  fleet groups by (``device_name``, ``device_type``, ``driver``, ``torch_version``, ``host``,
  ``cpu_model``, ``parity_version``, ``parity_revision``), then every derived figure the suite's
  summary gives for the case (``figure.<name>``: for GEMM TFLOP/s, fraction of ``P``,
  attainable, efficiency, class, intensity, dtype, device), then one column per parameter
  (``param.<name>``) and per metric (``metric.<name>``), then the raw samples, the check, the
  findings and the telemetry as JSON text. A column whose values mix types across suites is
  written as text. In Parquet each field with a unit carries it in its metadata (``unit``):
  the suite's declared units for figures, the name's suffix for metrics (``_s`` s, ``_bytes``
  B, ``_flops`` FLOP/s, ``_bps`` B/s, ``_gbps`` GB/s, ``_w`` W, ``_mhz`` MHz).
"""

from __future__ import annotations

import csv
import io
from pathlib import Path
from typing import Any

import orjson

from parity.model.errors import ParityError
from parity.model.result import CaseResult, RunRecord
from parity.model.schema import envelope

FORMATS = ("json", "csv", "parquet")


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


def suite_case_figures(run: RunRecord) -> dict[str, dict[str, Any]]:
    """``case_figures`` of each suite's stored summary, by suite (``{"units", "rows"}``)."""
    suites = (run.summary or {}).get("suites") or {}
    out = {}
    for name, outcome in suites.items():
        figures = ((outcome or {}).get("summary") or {}).get("case_figures")
        if isinstance(figures, dict):
            out[name] = figures
    return out


def column_units(run: RunRecord, names: list[str]) -> dict[str, str]:
    """The unit of each column that has one: declared for figures, by suffix for metrics."""
    declared: dict[str, str] = {}
    for figures in suite_case_figures(run).values():
        declared.update({f"figure.{k}": v for k, v in (figures.get("units") or {}).items() if v})
    units = {}
    for name in names:
        if name in declared:
            units[name] = declared[name]
        elif name.startswith(("metric.", "param.")):
            unit = next((u for suffix, u in SUFFIX_UNITS if name.endswith(suffix)), None)
            if unit:
                units[name] = unit
    return units


def case_rows(run: RunRecord, cases: list[CaseResult]) -> list[dict[str, Any]]:
    """Flatten cases into one dict per case, with the columns described in the module doc."""
    rows: list[dict[str, Any]] = []
    provenance = provenance_columns(run)
    figures = suite_case_figures(run)
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
        derived = ((figures.get(case.suite) or {}).get("rows") or {}).get(case.key) or {}
        row.update({f"figure.{k}": _scalar(v) for k, v in derived.items()})
        row.update({f"param.{k}": _scalar(v) for k, v in case.params.items()})
        row.update({f"metric.{k}": _scalar(v) for k, v in case.metrics.items()})
        row["samples_json"] = _json({n: s.to_dict() for n, s in case.samples.items()})
        row["check_json"] = _json(case.check)
        row["findings_json"] = _json([f.to_dict() for f in case.findings])
        row["telemetry_json"] = _json(case.telemetry)
        rows.append(row)
    return rows


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


def export_json(run: RunRecord, cases: list[CaseResult]) -> bytes:
    document = envelope("run-export", {"run": run.to_dict(), "cases": [c.to_dict() for c in cases]})
    return (
        orjson.dumps(
            document,
            option=orjson.OPT_INDENT_2 | orjson.OPT_SERIALIZE_NUMPY | orjson.OPT_NON_STR_KEYS,
        )
        + b"\n"
    )


def export_csv(run: RunRecord, cases: list[CaseResult]) -> bytes:
    rows = case_rows(run, cases)
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


def export_parquet(run: RunRecord, cases: list[CaseResult], path: Path) -> None:
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        raise ParityError(
            "parquet export needs pyarrow: pip install 'parity[parquet]', or use --format csv"
        ) from None
    rows = case_rows(run, cases)
    names = columns(rows)
    table = pa.table({name: _column_values(rows, name) for name in names})
    units = column_units(run, names)
    schema = pa.schema([field.with_metadata({b"unit": units[field.name].encode()}) if field.name in units else field
                        for field in table.schema])
    metadata = {b"parity.run": orjson.dumps(run.to_dict(), option=orjson.OPT_NON_STR_KEYS)}
    pq.write_table(table.cast(schema).replace_schema_metadata(metadata), str(path))


def export_bytes(run: RunRecord, cases: list[CaseResult], *, fmt: str) -> bytes:
    """The export as bytes, for the text formats (json, csv) that can go to standard output."""
    if fmt == "json":
        return export_json(run, cases)
    if fmt == "csv":
        return export_csv(run, cases)
    if fmt == "parquet":
        raise ParityError("parquet is binary; give --output a file path")
    raise ParityError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")


def write_export(run: RunRecord, cases: list[CaseResult], *, fmt: str, path: str | Path) -> Path:
    """Write the export to ``path`` atomically (a temporary file renamed into place)."""
    if fmt not in FORMATS:
        raise ParityError(f"unknown export format {fmt!r}; use one of {', '.join(FORMATS)}")
    target = Path(path)
    tmp = target.with_name(target.name + ".tmp")
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        if fmt == "parquet":
            export_parquet(run, cases, tmp)
        else:
            tmp.write_bytes(export_bytes(run, cases, fmt=fmt))
        tmp.replace(target)
    except OSError as exc:
        raise ParityError(
            f"cannot write {target}: {exc.strerror}; choose a writable path"
        ) from None
    return target
