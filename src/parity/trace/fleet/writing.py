"""Parquet in and out for the fleet's tables, with the contract's schemas (pyarrow imported
inside the functions only, so the trace package imports without it)."""

from __future__ import annotations

from pathlib import Path

from parity.model.errors import ParityError
from parity.trace.fleet.tables import MAP_TABLES, arrow_schema


def read_map_table(root: Path, table: str, columns: list[str] | None = None, dictionary: tuple = ()):
    """Every rank's ``root/map/<table>/*.parquet`` as one pyarrow table of the contract's schema
    (an empty one when no rank wrote that table): only ``columns`` when given, the string
    columns named in ``dictionary`` dictionary-encoded (a few distinct values over millions of
    rows: the codes, not the strings, are held). The files are read one by one with the Parquet
    reader and joined in name order (rank order): no dataset layer, whose import (pyarrow's
    compute functions among it) costs more than reading a small job's files."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(MAP_TABLES[table])
    folder = Path(root) / "map" / table
    files = sorted(str(p) for p in folder.glob("*.parquet")) if folder.is_dir() else []
    if not files:
        return schema.empty_table() if columns is None else schema.empty_table().select(columns)
    names = columns or schema.names
    try:
        parts = []
        for path in files:
            handle = pq.ParquetFile(path, read_dictionary=list(dictionary))
            present = set(handle.schema_arrow.names)  # the property builds the schema again at each use
            missing = [n for n in names if n not in present]
            if missing:
                raise ParityError(f"the map table {folder} lacks the columns {', '.join(missing)}; "
                                  f"run the map again with this version of parity")
            parts.append(handle.read(columns=names, use_threads=False))
            handle.close()
        return pa.concat_tables(parts)
    except (pa.ArrowInvalid, OSError) as exc:
        raise ParityError(f"cannot read the map table {folder}: {str(exc).splitlines()[0]}; "
                          f"run the map again into a fresh folder") from exc


def write_table(path: Path, columns: tuple, data: dict) -> None:
    """Write ``data`` (column name -> array or list) as ``path`` with the schema of ``columns``."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    schema = arrow_schema(columns)
    arrays = [pa.array(data[f.name], type=f.type) if not isinstance(data[f.name], pa.Array)
              else data[f.name] if data[f.name].type == f.type  # a cast would import pyarrow.compute
              else data[f.name].cast(f.type) for f in schema]
    pq.write_table(pa.Table.from_arrays(arrays, schema=schema), str(path))
