"""User shapes from a CSV file: ``m,n,k`` per line, with optional ``name`` and ``origin``.

A header line naming the columns is optional; without one, the columns are ``m,n,k[,name]``.
Blank lines and lines starting with ``#`` are skipped. Every error names the file, the line and
the offending value, and says what to write instead.
"""

from __future__ import annotations

import csv
from pathlib import Path

from parity.families.gemm.catalog.shapes import Shape
from parity.model.errors import ParityError

DIMENSIONS = ("m", "n", "k")
# The largest single dimension accepted: 2^31 - 1, the int32 limit of most GEMM libraries.
MAX_DIM = 2**31 - 1


def load_user_shapes(path: str | Path) -> list[Shape]:
    """Parse the CSV at ``path`` into shapes of family ``user``; errors raise ParityError."""
    path = Path(path)
    try:
        text = path.read_text(encoding="utf-8")
    except OSError as exc:
        raise ParityError(f"cannot read shapes file {path}: {exc.strerror}; give a readable CSV file") from None
    except UnicodeDecodeError:
        raise ParityError(f"shapes file {path} is not UTF-8 text; give a CSV of m,n,k lines") from None
    rows = [(i + 1, row) for i, row in enumerate(csv.reader(text.splitlines()))]
    rows = [(n, [c.strip() for c in row]) for n, row in rows if row and any(c.strip() for c in row)
            and not row[0].strip().startswith("#")]
    if not rows:
        raise ParityError(f"shapes file {path} has no shapes; write one m,n,k line per shape")
    columns = ["m", "n", "k", "name", "origin"]
    first_line, first = rows[0]
    if any(not cell.lstrip("+-").isdigit() for cell in first[:3]):
        columns = [c.lower() for c in first]
        missing = [d for d in DIMENSIONS if d not in columns]
        if missing:
            raise ParityError(
                f"{path}:{first_line}: header {','.join(first)!r} lacks column {missing[0]!r}; "
                "name the columns m,n,k[,name][,origin]"
            )
        rows = rows[1:]
        if not rows:
            raise ParityError(f"shapes file {path} has a header but no shapes")
    shapes: list[Shape] = []
    seen: dict[tuple[int, int, int], int] = {}
    for line, row in rows:
        shape = _parse_row(path, line, row, columns)
        if shape.dims in seen:
            raise ParityError(
                f"{path}:{line}: shape {shape.m}x{shape.n}x{shape.k} repeats line {seen[shape.dims]}; "
                "list each shape once"
            )
        seen[shape.dims] = line
        shapes.append(shape)
    return shapes


def _parse_row(path: Path, line: int, row: list[str], columns: list[str]) -> Shape:
    if len(row) < 3:
        raise ParityError(f"{path}:{line}: {','.join(row)!r} has {len(row)} column(s); write m,n,k")
    values = dict(zip(columns, row))
    dims = []
    for dim in DIMENSIONS:
        raw = values.get(dim, "")
        try:
            value = int(raw)
        except ValueError:
            raise ParityError(
                f"{path}:{line}: {dim} = {raw!r} is not an integer; write a positive whole number"
            ) from None
        if not 1 <= value <= MAX_DIM:
            raise ParityError(f"{path}:{line}: {dim} = {value} is out of range; use 1..{MAX_DIM}")
        dims.append(value)
    m, n, k = dims
    name = values.get("name") or f"user.{m}x{n}x{k}"
    origin = values.get("origin") or f"{path.name} line {line}"
    return Shape(m=m, n=n, k=k, name=name, family="user", origin=origin)
